#!/usr/bin/env python3
"""Times other libraries' shared-prefix attention at hydragen-sweep's points, by its protocol, into its CSV schema.

  torch-flash          (redundant) torch's flash attention, every sequence owning a copy of the prefix
  torch-hydragen       (shared)    the paper's PyTorch formulation of Hydragen (Appendix B)
  flashinfer-cascade   (shared)    FlashInfer's cascade wrapper, a level per level of the sharing tree
  flashinfer-paged     (shared)    FlashInfer's paged decode, the shared pages in every page table
  flashinfer-paged-tc  (shared)    the same through FlashInfer's tensor-core kernels
  flashinfer-prefix-fa3 (shared)   Hydragen's step in FlashInfer: a prefill of the stacked queries over the
  flashinfer-prefix-fa2            prefix (FA3's or FA2's kernels), one over each group's tokens on a tree;
                                   at S > 0 + suffix decode; merge_state

Each method's output is judged by hydragen-diff --npy-dir (the fp64 reference, our tolerance rule) before
it is timed; --ours adds our backends' rows, measured by hydragen-sweep at each point just before the peers,
so that one run (one CSV) holds both sides of every comparison.

Timing follows DESIGN.md section 6: eager warm-up, a CUDA graph of one call, L2 written then read back
before each replay outside the timed region, CUDA events around each replay, median/min/max. Run on a
GPU machine; `--help` and `--points` work anywhere (torch is imported after the arguments are parsed).
"""
import argparse
import os
import subprocess
import sys
import tempfile

import harness
import npy_check
import trees

PROG = "peers.py"
METHOD_NAMES = ("torch-flash", "torch-hydragen", "flashinfer-cascade", "flashinfer-paged", "flashinfer-paged-tc",
                "flashinfer-prefix-fa3", "flashinfer-prefix-fa2")
DEFAULTS = dict(batch=[32], prefix=[1024], suffix=[64], q_len=[1], q_heads=8, kv_heads=1, head_dim=128,
                tree=["prefix"])


class UsageError(Exception):
    pass


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line and exit 2, not argparse's usage block
        raise UsageError(message)


def int_list(text):
    try:
        values = [int(v) for v in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got '{text}'")
    if any(v < 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected non-negative integers, got '{text}'")
    return values


def tree_list(text):
    """--tree's comma list, each tree as the sweep writes it (trees.tree_text), so a CSV's tree column and
    --points match hydragen-sweep's for the same text."""
    try:
        return [trees.tree_text(trees.parse_tree(t)) for t in text.split(",")]
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e))


def parse_args(argv):
    presets = "; ".join(f"{n}: {d}" for n, (d, _) in harness.PRESETS.items())
    p = Parser(prog=PROG, description=__doc__.split("\n\n")[0],
               epilog=f"Presets (hydragen-sweep's, bf16): {presets}. A preset or explicit lists, not both, as in "
                      f"hydragen-sweep; without either: B=32 P=1024 S=64 q_len=1 Hq=8 Hkv=1 D=128, tree prefix.")
    p.add_argument("--preset", choices=list(harness.PRESETS), help="a named grid of hydragen-sweep's")
    p.add_argument("--batch", type=int_list, help="batch sizes B, comma separated")
    p.add_argument("--prefix", type=int_list, help="shared prefix lengths P")
    p.add_argument("--suffix", type=int_list, help="suffix lengths S (every sequence)")
    p.add_argument("--q-len", type=int_list, help="queries per sequence (causal within the suffix)")
    p.add_argument("--q-heads", type=int, help="query heads Hq")
    p.add_argument("--kv-heads", type=int, help="key/value heads Hkv")
    p.add_argument("--head-dim", type=int, help="head dimension D")
    p.add_argument("--tree", type=tree_list, help="sharing trees, comma separated, in hydragen-sweep's grammar "
                   "(docs/tools.md#trees): prefix (default), NxL levels outermost first (16x1024, 4x1024/4x256, "
                   "8x300-800), copy:LEVELS; B a multiple of the groups")
    p.add_argument("--dtype", choices=["bf16", "fp16"], default="bf16")
    p.add_argument("--replays", type=int, default=50, help="timed graph replays per point (median reported)")
    p.add_argument("--methods", default=",".join(METHOD_NAMES), help="comma separated (default: all): " +
                   ", ".join(METHOD_NAMES) + "; a library not installed gives rows marked unsupported")
    p.add_argument("--seed", type=int, default=0, help="seed of the N(0,1) inputs")
    p.add_argument("--diff", default=os.environ.get("HYDRAGEN_DIFF"),
                   help="the hydragen-diff that judges each output (default: $HYDRAGEN_DIFF)")
    p.add_argument("--check-seqs", type=int, default=0,
                   help="sequences checked per point, spread over the batch (default 0: every one)")
    p.add_argument("--no-check", action="store_true", help="time without judging the outputs")
    p.add_argument("--ours", help="a hydragen-sweep binary: our backends' rows at each point, in the same CSV")
    p.add_argument("--ours-backends", default="cuda-hydragen", help="--backends for --ours (default cuda-hydragen)")
    p.add_argument("--commit", help="commit column (default: git rev-parse --short HEAD, else unknown); "
                                    "the device machine's copy of the tree has no .git")
    p.add_argument("--csv", help="write the CSV here (default: stdout)")
    p.add_argument("--resume", action="store_true",
                   help="with --csv: keep FILE's rows, skip the points it holds whole (every method's row and "
                        "--ours's, from this GPU at this commit), measure the rest (a point begun is measured again)")
    p.add_argument("--points", action="store_true",
                   help="print the points (B,P,S,q_len,Hq,Hkv,D[,tree]), one a line, as hydragen-sweep does, and exit")
    a = p.parse_args(argv)

    explicit = [f for f in ("batch", "prefix", "suffix", "q_len", "q_heads", "kv_heads", "head_dim", "tree")
                if getattr(a, f) is not None]
    if a.preset and explicit:
        p.error(f"--{explicit[0].replace('_', '-')} cannot change a --preset's grid")
    if a.preset:
        a.grid = harness.PRESETS[a.preset][1]
    else:
        v = {f: getattr(a, f) if getattr(a, f) is not None else d for f, d in DEFAULTS.items()}
        a.grid = harness.product(v["batch"], v["prefix"], v["suffix"], v["q_len"],
                                 [(v["q_heads"], v["kv_heads"], v["head_dim"])], v["tree"])
    a.methods = a.methods.split(",")
    if unknown := [m for m in a.methods if m not in METHOD_NAMES]:
        p.error(f"--methods: unknown {', '.join(unknown)} (known: {', '.join(METHOD_NAMES)})")
    for pt in a.grid:
        if min(pt.B, pt.P, pt.q_len, pt.Hq, pt.Hkv, pt.D) < 1 or pt.Hq % pt.Hkv:
            p.error(f"need positive B, P, q_len, Hq, Hkv, D with Hkv dividing Hq (got {pt})")
        if pt.S < pt.q_len - 1:
            p.error(f"a suffix needs at least q_len - 1 tokens for the causal queries (got S={pt.S}, q_len={pt.q_len})")
        if error := trees.tree_error(pt):
            p.error(error)
    if a.resume and not a.csv:
        p.error("--resume needs --csv FILE (the file to resume)")
    if a.replays < 1:
        p.error("--replays must be positive")
    if a.check_seqs < 0:
        p.error("--check-seqs must be 0 (every sequence) or positive")
    if not a.no_check and not a.points and not (a.diff and os.access(a.diff, os.X_OK)):
        p.error(f"no hydragen-diff to judge the outputs with (--diff {a.diff or 'unset'}): pass --diff PATH or --no-check")
    if a.ours and not a.points and not os.access(a.ours, os.X_OK):
        p.error(f"--ours {a.ours}: not an executable")
    return a


def our_rows(a):
    """ours(point) -> hydragen-sweep's CSV rows of the point (its header checked against ours), or None."""
    if not a.ours:
        return None

    def ours(pt):
        with tempfile.NamedTemporaryFile("r", suffix=".csv") as f:
            cmd = [a.ours, "--backends", a.ours_backends, "--dtype", a.dtype, "--batch", str(pt.B), "--prefix",
                   str(pt.P), "--suffix", str(pt.S), "--q-len", str(pt.q_len), "--q-heads", str(pt.Hq), "--kv-heads",
                   str(pt.Hkv), "--head-dim", str(pt.D), "--tree", pt.tree, "--replays", str(a.replays),
                   "--seed", str(a.seed), "--csv", f.name]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                raise RuntimeError(f"{' '.join(cmd)}: exit {r.returncode}: {r.stderr.strip()[-300:]}")
            header, *rows = f.read().splitlines(keepends=True)
        if header != harness.CSV_HEADER:
            raise RuntimeError(f"hydragen-sweep's columns differ from the peers': {header.strip()}")
        return "".join(rows)

    return ours


def make_methods(torch, dtype, names):
    import flashinfer_methods
    import torch_methods
    known = {m.name: m for m in torch_methods.METHODS + flashinfer_methods.METHODS}
    return [known[n](torch, dtype) for n in names]


def main(argv):
    try:
        a = parse_args(argv)
    except UsageError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
        return 2
    if a.points:  # hydragen-sweep's --points: the tree only where it is not the prefix + suffix one
        for pt in a.grid:
            print(",".join(map(str, pt if pt.tree != "prefix" else pt[:-1])))
        return 0
    earlier = None
    if a.resume and os.path.exists(a.csv):
        with open(a.csv) as f:
            earlier = f.readlines()
        try:
            harness.check_header(earlier)  # before anything is overwritten
        except ValueError as e:
            print(f"{PROG}: error: --resume: {a.csv} {e}", file=sys.stderr)
            return 2
    try:
        import torch
    except ImportError:
        print(f"{PROG}: error: PyTorch is not installed here; run this on the GPU machine", file=sys.stderr)
        return 2
    if not torch.cuda.is_available():
        print(f"{PROG}: error: PyTorch sees no CUDA GPU here; run this on the GPU machine", file=sys.stderr)
        return 2
    # SDPA's enable_gqa (lets flash read the Hkv heads without expanding them) arrived in 2.5.
    if tuple(int(v) for v in torch.__version__.split("+")[0].split(".")[:2]) < (2, 5):
        print(f"{PROG}: error: needs torch 2.5 or newer (enable_gqa), found {torch.__version__}", file=sys.stderr)
        return 2
    torch.cuda.get_device_name(0)  # a GPU that fails fails here, before --resume's file is rewritten
    out = open(a.csv, "w") if a.csv else sys.stdout
    with tempfile.TemporaryDirectory(prefix="peers-check-") as folder:  # the points' .npy files, one at a time
        checker = None if a.no_check else npy_check.NpyCheck(a.diff, folder, a.check_seqs)
        h = harness.Harness(torch, a.dtype, a.replays, a.seed, checker)
        methods = make_methods(torch, h.dtype, a.methods)
        try:
            harness.sweep(torch, h, methods, a.grid, a.dtype, a.commit or harness.commit(), out, PROG, our_rows(a),
                          a.ours_backends.split(",") if a.ours else (), earlier)
        finally:
            if a.csv:
                out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
