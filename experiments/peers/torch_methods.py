"""PyTorch peers: the paper's FlashAttention baseline and its PyTorch formulation of Hydragen (Appendix B).

Both call torch's flash attention. SDPA is what a PyTorch user calls, but it returns no LSE and its
causal mask is aligned top-left when q_len < kv_len; `aten._flash_attention_forward` is the same
flash kernel (SDPA's flash path calls it), returns the LSE ([batch, heads, len_q], fp32, natural log)
and aligns the causal mask bottom-right, which is DESIGN.md's rule. So q_len 1 goes through SDPA
(torch-flash) and several queries through the op; the harness's check covers both.

Both run the prefix + suffix tree only: a deeper tree is unsupported (TorchMethod.check_tree says why).
"""
import math

from harness import Unsupported


class TorchMethod:
    def __init__(self, torch, dtype):
        self.torch, self.dtype = torch, dtype
        self.unavailable = None
        major, minor = torch.cuda.get_device_capability()
        if major < 8:
            self.unavailable = dict(status="unsupported", detail=f"torch's flash attention needs sm80 or newer, "
                                                                 f"this GPU is sm{major}{minor}")

    def check_tree(self, pt, why):
        if pt.tree != "prefix":
            raise Unsupported(f"{self.name} runs the prefix + suffix tree only: {why}")

    def check_head_dim(self, D):
        if D % 8 or D > 256:
            raise Unsupported(f"torch's flash attention takes D a multiple of 8 up to 256, not {D}")

    def flash_with_lse(self, q, k, v, causal):
        """q [b, lq, hq, D], k/v [b, lk, hkv, D] -> (O like q, LSE [b, hq, lq] fp32, natural log)."""
        lq, lk = q.shape[1], k.shape[1]
        out = self.torch.ops.aten._flash_attention_forward(q, k, v, None, None, lq, lk, 0.0, causal, False,
                                                           scale=1.0 / math.sqrt(q.shape[-1]))
        return out[0], out[1]


class TorchFlash(TorchMethod):
    """The paper's FlashAttention baseline: every sequence owns a copy of its path, K/V [B, P+S, Hkv, D]."""
    name, storage = "torch-flash", "redundant"

    def prepare(self, x, pt):
        self.check_tree(pt, "a tree's redundant form (every sequence a copy of its path) is not built here; the "
                            "sweep's trees preset compares shared forms")
        self.check_head_dim(pt.D)
        torch = self.torch
        F = torch.nn.functional
        from torch.nn.attention import SDPBackend, sdpa_kernel
        k = torch.empty(pt.B, pt.P + pt.S, pt.Hkv, pt.D, dtype=self.dtype, device="cuda")
        v = torch.empty_like(k)
        k[:, :pt.P], k[:, pt.P:], v[:, :pt.P], v[:, pt.P:] = x["pk"], x["sk"], x["pv"], x["sv"]
        q = x["q"]
        if pt.q_len > 1:
            return lambda: (self.flash_with_lse(q, k, v, causal=True)[0], None)
        qt, kt, vt = q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2)  # SDPA's [B, H, L, D] views
        scale = 1.0 / math.sqrt(pt.D)

        def run():
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):  # raises rather than fall back to another kernel
                o = F.scaled_dot_product_attention(qt, kt, vt, scale=scale, enable_gqa=True)
            return o.transpose(1, 2), None  # [B, 1, Hq, D]

        return run


class TorchHydragen(TorchMethod):
    """Prefix K/V stored once; the queries of all sequences stacked per KV head over the prefix, the suffixes
    per sequence (causal), then the unfused elementwise LSE merge."""
    name, storage = "torch-hydragen", "shared"

    def prepare(self, x, pt):
        self.check_tree(pt, "the paper's formulation shares one prefix; a tree needs an attention and a merge per "
                            "group (flashinfer-prefix-* composes that in FlashInfer)")
        self.check_head_dim(pt.D)
        torch = self.torch
        q, pk, pv, sk, sv = x["q"], x["pk"], x["pv"], x["sk"], x["sv"]
        B, L, Hq, Hkv, D = pt.B, pt.q_len, pt.Hq, pt.Hkv, pt.D
        g = Hq // Hkv

        def run():
            # Inter-sequence batching: the B*q_len*g queries of each KV head become one sequence over the
            # prefix [1, P, Hkv, D] (a view when g == 1 or Hkv == 1, else a small copy of Q).
            stacked = q.view(B * L, Hkv, g, D).transpose(1, 2).reshape(1, B * L * g, Hkv, D)
            o1, l1 = self.flash_with_lse(stacked, pk.unsqueeze(0), pv.unsqueeze(0), causal=False)
            o1 = o1.reshape(B * L, g, Hkv, D).transpose(1, 2)  # [B*L, Hkv, g, D]
            l1 = l1.reshape(Hkv, B * L, g).transpose(0, 1)  # [B*L, Hkv, g]
            if pt.S == 0:
                return o1.reshape(B, L, Hq, D), l1.reshape(B, L, Hq)
            o2, l2 = self.flash_with_lse(q, sk, sv, causal=L > 1)  # O [B, L, Hq, D], LSE [B, Hq, L]
            o2, l2 = o2.reshape(B * L, Hkv, g, D), l2.transpose(1, 2).reshape(B * L, Hkv, g)
            lse = torch.logaddexp(l2, l1)
            out = o2 * torch.exp(l2 - lse).unsqueeze(-1) + o1 * torch.exp(l1 - lse).unsqueeze(-1)
            return out.to(self.dtype).view(B, L, Hq, D), lse.view(B, L, Hq)

        return run


METHODS = (TorchFlash, TorchHydragen)
