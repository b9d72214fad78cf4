#!/usr/bin/env python3
"""scripts/bench-compare.py pairs a baseline's and a new build's hydragen-sweep rows point by point: each
side's best median over its runs, points of two trees or dtypes apart, methods matched by position;
and every line of scripts/ab-points.txt (device-check's `ab` step) is a grid hydragen-sweep takes, 113
points in all.
Usage: bench_compare.py BENCH_COMPARE AB_POINTS HYDRAGEN_SWEEP"""
import os
import subprocess
import sys
import tempfile

HEADER = "device,commit,backend,storage,dtype,B,P,S,q_len,Hq,Hkv,D,tree,median_ms,status\n"


def rows(commit, backend, times):
    """One CSV's text: (B, P, S, Hq, tree, ms) rows, bf16 unless the tree says fp16."""
    text = HEADER
    for b, p, s, hq, tree, ms in times:
        dtype = "fp16" if tree == "fp16" else "bf16"
        tree = "prefix" if tree == "fp16" else tree
        text += f"H100,{commit},{backend},shared,{dtype},{b},{p},{s},1,{hq},1,128,{tree},{ms},ok\n"
    return text


def compare(script, old_files, new_files):
    with tempfile.TemporaryDirectory() as d:
        paths = {}
        for name, text in list(old_files.items()) + list(new_files.items()):
            paths[name] = os.path.join(d, name)
            with open(paths[name], "w") as f:
                f.write(text)
        args = [paths[n] for n in old_files] + ["--"] + [paths[n] for n in new_files]
        return subprocess.run([sys.executable, script, *args], capture_output=True, text=True)


def main(script, ab_points, sweep):
    old = {"old1": rows("aaa", "cuda-hydragen", [(256, 4096, 64, 8, "prefix", 0.200), (256, 4096, 64, 8, "16x1024", 0.300),
                                                  (256, 4096, 64, 8, "fp16", 0.250)]),
           "old2": rows("aaa", "cuda-hydragen", [(256, 4096, 64, 8, "prefix", 0.190), (256, 4096, 64, 8, "16x1024", 0.310)])}
    new = {"new1": rows("bbb", "cuda-hydragen", [(256, 4096, 64, 8, "prefix", 0.180), (256, 4096, 64, 8, "16x1024", 0.330),
                                                  (256, 4096, 64, 8, "fp16", 0.250)]),
           "new2": rows("bbb", "cuda-hydragen", [(256, 4096, 64, 8, "prefix", 0.185)])}
    r = compare(script, old, new)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    # One row per point: the prefix, the tree and the fp16 point apart, each side's best median.
    assert len(lines) == 5, r.stdout
    assert lines[1].split()[-3:] == ["0.1900", "0.1800", "0.947"], lines[1]
    assert "'16x1024'" in lines[2] and lines[2].split()[-3:] == ["0.3000", "0.3300", "1.100"], lines[2]
    assert "'fp16'" in lines[3] and lines[3].split()[-1] == "1.000", lines[3]
    assert lines[4].startswith("geometric mean new/old over 3 rows"), lines[4]

    # A renamed method lines up by position; two methods on one side against one on the other are refused.
    renamed = {"new1": rows("bbb", "cuda-hydragen:form=wide", [(256, 4096, 64, 8, "prefix", 0.2)])}
    r = compare(script, {"old1": old["old1"]}, renamed)
    assert r.returncode == 0 and "cuda-hydragen:form=wide" in r.stdout and "1.000" in r.stdout, r.stdout
    two = {"new1": renamed["new1"] + rows("bbb", "cuda-flash", [(256, 4096, 64, 8, "prefix", 0.2)]).split("\n", 1)[1]}
    r = compare(script, {"old1": old["old1"]}, two)
    assert r.returncode != 0 and "1 baseline methods against 2 new ones" in r.stderr, r.stderr

    # scripts/ab-points.txt: every line a grid the sweep takes; 113 distinct points.
    points = set()
    with open(ab_points) as f:
        for line in f:
            if not line.strip() or line.startswith("#"):
                continue
            r = subprocess.run([sweep, "--backends", "cpu-hydragen", *line.split(), "--points"], capture_output=True, text=True)
            assert r.returncode == 0, f"{line.strip()}: {r.stderr}"
            points.update(r.stdout.split())
    assert len(points) == 113, len(points)
    print("bench-compare.py: every expected row; ab-points.txt: 113 points")


if __name__ == "__main__":
    main(*sys.argv[1:4])
