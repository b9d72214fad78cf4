#!/usr/bin/env python3
"""Ours against a library's best form at each point, from the CSVs of `peers.py --ours`: in each file our rows
were measured at each point just before the peers', in one run (a `--resume`d file holds several calls, each
point's rows from one), so every ratio here compares rows of one run (rows of different files are never paired). Prints one line per point and writes them as CSV.

    versus.py peers-a.csv [peers-b.csv ...] [--ours cuda-hydragen] [--peers flashinfer-] [--csv out.csv]

Columns: the point (its tree included), our median, the library's best form and its median, every
form's median, and ours / best (below 1: ours is faster).
"""
import argparse
import csv
import sys

from harness import Point, csv_point


def compare(path, ours, prefix):
    """[(point, our ms, {form: ms})] of one run, in the file's point order; rows not ok are left out."""
    points = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            if row["status"] != "ok":
                continue
            point = csv_point(row)
            entry = points.setdefault(point, [None, {}])
            if row["backend"] == ours:
                entry[0] = float(row["median_ms"])
            elif row["backend"].startswith(prefix):
                entry[1][row["backend"]] = float(row["median_ms"])
    return [(pt, mine, forms) for pt, (mine, forms) in points.items() if mine is not None and forms]


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("csvs", nargs="+", help="peers.py --ours CSVs, one run each")
    p.add_argument("--ours", default="cuda-hydragen", help="our backend column (default cuda-hydragen)")
    p.add_argument("--peers", default="flashinfer-", help="the library's backends' prefix (default flashinfer-)")
    p.add_argument("--csv", help="also write the lines here")
    a = p.parse_args(argv)
    lines = []
    for path in a.csvs:
        for pt, mine, forms in compare(path, a.ours, a.peers):
            best = min(forms, key=forms.get)
            lines.append(dict(zip(Point._fields, pt), ours_ms=mine, best=best, best_ms=forms[best],
                              ratio=mine / forms[best], forms=" ".join(f"{k}={v:.4g}" for k, v in sorted(forms.items())),
                              run=path))
    if not lines:
        print("versus.py: no point has both our row and a peer's ok row", file=sys.stderr)
        return 1
    for r in lines:
        tree = f" tree={r['tree']}" if r["tree"] != "prefix" else ""
        print(f"B={r['B']:<5} P={r['P']:<6} S={r['S']:<4} q_len={r['q_len']} Hq/Hkv/D={r['Hq']}/{r['Hkv']}/{r['D']}"
              f"{tree}  ours {r['ours_ms']:.4f} ms  {r['best']} {r['best_ms']:.4f} ms  ours/best {r['ratio']:.3f}")
    faster = sum(r["ratio"] < 1 for r in lines)
    print(f"{a.ours} faster than the best {a.peers}* form at {faster} of {len(lines)} points")
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(lines[0]))
            w.writeheader()
            w.writerows(lines)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
