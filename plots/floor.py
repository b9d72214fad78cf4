#!/usr/bin/env python3
"""Time over floor of every measured point, one panel per method: how far each is from the physical limit.

    python3 plots/floor.py out/sweep-gpu.csv --out out/floor.png

The floor of a point is max(FLOPs / peak FLOP/s, distinct bytes / peak bytes/s) with the peaks measured
in the same run (DESIGN.md section 6); rows without one are skipped. A sweep of several head layouts (the
cpu preset: Hkv 8 and 1) gets a panel per method and layout. A time under its floor is possible where
the K/V bytes come from a cache rather than memory (a CPU's last-level cache; GPU sweeps flush L2), and
the title says so when a point does.
"""
from matplotlib.lines import Line2D

import common
from common import plt

# Fixed per figure; the head layout (Hq, Hkv) may vary, one panel each.
FIXED = ("device", "dtype", "q_len", "D")
COLUMNS = common.SETTING + ("commit", "backend", "storage", "B", "P", "S", "tflops", "gbps", "time_over_floor",
                            "status")
MARKERS = "osD^vP*X"


def under_floor_note(rows):
    """Why some points run under their floor, told from the rows: each row's floor is bound by FLOPs or
    by bytes, and the rows of one run (device, commit) share the peaks, which are the largest rate
    times time-over-floor among them (the bound rows reach exactly the peak that way)."""
    below = [r for r in rows if r["time_over_floor"] < 1]
    if not below:
        return ""
    run = lambda r: (r["device"], r["commit"])
    peak_flops, peak_bytes = {}, {}
    for r in rows:
        peak_flops[run(r)] = max(peak_flops.get(run(r), 0), r["tflops"] * r["time_over_floor"])
        peak_bytes[run(r)] = max(peak_bytes.get(run(r), 0), r["gbps"] * r["time_over_floor"])
    by_flops = [r for r in below if r["tflops"] * r["time_over_floor"] >= 0.99 * peak_flops[run(r)]]
    note = f"\n{len(below)} of {len(rows)} points run under their floor (down to " \
           f"{min(r['time_over_floor'] for r in below):.2f}x)"
    if by_flops:
        note += (f"; {len(by_flops)} with a FLOP-bound floor: its peak FLOP/s is a GEMM\nprobed at the run's start "
                 f"({max(peak_flops[run(r)] for r in by_flops) * 1e3:.0f} GFLOP/s) and their own matrix products ran "
                 f"faster (up to {max(r['tflops'] for r in by_flops) * 1e3:.0f} GFLOP/s)")
    if len(by_flops) < len(below):
        note += (f";\n{len(below) - len(by_flops)} with a byte-bound floor: the K/V they re-read stays in the "
                 "last-level cache, the floor counts it at memory bandwidth")
    return note


def main():
    args = common.arguments(__doc__.splitlines()[0]).parse_args()
    rows = common.select(common.load(args.csv, COLUMNS), args.where)
    rows = [r for r in rows if r["status"] == "ok" and r["time_over_floor"] is not None]
    if not rows:
        raise common.InputError("no measured row has a floor (time_over_floor is empty: no peaks, e.g. CPU)")
    setting = common.single(rows, FIXED)

    layouts = sorted({(r["Hq"], r["Hkv"]) for r in rows}, key=lambda hl: (-hl[1], hl[0]))
    panels = [(key, hl) for key in common.methods(rows) for hl in layouts
              if any(common.method_key(r) == key and (r["Hq"], r["Hkv"]) == hl for r in rows)]
    prefixes = sorted({r["P"] for r in rows})
    suffixes = sorted({r["S"] for r in rows})
    colors = {p: plt.get_cmap("viridis")(i / max(len(prefixes) - 1, 1) * 0.85) for i, p in enumerate(prefixes)}
    markers = {s: MARKERS[i % len(MARKERS)] for i, s in enumerate(suffixes)}
    ncols = len(layouts) if len(layouts) > 1 else min(len(panels), 3)
    fig, axes = common.panel_grid(len(panels), ncols, 3.6, 2.8, sharey=True)
    for ax, (key, hl) in zip(axes, panels):
        mine = [r for r in rows if common.method_key(r) == key and (r["Hq"], r["Hkv"]) == hl]
        for p in prefixes:
            for s in suffixes:
                points = sorted((r["B"], r["time_over_floor"]) for r in mine if (r["P"], r["S"]) == (p, s))
                if points:
                    ax.plot(*zip(*points), color=colors[p], marker=markers[s], ms=5, lw=1.2)
        common.log_y(ax)
        ax.axhline(1, color="black", lw=1)
        common.size_axis(ax, [r["B"] for r in mine])
        heads = f", Hq={hl[0]}, Hkv={hl[1]}" if len(layouts) > 1 else ""
        ax.set_title(common.method_label(key) + heads, fontsize=10, color=common.method_color(key))
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
    heads = f", Hq={rows[0]['Hq']}, Hkv={rows[0]['Hkv']}" if len(layouts) == 1 else ""
    title = f"{setting['device']}: {setting['dtype']}{heads}, D={setting['D']}" + \
        (f", q_len={setting['q_len']}" if setting["q_len"] != 1 else "") + \
        "\ntime over floor per method" + (f" (S={suffixes[0]} tokens)" if len(suffixes) == 1 else "") + \
        "; 1 is the floor from the peaks measured in the run"
    title += under_floor_note(rows)
    common.save(fig, args.out, title)


if __name__ == "__main__":
    common.run(main)
