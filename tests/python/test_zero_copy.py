"""Tensors are used where they are: outputs are written in place, inputs are read from their own memory
(a view into a larger buffer included), and nothing is converted behind the caller's back."""
import numpy as np

import hydragen
from problems import random_problem

TREE = hydragen.SharingTree.prefix_suffix(40, [6, 2, 0])


def test_outputs_are_written_into_the_callers_buffers():
    p = random_problem(TREE, seed=1).mapped(lambda x: x.astype(np.float32))
    storage = np.full((3,) + p.q.shape, 7.0, dtype=np.float32)  # o goes into the middle slot
    lse_storage = np.full((3,) + p.q.shape[:3], 7.0, dtype=np.float32)
    o, lse = hydragen.plan(p.q, p.k, p.v, TREE).run(p.q, p.k, p.v, storage[1], lse_storage[1])
    assert o is storage[1] or np.shares_memory(o, storage)
    assert np.shares_memory(lse, lse_storage)
    assert hydragen.compare(storage[1], lse_storage[1], p.q, p.k, p.v, TREE).ok
    assert (storage[0] == 7).all() and (storage[2] == 7).all()  # nothing written beside it


def test_a_packed_cache_is_read_in_place_at_its_offset():
    p = random_problem(TREE, seed=2).mapped(lambda x: x.astype(np.float32))
    cache_k = np.zeros((100,) + p.k[0].shape[1:], np.float32)  # a KV cache with room on both sides
    cache_v = np.zeros_like(cache_k)
    tokens = TREE.total_tokens
    cache_k[10:10 + tokens], cache_v[10:10 + tokens] = np.concatenate(p.k), np.concatenate(p.v)
    o, lse = hydragen.attention(p.q, cache_k[10:10 + tokens], cache_v[10:10 + tokens], TREE)
    expected_o, expected_lse = hydragen.attention(p.q, p.k, p.v, TREE)
    np.testing.assert_array_equal(o, expected_o)
    np.testing.assert_array_equal(lse, expected_lse)


def test_a_plan_reads_the_inputs_memory_at_each_run():
    p = random_problem(TREE, seed=3).mapped(lambda x: x.astype(np.float32))
    plan = hydragen.plan(p.q, p.k, p.v, TREE)
    o, lse = plan.run(p.q, p.k, p.v)
    p.q *= 2  # the same arrays, new values: the next run sees them
    p.k[0][:] = -p.k[0]
    plan.run(p.q, p.k, p.v, o, lse)
    assert hydragen.compare(o, lse, p.q, p.k, p.v, TREE).ok
