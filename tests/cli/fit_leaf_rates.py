#!/usr/bin/env python3
"""scripts/fit-leaf-rates.py scores each candidate row by the measured time of the layout its model
chooses over the faster one's: at two points where beside and after each win, the H200's fitted shares
choose right (1.0) and a DRAM share too low for beside keeps the leaves after where beside wins; points
whose auto plan runs the leaves inside are left out; a base file without the device is refused.
Usage: fit_leaf_rates.py SCRIPT HYDRAGEN_DIFF BASE_RATES (device-rates.csv)"""
import csv
import os
import subprocess
import sys
import tempfile

HEADER = ("device,commit,backend,storage,dtype,B,P,S,q_len,Hq,Hkv,D,tree,median_ms,min_ms,max_ms,tflops,gbps,"
          "floor_ms,time_over_floor,nominal_share,status,detail,decisions")


def row(backend, b, p, s, ms, layout):
    return (f'"NVIDIA H200",x,{backend},shared,bf16,{b},{p},{s},1,8,1,128,prefix,{ms},{ms},{ms},1,1,1,1,1,ok,"",'
            f'"leaf_layout={layout}"')


def main(script, diff, table):
    failures = []
    with tempfile.TemporaryDirectory() as d:
        base = os.path.join(d, "base.csv")
        with open(table) as f, open(base, "w") as out:  # the H100's row under the H200's name
            lines = f.read().splitlines()
            out.write(lines[0] + "\n")
            out.writelines(l.replace("NVIDIA H100 80GB HBM3", "NVIDIA H200") + "\n" for l in lines[1:] if l.startswith("NVIDIA H100"))
        measured = os.path.join(d, "m.csv")
        with open(measured, "w") as f:
            f.write(HEADER + "\n")
            # (1024, 2048, 160): beside 0.8x after; (1024, 2048, 32): after; (512, 1024, 64): inside, left out
            for b, p, s, after, beside in ((1024, 2048, 160, 0.050, 0.040), (1024, 2048, 32, 0.030, 0.050), (512, 1024, 64, 0.02, 0.01)):
                f.write(row("cuda-hydragen:leaves=after", b, p, s, after, "after") + "\n")
                f.write(row("cuda-hydragen:leaves=beside", b, p, s, beside, "beside") + "\n")
            f.write(row("cuda-hydragen", 512, 1024, 64, 0.02, "inside") + "\n")
        out = os.path.join(d, "fit.csv")
        args = [sys.executable, script, "--diff", diff, "--device", "NVIDIA H200,132,wgmma,pdl", "--base", base,
                "--grid", "leaf_dram_bytes=3800", "--grid", "beside_leaf_dram_share=0.3,0.85", "--margins", "0.97,1",
                "--out", out, measured]
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode != 0:
            failures.append(f"exit {r.returncode}: {r.stderr}")
        else:
            rows = list(csv.DictReader(open(out)))
            scores = {(x["beside_leaf_dram_share"], x["beside_margin"]): float(x["chosen_over_best_geomean"]) for x in rows}
            if len(rows) != 4:
                failures.append(f"{len(rows)} rows, not 2 candidates x 2 margins")
            if scores.get(("0.85", "1.0")) != 1.0:
                failures.append(f"the fitted shares do not choose right at both points: {scores}")
            if not scores.get(("0.3", "1.0"), 1.0) > 1.1:
                failures.append(f"a share of 0.3 should keep the leaves after where beside is 0.8x: {scores}")
            if "2 decided by the model" not in r.stderr or "1 inside" not in r.stderr:
                failures.append(f"the inside point is not left out: {r.stderr}")
        bad = subprocess.run(args[:5] + ["NVIDIA H100,132,wgmma,pdl"] + args[6:], capture_output=True, text=True)
        if bad.returncode == 0 or "the base rates name no 'NVIDIA H100'" not in bad.stderr:
            failures.append(f"a device the base does not name: exit {bad.returncode}, {bad.stderr!r}")
    for f in failures:
        print("FAIL:", f)
    print("fit_leaf_rates:", "FAILED" if failures else "ok")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
