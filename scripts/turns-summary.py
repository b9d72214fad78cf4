#!/usr/bin/env python3
"""EXPERIMENT (perf-notes v43), usage: scripts/turns-summary.py TURNS.txt ... (the sweep's stderr). Summarizes the turns build's stamps (perf-notes v43): block 0's two consumer warpgroups, %clock at 8
points of each step. Per launch: medians over the steady steps of each phase, in cycles, and the step's
period. Phases: tiles (waiting for the step's K/V), turn (waiting for the other warpgroup's arrive),
issue (S = Q K^T, O's rescale and P V issued, until the arrive), S (S's wait), softmax, PV (P V's wait),
convert (P to 16 bits)."""
import re, statistics as st, sys

NAMES = ["tiles", "turn", "issue", "S", "softmax", "PV", "convert"]

def launches(path):
    rows = []
    for line in open(path):
        if line.startswith("turn "):
            rows.append([int(x) for x in line.split()[1:]])
            continue
        m = re.search(r"\] (\S+) B=(\d+) P=(\d+) S=(\d+): ([0-9.]+) ms", line)
        if m and rows:
            yield m.group(0)[2:], rows
            rows = []

def summarize(rows):
    steps = {(wg, i): s for wg, i, *s in rows}
    # the last step issues no S: its S stamps are older than its issue (entries past it: an earlier launch)
    n = min(i for (wg, i), s in steps.items() if i > 0 and (s[4] < s[3] or s[4] == s[5]))
    ph = {k: [] for k in NAMES + ["step"]}
    for (wg, i), s in steps.items():
        if 2 <= i < n - 1:
            for k, name in enumerate(NAMES):
                ph[name].append(s[k + 1] - s[k])
            ph["step"].append(steps[(wg, i + 1)][0] - s[0])
    return n, {k: st.median(v) for k, v in ph.items()}

for path in sys.argv[1:]:
    for name, rows in launches(path):
        n, med = summarize(rows)
        print(f"{name}: {n} steps; median cycles: " + ", ".join(f"{k} {v:.0f}" for k, v in med.items()))
