#!/usr/bin/env python3
"""Speedup over a baseline as heatmaps, rows B by columns P, one panel per suffix length S.

    python3 plots/heatmap.py out/sweep-gpu.csv --out out/heatmap.png
"""
import numpy as np
from matplotlib.colors import LogNorm

import common
from common import plt


def panel(ax, ratios, batches, prefixes, norm):
    """One S: colored cells with the speedup written in; 'x' where the baseline was out of memory."""
    cells = {(r.shape["B"], r.shape["P"]): r for r in ratios}
    grid = np.full((len(batches), len(prefixes)), np.nan)
    for i, b in enumerate(batches):
        for j, p in enumerate(prefixes):
            r = cells.get((b, p))
            if r is None:
                continue  # not measured: a gray cell without text
            if r.speedup is None:
                ax.text(j, i, r.note(), ha="center", va="center", fontsize=11 if r.note() == "x" else 7)
                continue
            grid[i, j] = r.speedup
            dark = abs(norm(r.speedup) - 0.5) > 0.3  # deep colors at both ends need white text
            ax.text(j, i, f"{r.speedup:.2f}" if r.speedup < 10 else f"{r.speedup:.1f}", ha="center", va="center",
                    fontsize=9, color="white" if dark else "black")
    cmap = plt.get_cmap("RdBu").with_extremes(bad="#e0e0e0")  # gray: no number (not run, or a failure)
    image = ax.imshow(grid, cmap=cmap, norm=norm, aspect="auto")
    ax.set_xticks(range(len(prefixes)), [str(p) for p in prefixes])
    ax.set_yticks(range(len(batches)), [str(b) for b in batches])
    return image


def main():
    parser = common.arguments(__doc__.splitlines()[0], speedup=True)
    args = parser.parse_args()
    rows = common.select(common.load(args.csv, common.SPEEDUP_COLUMNS), args.where)
    target, baseline, _ = common.comparison(rows, args.target, args.baseline)
    ratios = common.joined(rows, target, baseline)
    setting = common.single([r.shape for r in ratios], common.SETTING)

    batches = sorted({r.shape["B"] for r in ratios})
    prefixes = sorted({r.shape["P"] for r in ratios})
    suffixes = sorted({r.shape["S"] for r in ratios})
    common.at_most(len(suffixes), 8, "suffix lengths (a panel each)", "--where S=V1,V2,...")
    # Log scale symmetric around 1, so 2x faster and 2x slower are equally strong colors.
    values = [r.speedup for r in ratios if r.speedup is not None]
    reach = max([1.25] + [max(v, 1 / v) for v in values])
    norm = LogNorm(1 / reach, reach)
    ncols = min(len(suffixes), 3)
    fig, axes = common.panel_grid(len(suffixes), ncols, 0.9 * len(prefixes) + 0.9, 0.5 * len(batches) + 1.0,
                                  sharey=True)
    for ax, s in zip(axes, suffixes):
        image = panel(ax, [r for r in ratios if r.shape["S"] == s], batches, prefixes, norm)
        ax.set_title(f"S={s} tokens", fontsize=10)
    common.label_edges(axes, ncols, "prefix length P (tokens)", "batch size B (sequences)")
    bar = fig.colorbar(image, ax=axes, shrink=0.9)
    bar.set_label("speedup (×, log scale)")
    exponents = range(-int(np.log2(reach)), int(np.log2(reach)) + 1)
    bar.set_ticks([2.0 ** e for e in exponents], labels=[f"{2.0 ** e:g}" for e in exponents])
    bar.minorticks_off()
    common.save(fig, args.out,
                f"{common.setting(setting)}\n{common.method_label(target)} over {common.method_label(baseline)}\n"
                "baseline median time / method median time (x: baseline out of memory; gray: no ratio)")


if __name__ == "__main__":
    common.run(main)
