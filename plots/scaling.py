#!/usr/bin/env python3
"""Median time and speedup against the prefix length P: one column per head layout, one line per batch size.

    python3 plots/scaling.py out/sweep-cpu.csv --out out/scaling.png

For a sweep with one suffix length S (the cpu and quick presets), where the speedup-vs-S layout of
fig4_speedup.py would show one dot a panel. Top row: every method's median time (every ok row of the
file is a point); bottom row: the speedup of --target over --baseline (defaults as fig4_speedup.py).
"""
from matplotlib.lines import Line2D

import common
from common import plt

MARKERS = "osD^vP*X"


def layout(shape):
    return shape["Hq"], shape["Hkv"]


def main():
    args = common.arguments(__doc__.splitlines()[0], speedup=True).parse_args()
    rows = common.select(common.load(args.csv, common.SPEEDUP_COLUMNS), args.where)
    setting = common.single(rows, ("device", "dtype", "q_len", "D", "S", "tree"))
    target, baseline, _ = common.comparison(rows, args.target, args.baseline)
    ratios = common.joined(rows, target, baseline)
    ok = [r for r in rows if r["status"] == "ok"]
    keys = common.methods(ok)
    layouts = sorted({layout(r) for r in rows}, key=lambda hl: (-hl[1], hl[0]))
    batches = sorted({r["B"] for r in rows})
    markers = {b: MARKERS[i % len(MARKERS)] for i, b in enumerate(batches)}

    fig, axes = plt.subplots(2, len(layouts), squeeze=False, layout="constrained", sharex=True,
                             figsize=(4.2 * len(layouts) + 0.8, 6.4))
    for col, (hq, hkv) in enumerate(layouts):
        top, bottom = axes[0][col], axes[1][col]
        mine = [r for r in ok if layout(r) == (hq, hkv)]
        for key in keys:
            for b in batches:
                points = sorted((r["P"], r["median_ms"]) for r in mine if common.method_key(r) == key and r["B"] == b)
                if points:
                    top.plot(*zip(*points), color=common.method_color(key), marker=markers[b], ms=5, lw=1.2)
        common.log_y(top)
        top.set_title(f"Hq={hq}, Hkv={hkv}" + (" (MHA)" if hq == hkv else " (MQA)" if hkv == 1 else " (GQA)"))
        for b in batches:
            points = sorted((r.shape["P"], r.speedup) for r in ratios
                            if layout(r.shape) == (hq, hkv) and r.shape["B"] == b and r.speedup is not None)
            if points:
                bottom.plot(*zip(*points), color="black", marker=markers[b], ms=5, lw=1.2)
            common.mark_baseline_oom(bottom, [r.shape["P"] for r in ratios if layout(r.shape) == (hq, hkv)
                                              and r.shape["B"] == b and r.baseline_status == "oom"])
        bottom.axhline(1, color="black", lw=0.8, ls="--")
        common.log_y(bottom)
        for ax in (top, bottom):
            common.size_axis(ax, [r["P"] for r in rows])
            ax.grid(alpha=0.3, which="both")
        bottom.set_xlabel("shared prefix length P (tokens)")
    axes[0][0].set_ylabel("median time (ms, log)")
    axes[1][0].set_ylabel(f"speedup of {common.method_label(target)}\nover {common.method_label(baseline)} (×, log)")

    handles = [Line2D([], [], color=common.method_color(k), lw=1.2) for k in keys]
    labels = [common.method_label(k) for k in keys]
    handles += [Line2D([], [], color="gray", marker=markers[b], ls="") for b in batches]
    labels += [f"B={b} sequences" for b in batches]
    common.legend_below(fig, handles, labels, ncol=4)
    common.save(fig, args.out, f"{setting['device']}: {setting['dtype']}, D={setting['D']}, S={setting['S']} tokens"
                + (f", q_len={setting['q_len']}" if setting["q_len"] != 1 else "")
                + "\ntime and speedup by shared prefix length, per head layout and batch size")


if __name__ == "__main__":
    common.run(main)
