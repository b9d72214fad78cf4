"""Adapters from the layouts kernels take to the suite's kernel(case): each lays a case's tensors out as
its kernel expects, hands them over through `convert` (default: NumPy as they are; to_torch(device) for
PyTorch) and brings the outputs back to the suite's layout. docs/conformance.md shows each in use.

Each adapter keeps the wrapped function's name and its supports(case), if it has one."""
import sys

import numpy as np

from .. import _frameworks
from .host import host_numpy


def segments(f, convert=None):
    """f(q [B, q_len, Hq, D], k_segments, v_segments, tree, scale=) -> o or (o, lse): our own layout, one
    [length, Hkv, D] per segment of the tree (hydragen.attention is such an f)."""
    convert = convert or _as_is

    def kernel(case):
        return f(convert(case.q, case.dtype), [convert(x, case.dtype) for x in case.k],
                 [convert(x, case.dtype) for x in case.v], case.tree, scale=case.scale)

    return _like(kernel, f)


def padded(f, convert=None):
    """SDPA's layout, one padded row per sequence: f(q [B, Hq, q_len, D], k [B, Hkv, L, D], v, mask, scale=)
    -> o [B, Hq, q_len, D] or (o, lse [B, Hq, q_len]). k and v hold each sequence's path (its segments
    root to leaf) then zeros up to L, the longest path; mask [B, 1, q_len, L] is True where a query
    attends (torch's attn_mask convention): query i of a sequence of n tokens sees tokens j < n - (q_len - 1 - i),
    the queries being its last q_len tokens (bottom-right causal, DESIGN.md's rule)."""
    convert = convert or _as_is

    def kernel(case):
        k, v, lengths = _padded_paths(case)
        i = np.arange(case.q_len)[:, None]
        j = np.arange(k.shape[2])[None, :]
        mask = j[None] < (lengths[:, None, None] - (case.q_len - 1 - i)[None])
        q = case.q.transpose(0, 2, 1, 3).copy()
        out = f(convert(q, case.dtype), convert(k, case.dtype), convert(v, case.dtype), convert(mask[:, None], None),
                scale=case.scale)
        o, lse = out if isinstance(out, tuple) else (out, None)
        o = host_numpy(o).transpose(0, 2, 1, 3)
        return o if lse is None else (o, host_numpy(lse).transpose(0, 2, 1))

    return _like(kernel, f)


def paged(f, page_size=16, convert=None):
    """A paged KV cache: f(q [B, q_len, Hq, D], k_pages [pages, page_size, Hkv, D], v_pages, page_table
    [B, max pages] int32 (-1 past a sequence's pages), lengths [B] int32 (each sequence's tokens), scale=)
    -> o [B, q_len, Hq, D] or (o, lse [B, q_len, Hq]). A page is stored once for all sequences whose
    paths hold the same tokens up to its end (prefix caching: a shared segment's whole pages are shared,
    a page it ends part-way through is each sequence's own); queries as in padded()."""
    if not isinstance(page_size, int) or page_size < 1:
        raise ValueError(f"paged: page_size must be a positive int, got {page_size!r}")
    convert = convert or _as_is

    def kernel(case):
        k_pages, v_pages, table, lengths = _page_pool(case, page_size)
        return f(convert(case.q, case.dtype), convert(k_pages, case.dtype), convert(v_pages, case.dtype),
                 convert(table, None), convert(lengths, None), scale=case.scale)

    return _like(kernel, f)


def prefix_suffix(f, convert=None):
    """Two levels: f(q [B, q_len, Hq, D], k_prefix [P, Hkv, D], v_prefix, k_suffixes, v_suffixes, scale=)
    -> o or (o, lse), the suffixes a list of [S_b, Hkv, D] per sequence. The prefix is the segments at the
    head of every sequence's path (P = 0 when none is shared by all: a forest, an empty root); a suffix
    is the rest of its path. Queries attend the whole prefix and their suffix causally, as in padded()."""
    convert = convert or _as_is

    def kernel(case):
        paths = [case.tree.path(b) for b in range(case.num_seqs)]
        shared = 0
        while all(len(p) > shared and p[shared] == paths[0][shared] for p in paths):
            shared += 1

        def tokens(x, segments):
            return convert(_concatenated(case, x, segments), case.dtype)

        return f(convert(case.q, case.dtype), tokens(case.k, paths[0][:shared]), tokens(case.v, paths[0][:shared]),
                 [tokens(case.k, p[shared:]) for p in paths], [tokens(case.v, p[shared:]) for p in paths],
                 scale=case.scale)

    return _like(kernel, f)


def to_torch(device="cuda"):
    """A convert for the adapters: NumPy -> torch tensors on `device`, floats in the case's dtype (bf16
    cast back from the float32 it came as, exactly)."""
    torch = sys.modules.get("torch") or __import__("torch")

    def convert(array, dtype):
        tensor = torch.from_numpy(np.ascontiguousarray(array)).to(device)
        return tensor if dtype is None else tensor.to(getattr(torch, _frameworks._TORCH[dtype]))

    return convert


def _as_is(array, dtype):
    return array


def _like(kernel, f):
    """kernel named as f, with f's supports(case) if it has one."""
    kernel.__name__ = getattr(f, "__name__", type(f).__name__)
    if hasattr(f, "supports"):
        kernel.supports = f.supports
    return kernel


def _concatenated(case, x, segments):
    """The tokens of x (case.k or case.v) over `segments`, back to back: [tokens, Hkv, D]."""
    return np.concatenate([x[s] for s in segments] or [x[0][:0]], axis=0)


def _padded_paths(case):
    """(k, v [B, Hkv, L, D] zero-padded, lengths [B]) of every sequence's path."""
    paths = [case.tree.path(b) for b in range(case.num_seqs)]
    lengths = np.array([case.tree.path_length(b) for b in range(case.num_seqs)])
    longest = max(int(lengths.max()), 1)
    out = []
    for x in (case.k, case.v):
        padded = np.zeros((case.num_seqs, longest, case.kv_heads, case.head_dim), dtype=case.q.dtype)
        for b, path in enumerate(paths):
            padded[b, :lengths[b]] = _concatenated(case, x, path)
        out.append(padded.transpose(0, 2, 1, 3).copy())
    return out[0], out[1], lengths


def _page_pool(case, page_size):
    """(k_pages, v_pages, page_table, lengths) with every page that holds the same tokens stored once."""
    pages, table_rows, lengths = {}, [], []
    for b in range(case.num_seqs):
        # Each token of the path as (segment, position): equal runs are equal tokens.
        tokens = [(s, i) for s in case.tree.path(b) for i in range(case.tree.lengths[s])]
        lengths.append(len(tokens))
        row = []
        for start in range(0, len(tokens), page_size):
            key = tuple(tokens[:start + page_size])  # what the page holds, and where it sits in the path
            row.append(pages.setdefault(key, len(pages)))
        table_rows.append(row)
    width = max(1, max(len(r) for r in table_rows))
    table = np.full((case.num_seqs, width), -1, dtype=np.int32)
    for b, row in enumerate(table_rows):
        table[b, :len(row)] = row
    out = []
    for x in (case.k, case.v):
        pool = np.zeros((max(len(pages), 1), page_size, case.kv_heads, case.head_dim), dtype=case.q.dtype)
        for key, page in pages.items():
            start = (len(key) - 1) // page_size * page_size
            for slot, (s, i) in enumerate(key[start:]):
                pool[page, slot] = x[s][i]
        out.append(pool)
    return out[0], out[1], table, np.array(lengths, dtype=np.int32)
