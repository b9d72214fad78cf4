"""NumPy kernels for the conformance suite's tests: a correct one in each layout the adapters offer, two
deliberately broken ones, and ones that decline cases. Each computes softmax(q K^T scale) V in fp64 with
the max subtracted, over a sequence's keys and a causal mask, as DESIGN.md defines attention."""
import numpy as np

import hydragen
from hydragen import conformance


def attend(q, k, v, visible, scale):
    """q [q_len, Hq, D] over k, v [n, Hkv, D]; visible [q_len, n] bool -> (o [q_len, Hq, D], lse [q_len, Hq])."""
    g = q.shape[1] // k.shape[1]
    k, v = np.repeat(k.astype(np.float64), g, axis=1), np.repeat(v.astype(np.float64), g, axis=1)
    s = np.einsum("thd,nhd->thn", q.astype(np.float64), k) * scale
    s = np.where(visible[:, None, :], s, -np.inf)
    m = s.max(axis=-1, keepdims=True, initial=-np.inf)
    m = np.where(np.isfinite(m), m, 0.0)  # a query that sees nothing: O = 0, LSE = -inf
    p = np.exp(s - m)
    total = p.sum(axis=-1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        o = np.where(total > 0, np.einsum("thn,nhd->thd", p, v) / total, 0.0)
        lse = (m + np.log(total))[..., 0]
    return o, lse


def causal(q_len, n):
    """[q_len, n]: query i, the i-th of the last q_len tokens, sees tokens j < n - (q_len - 1 - i)."""
    return np.arange(n)[None, :] < n - (q_len - 1 - np.arange(q_len))[:, None]


def path_kv(case, b):
    """Sequence b's keys and values: its path's segments back to back."""
    path = case.tree.path(b)
    return (np.concatenate([case.k[s] for s in path] or [case.k[0][:0]]),
            np.concatenate([case.v[s] for s in path] or [case.v[0][:0]]))


def per_sequence(case, scale_factor=1.0, drop_key_of=None):
    """(o, lse) sequence by sequence; drop_key_of: the sequence whose last key is left out."""
    o = np.empty(case.q.shape, dtype=np.float64)
    lse = np.empty(case.q.shape[:3], dtype=np.float64)
    for b in range(case.num_seqs):
        k, v = path_kv(case, b)
        if b == drop_key_of:
            k, v = k[:-1], v[:-1]
        o[b], lse[b] = attend(case.q[b], k, v, causal(case.q_len, len(k)), case.scale * scale_factor)
    return o, lse.astype(np.float32)


def correct(case):
    return per_sequence(case)


def dropped_key(case):
    """Broken: sequence 0 never sees the last token of its path."""
    return per_sequence(case, drop_key_of=0)


def scale_off(case):
    """Broken: the score scale 1e-3 too large."""
    return per_sequence(case, scale_factor=1.001)


def o_only(case):
    """Correct, but returns no LSE (as SDPA)."""
    return per_sequence(case)[0]


def crashes(case):
    raise RuntimeError("out of shared memory")


def decode_only(case):
    """Correct where it runs: declares q_len > 1 unsupported through supports(), and raises
    hydragen.Unsupported on fp16 from inside."""
    if case.dtype == "fp16":
        raise hydragen.Unsupported("no fp16 kernel")
    return per_sequence(case)


decode_only.supports = lambda case: True if case.q_len == 1 else "decode only (q_len 1)"


@conformance.padded
def padded(q, k, v, mask, scale):
    """q [B, Hq, q_len, D], k/v [B, Hkv, L, D], mask [B, 1, q_len, L] -> (o [B, Hq, q_len, D], lse [B, Hq, q_len])."""
    out = [attend(q[b].transpose(1, 0, 2), k[b].transpose(1, 0, 2), v[b].transpose(1, 0, 2), mask[b, 0], scale)
           for b in range(q.shape[0])]
    return np.stack([o.transpose(1, 0, 2) for o, _ in out]), np.stack([lse.T for _, lse in out])


@conformance.paged
def paged(q, k_pages, v_pages, page_table, lengths, scale):
    """Each sequence's tokens gathered from its pages, then attended."""
    o, lse = [], []
    for b, n in enumerate(lengths):
        pages = page_table[b][page_table[b] >= 0]
        k = k_pages[pages].reshape(-1, *k_pages.shape[2:])[:n]
        v = v_pages[pages].reshape(-1, *v_pages.shape[2:])[:n]
        ob, lb = attend(q[b], k, v, causal(q.shape[1], n), scale)
        o.append(ob)
        lse.append(lb)
    return np.stack(o), np.stack(lse)


@conformance.prefix_suffix
def prefix_then_suffix(q, k_prefix, v_prefix, k_suffixes, v_suffixes, scale):
    """The prefix for every query, each suffix causally, the two merged by their LSEs: Hydragen's form."""
    o, lse = [], []
    for b, (ks, vs) in enumerate(zip(k_suffixes, v_suffixes)):
        q_len = q.shape[1]
        o1, l1 = attend(q[b], k_prefix, v_prefix, np.ones((q_len, len(k_prefix)), bool), scale)
        o2, l2 = attend(q[b], ks, vs, causal(q_len, len(ks)), scale)
        lse_b = np.logaddexp(l1, l2)
        with np.errstate(invalid="ignore"):  # both empty: -inf - -inf, weights then 0
            w1, w2 = np.nan_to_num(np.exp(l1 - lse_b)), np.nan_to_num(np.exp(l2 - lse_b))
        o.append(w1[..., None] * o1 + w2[..., None] * o2)
        lse.append(lse_b)
    return np.stack(o), np.stack(lse)
