"""Bad input is a Python exception carrying the library's message, naming the tensor and the field:
shapes, dtypes, layouts, devices, trees, backends and options."""
import numpy as np
import pytest

import hydragen
from problems import random_problem

TREE = hydragen.SharingTree.prefix_suffix(12, [3, 0])  # segments: the prefix, then suffixes of 3 and 0


@pytest.fixture
def p():
    return random_problem(TREE, q_heads=4, kv_heads=2, head_dim=32, seed=0).mapped(lambda x: x.astype(np.float32))


def outputs(p):
    return np.zeros(p.q.shape, np.float32), np.zeros(p.q.shape[:3], np.float32)


def test_shapes_are_named_dimension_by_dimension(p):
    with pytest.raises(ValueError, match=r"q: 3 dims \[2, 4, 32\], expected 4: \[B, q_len, Hq, D\]"):
        hydragen.attention(p.q[:, 0], p.k, p.v, TREE)
    with pytest.raises(ValueError, match=r"k\[1\]: dim 0 \(length\) is 2, expected 3"):
        hydragen.attention(p.q, [p.k[0], p.k[1][:2], p.k[2]], p.v, TREE)
    with pytest.raises(ValueError, match=r"v\[0\]: dim 1 \(Hkv\) is 1, expected 2"):
        hydragen.attention(p.q, p.k, [p.v[0][:, :1], p.v[1], p.v[2]], TREE)
    with pytest.raises(ValueError, match=r"k: D is 16 but q's D is 32"):
        hydragen.attention(p.q, [k[..., :16] for k in p.k], p.v, TREE)
    with pytest.raises(ValueError, match=r"k: 2 tensors, the tree has 3 segments"):
        hydragen.attention(p.q, p.k[:2], p.v, TREE)
    with pytest.raises(ValueError, match=r"k: dim 0 \(tokens\) is 14, expected 15"):
        hydragen.attention(p.q, np.concatenate(p.k)[:14], np.concatenate(p.v), TREE)
    with pytest.raises(ValueError, match=r"the sharing tree has 2 sequences"):
        hydragen.attention(np.concatenate([p.q, p.q]), p.k, p.v, TREE)
    with pytest.raises(ValueError, match=r"q_heads \(4\) must be a multiple of kv_heads \(3\)"):
        hydragen.attention(p.q, [np.zeros((n, 3, 32), np.float32) for n in TREE.lengths], p.v, TREE)


def test_outputs_are_checked_like_inputs(p):
    plan = hydragen.plan(p.q, p.k, p.v, TREE)
    o, lse = outputs(p)
    with pytest.raises(ValueError, match=r"o: dim 3 \(D\) is 16, expected 32"):
        plan.run(p.q, p.k, p.v, o[..., :16].copy(), lse)
    with pytest.raises(ValueError, match=r"lse: dtype fp16, expected fp32"):
        plan.run(p.q, p.k, p.v, o, lse.astype(np.float16))
    with pytest.raises(ValueError, match=r"o: dtype fp64, expected fp32"):
        plan.run(p.q, p.k, p.v, o.astype(np.float64), lse)
    o.setflags(write=False)
    with pytest.raises(ValueError, match=r"o: read-only"):
        plan.run(p.q, p.k, p.v, o, lse)


def test_dtypes_are_ours_and_one_for_q_k_v(p):
    with pytest.raises(ValueError, match=r"q: dtype int32 is not one we take \(fp64, fp32, fp16, bf16\)"):
        hydragen.attention(p.q.astype(np.int32), p.k, p.v, TREE)
    with pytest.raises(ValueError, match=r"q, k and v must share one dtype: q is fp32, k\[2\] is fp64"):
        hydragen.attention(p.q, p.k[:2] + [p.k[2].astype(np.float64)], p.v, TREE)  # refused, never cast
    with pytest.raises(ValueError, match=r"q, k and v must share one dtype: q is fp32, v\[0\] is fp16"):
        hydragen.compare(p.q, None, p.q, p.k, [p.v[0].astype(np.float16)] + p.v[1:], TREE)


def test_a_layout_other_than_ours_is_refused_not_copied(p):
    transposed = np.ascontiguousarray(p.q.transpose(0, 2, 1, 3)).transpose(0, 2, 1, 3)  # [B, 1, Hq, D], Hq-major memory
    assert transposed.shape == p.q.shape
    every_other = np.concatenate([p.q, p.q], axis=3)[..., ::2]
    with pytest.raises(ValueError, match=r"q: strides \[256, 256, 64, 2\] \(elements\) of shape \[2, 1, 4, 32\] are not row-major"):
        hydragen.attention(every_other, p.k, p.v, TREE)
    with pytest.raises(ValueError, match=r"k\[0\]: strides .* are not row-major contiguous"):
        hydragen.attention(p.q, [p.k[0].transpose(1, 0, 2).copy().transpose(1, 0, 2)] + p.k[1:], p.v, TREE)
    # A dim of size 1 may have any stride: [B, 1, Hq, D] with Hq-major memory is still our layout when
    # q_len is 1, and is read where it is.
    o, lse = hydragen.attention(transposed, p.k, p.v, TREE)
    assert hydragen.compare(o, lse, transposed, p.k, p.v, TREE).ok


def test_what_is_not_a_tensor_is_a_type_error(p):
    with pytest.raises(TypeError, match=r"q: expected a tensor with __dlpack__ .* got list"):
        hydragen.attention(p.q.tolist(), p.k, p.v, TREE)
    with pytest.raises(ValueError, match=r"k: an empty list"):
        hydragen.attention(p.q, [], p.v, TREE)


def test_backends_and_options_are_named(p):
    with pytest.raises(ValueError, match=r"backend 'cpu-fast' is not registered \(known: reference, "):
        hydragen.attention(p.q, p.k, p.v, TREE, backend="cpu-fast")
    with pytest.raises(ValueError, match=r"the storage is how your K and V are laid out"):
        hydragen.attention(p.q, p.k, p.v, TREE, backend="cpu-flat:redundant")
    with pytest.raises(ValueError, match=r"backend 'auto' takes no options"):
        hydragen.attention(p.q, p.k, p.v, TREE, backend="auto:form=wide")
    with pytest.raises(ValueError, match=r"cpu-hydragen.*form"):
        hydragen.attention(p.q, p.k, p.v, TREE, backend="cpu-hydragen:form=wide")
    with pytest.raises(ValueError, match=r"backend 'reference' .*dtype fp32"):
        hydragen.attention(p.q, p.k, p.v, TREE, backend="reference")
    if hydragen.built_with_cuda():
        with pytest.raises(ValueError, match=r"backend 'cuda-hydragen' runs on cuda memory, but the tensors are on host"):
            hydragen.attention(p.q, p.k, p.v, TREE, backend="cuda-hydragen")


def test_a_problem_no_backend_takes_is_unsupported_with_each_reason():
    p = random_problem(TREE, head_dim=512).mapped(lambda x: x.astype(np.float32))
    with pytest.raises(hydragen.Unsupported, match=r"cpu-hydragen: head_dim 512.*; reference: dtype fp32") as caught:
        hydragen.attention(p.q, p.k, p.v, TREE)
    assert isinstance(caught.value, ValueError)


def test_leaf_lengths_are_int32_within_the_leaves(p):
    plan = hydragen.plan(p.q, p.k, p.v, TREE)
    with pytest.raises(ValueError, match=r"leaf_lengths: dtype must be int32"):
        plan.run(p.q, p.k, p.v, leaf_lengths=np.array([1, 0], dtype=np.int64))
    with pytest.raises(ValueError, match=r"leaf_lengths: dim 0 \(B\) is 3, expected 2"):
        plan.run(p.q, p.k, p.v, leaf_lengths=np.array([1, 0, 0], dtype=np.int32))
    with pytest.raises(ValueError, match=r"inputs.leaf_lengths\[0\] = 4: sequence 0's leaf holds 3 tokens"):
        plan.run(p.q, p.k, p.v, leaf_lengths=np.array([4, 0], dtype=np.int32))


def test_the_checks_take_any_strides(p):
    """reference and compare copy a view row-major (a kernel's output is often one); attention does not."""
    def strided(x):
        """x's values as every other element of a wider array: a view that is not row-major."""
        wide = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), dtype=x.dtype)
        wide[..., ::2] = x
        return wide[..., ::2]

    o, lse = hydragen.attention(p.q, p.k, p.v, TREE)
    assert not strided(o).flags.c_contiguous
    assert hydragen.compare(strided(o), lse, p.q, p.k, p.v, TREE).ok
    ref_o, _ = hydragen.reference(p.q, [strided(k) for k in p.k], p.v, TREE)
    np.testing.assert_array_equal(ref_o, hydragen.reference(p.q, p.k, p.v, TREE)[0])
    assert not hydragen.compare(strided(o * 2 + 1), lse, p.q, p.k, p.v, TREE).ok
