"""hydragen.conformance: the case matrix run against anyone's attention kernel.

    report = hydragen.conformance(kernel)          # the default matrix; print(report) for the table
    assert report.ok, report
    hydragen.conformance(hydragen.conformance.padded(my_sdpa_like_kernel))

From a shell: python -m hydragen.conformance module:function (exit 1 on a failure). The kernel's contract
and the adapters for padded, paged and prefix + suffix layouts: docs/conformance.md.
"""
import sys
import types

from .._core import Unsupported
from .cases import NUMPY_DTYPES, Case
from .layouts import padded, paged, prefix_suffix, segments, to_torch
from .matrix import DTYPES, PROBLEMS, default_cases
from .report import FAIL, PASS, SKIPPED, Report, Row
from .suite import run

__all__ = ["Case", "DTYPES", "FAIL", "NUMPY_DTYPES", "PASS", "PROBLEMS", "Report", "Row", "SKIPPED", "Unsupported",
           "default_cases", "padded", "paged", "prefix_suffix", "run", "segments", "to_torch"]


class _CallableModule(types.ModuleType):
    """DESIGN.md names both hydragen.conformance(kernel, ...) and python -m hydragen.conformance: the
    module itself is the call, so the adapters stay beside it (hydragen.conformance.padded)."""

    def __call__(self, kernel, cases=None, *, strict_lse=False, name=None):
        return run(kernel, cases, strict_lse=strict_lse, name=name)

    __call__.__doc__ = run.__doc__


sys.modules[__name__].__class__ = _CallableModule
