"""python -m hydragen.conformance module:function: the suite against a kernel from a shell. Prints the
report; exit 0 when no case failed (passed or skipped), 1 on a failure, 2 on bad usage."""
import argparse
import fnmatch
import importlib
import sys
from pathlib import Path

from . import default_cases, run


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m hydragen.conformance", description=__doc__.split("\n\n")[0])
    parser.add_argument("kernel", help="module:function, a kernel(case) as docs/conformance.md defines it "
                                       "(an adapter's result, e.g. kernel = hydragen.conformance.padded(f))")
    parser.add_argument("--cases", metavar="PATTERN", default="*",
                        help="only the cases whose name matches this shell pattern (e.g. '*-bf16', 'causal*')")
    parser.add_argument("--list", action="store_true", help="list the cases and exit")
    parser.add_argument("--strict-lse", action="store_true", help="hold LSE to our backends' fp32-grade bound")
    parser.add_argument("--csv", type=Path, metavar="FILE", help="also write the report as CSV")
    parser.add_argument("--markdown", type=Path, metavar="FILE", help="also write the report as Markdown")
    args = parser.parse_args(argv)
    cases = [c for c in default_cases() if fnmatch.fnmatchcase(c.name, args.cases)]
    if not cases:
        parser.error(f"--cases {args.cases!r} matches none of the {len(default_cases())} cases (see --list)")
    if args.list:
        print("\n".join(f"{c.describe()}  [{c.what}]" for c in cases))
        return 0
    kernel = _loaded(parser, args.kernel)
    report = run(kernel, cases, strict_lse=args.strict_lse, name=args.kernel)
    print(report.markdown(), end="")
    for path, text in ((args.csv, report.csv), (args.markdown, report.markdown)):
        if path:
            path.write_text(text())
    return 0 if report.ok else 1


def _loaded(parser, spec):
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name or not attribute:
        parser.error(f"kernel {spec!r}: expected module:function (e.g. my_kernels:attention)")
    sys.path.insert(0, "")  # as python -m does for the current directory's modules
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        parser.error(f"kernel {spec!r}: cannot import {module_name}: {error}")
    kernel = getattr(module, attribute, None)
    if not callable(kernel):
        parser.error(f"kernel {spec!r}: {module_name} has no callable {attribute}")
    return kernel


if __name__ == "__main__":
    sys.exit(main())
