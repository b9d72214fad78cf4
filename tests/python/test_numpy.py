"""NumPy on the CPU (what CI runs): attention by the host backends on NumPy arrays, checked against the
fp64 reference; plans reused, packed K/V, growing leaves, trees from token ids, the backend list."""
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import hydragen
from problems import random_problem


def test_the_readme_example_passes():
    example = Path(__file__).parents[2] / "experiments" / "python" / "example.py"
    run = subprocess.run([sys.executable, str(example)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.startswith("B=16 q_len=1 Hq=8 Hkv=1 D=128 fp32") and run.stdout.strip().endswith(" PASS")


@pytest.mark.parametrize("dtype", [np.float32, np.float16])
def test_attention_on_a_two_level_tree_with_causal_queries(dtype):
    tree = hydragen.SharingTree.two_level(40, [8, 0], [[3, 5], [1, 9, 4]])
    p = random_problem(tree, q_heads=8, kv_heads=2, head_dim=64, q_len=2, seed=1).mapped(lambda x: x.astype(dtype))
    plan = hydragen.plan(p.q, p.k, p.v, tree)
    assert plan.backend == "cpu-hydragen"
    o, lse = plan.run(p.q, p.k, p.v)
    assert isinstance(o, np.ndarray) and o.dtype == dtype and o.shape == (5, 2, 8, 64)
    assert lse.dtype == np.float32 and lse.shape == (5, 2, 8)
    comparison = hydragen.compare(o, lse, p.q, p.k, p.v, tree)
    assert comparison.ok, comparison.summary


@pytest.mark.parametrize("backend", ["cpu-flat", "cpu-hydragen", "reference", "reference-decomposed"])
def test_every_host_backend_passes(backend):
    tree = hydragen.SharingTree.from_parents([-1, 0, 0, 1, 1], [12, 4, 6, 2, 0], [3, 4, 2])
    dtype = np.float64 if backend.startswith("reference") else np.float32
    p = random_problem(tree, seed=2).mapped(lambda x: x.astype(dtype))
    o, lse = hydragen.attention(p.q, p.k, p.v, tree, backend=backend)
    assert hydragen.compare(o, lse, p.q, p.k, p.v, tree, strict_lse=True).ok


def test_fp64_tensors_get_the_reference_which_reference_returns_too():
    tree = hydragen.SharingTree.prefix_suffix(30, [2, 0, 7])
    p = random_problem(tree, seed=3)
    assert hydragen.plan(p.q, p.k, p.v, tree).backend == "reference"
    o, lse = hydragen.attention(p.q, p.k, p.v, tree)
    ref_o, ref_lse = hydragen.reference(p.q, p.k, p.v, tree)
    assert ref_o.dtype == np.float64 and ref_lse.dtype == np.float64
    np.testing.assert_array_equal(o, ref_o)
    np.testing.assert_array_equal(lse, ref_lse)
    # The reference takes any dtype, widened exactly: fp16 inputs give the fp64 attention of those values.
    half = p.mapped(lambda x: x.astype(np.float16))
    widened = half.mapped(lambda x: x.astype(np.float64))
    np.testing.assert_array_equal(hydragen.reference(half.q, half.k, half.v, tree)[0],
                                  hydragen.reference(widened.q, widened.k, widened.v, tree)[0])


def test_scale_is_one_over_sqrt_d_unless_given():
    tree = hydragen.SharingTree.prefix_suffix(16, [4, 4])
    p = random_problem(tree, head_dim=16, seed=4)
    assert hydragen.plan(p.q, p.k, p.v, tree).shape.scale == pytest.approx(0.25)
    o, _ = hydragen.attention(p.q, p.k, p.v, tree, scale=0.5)
    scaled = hydragen.reference(p.q * 2, p.k, p.v, tree, scale=0.25)[0]
    np.testing.assert_allclose(o, scaled, rtol=1e-13)


def test_one_packed_tensor_is_the_same_as_a_list_of_segments():
    tree = hydragen.SharingTree.prefix_suffix(50, [3, 0, 6, 1])
    p = random_problem(tree, seed=5).mapped(lambda x: x.astype(np.float32))
    o_list, lse_list = hydragen.attention(p.q, p.k, p.v, tree)
    o_packed, lse_packed = hydragen.attention(p.q, np.concatenate(p.k), np.concatenate(p.v), tree)
    np.testing.assert_array_equal(o_list, o_packed)
    np.testing.assert_array_equal(lse_list, lse_packed)


def test_one_plan_runs_other_tensors_of_the_same_problem():
    tree = hydragen.SharingTree.prefix_suffix(64, [5, 9])
    first, second = (random_problem(tree, seed=s).mapped(lambda x: x.astype(np.float32)) for s in (6, 7))
    plan = hydragen.plan(first.q, first.k, first.v, tree)
    for p in (first, second, first):
        o, lse = plan.run(p.q, p.k, p.v)
        assert hydragen.compare(o, lse, p.q, p.k, p.v, tree).ok


def test_leaf_lengths_shorten_the_leaves_of_a_plan_made_for_capacities():
    capacity = hydragen.SharingTree.prefix_suffix(32, [8, 8, 8])
    p = random_problem(capacity, seed=8).mapped(lambda x: x.astype(np.float32))
    plan = hydragen.plan(p.q, p.k, p.v, capacity)
    lengths = np.array([3, 8, 0], dtype=np.int32)
    o, lse = plan.run(p.q, p.k, p.v, leaf_lengths=lengths)
    now = hydragen.SharingTree.prefix_suffix(32, lengths.tolist())
    k_now = [p.k[0]] + [k[:n] for k, n in zip(p.k[1:], lengths)]
    v_now = [p.v[0]] + [v[:n] for v, n in zip(p.v[1:], lengths)]
    assert hydragen.compare(o, lse, p.q, k_now, v_now, now).ok


def test_compare_fails_a_wrong_output_and_says_where():
    tree = hydragen.SharingTree.prefix_suffix(20, [4, 4])
    p = random_problem(tree, seed=9).mapped(lambda x: x.astype(np.float16))
    o, lse = hydragen.attention(p.q, p.k, p.v, tree)
    bad = o.copy()
    bad[1, 0, 3, 5] += np.float16(0.25)
    c = hydragen.compare(bad, lse, p.q, p.k, p.v, tree)
    assert not c.ok and c.failed_elements == 1
    assert c.summary.endswith(" FAIL") and "worst_o=[b=1, t=0, h=3, d=5]" in c.summary
    assert str(c) == c.summary and "FAIL" in repr(c)
    # No LSE: O alone is judged.
    assert "lse=absent" in hydragen.compare(o, None, p.q, p.k, p.v, tree).summary
    # An LSE off by less than fp16's unit roundoff is what a merge at O's precision cannot see; our
    # backends are held to the strict bound.
    near = lse + np.float32(3e-4)
    assert hydragen.compare(o, near, p.q, p.k, p.v, tree).ok
    assert not hydragen.compare(o, near, p.q, p.k, p.v, tree, strict_lse=True).ok


def test_backends_lists_what_can_run_here_and_why_not():
    listed = {b.name: b for b in hydragen.backends()}
    for name in ("reference", "reference-decomposed", "cpu-flat", "cpu-hydragen"):
        assert listed[name].available and listed[name].memory == "host" and listed[name].summary
    for b in listed.values():
        assert b.available == (b.unavailable_reason == "")
        if b.memory == "cuda" and not b.available:
            assert "no CUDA device" in b.unavailable_reason
    assert any(b.memory == "cuda" for b in listed.values()) == hydragen.built_with_cuda()


def test_trees_from_their_builders_and_from_token_ids():
    tree = hydragen.SharingTree.two_level(10, [3, 4], [[1, 2], [0]])
    assert (tree.num_segments, tree.num_seqs, tree.depth, tree.total_tokens) == (6, 3, 3, 20)
    assert tree.parents == [-1, 0, 1, 1, 0, 4] and tree.path(2) == [0, 4, 5]
    assert tree.flattened().lengths == [14, 15, 14]
    prompts = [[1, 2, 3, 4, 5], [1, 2, 3, 9], [7]]
    detected, spans = hydragen.detect_sharing(prompts, min_tokens=2)
    assert detected.describe() == hydragen.SharingTree.from_token_ids(prompts, min_tokens=2).describe()
    assert detected.num_seqs == 3 and len(spans) == detected.num_segments
    shared = next(i for i in range(detected.num_segments) if len(detected.seqs_below(i)) == 2)
    seq, begin, end = spans[shared]
    assert prompts[seq][begin:end] == [1, 2, 3]
    shape = hydragen.AttentionShape(3, 1, 8, 1, 128, "bf16")
    assert hydragen.detect_sharing(prompts, shape=shape)[0].num_seqs == 3
    with pytest.raises(ValueError, match="give them with shape"):
        hydragen.detect_sharing(prompts, min_tokens=2, rates=hydragen.SharingRates())
    with pytest.raises(ValueError, match="lengths\\[1\\]"):
        hydragen.SharingTree.from_parents([-1, 0], [4, -1], [1])


def test_detection_weighs_the_partials_at_the_rates_it_is_given():
    host = hydragen.sharing_rates("host")
    assert (host.partials_share, host.source) == (1.0, "no measured rate")
    assert host.describe() == "partials at 1 of the K/V DRAM rate (no measured rate)"
    # 100 tokens between two sequences: worth a segment where the partials move at the K/V's rate (from
    # 73 tokens), not at the H100's half of it (from 145).
    run = list(range(100))
    pair = [run + [1000], run + [1001]]
    two = hydragen.AttentionShape(2, 1, 8, 1, 128, "bf16")
    assert hydragen.detect_sharing(pair, shape=two)[0].depth == 2
    h100 = hydragen.SharingRates(0.5, "the H100's")
    assert hydragen.detect_sharing(pair, shape=two, rates=h100)[0].depth == 1
    with pytest.raises(ValueError, match="partials_share must be in \\(0, 1\\].*a bad file"):
        hydragen.detect_sharing(pair, shape=two, rates=hydragen.SharingRates(1.5, "a bad file"))


def test_a_host_plan_decides_nothing_so_explains_nothing():
    tree = hydragen.SharingTree.prefix_suffix(8, [3, 5])
    p = random_problem(tree, seed=1).mapped(lambda x: x.astype(np.float32))
    assert hydragen.plan(p.q, p.k, p.v, tree, backend="cpu-hydragen").explain() == ""
