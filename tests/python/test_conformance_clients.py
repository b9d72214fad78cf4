"""experiments/peers/conformance_clients.py, the GPU machine's run of real kernels through the suite:
what runs here without torch or FlashInfer (its flags, and which cases each form declines)."""
import importlib.util
from pathlib import Path

import pytest

from hydragen import conformance

SCRIPT = Path(__file__).parents[2] / "experiments" / "peers" / "conformance_clients.py"
spec = importlib.util.spec_from_file_location("conformance_clients", SCRIPT)
clients = importlib.util.module_from_spec(spec)
spec.loader.exec_module(clients)  # imports neither torch nor flashinfer
CASES = conformance.default_cases()


def test_every_form_runs_by_default(tmp_path):
    args = clients.parse_args([str(tmp_path / "reports")])
    assert args.forms == list(clients.FORMS) and args.cases == "*"


def test_forms_and_cases_can_be_chosen(tmp_path):
    args = clients.parse_args([str(tmp_path), "--forms", "torch-sdpa,flashinfer-decode-tc", "--cases", "*-bf16"])
    assert args.forms == ["torch-sdpa", "flashinfer-decode-tc"] and args.cases == "*-bf16"


@pytest.mark.parametrize("args, message", [
    (["--forms", "torch-sdpa,flashattention"], "--forms: flashattention is not one of torch-sdpa, "),
    (["--forms", "torch-sdpa,"], "--forms: an empty name is not one of"),
])
def test_bad_flags_exit_2_naming_them(tmp_path, capsys, args, message):
    with pytest.raises(SystemExit) as exit:
        clients.parse_args([str(tmp_path), *args])
    assert exit.value.code == 2 and message in capsys.readouterr().err


def test_an_out_dir_that_is_a_file_is_refused(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    with pytest.raises(SystemExit):
        clients.parse_args([str(tmp_path / "file")])
    assert "exists and is not a folder" in capsys.readouterr().err


def declined(supports):
    return {c.name for c in CASES if supports(c) is not True}


def test_decode_forms_decline_fp32_and_several_queries():
    assert declined(clients.decode_case) == {c.name for c in CASES if c.dtype == "fp32" or c.q_len > 1}


def test_the_cascade_declines_what_its_levels_cannot_hold():
    taken = {c.name.rsplit("-", 1)[0] for c in CASES if clients.cascade_case(c) is True}
    assert taken == {"depth3", "prefix_one_token"}  # q_len 1, a prefix shared by all, a token below it in every path
    assert clients.cascade_case(next(c for c in CASES if c.name == "prefix_ragged-bf16")).endswith("(an empty suffix)")
