#!/usr/bin/env python3
"""Multi-level sharing against the same sequences with the prefix alone shared: time by batch size, per suffix.

    python3 plots/trees.py out/fig6.csv --out out/fig6.png          # hydragen-sweep --preset fig6 (or trees)

Reads rows whose `tree` has levels (16x1024, 8x300-800, ...) and their `copy:` forms, where each group's
tokens are copied into every sequence below it: the paper's Fig. 6 compares two-level Hydragen with this
single-level form. One panel per S; a solid line per method over the shared tree, dashed over the copied
one; each panel notes how much longer the copied form takes at every batch size.
"""
from matplotlib.lines import Line2D

import common
from common import plt

COLUMNS = common.SETTING + ("backend", "storage", "B", "P", "S", "tree", "median_ms", "status")


MARKERS = "os^Dv"


def levels(tree):
    """The tree's levels without the copy: mark, e.g. '8x300-800'."""
    return tree[len("copy:"):] if tree.startswith("copy:") else tree


def family(tree):
    """The tree's shape whatever its outer group count: 'Gx300-800' for 1x300-800 and 16x300-800 (the fig6
    preset, groups growing with B), 'Gx1024' and 'Gx1024/4x256' for the trees preset's two shapes."""
    head, sep, rest = levels(tree).partition("x")
    return "Gx" + rest if head.isdigit() and sep else levels(tree)


def main():
    args = common.arguments(__doc__.splitlines()[0]).parse_args()
    rows = common.select(common.load(args.csv, COLUMNS), args.where)
    rows = [r for r in rows if r["tree"] not in ("prefix", "flat") and not r["tree"].startswith("tokens:")]
    if not rows:
        raise common.InputError("no rows with a tree of levels (the tree column is prefix or flat everywhere)")
    setting = common.single(rows, common.SETTING)
    prompts = sorted({r["P"] for r in rows})
    keys = common.methods(rows)
    suffixes = sorted({r["S"] for r in rows})
    families = sorted({family(r["tree"]) for r in rows})
    # Each shape's trees, fewest groups first; a shape of one tree goes by that tree's name.
    trees = {f: sorted({levels(r["tree"]) for r in rows if family(r["tree"]) == f}, key=lambda t: (len(t), t))
             for f in families}
    name = {f: trees[f][0] if len(trees[f]) == 1 else f for f in families}
    if len(families) > len(MARKERS):
        raise common.InputError(f"{len(families)} tree shapes ({', '.join(families)}): select at most {len(MARKERS)} with --where")
    fig, axes = common.panel_grid(len(suffixes), min(len(suffixes), 3), 4.2, 3.2, sharey=False)
    for ax, s in zip(axes, suffixes):
        here = [r for r in rows if r["S"] == s]
        for key in keys:
            for shape, marker in zip(families, MARKERS):
                for copied in (False, True):
                    points = sorted((r["B"], r["median_ms"]) for r in here if common.method_key(r) == key and
                                    r["status"] == "ok" and r["tree"].startswith("copy:") == copied and
                                    family(r["tree"]) == shape)
                    if points:
                        ax.plot(*zip(*points), color=common.method_color(key), ls="--" if copied else "-",
                                marker=marker, ms=4, lw=1.4)
        # The copied form over the shared tree at each batch size, per shape, for the first method that has both.
        for key in keys:
            ok = {(r["B"], r["tree"]): r["median_ms"] for r in here if common.method_key(r) == key and r["status"] == "ok"}
            lines = []
            for shape in families:
                ratios = sorted((b, ok[(b, "copy:" + t)] / ok[(b, t)]) for (b, t) in ok if not t.startswith("copy:")
                                and family(t) == shape and (b, "copy:" + t) in ok)
                if ratios:
                    text = ", ".join(f"{b}: {x:.2f}x" for b, x in ratios)
                    lines.append(f"{name[shape]}: {text}" if len(families) > 1 else text)
            if lines:
                ax.text(0.02, 0.98, f"copied / shared ({common.method_label(key)}), by B\n" + "\n".join(lines),
                        transform=ax.transAxes, va="top", fontsize=7)
                break
        common.log_y(ax)
        common.size_axis(ax, [r["B"] for r in here])
        ax.set_title(f"S = {s} tokens", fontsize=10)
        ax.grid(alpha=0.3, which="both")
    common.label_edges(axes, min(len(suffixes), 3), "batch size B (sequences)", "median ms (log)")
    handles = [Line2D([], [], color=common.method_color(k), lw=1.4) for k in keys]
    labels = [common.method_label(k) for k in keys]
    for shape, marker in zip(families, MARKERS):
        handles.append(Line2D([], [], color="gray", lw=1.4, marker=marker, ms=4))
        labels.append("groups shared: " + ", ".join(trees[shape]))
    handles.append(Line2D([], [], color="gray", lw=1.4, ls="--"))
    labels.append("groups copied into each sequence (copy:)")
    common.legend_below(fig, handles, labels)
    title = f"{common.setting(setting)}, P = {', '.join(map(str, prompts))}\nmulti-level sharing against the prefix alone shared"
    common.save(fig, args.out, title)


if __name__ == "__main__":
    common.run(main)
