"""hydragen.conformance: the case matrix against a kernel. A correct kernel passes every case in every
layout; the two broken ones (a key dropped, the scale off by 1e-3) are caught; declined cases are
skipped, never passed; a kernel without LSE is judged on O alone."""
import numpy as np
import pytest

import conformance_kernels as kernels
import hydragen
from hydragen import conformance

CASES = conformance.default_cases()


def statuses(report):
    return {row.case: row.status for row in report.rows}


def test_a_correct_kernel_passes_every_case_within_its_bounds():
    report = hydragen.conformance(kernels.correct)
    assert report.ok and report.count("pass") == len(CASES) == 42, report
    assert all(row.o_ratio <= 1 and row.lse_ratio <= 1 for row in report.rows)
    assert report.summary() == "correct: 42 cases, 42 passed, 0 failed, 0 skipped"


@pytest.mark.parametrize("kernel", [kernels.padded, kernels.paged, kernels.prefix_then_suffix,
                                    conformance.segments(hydragen.attention)],
                         ids=["padded", "paged", "prefix_suffix", "segments-hydragen.attention"])
def test_every_layout_adapter_hands_a_correct_kernel_what_it_needs(kernel):
    report = hydragen.conformance(kernel, CASES)
    assert report.ok and report.count("pass") == len(CASES), report


def test_a_key_dropped_from_one_sequence_is_caught():
    report = hydragen.conformance(kernels.dropped_key, CASES)
    assert not report.ok
    # Every case fails but those whose scores spread 1e4: their softmax is one-hot, the dropped key not its max.
    assert {c for c, s in statuses(report).items() if s == "pass"} == {
        c.name for c in CASES if c.logit_scale == 1e4}


def test_a_scale_off_by_1e_3_is_caught_where_the_dtype_can_see_it():
    report = hydragen.conformance(kernels.scale_off, CASES)
    assert not report.ok
    failed = {c for c, s in statuses(report).items() if s == "FAIL"}
    # fp32 and fp16 resolve 1e-3; bf16 (unit roundoff 3.9e-3) cannot, nor a one-hot softmax.
    assert failed == {c.name for c in CASES if c.dtype != "bf16" and c.logit_scale == 1}


def test_a_failure_names_its_errors_and_the_hydragen_diff_line_of_its_case():
    row = next(r for r in hydragen.conformance(kernels.scale_off, CASES).rows if r.case == "depth4_q2-fp32")
    assert row.o_ratio > 1 and row.lse_ratio > 1 and "o_failed=" in row.detail and row.detail.endswith(" FAIL")
    assert row.repro == ("hydragen-diff --backend cpu-flat --parents -1,0,0,1,1,2,3,3,4,5,5 "
                         "--lengths 20,0,9,7,30,4,2,11,5,1,8 --leaves 9,6,10,8,7 --q-len 2 --q-heads 8 "
                         "--kv-heads 1 --head-dim 64 --dtype fp32 --seed 10")
    markdown = hydragen.conformance(kernels.scale_off, CASES).markdown()
    assert f"reproduce: `{row.repro}`" in markdown


def test_the_line_writes_a_logit_scale_and_a_scale_that_read_back_exactly():
    case = conformance.Case("x", hydragen.SharingTree.prefix_suffix(4, [1]), head_dim=64, dtype="fp16",
                            seed=3, logit_scale=1e4, scale=0.1)
    assert case.hydragen_diff_line().endswith("--dtype fp16 --seed 3 --logit-scale 10000.0 --scale 0.100000001")


def test_a_case_hydragen_diff_cannot_run_says_so():
    case = conformance.Case("fp64", hydragen.SharingTree.flat([3]), dtype="fp64")
    assert case.hydragen_diff_line().startswith("not expressible with hydragen-diff: cpu-flat refuses it (")


def test_a_kernel_without_lse_is_judged_on_o_alone_and_the_report_says_so():
    report = hydragen.conformance(kernels.o_only, CASES)
    assert report.ok and all(row.lse_ratio is None for row in report.rows)
    assert report.summary().endswith("; no LSE returned: judged on O alone")
    assert "| one_sequence-bf16 | " in report.markdown() and "| not returned | pass |" in report.markdown()


def test_declared_cases_are_skipped_never_passed():
    report = hydragen.conformance(kernels.decode_only, CASES)
    assert report.ok  # skipped is not a failure
    rows = {row.case: row for row in report.rows}
    for case in CASES:
        row = rows[case.name]
        if case.q_len > 1:
            assert (row.status, row.detail) == ("skipped", "supports(): decode only (q_len 1)")
        elif case.dtype == "fp16":
            assert (row.status, row.detail) == ("skipped", "Unsupported: no fp16 kernel")
        else:
            assert row.status == "pass"
        assert (row.o_ratio is None) == (row.status == "skipped")


def test_a_kernel_that_raises_fails_with_its_message():
    row = hydragen.conformance(kernels.crashes, CASES[:1]).rows[0]
    assert (row.status, row.detail) == ("FAIL", "raised RuntimeError: out of shared memory")
    assert row.repro.startswith("hydragen-diff --backend cpu-flat ")


def test_an_output_of_the_wrong_shape_fails_naming_it():
    row = hydragen.conformance(lambda case: case.q[:, :, :1], CASES[:1]).rows[0]
    assert row.status == "FAIL" and row.detail.startswith("raised ValueError: o: ")


@pytest.mark.parametrize("kernel, message", [
    (42, "the kernel must be callable, got int"),
])
def test_bad_kernels_are_refused(kernel, message):
    with pytest.raises(TypeError, match=message):
        hydragen.conformance(kernel)


def test_supports_must_answer_true_false_or_a_reason():
    def kernel(case):
        return kernels.correct(case)

    kernel.supports = lambda case: 3
    with pytest.raises(TypeError, match=r"one_sequence-bf16: supports\(\) must return True, False or a reason"):
        hydragen.conformance(kernel, CASES[:1])


def test_a_bad_case_is_refused_with_the_librarys_message():
    with pytest.raises(ValueError, match="q_len"):
        conformance.Case("short leaf", hydragen.SharingTree.prefix_suffix(4, [0]), q_len=2)
    with pytest.raises(ValueError, match="q_scale"):
        conformance.Case("bad logits", hydragen.SharingTree.flat([3]), logit_scale=-1.0)


def test_the_paged_adapter_stores_a_shared_prefix_once():
    seen = {}

    @conformance.paged
    def kernel(q, k_pages, v_pages, page_table, lengths, scale):
        seen.update(pages=len(k_pages), table=page_table, lengths=lengths)
        return np.zeros(q.shape)

    case = next(c for c in CASES if c.name == "prefix_ragged-fp32")  # P = 64, suffixes 0, 5, 17, 1, 33, 0, 9
    kernel(case)
    assert seen["pages"] == 4 + (0 + 1 + 2 + 1 + 3 + 0 + 1)
    assert (seen["table"][:, :4] == np.arange(4)).all() and list(seen["lengths"]) == [64, 69, 81, 65, 97, 64, 73]
    with pytest.raises(ValueError, match="page_size must be a positive int, got 0"):
        conformance.paged(kernel, page_size=0)


def test_the_report_writes_csv_with_one_row_per_case():
    lines = hydragen.conformance(kernels.o_only, CASES).csv().splitlines()
    assert lines[0] == "kernel,case,dtype,shape,status,o_err_over_bound,lse_err_over_bound,detail,hydragen_diff"
    assert len(lines) == 1 + len(CASES) and lines[1].startswith("o_only,one_sequence-bf16,bf16,")
