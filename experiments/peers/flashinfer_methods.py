"""FlashInfer peers (flashinfer-python 0.5.x), each over one paged KV cache [pages, 2, page, Hkv, D] (NHD):
the prefix's pages once, then each group's of the sharing tree (level by level), then each sequence's own pages.
On a copy: tree the groups have no pages: their tokens are copied into each sequence's own pages, ahead of its
suffix, and only the prefix is shared.

  flashinfer-cascade   MultiLevelCascadeAttentionWrapper with a level per level of the tree: every query over
                       the prefix pages (one request), then per level of groups each group's queries over its
                       pages (one request a group), then each sequence over its own pages (causal), merged by
                       FlashInfer's merge_state. Its unique level needs a token per sequence: S = 0 (without
                       copied groups) is unsupported.
  flashinfer-paged     BatchDecodeWithPagedKVCacheWrapper (CUDA cores, FlashInfer's default) over page
                       tables that all start with the same prefix pages (then, on a tree, their groups'), so
                       each shared segment is stored once and read through L2: what a serving system with
                       prefix caching runs. One query per sequence only.
  flashinfer-paged-tc  the same page tables through FlashInfer's tensor-core kernels: the decode wrapper
                       with use_tensor_cores=True at q_len 1 (what serving systems pick for GQA), the
                       paged prefill wrapper (causal) at q_len > 1.
  flashinfer-prefix-fa3, flashinfer-prefix-fa2
                       Hydragen's step written with FlashInfer, as its user would: one prefill of the B q_len
                       stacked queries over the prefix (single_prefill_with_kv_cache, not causal, LSE
                       returned; backend fa3 = FlashAttention-3's Hopper kernels, or fa2); on a tree one more
                       per group, of its sequences' queries over its tokens, merged in place. Where sequences
                       have pages of their own (S > 0, or a copy: tree's groups) they go through the decode
                       wrapper (tensor cores where Hq / Hkv >= 4) or, at q_len > 1, the paged prefill wrapper
                       (causal), and merge_state combines the two. One CUDA graph.

plan() runs once per point, outside the timed region (a decode step plans once for all layers). The page layout,
the page tables and the cascade's levels are plain lists (page_layout, paged_tables, cascade_levels), so they are
tested without torch or a GPU.
"""
import itertools
import math
from collections import namedtuple

import trees
from harness import Unsupported

WORKSPACE_BYTES = 256 << 20  # FlashInfer's split-k scratch; it recommends 128 MB

# ps: tokens a page. prefix: the prefix's pages (a range). levels: per level of groups, per group Shared(its index in
# the inputs' gk/gv, its pages, its sequences); none on a copy: tree. own: per sequence its own pages (a range).
# last: per sequence, the tokens on its path's last page. slots: per token of the cache (pages * ps), the input
# token it holds, numbered in the order paged_cache concatenates them: the prefix's, then each group's
# (trees.tree_levels' order), then each sequence's suffix; padding: the zero token after the last.
PageLayout = namedtuple("PageLayout", "ps prefix levels own last slots")
Shared = namedtuple("Shared", "group pages seqs")


def page_size_for(lengths):
    """Pages of 16 tokens (vLLM's default) where every shared segment fills them, else the largest power of two
    that divides them all: a shared segment's last page must be full for the next segment's pages to follow it
    in a page table."""
    return next(ps for ps in (16, 8, 4, 2, 1) if all(n % ps == 0 for n in lengths))


def page_layout(pt):
    """The cache's pages: the prefix's, then each group's (none on a copy: tree), then each sequence's own, the
    last page of each segment padded; a copy: tree's own pages hold the sequence's groups' tokens, outermost first,
    then its suffix. The prefix + suffix tree's is the layout before trees: sequence b's pages at n_p + b n_s + j."""
    levels = trees.tree_levels(pt)
    groups = [g for level in levels for g in level]
    copied = trees.parse_tree(pt.tree).copied
    ps = page_size_for([pt.P] + ([] if copied else [g.tokens for g in groups]))
    *starts, suffix_start = itertools.accumulate([pt.P] + [g.tokens for g in groups])  # where group i's tokens begin
    pad = suffix_start + pt.B * pt.S  # the zero token the cache appends after the inputs'
    slots = []

    def place(tokens):  # fresh pages holding the tokens, the last one padded
        first = len(slots) // ps
        slots.extend(tokens)
        slots.extend([pad] * (-len(slots) % ps))
        return range(first, len(slots) // ps)

    def group(i):
        return range(starts[i], starts[i] + groups[i].tokens)

    prefix = place(range(pt.P))
    shared, index = [], 0
    for level in [] if copied else levels:
        shared.append([Shared(index + j, place(group(index + j)), g.seqs) for j, g in enumerate(level)])
        index += len(level)
    own, last = [], []
    for b in range(pt.B):
        copies = [group(i) for i in trees.path_groups(levels, b)] if copied else []
        own.append(place(itertools.chain(*copies, range(suffix_start + b * pt.S, suffix_start + (b + 1) * pt.S))))
        tokens = sum(map(len, copies)) + pt.S
        last.append((tokens - 1) % ps + 1 if tokens else ps)  # no own pages: the path ends on a full shared page
    return PageLayout(ps, prefix, shared, own, last, slots)


def paged_cache(torch, x, pt, layout):
    """The cache [pages, 2, ps, Hkv, D] of the layout: the inputs' tokens in the slots' order, then a zero token
    for the padding, gathered into the slots."""
    like = dict(dtype=x["pk"].dtype, device=x["pk"].device)
    index = torch.tensor(layout.slots, dtype=torch.long, device=x["pk"].device)
    pages = len(layout.slots) // layout.ps

    def gathered(prefix, groups, suffix):
        tokens = torch.cat([x[prefix], *x[groups], x[suffix].reshape(-1, pt.Hkv, pt.D),
                            torch.zeros(1, pt.Hkv, pt.D, **like)])
        return tokens[index].view(pages, layout.ps, pt.Hkv, pt.D)

    return torch.stack([gathered("pk", "gk", "sk"), gathered("pv", "gv", "sv")], 1)


def paged_tables(layout, pt, shared=True):
    """Every sequence's page table: its path's shared pages (the prefix's, then its groups' outermost first;
    unless not `shared`: its own pages alone), then its own: (indptr [B+1], indices, last page lengths [B])."""
    indptr, indices = [0], []
    for b in range(pt.B):
        runs = ([layout.prefix] + [level[b // len(level[0].seqs)].pages for level in layout.levels]) if shared else []
        indices.extend(itertools.chain(*runs, layout.own[b]))
        indptr.append(len(indices))
    return indptr, indices, layout.last


def cascade_levels(layout, pt):
    """The cascade's plan lists per level, outermost first: (qo_indptr, kv page indptr, kv page indices, last page
    lengths). Level 0: every query over the prefix's pages, one request. Then per level of groups one request a
    group: its sequences' queries (consecutive rows) over its pages. Then the unique level: each sequence's queries
    over its own pages, the one level FlashInfer masks causally. Every level covers every query row, as its
    in-place merge of the levels' outputs needs."""
    q = pt.q_len

    def level(requests, last):  # requests: (the query row after its last, its pages), in row order
        qo = [0] + [end for end, _ in requests]
        kv = [0] + list(itertools.accumulate(len(pages) for _, pages in requests))
        return qo, kv, [p for _, pages in requests for p in pages], last

    levels = [level([(pt.B * q, layout.prefix)], [layout.ps])]
    for groups in layout.levels:  # a shared segment's last page is full
        levels.append(level([(g.seqs.stop * q, g.pages) for g in groups], [layout.ps] * len(groups)))
    levels.append(level([((b + 1) * q, layout.own[b]) for b in range(pt.B)], layout.last))
    return levels


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

    def tables(self, layout, pt, shared=True):
        """paged_tables on the GPU, as the wrappers' plan takes them."""
        return [self.ints(t) for t in paged_tables(layout, pt, shared)]

    def common(self, pt):
        return dict(q_data_type=self.dtype, kv_data_type=self.dtype, sm_scale=1.0 / math.sqrt(pt.D))


class FlashInferCascade(FlashInferMethod):
    name = "flashinfer-cascade"

    def prepare(self, x, pt):
        layout = page_layout(pt)
        if not layout.own[0]:  # no sequence has pages of its own (every group has a token: trees.tree_error)
            raise Unsupported("the cascade's unique level needs at least one token per sequence (S = 0)")
        cache = paged_cache(self.torch, x, pt, layout)
        levels = cascade_levels(layout, pt)
        wrapper = self.fi.MultiLevelCascadeAttentionWrapper(len(levels), self.workspace, "NHD")
        # zip(*levels): the per-level lists of each plan argument, outermost level first
        wrapper.plan(*([self.ints(a) for a in per_level] for per_level in zip(*levels)),
                     pt.Hq, pt.Hkv, pt.D, layout.ps, causal=True, **self.common(pt))
        q = x["q"].view(pt.B * pt.q_len, pt.Hq, pt.D)
        return lambda: (wrapper.run(q, cache).view(pt.B, pt.q_len, pt.Hq, pt.D), None)  # run returns no LSE


class FlashInferPaged(FlashInferMethod):
    name, tensor_cores = "flashinfer-paged", False

    def prepare(self, x, pt):
        layout = page_layout(pt)
        cache = paged_cache(self.torch, x, pt, layout)
        return self.paged_attention(x, pt, cache, layout.ps, self.tables(layout, pt), self.tensor_cores)

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
    """The prefill over the shared prefix, one more per group on a tree, then (where sequences have pages of their
    own) those pages and merge_state (the module's docstring)."""
    backend = None

    def prepare(self, x, pt):
        fi = self.fi
        rows = pt.B * pt.q_len
        q = x["q"].view(rows, pt.Hq, pt.D)  # every query of the batch, stacked: one request over the prefix
        layout = page_layout(pt)

        def prefill(part, k, v):  # (O [part's rows, Hq, D], LSE [part's rows, Hq], log2) of the rows over k/v
            return fi.single_prefill_with_kv_cache(q[part], k, v, causal=False, sm_scale=1.0 / math.sqrt(pt.D),
                                                   backend=self.backend, return_lse=True)

        def shared():  # the prefix for every query, then each group's tokens for its sequences' (consecutive) rows
            o, lse = prefill(slice(None), x["pk"], x["pv"])
            for g in (g for level in layout.levels for g in level):
                part = slice(g.seqs.start * pt.q_len, g.seqs.stop * pt.q_len)
                fi.merge_state_in_place(o[part], lse[part], *prefill(part, x["gk"][g.group], x["gv"][g.group]))
            return o, lse

        attention = shared
        if layout.own[0]:  # the suffix, and on a copy: tree the groups' tokens copied ahead of it
            cache = paged_cache(self.torch, x, pt, layout)
            own = self.tables(layout, pt, shared=False)
            suffix = self.paged_attention(x, pt, cache, layout.ps, own,
                                          tensor_cores=pt.q_len > 1 or pt.Hq // pt.Hkv >= 4)

            def attention():
                o1, lse1 = shared()
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
