"""python -m hydragen.conformance module:function: the report on stdout, exit 0 when nothing failed,
1 on a failure, 2 on bad usage."""
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent


def conformance(*args):
    return subprocess.run([sys.executable, "-m", "hydragen.conformance", *args], capture_output=True, text=True,
                          cwd=HERE)


def test_a_passing_kernel_exits_0_with_the_table(tmp_path):
    run = conformance("conformance_kernels:correct", "--csv", str(tmp_path / "r.csv"),
                      "--markdown", str(tmp_path / "r.md"))
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("conformance_kernels:correct: 42 cases, 42 passed, 0 failed, 0 skipped\n")
    assert (tmp_path / "r.md").read_text() == run.stdout
    assert len((tmp_path / "r.csv").read_text().splitlines()) == 43


def test_skipped_cases_do_not_fail_the_run():
    run = conformance("conformance_kernels:decode_only")
    assert run.returncode == 0 and "18 passed, 0 failed, 24 skipped" in run.stdout


def test_a_broken_kernel_exits_1_with_its_repro_lines():
    run = conformance("conformance_kernels:dropped_key", "--cases", "causal*")
    assert run.returncode == 1
    assert "6 cases, 0 passed, 6 failed" in run.stdout and run.stdout.count("reproduce: `hydragen-diff ") == 6


def test_list_names_the_cases():
    run = conformance("conformance_kernels:correct", "--list", "--cases", "*-fp16")
    assert run.returncode == 0 and len(run.stdout.splitlines()) == 14
    assert run.stdout.startswith("one_sequence-fp16: B=1 q_len=1 Hq=4 Hkv=4 D=64 fp16")


@pytest.mark.parametrize("args, message", [
    (["conformance_kernels"], "expected module:function"),
    (["no_such_module:f"], "cannot import no_such_module"),
    (["conformance_kernels:no_such_kernel"], "conformance_kernels has no callable no_such_kernel"),
    (["conformance_kernels:correct", "--cases", "nothing*"], "matches none of the 42 cases"),
    ([], "the following arguments are required: kernel"),
])
def test_bad_usage_exits_2_naming_the_problem(args, message):
    run = conformance(*args)
    assert run.returncode == 2 and message in run.stderr, run.stderr
