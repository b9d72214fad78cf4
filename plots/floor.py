#!/usr/bin/env python3
"""Time over floor of every measured point, one panel per method: how far each is from the physical limit.

    python3 plots/floor.py out/sweep-gpu.csv --out out/floor.png

The floor of a point is max(FLOPs / peak FLOP/s, distinct bytes / peak bytes/s) with the peaks measured
in the same run (DESIGN.md section 6); rows without one (CPU sweeps measure no peaks) are skipped.
"""
from matplotlib.lines import Line2D

import common
from common import plt

COLUMNS = common.SETTING + ("backend", "storage", "B", "P", "S", "time_over_floor", "status")
MARKERS = "osD^vP*X"


def main():
    args = common.arguments(__doc__.splitlines()[0]).parse_args()
    rows = common.select(common.load(args.csv, COLUMNS), args.where)
    rows = [r for r in rows if r["status"] == "ok" and r["time_over_floor"] is not None]
    if not rows:
        raise common.InputError("no measured row has a floor (time_over_floor is empty: no peaks, e.g. CPU)")
    setting = common.single(rows, common.SETTING)

    keys = common.methods(rows)
    prefixes = sorted({r["P"] for r in rows})
    suffixes = sorted({r["S"] for r in rows})
    colors = {p: plt.get_cmap("viridis")(i / max(len(prefixes) - 1, 1) * 0.85) for i, p in enumerate(prefixes)}
    markers = {s: MARKERS[i % len(MARKERS)] for i, s in enumerate(suffixes)}
    ncols = min(len(keys), 3)
    fig, axes = common.panel_grid(len(keys), ncols, 3.6, 2.8, sharey=True)
    for ax, key in zip(axes, keys):
        mine = [r for r in rows if common.method_key(r) == key]
        for p in prefixes:
            for s in suffixes:
                points = sorted((r["B"], r["time_over_floor"]) for r in mine if (r["P"], r["S"]) == (p, s))
                if points:
                    ax.plot(*zip(*points), color=colors[p], marker=markers[s], ms=5, lw=1.2)
        common.log_y(ax)
        ax.axhline(1, color="black", lw=1)
        common.size_axis(ax, [r["B"] for r in mine])
        ax.set_title(common.method_label(key), fontsize=10, color=common.method_color(key))
        ax.grid(alpha=0.3, which="both")
    common.label_edges(axes, ncols, "batch size B (sequences)", "median time / floor (×, log)")
    # Room under the line at 1 so the limit is visible even when every point is far above it.
    lo, hi = axes[0].get_ylim()
    axes[0].set_ylim(min(lo, 0.5), hi)

    handles = [Line2D([], [], color=colors[p], lw=1.2) for p in prefixes]
    labels = [f"P={p} tokens" for p in prefixes]
    if len(suffixes) > 1:
        handles += [Line2D([], [], color="gray", marker=markers[s], ls="") for s in suffixes]
        labels += [f"S={s} tokens" for s in suffixes]
    handles.append(Line2D([], [], color="black", lw=1))
    labels.append("floor: max(FLOPs / peak FLOP/s, bytes / peak bytes/s)")
    common.legend_below(fig, handles, labels)
    title = f"{common.setting(setting)}\ntime over floor per method" + \
        (f" (S={suffixes[0]} tokens)" if len(suffixes) == 1 else "") + "; 1 is the physical limit"
    common.save(fig, args.out, title)


if __name__ == "__main__":
    common.run(main)
