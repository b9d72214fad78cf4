#!/usr/bin/env python3
"""Fits rule leaf_layout's three leaf rates (and its margin) for a GPU to whole launches measured there:
the table row that makes the planner pick the faster leaf layout where it can be measured.

Input: hydragen-sweep CSVs with `cuda-hydragen:leaves=after` and `cuda-hydragen:leaves=beside` rows at
the same points (any number of rounds: each layout's time at a point is the median of its rounds'
medians), and a row of rates to start from (a calibration's file or device-rates.csv's form). For each
candidate of the grid (leaf_dram_bytes x leaf_sm_bytes x beside_leaf_dram_share, the other rates the base
row's), `hydragen-diff --explain --explain-device DEVICE --explain-rates FILE` gives the model's
predicted times of both layouts at every point; each margin then gives the model's choice, scored by the
measured time of the chosen layout over the faster one's. Points where the plan puts the leaves inside the
wgmma blocks or where a guard keeps them after whatever the rates say are left out (rates cannot move them).

Forced beside is sized (its leaf SMs, its parts) by the rates the measuring process planned with, and a
candidate row may size it otherwise: the scores judge a candidate's choices, not its sizing. Measure
with rates near the candidate's (a file, or the row in the table), then confirm the row by an in-call
A/B of `cuda-hydragen` itself (perf-notes v45: fitted on in-process rates' beside, the H200 row scored
1.005 here and its choices measured 1.014 over the better layout under its own sizing).

    scripts/fit-leaf-rates.py --diff build/experiments/hydragen-diff --device "NVIDIA H200,132,wgmma,pdl" \\
        --base rates-1.csv --grid leaf_dram_bytes=3400,3800,4200 --grid leaf_sm_bytes=50,95 \\
        --grid beside_leaf_dram_share=0.75,0.85,0.95 --margins 0.95,0.97,1 --out fit.csv sweep-*.csv

Writes one CSV row per candidate and margin (best first); prints the best's choice at every point, then
its score on each batch size held out (fitted on the others).
"""
import argparse
import collections
import concurrent.futures
import csv
import itertools
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile

AFTER, BESIDE = "cuda-hydragen:leaves=after", "cuda-hydragen:leaves=beside"
POINT = ("dtype", "B", "P", "S", "q_len", "Hq", "Hkv", "D", "tree")
# leaf_layout's line: "leaf_layout: CHOICE -- WHY: after X us, beside Y us (SOURCE)" (rules.cpp)
TIMES = re.compile(r"^leaf_layout: (?P<choice>.*?) -- (?P<why>.*?)after (?P<after>[\d.e+-]+) us, "
                   r"beside (?:(?P<beside>[\d.e+-]+) us|none)")
# Guards that keep the leaves after whatever the rates say (rules.cpp's leaf_layout).
RATE_FREE = ("leaves average more than", "leaves of one row averaging under", "no beside layout fits")


def measured_points(paths):
    """{point: {backend: [medians]}} of the ok rows, and the points whose auto plan runs the leaves inside."""
    times = collections.defaultdict(lambda: collections.defaultdict(list))
    inside = set()
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                point = tuple(row[k] for k in POINT)
                if row["backend"] == "cuda-hydragen" and "leaf_layout=inside" in row.get("decisions", ""):
                    inside.add(point)
                if row["status"] == "ok" and row["backend"] in (AFTER, BESIDE):
                    times[point][row["backend"]].append(float(row["median_ms"]))
    both = {p: {b: statistics.median(v) for b, v in t.items()} for p, t in times.items() if len(t) == 2}
    return both, inside


def rates_file(base_text, values, directory):
    """The base rows with `values` replaced, every row under the base's device name; beside_margin 1
    (the margins are applied here, to the predicted times)."""
    lines = base_text.strip().splitlines()
    out = [lines[0]]
    seen = set()
    for line in lines[1:]:
        f = line.split(",")
        if f[1] in values:
            f[2] = str(values[f[1]])
        if f[1] == "beside_margin":
            f[2], f[3] = "1", "ratio"  # older files call the margin a share
        seen.add(f[1])
        out.append(",".join(f))
    missing = set(values) - seen
    if missing:
        raise SystemExit(f"fit-leaf-rates: the base rates have no {', '.join(sorted(missing))}")
    fd, path = tempfile.mkstemp(suffix=".csv", dir=directory)
    with os.fdopen(fd, "w") as f:
        f.write("\n".join(out) + "\n")
    return path


def predict(diff, device, rates, point):
    """(after_us, beside_us or None, rate_free) of rule leaf_layout at `point` under `rates`."""
    dtype, b, p, s, q_len, hq, hkv, d, tree = point
    args = [diff, "--backend", "cuda-hydragen", "--dtype", dtype, "--batch", b, "--prefix", p, "--suffix", s,
            "--q-len", q_len, "--q-heads", hq, "--kv-heads", hkv, "--head-dim", d, "--explain",
            "--explain-device", device, "--explain-rates", rates]
    if tree != "prefix":
        args += ["--tree", tree]
    text = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    for line in text.splitlines():
        m = TIMES.match(line)
        if m:
            beside = float(m["beside"]) if m["beside"] else None
            return float(m["after"]), beside, any(g in m["why"] for g in RATE_FREE)
    return None  # the rule decided before its model (inside, one kind of items, ...)


def score(points, measured, predicted, margin):
    """(geomean, max, count over 2%) of the chosen layout's measured time over the faster one's."""
    ratios = []
    for point in points:
        after_us, beside_us, _ = predicted[point]
        t = measured[point]
        chosen = t[BESIDE] if beside_us is not None and beside_us < margin * after_us else t[AFTER]
        ratios.append(chosen / min(t.values()))
    if not ratios:
        return 1.0, 1.0, 0
    return math.exp(sum(map(math.log, ratios)) / len(ratios)), max(ratios), sum(r > 1.02 for r in ratios)


def parse_grid(specs):
    grid = {}
    for spec in specs:
        name, _, values = spec.partition("=")
        if not values:
            raise SystemExit(f"fit-leaf-rates: --grid '{spec}' is not NAME=V1,V2,...")
        grid[name] = [float(v) for v in values.split(",")]
    return grid


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--diff", required=True, help="hydragen-diff (any build: --explain-device needs no GPU)")
    ap.add_argument("--device", required=True, help="--explain-device's NAME,SMS,wgmma,pdl (NAME as the base rates name it)")
    ap.add_argument("--base", required=True, help="the rates the candidates start from (device-rates.csv's form)")
    ap.add_argument("--grid", action="append", default=[], help="RATE=V1,V2,...: the values tried (repeat per rate)")
    ap.add_argument("--margins", default="1", help="beside_margin values tried (comma-separated)")
    ap.add_argument("--out", required=True, help="the scores' CSV")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("csv", nargs="+", help="hydragen-sweep CSVs with both forced layouts")
    a = ap.parse_args()

    measured, inside = measured_points(a.csv)
    grid = parse_grid(a.grid)
    margins = [float(m) for m in a.margins.split(",")]
    with open(a.base) as f:
        base = f.read()
    device_name = a.device.split(",")[0]
    if f"\n{device_name}," not in "\n" + base:
        raise SystemExit(f"fit-leaf-rates: the base rates name no '{device_name}'")
    names = list(grid)
    candidates = [dict(zip(names, values)) for values in itertools.product(*grid.values())]
    planned = [p for p in measured if p not in inside]
    rows, kept = [], None
    with tempfile.TemporaryDirectory() as tmp, concurrent.futures.ThreadPoolExecutor(a.jobs) as pool:
        for n, values in enumerate(candidates, 1):
            rates = rates_file(base, values, tmp)
            predicted = dict(zip(planned, pool.map(lambda p: predict(a.diff, a.device, rates, p), planned)))
            if kept is None:  # rates move only the points the model decides: the same under every candidate
                kept = [p for p in planned if predicted[p] is not None and not predicted[p][2]]
                print(f"fit-leaf-rates: {len(measured)} points measured, {len(inside)} inside, "
                      f"{len(kept)} decided by the model", file=sys.stderr)
            logs = [math.log(predicted[p][1] / predicted[p][0]) - math.log(measured[p][BESIDE] / measured[p][AFTER])
                    for p in kept if predicted[p][1] is not None]
            rmse = math.sqrt(sum(x * x for x in logs) / len(logs)) if logs else float("nan")
            bias = sum(logs) / len(logs) if logs else float("nan")
            for margin in margins:
                geo, worst, over = score(kept, measured, predicted, margin)
                rows.append({**values, "beside_margin": margin, "rmse_log_ratio": round(rmse, 4), "bias_log_ratio": round(bias, 4),
                             "chosen_over_best_geomean": round(geo, 4), "chosen_over_best_max": round(worst, 4),
                             "over_2pct": over, "_predicted": predicted})
            print(f"[{n}/{len(candidates)}] {values}: rmse {rmse:.3f}", file=sys.stderr)
    rows.sort(key=lambda r: (r["chosen_over_best_geomean"], r["chosen_over_best_max"]))
    with open(a.out, "w", newline="") as f:
        fields = [k for k in rows[0] if not k.startswith("_")]
        w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)

    best = rows[0]
    print("best: " + ", ".join(f"{k} {best[k]}" for k in names + ["beside_margin"]) +
          f": chosen/best geomean {best['chosen_over_best_geomean']}, max {best['chosen_over_best_max']}, "
          f"{best['over_2pct']} of {len(kept)} over 2%")
    print("point (B, P, S, q_len, Hq/Hkv, tree): measured beside/after, predicted, choice, chosen/best")
    for p in sorted(kept, key=lambda p: tuple(int(x) if x.isdigit() else 0 for x in p)):
        after_us, beside_us, _ = best["_predicted"][p]
        t = measured[p]
        beside = beside_us is not None and beside_us < best["beside_margin"] * after_us
        chosen = t[BESIDE] if beside else t[AFTER]
        pred = f"{beside_us / after_us:.3f}" if beside_us else "none"
        print(f"  ({p[1]}, {p[2]}, {p[3]}, {p[4]}, {p[5]}/{p[6]}, {p[8]}): {t[BESIDE] / t[AFTER]:.3f} {pred} "
              f"{'beside' if beside else 'after'} {chosen / min(t.values()):.3f}")
    # Held out: fit on every other batch size, score on this one.
    batches = sorted({p[1] for p in kept}, key=int)
    for b in batches if len(batches) > 1 else []:
        train = [p for p in kept if p[1] != b]
        test = [p for p in kept if p[1] == b]
        fitted = min(rows, key=lambda r: score(train, measured, r["_predicted"], r["beside_margin"])[:2])
        geo, worst, over = score(test, measured, fitted["_predicted"], fitted["beside_margin"])
        print(f"held out B = {b} ({len(test)} points): fitted on the rest " +
              ", ".join(f"{k} {fitted[k]}" for k in names + ["beside_margin"]) +
              f"; chosen/best there {geo:.4f}, max {worst:.4f}, {over} over 2%")


if __name__ == "__main__":
    main()
