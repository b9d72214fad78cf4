#!/usr/bin/env python3
"""scripts/perf-targets.py reads issue 39's targets from a results folder: the stacked-prefix rate and
FA3's time over ours from a same-run file, the decoder's step from hydragen-decode's CSVs (each run over
its own file's baseline), a tree point apart from the prefix point of the same shape, and says "not in this folder" for what the folder lacks
instead of failing; with --ours, another form of ours (its rows and its decoder runs) is the one judged.
Usage: perf_targets.py SCRIPT"""
import csv
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "experiments", "peers"))
import harness  # noqa: E402  (the sweep's CSV columns, one definition; needs no torch)

HEADER = harness.CSV_HEADER.strip().split(",")


def row(backend, B, P, ms, tflops, tree="prefix"):
    values = dict(device="GPU", commit="c", backend=backend, storage="shared", dtype="bf16", B=B, P=P, S=0, q_len=1,
                  Hq=8, Hkv=1, D=128, tree=tree, median_ms=ms, min_ms=ms, max_ms=ms, tflops=tflops, gbps=1,
                  floor_ms=ms / 2, time_over_floor=2.0, nominal_share=0.5, status="ok", detail="", decisions="")
    return [values[c] for c in HEADER]


def main(script):
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "vs-flashinfer-s0.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(HEADER)
            # (4096, 16384, 0): FA3 1.1x ours; (2048, 1024, 0): ours 1.05x FA3; (32, 1024, 0): FA3 does not fill the GPU.
            w.writerows([row("cuda-hydragen", 4096, 16384, 0.40, 700), row("flashinfer-prefix-fa3", 4096, 16384, 0.44, 640),
                         row("cuda-hydragen", 2048, 1024, 0.020, 500), row("flashinfer-prefix-fa3", 2048, 1024, 0.021, 480),
                         row("cuda-hydragen", 32, 1024, 0.010, 10), row("flashinfer-prefix-fa3", 32, 1024, 0.030, 3),
                         # The tuned form at one of the points, for --ours.
                         row("cuda-hydragen:tune=measure", 4096, 16384, 0.39, 720)])
        with open(os.path.join(d, "vs-flashinfer-trees.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(HEADER)
            # The tree point of the first's shape, FlashInfer ahead there: a point of its own.
            w.writerows([row("cuda-hydragen", 4096, 16384, 0.50, 560, "16x1024"),
                         row("flashinfer-prefix-fa3", 4096, 16384, 0.45, 620, "16x1024")])
        with open(os.path.join(d, "decode-13b.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, ["device", "commit", "model", "layers", "tp", "mode", "B", "P", "gen_tokens", "step_ms",
                                   "attention_floor_ms", "status"])
            w.writeheader()
            run = dict(device="GPU", commit="c", model="codellama-13b", layers=40, tp=8, B=1024, P=1024, gen_tokens=128,
                       status="ok")
            w.writerows([dict(run, mode="hydragen", step_ms=12.0, attention_floor_ms=2.0),
                         dict(run, mode="no-attention", step_ms=6.0, attention_floor_ms=0.0),
                         # The run's no-attention row at another P is its baseline (the model without attention reads no K/V).
                         dict(run, mode="hydragen", P=2048, step_ms=9.0, attention_floor_ms=2.0)])
        # A second run of the same build and point in a file of its own: its step over its own baseline.
        with open(os.path.join(d, "decode-13b-again.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, list(run) + ["mode", "step_ms", "attention_floor_ms"])
            w.writeheader()
            w.writerows([dict(run, mode="hydragen", step_ms=16.0, attention_floor_ms=2.0),
                         dict(run, mode="no-attention", step_ms=8.0, attention_floor_ms=0.0)])
        # A run with no no-attention row at all: left out.
        with open(os.path.join(d, "decode-13b-alone.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, list(run) + ["mode", "step_ms", "attention_floor_ms"])
            w.writeheader()
            w.writerows([dict(run, mode="hydragen", P=4096, step_ms=10.0, attention_floor_ms=2.0)])
        # The tuned form's decoder run (hydragen-decode --backend names it in the backend column).
        with open(os.path.join(d, "decode-13b-tuned.csv"), "w", newline="") as f:
            w = csv.DictWriter(f, list(run) + ["mode", "backend", "step_ms", "attention_floor_ms"])
            w.writeheader()
            w.writerows([dict(run, mode="hydragen", backend="cuda-hydragen:tune=measure", step_ms=10.0, attention_floor_ms=2.0),
                         dict(run, mode="no-attention", backend="none", step_ms=6.0, attention_floor_ms=0.0)])
        out = subprocess.run([sys.executable, script, d], capture_output=True, text=True)
        tuned = subprocess.run([sys.executable, script, d, "--ours", "cuda-hydragen:tune=measure"], capture_output=True, text=True)
    expected = ["(4096, 16384, 0): 700 TFLOP/s (target 760), 2.000x its attainable floor, 0.50 of the nominal peaks; "
                "FA3 640 TFLOP/s in the same rows",
                "FA3's time over ours at 2 such points: 1.050 (2048, 1024, 0) to 1.100 (4096, 16384, 0); 1.03x or better at 2",
                "3. (1024, 16384, 64): not in this folder", "4. (32, 1024, 64): not in this folder",
                "ahead of FlashInfer's better form at 3 of 3 points",
                "vs-flashinfer-trees.csv (one run): ahead of FlashInfer's better form at 0 of 1 points",
                "behind at (4096, 16384, 0, 16x1024) 0.900",
                "P = 1024 1.500 (12.00 ms, 128 tokens)", "P = 1024 1.600 (16.00 ms, 128 tokens)",
                "P = 2048 1.125 (9.00 ms, 128 tokens)"]
    missing = [e for e in expected if e not in out.stdout]
    if "P = 4096" in out.stdout:
        missing.append("no line for P = 4096, whose run has no no-attention row")
    if "1.250" in out.stdout:
        missing.append("no line for the tuned form's decoder run without --ours")
    expected_tuned = ["(4096, 16384, 0): 720 TFLOP/s (target 760)",
                      "FA3's time over ours at 1 such points: 1.128 (4096, 16384, 0) to 1.128 (4096, 16384, 0)",
                      "P = 1024 1.250 (10.00 ms, 128 tokens)", "4. (32, 1024, 64): not in this folder"]
    missing += [f"--ours: {e}" for e in expected_tuned if e not in tuned.stdout]
    if "1.500" in tuned.stdout:
        missing.append("--ours: no line for the default form's decoder runs")
    if out.returncode != 0 or tuned.returncode != 0 or missing:
        print(f"perf-targets.py exited {out.returncode} and {tuned.returncode} (--ours); missing lines: {missing}\n"
              f"{out.stdout}{out.stderr}{tuned.stdout}{tuned.stderr}")
        return 1
    print("perf-targets.py: every expected line")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
