#!/usr/bin/env python3
"""Times PyTorch peers of our backends over the sweep's grid and writes hydragen-sweep's CSV schema.

  torch-flash     (storage redundant): torch's flash attention per sequence, each sequence owning a
                  copy of the prefix, one SDPA call over the batch (the paper's FlashAttention baseline).
  torch-hydragen  (storage shared): the paper's PyTorch formulation (Appendix B): one flash attention
                  with LSE over the prefix with the queries of all sequences stacked, one per-sequence
                  flash attention with LSE over the suffixes, then an elementwise LSE merge.

Timing follows DESIGN.md section 6: eager warm-up, a CUDA graph of the call, L2 flushed before each
replay outside the timed region, CUDA events around each replay, median/min/max. Run on a GPU machine;
`--help` works anywhere (torch is imported after the arguments are parsed).
"""
import argparse
import gc
import itertools
import math
import os
import subprocess
import sys
import time

PROG = "torch_peers.py"
METHODS = {"torch-flash": "redundant", "torch-hydragen": "shared"}  # backend -> storage column
CHECK_SEQS = 16  # sequences checked against the fp32 reference, spread over the batch
CHECK_TOL = 2e-2  # relative L2 error of O (max abs of LSE); bf16 points measure about 2e-3
WARMUP = 3

# Presets as hydragen-sweep's (experiments/sweep/grid.cpp): (B, P) pairs, suffix lengths, (Hq, Hkv, D).
_GRID_BP = list(itertools.product([32 << i for i in range(8)], [1024, 2048, 4096, 8192, 16384]))
PRESETS = {
    "quick": (list(itertools.product([32, 1024], [1024, 16384])), [64], (8, 1, 128)),
    "paper-fig4": ([(512, 1024), (1024, 2048), (2048, 4096), (4096, 8192)], list(range(0, 513, 16)), (8, 1, 128)),
    "grid": (_GRID_BP, [0, 64, 128, 256, 512], (8, 1, 128)),
    "mha": (list(itertools.product([32, 64, 128, 256], [1024, 2048, 4096, 8192])), [64], (32, 32, 128)),
}


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


def parse_args(argv):
    p = Parser(prog=PROG, description=__doc__.split("\n\n")[0],
               epilog="Explicit --batch/--prefix replace the preset's (B, P) pairs by their product; "
                      "explicit head flags replace the preset's heads.")
    p.add_argument("--preset", choices=sorted(PRESETS), default="quick", help="grid to run (default quick)")
    p.add_argument("--batch", type=int_list, help="batch sizes B, comma separated")
    p.add_argument("--prefix", type=int_list, help="shared prefix lengths P")
    p.add_argument("--suffix", type=int_list, help="suffix lengths S (every sequence)")
    p.add_argument("--q-heads", type=int, help="query heads Hq")
    p.add_argument("--kv-heads", type=int, help="key/value heads Hkv")
    p.add_argument("--head-dim", type=int, help="head dimension D")
    p.add_argument("--dtype", choices=["bf16", "fp16"], default="bf16")
    p.add_argument("--replays", type=int, default=50, help="timed graph replays per point (median reported)")
    p.add_argument("--methods", default=",".join(METHODS), help="comma separated: " + ", ".join(METHODS))
    p.add_argument("--seed", type=int, default=0, help="seed of the N(0,1) inputs")
    p.add_argument("--no-check", action="store_true", help="skip the check against the fp32 reference")
    p.add_argument("--commit", help="commit column (default: git rev-parse --short HEAD, else unknown); "
                                    "the device machine's copy of the tree has no .git")
    p.add_argument("--csv", help="write the CSV here (default: stdout)")
    a = p.parse_args(argv)

    pairs, suffixes, heads = PRESETS[a.preset]
    if a.batch or a.prefix:
        a.pairs = list(itertools.product(a.batch or sorted({b for b, _ in pairs}),
                                         a.prefix or sorted({pr for _, pr in pairs})))
    else:
        a.pairs = pairs
    a.suffixes = a.suffix or suffixes
    for name, preset in zip(("q_heads", "kv_heads", "head_dim"), heads):
        if getattr(a, name) is None:
            setattr(a, name, preset)
    a.methods = a.methods.split(",")
    if unknown := [m for m in a.methods if m not in METHODS]:
        p.error(f"--methods: unknown {', '.join(unknown)} (known: {', '.join(METHODS)})")
    if any(b < 1 for b, _ in a.pairs) or any(pr < 1 for _, pr in a.pairs):
        p.error("--batch and --prefix must be positive")
    if min(a.q_heads, a.kv_heads, a.head_dim) < 1 or a.q_heads % a.kv_heads:
        p.error(f"heads: need positive Hq, Hkv, D with Hkv dividing Hq (got {a.q_heads}, {a.kv_heads}, {a.head_dim})")
    if a.replays < 1:
        p.error("--replays must be positive")
    return a


def commit():
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=os.path.dirname(os.path.abspath(__file__)),
                              capture_output=True, text=True, check=True).stdout.strip() or "unknown"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def first_line(error):
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def oom_detail(error):  # torch's message goes on to allocator advice: keep what was asked and what was free
    return ". ".join(first_line(error).split(". ")[:3])


def quoted(text):  # device names carry no commas, but a detail message might
    return '"' + text.replace('"', '""') + '"'


class Peers:
    """Everything that needs torch; built once torch is imported and a GPU is known to be present."""

    def __init__(self, torch, args):
        self.torch = torch
        from torch.nn.attention import SDPBackend, sdpa_kernel
        self.flash_only = lambda: sdpa_kernel(SDPBackend.FLASH_ATTENTION)  # raises rather than fall back
        self.dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
        self.args = args
        props = torch.cuda.get_device_properties(0)
        # A memset of this buffer evicts L2 and, at tens of microseconds, keeps the CPU's launches ahead
        # of the GPU so replays do not time launch latency; reading it back then evicts the memset's
        # dirty lines, so their write-backs stay out of the timed region (as in hydragen-sweep).
        self.flush = torch.empty(max(2 * props.L2_cache_size, 128 << 20), dtype=torch.uint8, device="cuda")

    # -- machine -----------------------------------------------------------------------------------

    def _median_ms(self, fn, runs=10):
        torch = self.torch
        fn()
        ms = []
        for _ in range(runs):
            start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            ms.append(start.elapsed_time(stop))
        return sorted(ms)[runs // 2]

    def measure_peaks(self):
        """(FLOP/s of a bf16 8192^3 matmul on random data, device-to-device copy bytes/s counting read + write)."""
        torch = self.torch
        n_bytes = 1 << 30
        src = torch.ones(n_bytes, dtype=torch.uint8, device="cuda")
        dst = torch.empty_like(src)
        copy_ms = self._median_ms(lambda: dst.copy_(src))
        del src, dst
        n = 8192
        a, b = (torch.randn(n, n, dtype=torch.bfloat16, device="cuda") for _ in range(2))
        c = torch.empty_like(a)
        gemm_ms = self._median_ms(lambda: torch.matmul(a, b, out=c))
        del a, b, c
        torch.cuda.empty_cache()
        return 2.0 * n**3 / (gemm_ms * 1e-3), 2.0 * n_bytes / (copy_ms * 1e-3)

    def unsupported_reason(self, head_dim):
        major, minor = self.torch.cuda.get_device_capability()
        if major < 8:
            return f"torch's flash attention needs sm80 or newer, this GPU is sm{major}{minor}"
        if head_dim % 8 or head_dim > 256:
            return f"torch's flash attention takes D a multiple of 8 up to 256, not {head_dim}"
        return ""

    # -- inputs and reference ----------------------------------------------------------------------

    def make_inputs(self, B, P, S):
        """Q [B, 1, Hq, D]; prefix K/V [P, Hkv, D]; suffix K/V [B, S, Hkv, D]; N(0,1) in the dtype."""
        torch, a = self.torch, self.args
        gen = torch.Generator(device="cuda").manual_seed(a.seed)

        def randn(*size):
            return torch.randn(*size, generator=gen, dtype=self.dtype, device="cuda")

        Hq, Hkv, D = a.q_heads, a.kv_heads, a.head_dim
        return dict(q=randn(B, 1, Hq, D), pk=randn(P, Hkv, D), pv=randn(P, Hkv, D),
                    sk=randn(B, S, Hkv, D), sv=randn(B, S, Hkv, D))

    def check_indices(self, B):
        n = min(B, CHECK_SEQS)
        return sorted({round(i * (B - 1) / max(n - 1, 1)) for i in range(n)})

    def reference(self, x, seqs):
        """fp32 softmax(q K^T * scale) V and LSE over each checked sequence's concatenated K/V: [n, Hq, D], [n, Hq]."""
        torch, a = self.torch, self.args
        Hkv, g, D = a.kv_heads, a.q_heads // a.kv_heads, a.head_dim
        outs, lses = [], []
        for b in seqs:
            k = torch.cat([x["pk"], x["sk"][b]]).float()  # [P+S, Hkv, D]
            v = torch.cat([x["pv"], x["sv"][b]]).float()
            scores = torch.einsum("hgd,lhd->hgl", x["q"][b, 0].float().view(Hkv, g, D), k) / math.sqrt(D)
            outs.append(torch.einsum("hgl,lhd->hgd", torch.softmax(scores, -1), v).reshape(-1, D))
            lses.append(torch.logsumexp(scores, -1).reshape(-1))
        return torch.stack(outs), torch.stack(lses)

    def check(self, out, lse, ref, seqs):
        """'' when within tolerance, else why. out [B, 1, Hq, D]; lse [B, 1, Hq] or None (SDPA returns none)."""
        torch = self.torch
        idx = torch.tensor(seqs, device="cuda")
        ref_out, ref_lse = ref
        got = out.reshape(out.shape[0], -1, out.shape[-1]).index_select(0, idx).float()
        err = (got - ref_out).norm().item() / ref_out.norm().item()
        why = []
        if not err <= CHECK_TOL:  # also catches NaN
            why.append(f"O rel L2 error {err:.3g} > {CHECK_TOL:g}, max abs error {(got - ref_out).abs().max().item():.3g}")
        if lse is not None:
            got_lse = lse.reshape(lse.shape[0], -1).index_select(0, idx)
            lse_err = (got_lse - ref_lse).abs().max().item()
            if not lse_err <= CHECK_TOL:
                why.append(f"LSE max abs error {lse_err:.3g} > {CHECK_TOL:g}")
        return "; ".join(why), err

    # -- the two methods: each returns a closure that runs one decode step, all allocation done ---------

    def flash_with_lse(self, q, k, v):
        """torch's flash attention forward, q [b, lq, hq, D], k/v [b, lk, hkv, D] -> (O like q, LSE [b, hq, lq] fp32, natural log)."""
        lq, lk = q.shape[1], k.shape[1]
        out = self.torch.ops.aten._flash_attention_forward(q, k, v, None, None, lq, lk, 0.0, False, False,
                                                           scale=1.0 / math.sqrt(q.shape[-1]))
        return out[0], out[1]

    def torch_flash(self, x):
        torch = self.torch
        F = torch.nn.functional
        B, P, S = x["q"].shape[0], x["pk"].shape[0], x["sk"].shape[1]
        # Each sequence owns a copy of its path [B, P+S, Hkv, D]: memory grows with B (P+S).
        k = torch.empty(B, P + S, *x["pk"].shape[1:], dtype=self.dtype, device="cuda")
        v = torch.empty_like(k)
        k[:, :P], k[:, P:], v[:, :P], v[:, P:] = x["pk"], x["sk"], x["pv"], x["sv"]
        q, kt, vt = x["q"].transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # SDPA's [B, H, L, D] views
        scale = 1.0 / math.sqrt(q.shape[-1])

        def run():
            with self.flash_only():
                o = F.scaled_dot_product_attention(q, kt, vt, scale=scale, enable_gqa=True)
            return o.transpose(1, 2), None  # [B, 1, Hq, D]

        return run

    def torch_hydragen(self, x):
        q, pk, pv, sk, sv = x["q"], x["pk"], x["pv"], x["sk"], x["sv"]
        B, Hq, D = q.shape[0], q.shape[2], q.shape[3]
        Hkv = pk.shape[1]
        g = Hq // Hkv
        torch = self.torch

        def run():
            # Inter-sequence batching: the B*g queries of each KV head become one sequence of B*g queries
            # over the prefix [1, P, Hkv, D] (a view when g == 1 or Hkv == 1, else a small copy of Q).
            stacked = q.view(B, Hkv, g, D).transpose(1, 2).reshape(1, B * g, Hkv, D)
            o1, l1 = self.flash_with_lse(stacked, pk.unsqueeze(0), pv.unsqueeze(0))
            o1 = o1.reshape(B, g, Hkv, D).transpose(1, 2)  # [B, Hkv, g, D]
            l1 = l1.reshape(Hkv, B, g).transpose(0, 1)  # [B, Hkv, g]
            if sk.shape[1] == 0:
                return o1.reshape(B, 1, Hq, D), l1.reshape(B, 1, Hq)
            o2, l2 = self.flash_with_lse(q, sk, sv)  # per sequence: O [B, 1, Hq, D], LSE [B, Hq, 1]
            o2, l2 = o2.reshape(B, Hkv, g, D), l2.reshape(B, Hkv, g)
            # Suffix terms first so the results take their contiguous [B, Hkv, g(, D)] layout.
            lse = torch.logaddexp(l2, l1)
            out = o2 * torch.exp(l2 - lse).unsqueeze(-1) + o1 * torch.exp(l1 - lse).unsqueeze(-1)
            return out.to(self.dtype).view(B, 1, Hq, D), lse.view(B, 1, Hq)

        return run

    # -- timing ------------------------------------------------------------------------------------

    def time_replays(self, run):
        """(median, min, max) ms over --replays CUDA-graph replays, L2 flushed before each; a note if eager."""
        torch = self.torch
        side = torch.cuda.Stream()  # torch.cuda.graph wants warm-up off the default stream
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            for _ in range(WARMUP):
                run()
        torch.cuda.current_stream().wait_stream(side)
        note = ""
        try:
            graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(graph):
                run()
            launch = graph.replay
        except torch.cuda.OutOfMemoryError:
            raise
        except RuntimeError as e:
            launch, note = run, f"eager timing: graph capture failed ({first_line(e)})"
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
                  for _ in range(self.args.replays)]
        for start, stop in events:
            self.flush.zero_()
            self.flush.max()
            start.record()
            launch()
            stop.record()
        torch.cuda.synchronize()
        ms = sorted(start.elapsed_time(stop) for start, stop in events)
        return ms[len(ms) // 2], ms[0], ms[-1], note

    def measure(self, method, x, ref, seqs):
        """One CSV row's measurement: dict(status, detail, median_ms, min_ms, max_ms)."""
        torch = self.torch
        result = dict(status="ok", detail="")
        try:
            run = getattr(self, method.replace("-", "_"))(x)
            out, lse = run()
            if ref is not None:
                why, err = self.check(out, lse, ref, seqs)
                if why:
                    return dict(status="error", detail=why)
                result["detail"] = f"checked {len(seqs)} seqs: rel L2 error {err:.2g}"
            del out, lse
            median, lo, hi, note = self.time_replays(run)
            result.update(median_ms=median, min_ms=lo, max_ms=hi)
            result["detail"] = "; ".join(filter(None, [result["detail"], note]))
        except torch.cuda.OutOfMemoryError as e:
            result = dict(status="oom", detail=oom_detail(e))
        except Exception as e:  # a point that fails is recorded, never fatal
            result = dict(status="error", detail=f"{type(e).__name__}: {first_line(e)}")
        return result


def cost(a, B, P, S):
    """FLOPs and floor bytes of one point (cost_model.cpp's formulas, q_len 1, fp32 LSE)."""
    Hq, Hkv, D, elem = a.q_heads, a.kv_heads, a.head_dim, 2
    flops = 4.0 * B * Hq * D * (P + S)
    floor_bytes = (P + B * S) * Hkv * D * 2 * elem + B * Hq * D * elem + B * Hq * (D * elem + 4)
    return flops, floor_bytes


def csv_row(device, sha, a, method, B, P, S, m, flops, floor_bytes, floor_ms):
    numbers = [""] * 7  # median, min, max, tflops, gbps, floor, time/floor: empty unless ok
    if m["status"] == "ok":
        ms = m["median_ms"]
        numbers = [f"{v:.6g}" for v in (ms, m["min_ms"], m["max_ms"], flops / (ms * 1e-3) * 1e-12,
                                          floor_bytes / (ms * 1e-3) * 1e-9, floor_ms)] + [f"{ms / floor_ms:.3f}"]
    fields = [quoted(device), sha, method, METHODS[method], a.dtype, B, P, S, 1, a.q_heads, a.kv_heads, a.head_dim,
              *numbers, m["status"], quoted(m["detail"])]
    return ",".join(str(f) for f in fields) + "\n"


def main(argv):
    try:
        a = parse_args(argv)
    except UsageError as e:
        print(f"{PROG}: error: {e}", file=sys.stderr)
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

    peers = Peers(torch, a)
    device, sha = torch.cuda.get_device_name(0), a.commit or commit()
    print(f"{PROG}: torch {torch.__version__}, measuring peaks...", file=sys.stderr, flush=True)
    peak_flops, peak_bytes = peers.measure_peaks()
    print(f"{PROG}: {device}, peaks {peak_flops * 1e-12:.0f} TFLOP/s, {peak_bytes * 1e-9:.0f} GB/s",
          file=sys.stderr, flush=True)
    out = open(a.csv, "w") if a.csv else sys.stdout
    out.write("device,commit,backend,storage,dtype,B,P,S,q_len,Hq,Hkv,D,median_ms,min_ms,max_ms,tflops,gbps,"
              "floor_ms,time_over_floor,status,detail\n")
    unsupported = peers.unsupported_reason(a.head_dim)
    total, done, start = len(a.pairs) * len(a.suffixes) * len(a.methods), 0, time.monotonic()
    for (B, P), S in itertools.product(a.pairs, a.suffixes):
        flops, floor_bytes = cost(a, B, P, S)
        floor_ms = max(flops / peak_flops, floor_bytes / peak_bytes) * 1e3
        x = ref = seqs = None
        shape_failure = dict(status="unsupported", detail=unsupported) if unsupported else None
        if not shape_failure:
            try:
                x = peers.make_inputs(B, P, S)
                if not a.no_check:
                    seqs = peers.check_indices(B)
                    ref = peers.reference(x, seqs)
            except torch.cuda.OutOfMemoryError as e:
                shape_failure = dict(status="oom", detail="inputs: " + oom_detail(e))
        for method in a.methods:
            m = shape_failure or peers.measure(method, x, ref, seqs)
            gc.collect()  # drop the method's K/V copies and graph pool before the next one allocates
            torch.cuda.empty_cache()
            out.write(csv_row(device, sha, a, method, B, P, S, m, flops, floor_bytes, floor_ms))
            out.flush()
            done += 1
            elapsed = time.monotonic() - start
            what = f"[{done}/{total}] {method:<14} B={B:<5} P={P:<6} S={S:<4}"
            if m["status"] == "ok":
                what += f" {m['median_ms']:9.4f} ms {m['median_ms'] / floor_ms:7.2f}x floor"
            else:
                what += f" {m['status']}: {m['detail']}"
            print(f"{what}  ({elapsed:.0f} s, ~{elapsed / done * (total - done):.0f} s left)", file=sys.stderr, flush=True)
        del x, ref
    if a.csv:
        out.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
