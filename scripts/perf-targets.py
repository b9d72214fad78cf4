#!/usr/bin/env python3
"""Issue 39's performance targets from one results folder: hydragen-sweep's grid.csv, paper-fig4.csv,
mha.csv, models.csv, spec.csv, experiments/peers' peers-PRESET.csv of the same presets where present, and
the same-run comparisons of `peers.py --ours` (vs-flashinfer-*.csv, preferred where both hold a point).
One line per target with the measured numbers, "not in this folder" for what it lacks (the decoder step
from hydragen-decode's decode-*.csv); --before DIR
adds the "nothing slower than the committed results by more than 2%" check against another folder's
sweep CSVs (same file names).

  scripts/perf-targets.py docs/results/h100-v27-2026-11-26 [--before OLD_RESULTS_DIR] [--ours BACKEND]

--ours names the form of ours to judge (default cuda-hydragen; e.g. cuda-hydragen:tune=measure, where the
sweeps timed it too): every target but --before's reads its rows, and the decoder's its runs.
`scripts/device-check dist targets` measures every target into one folder in one call.
"""
import argparse
import csv
import glob
import math
import os

FLASHINFER = ("flashinfer-cascade:shared", "flashinfer-paged:shared", "flashinfer-paged-tc:shared",
              "flashinfer-prefix-fa3:shared", "flashinfer-prefix-fa2:shared")
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
                    k = tuple(int(r[c]) for c in SHAPE) + (r.get("tree") or "prefix",)
                    out.setdefault(k, {})[f'{r["backend"]}:{r["storage"]}'] = r
    return out


def ms(r):
    return float(r["median_ms"])


def best(methods, names):
    times = [ms(methods[n]) for n in names if n in methods]
    return min(times) if times else None


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs))


def point(k):
    """(B, P, S[, q_len][, Hq/Hkv/D][, tree]) of key k: SHAPE's values, then the tree ("prefix" unless said)."""
    return f"({k[0]}, {k[1]}, {k[2]}" + (f", q_len {k[3]}" if k[3] > 1 else "") + \
        (f", {k[4]}/{k[5]}/D{k[6]}" if k[4:7] != (8, 1, 128) else "") + (f", {k[7]}" if k[7] != "prefix" else "") + ")"


def against_flashinfer(name, data, ours):
    """ours: the form judged, as table() keys it (e.g. cuda-hydragen:shared)."""
    ratios = sorted((best(m, FLASHINFER) / ms(m[ours]), k) for k, m in data.items()
                    if ours in m and best(m, FLASHINFER))
    if not ratios:
        print(f"  {name}: no point with both {ours} and a FlashInfer row")
        return
    behind = [f"{point(k)} {x:.3f}" for x, k in ratios if x < 1]
    print(f"  {name}: ahead of FlashInfer's better form at {len(ratios) - len(behind)} of {len(ratios)} points "
          f"(geomean {geomean([x for x, _ in ratios]):.2f}x, range {ratios[0][0]:.2f}-{ratios[-1][0]:.2f}x)"
          + (f"; behind at {', '.join(behind)}" if behind else ""))


# A point's FA3 prefill "fills the GPU" with at least this many blocks of 128 stacked rows (one per SM
# of an H100 is 132; B = 2048 at Hq = 8 makes 128).
FILLS_BLOCKS = 128
RATE_POINT = (4096, 16384, 0, 1, 8, 1, 128, "prefix")  # issue 39: the stacked-prefix segment's rate, target 760 TFLOP/s


DECODE_POINT = ("codellama-13b", 8, 1024)  # issue 39: the decoder step's target, model, TP and B


def decode_steps(folder):
    """[(P, step / (no-attention step + attention floor), step ms, tokens, backend)] at DECODE_POINT from the folder's
    hydragen-decode CSVs (decode-*.csv), a hydragen row beside the no-attention row of the same run: at
    its P, else the run's no-attention row at another P (the model without attention reads no K/V)."""
    rows = []  # (file, row): a run is one file's rows, whatever other files of the same build hold
    for path in sorted(glob.glob(os.path.join(folder, "decode-*.csv"))):
        with open(path, newline="") as f:
            rows += [(path, r) for r in csv.DictReader(f)
                     if r["status"] == "ok" and (r["model"], int(r["tp"]), int(r["B"])) == DECODE_POINT]

    def key(path, r):  # a run's point
        return path, r["device"], r["commit"], r["layers"], r["gen_tokens"], int(r["P"])

    none = {key(path, r): float(r["step_ms"]) for path, r in rows if r["mode"] == "no-attention"}
    any_p = {k[:-1]: step for k, step in none.items()}

    def no_attention(path, r):
        k = key(path, r)
        return none.get(k, any_p.get(k[:-1]))

    return sorted((int(r["P"]), float(r["step_ms"]) / (no_attention(path, r) + float(r["attention_floor_ms"])),
                   float(r["step_ms"]), int(r["gen_tokens"]), r.get("backend", "cuda-hydragen"))
                  for path, r in rows if r["mode"] == "hydragen" and no_attention(path, r) is not None)


def rows_at(tables, k, ours):
    """Every table's rows at point k, the first table holding an `ours` row first ({} where none has one)."""
    for t in tables:
        if ours in t.get(k, {}):
            return t[k]
    return {}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", help="folder with the sweep CSVs and the peers' CSVs of the same presets")
    ap.add_argument("--before", help="folder of committed sweep CSVs to compare cuda-hydragen and cuda-flash with")
    ap.add_argument("--ours", default="cuda-hydragen", help="the backend judged (default cuda-hydragen)")
    a = ap.parse_args()
    ours = f"{a.ours}:shared"  # the form judged, as table() keys it
    print(f"issue 39's targets for {a.ours} in {a.dir}")
    presets = ("grid", "paper-fig4", "mha", "models", "spec")
    data = {p: table(os.path.join(a.dir, f"{p}.csv"), os.path.join(a.dir, f"peers-{p}.csv")) for p in presets}
    runs = {os.path.basename(path): table(path) for path in sorted(glob.glob(os.path.join(a.dir, "vs-flashinfer-*.csv")))}
    every = list(runs.values()) + list(data.values())  # same-run files first: their ratios pair rows of one run

    print(f"1. {a.ours} against FlashInfer's forms measured (the fastest per point)")
    for p in presets:
        against_flashinfer(p, data[p], ours)
    for name, t in runs.items():
        against_flashinfer(f"{name} (one run)", t, ours)

    print("2. the stacked-prefix product against FA3's prefill at S = 0 where FA3 fills the GPU (target: 1.03x or better)")
    m = rows_at(every, RATE_POINT, ours)
    if m:
        r = m[ours]
        fa3 = m.get("flashinfer-prefix-fa3:shared")
        print(f"  {point(RATE_POINT)}: {float(r['tflops']):.0f} TFLOP/s (target 760), {float(r['time_over_floor']):.3f}x "
              f"its attainable floor, {float(r['nominal_share']):.2f} of the nominal peaks"
              + (f"; FA3 {float(fa3['tflops']):.0f} TFLOP/s in the same rows" if fa3 else ""))
    else:
        print(f"  {point(RATE_POINT)}: not in this folder")
    full = sorted((ms(m["flashinfer-prefix-fa3:shared"]) / ms(m[ours]), k)
                  for t in runs.values() for k, m in t.items()
                  if k[2] == 0 and k[7] == "prefix" and k[0] * k[3] * k[4] // 128 >= FILLS_BLOCKS
                  and ours in m and "flashinfer-prefix-fa3:shared" in m)
    if full:
        met = sum(1 for x, _ in full if x >= 1.03)
        print(f"  FA3's time over ours at {len(full)} such points: {full[0][0]:.3f} {point(full[0][1])} to "
              f"{full[-1][0]:.3f} {point(full[-1][1])}; 1.03x or better at {met}")
    else:
        print("  no same-run FA3 rows at such points")

    def floor_line(label, k, target):
        m = rows_at(every, k, ours)
        if not m:
            print(f"{label} {point(k)}: not in this folder")
            return
        r = m[ours]
        print(f"{label} {point(k)}: {float(r['time_over_floor']):.2f}x floor ({ms(r):.4f} ms; target {target})")

    floor_line("3.", (1024, 16384, 64, 1, 8, 1, 128, "prefix"), "1.3x")
    m = rows_at(every, (32, 1024, 64, 1, 8, 1, 128, "prefix"), ours)
    print("4. (32, 1024, 64): " + (f"{ms(m[ours]) * 1e3:.1f} us (target 12)" if m else "not in this folder"))

    print(f"5. models preset, {a.ours} time over floor (target 1.6x for GQA g = 4)")
    for label, heads in (("Hq=Hkv=40", (40, 40, 128)), ("GQA g=4", (32, 8, 128)), ("D=64", (32, 32, 64))):
        cells = [f"({k[0]}, {k[1]}) {float(m[ours]['time_over_floor']):.2f}x"
                 for k, m in sorted(data["models"].items()) if k[4:7] == heads and ours in m]
        print(f"  {label}: {', '.join(cells) if cells else 'not in this folder'}")

    print(f"6. the decoder's step over no-attention's + the attention floor, {DECODE_POINT[0]}'s TP-{DECODE_POINT[1]} shard "
          f"at B = {DECODE_POINT[2]} (target 1.15)")
    steps = [s for s in decode_steps(a.dir) if s[4] == a.ours]
    print("  " + (", ".join(f"P = {P} {ratio:.3f} ({ms_:.2f} ms, {tokens} tokens)" for P, ratio, ms_, tokens, _ in steps)
                  if steps else "not in this folder"))

    if a.before:
        print(f"7. against {a.before} (new / old median; > 1.02 is slower by more than 2%)")
        for p in presets:
            old = table(os.path.join(a.before, f"{p}.csv"))
            for method in ("cuda-hydragen:shared", "cuda-flash:shared"):
                ratios = sorted((ms(m[method]) / ms(old[k][method]), k) for k, m in data[p].items()
                                if method in m and method in old.get(k, {}))
                if ratios:
                    slower = [f"{point(k)} {x:.3f}" for x, k in ratios if x > 1.02]
                    print(f"  {p} {method}: {len(ratios)} points, new/old {ratios[0][0]:.3f}-{ratios[-1][0]:.3f} "
                          f"(geomean {geomean([x for x, _ in ratios]):.3f}); slower by > 2%: "
                          + (", ".join(slower) if slower else "none"))


if __name__ == "__main__":
    main()
