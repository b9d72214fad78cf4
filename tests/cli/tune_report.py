#!/usr/bin/env python3
"""scripts/tune-report.py compares cuda-hydragen:tune=measure with cuda-hydragen at the points a sweep
timed both: a line per point where the tuned plan is another, each backend's best median over the
files, the summary splitting the points over 2% slower into moved and same-plan ones, and with
--explain the tuner's own median of the model's plan against the sweep's. Rows of other backends and
failed rows are ignored; a tuned row without its tune= decision is refused.
Usage: tune_report.py SCRIPT"""
import os
import subprocess
import sys
import tempfile

HEADER = "device,backend,storage,dtype,B,P,S,q_len,Hq,Hkv,D,tree,median_ms,status,decisions\n"


def row(backend, b, s, ms, tune=None, status="ok"):
    decisions = "leaf_layout=after" + (f";tune={tune}" if tune else "")
    return f"H200,{backend},shared,bf16,{b},2048,{s},1,8,1,128,prefix,{ms},{status},\"{decisions}\"\n"


BASE, TUNED = "cuda-hydragen", "cuda-hydragen:tune=measure"
# Point (256, 2048, 64): moved, 0.8x. (64, 2048, 64): the model's plan, 1.03x (noise). (32, 2048, 64): the
# tuned row failed. cuda-flash rows ignored.
ROUND1 = HEADER + "".join([
    row(BASE, 256, 64, 0.050), row(TUNED, 256, 64, 0.040, "form=wide:leaves=beside"),
    row(BASE, 64, 64, 0.020), row(TUNED, 64, 64, 0.0206, "model"),
    row(BASE, 32, 64, 0.015), row(TUNED, 32, 64, 0.0, "model", status="error"),
    row("cuda-flash", 256, 64, 0.500)])
# A second round: each backend's best median counts (the tuned point's 0.041 is not its best).
ROUND2 = HEADER + row(BASE, 256, 64, 0.048) + row(TUNED, 256, 64, 0.041, "form=wide:leaves=beside")
EXPLAIN = """== cuda-hydragen:shared bf16 B=256 P=2048 S=64 q_len=1 Hq=8 Hkv=1 D=128 tree=prefix (H200, abc): ok
leaf_layout: after -- ...
== cuda-hydragen:tune=measure:shared bf16 B=256 P=2048 S=64 q_len=1 Hq=8 Hkv=1 D=128 tree=prefix (H200, abc): ok
tune: form=wide:leaves=beside (measured) -- graph medians model 49.0 us, form=wide:leaves=beside 40.0 us: form=wide:leaves=beside kept [candidates=2 replays=20]
== cuda-hydragen:tune=measure:shared bf16 B=64 P=2048 S=64 q_len=1 Hq=8 Hkv=1 D=128 tree=prefix (H200, abc): ok
tune: model (measured) -- graph medians model 20.0 us, form=narrow 30.0 us: model kept [candidates=2 replays=20]
"""


def run(script, files, *args):
    with tempfile.TemporaryDirectory() as d:
        paths = {}
        for name, text in files.items():
            paths[name] = os.path.join(d, name)
            with open(paths[name], "w") as f:
                f.write(text)
        argv = [paths[n] for n in files if n.endswith(".csv")]
        for a in args:
            argv.append(paths.get(a, a))
        return subprocess.run([sys.executable, script, *argv], capture_output=True, text=True)


def main(script):
    r = run(script, {"r1.csv": ROUND1, "r2.csv": ROUND2, "x.explain": EXPLAIN}, "--explain", "x.explain")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    expected = [
        "B=256 P=2048 S=64 q_len=1 Hq=8 Hkv=1 D=128 prefix: 48.0 -> 40.0 us (0.833), form=wide:leaves=beside",
        "2 points: tuned / model geomean 0.9265 (0.833-1.030)",
        "1 moved: geomean 0.8333 (0.833-0.833)",
        "over 2% slower: 0 moved, 1 running the model's plan (noise)",
        # 20.0 / 20.0 and 49.0 / 48.0: of two, p10 the smaller, median and p90 the larger.
        "the tuner's model median / the sweep's: p10 1.000 median 1.021 p90 1.021 over 2 points",
    ]
    assert lines == expected, "\n".join(lines)
    r = run(script, {"r.csv": HEADER + row(TUNED, 256, 64, 0.04)})
    assert r.returncode != 0 and "without a tune= decision" in r.stderr, r.stderr
    r = run(script, {"r.csv": HEADER + row(BASE, 256, 64, 0.04)})
    assert r.returncode != 0 and "no point with both" in r.stderr, r.stderr
    print("tune-report.py: every expected line")


if __name__ == "__main__":
    main(sys.argv[1])
