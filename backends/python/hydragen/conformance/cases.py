"""A conformance case: one problem, drawn as hydragen-diff draws it (make_problem: the same --seed and
--logit-scale give the same values bit for bit), and the hydragen-diff line that draws it again."""
import numpy as np

from .. import _core
from .._core import AttentionShape, Unsupported

# What a kernel receives for each dtype: NumPy has no bfloat16, so bf16 values come as float32 arrays
# (exactly: every bf16 number is an fp32 number); to_torch() casts them back.
NUMPY_DTYPES = {"fp64": np.float64, "fp32": np.float32, "fp16": np.float16, "bf16": np.float32}

# The backend the repro line runs on the case's inputs: what a correct kernel gets, in every dtype but fp64.
REPRO_BACKEND = "cpu-flat"


class Case:
    """One problem of the matrix. A kernel reads:

        name, what (the hard part it is there for), dtype ("bf16", "fp16", "fp32"), tree (a SharingTree),
        num_seqs, q_len (causal within the leaf when > 1), q_heads, kv_heads, head_dim, scale
        q [B, q_len, Hq, D]; k, v: lists of one [length, Hkv, D] per segment of the tree;
            NumPy arrays of NUMPY_DTYPES[dtype] (bf16 values as float32)
    Bad dimensions, dtypes or trees raise ValueError naming the field (the library's checks)."""

    def __init__(self, name, tree, *, q_len=1, q_heads=8, kv_heads=2, head_dim=64, dtype="bf16", seed=0,
                 logit_scale=1.0, scale=None, what=""):
        self.name, self.tree, self.what = name, tree, what
        self.seed, self.logit_scale = seed, logit_scale
        self.shape = AttentionShape(tree.num_seqs, q_len, q_heads, kv_heads, head_dim, dtype, scale or 0.0)
        # Drawn now, so that a bad seed or logit scale fails here, with the library's message.
        self.exact_inputs = _core.make_problem(self.shape, tree, seed, logit_scale)  # fp64, exact in the dtype
        numpy_dtype = NUMPY_DTYPES[dtype]
        q, k, v = self.exact_inputs
        self.q = q.astype(numpy_dtype)
        self.k = [x.astype(numpy_dtype) for x in k]
        self.v = [x.astype(numpy_dtype) for x in v]

    dtype = property(lambda self: self.shape.dtype)
    num_seqs = property(lambda self: self.shape.num_seqs)
    q_len = property(lambda self: self.shape.q_len)
    q_heads = property(lambda self: self.shape.q_heads)
    kv_heads = property(lambda self: self.shape.kv_heads)
    head_dim = property(lambda self: self.shape.head_dim)
    scale = property(lambda self: self.shape.scale)

    def hydragen_diff_line(self):
        """The command line that draws this case's inputs again and checks our CPU backend on them against
        the same reference, or why the tool cannot: 'not expressible: ...' (its backend refuses the case)."""
        reason = _repro_backend_refuses(self)
        if reason:
            return f"not expressible with hydragen-diff: {REPRO_BACKEND} refuses it ({reason})"
        t = self.tree
        args = ["--backend", REPRO_BACKEND, "--parents", _ints(t.parents),
                "--lengths", _ints(t.lengths), "--leaves", _ints(t.seq_leaves), "--q-len", self.q_len,
                "--q-heads", self.q_heads, "--kv-heads", self.kv_heads, "--head-dim", self.head_dim,
                "--dtype", self.dtype, "--seed", self.seed]
        if self.logit_scale != 1.0:
            args += ["--logit-scale", repr(float(self.logit_scale))]  # repr: the shortest text that reads back exactly
        if self.scale != AttentionShape(1, 1, 1, 1, self.head_dim, "fp32").scale:
            args += ["--scale", f"{self.scale:.9g}"]  # an fp32 value: 9 digits read back exactly
        return " ".join(["hydragen-diff", *map(str, args)])

    def describe(self):
        return f"{self.name}: {self.shape.describe()} tree=({self.tree.describe()})"

    def __repr__(self):
        return f"<hydragen.conformance.Case {self.describe()}>"


def _ints(values):
    return ",".join(map(str, values))


def _repro_backend_refuses(case):
    """The reason REPRO_BACKEND gives for not planning the case, or None. Planned on uninitialised
    tensors of the case's dtype (ours: NumPy has no bf16), so nothing runs."""
    def empty(shape):
        return _core.empty(list(shape), case.dtype, "host")

    try:
        _core.Plan(empty(case.q.shape), [empty(x.shape) for x in case.k], [empty(x.shape) for x in case.v], case.tree,
                   REPRO_BACKEND, case.scale)
    except Unsupported as why:
        return str(why)
    return None
