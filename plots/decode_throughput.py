#!/usr/bin/env python3
"""Decoding throughput of hydragen-decode against batch size B or prefix length P: the Hydragen paper's Figure 3.

    python3 plots/decode_throughput.py out/fig3a.csv --out out/fig3a.png
    python3 plots/decode_throughput.py out/tables.csv --where model=codellama-13b --where P=2048 \\
        --paper ../shared/paper_data/hydragen_e2e_tables.csv --out out/fig3a-13b-vs-paper.png

Also the helpers for hydragen-decode CSVs that decode_answer_time.py shares: loading, --where with the
no-attention rule, the one-setting check, per-mode lines and their ratios.
"""
import argparse
import sys

from matplotlib import ticker
from matplotlib.lines import Line2D
from matplotlib.transforms import blended_transform_factory

import common

# The hydragen-decode columns the figures read (every script adds the one it plots, tokens_per_s or
# answer_ms).
COLUMNS = ("device", "model", "layers", "tp", "gpus", "mode", "backend", "B", "P", "question_len", "gen_tokens",
           "status")
INT_COLUMNS = ("layers", "tp", "gpus", "question_len", "gen_tokens")  # B and P: common.INTS
# What one figure holds fixed besides the axis it does not draw; mixing values overlays unlike runs.
SETTING = ("model", "layers", "tp", "gpus", "device", "gen_tokens", "question_len")
STATUSES = ("ok", "x", "error")  # x: out of memory, not run
ATTENTION = ("hydragen", "paged", "flash")  # drawn in this order, then the ceiling
CEILING = "no-attention"
MODES = ATTENTION + (CEILING,)
# Hydragen warm as cuda-hydragen elsewhere; paged (prefix stored once) as cuda-flash:shared, flash (a copy
# per sequence) as cuda-flash:redundant; the no-attention ceiling black and dashed.
COLORS = {"hydragen": common.COLORS["cuda-hydragen:shared"], "paged": common.COLORS["cuda-flash:shared"],
          "flash": common.COLORS["cuda-flash:redundant"], CEILING: "#333333"}
# Our modes -> the paper's methods in shared/paper_data/hydragen_e2e_tables.csv (vLLM is its paged
# attention; its vllm_notok variant is not drawn).
PAPER_METHODS = {"hydragen": "hydragen", "paged": "vllm", "flash": "flashattention", CEILING: "no_attention"}
PAPER_NAMES = {"hydragen": "Hydragen", "paged": "vLLM", "flash": "FlashAttention", CEILING: "no attention"}
PAPER_COLUMNS = ("model", "gen_tokens", "batch", "method", "prefix_len", "ktps")
PAPER_LABEL = "paper, 8xA100-40GB TP8"
# The ratios a reader compares across devices: the share of the no-attention ceiling Hydragen reaches,
# and its speedup over paged attention (vLLM in the paper).
RATIOS = (("hydragen", CEILING), ("hydragen", "paged"))


def arguments(description):
    """common.arguments for hydragen-decode files: CSV..., --out, --where."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("csv", nargs="+", help="hydragen-decode CSV files, concatenated")
    parser.add_argument("--out", required=True, help="PNG file to write")
    parser.add_argument("--where", action="append", default=[], metavar="COLUMN=VALUE[,VALUE...]",
                        help="keep only rows whose COLUMN is one of the values (repeatable), e.g. --where "
                             "model=codellama-13b; a condition on P keeps the no-attention rows (measured at one P "
                             "per B, they stand for every P)")
    return parser


def load(paths, value):
    """Rows of hydragen-decode CSVs with `value` (tokens_per_s, answer_ms) a float on ok rows and None on
    the others (their numbers are zeros: not measured)."""
    rows = common.load(paths, COLUMNS + (value,))
    for row in rows:
        where = f"row with mode {row['mode']}, B={row['B']}, P={row['P']}"
        for column in INT_COLUMNS:
            try:
                row[column] = int(row[column])
            except ValueError:
                raise common.InputError(f"{where}: {column} is '{row[column]}', not an integer") from None
        if row["mode"] not in MODES:
            raise common.InputError(f"{where}: unknown mode '{row['mode']}' (expected {', '.join(MODES)})")
        if row["status"] not in STATUSES:
            raise common.InputError(f"{where}: unknown status '{row['status']}' (expected {', '.join(STATUSES)})")
        if row["status"] != "ok":
            row[value] = None
            continue
        try:
            row[value] = float(row[value])
        except ValueError:
            raise common.InputError(f"{where}: {value} is '{row[value]}', not a number") from None
    return rows


def select(rows, where):
    """common.select, except that a condition on P keeps every no-attention row: hydragen-decode runs that
    mode at one P per B (it does not depend on P), so it stands for every P."""
    on_p = [w for w in where if w.partition("=")[0] == "P"]
    rows = common.select(rows, [w for w in where if w not in on_p])
    if not on_p:
        return rows
    attention = [r for r in rows if r["mode"] != CEILING]
    if not attention:
        raise common.InputError(f"no rows match --where {' '.join(where)}")
    return common.select(attention, on_p) + [r for r in rows if r["mode"] == CEILING]


def fixed_value(rows, column):
    """The one value of `column` over the attention modes' rows (the axis a figure does not draw)."""
    attention = [r for r in rows if r["mode"] != CEILING]
    if not attention:
        raise common.InputError(f"no rows of {', '.join(ATTENTION)}: nothing but the ceiling to draw")
    return common.single(attention, (column,))[column]


def one_backend_per_mode(rows):
    """{mode: backend}; a mode run with two backends would be two lines under one name."""
    backends = {}
    for row in rows:
        backends.setdefault(row["mode"], []).append(row["backend"])
    for mode, seen in backends.items():
        if len(set(seen)) > 1:
            raise common.InputError(f"mode {mode} has rows of backends {', '.join(sorted(set(seen)))}: keep one with "
                                    "--where backend=VALUE,... (one backend per mode)")
    return {mode: seen[0] for mode, seen in backends.items()}


def _point(row, value):
    return row[value], row["status"]


def lines(rows, x, fixed, value):
    """{mode: {x value: (value or None, status)}} at the fixed other axis. A later row of a mode at the same
    point replaces an earlier one. The ceiling, measured at one P per B, stands for every P: at each B its
    row at the fixed P when there is one, else the mean of its ok rows at that B (x = B), or the mean over
    its rows at the fixed B (x = P); either way only at the x values of the attention modes."""
    out = {}
    ceiling = {}
    for row in rows:
        if row["mode"] == CEILING:
            ceiling.setdefault(row["B"], {})[row["P"]] = row
        else:
            out.setdefault(row["mode"], {})[row[x]] = _point(row, value)

    def combined(by_p):
        if fixed in by_p and x == "B":
            return _point(by_p[fixed], value)
        ok = [r[value] for r in by_p.values() if r["status"] == "ok"]
        return (sum(ok) / len(ok), "ok") if ok else _point(list(by_p.values())[-1], value)

    xs = sorted({v for points in out.values() for v in points})
    if x == "B":
        here = {b: combined(by_p) for b, by_p in ceiling.items() if b in xs}
        if here:
            out[CEILING] = here
    elif fixed in ceiling:
        out[CEILING] = dict.fromkeys(xs, combined(ceiling[fixed]))
    return out


def ceiling_prefixes(rows, x, fixed):
    """The P values of the ceiling's rows that lines() uses (named in the legend when not just the fixed P)."""
    by_b, batches = {}, {r["B"] for r in rows if r["mode"] != CEILING}
    for row in rows:
        if row["mode"] == CEILING and (x == "P" or row["B"] in batches):
            by_b.setdefault(row["B"], set()).add(row["P"])
    if x == "P":
        return by_b.get(fixed, set())
    return set().union(*({fixed} if fixed in ps else ps for ps in by_b.values()))


def ceiling_note(rows, x, fixed):
    """The ceiling's legend note where its rows were run at other P than the plot's: " (run at P=...,
    stands for every P)", else ""."""
    measured = sorted(ceiling_prefixes(rows, x, fixed))
    if x == "P" or measured != [fixed]:
        return f" (run at P={', '.join(map(str, measured))}, stands for every P)"
    return ""


def ratios(drawn, pairs=RATIOS):
    """{(numerator, denominator): {x: numerator value / denominator value}} where both modes ran (ok)."""
    out = {}
    for num, den in pairs:
        a, b = drawn.get(num, {}), drawn.get(den, {})
        out[(num, den)] = {v: a[v][0] / b[v][0] for v in sorted(a.keys() & b.keys())
                           if a[v][1] == "ok" and b[v][1] == "ok"}
    return out


def shard_text(tp, gpus):
    """'TP 8 (one shard on 1 GPU)' for a one-shard run of a TP-8 model, 'TP 8 on 8 GPUs' for all of it."""
    if gpus >= tp:
        return f"TP {tp}" + (f" on {gpus} GPUs" if gpus > 1 else "")
    return f"TP {tp} ({'one shard' if gpus == 1 else f'{gpus} shards'} on {gpus} GPU{'s' if gpus > 1 else ''})"


def title_head(setting):
    """A decode figure's first title line: 'codellama-13b (40 layers), TP 8 (one shard on 1 GPU), DEVICE'."""
    return f"{setting['model']} ({setting['layers']} layers), {shard_text(setting['tp'], setting['gpus'])}, {setting['device']}"


def fixed_text(setting, other, fixed):
    """A decode figure's second title line up to its subject: 'B = 1024, 128 generated tokens per sequence'."""
    question = f", {setting['question_len']}-token question each" if setting["question_len"] else ""
    return f"{other} = {fixed}{question}, {setting['gen_tokens']} generated tokens per sequence"


def note_errors(script, rows):
    """Rows that failed otherwise than out of memory are left out of the figure and named on stderr."""
    failed = [r for r in rows if r["status"] == "error"]
    if failed:
        points = ", ".join(f"{r['mode']} B={r['B']} P={r['P']}" for r in failed[:6])
        print(f"{script}: note: {len(failed)} row(s) with status error not drawn ({points}"
              f"{', ...' if len(failed) > 6 else ''})", file=sys.stderr)


def size_axis(ax, values):
    """common.size_axis with a tick at every value up to 13 of them (fig3a's B = 1, 2, ..., 4096)."""
    values = sorted(set(values))
    common.size_axis(ax, values)
    if len(values) <= 13:
        ax.xaxis.set_major_locator(ticker.FixedLocator(values))
        ax.xaxis.set_minor_locator(ticker.NullLocator())


def mark_oom(ax, xs, color, row, thin=False):
    """The paper's "x" for a mode out of memory, in the mode's color, one row per mode at the panel's foot."""
    foot = blended_transform_factory(ax.transData, ax.transAxes)
    for v in xs:
        ax.plot(v, 0.04 + 0.055 * row, "x", color=color, ms=6 if thin else 9, mew=1 if thin else 2, transform=foot,
                clip_on=False, alpha=0.8 if thin else 1)


def log_y_axis(ax, sources, foot_rows):
    """A log y axis over the ok values of `sources` (each {line: {x: (y, status)}}), with room at the foot
    for `foot_rows` rows of "x" marks; refused when nothing ran."""
    values = [y for source in sources for points in source.values() for y, status in points.values() if status == "ok"]
    if not values:
        raise common.InputError("no ok rows to draw: every point ran out of memory or failed")
    ax.set_yscale("log")
    log_limits(ax, values, foot_rows)


def log_limits(ax, values, foot_rows):
    """Log y limits with the data in the upper part when `foot_rows` rows of "x" marks need the foot."""
    lo, hi = min(values), max(values) * 1.4
    if foot_rows:
        share = min(0.06 + 0.055 * foot_rows, 0.4)
        lo = lo / (hi / lo) ** (share / (1 - share))
    else:
        lo /= 1.4
    ax.set_ylim(lo, hi)


def load_paper(path, model, gen_tokens, x, fixed):
    """The paper's lines {mode: {x: (tokens/s or None, status)}} for the same model and generated tokens at
    the same fixed B or P; its no_attention (one value per batch) stands for every prefix length."""
    table = common.read_csv(path, PAPER_COLUMNS)
    same = [r for r in table if r["model"].lower() == model.lower() and r["gen_tokens"] == str(gen_tokens)]
    if not same:
        have = sorted({f"{r['model']} with {r['gen_tokens']} tokens" for r in table})
        raise common.InputError(f"{path}: no rows for {model} with {gen_tokens} generated tokens (it has: "
                                f"{', '.join(have)})")
    other = "prefix_len" if x == "B" else "batch"
    axis = "batch" if x == "B" else "prefix_len"
    wanted = {m: mode for mode, m in PAPER_METHODS.items()}
    attention = [r for r in same if r["method"] in wanted and r["method"] != "no_attention"]
    here = [r for r in attention if r[other] == str(fixed)]
    if not here:
        have = sorted({int(r[other]) for r in attention})
        raise common.InputError(f"{path}: {same[0]['model']} with {gen_tokens} tokens has no {other} {fixed} "
                                f"(it has {', '.join(map(str, have))}): pick one with --where "
                                f"{'P' if x == 'B' else 'B'}=VALUE")

    def point(r):
        return (None, "x") if r["ktps"] == "x" else (float(r["ktps"]) * 1000, "ok")

    out = {}
    for r in here:
        out.setdefault(wanted[r["method"]], {})[int(r[axis])] = point(r)
    ceiling = [r for r in same if r["method"] == "no_attention"]
    if x == "B":
        if ceiling:
            out[CEILING] = {int(r["batch"]): point(r) for r in ceiling}
    else:
        at_b = [r for r in ceiling if r["batch"] == str(fixed)]
        if at_b:
            out[CEILING] = dict.fromkeys(sorted({v for points in out.values() for v in points}), point(at_b[-1]))
    return out


def draw_lines(ax, drawn, paper=False, ceiling_marks=True):
    """One line per mode (the ceiling dashed, with marks where measured when `ceiling_marks`: at x = P it is
    one value drawn across), ok points only; returns the x values per mode out of memory."""
    oom = {}
    for mode in MODES:
        points = drawn.get(mode, {})
        ok = sorted((v, y) for v, (y, status) in points.items() if status == "ok")
        ceiling = mode == CEILING
        style = dict(color=COLORS[mode], ls="--" if ceiling else "-")
        if paper:
            style.update(lw=1, marker="o" if not ceiling else "", ms=5, mfc="none", alpha=0.85)
        else:
            style.update(lw=1.6 if ceiling else 2.2, marker=("." if ceiling_marks else "") if ceiling else "o", ms=5)
        if ok:
            ax.plot(*zip(*ok), **style)
        oom[mode] = sorted(v for v, (_, status) in points.items() if status == "x")
    return oom


def draw_oom(ax, ooms):
    """ooms: [(oom per mode, thin)]; one foot row per (source, mode) with any "x"; returns the rows used."""
    row = 0
    for oom, thin in ooms:
        for mode in MODES:
            if oom.get(mode):
                mark_oom(ax, oom[mode], COLORS[mode], row, thin)
                row += 1
    return row


def ratio_panel(ax, ours, paper):
    ratio_colors = {RATIOS[0]: COLORS[CEILING], RATIOS[1]: COLORS["paged"]}
    values = []
    for source, thin in ((ours, False), (paper, True)):
        for pair, points in ratios(source).items():
            if points:
                ax.plot(list(points), list(points.values()), color=ratio_colors[pair], marker="o", ms=5,
                        lw=1 if thin else 2.2, mfc="none" if thin else None, alpha=0.85 if thin else 1)
                values.extend(points.values())
    ax.axhline(1, color="black", lw=0.8, ls=":")
    if values:
        common.log_y(ax)
        ax.set_ylim(min(values + [1]) / 1.3, max(values + [1]) * 1.3)
    ax.set_ylabel("ratio of tokens/s")
    ax.grid(alpha=0.3)
    handles = [Line2D([], [], color=ratio_colors[RATIOS[0]], lw=2.2, marker="o"),
               Line2D([], [], color=ratio_colors[RATIOS[1]], lw=2.2, marker="o")]
    labels = ["hydragen / no-attention (share of the ceiling)", "hydragen / paged (paper: Hydragen / vLLM)"]
    ax.legend(handles, labels, fontsize=8, loc="best")


def main():
    parser = arguments(__doc__.splitlines()[0])
    parser.add_argument("--x", choices=("B", "P"),
                        help="x axis: B (Fig. 3a, rows at one P) or P (Fig. 3b, rows at one B); by default the "
                             "one that varies")
    parser.add_argument("--paper", metavar="PAPER_CSV",
                        help="the paper's Tables 1-6 (shared/paper_data/hydragen_e2e_tables.csv): its numbers for "
                             "the same model and generated tokens, and a panel of ratios ours vs the paper's")
    args = parser.parse_args()
    rows = select(load(args.csv, "tokens_per_s"), args.where)
    setting = common.single(rows, SETTING)
    attention = [r for r in rows if r["mode"] != CEILING]
    if not attention:
        raise common.InputError(f"no rows of {', '.join(ATTENTION)}: nothing but the ceiling to draw")
    x = args.x
    if x is None:
        batches, prefixes = {r["B"] for r in attention}, {r["P"] for r in attention}
        if len(batches) > 1 and len(prefixes) > 1:
            raise common.InputError(f"rows mix B values and P values ({len(batches)} and {len(prefixes)}): keep one "
                                    "with --where P=VALUE (x = B) or --where B=VALUE (x = P)")
        x = "P" if len(batches) == 1 and len(prefixes) > 1 else "B"
    other = "P" if x == "B" else "B"
    fixed = fixed_value(rows, other)
    if x == "P":  # the ceiling's rows too must be at this B (at x = B they stand for every P)
        rows = [r for r in rows if r["B"] == fixed]
    backends = one_backend_per_mode(rows)
    note_errors("decode_throughput.py", rows)
    ours = lines(rows, x, fixed, "tokens_per_s")
    paper = load_paper(args.paper, setting["model"], setting["gen_tokens"], x, fixed) if args.paper else None

    fig, axes = common.plt.subplots(2 if paper else 1, 1, squeeze=False, sharex=True, layout="constrained",
                                    figsize=(7.5, 7.6 if paper else 5.2),
                                    gridspec_kw={"height_ratios": [3, 2]} if paper else None)
    ax = axes[0][0]
    ooms = [(draw_lines(ax, ours, ceiling_marks=x == "B"), False)]
    if paper:
        ooms.append((draw_lines(ax, paper, paper=True), True))
    foot = draw_oom(ax, ooms)
    log_y_axis(ax, (ours, paper or {}), foot)
    xs = [v for source in (ours, paper or {}) for points in source.values() for v in points]
    size_axis(ax, xs)
    ax.set_ylabel("generated tokens/s")
    ax.grid(alpha=0.3)
    ax.grid(alpha=0.1, which="minor")
    if paper:
        ratio_panel(axes[1][0], ours, paper)
    axes[-1][0].set_xlabel("batch size B (sequences sharing the prefix)" if x == "B" else "prefix length P (tokens)")

    handles, labels = [], []
    for mode in MODES:
        if mode in ours or (paper and mode in paper):
            handles.append(Line2D([], [], color=COLORS[mode], lw=2.2, ls="--" if mode == CEILING else "-",
                                  marker="" if mode == CEILING else "o"))
            backend = f" ({backends[mode]})" if mode in backends and mode != CEILING else ""
            if mode == CEILING and mode in ours:
                backend = ceiling_note(rows, x, fixed)
            if mode in ours:
                labels.append(f"{mode}{backend}" + (f"; paper: {PAPER_NAMES[mode]}" if paper and mode in paper else ""))
            else:
                labels.append(f"{mode} (paper only: {PAPER_NAMES[mode]})")
    if paper:
        handles += [Line2D([], [], color="gray", lw=2.2, marker="o"),
                    Line2D([], [], color="gray", lw=1, marker="o", mfc="none")]
        labels += [f"ours: {setting['device']}", PAPER_LABEL]
    if foot:
        handles.append(common.oom_handle())
        labels.append("out of memory (not run), in the mode's color")
    common.legend_below(fig, handles, labels, ncol=2)
    common.save(fig, args.out, f"{title_head(setting)}\n{fixed_text(setting, other, fixed)}: decode throughput by "
                               f"{'batch size' if x == 'B' else 'prefix length'}")


if __name__ == "__main__":
    common.run(main)
