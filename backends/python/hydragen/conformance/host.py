"""A kernel's output as a NumPy array on the host, whatever framework and device it came from."""
import sys

import numpy as np

from .._frameworks import framework


def host_numpy(tensor):
    """The tensor's values in host memory, bf16 widened to float32 (exactly; NumPy has no bf16): the
    check reads host memory, and takes its tolerance from the case's dtype, not the storage's."""
    kind = framework(tensor)
    if kind == "torch":
        tensor = tensor.detach().cpu()
        return (tensor.float() if tensor.dtype == sys.modules["torch"].bfloat16 else tensor).numpy()
    array = tensor.get() if kind == "cupy" else np.asarray(tensor)
    return array.astype(np.float32) if array.dtype.name == "bfloat16" else array  # JAX's, through ml_dtypes
