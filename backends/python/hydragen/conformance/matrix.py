"""The default case matrix: each problem below in bf16, fp16 and fp32. Every hard part of DESIGN.md
section 5 is in some problem: trees of depth 1-4, empty segments, sequences out of tree order, ragged
suffixes with 0, a 1-token prefix, q_len 1-8 causal, MHA / GQA / MQA, D 64 and 128, logits near
overflow (scores spread about 1e4: exp() overflows in every dtype unless the max is subtracted), and
batches whose query rows (B x q_len x Hq / Hkv) fill no 64-row tile. Kept small: the whole matrix
runs in seconds on a CPU."""
from .._core import SharingTree
from .cases import Case

DTYPES = ("bf16", "fp16", "fp32")

_prefix = SharingTree.prefix_suffix
_flat = SharingTree.flat
_tree = SharingTree.from_parents

# Depth 3, uneven fan-out (3, 1, 2), an empty group (segment 2) and an empty leaf (5); sequence s's leaf
# is not in segment order.
_DEPTH3 = dict(parents=[-1, 0, 0, 0, 1, 1, 1, 2, 3, 3], lengths=[40, 12, 0, 25, 6, 0, 14, 3, 9, 1],
               seq_leaves=[8, 4, 7, 6, 9, 5])
# The same with every leaf of at least 1 token, for q_len 2.
_DEPTH3_Q2 = dict(_DEPTH3, lengths=[40, 12, 0, 25, 6, 2, 14, 3, 9, 1])
# Depth 4: an empty segment mid-path (1), leaves out of order, one of 1 token.
_DEPTH4 = dict(parents=[-1, 0, 0, 1, 1, 2, 3, 3, 4, 5, 5], lengths=[20, 0, 9, 7, 30, 4, 2, 11, 5, 1, 8],
               seq_leaves=[9, 6, 10, 8, 7])

# (name, tree, q_len, Hq, Hkv, D, logit scale, what it catches)
PROBLEMS = (
    ("one_sequence", _flat([37]), 1, 4, 4, 64, 1.0, "depth 1, B = 1, MHA"),
    ("flat_ragged", _flat([13, 1, 40, 7, 22]), 1, 8, 2, 128, 1.0, "depth 1, ragged, a 1-token sequence"),
    ("prefix_ragged", _prefix(64, [0, 5, 17, 1, 33, 0, 9]), 1, 8, 1, 128, 1.0, "suffixes of 0 and 1, MQA"),
    ("prefix_one_token", _prefix(1, [8, 3, 12]), 1, 4, 4, 64, 1.0, "a 1-token prefix"),
    ("prefix_empty", _prefix(0, [5, 9]), 1, 8, 2, 64, 1.0, "an empty prefix"),
    ("causal_q4", _prefix(48, [3, 7, 4, 20]), 4, 8, 2, 64, 1.0, "q_len 4 causal, a leaf of q_len - 1"),
    ("causal_q8", _prefix(32, [7, 12, 30]), 8, 8, 1, 128, 1.0, "q_len 8 causal, MQA"),
    ("depth3", _tree(**_DEPTH3), 1, 8, 2, 128, 1.0, "depth 3: empty segments, out of tree order"),
    ("depth3_q2", _tree(**_DEPTH3_Q2), 2, 4, 4, 64, 1.0, "depth 3, q_len 2 causal, MHA"),
    ("depth4_q2", _tree(**_DEPTH4), 2, 8, 1, 64, 1.0, "depth 4: an empty segment mid-path, q_len 2 causal"),
    ("forest", _tree([-1, -1, 0, 0, 1, 1, 1], [16, 30, 5, 0, 2, 7, 1], [4, 2, 6, 3, 5]), 1, 4, 4, 128, 1.0,
     "two roots (nothing shared by all)"),
    ("logits_1e4", _prefix(40, [6, 0, 11]), 1, 8, 2, 128, 1e4, "scores about 1e4 (near overflow)"),
    ("logits_1e4_depth3_q2", _tree(**_DEPTH3_Q2), 2, 8, 1, 64, 1e4, "scores about 1e4, depth 3, q_len 2 causal"),
    ("batch_33", _prefix(24, [(7 * b) % 11 for b in range(33)]), 1, 8, 1, 128, 1.0,
     "B = 33 (264 query rows: no whole tile), ragged"),
)


def default_cases(dtypes=DTYPES):
    """Every problem of PROBLEMS in each dtype, named "problem-dtype"; seeds fixed per problem."""
    return [Case(f"{name}-{dtype}", tree, q_len=q_len, q_heads=hq, kv_heads=hkv, head_dim=d, dtype=dtype,
                 seed=1 + i, logit_scale=logit_scale, what=what)
            for i, (name, tree, q_len, hq, hkv, d, logit_scale, what) in enumerate(PROBLEMS)
            for dtype in dtypes]
