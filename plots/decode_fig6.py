#!/usr/bin/env python3
"""Time to run a dataset of problems with two-level, single-level and flat attention: the Hydragen paper's Figure 6.

    build/experiments/hydragen-decode --preset fig6 --csv out/fig6.csv
    python3 plots/decode_fig6.py out/fig6.csv --out out/fig6.png

Reads hydragen-decode rows with `groups` (Nx300-800: N problems per batch, each problem's description shared
by its samples; copy:Nx300-800: the descriptions copied into every sample, the prompt alone shared): mode
hydragen over either (two-level and single-level Hydragen), and mode paged over the shared groups (flat
attention reading two-level's pages once per sample; the paper's figure has no such line). A batch of N
problems costs its descriptions' prefill (groups_prefill_ms) and the decode (answer_ms), so the dataset of
--problems problems takes ceil(problems / N) batches of that. Above the axes: each form over two-level at
each N, and each form at its fastest N (the paper's larger batch that sharing's memory saving allows, where
a form's larger batches do not fit: x).
"""
import math

from matplotlib.lines import Line2D

import common
import decode_throughput as decode

# (mode, descriptions copied) -> label and color, in drawing order; two-level is what the others are divided by.
TWO_LEVEL = ("hydragen", False)
FORMS = {TWO_LEVEL: ("two-level: descriptions shared", common.COLORS["cuda-hydragen:shared"]),
         ("hydragen", True): ("single-level: descriptions copied", common.COLORS["cuda-flash:shared"]),
         ("paged", False): ("flat (paged): no split, pages shared", common.COLORS["cpu-flat:shared"])}

def problems_per_batch(groups):
    """N of 'Nx...' or 'copy:Nx...'."""
    text = groups[len("copy:"):] if groups.startswith("copy:") else groups
    head = text.partition("x")[0]
    if not head.isdigit() or "/" in text:
        raise common.InputError(f"groups '{groups}': expected one level, Nx300-800 or copy:Nx300-800")
    return int(head)


def dataset_seconds(rows, problems):
    """{(mode, copied): {N: (seconds or None, status)}} for the rows with groups."""
    out = {}
    for r in rows:
        if not r.get("groups"):
            continue
        form = (r["mode"], r["groups"].startswith("copy:"))
        if form not in FORMS:
            raise common.InputError(f"row with mode {r['mode']} and groups {r['groups']}: expected mode hydragen "
                                    "(groups shared or copy:) or paged (groups shared)")
        n = problems_per_batch(r["groups"])
        seconds = None
        if r["status"] == "ok":
            seconds = math.ceil(problems / n) * (float(r["groups_prefill_ms"]) + r["answer_ms"]) / 1e3
        out.setdefault(form, {})[n] = (seconds, r["status"])
    if not out:
        raise common.InputError("no rows with groups (hydragen-decode --groups or --preset fig6)")
    return out


def short(form):
    return FORMS[form][0].split(":")[0]


def summary(times):
    """One line per form over two-level ('single-level / two-level time at N = 1: 1.46x, ...'), then each form's fastest N."""
    base = times.get(TWO_LEVEL, {})
    parts = []
    for form, points in times.items():
        ratios = [f"{n}: {points[n][0] / base[n][0]:.2f}x" for n in sorted(points)
                  if form != TWO_LEVEL and n in base and base[n][0] and points[n][0]]
        if ratios:
            parts.append(f"{short(form)} / two-level time at N = " + ", ".join(ratios))
    best = []
    for form in FORMS:
        ok = [(s, n) for n, (s, _) in times.get(form, {}).items() if s is not None]
        if ok:
            s, n = min(ok)
            best.append(f"{short(form)} {s:.3g} s at N = {n}")
    if best:
        parts.append("fastest: " + ", ".join(best))
    return "\n".join(parts)

def main():
    parser = decode.arguments(__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=120, help="problems in the dataset (default 120, the paper's)")
    args = parser.parse_args()
    if args.problems < 1:
        raise common.InputError(f"--problems {args.problems}: the dataset needs at least one problem")
    rows = decode.select(decode.load(args.csv, "answer_ms"), args.where)
    for r in rows:
        if "groups" not in r or "groups_prefill_ms" not in r:
            raise common.InputError("the CSV has no groups columns (hydragen-decode before --groups)")
    rows = [r for r in rows if r["mode"] != decode.CEILING]
    setting = common.single(rows, decode.SETTING)
    prefix = decode.fixed_value(rows, "P")
    times = dataset_seconds(rows, args.problems)

    fig, ax = common.plt.subplots(layout="constrained", figsize=(7.5, 5.2))
    handles, labels = [], []
    values = []
    for row, (form, (label, color)) in enumerate(FORMS.items()):
        if form not in times:
            continue
        points = times[form]
        ok = sorted((n, s) for n, (s, _) in points.items() if s is not None)
        if ok:
            ax.plot(*zip(*ok), color=color, marker="o", lw=2.2)
            values += [s for _, s in ok]
        decode.mark_oom(ax, [n for n, (s, _) in points.items() if s is None], color, row)
        handles.append(Line2D([], [], color=color, marker="o", lw=2.2))
        labels.append(label)
    if not values:
        raise common.InputError("no ok rows to draw: every point ran out of memory or failed")
    ax.set_xscale("log", base=2)
    decode.size_axis(ax, sorted({n for points in times.values() for n in points}))
    ax.set_ylim(0, max(values) * 1.15)
    ax.set_xlabel("problems per batch N (each with its samples)")
    ax.set_ylabel(f"time for {args.problems} problems (s)")
    ax.grid(alpha=0.3)
    handles.append(common.oom_handle())
    labels.append("does not fit in memory (not run), in the form's color")
    common.legend_below(fig, handles, labels, ncol=2)
    ax.set_title(summary(times), fontsize=8)
    samples = sorted({r["B"] // problems_per_batch(r["groups"]) for r in rows if r.get("groups")})
    common.save(fig, args.out,
                f"{decode.title_head(setting)}\n{args.problems} problems x {', '.join(map(str, samples))} samples, P = {prefix}-token "
                f"prompt, {setting['gen_tokens']} tokens each: two-level, single-level and flat")


if __name__ == "__main__":
    common.run(main)
