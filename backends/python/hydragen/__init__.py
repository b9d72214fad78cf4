"""hydragen: exact shared-prefix attention over DLPack tensors (PyTorch, NumPy, CuPy, JAX; CPU or CUDA).

    tree = hydragen.SharingTree.prefix_suffix(P, [S] * B)
    o, lse = hydragen.attention(q, [k_prefix, *k_suffixes], [v_prefix, *v_suffixes], tree)
    assert hydragen.compare(o, lse, q, ks, vs, tree).ok

Layouts (row-major, D fastest): q and o [B, q_len, Hq, D]; each segment's k and v [length, Hkv, D];
lse [B, q_len, Hq] (fp32, natural log). Tensors are used where they are, without a copy; one in another
layout, dtype or device is refused with a ValueError naming it.

hydragen.conformance(kernel) runs the matrix of hard cases against anyone's kernel (docs/conformance.md).
"""
from . import conformance
from ._attention import Plan, attention, plan
from ._check import compare, reference
from ._core import (AttentionShape, BackendInfo, Comparison, CostEstimate, OutOfMemory, SharingRates, SharingTree,
                    Unsupported, backends, built_with_cuda, detect_sharing, estimate_cost, make_problem, sharing_rates)

__all__ = ["AttentionShape", "BackendInfo", "Comparison", "CostEstimate", "OutOfMemory", "Plan", "SharingRates",
           "SharingTree", "Unsupported", "attention", "backends", "built_with_cuda", "compare", "conformance",
           "detect_sharing", "estimate_cost", "make_problem", "plan", "reference", "sharing_rates"]
