#!/usr/bin/env python3
"""Summarizes one kernel's SASS-level source page from Nsight Compute
(`ncu -i REPORT --page source --csv --print-source sass`, a profile taken with the SourceCounters
section, e.g. `--set full`): the executed instructions by opcode, per unit of work when --per gives the
count of units (warps x tiles: the instructions one warp issues per tile), with the warp-stall samples
at each; the stall samples by reason; the samples by loop body (the instructions executed equally
often: a body's instructions a pass, its share of the samples and its top reasons); and shared memory's
wavefronts against their ideal by opcode (bank conflicts). perf-notes v51 read a leaf warp's 329
instructions a tile from it; v58 split a kernel's samples between its prefix step and its leaf tile.
Usage: ncu-source-summary.py SOURCE_CSV [--per N] [--top K]"""
import argparse
import collections
import csv
import re
import sys


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def opcode(source):
    """The opcode of a SASS line with its predicate stripped: '@!P0 BRA 0x..' -> 'BRA'."""
    words = re.sub(r"^@!?U?P\w+\s+", "", source.strip()).split()
    return words[0] if words else "?"


def read(path):
    with open(path, newline="") as f:
        lines = f.read().splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"Address"')), None)
    if start is None:
        sys.exit(f"ncu-source-summary.py: {path} has no source page header (\"Address\",...): export it with "
                 "ncu -i REPORT --page source --csv --print-source sass")
    rows = list(csv.DictReader(lines[start:]))
    for column in ("Source", "Instructions Executed", "Warp Stall Sampling (All Samples)"):
        if rows and column not in rows[0]:
            sys.exit(f"ncu-source-summary.py: {path} has no column '{column}': profile with the SourceCounters section")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source_csv")
    parser.add_argument("--per", type=float, default=1.0, help="divide instruction counts by this (e.g. warps x tiles)")
    parser.add_argument("--top", type=int, default=25, help="opcodes to list")
    args = parser.parse_args()
    if args.per <= 0:
        sys.exit("ncu-source-summary.py: --per must be positive")
    rows = read(args.source_csv)

    executed, samples = collections.Counter(), collections.Counter()
    wavefronts, ideal = collections.Counter(), collections.Counter()
    for r in rows:
        op = opcode(r["Source"])
        executed[op] += number(r["Instructions Executed"])
        samples[op] += number(r["Warp Stall Sampling (All Samples)"])
        wavefronts[op] += number(r.get("L1 Wavefronts Shared", "0"))
        ideal[op] += number(r.get("L1 Wavefronts Shared Ideal", "0"))
    total = sum(executed.values())
    unit = "" if args.per == 1 else f" per unit (/{args.per:g})"
    print(f"executed instructions{unit}: {total / args.per:.1f}")
    print(f"{'opcode':32s}{'executed':>12s}{'share':>8s}{'stall samples':>15s}")
    for op, n in executed.most_common(args.top):
        print(f"{op:32s}{n / args.per:12.1f}{100 * n / total:7.1f}%{samples[op]:15.0f}")

    reasons = [k for k in rows[0] if k.startswith("stall_") and "Not Issued" not in k] if rows else []
    by_reason = {k[len("stall_"):]: sum(number(r[k]) for r in rows) for k in reasons}
    sampled = sum(by_reason.values())
    if sampled:
        print(f"\nwarp-stall samples by reason ({sampled:.0f} samples):")
        for reason, n in sorted(by_reason.items(), key=lambda kv: -kv[1]):
            if n:
                print(f"  {reason:24s}{n:8.0f}{100 * n / sampled:7.1f}%")

        # Loop bodies: instructions that ran equally often (e.g. warps x tiles) are one body's, unrolled.
        body_samples, body_reasons, body_size = collections.Counter(), {}, collections.Counter()
        for r in rows:
            count = number(r["Instructions Executed"])
            if not count:
                continue
            body_size[count] += 1
            body_samples[count] += number(r["Warp Stall Sampling (All Samples)"])
            reasons_here = body_reasons.setdefault(count, collections.Counter())
            for k in reasons:
                reasons_here[k[len("stall_"):]] += number(r[k])
        total_samples = sum(body_samples.values())
        print(f"\nwarp-stall samples by loop body (instructions executed equally often), top {args.top}:")
        for count, n in body_samples.most_common(args.top):
            top = ", ".join(f"{k} {v:.0f}" for k, v in body_reasons[count].most_common(3) if v)
            print(f"  executed {count:12.0f}: {body_size[count]:6d} instructions, {n:8.0f} samples "
                  f"{100 * n / total_samples:5.1f}%  {top}")

    if sum(wavefronts.values()):
        print(f"\nshared-memory wavefronts: {sum(wavefronts.values()):.0f}, ideal {sum(ideal.values()):.0f}")
        for op in sorted(wavefronts, key=lambda o: -wavefronts[o]):
            if wavefronts[op]:
                excess = wavefronts[op] / ideal[op] if ideal[op] else float("inf")
                print(f"  {op:32s}{wavefronts[op]:12.0f}  ideal {ideal[op]:12.0f}  x{excess:.2f}")


if __name__ == "__main__":
    main()
