"""Random problems for the tests: Q, K, V drawn from N(0, 1) as NumPy fp64 arrays, in the layouts of
DESIGN.md (q [B, q_len, Hq, D]; one [length, Hkv, D] per segment of the tree), for each test to move into
its framework and dtype."""
from dataclasses import dataclass

import numpy as np


@dataclass
class Problem:
    tree: object        # hydragen.SharingTree
    q: np.ndarray       # [B, q_len, Hq, D]
    k: list             # per segment: [length, Hkv, D]
    v: list             # per segment: [length, Hkv, D]

    def mapped(self, convert):
        """The same values through convert (a dtype cast, a move to a device)."""
        return Problem(self.tree, convert(self.q), [convert(x) for x in self.k], [convert(x) for x in self.v])


def random_problem(tree, q_heads=4, kv_heads=2, head_dim=64, q_len=1, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((tree.num_seqs, q_len, q_heads, head_dim))
    k = [rng.standard_normal((n, kv_heads, head_dim)) for n in tree.lengths]
    v = [rng.standard_normal((n, kv_heads, head_dim)) for n in tree.lengths]
    return Problem(tree, q, k, v)
