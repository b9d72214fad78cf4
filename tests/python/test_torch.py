"""PyTorch: torch's scaled_dot_product_attention per sequence and the paper's PyTorch formulation of
Hydragen (its Appendix B) checked against the fp64 reference, the CPU in fp32 and a GPU in bf16; our
cuda-hydragen on PyTorch tensors inside a CUDA graph capture and on PyTorch's current stream. Skipped
where torch is not installed (CI has none); the GPU machine runs them (scripts/device-check python)."""
import math

import pytest

torch = pytest.importorskip("torch")

import hydragen  # noqa: E402

CUDA = torch.cuda.is_available() and any(b.name == "cuda-hydragen" and b.available for b in hydragen.backends())
needs_cuda = pytest.mark.skipif(not CUDA, reason="no CUDA device, or this build has no CUDA backends")
DEVICES = [pytest.param(("cpu", torch.float32), id="cpu-fp32"),
           pytest.param(("cuda", torch.bfloat16), id="cuda-bf16", marks=needs_cuda)]


def random_inputs(tree, device, dtype, q_heads=8, kv_heads=1, head_dim=128, q_len=1, seed=0):
    """q [B, q_len, Hq, D] and one packed K and V [total tokens, Hkv, D], drawn from N(0, 1)."""
    gen = torch.Generator(device=device).manual_seed(seed)

    def randn(*shape):
        return torch.randn(*shape, generator=gen, device=device, dtype=torch.float32).to(dtype)

    tokens = tree.total_tokens
    return randn(tree.num_seqs, q_len, q_heads, head_dim), randn(tokens, kv_heads, head_dim), randn(tokens, kv_heads, head_dim)


def segments(packed, tree):
    """The per-segment views of a packed K or V: [length, Hkv, D] each."""
    return list(torch.split(packed, tree.lengths))


# ---- torch's SDPA, one sequence at a time -----------------------------------------------------------

def sdpa_per_sequence(q, k, v, tree):
    """scaled_dot_product_attention of each sequence's q_len = 1 query over its path's K/V concatenated."""
    F = torch.nn.functional
    ks, vs = segments(k, tree), segments(v, tree)
    o = torch.empty_like(q)
    for s in range(tree.num_seqs):
        path_k = torch.cat([ks[i] for i in tree.path(s)]).transpose(0, 1)[None]  # [1, Hkv, L, D]
        path_v = torch.cat([vs[i] for i in tree.path(s)]).transpose(0, 1)[None]
        out = F.scaled_dot_product_attention(q[s].transpose(0, 1)[None], path_k, path_v, enable_gqa=True)
        o[s] = out[0].transpose(0, 1)  # [1, Hq, D]
    return o


@pytest.mark.parametrize("device_dtype", DEVICES)
def test_sdpa_per_sequence_against_the_reference(device_dtype):
    device, dtype = device_dtype
    tree = hydragen.SharingTree.two_level(700, [60, 0, 33], [[5, 0, 17], [40], [2, 9]])
    q, k, v = random_inputs(tree, device, dtype)
    o = sdpa_per_sequence(q, k, v, tree)
    comparison = hydragen.compare(o, None, q, k, v, tree)  # SDPA gives no LSE
    assert comparison.ok, comparison.summary


# ---- the paper's PyTorch formulation (Appendix B), written our way ---------------------------------

def attention_with_lse(q, k, v, scale):
    """The primitive the paper assumes: q [b, nq, hq, d], k and v [b, nk, hkv, d] -> o [b, nq, hq, d] (fp32)
    and lse [b, nq, hq] (fp32, natural log). Plain PyTorch in fp32, so it runs on any device."""
    g = q.shape[2] // k.shape[2]
    k = k.float().repeat_interleave(g, dim=2)
    v = v.float().repeat_interleave(g, dim=2)
    scores = torch.einsum("bqhd,bkhd->bhqk", q.float(), k) * scale
    o = torch.einsum("bhqk,bkhd->bqhd", torch.softmax(scores, dim=-1), v)
    return o, torch.logsumexp(scores, dim=-1).transpose(1, 2)


def combine_lse(o1, lse1, o2, lse2):
    """Two attentions over disjoint keys merged by their LSEs; o [b, nq, hq, d], lse [b, nq, hq]."""
    top = torch.maximum(lse1, lse2)
    w1, w2 = (lse1 - top).exp(), (lse2 - top).exp()
    o = (o1 * w1.unsqueeze(-1) + o2 * w2.unsqueeze(-1)) / (w1 + w2).unsqueeze(-1)
    return o, top + (w1 + w2).log()


def hydragen_attention(q, prefix_k, prefix_v, suffix_k, suffix_v):
    """q [b, 1, hq, d]; prefix_k, prefix_v [P, hkv, d]; suffix_k, suffix_v [b, S, hkv, d] -> (o like q, lse)."""
    b, nq, hq, d = q.shape
    scale = 1 / math.sqrt(d)
    # Inter-sequence batching: the queries of every sequence attend the prefix as one sequence.
    prefix_o, prefix_lse = attention_with_lse(q.reshape(1, b * nq, hq, d), prefix_k[None], prefix_v[None], scale)
    suffix_o, suffix_lse = attention_with_lse(q, suffix_k, suffix_v, scale)
    o, lse = combine_lse(prefix_o.view(b, nq, hq, d), prefix_lse.view(b, nq, hq), suffix_o, suffix_lse)
    return o.to(q.dtype), lse


@pytest.mark.parametrize("device_dtype", DEVICES)
@pytest.mark.parametrize("suffix", [16, 0])
def test_the_papers_pytorch_hydragen_against_the_reference(device_dtype, suffix):
    device, dtype = device_dtype
    B, P = 16, 1024
    tree = hydragen.SharingTree.prefix_suffix(P, [suffix] * B)
    q, k, v = random_inputs(tree, device, dtype, seed=1)
    o, lse = hydragen_attention(q, k[:P], v[:P], k[P:].view(B, suffix, *k.shape[1:]), v[P:].view(B, suffix, *v.shape[1:]))
    comparison = hydragen.compare(o, lse, q, k, v, tree)
    assert comparison.ok, comparison.summary


# ---- our backends on PyTorch tensors ----------------------------------------------------------------

def test_cpu_hydragen_on_pytorch_tensors_gives_pytorch_tensors():
    tree = hydragen.SharingTree.prefix_suffix(300, [7, 0, 12])
    q, k, v = random_inputs(tree, "cpu", torch.bfloat16, q_heads=8, kv_heads=2, head_dim=64, q_len=1, seed=2)
    o, lse = hydragen.attention(q, segments(k, tree), segments(v, tree), tree)
    assert isinstance(o, torch.Tensor) and o.dtype == torch.bfloat16 and lse.dtype == torch.float32
    assert hydragen.compare(o, lse, q, k, v, tree, strict_lse=True).ok
    ref_o, ref_lse = hydragen.reference(q, k, v, tree)
    assert isinstance(ref_o, torch.Tensor) and ref_o.dtype == torch.float64 and ref_lse.shape == (3, 1, 8)


def test_outputs_given_are_written_in_place():
    tree = hydragen.SharingTree.prefix_suffix(64, [3, 5])
    q, k, v = random_inputs(tree, "cpu", torch.float32, head_dim=64, seed=3)
    o, lse = torch.full_like(q, float("nan")), torch.full(q.shape[:3], float("nan"))
    pointers = o.data_ptr(), lse.data_ptr()
    result = hydragen.plan(q, k, v, tree).run(q, k, v, o, lse)
    assert result[0] is o and result[1] is lse and (o.data_ptr(), lse.data_ptr()) == pointers
    assert hydragen.compare(o, lse, q, k, v, tree).ok


def test_a_tensor_that_requires_grad_is_named():
    tree = hydragen.SharingTree.prefix_suffix(8, [1])
    q, k, v = random_inputs(tree, "cpu", torch.float32, head_dim=64)
    with pytest.raises(ValueError, match=r"q: .*detach"):
        hydragen.attention(q.requires_grad_(), k, v, tree)


@needs_cuda
def test_cuda_hydragen_in_a_cuda_graph_reads_the_tensors_where_they_are():
    B, P, S = 32, 1024, 64
    tree = hydragen.SharingTree.prefix_suffix(P, [S] * B)
    q, k, v = random_inputs(tree, "cuda", torch.bfloat16, seed=4)
    plan = hydragen.plan(q, k, v, tree, backend="cuda-hydragen")
    o, lse = plan.run(q, k, v)  # the first run with these tensors uploads their tables: run it before capturing
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        plan.run(q, k, v, o, lse)  # same tensors, outputs given: kernel launches only
    for seed in (5, 6):
        q.copy_(random_inputs(tree, "cuda", torch.bfloat16, seed=seed)[0])  # new values where the graph reads
        o.fill_(float("nan"))
        lse.fill_(float("nan"))
        graph.replay()
        torch.cuda.synchronize()
        comparison = hydragen.compare(o, lse, q, k, v, tree, strict_lse=True)
        assert comparison.ok, comparison.summary


@needs_cuda
def test_a_decode_loop_in_one_graph_follows_the_leaf_lengths():
    B, P, capacity = 8, 512, 32
    tree = hydragen.SharingTree.prefix_suffix(P, [capacity] * B)
    q, k, v = random_inputs(tree, "cuda", torch.bfloat16, seed=7)
    lengths = torch.zeros(B, dtype=torch.int32, device="cuda")
    plan = hydragen.plan(q, k, v, tree)
    assert plan.backend == "cuda-hydragen"
    o, lse = plan.run(q, k, v, leaf_lengths=lengths)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        plan.run(q, k, v, o, lse, leaf_lengths=lengths)
    for step in (1, 17, capacity):
        lengths.fill_(step)
        graph.replay()
        torch.cuda.synchronize()
        now = hydragen.SharingTree.prefix_suffix(P, [step] * B)
        keep = [seg[:step] if i else seg for i, seg in enumerate(segments(k, tree))]
        keep_v = [seg[:step] if i else seg for i, seg in enumerate(segments(v, tree))]
        assert hydragen.compare(o, lse, q, keep, keep_v, now, strict_lse=True).ok, step


@needs_cuda
def test_runs_on_pytorchs_current_stream():
    tree = hydragen.SharingTree.prefix_suffix(2048, [8] * 16)
    q, k, v = random_inputs(tree, "cuda", torch.bfloat16, seed=8)
    plan = hydragen.plan(q, k, v, tree)
    late_q = torch.zeros_like(q)
    o, lse = plan.run(late_q, k, v)  # binds late_q's tables on the default stream
    torch.cuda.synchronize()
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        torch.cuda._sleep(100_000_000)  # ~0.1 s: a run on any other stream would read late_q before the copy
        late_q.copy_(q)
        plan.run(late_q, k, v, o, lse)
    side.synchronize()
    assert hydragen.compare(o, lse, q, k, v, tree, strict_lse=True).ok


@needs_cuda
def test_devices_are_named():
    tree = hydragen.SharingTree.prefix_suffix(64, [4, 4])
    q, k, v = random_inputs(tree, "cuda", torch.bfloat16, seed=9)
    with pytest.raises(ValueError, match=r"k: on host, expected on cuda:0"):
        hydragen.attention(q, k.cpu(), v, tree)
    with pytest.raises(ValueError, match=r"v\[1\]: on host, expected on cuda:0"):
        hydragen.attention(q, segments(k, tree), [x.cpu() if i == 1 else x for i, x in enumerate(segments(v, tree))], tree)
    with pytest.raises(ValueError, match=r"backend 'cpu-hydragen' runs on host memory, but the tensors are on cuda:0"):
        hydragen.attention(q, k, v, tree, backend="cpu-hydragen")


@needs_cuda
def test_a_cuda_hydragen_plan_explains_its_decisions_rule_by_rule():
    tree = hydragen.SharingTree.prefix_suffix(1024, [32] * 64)
    q, k, v = random_inputs(tree, "cuda", torch.bfloat16, seed=2)
    lines = hydragen.plan(q, k, v, tree, backend="cuda-hydragen").explain().splitlines()
    rules = [line.split(":")[0] for line in lines]
    assert rules[0] == "device" and torch.cuda.get_device_name() in lines[0]
    for rule in ("wide_kernel", "leaf_layout", "narrow_kernel", "merge", "launch_recipe"):
        assert rule in rules, f"{rule} missing from:\n" + "\n".join(lines)
