"""JAX and CuPy through DLPack: JAX arrays in (read where they are), JAX arrays out (ours, handed over by
DLPack: JAX arrays are immutable); CuPy arrays on the GPU with CuPy's current stream. Skipped where the
framework is not installed (CI has neither)."""
import numpy as np
import pytest

import hydragen
from problems import random_problem

TREE = hydragen.SharingTree.two_level(80, [12, 5], [[3, 0], [9]])


def test_jax_arrays_on_the_cpu():
    jnp = pytest.importorskip("jax.numpy")
    p = random_problem(TREE, seed=1).mapped(lambda x: jnp.asarray(x, dtype=jnp.bfloat16))
    o, lse = hydragen.attention(p.q, p.k, p.v, TREE)
    assert type(o).__module__.partition(".")[0] in ("jax", "jaxlib")
    assert o.dtype == jnp.bfloat16 and lse.dtype == jnp.float32 and o.shape == p.q.shape
    assert hydragen.compare(o, lse, p.q, p.k, p.v, TREE, strict_lse=True).ok


def test_cupy_arrays_on_the_gpu():
    cupy = pytest.importorskip("cupy")
    if not any(b.name == "cuda-hydragen" and b.available for b in hydragen.backends()):
        pytest.skip("no CUDA device, or this build has no CUDA backends")
    p = random_problem(TREE, q_heads=8, kv_heads=1, head_dim=128, seed=2).mapped(lambda x: cupy.asarray(x, dtype=np.float16))
    with cupy.cuda.Stream() as stream:
        o, lse = hydragen.attention(p.q, p.k, p.v, TREE)
        stream.synchronize()
    assert isinstance(o, cupy.ndarray) and o.dtype == np.float16
    assert hydragen.compare(o, lse, p.q, p.k, p.v, TREE, strict_lse=True).ok
