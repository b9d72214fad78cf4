"""What the Python package adds per call over the C++ run(), on the GPU (issue 20's check).

At each point (bf16, Hq 8, Hkv 1, D 128, q_len 1; default (B, P, S) = (32, 1024, 64) and (1024, 16384, 64)),
cuda-hydragen on PyTorch tensors (one packed K and V):

  graph_ms      plan.run captured in a CUDA graph, replayed back to back: the C++ run()'s kernels alone
  flushed_ms    the same graph by hydragen-sweep's protocol (L2 flushed before each replay, median)
  sweep_ms      hydragen-sweep's median_ms at the point (--sweep BIN): the C++ run() in its own graph;
                flushed_ms against it says whether the plan/run path in a graph adds anything
  eager_ms      plan.run called back to back (same tensors), per call
  host_us       the host time one eager plan.run takes to return (Python, DLPack, checks, launches)
  overhead_us   eager_ms - graph_ms: what the calls cost beyond the kernels, where it shows
  attention_ms  hydragen.attention per call: a plan made, run and freed every time

Run on the GPU machine with the package installed (scripts/device-check python does):
  python3 experiments/python/overhead.py [--points 32,1024,64 1024,16384,64] [--sweep dist/hydragen-sweep]
"""
import argparse
import csv
import statistics
import subprocess
import sys
import tempfile
import time

import torch

import hydragen

HEADS = dict(q_heads=8, kv_heads=1, head_dim=128)


def inputs(B, P, S):
    """q [B, 1, Hq, D], packed K and V [P + B*S, Hkv, D], bf16 on the GPU, and the tree."""
    tree = hydragen.SharingTree.prefix_suffix(P, [S] * B)
    gen = torch.Generator(device="cuda").manual_seed(0)

    def randn(*shape):
        return torch.randn(*shape, generator=gen, device="cuda").to(torch.bfloat16)

    D, Hq, Hkv = HEADS["head_dim"], HEADS["q_heads"], HEADS["kv_heads"]
    return tree, randn(B, 1, Hq, D), randn(tree.total_tokens, Hkv, D), randn(tree.total_tokens, Hkv, D)


def per_call_ms(fn, calls):
    """CUDA events around `calls` back-to-back calls: ms per call (after one warm-up call)."""
    fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / calls


def host_us(fn, calls):
    """The median host time of one call to return, in microseconds (the GPU drained between calls)."""
    times = []
    for _ in range(calls):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e6)
    torch.cuda.synchronize()
    return statistics.median(times)


def flushed_ms(graph, replays):
    """hydragen-sweep's protocol: L2 flushed (a buffer of twice its size written) before each replay,
    outside the timed region; the median of the replays."""
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    scratch = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
    times = []
    for _ in range(replays):
        scratch.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        graph.replay()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def sweep_ms(binary, B, P, S):
    """hydragen-sweep's median_ms for cuda-hydragen at the point."""
    with tempfile.NamedTemporaryFile(suffix=".csv") as out:
        subprocess.run([binary, "--backends", "cuda-hydragen", "--dtype", "bf16", "--q-heads", "8", "--kv-heads", "1",
                        "--head-dim", "128", "--batch", str(B), "--prefix", str(P), "--suffix", str(S), "--csv", out.name],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(out.name) as f:
            return float(next(csv.DictReader(f))["median_ms"])


def measure(B, P, S, args):
    tree, q, k, v = inputs(B, P, S)
    plan = hydragen.plan(q, k, v, tree, backend="cuda-hydragen")
    o, lse = plan.run(q, k, v)  # binds these tensors' tables: later runs only launch
    # What is timed is checked where the fp64 reference takes a moment (the paper-scale point is
    # hydragen_cuda_large_tests' to check).
    if B * (P + S) <= 1 << 20 and not hydragen.compare(o, lse, q, k, v, tree, strict_lse=True).ok:
        raise SystemExit(f"overhead: ({B}, {P}, {S}): cuda-hydragen's output fails the reference check")
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        plan.run(q, k, v, o, lse)
    row = dict(B=B, P=P, S=S)
    row["graph_ms"] = per_call_ms(graph.replay, args.calls)
    row["flushed_ms"] = flushed_ms(graph, args.calls)
    row["sweep_ms"] = sweep_ms(args.sweep, B, P, S) if args.sweep else float("nan")
    row["eager_ms"] = per_call_ms(lambda: plan.run(q, k, v, o, lse), args.calls)
    row["host_us"] = host_us(lambda: plan.run(q, k, v, o, lse), args.calls)
    row["overhead_us"] = (row["eager_ms"] - row["graph_ms"]) * 1e3
    row["attention_ms"] = per_call_ms(lambda: hydragen.attention(q, k, v, tree), max(args.calls // 5, 5))
    return row


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", nargs="+", default=["32,1024,64", "1024,16384,64"], help="B,P,S")
    parser.add_argument("--calls", type=int, default=200, help="calls (and replays) per timing")
    parser.add_argument("--sweep", help="hydragen-sweep binary, to time the C++ run() at the same points")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("overhead: needs a CUDA GPU")
    columns = ["B", "P", "S", "graph_ms", "flushed_ms", "sweep_ms", "eager_ms", "host_us", "overhead_us", "attention_ms"]
    print(torch.cuda.get_device_name(), "torch", torch.__version__, file=sys.stderr)
    print(" ".join(f"{c:>12}" for c in columns))
    for point in args.points:
        B, P, S = (int(x) for x in point.split(","))
        row = measure(B, P, S, args)
        print(" ".join(f"{row[c]:>12}" if isinstance(row[c], int) else f"{row[c]:>12.4f}" for c in columns), flush=True)


if __name__ == "__main__":
    main()
