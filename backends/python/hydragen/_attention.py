"""hydragen.plan and hydragen.attention: a backend's plan for one problem, run on the caller's tensors."""
from . import _core
from ._frameworks import adopt, empty, exported, exported_segments, stream_handle


class Plan:
    """A backend's plan for one problem: made once (validates, allocates workspace, builds the schedule),
    run many times. After its first run with a set of tensors (which uploads their tables), run() only
    launches kernels, so it can be captured in a CUDA graph; one plan may serve several sets of tensors
    (each layer's KV cache)."""

    def __init__(self, core_plan):
        self._plan = core_plan

    backend = property(lambda self: self._plan.backend, doc='the backend and its options: "cuda-hydragen:form=wide"')
    shape = property(lambda self: self._plan.shape, doc="the AttentionShape (B, q_len, Hq, Hkv, D, dtype, scale)")
    tree = property(lambda self: self._plan.tree, doc="the SharingTree")

    def explain(self):
        """How the plan decided to run: one line per rule that fired, "rule: choice -- reason [inputs]" (the CUDA
        planner's rules, docs/planner-rules.md), the device and its rates' source first; "" for a plan (the CPU
        backends') that decides nothing."""
        return self._plan.explain()

    def run(self, q, k_segments, v_segments, o=None, lse=None, *, leaf_lengths=None, stream=None):
        """Attention of q over the segments into o and lse (allocated beside q when None; pass both inside a
        CUDA graph capture, where a new tensor would be a new set). Returns (o, lse).

        q           [B, q_len, Hq, D]
        k_segments  a list of [length, Hkv, D], one per segment of the tree, or one [total tokens, Hkv, D]
                    holding every segment back to back in segment order; v_segments likewise
        o           [B, q_len, Hq, D], q's dtype
        lse         [B, q_len, Hq], fp32 (fp64 for fp64), natural log; -inf where a query attends nothing
        leaf_lengths  None, or int32 [B] on q's device: the tokens each leaf holds now (a plan made for leaf
                    capacities then serves every decode step)
        stream      None: the current stream of q's framework (PyTorch's, CuPy's), else the default stream;
                    or a torch.cuda.Stream, a cupy Stream, or a cudaStream_t as an int
        """
        p = self._plan
        if o is None:
            o = empty(q, p.o_shape, p.dtype, p.memory, p.device_id)
        if lse is None:
            lse = empty(q, p.lse_shape, p.lse_dtype, p.memory, p.device_id)
        p.run(exported(q, "q"), exported_segments(k_segments, "k"), exported_segments(v_segments, "v"),
              exported(o, "o"), exported(lse, "lse"), stream_handle(q, stream),
              None if leaf_lengths is None else exported(leaf_lengths, "leaf_lengths"))
        return adopt(q, o), adopt(q, lse)

    def __repr__(self):
        return f"<hydragen.Plan {self.backend} {self.shape.describe()} tree=({self.tree.describe()})>"


def plan(q, k_segments, v_segments, tree, backend="auto", scale=None):
    """The plan of `backend` for the problem these tensors describe (their shapes, dtype and device; the
    tensors a plan runs may be others of the same kind). Shapes as in Plan.run; tree: a SharingTree.

    backend: "auto" (cuda-hydragen for CUDA tensors, cpu-hydragen on the host, the reference for fp64) or
    a name from hydragen.backends(), with plan options: "cuda-hydragen:form=wide:wide_kernel=mma64".
    scale: None for 1/sqrt(D).
    Raises ValueError naming the tensor and field that is wrong, hydragen.Unsupported with the reason a
    backend does not take the problem."""
    return Plan(_core.Plan(exported(q, "q"), exported_segments(k_segments, "k"), exported_segments(v_segments, "v"),
                           tree, backend, 0.0 if scale is None else scale))


def attention(q, k_segments, v_segments, tree, backend="auto", scale=None, *, stream=None):
    """(o, lse) of q over the segments: plan(...).run(...) in one call. For repeated calls (a decode
    loop, a CUDA graph) make the plan once: this one allocates and frees a plan every time."""
    return plan(q, k_segments, v_segments, tree, backend, scale).run(q, k_segments, v_segments, stream=stream)
