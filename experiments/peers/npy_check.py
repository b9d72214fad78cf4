"""A peer's output judged as our backends' are: hydragen-diff --npy-dir computes the fp64 reference of the
point's inputs and holds every element of O to its dtype's bound and the LSE to what a merge at O's
precision could see (README: .npy interop). One folder per point holds the inputs; each method's O and
LSE replace the last one's. The point's first judgement writes the fp64 reference beside them
(--write-reference), the others read it back (--reference-dir): a point's forms cost one reference.

spec.json holds the point's tree over the checked sequences (tree_spec): segment 0 the prefix, then the groups
above them level by level, then each one's suffix (an empty segment at S = 0). A copy: tree's spec is its shared
form's: the same tokens on every path (copying is how a method stores them), judged against one reference.
"""
import json
import math
import os
import subprocess

import trees


def check_indices(B, limit):
    """The sequences checked: all of them, or `limit` spread over the batch (first and last included)."""
    if not limit or limit >= B:
        return list(range(B))
    return sorted({round(i * (B - 1) / max(limit - 1, 1)) for i in range(limit)})


def tree_spec(pt, seqs):
    """(parents, lengths, leaves, sources) of spec.json for the checked sequences `seqs`: segment 0 the prefix, then
    the groups with a checked sequence below them (trees.tree_levels' order; a group without one would be a leaf
    of no sequence, which SharingTree refuses), then each checked sequence's suffix. sources[i]: segment i's K/V as
    (key of K, key of V, index into them or None for the whole input)."""
    levels = trees.tree_levels(pt)
    parents, lengths, sources = [-1], [pt.P], [("pk", "pv", None)]
    segment = {}  # group index -> its segment
    groups = [(depth, g) for depth, level in enumerate(levels) for g in level]
    for i, (depth, g) in enumerate(groups):
        if any(b in g.seqs for b in seqs):
            segment[i] = len(parents)
            parents.append(segment[trees.path_groups(levels, g.seqs.start)[depth - 1]] if depth else 0)
            lengths.append(g.tokens)
            sources.append(("gk", "gv", i))
    leaves = []
    for b in seqs:
        path = trees.path_groups(levels, b)
        leaves.append(len(parents))
        parents.append(segment[path[-1]] if path else 0)
        lengths.append(pt.S)
        sources.append(("sk", "sv", b))
    return parents, lengths, leaves, sources


class NpyCheck:
    def __init__(self, diff, folder, check_seqs=0):
        self.diff = diff
        self.folder, self.reference = os.path.join(folder, "point"), os.path.join(folder, "reference")
        self.check_seqs = check_seqs  # sequences checked per point, spread over the batch; 0: every one
        self.has_reference = False  # the point's reference is written
        for f in (self.folder, self.reference):
            os.makedirs(f, exist_ok=True)

    def save(self, name, tensor):
        """A torch tensor (bf16 as its raw bits, '<u2', which hydragen-diff reads as bf16) or a NumPy array
        as .npy."""
        import numpy as np
        if isinstance(tensor, np.ndarray):
            array = np.ascontiguousarray(tensor)
        else:
            import torch
            host = tensor.detach().contiguous().cpu()
            array = host.view(torch.int16).numpy().view(np.uint16) if host.dtype == torch.bfloat16 else host.numpy()
        np.save(os.path.join(self.folder, name), array)

    def write_inputs(self, x, pt):
        seqs = check_indices(pt.B, self.check_seqs)
        for f in (self.folder, self.reference):  # the last point's files: its tree may have had more segments
            for name in os.listdir(f):
                os.remove(os.path.join(f, name))
        self.has_reference = False
        parents, lengths, leaves, sources = tree_spec(pt, seqs)
        spec = dict(q_heads=pt.Hq, kv_heads=pt.Hkv, head_dim=pt.D, q_len=pt.q_len, parents=parents, lengths=lengths,
                    leaves=leaves)
        with open(os.path.join(self.folder, "spec.json"), "w") as f:
            json.dump(spec, f)
        self.save("q.npy", x["q"][seqs])
        for i, (k, v, at) in enumerate(sources):
            self.save(f"k{i}.npy", x[k] if at is None else x[k][at])
            self.save(f"v{i}.npy", x[v] if at is None else x[v][at])
        self.seqs = seqs

    def judge(self, out, lse_natural):
        """(passed, hydragen-diff's summary line) for out [B, q_len, Hq, D] and lse [B, q_len, Hq] (natural
        log, fp32; None when the method returns none), torch tensors or NumPy arrays."""
        self.save("o.npy", out[self.seqs])
        lse_path = os.path.join(self.folder, "lse.npy")
        if lse_natural is None:
            if os.path.exists(lse_path):
                os.remove(lse_path)
        else:
            self.save("lse.npy", lse_natural[self.seqs])
        reference = ["--reference-dir" if self.has_reference else "--write-reference", self.reference]
        r = subprocess.run([self.diff, "--npy-dir", self.folder, *reference], capture_output=True, text=True)
        line = (r.stdout.strip().splitlines() or r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        if r.returncode not in (0, 1):
            raise RuntimeError(f"hydragen-diff failed (exit {r.returncode}): {line}")
        self.has_reference = True
        return r.returncode == 0, line


def natural_lse(lse, base):
    """An LSE in another base (FlashInfer's is log2) as the natural log the reference uses."""
    return None if lse is None else lse.float() * math.log(base)
