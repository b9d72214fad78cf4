"""compare()'s summary is hydragen-diff's line: the same problem written as .npy files and checked with
`hydragen-diff --npy-dir` prints the same text after its "npy=DIR". Needs the tool: HYDRAGEN_DIFF names it
(scripts/test sets it)."""
import json
import os
import subprocess

import numpy as np
import pytest

import hydragen
from problems import random_problem


@pytest.mark.skipif(not os.environ.get("HYDRAGEN_DIFF"), reason="HYDRAGEN_DIFF (the hydragen-diff binary) not set")
@pytest.mark.parametrize("with_lse", [True, False])
def test_the_summary_is_hydragen_diffs_line(tmp_path, with_lse):
    tree = hydragen.SharingTree.from_parents([-1, 0, 0], [24, 3, 5], [1, 2])
    p = random_problem(tree, q_heads=4, kv_heads=1, head_dim=32, q_len=2, seed=4).mapped(lambda x: x.astype(np.float16))
    o, lse = hydragen.attention(p.q, p.k, p.v, tree)
    o[0, 1, 2, 3] += np.float16(0.01)  # a visible error, the same in both
    spec = {"q_heads": 4, "kv_heads": 1, "head_dim": 32, "q_len": 2, "parents": tree.parents, "lengths": tree.lengths,
            "leaves": tree.seq_leaves}
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    np.save(tmp_path / "q.npy", p.q)
    for i, (k, v) in enumerate(zip(p.k, p.v)):
        np.save(tmp_path / f"k{i}.npy", k)
        np.save(tmp_path / f"v{i}.npy", v)
    np.save(tmp_path / "o.npy", o)
    if with_lse:
        np.save(tmp_path / "lse.npy", lse)
    run = subprocess.run([os.environ["HYDRAGEN_DIFF"], "--npy-dir", str(tmp_path)], capture_output=True, text=True)
    line = run.stdout.strip()
    assert line.startswith(f"npy={tmp_path} "), run.stderr
    comparison = hydragen.compare(o, lse if with_lse else None, p.q, p.k, p.v, tree)
    assert line[len(f"npy={tmp_path} "):] == comparison.summary
    assert run.returncode == (0 if comparison.ok else 1)
