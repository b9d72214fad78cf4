#!/usr/bin/env python3
"""The performance issue's targets from the sweep CSVs of one device run (hydragen-sweep --preset
grid, paper-fig4, mha, models) and the PyTorch peers' grid CSV: one line per target with the
measured numbers. Copy bandwidth (target 3) is the sweep's measured peak (its log prints it).

  scripts/perf-targets.py DIR PEERS_GRID_CSV --copy-gbps 2990
"""
import argparse
import csv
import os


def rows(path):
    with open(path, newline="") as f:
        return [r for r in csv.DictReader(f) if r["status"] == "ok"]


def key(r):
    return tuple(int(r[k]) for k in ("B", "P", "S", "Hq", "Hkv", "D"))


def by_backend(rs):
    out = {}
    for r in rs:
        out.setdefault(f'{r["backend"]}:{r["storage"]}', {})[key(r)] = r
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", help="folder with grid.csv, paper-fig4.csv, mha.csv, models.csv")
    ap.add_argument("peers", help="the peers' grid CSV (torch-hydragen, torch-flash)")
    ap.add_argument("--copy-gbps", type=float, required=True)
    a = ap.parse_args()
    grid = by_backend(rows(os.path.join(a.dir, "grid.csv")))
    fig4 = by_backend(rows(os.path.join(a.dir, "paper-fig4.csv")))
    peers = by_backend(rows(a.peers))
    hyd, red, shr = grid["cuda-hydragen:shared"], grid["cuda-flash:redundant"], grid["cuda-flash:shared"]
    ms = lambda r: float(r["median_ms"])

    k1 = (1024, 16384, 64, 8, 1, 128)
    print(f"1. (1024, 16384, 64): {float(hyd[k1]['time_over_floor']):.2f}x floor ({ms(hyd[k1]):.4f} ms), "
          f"{ms(red[k1]) / ms(hyd[k1]):.1f}x faster than cuda-flash redundant ({ms(red[k1]):.3f} ms)")

    t2 = [(k, float(r["tflops"])) for k, r in hyd.items() if k[2] == 0 and k[0] * k[3] // k[4] >= 8192 and k[1] >= 8192]
    print("2. S = 0, B g >= 8192, P >= 8192: " + ", ".join(f"(B={k[0]}, P={k[1]}) {t:.0f}" for k, t in sorted(t2)) + " TFLOP/s")

    pct = {}
    for k, r in red.items():
        b, p, s, hq, hkv, d = k
        if b < 64 or p + s < 4096:
            continue
        moved = b * (p + s) * hkv * d * 2 * 2 + b * hq * d * 2 * 2  # K and V per sequence, Q and O (bf16)
        pct.setdefault(b, []).append(100 * moved / (ms(r) * 1e-3) / (a.copy_gbps * 1e9))
    print("3. cuda-flash redundant, % of copy bandwidth: " +
          "; ".join(f"B={b}: {min(v):.0f}-{max(v):.0f}%" for b, v in sorted(pct.items())))

    for name, table in (("grid", grid), ("paper-fig4", fig4)):
        h = table["cuda-hydragen:shared"]
        ratios = [(min(ms(table["cuda-flash:shared"][k]), ms(table["cuda-flash:redundant"][k])) / ms(r), k) for k, r in h.items()]
        worst = min(ratios)
        slower = sum(1 for x, _ in ratios if x < 1 / 1.03)
        print(f"4. {name}: better flat / cuda-hydragen worst {worst[0]:.3f} at {worst[1][:3]}; {slower} points more than 3% slower")

    losses = []
    for k, r in hyd.items():
        best = min((ms(p[k]), n) for n, p in peers.items() if k in p)
        if ms(r) > best[0]:
            losses.append((best[0] / ms(r), k[:3], best[1]))
    print(f"5. grid: faster than every peer at {len(hyd) - len(losses)} of {len(hyd)} points; losses: " +
          ", ".join(f"{k} {x:.2f}x vs {n}" for x, k, n in sorted(losses)))

    mha = by_backend(rows(os.path.join(a.dir, "mha.csv")))["cuda-hydragen:shared"]
    k6 = (256, 8192, 64, 32, 32, 128)
    line = f"6. MHA (256, 8192, 64): {float(mha[k6]['time_over_floor']):.2f}x floor ({ms(mha[k6]):.4f} ms)"
    models = os.path.join(a.dir, "models.csv")
    if os.path.exists(models):
        m = by_backend(rows(models))["cuda-hydragen:shared"]
        for label, k in (("Hq=Hkv=40", (256, 8192, 64, 40, 40, 128)), ("GQA g=4", (256, 8192, 64, 32, 8, 128)),
                         ("D=64", (256, 8192, 64, 32, 32, 64))):
            if k in m:
                line += f"; {label} {float(m[k]['time_over_floor']):.2f}x"
    print(line)


if __name__ == "__main__":
    main()
