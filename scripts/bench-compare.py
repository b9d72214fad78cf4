#!/usr/bin/env python3
"""New build against a baseline at the same points: hydragen-sweep CSVs of the baseline, then `--`, then
the new build's. Each side's time per (method, point) is the best of its runs' medians (runs of both
sides alternate, so drift hits both alike); methods are matched by position in the order each side
first lists them, so a renamed backend (cuda-hydragen-mma -> cuda-hydragen:form=wide:kernel=mma)
lines up. Prints one row per point and method: old ms, new ms, new / old.

    scripts/bench-compare.py old1.csv old2.csv -- new1.csv new2.csv
"""
import csv
import sys


def read(paths):
    best, order = {}, []
    for path in paths:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                if row["status"] != "ok":
                    continue
                method = f"{row['backend']}:{row['storage']}"
                if method not in order:
                    order.append(method)
                # (B, P, S), then q_len, Hq, Hkv and D where they differ from the common decode shape,
                # then dtype and tree where they are not bf16 and one prefix (points of two trees apart).
                point = tuple(int(row[c]) for c in ("B", "P", "S"))
                extra = tuple(int(row[c]) for c in ("q_len", "Hq", "Hkv", "D") if c in row)
                point += extra if extra not in ((), (1, 8, 1, 128)) else ()
                point += tuple(row[c] for c, usual in (("dtype", "bf16"), ("tree", "prefix")) if row.get(c, usual) != usual)
                ms = float(row["median_ms"])
                best[method, point] = min(ms, best.get((method, point), ms))
    return best, order


def main(argv):
    if "--" not in argv:
        sys.exit("usage: bench-compare.py OLD.csv ... -- NEW.csv ...")
    cut = argv.index("--")
    old, old_order = read(argv[:cut])
    new, new_order = read(argv[cut + 1:])
    if len(old_order) != len(new_order):
        sys.exit(f"bench-compare: {len(old_order)} baseline methods against {len(new_order)} new ones")
    print(f"{'B, P, S (q_len, Hq, Hkv, D)':<30} {'method (new name)':<32} {'old ms':>9} {'new ms':>9} {'new/old':>8}")
    ratios = []
    for o, n in zip(old_order, new_order):
        for point in sorted({p for (m, p) in new if m == n}, key=lambda p: [(isinstance(x, str), x) for x in p]):
            if (o, point) not in old:
                continue
            ratio = new[n, point] / old[o, point]
            ratios.append(ratio)
            print(f"{str(point):<30} {n:<32} {old[o, point]:9.4f} {new[n, point]:9.4f} {ratio:8.3f}")
    if ratios:
        product = 1.0
        for r in ratios:
            product *= r
        print(f"geometric mean new/old over {len(ratios)} rows: {product ** (1 / len(ratios)):.3f}; "
              f"range {min(ratios):.3f} to {max(ratios):.3f}")


if __name__ == "__main__":
    main(sys.argv[1:])
