#!/usr/bin/env python3
"""Speedup over a baseline against suffix length, one panel per (B, P): the Hydragen paper's Figure 4.

    python3 plots/fig4_speedup.py out/sweep-gpu.csv --out out/fig4.png
"""
import math
import sys

from matplotlib.lines import Line2D

import common


def method_list(text):
    """--also: methods or aliases, each drawn as its own line (a list here is several lines, not a best-of)."""
    return [common.parse_methods(m) for m in text.split(",") if m]


def panel(ax, lines, target, b, p):
    """Draws every method's speedup at (B, P) against S; returns the S values where the baseline was oom."""
    oom, suffixes, peak = set(), set(), 1.0
    for method, ratios in lines.items():
        here = sorted((r for r in ratios if (r.shape["B"], r.shape["P"]) == (b, p)), key=lambda r: r.shape["S"])
        suffixes.update(r.shape["S"] for r in here)
        oom.update(r.shape["S"] for r in here if r.baseline_status == "oom")
        points = [(r.shape["S"], r.speedup) for r in here if r.speedup is not None]
        if points:
            ax.plot(*zip(*points), marker="o", ms=4, color=common.method_color(method),
                    lw=2.2 if method == target else 1.2)
            peak = max(peak, max(y for _, y in points))
    common.mark_baseline_oom(ax, oom)
    ax.axhline(1, color="black", lw=0.8, ls="--")
    # Own scale per panel (speedups grow with B and P: a shared one flattens the small panels), with
    # headroom for the oom marks at 94% of the height.
    ax.set_ylim(0, 1.18 * peak)
    common.size_axis(ax, suffixes)
    ax.set_title(f"B={b}, P={p}", fontsize=10)
    ax.grid(alpha=0.3)
    return oom


def main():
    parser = common.arguments(__doc__.splitlines()[0], speedup=True)
    parser.add_argument("--also", type=method_list, metavar="METHOD,...",
                        help="more methods (or aliases) drawn against the same baseline (default, when present: "
                             f"{', '.join(common.COMPARISONS[0][2])})")
    args = parser.parse_args()
    rows = common.select(common.load(args.csv, common.SPEEDUP_COLUMNS), args.where)
    target, baseline, extra = common.comparison(rows, args.target, args.baseline)
    lines = {target: common.joined(rows, target, baseline)}
    present = set(common.methods(rows))
    for method in extra if args.also is None else [m.measured(present) for m in args.also]:
        ratios = common.speedups(rows, method, baseline)
        if ratios:
            lines[method] = ratios
        else:
            print(f"fig4_speedup.py: note: {method} shares no point with {baseline}, not drawn", file=sys.stderr)
    setting = common.single([r.shape for ratios in lines.values() for r in ratios], common.SETTING)

    pairs = sorted({(r.shape["B"], r.shape["P"]) for r in lines[target]})
    batches, prefixes = sorted({b for b, _ in pairs}), sorted({p for _, p in pairs})
    # A full B x P grid reads like the paper (rows B, columns P); anything else is laid out in order.
    ncols = len(prefixes) if len(pairs) == len(batches) * len(prefixes) else math.ceil(math.sqrt(len(pairs)))
    fig, axes = common.panel_grid(len(pairs), ncols, 3.4, 2.6)
    any_oom = False
    for ax, (b, p) in zip(axes, pairs):
        any_oom |= bool(panel(ax, lines, target, b, p))
    common.label_edges(axes, ncols, "suffix length S (tokens)", "speedup (×)")

    handles = [Line2D([], [], color=common.method_color(m), marker="o", lw=2.2 if m == target else 1.2)
               for m in lines]
    labels = [common.method_label(m) for m in lines]
    handles.append(Line2D([], [], color="black", lw=0.8, ls="--"))
    labels.append("speedup 1 (as fast as the baseline)")
    if any_oom:
        handles.append(common.oom_handle())
        labels.append(common.oom_label(baseline))
    common.legend_below(fig, handles, labels)
    common.save(fig, args.out, f"{common.setting(setting)}\nspeedup over {common.method_label(baseline)}\n"
                               "at the same (B, P, S) = baseline median time / method median time")


if __name__ == "__main__":
    common.run(main)
