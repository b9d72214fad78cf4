"""The README's Python example: a shared prefix and B suffixes as NumPy arrays, attention by the backend
hydragen picks for them (cpu-hydragen), checked against the fp64 reference. Prints hydragen-diff's line;
exit 0 on PASS. scripts/run runs it; so does a test (tests/python/test_numpy.py)."""
import numpy as np

import hydragen

B, P, S, Hq, Hkv, D = 16, 1024, 64, 8, 1, 128
rng = np.random.default_rng(0)
tree = hydragen.SharingTree.prefix_suffix(P, [S] * B)       # segment 0: the prefix; 1..B: the suffixes
q = rng.standard_normal((B, 1, Hq, D), dtype=np.float32)    # [B, q_len, Hq, D]
k = [rng.standard_normal((n, Hkv, D), dtype=np.float32) for n in tree.lengths]   # [length, Hkv, D] each
v = [rng.standard_normal((n, Hkv, D), dtype=np.float32) for n in tree.lengths]
o, lse = hydragen.attention(q, k, v, tree)                  # cpu-hydragen here, cuda-hydragen on CUDA tensors
check = hydragen.compare(o, lse, q, k, v, tree)             # hydragen-diff's rules and line
print(check.summary)
raise SystemExit(0 if check.ok else 1)
