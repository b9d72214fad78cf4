#!/usr/bin/env python3
"""RelayAttention's Eq. 10 (speedup predicted from elements moved) against measured speedups.

    python3 plots/relay_eq10.py out/sweep-gpu.csv --out out/relay-eq10.png

RelayAttention (shared/papers/relayattention-paper.txt, section 3.4) maps b requests, s shared tokens
and c own tokens to b = B, s = P, c = S. The measured speedup is baseline median / target median, by
default cuda-flash:redundant / cuda-hydragen:shared, or cpu-flat:shared / cpu-hydragen:shared when the
data has no CUDA pair.
"""
import numpy as np
from matplotlib.lines import Line2D

import common
from common import plt

FORMULA = "p_g = (s + c + 2g) / (s/b + c + 7g)"


def relay_speedup(s, c, b, g=1):
    """RelayAttention's Eq. 10 generalized to g query rows per KV head (g = 1 is the paper's formula).

    Elements moved per KV head in one decoding step, counting as the paper does one token's cached K/V
    as d elements: each of the b sequences has g query rows (g = q_len * Hq / Hkv) of d elements, and
    so has each output and each partial output the fusion reads. Without sharing
        n  = b g d (queries) + b (s + c) d (cached K/V) + b g d (outputs);
    with the prefix read once,
        n' = (b g d + s d + b g d) (prefix) + (b g d + b c d + b g d) (suffixes) + 3 b g d (fusion).
    So p_g = n / n' = (s + c + 2g) / (s/b + c + 7g). Works on numpy arrays of s.
    """
    return (s + c + 2 * g) / (s / b + c + 7 * g)


def query_rows_per_kv_head(shape):
    return shape["q_len"] * shape["Hq"] // shape["Hkv"]


def main():
    args = common.arguments(__doc__.splitlines()[0], speedup=True).parse_args()
    rows = common.select(common.load(args.csv, common.SPEEDUP_COLUMNS), args.where)
    target, baseline, _ = common.comparison(rows, args.target, args.baseline)
    ratios = common.joined(rows, target, baseline)
    # Eq. 10 has no d and no dtype, but measurements of different ones do not belong on one curve.
    setting = common.single([r.shape for r in ratios], ("device", "dtype", "D"))

    groups = {}
    for r in ratios:
        groups.setdefault((r.shape["B"], r.shape["S"], query_rows_per_kv_head(r.shape)), []).append(r)
    common.at_most(len(groups), 10, "(b, c, g) curves", "--where B=... and/or --where S=...")
    prefixes = sorted({r.shape["P"] for r in ratios})
    fig, ax = plt.subplots(figsize=(7.5, 4.8), layout="constrained")
    common.size_axis(ax, prefixes)
    # Every curve over the whole measured range of s (twice around a single s, so it is still a curve).
    lo, hi = (prefixes[0] / 2, prefixes[0] * 2) if len(prefixes) == 1 else (prefixes[0], prefixes[-1])
    s = np.geomspace(max(lo, 1), hi, 200) if ax.get_xscale() == "log" else np.linspace(lo, hi, 200)
    handles, labels = [], []
    for k, ((b, c, g), members) in enumerate(sorted(groups.items())):
        color = plt.get_cmap("tab10")(k % 10)
        ax.plot(s, relay_speedup(s, c, b, g), color=color, lw=1.5)
        measured = sorted((r.shape["P"], r.speedup) for r in members if r.speedup is not None)
        if measured:
            ax.plot(*zip(*measured), "o", color=color, ms=6, mec="black", mew=0.5)
        common.mark_baseline_oom(ax, [r.shape["P"] for r in members if r.baseline_status == "oom"], color)
        handles.append(Line2D([], [], color=color, lw=1.5, marker="o", mec="black", mew=0.5))
        labels.append(f"b = B = {b}, c = S = {c}, g = {g}")
    ax.axhline(1, color="black", lw=0.8, ls="--")
    common.log_y(ax)
    ax.grid(alpha=0.3, which="both")
    ax.set_xlabel("shared prefix length s = P (tokens)")
    ax.set_ylabel("speedup (×, log scale)")

    # The samples are gray: each group draws its theory and its measurements in its own color.
    handles += [Line2D([], [], color="gray", lw=1.5), Line2D([], [], color="gray", marker="o", ls="", mec="black", mew=0.5)]
    labels += [f"theory, line in its group's color: {FORMULA}",
               f"measured, dots in its group's color: {common.method_label(baseline)} / "
               f"{common.method_label(target)} median time"]
    if any(r.baseline_status == "oom" for r in ratios):
        ax.set_ylim(top=ax.get_ylim()[1] * 2)  # keeps the oom marks, at 94% of the height, off the curves
        handles.append(common.oom_handle())
        labels.append(f"{common.oom_label(baseline)} (in its group's color)")
    common.legend_below(fig, handles, labels, ncol=1)
    common.save(fig, args.out,
                f"{setting['device']}: {setting['dtype']}, D={setting['D']}\n"
                "RelayAttention Eq. 10 generalized to g = q_len·Hq/Hkv query rows per KV head (g = 1: Eq. 10)\n"
                "elements moved per KV head: n = 2bgd + b(s+c)d without sharing, n' = 7bgd + sd + bcd with; "
                "p_g = n/n'" + gap_note(ratios))


def gap_note(ratios):
    """Where the measurements sit against the theory, and why they may sit below it."""
    shares = [r.speedup / relay_speedup(r.shape["P"], r.shape["S"], r.shape["B"], query_rows_per_kv_head(r.shape))
              for r in ratios if r.speedup is not None]
    if not shares:
        return ""
    return (f"\nmeasured / theory: {min(shares):.2f} to {max(shares):.2f}. Eq. 10 counts elements moved only; the time also "
            "has what it does not count:\nwith the prefix read once, the stacked queries are matrix products bound "
            "by their FLOPs (at small b, by fixed costs per call),\nand the flat baseline finds part of the prefix "
            "it re-reads in cache")


if __name__ == "__main__":
    common.run(main)
