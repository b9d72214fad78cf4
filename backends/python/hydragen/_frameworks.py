"""The caller's framework, told from a tensor's type: its current CUDA stream and its allocator.

Nothing here imports a framework the caller has not imported: a tensor of it exists only if it was.
"""
import sys

import numpy as np

from . import _core

# Our dtype names -> each framework's.
_TORCH = {"fp64": "float64", "fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
_NUMPY = {"fp64": np.float64, "fp32": np.float32, "fp16": np.float16}


def framework(tensor):
    """'torch', 'numpy', 'cupy', 'jax' or another top-level module name."""
    top = type(tensor).__module__.partition(".")[0]
    return "jax" if top == "jaxlib" else top


def exported(tensor, name):
    """What the module imports for a tensor: a PyTorch tensor as its DLPack capsule, with PyTorch's
    refusal named (a tensor that requires grad, one on another GPU than the current); a CUDA one taken
    with stream=-1 (no synchronization): asked with none, PyTorch makes its default stream wait for the
    current one, an event that breaks a CUDA graph capture, while we run on the current stream anyway.
    Any other tensor as it is: the module calls its __dlpack__."""
    if framework(tensor) != "torch":
        return tensor
    try:
        return tensor.__dlpack__(stream=-1) if tensor.is_cuda else tensor.__dlpack__()
    except (BufferError, RuntimeError) as error:
        raise ValueError(f"{name}: {error}") from None


def contiguous(tensor):
    """A row-major copy of a tensor whose strides are not, else the tensor itself: for the checks
    (reference, compare), where a copy costs nothing that matters; attention and plan.run refuse
    instead, so that no copy hides in a timed path."""
    kind = framework(tensor)
    if kind == "torch":
        return tensor.contiguous()
    if kind in ("numpy", "cupy"):
        return sys.modules[kind].ascontiguousarray(tensor)
    return tensor  # JAX arrays are row-major


def exported_segments(segments, name):
    """exported() of each tensor of a list or tuple, or of one packed tensor."""
    if isinstance(segments, (list, tuple)):
        return [exported(t, f"{name}[{i}]") for i, t in enumerate(segments)]
    return exported(segments, name)


def stream_handle(like, stream=None):
    """The cudaStream_t to run on, as an integer: `stream` (an int, a torch.cuda.Stream or a cupy Stream)
    or, when None, the current stream of like's framework (PyTorch's, CuPy's); 0 is the default stream."""
    if stream is None:
        kind = framework(like)
        if kind == "torch" and like.is_cuda:
            return sys.modules["torch"].cuda.current_stream(like.device).cuda_stream
        if kind == "cupy":
            return sys.modules["cupy"].cuda.get_current_stream().ptr
        return 0
    for attribute in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
        if hasattr(stream, attribute):
            return int(getattr(stream, attribute))
    return int(stream)


def empty(like, shape, dtype, memory, device_id):
    """An uninitialised tensor of `shape` and our `dtype` ("fp32", ...) beside `like`, allocated by like's
    framework when it can write into its own tensors (PyTorch, NumPy, CuPy), else by us (JAX: see adopt)."""
    kind = framework(like)
    if kind == "torch":
        torch = sys.modules["torch"]
        return torch.empty(shape, dtype=getattr(torch, _TORCH[dtype]), device=like.device)
    if kind == "numpy" and dtype in _NUMPY:
        return np.empty(shape, dtype=_NUMPY[dtype])
    if kind == "cupy" and dtype in _NUMPY:
        cupy = sys.modules["cupy"]
        with cupy.cuda.Device(like.device.id):
            return cupy.empty(shape, dtype=_NUMPY[dtype])
    return _core.empty(list(shape), dtype, memory, device_id)


def adopt(like, tensor):
    """A tensor from `empty`, handed to like's framework: JAX takes ours through DLPack; others come back as
    they are (ours support __dlpack__ and the buffer protocol)."""
    if framework(like) == "jax" and framework(tensor) == "nanobind":
        return sys.modules["jax"].dlpack.from_dlpack(tensor)
    return tensor


def host_array(like, array):
    """An fp64 NumPy result in like's framework where it has host tensors (PyTorch, JAX), else NumPy."""
    kind = framework(like)
    if kind == "torch":
        return sys.modules["torch"].from_numpy(array)
    if kind == "jax":
        return sys.modules["jax"].numpy.asarray(array)
    return array
