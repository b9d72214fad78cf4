"""Where PyTorch is installed, it is imported before hydragen: our module needs the CUDA runtime and
cuBLAS by soname, and whichever copy loads first serves both. PyTorch's (its wheels', as new as or newer
than the toolkit's our module was built with) must be that one, as in a program that imports torch first."""
import importlib.util

if importlib.util.find_spec("torch") is not None:
    import torch  # noqa: F401
