#!/usr/bin/env python3
"""cuda-hydragen's tune=measure against the model's plans, from hydragen-sweep CSVs that time both
backends at the same points (`--backends cuda-hydragen,cuda-hydragen:tune=measure`). Per point, each
backend's best median over the files; the tuned row's plan is its `decisions` column's `tune=` entry
("model" where it kept the model's). Prints one line per point where the tuned plan is another, then
the summary: every point's geomean of tuned / model, the moved points', and the points over 2% slower,
those that ran the same plan (noise) apart from the moved. With --explain (the sweep's --explain
files), also how far the tuner's own median of the model's plan is from the sweep's (p10, median, p90):
the tuner's measurement agrees with the benchmark's, or its choices cannot be trusted.

    scripts/tune-report.py grid.csv models.csv [--explain grid.explain models.explain]
"""
import argparse
import csv
import math
import re

BASE, TUNED = "cuda-hydragen", "cuda-hydragen:tune=measure"
POINT = ("dtype", "B", "P", "S", "q_len", "Hq", "Hkv", "D", "tree")


def read(paths):
    best, kept = {}, {}
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if row["status"] != "ok" or row["backend"] not in (BASE, TUNED):
                    continue
                point = tuple(row[c] for c in POINT)
                ms = float(row["median_ms"])
                best[row["backend"], point] = min(ms, best.get((row["backend"], point), ms))
                if row["backend"] == TUNED:
                    choices = [d[len("tune="):] for d in row["decisions"].split(";") if d.startswith("tune=")]
                    if not choices:
                        raise SystemExit(f"{path}: a {TUNED} row without a tune= decision at {point}")
                    kept[point] = choices[0]
    return best, kept


def tuner_medians(paths):
    """(point, the tuner's median of the model's plan in ms) from --explain files."""
    out = []
    header = re.compile(r"== (\S+?):shared (\S+) B=(\d+) P=(\d+) S=(\d+) q_len=(\d+) Hq=(\d+) Hkv=(\d+) D=(\d+) tree=(\S+)")
    for path in paths:
        point = None
        with open(path) as f:
            for line in f:
                m = header.match(line)
                if m:
                    point = m.groups()[1:] if m.group(1) == TUNED else None
                elif point and line.startswith("tune:") and "graph medians model " in line:
                    out.append((point, float(line.split("graph medians model ")[1].split(" us")[0]) / 1e3))
    return out


def geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def quantiles(xs):
    xs = sorted(xs)
    return xs[len(xs) // 10], xs[len(xs) // 2], xs[9 * len(xs) // 10]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--explain", nargs="*", default=[])
    a = ap.parse_args()
    best, kept = read(a.csv)
    points = sorted((p for (b, p) in best if b == TUNED and (BASE, p) in best), key=lambda p: tuple(int(x) for x in p[1:8]))
    if not points:
        raise SystemExit(f"no point with both {BASE} and {TUNED} rows")
    ratios, moved, slower_same, slower_moved = [], [], [], []
    for p in points:
        r = best[TUNED, p] / best[BASE, p]
        ratios.append(r)
        if kept[p] != "model":
            moved.append(r)
            print(f"B={p[1]} P={p[2]} S={p[3]} q_len={p[4]} Hq={p[5]} Hkv={p[6]} D={p[7]} {p[8]}: "
                  f"{best[BASE, p] * 1e3:.1f} -> {best[TUNED, p] * 1e3:.1f} us ({r:.3f}), {kept[p]}")
        if r > 1.02:
            (slower_moved if kept[p] != "model" else slower_same).append(r)
    print(f"{len(points)} points: tuned / model geomean {geomean(ratios):.4f} ({min(ratios):.3f}-{max(ratios):.3f})")
    if moved:
        print(f"{len(moved)} moved: geomean {geomean(moved):.4f} ({min(moved):.3f}-{max(moved):.3f})")
    print(f"over 2% slower: {len(slower_moved)} moved, {len(slower_same)} running the model's plan (noise)")
    if a.explain:
        agree = [ms / best[BASE, tuple(p)] for p, ms in tuner_medians(a.explain) if (BASE, tuple(p)) in best]
        if agree:
            print("the tuner's model median / the sweep's: p10 %.3f median %.3f p90 %.3f" % quantiles(agree)
                  + f" over {len(agree)} points")


if __name__ == "__main__":
    main()
