#!/usr/bin/env python3
"""The all-reduce's bus bandwidth by message size (hydragen-allreduce, all_reduce_perf's loop), with the
decoder's measured all-reduces (hydragen-decode's allreduce_busbw_gbps) placed at their message size.

    python3 plots/allreduce.py docs/results/h200x4-tp-2026-11-26/allreduce-*.csv \\
        --decode docs/results/h200x4-tp-2026-11-26/codellama-34b-tp.csv --out out/allreduce.png

One line per rank count. A decoder row's step sends 2 sums of [B, hidden] per layer and one max of B
argmax keys (8 bytes each, under 0.2% of a sum): its message is the step's bytes (busbw x time x n /
(2 (n - 1))) over 2 x layers. Prints each
line's peak and, per decoder point (model, TP, B), its bus bandwidth against the loop's at that size
(interpolated in log size between the two sizes around it), so a reader sees whether the decoder gets what
the interconnect gives at its message size.
"""
import argparse
import math
import os

import common
from common import plt

LOOP_COLUMNS = ("device", "gpus", "bytes", "busbw_gbps")
DECODE_COLUMNS = ("device", "model", "layers", "gpus", "B", "status", "allreduce_ms", "allreduce_busbw_gbps")
COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")
MARKERS = ("o", "s", "^", "D", "v")


def read(path, columns):
    """Rows of one CSV as dicts of strings (common.read_csv), at least one."""
    rows = common.read_csv(path, columns)
    if not rows:
        raise common.InputError(f"no data rows in {path}")
    return rows


def number(row, column, path, kind=float):
    try:
        return kind(row[column])
    except ValueError:
        raise common.InputError(f"{path}: {column} is '{row[column]}', not a number") from None


def loops(paths):
    """{gpus: [(bytes, busbw_gbps), ...] by size}, and the devices they ran on."""
    curves, devices = {}, set()
    for path in paths:
        for row in read(path, LOOP_COLUMNS):
            gpus = number(row, "gpus", path, int)
            curves.setdefault(gpus, []).append((number(row, "bytes", path, int), number(row, "busbw_gbps", path)))
            devices.add(row["device"])
    for gpus, points in curves.items():
        sizes = [b for b, _ in points]
        if len(set(sizes)) != len(sizes):
            raise common.InputError(f"{gpus} GPUs: a message size appears twice (give each rank count's CSV once)")
        points.sort()
    return curves, devices


def decode_points(paths):
    """{(model, gpus, B): (bytes per sum, busbw_gbps)} over the ok rows run on several GPUs (the
    modes of a point send the same messages: the median of their bandwidths), and their devices."""
    found, devices = {}, set()
    for path in paths:
        for row in read(path, DECODE_COLUMNS):
            gpus = number(row, "gpus", path, int)
            if row["status"] != "ok" or gpus < 2:
                continue
            ms, busbw = number(row, "allreduce_ms", path), number(row, "allreduce_busbw_gbps", path)
            step_bytes = busbw * 1e9 * ms / 1e3 * gpus / (2 * (gpus - 1))
            sums = 2 * number(row, "layers", path, int)
            key = (row["model"], gpus, number(row, "B", path, int))
            found.setdefault(key, []).append((step_bytes / sums, busbw))
            devices.add(row["device"])
    if paths and not found:
        raise common.InputError(f"no ok rows on several GPUs in {', '.join(paths)}")
    points = {}
    for key, values in found.items():
        values.sort(key=lambda v: v[1])
        points[key] = values[len(values) // 2]
    return points, devices


def at_size(curve, size):
    """The loop's bus bandwidth at `size` bytes, linear in log size between its neighbours (None outside)."""
    for (b0, w0), (b1, w1) in zip(curve, curve[1:]):
        if b0 <= size <= b1:
            t = (math.log(size) - math.log(b0)) / (math.log(b1) - math.log(b0)) if b1 > b0 else 0
            return w0 + t * (w1 - w0)
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("csv", nargs="+", help="hydragen-allreduce CSV files (one per rank count)")
    parser.add_argument("--decode", nargs="+", default=[], help="hydragen-decode CSV files run with --gpus")
    parser.add_argument("--out", required=True, help="PNG file to write")
    args = parser.parse_args()
    curves, devices = loops(args.csv)
    points, decode_devices = decode_points(args.decode)
    fig, ax = plt.subplots(figsize=(9, 5.5))
    for i, gpus in enumerate(sorted(curves)):
        sizes, bandwidths = zip(*curves[gpus])
        ax.plot(sizes, bandwidths, "-", color=COLORS[i % len(COLORS)], label=f"hydragen-allreduce, {gpus} GPUs")
        peak = max(curves[gpus], key=lambda p: p[1])
        print(f"{gpus} GPUs: peak bus bandwidth {peak[1]:.1f} GB/s at {peak[0]} bytes")
    models = sorted({model for model, _, _ in points})
    order = sorted(curves)
    for (model, gpus, batch), (size, busbw) in sorted(points.items()):
        color = COLORS[order.index(gpus) % len(COLORS)] if gpus in curves else "black"
        ax.plot([size], [busbw], MARKERS[models.index(model) % len(MARKERS)], color=color, markersize=8,
                markeredgecolor="black", label=f"hydragen-decode {model}, TP {gpus}")
        loop = at_size(curves[gpus], size) if gpus in curves else None
        against = f", the loop at that size {loop:.1f} GB/s ({busbw / loop:.2f}x)" if loop else ", no loop at that size"
        print(f"{model} TP {gpus}, B {batch}: {size / 1e6:.2f} MB a message, {busbw:.1f} GB/s{against}")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)")
    ax.set_ylabel("bus bandwidth (GB/s): 2 (n - 1) / n x bytes / time")
    ax.grid(True, which="major", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    unique = dict(zip(labels, handles))
    ax.legend(unique.values(), unique.keys(), loc="upper left", fontsize=8)
    where = ", ".join(sorted(devices | decode_devices))
    common.save(fig, args.out, f"All-reduce (sum) bus bandwidth by message size\n{where}")
    print(f"wrote {os.path.abspath(args.out)}")


if __name__ == "__main__":
    common.run(main)
