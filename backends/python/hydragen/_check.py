"""hydragen.reference and hydragen.compare: the fp64 definition, and anyone's output judged against it."""
from . import _core
from ._frameworks import contiguous, exported, exported_segments, host_array


def reference(q, k_segments, v_segments, tree, scale=None):
    """(o, lse) in fp64 on the host, from the tensors' values (any dtype, widened exactly; CUDA tensors are
    copied once the device is idle): PyTorch tensors for PyTorch inputs, JAX arrays for JAX, else NumPy.
    Shapes as in hydragen.Plan.run."""
    o, lse = _core.reference(*_inputs(q, k_segments, v_segments), tree, 0.0 if scale is None else scale)
    return host_array(q, o), host_array(q, lse)


def compare(o, lse, q, k_segments, v_segments, tree, scale=None, strict_lse=False, dtype=None):
    """o (and lse, unless None) of some kernel against the fp64 reference on q, k, v, by hydragen-diff's
    rules: every element of o within its dtype's tolerance (dtype: another's, "bf16" for a bf16 kernel's o
    handed over widened), NaN never passing; lse within what a merge at o's precision could see
    (strict_lse: our backends' fp32-grade bound). Returns a Comparison: .ok, .summary (hydragen-diff's
    line), the errors and .o_bound_ratio / .lse_bound_ratio (worst error over its bound: <= 1 passes).

        assert hydragen.compare(my_o, my_lse, q, ks, vs, tree).ok
    """
    return _core.compare(_checked(o, "o"), None if lse is None else _checked(lse, "lse"),
                         *_inputs(q, k_segments, v_segments), tree, 0.0 if scale is None else scale, strict_lse,
                         dtype)


def _checked(tensor, name):
    """A tensor of any strides, exported row-major (a kernel's output is often a view)."""
    return exported(contiguous(tensor), name)


def _row_major_segments(segments):
    """contiguous() of each tensor of a list or tuple, or of one packed tensor."""
    if isinstance(segments, (list, tuple)):
        return [contiguous(t) for t in segments]
    return contiguous(segments)


def _inputs(q, k_segments, v_segments):
    return (_checked(q, "q"), exported_segments(_row_major_segments(k_segments), "k"),
            exported_segments(_row_major_segments(v_segments), "v"))
