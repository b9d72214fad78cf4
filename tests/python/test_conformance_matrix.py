"""The default matrix holds every hard case of DESIGN.md section 5, and each case's hydragen-diff line
draws the very inputs the suite handed the kernel (HYDRAGEN_DIFF names the tool; scripts/test sets it)."""
import os
import re
import subprocess

import pytest

import hydragen
from hydragen import conformance

CASES = conformance.default_cases()


def query_rows(case):
    return case.num_seqs * case.q_len * case.q_heads // case.kv_heads


def out_of_tree_order(tree):
    return list(tree.seq_leaves) != sorted(tree.seq_leaves)


def test_the_matrix_covers_design_section_5():
    assert len(CASES) == 42 and len({c.name for c in CASES}) == 42
    assert {c.dtype for c in CASES} == {"bf16", "fp16", "fp32"}
    assert {c.tree.depth for c in CASES} == {1, 2, 3, 4}
    assert any(0 in c.tree.lengths for c in CASES if c.tree.depth >= 3)  # empty segments inside trees
    assert any(c.tree.lengths[c.tree.seq_leaves[0]] == 0 for c in CASES)  # a suffix of 0
    assert any(c.tree.lengths[0] == 1 for c in CASES)  # a 1-token prefix
    assert any(out_of_tree_order(c.tree) for c in CASES if c.tree.depth == 4)
    assert {c.q_len for c in CASES} == {1, 2, 4, 8}
    assert {c.q_heads // c.kv_heads for c in CASES} == {1, 4, 8} and any(c.kv_heads == 1 for c in CASES)
    assert {c.head_dim for c in CASES} == {64, 128}
    assert any(c.logit_scale == 1e4 for c in CASES)  # exp() overflows in every dtype unless the max is subtracted
    assert all(query_rows(c) % 64 for c in CASES if c.num_seqs > 4)  # no batch fills a whole 64-row tile


def test_every_case_has_a_hydragen_diff_line():
    assert all(c.hydragen_diff_line().startswith("hydragen-diff --backend cpu-flat --parents ") for c in CASES)


@pytest.mark.skipif(not os.environ.get("HYDRAGEN_DIFF"), reason="HYDRAGEN_DIFF (the hydragen-diff binary) not set")
@pytest.mark.parametrize("name", ["depth4_q2-fp32", "causal_q8-fp16", "logits_1e4-fp32"])
def test_the_line_draws_the_inputs_the_kernel_saw(name):
    """Our cpu-flat on the suite's inputs and the tool's on its own draw show the same errors to the last digit."""
    case = next(c for c in CASES if c.name == name)
    line = case.hydragen_diff_line().split()
    run = subprocess.run([os.environ["HYDRAGEN_DIFF"], *line[1:]], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    o, lse = hydragen.attention(case.q, case.k, case.v, case.tree, backend="cpu-flat")
    ours = hydragen.compare(o, lse, case.q, case.k, case.v, case.tree, strict_lse=True).summary

    def errors(text):
        return re.search(r"max_abs_err=\S+ rel_l2_err=\S+ lse_err=\S+", text).group(0)

    assert errors(run.stdout) == errors(ours)
