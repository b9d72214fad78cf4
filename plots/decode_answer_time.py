#!/usr/bin/env python3
"""Time to answer B questions about one shared document, per mode: the Hydragen paper's Figure 5.

    build/experiments/hydragen-decode --preset fig5 --csv out/fig5.csv
    python3 plots/decode_answer_time.py out/fig5.csv --out out/fig5.png

answer_ms is hydragen-decode's time from the questions' step to the last answer token (the prefix's
prefill excluded). Above the axes: hydragen's answer time over the no-attention ceiling's at each B (and
the largest), and how many questions hydragen answers in the time flash takes for 64 (--flash-at).
"""
import textwrap

from matplotlib.lines import Line2D

import common
import decode_throughput as decode


def answer_ratios(drawn):
    """{B: hydragen answer time / no-attention answer time} where both ran."""
    return decode.ratios(drawn, (("hydragen", decode.CEILING),))[("hydragen", decode.CEILING)]


def equal_time_questions(points, budget):
    """How many questions hydragen answers within `budget` ms, from its measured (B, ms) points: walking up
    B, between the last point within the budget and the first over it, interpolated linearly in B and time
    (a step's time is close to affine in B between neighbouring points). Returns ('=', N); ('>=', largest
    B) when every point is within the budget (no extrapolation); ('<', smallest B) when none is; None
    without points."""
    points = sorted(points)
    if not points:
        return None
    if points[0][1] > budget:
        return "<", points[0][0]
    for (b0, t0), (b1, t1) in zip(points, points[1:]):
        if t1 > budget:
            return "=", b0 + (budget - t0) / (t1 - t0) * (b1 - b0)
    return ">=", points[-1][0]


def flash_sentence(drawn, flash_at=64):
    """'hydragen answers N questions in the time flash takes for 64 (T ms)', or the reason it is n/a."""
    head = f"hydragen answers N questions in the time flash takes for {flash_at}"
    flash = drawn.get("flash", {}).get(flash_at)
    hydragen = [(b, ms) for b, (ms, status) in drawn.get("hydragen", {}).items() if status == "ok"]
    if flash is None or flash[1] != "ok" or not hydragen:
        why = ("flash has no row at B={}".format(flash_at) if flash is None else
               f"flash {'out of memory' if flash[1] == 'x' else 'failed'} at B={flash_at}" if flash[1] != "ok" else
               "no hydragen row ran")
        return f"{head}: n/a ({why})"
    relation, n = equal_time_questions(hydragen, flash[0])
    count = {"=": f"{n:.0f}", ">=": f"at least {n} (the most measured)", "<": f"fewer than {n} (the fewest measured)"}
    return (f"hydragen answers {count[relation]} questions in the time flash takes for {flash_at} "
            f"({flash[0]:.4g} ms)")


def ratio_sentence(drawn):
    """'answer time hydragen / no-attention: B=1: 1.07, 2: ...; largest 1.23 at B=1024', or n/a."""
    by_b = answer_ratios(drawn)
    if not by_b:
        return "answer time hydragen / no-attention: n/a (no B where both ran)"
    top = max(by_b, key=by_b.get)
    each = ", ".join(f"{b}: {r:.2f}" for b, r in by_b.items())
    return f"answer time hydragen / no-attention at each B: {each}; largest {by_b[top]:.2f} at B={top}"


def main():
    parser = decode.arguments(__doc__.splitlines()[0])
    parser.add_argument("--flash-at", type=int, default=64, metavar="B",
                        help="the number of questions flash answers in the comparison above the axes (default 64)")
    args = parser.parse_args()
    rows = decode.select(decode.load(args.csv, "answer_ms"), args.where)
    setting = common.single(rows, decode.SETTING)
    prefix = decode.fixed_value(rows, "P")
    backends = decode.one_backend_per_mode(rows)
    decode.note_errors("decode_answer_time.py", rows)
    drawn = decode.lines(rows, "B", prefix, "answer_ms")

    fig, ax = common.plt.subplots(layout="constrained", figsize=(7.5, 5.2))
    oom = decode.draw_lines(ax, drawn)
    foot = decode.draw_oom(ax, [(oom, False)])
    decode.log_y_axis(ax, (drawn,), foot)
    common.log_y(ax)
    ax.set_xscale("log", base=2)
    decode.size_axis(ax, [b for points in drawn.values() for b in points])
    ax.set_xlabel("number of questions B (sequences sharing the document)")
    ax.set_ylabel("time to answer (ms), prefix excluded")
    ax.grid(alpha=0.3)
    ax.grid(alpha=0.1, which="minor")

    handles, labels = [], []
    for mode in decode.MODES:
        if mode in drawn:
            handles.append(Line2D([], [], color=decode.COLORS[mode], lw=2.2, ls="--" if mode == decode.CEILING else "-",
                                  marker="." if mode == decode.CEILING else "o"))
            labels.append(mode + (f" ({backends[mode]})" if mode != decode.CEILING else ""))
    if foot:
        handles.append(common.oom_handle())
        labels.append("does not fit in memory (not run), in the mode's color")
    common.legend_below(fig, handles, labels, ncol=3)
    summary = textwrap.wrap(ratio_sentence(drawn), 115) + textwrap.wrap(flash_sentence(drawn, args.flash_at), 115)
    ax.set_title("\n".join(summary), fontsize=8)
    question = f"{setting['question_len']}-token questions, " if setting["question_len"] else ""
    common.save(fig, args.out,
                f"{decode.title_head(setting)}\n"
                f"P = {prefix}-token document, {question}{setting['gen_tokens']} answer tokens each: "
                "time to answer B questions")


if __name__ == "__main__":
    common.run(main)
