#!/usr/bin/env python3
"""Tensor-parallel scaling of hydragen-decode: step time per mode at each TP, and the speedup over TP 1.

    python3 plots/decode_tp.py docs/results/h200x2-tp-2026-11-25/fig3b-tp.csv --out out/fig3b-tp.png

The rows hold the same points at two or more tp values, TP 1 among them. Left: step_ms against B or P,
one color per mode, one line style per TP. Right: step_ms(TP 1) / step_ms(TP n) where both ran, the
all-reduces' share of the TP n step (allreduce_ms / step_ms: measured, the step's collectives replayed
alone) on a second axis, and the ideal speedup n. Prints one line per mode and TP n > 1 with the speedups,
their scaling efficiency (speedup / n) and the shares, then hydragen's speedup over paged at each TP.
"""
from matplotlib import ticker
from matplotlib.lines import Line2D

import common
import decode_throughput as decode

# Everything decode_throughput.py holds fixed except the TP and GPU count, which this figure compares.
SETTING = tuple(c for c in decode.SETTING if c not in ("tp", "gpus"))
# Per TP in increasing order: TP 1 solid, the next dashed, then dotted...; markers tell TPs apart on the
# speedup panel, where every line is solid.
STYLES = ("-", "--", ":", "-.", (0, (6, 2, 1, 2, 1, 2)))
MARKERS = ("o", "s", "^", "D", "v")


def load(paths):
    """decode.load with step_ms, plus allreduce_ms as a float on ok rows (None on the others)."""
    rows = decode.load(paths, "step_ms")
    for row in rows:
        if "allreduce_ms" not in row:
            raise common.InputError(f"missing column allreduce_ms in {', '.join(paths)}")
        try:
            row["allreduce_ms"] = float(row["allreduce_ms"]) if row["status"] == "ok" else None
        except ValueError:
            raise common.InputError(f"row with mode {row['mode']}, B={row['B']}, P={row['P']}: allreduce_ms is "
                                    f"'{row['allreduce_ms']}', not a number") from None
    return rows


def x_axis(rows, chosen):
    """--x, or the one of B and P that varies over the attention modes' rows."""
    if chosen:
        return chosen
    attention = [r for r in rows if r["mode"] != decode.CEILING]
    batches, prefixes = {r["B"] for r in attention}, {r["P"] for r in attention}
    if len(batches) > 1 and len(prefixes) > 1:
        raise common.InputError(f"rows vary both B and P ({len(batches)} and {len(prefixes)} values): keep one with "
                                "--where P=VALUE (x = B) or --where B=VALUE (x = P)")
    if len(batches) == 1 and len(prefixes) == 1:
        raise common.InputError(f"rows hold one B ({min(batches)}) and one P ({min(prefixes)}): nothing varies to "
                                "draw along x")
    return "B" if len(batches) > 1 else "P"


def scaling(steps, reduces, tps):
    """({(mode, n): {x: speedup}}, {(mode, n): {x: all-reduce share}}) for every TP n > 1 a mode ran at:
    step_ms(TP 1) / step_ms(TP n) where both are ok, allreduce_ms / step_ms wherever TP n is ok."""
    pairs = [(mode, n) for mode in decode.MODES for n in tps[1:] if (mode, n) in steps]
    both = {**steps, **{("all-reduces",) + key: points for key, points in reduces.items()}}
    speedups = decode.ratios(steps, [((mode, 1), (mode, n)) for mode, n in pairs])
    shares = decode.ratios(both, [(("all-reduces", mode, n), (mode, n)) for mode, n in pairs])
    return ({(mode, n): speedups[((mode, 1), (mode, n))] for mode, n in pairs},
            {(mode, n): shares[(("all-reduces", mode, n), (mode, n))] for mode, n in pairs})


def span(values, text):
    """'1.60x-1.78x' over the values as text() writes each, one value when all agree."""
    low, high = text(min(values)), text(max(values))
    return low if low == high else f"{low}-{high}"


def summary(mode, n, speedups, shares):
    """'hydragen TP 2: 1.68x-1.71x over TP 1 (scaling efficiency 84.0%-85.5%), all-reduces 9.2%-12.3% of the
    step' (one value when all agree); the efficiency is the speedup over n."""
    gain = (f"{span(speedups.values(), lambda v: f'{v:.2f}x')} over TP 1 (scaling efficiency "
            f"{span([v / n for v in speedups.values()], lambda v: f'{100 * v:.1f}%')})" if speedups else
            f"no point where TP 1 and TP {n} both ran")
    share = (f"all-reduces {span(shares.values(), lambda v: f'{100 * v:.1f}%')} of the step" if shares else
             f"no ok TP {n} row")
    return f"{mode} TP {n}: {gain}, {share}"


def over_paged(steps, tps):
    """'TP 2: hydragen 1.76x-3.89x over paged' per TP where both ran at a point."""
    lines = []
    for n in tps:
        gains = decode.ratios(steps, [(("paged", n), ("hydragen", n))])[(("paged", n), ("hydragen", n))]
        if gains:
            lines.append(f"TP {n}: hydragen {span(gains.values(), lambda v: f'{v:.2f}x')} over paged")
    return lines


def draw_steps(ax, steps, tps, x):
    """Left panel: one line per (mode, TP); the "x" of each (mode, TP) out of memory in a foot row of its
    own, labelled with the TP at the right edge. Returns the foot rows used."""
    foot = 0
    for mode in decode.MODES:
        for k, tp in enumerate(tps):
            points = steps.get((mode, tp), {})
            ok = sorted((v, ms) for v, (ms, status) in points.items() if status == "ok")
            if ok:  # the ceiling at x = P is one value drawn across, measured at one P: no marks
                ax.plot(*zip(*ok), color=decode.COLORS[mode], ls=STYLES[k], lw=2,
                        marker="" if mode == decode.CEILING and x == "P" else MARKERS[k], ms=5)
            oom = sorted(v for v, (_, status) in points.items() if status == "x")
            if oom:
                decode.mark_oom(ax, oom, decode.COLORS[mode], foot)
                ax.annotate(f"TP {tp}", (1, ax.lines[-1].get_ydata()[0]), xycoords="axes fraction", xytext=(4, 0),
                            textcoords="offset points", va="center", fontsize=7, color=decode.COLORS[mode],
                            annotation_clip=False)
                foot += 1
    return foot


def draw_scaling(ax, speedups, shares, tps, x):
    """Right panel: speedups (solid, left axis), all-reduce shares (thin dotted, right axis), ideal n (grey)."""
    share_ax = ax.twinx()
    for (mode, n), points in speedups.items():
        style = dict(color=decode.COLORS[mode],
                     marker="" if mode == decode.CEILING and x == "P" else MARKERS[tps.index(n)])
        if points:
            ax.plot(list(points), list(points.values()), lw=2, ms=5, **style)
        if shares[(mode, n)]:
            share_ax.plot(list(shares[(mode, n)]), [100 * v for v in shares[(mode, n)].values()], ls=":", lw=1.2,
                          ms=4, mfc="none", **style)
    for n in tps[1:]:
        ax.axhline(n, color="grey", lw=1.2, zorder=0)
        ax.annotate(f"ideal {n}x", (0, n), xycoords=("axes fraction", "data"), xytext=(3, 3),
                    textcoords="offset points", fontsize=7, color="grey")
    top = max([v for points in speedups.values() for v in points.values()] + [tps[-1]])
    ax.set_ylim(0, top * 1.15)
    ax.set_ylabel("speedup over TP 1: step_ms(TP 1) / step_ms(TP n) (solid)")
    ax.grid(alpha=0.3)
    highest = max([v for points in shares.values() for v in points.values()] + [0.1])
    # The shares in the lower 40%, under the speedups (above 1 / 1.15n of the height when TP n helps at all).
    share_ax.set_ylim(0, min(100, 100 * highest / 0.4))
    share_ax.yaxis.set_major_formatter(ticker.PercentFormatter(decimals=0))
    share_ax.set_ylabel("all-reduces' share of the TP n step (dotted)")


def main():
    parser = decode.arguments(__doc__.splitlines()[0])
    parser.add_argument("--x", choices=("B", "P"), help="x axis: batch size B or prefix length P (by default the one "
                                                        "that varies)")
    args = parser.parse_args()
    rows = decode.select(load(args.csv), args.where)
    setting = common.single(rows, SETTING)
    tps = sorted({r["tp"] for r in rows})
    if len(tps) < 2:
        raise common.InputError(f"needs rows at two or more tp values (all rows have tp {tps[0]})")
    if tps[0] != 1:
        raise common.InputError(f"needs rows at tp 1, the speedups' baseline (tp values present: "
                                f"{', '.join(map(str, tps))})")
    common.at_most(len(tps), len(STYLES), "tp values", "--where tp=VALUE,...")
    gpus = {tp: common.single([r for r in rows if r["tp"] == tp], ("gpus",))["gpus"] for tp in tps}
    x = x_axis(rows, args.x)
    other = "P" if x == "B" else "B"
    fixed = decode.fixed_value(rows, other)
    if x == "P":  # the ceiling's rows too must be at this B (at x = B they stand for every P)
        rows = [r for r in rows if r["B"] == fixed]
    backends = decode.one_backend_per_mode(rows)
    decode.note_errors("decode_tp.py", rows)
    steps, reduces = {}, {}
    for tp in tps:
        at_tp = [r for r in rows if r["tp"] == tp]
        for value, into in (("step_ms", steps), ("allreduce_ms", reduces)):
            for mode, points in decode.lines(at_tp, x, fixed, value).items():
                into[(mode, tp)] = points
    speedups, shares = scaling(steps, reduces, tps)

    fig, (left, right) = common.plt.subplots(1, 2, sharex=True, layout="constrained", figsize=(13, 5.2))
    foot = draw_steps(left, steps, tps, x)
    decode.log_y_axis(left, (steps,), foot)
    common.log_y(left)
    left.set_ylabel("decode step time (ms)")
    left.grid(alpha=0.3)
    left.grid(alpha=0.1, which="minor")
    draw_scaling(right, speedups, shares, tps, x)
    decode.size_axis(left, [v for points in steps.values() for v in points])
    for ax in (left, right):
        ax.set_xlabel("batch size B (sequences sharing the prefix)" if x == "B" else "prefix length P (tokens)")

    handles, labels = [], []
    for mode in decode.MODES:
        if any((mode, tp) in steps for tp in tps):
            handles.append(Line2D([], [], color=decode.COLORS[mode], lw=2.2))
            labels.append(mode + (f" ({backends[mode]})" if mode != decode.CEILING else decode.ceiling_note(rows, x, fixed)))
    for k, tp in enumerate(tps):
        handles.append(Line2D([], [], color="grey", lw=2, ls=STYLES[k], marker=MARKERS[k], ms=5))
        labels.append(decode.shard_text(tp, gpus[tp]))
    handles += [Line2D([], [], color="grey", lw=2), Line2D([], [], color="grey", lw=1.2, ls=":", marker="o", ms=4,
                                                           mfc="none")]
    labels += ["right: speedup over TP 1 (left axis; grey line: ideal)",
               "right: all-reduces' share of the TP n step (right axis)"]
    if foot:
        handles.append(common.oom_handle())
        labels.append("out of memory (not run), in the mode's color, TP at the right")
    common.legend_below(fig, handles, labels, ncol=3)
    common.save(fig, args.out, f"{setting['model']} ({setting['layers']} layers), {setting['device']}\n"
                               f"{decode.fixed_text(setting, other, fixed)}: decode step time at TP {', '.join(map(str, tps))}")
    for mode, n in speedups:
        print(summary(mode, n, speedups[(mode, n)], shares[(mode, n)]))
    for line in over_paged(steps, tps):
        print(line)


if __name__ == "__main__":
    common.run(main)
