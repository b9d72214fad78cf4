"""FlashInfer peers (flashinfer-python 0.5.x), each over one paged KV cache [pages, 2, page, Hkv, D] (NHD):
the prefix's pages once, then each sequence's suffix pages.

  flashinfer-cascade   MultiLevelCascadeAttentionWrapper with two levels: every query over the prefix
                       pages (one request), then each sequence over its own pages (causal), merged by
                       FlashInfer's merge_state. Its unique level needs a token per sequence: S = 0 is
                       unsupported.
  flashinfer-paged     BatchDecodeWithPagedKVCacheWrapper (CUDA cores, FlashInfer's default) over page
                       tables that all start with the same prefix pages, so the prefix is stored once and
                       read through L2: what a serving system with prefix caching runs. One query per
                       sequence only.
  flashinfer-paged-tc  the same page tables through FlashInfer's tensor-core kernels: the decode wrapper
                       with use_tensor_cores=True at q_len 1 (what serving systems pick for GQA), the
                       paged prefill wrapper (causal) at q_len > 1.
  flashinfer-prefix-fa3, flashinfer-prefix-fa2
                       Hydragen's step written with FlashInfer, as its user would: one prefill of the B q_len
                       stacked queries over the prefix (single_prefill_with_kv_cache, not causal, LSE
                       returned; backend fa3 = FlashAttention-3's Hopper kernels, or fa2). At S = 0 that is
                       the whole step; at S > 0 the suffix pages go through the decode wrapper (tensor cores
                       where Hq / Hkv >= 4) or, at q_len > 1, the paged prefill wrapper (causal), and
                       merge_state combines the two. One CUDA graph.

plan() runs once per point, outside the timed region (a decode step plans once for all layers).
"""
import math

from harness import Unsupported

WORKSPACE_BYTES = 256 << 20  # FlashInfer's split-k scratch; it recommends 128 MB


def page_size_for(P):
    """Pages of 16 tokens (vLLM's default) where the prefix fills them, else the largest power of two
    that divides P: the prefix's last page must be full for the paged tables to share it."""
    return next(ps for ps in (16, 8, 4, 2, 1) if P % ps == 0)


def paged_cache(torch, x, pt):
    """(cache [prefix pages + B * suffix pages, 2, ps, Hkv, D], ps, prefix pages n_p, suffix pages per sequence n_s):
    the prefix's pages first, then sequence b's pages at n_p + b n_s + j, its last one zero-padded."""
    ps = page_size_for(pt.P)
    n_p, n_s = pt.P // ps, -(-pt.S // ps)
    like = dict(dtype=x["pk"].dtype, device=x["pk"].device)
    cache = torch.zeros(n_p + pt.B * n_s, 2, ps, pt.Hkv, pt.D, **like)
    own = cache[n_p:].view(pt.B, n_s, 2, ps, pt.Hkv, pt.D)
    for kv, (prefix, suffix) in enumerate(((x["pk"], x["sk"]), (x["pv"], x["sv"]))):
        cache[:n_p, kv] = prefix.view(n_p, ps, pt.Hkv, pt.D)
        if n_s:
            padded = torch.zeros(pt.B, n_s * ps, pt.Hkv, pt.D, **like)
            padded[:, :pt.S] = suffix
            own[:, :, kv] = padded.view(pt.B, n_s, ps, pt.Hkv, pt.D)
    return cache, ps, n_p, n_s


def last_page_len(pt, ps):
    return pt.S - (-(-pt.S // ps) - 1) * ps if pt.S else ps


def paged_tables(torch, pt, ps, n_p, n_s, device, prefix=True):
    """Every sequence's page table, the prefix pages (unless not `prefix`: its own pages only, S > 0) then its
    own: (indptr [B+1], indices, last page lengths [B]), int32."""
    i32 = dict(dtype=torch.int32, device=device)
    shared = n_p if prefix else 0
    own = n_p + torch.arange(pt.B * n_s, **i32).view(pt.B, n_s)
    indices = torch.cat([torch.arange(shared, **i32).expand(pt.B, shared), own], 1)
    indptr = torch.arange(pt.B + 1, **i32) * (shared + n_s)
    return indptr, indices.reshape(-1).contiguous(), torch.full((pt.B,), last_page_len(pt, ps), **i32)


class FlashInferMethod:
    storage = "shared"
    lse_base = 2.0  # FlashInfer's LSE is log2 of the sum of 2^(scaled logits * log2 e); the check converts it
    _shared = {}  # the flashinfer module and the workspace, made once for all methods

    def __init__(self, torch, dtype):
        self.torch, self.dtype = torch, dtype
        self.unavailable = None
        if "module" not in self._shared:
            try:
                import flashinfer
                self._shared["module"] = flashinfer
                self._shared["workspace"] = torch.zeros(WORKSPACE_BYTES, dtype=torch.uint8, device="cuda")
            except ImportError as e:
                self._shared["module"] = None
                self._shared["why"] = f"flashinfer is not importable here ({e})"
        if self._shared["module"] is None:
            self.unavailable = dict(status="unsupported", detail=self._shared["why"])
        self.fi, self.workspace = self._shared["module"], self._shared.get("workspace")

    def ints(self, values):
        return self.torch.tensor(values, dtype=self.torch.int32, device="cuda")

    def common(self, pt):
        return dict(q_data_type=self.dtype, kv_data_type=self.dtype, sm_scale=1.0 / math.sqrt(pt.D))


class FlashInferCascade(FlashInferMethod):
    name = "flashinfer-cascade"

    def prepare(self, x, pt):
        if pt.S == 0:
            raise Unsupported("the cascade's unique level needs at least one token per sequence (S = 0)")
        torch = self.torch
        cache, ps, n_p, n_s = paged_cache(torch, x, pt)
        rows = pt.B * pt.q_len
        seqs = torch.arange(pt.B + 1, dtype=torch.int32, device="cuda")
        wrapper = self.fi.MultiLevelCascadeAttentionWrapper(2, self.workspace, "NHD")
        wrapper.plan([self.ints([0, rows]), seqs * pt.q_len],  # queries: all of them, then each sequence's
                     [self.ints([0, n_p]), seqs * n_s],  # pages: the prefix's, then each sequence's own
                     [self.ints(list(range(n_p))), self.ints(list(range(n_p, n_p + pt.B * n_s)))],
                     [self.ints([ps]), self.ints([last_page_len(pt, ps)] * pt.B)],
                     pt.Hq, pt.Hkv, pt.D, ps, causal=True, **self.common(pt))
        q = x["q"].view(rows, pt.Hq, pt.D)
        return lambda: (wrapper.run(q, cache).view(pt.B, pt.q_len, pt.Hq, pt.D), None)  # run returns no LSE


class FlashInferPaged(FlashInferMethod):
    name, tensor_cores = "flashinfer-paged", False

    def prepare(self, x, pt):
        cache, ps, n_p, n_s = paged_cache(self.torch, x, pt)
        tables = paged_tables(self.torch, pt, ps, n_p, n_s, cache.device)
        return self.paged_attention(x, pt, cache, ps, tables, self.tensor_cores)

    def paged_attention(self, x, pt, cache, ps, tables, tensor_cores):
        """run() -> (O [B, q_len, Hq, D], LSE [B, q_len, Hq]) of every sequence over its page table: the decode
        wrapper at q_len 1, the causal paged prefill wrapper (tensor cores only) at q_len > 1."""
        indptr, indices, last = tables
        rows = pt.B * pt.q_len
        q = x["q"].view(rows, pt.Hq, pt.D)
        if pt.q_len == 1:
            wrapper = self.fi.BatchDecodeWithPagedKVCacheWrapper(self.workspace, "NHD", use_tensor_cores=tensor_cores)
            wrapper.plan(indptr, indices, last, pt.Hq, pt.Hkv, pt.D, ps, **self.common(pt))
        elif not tensor_cores:
            raise Unsupported("FlashInfer's decode kernel takes one query per sequence (flashinfer-paged-tc runs "
                              "several)")
        else:
            wrapper = self.fi.BatchPrefillWithPagedKVCacheWrapper(self.workspace, "NHD")
            wrapper.plan(self.ints(list(range(0, rows + 1, pt.q_len))), indptr, indices, last,
                         pt.Hq, pt.Hkv, pt.D, ps, causal=True, **self.common(pt))

        def run():
            o, lse = wrapper.run(q, cache, return_lse=True)  # LSE [rows, Hq]
            return o.view(pt.B, pt.q_len, pt.Hq, pt.D), lse.view(pt.B, pt.q_len, pt.Hq)

        return run


class FlashInferPagedTensorCores(FlashInferPaged):
    name, tensor_cores = "flashinfer-paged-tc", True


class FlashInferPrefix(FlashInferPaged):
    """The prefill over the shared prefix, then (S > 0) the suffix pages and merge_state (the module's docstring)."""
    backend = None

    def prepare(self, x, pt):
        fi, torch = self.fi, self.torch
        rows = pt.B * pt.q_len
        q = x["q"].view(rows, pt.Hq, pt.D)  # every query of the batch, stacked: one request over the prefix

        def prefix():  # (O [rows, Hq, D], LSE [rows, Hq], log2)
            return fi.single_prefill_with_kv_cache(q, x["pk"], x["pv"], causal=False, sm_scale=1.0 / math.sqrt(pt.D),
                                                   backend=self.backend, return_lse=True)

        attention = prefix
        if pt.S > 0:
            cache, ps, n_p, n_s = paged_cache(torch, x, pt)
            own = paged_tables(torch, pt, ps, n_p, n_s, cache.device, prefix=False)
            suffix = self.paged_attention(x, pt, cache, ps, own, tensor_cores=pt.q_len > 1 or pt.Hq // pt.Hkv >= 4)

            def attention():
                o1, lse1 = prefix()
                o2, lse2 = suffix()
                return fi.merge_state(o1, lse1, o2.view(rows, pt.Hq, pt.D), lse2.view(rows, pt.Hq))

        def run():
            o, lse = attention()
            return o.view(pt.B, pt.q_len, pt.Hq, pt.D), lse.view(pt.B, pt.q_len, pt.Hq)

        return run


class FlashInferPrefixFa3(FlashInferPrefix):
    name, backend = "flashinfer-prefix-fa3", "fa3"


class FlashInferPrefixFa2(FlashInferPrefix):
    name, backend = "flashinfer-prefix-fa2", "fa2"


METHODS = (FlashInferCascade, FlashInferPaged, FlashInferPagedTensorCores, FlashInferPrefixFa3, FlashInferPrefixFa2)
