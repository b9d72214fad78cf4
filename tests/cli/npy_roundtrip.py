"""The README's round trip: NumPy writes a shared-prefix problem and an external output, hydragen-diff
checks it. Usage: npy_roundtrip.py HYDRAGEN_DIFF WORKDIR. Exits 77 (skipped) without NumPy."""
import json, math, os, subprocess, sys

try:
    import numpy as np
except ImportError:
    print("SKIPPED: numpy is not installed")
    sys.exit(77)

diff, work = sys.argv[1], sys.argv[2]
os.makedirs(work, exist_ok=True)
rng = np.random.default_rng(0)
spec = {"q_heads": 4, "kv_heads": 1, "head_dim": 32, "parents": [-1, 0, 0], "lengths": [64, 5, 9], "leaves": [1, 2]}
B, Hq, Hkv, D = len(spec["leaves"]), spec["q_heads"], spec["kv_heads"], spec["head_dim"]
with open(os.path.join(work, "spec.json"), "w") as f:
    json.dump(spec, f)
q = rng.standard_normal((B, 1, Hq, D)).astype(np.float16)
k = [rng.standard_normal((n, Hkv, D)).astype(np.float16) for n in spec["lengths"]]
v = [rng.standard_normal((n, Hkv, D)).astype(np.float16) for n in spec["lengths"]]
np.save(os.path.join(work, "q.npy"), q)
for i in range(len(k)):
    np.save(os.path.join(work, f"k{i}.npy"), k[i])
    np.save(os.path.join(work, f"v{i}.npy"), v[i])

# The external output: plain softmax attention over each sequence's path, in fp32, stored as fp16.
o = np.zeros((B, 1, Hq, D), np.float32)
lse = np.zeros((B, 1, Hq), np.float32)
for b, leaf in enumerate(spec["leaves"]):
    path, s = [], leaf
    while s >= 0:
        path.insert(0, s)
        s = spec["parents"][s]
    K = np.concatenate([k[s] for s in path]).astype(np.float32)[:, 0]  # Hkv = 1
    V = np.concatenate([v[s] for s in path]).astype(np.float32)[:, 0]
    scores = q[b, 0].astype(np.float32) @ K.T / math.sqrt(D)
    m = scores.max(axis=-1, keepdims=True)
    p = np.exp(scores - m)
    o[b, 0] = (p / p.sum(axis=-1, keepdims=True)) @ V
    lse[b, 0] = (m + np.log(p.sum(axis=-1, keepdims=True)))[:, 0]
np.save(os.path.join(work, "o.npy"), o.astype(np.float16))
np.save(os.path.join(work, "lse.npy"), lse)

res = subprocess.run([diff, "--npy-dir", work], capture_output=True, text=True)
print(res.stdout, end="")
print(res.stderr, end="", file=sys.stderr)
if res.returncode != 0 or not res.stdout.endswith(" PASS\n"):
    sys.exit(1)
# And our reference written back, read by NumPy.
ref = os.path.join(work, "ref")
os.makedirs(ref, exist_ok=True)
subprocess.run([diff, "--npy-dir", work, "--write-reference", ref], check=True, capture_output=True)
err = np.abs(np.load(os.path.join(ref, "o.npy")) - o).max()
print(f"numpy: max |ref - o| = {err:.3e}")
sys.exit(0 if err < 1e-2 else 1)
