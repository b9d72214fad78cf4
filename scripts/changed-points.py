#!/usr/bin/env python3
"""The preset points whose plan a planner change moves, as hydragen-sweep arguments: what an in-call A/B
of the change must time (issue 39: nothing slower than before by more than 2% at any preset point),
without timing every preset (a whole-preset A/B of two builds runs past the device's 10-minute call).

Compares two versions of the planner's golden table (tests/planner/plan_decisions.golden: one line per
backend, point and device). By default the table at --base (a git revision, HEAD) against the working
tree's, rewritten with HYDRAGEN_WRITE_GOLDEN=1; or two files. Prints one hydragen-sweep argument line per
group of points (the same B and head layout: its P and S values; a line per P where the group's points do
not fill the product, so that no point is timed that did not move), then the harness cases whose plans
moved (no sweep point; test_backends runs them).

    scripts/changed-points.py [--base REV] [--backend cuda-hydragen] [--device H100]
    scripts/changed-points.py OLD.golden NEW.golden
"""
import argparse
import collections
import re
import signal
import subprocess
import sys

GOLDEN = "tests/planner/plan_decisions.golden"
POINT = re.compile(r"^(?P<preset>\S+) (?P<dtype>\w+) B(?P<B>\d+) P(?P<P>\d+) S(?P<S>\d+) q(?P<q>\d+) "
                   r"Hq(?P<Hq>\d+) Hkv(?P<Hkv>\d+) D(?P<D>\d+) (?P<tree>\S+)$")


def decisions(text, backend, device):
    """{point text: its decisions} for one backend on one device."""
    out = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = [p.strip() for p in line.split("|")]
        if len(parts) != 3 or "=>" not in parts[2]:
            raise ValueError(f"golden line {number} is not 'backend | point | device => decisions': {line!r}")
        name, point, rest = parts
        dev, _, decided = rest.partition("=>")
        if name == backend and dev.strip() == device:
            out[point] = decided.strip()
    return out


def sweep_lines(points):
    """hydragen-sweep arguments for exactly `points` (matches of POINT), grouped by B and head layout: one
    line where a group's (P, S) fill their product, else a line per P."""
    groups = collections.defaultdict(set)
    for m in points:
        key = (int(m["B"]), m["dtype"], int(m["q"]), int(m["Hq"]), int(m["Hkv"]), int(m["D"]), m["tree"])
        groups[key].add((int(m["P"]), int(m["S"])))
    join = lambda values: ",".join(str(v) for v in sorted(values))  # noqa: E731
    lines = []
    for (B, dtype, q, hq, hkv, d, tree), ps_ss in sorted(groups.items()):
        ps = {p for p, _ in ps_ss}
        ss = {s for _, s in ps_ss}
        cuts = [(ps, ss)] if len(ps_ss) == len(ps) * len(ss) else [({p}, {s for prefix, s in ps_ss if prefix == p}) for p in sorted(ps)]
        for cut_ps, cut_ss in cuts:
            line = (f"--dtype {dtype} --batch {B} --prefix {join(cut_ps)} --suffix {join(cut_ss)} --q-len {q} "
                    f"--q-heads {hq} --kv-heads {hkv} --head-dim {d}")
            lines.append(line + ("" if tree == "prefix" else f" --tree {tree}"))
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("tables", nargs="*", help="OLD NEW golden files (default: --base's table against the working tree's)")
    ap.add_argument("--base", default="HEAD", help="git revision whose golden table is the old one (default HEAD)")
    ap.add_argument("--backend", default="cuda-hydragen", help="the table's backend column, options included (default cuda-hydragen)")
    ap.add_argument("--device", default="H100", help="the table's device column (default H100)")
    args = ap.parse_args()
    if len(args.tables) not in (0, 2):
        ap.error("give two golden files (OLD NEW) or none")
    try:
        if args.tables:
            old_text, new_text = (open(path).read() for path in args.tables)
        else:
            old_text = subprocess.run(["git", "show", f"{args.base}:{GOLDEN}"], check=True, capture_output=True, text=True).stdout
            new_text = open(GOLDEN).read()
        old, new = decisions(old_text, args.backend, args.device), decisions(new_text, args.backend, args.device)
    except (OSError, subprocess.CalledProcessError, ValueError) as e:
        sys.exit(f"changed-points.py: {getattr(e, 'stderr', '') or e}")
    if not new:
        sys.exit(f"changed-points.py: no line for backend {args.backend!r} on device {args.device!r}")
    changed = sorted(p for p in new if p in old and old[p] != new[p])
    moved = [POINT.match(p) for p in changed]
    harness = [p for p, m in zip(changed, moved) if m is None]
    points = [m for m in moved if m is not None]
    presets = collections.Counter(m["preset"] for m in points)
    distinct = {m.group(0).split(" ", 1)[1] for m in points}  # a point in two presets (grid, paper-fig4) once
    print(f"# {len(distinct)} points of {args.backend} on {args.device} change plans"
          + (" (" + ", ".join(f"{p} {n}" for p, n in sorted(presets.items())) + ")" if points else ""))
    for line in sweep_lines(points):
        print(line)
    for p in harness:
        print(f"# also: {p}")
    added = len(set(new) - set(old))
    if added or len(set(old) - set(new)):
        print(f"# {added} points only in the new table, {len(set(old) - set(new))} only in the old")


if __name__ == "__main__":
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `| head` ends the listing quietly
    main()
