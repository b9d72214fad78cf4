"""Runs a kernel over the cases and judges each output with hydragen.compare (the fp64 reference and
hydragen-diff's tolerances: nothing is judged here that the library does not judge)."""
from .._check import compare
from .._core import Unsupported
from .host import host_numpy
from .matrix import default_cases
from .report import FAIL, PASS, SKIPPED, Report, Row


def run(kernel, cases=None, *, strict_lse=False, name=None):
    """Every case through kernel(case), judged against the fp64 reference; returns a Report (print it
    for the table; .ok is False when a case failed). docs/conformance.md is the kernel's contract:

        kernel(case) -> o, or (o, lse)   o [B, q_len, Hq, D], lse [B, q_len, Hq] (natural log), any
                                         framework's tensors on any device
        kernel.supports(case)            optional: True, or why not (a str; False): the case is skipped
        raise hydragen.Unsupported(why)  the same, from inside the call

    cases: None for the default matrix (hydragen.conformance.default_cases()), else a list of Case.
    strict_lse: hold LSE to our backends' fp32-grade bound instead of what a merge at O's precision sees.
    A case the kernel raises anything else on, or returns the wrong shape for, fails."""
    if not callable(kernel):
        raise TypeError(f"conformance: the kernel must be callable, got {type(kernel).__name__}")
    report = Report(name or getattr(kernel, "__name__", type(kernel).__name__))
    for case in default_cases() if cases is None else cases:
        report.rows.append(_judged(kernel, case, strict_lse))
    return report


def _judged(kernel, case, strict_lse):
    row = Row(case.name, case.dtype, f"{case.shape.describe()} tree=({case.tree.describe()})", SKIPPED)
    refusal = _refusal(kernel, case)
    if refusal:
        row.detail = refusal
        return row
    try:
        o, lse = _outputs(kernel(case))
        comparison = compare(host_numpy(o), None if lse is None else host_numpy(lse), case.q, case.k, case.v,
                             case.tree, case.scale, strict_lse, dtype=case.dtype)
    except Unsupported as why:
        row.detail = f"Unsupported: {why}"
        return row
    except Exception as error:  # a kernel that crashes, or hands back the wrong shape, fails the case
        row.status, row.detail = FAIL, f"raised {type(error).__name__}: {error}"
    else:
        row.status = PASS if comparison.ok else FAIL
        row.o_ratio = comparison.o_bound_ratio
        row.lse_ratio = None if lse is None else comparison.lse_bound_ratio
        row.detail = comparison.summary
    if row.status == FAIL:
        row.repro = case.hydragen_diff_line()
    return row


def _refusal(kernel, case):
    """Why kernel.supports(case) declines the case, or None when it takes it (or has no supports)."""
    supports = getattr(kernel, "supports", None)
    if supports is None:
        return None
    answer = supports(case)
    if answer is True:
        return None
    if isinstance(answer, str) and answer:
        return f"supports(): {answer}"
    if answer is False:
        return "supports() returned False"
    raise TypeError(f"conformance: {case.name}: supports() must return True, False or a reason (str), "
                    f"got {answer!r}")


def _outputs(result):
    """(o, lse or None) from what a kernel returns: o, or a pair (o, lse)."""
    if isinstance(result, tuple):
        if len(result) != 2:
            raise ValueError(f"the kernel returned a tuple of {len(result)}: expected o or (o, lse)")
        return result
    return result, None

