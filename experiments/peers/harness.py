"""The measuring protocol the peers share with hydragen-sweep: presets, inputs, the check (npy_check.py), CUDA-graph
timing with L2 flushed, the cost model and the sweep's CSV schema. The sharing trees are trees.py's; the methods
live beside this file (torch_methods.py, flashinfer_methods.py); peers.py is the command line.

Everything here that needs torch takes it as an argument, so `--help` and `--points` run without it.
"""
import csv
import gc
import itertools
import math
import subprocess
import os
import sys
import time
from collections import namedtuple

import npy_check
from trees import parse_tree, tree_groups

WARMUP = 3

# tree: the sharing tree in --tree's grammar, as trees.tree_text writes it: the CSV's tree column.
Point = namedtuple("Point", "B P S q_len Hq Hkv D tree", defaults=("prefix",))
CSV_HEADER = ("device,commit,backend,storage,dtype,B,P,S,q_len,Hq,Hkv,D,tree,median_ms,min_ms,max_ms,tflops,gbps,"
              "floor_ms,time_over_floor,nominal_share,status,detail,decisions\n")
NOMINAL_PEAKS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "core", "nominal-peaks.csv")


def nominal_peaks(device):
    """(FLOP/s, bytes/s) of the device's datasheet for 16-bit storage (core/nominal-peaks.csv, the table
    hydragen-sweep compiles in), or None for a device it does not name."""
    import csv
    with open(NOMINAL_PEAKS, newline="") as f:
        for row in csv.DictReader(f):
            if row["device"] == device:
                return float(row["tensor_tflops"]) * 1e12, float(row["dram_tbps"]) * 1e12
    return None


def product(batch, prefix, suffix, q_len, heads, trees=("prefix",)):
    """Points in hydragen-sweep's order (sweep::product: B, P, S, q_len, then the heads, then the trees)."""
    return [Point(b, p, s, ql, *h, t)
            for b, p, s, ql, h, t in itertools.product(batch, prefix, suffix, q_len, heads, trees)]


def _doubling(first, last):
    return [first << i for i in range(int(math.log2(last // first)) + 1)]


# hydragen-sweep's presets (experiments/sweep/grid.cpp), bf16; a ctest compares the two lists point by point.
PRESETS = {
    "quick": ("B in 32,1024, P in 1024,16384, S = 64; Hq=8 Hkv=1 D=128",
              product([32, 1024], [1024, 16384], [64], [1], [(8, 1, 128)])),
    "paper-fig4": ("the paper's Fig. 4: (B,P) in (512,1024) (1024,2048) (2048,4096) (4096,8192), S = 0..512 step 16",
                   [Point(b, p, s, 1, 8, 1, 128) for b, p in ((512, 1024), (1024, 2048), (2048, 4096), (4096, 8192))
                    for s in range(0, 513, 16)]),
    "grid": ("B = 32..4096 doubling, P in 1024..16384, S in 0,64,128,256,512; Hq=8 Hkv=1 D=128",
             product(_doubling(32, 4096), [1024, 2048, 4096, 8192, 16384], [0, 64, 128, 256, 512], [1], [(8, 1, 128)])),
    "mha": ("Hq=Hkv=32 D=128: B = 32..256, P = 1024..8192, S = 64",
            product(_doubling(32, 256), [1024, 2048, 4096, 8192], [64], [1], [(32, 32, 128)])),
    "models": ("Hq=Hkv=40 D=128, Hq=32 Hkv=8 D=128, Hq=Hkv=32 D=64: B in 64,256, P in 2048,8192, S = 64",
               [pt for h in ((40, 40, 128), (32, 8, 128), (32, 32, 64))
                for pt in product([64, 256], [2048, 8192], [64], [1], [h])]),
    "spec": ("several queries per sequence (speculative decoding): q_len in 2,4,8, B in 64,256,1024, "
             "P in 4096,8192,16384, S = 64; Hq=8 Hkv=1 D=128",
             product([64, 256, 1024], [4096, 8192, 16384], [64], [2, 4, 8], [(8, 1, 128)])),
    "trees": ("two-level 16x1024 and depth-4 4x1024/4x256 trees, each beside its copy: form (the prefix alone "
              "shared): B in 256,1024, P = 4096, S = 64; Hq=8 Hkv=1 D=128",
              product([256, 1024], [4096], [64], [1], [(8, 1, 128)],
                      ["16x1024", "copy:16x1024", "4x1024/4x256", "copy:4x1024/4x256"])),
}


class Unsupported(Exception):
    """A point a method cannot run (the row is written with status `unsupported` and this reason)."""


def commit():
    """The short hash of HEAD, with "-dirty" when tracked files differ from it (as hydragen-sweep's
    stamp), so a row never names a commit whose code it did not run; "unknown" outside a checkout."""
    def git(*args):
        return subprocess.run(["git", *args], cwd=os.path.dirname(os.path.abspath(__file__)),
                              capture_output=True, text=True, check=True).stdout.strip()
    try:
        head = git("rev-parse", "--short", "HEAD")
        return (head + "-dirty" if git("status", "--porcelain", "--untracked-files=no") else head) or "unknown"
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def first_line(error):
    return (str(error).strip().splitlines() or [type(error).__name__])[0]


def oom_detail(error):  # torch's message goes on to allocator advice: keep what was asked and what was free
    return ". ".join(first_line(error).split(". ")[:3])


def quoted(text):  # device names carry no commas, but a detail message might
    return '"' + text.replace('"', '""') + '"'


def cost(pt, elem=2):
    """FLOPs and floor bytes of a point, as core/src/cost_model.cpp counts them on the sweep's tree: query qi of
    q_len attends all of its path but the last q_len - 1 - qi suffix tokens; every distinct K/V byte once (a copy:
    tree's groups once per sequence below them, as its sweep rows count them), Q, O and an fp32 LSE."""
    groups = tree_groups(pt)
    paths = pt.B * (pt.P + pt.S) + sum(g.tokens * len(g.seqs) for g in groups)  # tokens over all sequences' paths
    attended = pt.q_len * paths - pt.B * pt.q_len * (pt.q_len - 1) // 2
    flops = 4.0 * pt.Hq * pt.D * attended
    copies = parse_tree(pt.tree).copied
    stored = pt.P + pt.B * pt.S + sum(g.tokens * (len(g.seqs) if copies else 1) for g in groups)
    rows = pt.B * pt.q_len * pt.Hq
    floor_bytes = stored * pt.Hkv * pt.D * 2 * elem + rows * pt.D * elem + rows * (pt.D * elem + 4)
    return flops, floor_bytes


class Harness:
    """The protocol on one GPU; built once torch is imported and a GPU is known to be present."""

    def __init__(self, torch, dtype, replays, seed, checker=None):
        self.torch = torch
        self.checker = checker  # an npy_check.NpyCheck: each method's output judged before it is timed; None: not
        self.dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype]
        self.replays, self.seed = replays, seed
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

    # -- inputs ----------------------------------------------------------------------

    def make_inputs(self, pt):
        """Q [B, q_len, Hq, D]; prefix K/V [P, Hkv, D]; suffix K/V [B, S, Hkv, D]; then per group of the tree
        (tree_levels' order) its K/V [tokens, Hkv, D] in the lists gk, gv (empty for the prefix tree, whose
        inputs stay those drawn before trees were); N(0,1) in the dtype."""
        torch = self.torch
        gen = torch.Generator(device="cuda").manual_seed(self.seed)

        def randn(*size):
            return torch.randn(*size, generator=gen, dtype=self.dtype, device="cuda")

        x = dict(q=randn(pt.B, pt.q_len, pt.Hq, pt.D), pk=randn(pt.P, pt.Hkv, pt.D), pv=randn(pt.P, pt.Hkv, pt.D),
                 sk=randn(pt.B, pt.S, pt.Hkv, pt.D), sv=randn(pt.B, pt.S, pt.Hkv, pt.D), gk=[], gv=[])
        for g in tree_groups(pt):
            x["gk"].append(randn(g.tokens, pt.Hkv, pt.D))
            x["gv"].append(randn(g.tokens, pt.Hkv, pt.D))
        return x

    # -- timing ------------------------------------------------------------------------------------

    def time_replays(self, run):
        """(median, min, max) ms over the replays of a CUDA graph of run(), L2 flushed before each; a note if eager."""
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
                  for _ in range(self.replays)]
        for start, stop in events:
            self.flush.zero_()
            self.flush.max()
            start.record()
            launch()
            stop.record()
        torch.cuda.synchronize()
        ms = sorted(start.elapsed_time(stop) for start, stop in events)
        return ms[len(ms) // 2], ms[0], ms[-1], note

    def measure(self, method, x, pt):
        """One CSV row's measurement: dict(status, detail, median_ms, min_ms, max_ms)."""
        torch = self.torch
        result = dict(status="ok", detail="")
        try:
            run = method.prepare(x, pt)
            out, lse = run()
            if self.checker:
                passed, line = self.checker.judge(out, npy_check.natural_lse(lse, getattr(method, "lse_base", math.e)))
                if not passed:
                    return dict(status="error", detail=line)
                result["detail"] = f"{len(self.checker.seqs)} of {pt.B} seqs: {line}"
            del out, lse
            median, lo, hi, note = self.time_replays(run)
            result.update(median_ms=median, min_ms=lo, max_ms=hi)
            result["detail"] = "; ".join(filter(None, [result["detail"], note]))
        except Unsupported as e:
            result = dict(status="unsupported", detail=str(e))
        except torch.cuda.OutOfMemoryError as e:
            result = dict(status="oom", detail=oom_detail(e))
        except Exception as e:  # a point that fails is recorded, never fatal
            result = dict(status="error", detail=f"{type(e).__name__}: {first_line(e)}")
        return result


def csv_row(device, sha, dtype, method, pt, m, flops, floor_bytes, floor_ms, nominal_ms):
    numbers = [""] * 8  # median, min, max, tflops, gbps, floor, time/floor, nominal share: empty unless ok
    if m["status"] == "ok":
        ms = m["median_ms"]
        numbers = [f"{v:.6g}" for v in (ms, m["min_ms"], m["max_ms"], flops / (ms * 1e-3) * 1e-12,
                                          floor_bytes / (ms * 1e-3) * 1e-9, floor_ms)] + [f"{ms / floor_ms:.3f}"]
        numbers.append(f"{nominal_ms / ms:.3f}" if nominal_ms else "")
    # decisions: ours only.
    fields = [quoted(device), sha, method.name, method.storage, dtype, *pt, *numbers, m["status"],
              quoted(m["detail"]), quoted("")]
    return ",".join(str(f) for f in fields) + "\n"


def csv_point(row):
    """The Point of a CSV row: its shape and its tree (a copy: tree is a point of its own beside the shared one)."""
    return Point(*(int(row[c]) for c in Point._fields[:-1]), row["tree"])


def resumed(lines, device, sha, backends):
    """(rows to keep, points done) of an earlier run's CSV lines (header first) for a run of `backends` on `device`
    at commit `sha`. A point is done when every one of `backends` has its row there from this device and commit;
    its rows are kept. A point begun but not finished has its rows dropped, to be measured again whole (every
    comparison is within one run). Rows of other devices or commits are kept and done nothing. Raises ValueError
    when the header is not the peers' CSV's."""
    check_header(lines)
    rows = list(csv.DictReader(lines))
    this_gpu = [(row["device"], row["commit"]) == (device, sha) for row in rows]  # and this commit
    points = [csv_point(row) for row in rows]
    here = {}  # point -> backends with a row from this device and commit
    for row, mine, pt in zip(rows, this_gpu, points):
        if mine:
            here.setdefault(pt, set()).add(row["backend"])
    done = {pt for pt, names in here.items() if set(backends) <= names}
    keep = [line for line, mine, pt in zip(lines[1:], this_gpu, points) if not mine or pt in done]
    return keep, done


def check_header(lines):
    """Raises ValueError unless `lines` (a CSV's, header first) are the peers' CSV."""
    if not lines or lines[0] != CSV_HEADER:
        raise ValueError("line 1: not the peers' CSV header")


def sweep(torch, harness, methods, points, dtype, sha, out, prog, ours=None, our_backends=(), earlier=None):
    """Measures every method at every point, one CSV row each (in point order), progress on stderr. ours(point),
    when given, returns the rows of our_backends at the point, measured just before the methods. earlier: the
    lines of a CSV to resume (resumed()): its kept rows are written first and its done points skipped."""
    device = torch.cuda.get_device_name(0)
    out.write(CSV_HEADER)
    if earlier is not None:
        keep, done = resumed(earlier, device, sha, [m.name for m in methods] + list(our_backends))
        out.writelines(keep)
        out.flush()
        print(f"{prog}: --resume: {sum(pt in done for pt in points)} of {len(points)} points already there from "
              f"{device} at {sha}; {len(keep)} rows kept", file=sys.stderr, flush=True)
        points = [pt for pt in points if pt not in done]
    print(f"{prog}: torch {torch.__version__}, measuring peaks...", file=sys.stderr, flush=True)
    peak_flops, peak_bytes = harness.measure_peaks()
    print(f"{prog}: {device}, peaks {peak_flops * 1e-12:.0f} TFLOP/s, {peak_bytes * 1e-9:.0f} GB/s",
          file=sys.stderr, flush=True)
    nominal = nominal_peaks(device)
    total, done, start = len(points) * len(methods), 0, time.monotonic()
    for pt in points:
        flops, floor_bytes = cost(pt)
        floor_ms = max(flops / peak_flops, floor_bytes / peak_bytes) * 1e3
        nominal_ms = nominal and max(flops / nominal[0], floor_bytes / nominal[1]) * 1e3
        x = None
        shape_failure = None
        try:
            x = harness.make_inputs(pt)
            if harness.checker:
                harness.checker.write_inputs(x, pt)
        except torch.cuda.OutOfMemoryError as e:
            shape_failure = dict(status="oom", detail="inputs: " + oom_detail(e))
        if ours:
            out.write(ours(pt))
            out.flush()
        for method in methods:
            m = shape_failure or method.unavailable or harness.measure(method, x, pt)
            gc.collect()  # drop the method's K/V copies and graph pool before the next one allocates
            torch.cuda.empty_cache()
            out.write(csv_row(device, sha, dtype, method, pt, m, flops, floor_bytes, floor_ms, nominal_ms))
            out.flush()
            done += 1
            elapsed = time.monotonic() - start
            what = f"[{done}/{total}] {method.name:<20} B={pt.B:<5} P={pt.P:<6} S={pt.S:<4} q_len={pt.q_len}"
            if (pt.Hq, pt.Hkv, pt.D) != (8, 1, 128):
                what += f" Hq={pt.Hq} Hkv={pt.Hkv} D={pt.D}"
            if pt.tree != "prefix":
                what += f" tree={pt.tree}"
            if m["status"] == "ok":
                what += f" {m['median_ms']:9.4f} ms {m['median_ms'] / floor_ms:7.2f}x floor"
            else:
                what += f" {m['status']}: {m['detail']}"
            print(f"{what}  ({elapsed:.0f} s, ~{elapsed / done * (total - done):.0f} s left)", file=sys.stderr, flush=True)
        del x
