#!/usr/bin/env python3
"""The performance issues' targets from one results folder: hydragen-sweep's grid.csv, paper-fig4.csv,
mha.csv, models.csv, spec.csv, experiments/peers' peers-PRESET.csv of the same presets where present, and
the same-run comparisons of `peers.py --ours` (vs-flashinfer-*.csv). One line per target with the measured
numbers; --before DIR adds the "nothing slower than the committed results" check against another
folder's sweep CSVs (same file names).

  scripts/perf-targets.py docs/results/h100-v23-2026-11-26 --before OLD_RESULTS_DIR
"""
import argparse
import csv
import glob
import math
import os

FLASHINFER = ("flashinfer-cascade:shared", "flashinfer-paged:shared", "flashinfer-paged-tc:shared",
              "flashinfer-prefix-fa3:shared", "flashinfer-prefix-fa2:shared")
PAGED = ("flashinfer-paged:shared", "flashinfer-paged-tc:shared")
SHAPE = ("B", "P", "S", "q_len", "Hq", "Hkv", "D")


def table(*paths):
    """{point: {backend:storage: row}} over the files that exist; status ok rows only."""
    out = {}
    for path in paths:
        if not os.path.exists(path):
            continue
        with open(path, newline="") as f:
            for r in csv.DictReader(f):
                if r["status"] == "ok":
                    out.setdefault(tuple(int(r[c]) for c in SHAPE), {})[f'{r["backend"]}:{r["storage"]}'] = r
    return out


def ms(r):
    return float(r["median_ms"])


def best(methods, names):
    times = [ms(methods[n]) for n in names if n in methods]
    return min(times) if times else None


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def point(k):
    return f"({k[0]}, {k[1]}, {k[2]}" + (f", q_len {k[3]}" if k[3] > 1 else "") + \
        (f", {k[4]}/{k[5]}/D{k[6]}" if k[4:] != (8, 1, 128) else "") + ")"


def against_flashinfer(name, data):
    ratios = sorted((best(m, FLASHINFER) / ms(m["cuda-hydragen:shared"]), k) for k, m in data.items()
                    if "cuda-hydragen:shared" in m and best(m, FLASHINFER))
    if not ratios:
        print(f"  {name}: no point with both cuda-hydragen and a FlashInfer row")
        return
    behind = [f"{point(k)} {x:.3f}" for x, k in ratios if x < 1]
    print(f"  {name}: ahead of FlashInfer's better form at {len(ratios) - len(behind)} of {len(ratios)} points "
          f"(geomean {geomean([x for x, _ in ratios]):.2f}x, range {ratios[0][0]:.2f}-{ratios[-1][0]:.2f}x)"
          + (f"; behind at {', '.join(behind)}" if behind else ""))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", help="folder with the sweep CSVs and the peers' CSVs of the same presets")
    ap.add_argument("--before", help="folder of committed sweep CSVs to compare cuda-hydragen and cuda-flash with")
    a = ap.parse_args()
    presets = ("grid", "paper-fig4", "mha", "models", "spec")
    data = {p: table(os.path.join(a.dir, f"{p}.csv"), os.path.join(a.dir, f"peers-{p}.csv")) for p in presets}

    print("1. cuda-hydragen against FlashInfer's forms measured (the fastest per point)")
    for p in presets:
        against_flashinfer(p, data[p])
    for path in sorted(glob.glob(os.path.join(a.dir, "vs-flashinfer-*.csv"))):
        against_flashinfer(f"{os.path.basename(path)} (one run)", table(path))
    m = data["grid"][(32, 1024, 64, 1, 8, 1, 128)]
    fastest = best(m, FLASHINFER)
    print(f"  (32, 1024, 64): {ms(m['cuda-hydragen:shared']) * 1e3:.1f} us (target 12)"
          + (f", FlashInfer's best {fastest * 1e3:.1f} us" if fastest else ""))

    print("2. cuda-flash (shared) over FlashInfer's paged decode (the faster of its two kernels), grid")
    ratios = sorted((ms(m["cuda-flash:shared"]) / best(m, PAGED), k) for k, m in data["grid"].items()
                    if "cuda-flash:shared" in m and best(m, PAGED))
    within = sum(1 for x, _ in ratios if x <= 1.1)
    if ratios:
        print(f"  within 10% at {within} of {len(ratios)} points; ratio {ratios[0][0]:.2f} {point(ratios[0][1])} to "
              f"{ratios[-1][0]:.2f} {point(ratios[-1][1])}, geomean {geomean([x for x, _ in ratios]):.2f}")
    else:
        print("  no paged-decode rows in this folder")

    m = data["grid"][(1024, 16384, 64, 1, 8, 1, 128)]["cuda-hydragen:shared"]
    print(f"3. (1024, 16384, 64): {float(m['time_over_floor']):.2f}x floor ({ms(m):.4f} ms; target 1.3x)")

    print("4. models preset, cuda-hydragen time over floor (target 1.6x for GQA g = 4 and D = 64)")
    for label, (hq, hkv, d) in (("Hq=Hkv=40", (40, 40, 128)), ("GQA g=4", (32, 8, 128)), ("D=64", (32, 32, 64))):
        cells = [f"({k[0]}, {k[1]}) {float(m['cuda-hydragen:shared']['time_over_floor']):.2f}x"
                 for k, m in sorted(data["models"].items()) if k[4:] == (hq, hkv, d) and "cuda-hydragen:shared" in m]
        print(f"  {label}: {', '.join(cells)}")

    k = (256, 16384, 64, 4, 8, 1, 128)
    m = data["spec"][k]["cuda-hydragen:shared"]
    cascade = sorted((ms(m_["flashinfer-cascade:shared"]) / ms(m_["cuda-hydragen:shared"]), k_)
                     for k_, m_ in data["spec"].items() if "flashinfer-cascade:shared" in m_)
    against = (f"ahead of FlashInfer's cascade at {sum(1 for x, _ in cascade if x > 1)} of {len(cascade)} points "
               f"({cascade[0][0]:.2f}x at {point(cascade[0][1])} to {cascade[-1][0]:.2f}x)") if cascade \
        else "no FlashInfer cascade rows"
    print(f"5. spec: (256, 16384, 64, q_len 4) {float(m['time_over_floor']):.2f}x floor (target 2x); {against}")

    if a.before:
        print(f"6. against {a.before} (new / old median; > 1.03 is slower by more than 3%)")
        for p in presets:
            old = table(os.path.join(a.before, f"{p}.csv"))
            for method in ("cuda-hydragen:shared", "cuda-flash:shared"):
                ratios = sorted((ms(m[method]) / ms(old[k][method]), k) for k, m in data[p].items()
                                if method in m and method in old.get(k, {}))
                if ratios:
                    slower = [f"{point(k)} {x:.3f}" for x, k in ratios if x > 1.03]
                    print(f"  {p} {method}: {len(ratios)} points, new/old {ratios[0][0]:.3f}-{ratios[-1][0]:.3f} "
                          f"(geomean {geomean([x for x, _ in ratios]):.3f}); slower by > 3%: "
                          + (", ".join(slower) if slower else "none"))


if __name__ == "__main__":
    main()
