"""Real kernels no one here wrote through hydragen.conformance, on the GPU machine: PyTorch's SDPA per
sequence and FlashInfer's forms (0.5.x). Writes each form's report as FORM.csv and FORM.md into OUT_DIR
and prints one summary line per form; exit 0 once every report is written (a failing case is a finding,
not an error), 2 on bad usage.

    python3 experiments/peers/conformance_clients.py OUT_DIR [--forms torch-sdpa,...] [--cases PATTERN]

  torch-sdpa                 F.scaled_dot_product_attention per sequence over its path (GQA through
                             enable_gqa; a boolean mask, bottom-right causal, when q_len > 1). No LSE.
  flashinfer-cascade         MultiLevelCascadeAttentionWrapper, two levels: every query over the shared
                             prefix's pages, then each sequence over its suffix pages. No LSE.
  flashinfer-decode          BatchDecodeWithPagedKVCacheWrapper (CUDA cores) over page tables that share
                             the prefix's pages (hydragen.conformance.paged).
  flashinfer-decode-tc       the same with use_tensor_cores=True.
  flashinfer-prefill-merge   single_prefill_with_kv_cache(return_lse=True) of every query over the prefix,
                             batch decode over the suffix pages, flashinfer.merge_state: the composition a
                             FlashInfer user writes for a shared prefix.

FlashInfer's LSE is base 2 (log2 of the sum of 2^(scores log2 e)); it is converted to natural log here.
Cases a form cannot express are declared through supports() and reported skipped: fp32 (FlashInfer's
kernels take fp16 and bf16), q_len > 1 for the decode kernels, and for the cascade q_len > 1 (its causal
flag applies to the shared level too, where all B x q_len queries form one request) and empty suffixes
(its unique level needs a token per sequence). torch and flashinfer are imported when a form runs.
"""
import argparse
import math
import sys
from pathlib import Path

FORMS = ("torch-sdpa", "flashinfer-cascade", "flashinfer-decode", "flashinfer-decode-tc", "flashinfer-prefill-merge")
PAGE_SIZE = 16  # vLLM's default
WORKSPACE_BYTES = 256 << 20  # FlashInfer's split-k scratch (flashinfer_methods.py)
LN2 = math.log(2.0)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path, help="folder for FORM.csv and FORM.md (made if missing)")
    parser.add_argument("--forms", default=",".join(FORMS), help=f"comma-separated, of: {', '.join(FORMS)}")
    parser.add_argument("--cases", default="*", metavar="PATTERN", help="only the cases matching this shell pattern")
    args = parser.parse_args(argv)
    args.forms = [f.strip() for f in args.forms.split(",")]
    unknown = [f for f in args.forms if f not in FORMS]
    if unknown or not all(args.forms):
        parser.error(f"--forms: {', '.join(unknown) or 'an empty name'} is not one of {', '.join(FORMS)}")
    if args.out_dir.exists() and not args.out_dir.is_dir():
        parser.error(f"{args.out_dir} exists and is not a folder")
    return args


def fp16_or_bf16(case):
    return True if case.dtype in ("fp16", "bf16") else f"FlashInfer's kernels take fp16 and bf16, not {case.dtype}"


def decode_case(case):
    return fp16_or_bf16(case) if case.q_len == 1 else "FlashInfer's decode kernels take one query per sequence"


def cascade_case(case):
    if case.q_len > 1:
        return "q_len > 1: the cascade's causal flag also masks the shared level, one request of B x q_len queries"
    prefix = prefix_tokens(case)
    if prefix == 0:
        return "the cascade's shared level needs a prefix shared by every sequence"
    if any(case.tree.path_length(b) == prefix for b in range(case.num_seqs)):
        return "the cascade's unique level needs a token per sequence (an empty suffix)"
    return fp16_or_bf16(case)


def prefix_tokens(case):
    """P of hydragen.conformance.prefix_suffix: the tokens of the segments every path starts with."""
    paths = [case.tree.path(b) for b in range(case.num_seqs)]
    shared = 0
    while all(len(p) > shared and p[shared] == paths[0][shared] for p in paths):
        shared += 1
    return sum(case.tree.lengths[s] for s in paths[0][:shared])


class Client:
    """torch, flashinfer, the workspace and the converter, made once."""

    def __init__(self, need_flashinfer):
        import torch
        from hydragen import conformance
        self.torch, self.conformance = torch, conformance
        self.convert = conformance.to_torch("cuda")
        if need_flashinfer:
            import flashinfer
            self.fi = flashinfer
            self.workspace = torch.zeros(WORKSPACE_BYTES, dtype=torch.uint8, device="cuda")

    def kernel(self, form):
        return getattr(self, form.replace("-", "_"))()

    def ints(self, values):
        return self.torch.tensor(values, dtype=self.torch.int32, device="cuda")

    def csr(self, page_table, lengths):
        """FlashInfer's page tables from the adapter's: (indptr [B+1], indices, last page lengths [B])."""
        table, n = page_table.cpu().tolist(), lengths.cpu().tolist()
        rows = [[p for p in row if p >= 0] for row in table]
        indptr = [0]
        for row in rows:
            indptr.append(indptr[-1] + len(row))
        last = [t - (len(row) - 1) * PAGE_SIZE if row else 0 for t, row in zip(n, rows)]
        return self.ints(indptr), self.ints([p for row in rows for p in row]), self.ints(last)

    def torch_sdpa(self):
        F = self.torch.nn.functional

        def torch_sdpa(q, k, v, mask, scale):
            out = []
            for b in range(q.shape[0]):
                n = int(mask[b, 0, -1].sum())  # the last query sees the whole path
                m = mask[b:b + 1, :, :, :n] if q.shape[2] > 1 else None
                out.append(F.scaled_dot_product_attention(q[b:b + 1], k[b:b + 1, :, :n], v[b:b + 1, :, :n],
                                                          attn_mask=m, scale=scale, enable_gqa=True))
            return self.torch.cat(out)

        return self.conformance.padded(torch_sdpa, convert=self.convert)

    def decode(self, tensor_cores):
        def flashinfer_decode(q, k_pages, v_pages, page_table, lengths, scale):
            indptr, indices, last = self.csr(page_table, lengths)
            wrapper = self.fi.BatchDecodeWithPagedKVCacheWrapper(self.workspace, "NHD", use_tensor_cores=tensor_cores)
            wrapper.plan(indptr, indices, last, q.shape[2], k_pages.shape[2], q.shape[3], PAGE_SIZE,
                         q_data_type=q.dtype, kv_data_type=k_pages.dtype, sm_scale=scale)
            o, lse = wrapper.run(q[:, 0], (k_pages, v_pages), return_lse=True)
            return o[:, None], (lse * LN2)[:, None]

        flashinfer_decode.supports = decode_case
        flashinfer_decode.__name__ = "flashinfer-decode" + ("-tc" if tensor_cores else "")
        return self.conformance.paged(flashinfer_decode, page_size=PAGE_SIZE, convert=self.convert)

    def flashinfer_decode(self):
        return self.decode(False)

    def flashinfer_decode_tc(self):
        return self.decode(True)

    def suffix_pages(self, suffixes):
        """Each sequence's suffix in pages of its own: (cache [pages, PAGE_SIZE, Hkv, D], indptr, indices, last)."""
        torch = self.torch
        counts = [-(-len(s) // PAGE_SIZE) for s in suffixes]
        like = suffixes[0]
        cache = torch.zeros(max(sum(counts), 1), PAGE_SIZE, *like.shape[1:], dtype=like.dtype, device=like.device)
        flat = cache.view(-1, *like.shape[1:])
        start, indptr = 0, [0]
        for s, c in zip(suffixes, counts):
            flat[start * PAGE_SIZE:start * PAGE_SIZE + len(s)] = s
            start += c
            indptr.append(start)
        last = [len(s) - (c - 1) * PAGE_SIZE if c else 0 for s, c in zip(suffixes, counts)]
        return cache, self.ints(indptr), self.ints(list(range(start))), self.ints(last)

    def prefix_pages(self, x, n_p):
        """The prefix [P, Hkv, D] as n_p pages, the last zero-padded."""
        padded = self.torch.nn.functional.pad(x, (0, 0, 0, 0, 0, n_p * PAGE_SIZE - len(x)))
        return padded.view(n_p, PAGE_SIZE, *x.shape[1:])

    def flashinfer_cascade(self):
        def flashinfer_cascade(q, k_prefix, v_prefix, k_suffixes, v_suffixes, scale):
            B, _, Hq, D = q.shape
            n_p = -(-len(k_prefix) // PAGE_SIZE)
            k_own, indptr, own, last = self.suffix_pages(k_suffixes)
            v_own = self.suffix_pages(v_suffixes)[0]
            cache = self.torch.stack([self.torch.cat([self.prefix_pages(x, n_p), own_pages])
                                      for x, own_pages in ((k_prefix, k_own), (v_prefix, v_own))], dim=1)
            wrapper = self.fi.MultiLevelCascadeAttentionWrapper(2, self.workspace, "NHD")
            seqs = self.torch.arange(B + 1, dtype=self.torch.int32, device="cuda")
            wrapper.plan([self.ints([0, B]), seqs], [self.ints([0, n_p]), indptr],
                         [self.ints(list(range(n_p))), own + n_p],
                         [self.ints([len(k_prefix) - (n_p - 1) * PAGE_SIZE]), last],
                         Hq, k_prefix.shape[1], D, PAGE_SIZE, causal=False, q_data_type=q.dtype,
                         kv_data_type=k_prefix.dtype, sm_scale=scale)
            return wrapper.run(q[:, 0], cache)[:, None]  # cache [pages, 2, page, Hkv, D], as flashinfer_methods.py

        flashinfer_cascade.supports = cascade_case
        return self.conformance.prefix_suffix(flashinfer_cascade, convert=self.convert)

    def flashinfer_prefill_merge(self):
        def flashinfer_prefill_merge(q, k_prefix, v_prefix, k_suffixes, v_suffixes, scale):
            if len(k_prefix) == 0:
                raise self.conformance.Unsupported("single_prefill over an empty prefix")
            B, _, Hq, D = q.shape
            rows = q[:, 0]
            o1, lse1 = self.fi.single_prefill_with_kv_cache(rows, k_prefix, v_prefix, causal=False, sm_scale=scale,
                                                            return_lse=True)
            k_own, indptr, own, last = self.suffix_pages(k_suffixes)
            v_own = self.suffix_pages(v_suffixes)[0]
            wrapper = self.fi.BatchDecodeWithPagedKVCacheWrapper(self.workspace, "NHD")
            wrapper.plan(indptr, own, last, Hq, k_prefix.shape[1], D, PAGE_SIZE, q_data_type=q.dtype,
                         kv_data_type=k_prefix.dtype, sm_scale=scale)
            o2, lse2 = wrapper.run(rows, (k_own, v_own), return_lse=True)
            o, lse = self.fi.merge_state(o1, lse1, o2, lse2)
            return o[:, None], (lse * LN2)[:, None]

        flashinfer_prefill_merge.supports = decode_case
        return self.conformance.prefix_suffix(flashinfer_prefill_merge, convert=self.convert)


def main(argv=None):
    args = parse_args(argv)
    import fnmatch

    from hydragen import conformance
    cases = [c for c in conformance.default_cases() if fnmatch.fnmatchcase(c.name, args.cases)]
    if not cases:
        print(f"--cases {args.cases!r} matches no case", file=sys.stderr)
        return 2
    args.out_dir.mkdir(parents=True, exist_ok=True)
    client = Client(need_flashinfer=any(f.startswith("flashinfer") for f in args.forms))
    for form in args.forms:
        report = conformance.run(client.kernel(form), cases, name=form)
        (args.out_dir / f"{form}.csv").write_text(report.csv())
        (args.out_dir / f"{form}.md").write_text(report.markdown())
        print(report.summary(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
