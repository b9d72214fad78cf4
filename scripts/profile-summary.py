#!/usr/bin/env python3
"""Summarizes the raw CSV pages of `ncu --csv --page raw` (scripts/device-check profile): one line
per kernel launch with its time, clock, executed instructions, DRAM throughput, occupancy, issue and
tensor activity, and the stall reasons that cost most (warps stalled per issued instruction)."""
import csv
import sys

SHORT = {
    "gpu__time_duration.sum": "us",
    "sm__cycles_elapsed.avg.per_second": "GHz",
    "launch__grid_size": "grid",
    "launch__registers_per_thread": "regs",
    "smsp__inst_executed.sum": "M inst",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram%",
    "dram__bytes_read.sum": "MB read",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occ%",
    "smsp__issue_active.avg.pct_of_peak_sustained_active": "issue%",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": "tensor%",
}
SCALE = {"us": 1e-3, "GHz": 1e-9, "MB read": 1e-6, "M inst": 1e-6}  # ncu's base units: ns, Hz, bytes


def main(paths):
    for path in paths:
        with open(path, newline="") as f:
            rows = [r for r in csv.reader(f) if r]
        start = next((i for i, r in enumerate(rows) if r[0] == "ID"), None)
        if start is None:
            print(f"{path}: no ncu rows (see the .log beside it)")
            continue
        header = rows[start]  # then a row of units, then one row per kernel launch
        try:
            with open(path[: -len(".csv")] + ".log") as log:
                label = log.readline().strip()
        except OSError:
            label = path
        print(f"== {label}")
        for r in rows[start + 2:]:
            values = dict(zip(header, r))
            name = values.get("Kernel Name", "?").split("(")[0]
            parts = [name]
            for metric, short in SHORT.items():
                if metric in values and values[metric]:
                    v = float(values[metric].replace(",", "")) * SCALE.get(short, 1)
                    parts.append(f"{short} {v:.3g}")
            stalls = sorted(((float(v.replace(",", "") or 0), k) for k, v in values.items() if "issue_stalled" in k),
                            reverse=True)
            parts.append("stalls " + " ".join(
                f"{k.split('stalled_')[1].split('_per_')[0]} {v:.2f}" for v, k in stalls[:3]))
            print("  " + ", ".join(parts))


if __name__ == "__main__":
    main(sys.argv[1:])
