"""The suite's verdicts: one Row per case, and the Report that prints them as a table (Markdown) or CSV."""
import csv
import io
from dataclasses import dataclass, field

PASS, FAIL, SKIPPED = "pass", "FAIL", "skipped"


@dataclass
class Row:
    case: str
    dtype: str
    shape: str                  # AttentionShape.describe() and the tree's description
    status: str                 # PASS, FAIL or SKIPPED
    o_ratio: float = None       # worst O error over its bound (<= 1 passes); None when not judged
    lse_ratio: float = None     # the same for LSE; None when the kernel returned none (or not judged)
    detail: str = ""            # the comparison's line, the skip reason or the exception raised
    repro: str = ""             # for a failure: the hydragen-diff line of the case


@dataclass
class Report:
    kernel: str                 # the callable's name
    rows: list = field(default_factory=list)

    def count(self, status):
        return sum(r.status == status for r in self.rows)

    @property
    def ok(self):
        """No case failed (skipped cases are not failures, nor passes)."""
        return self.count(FAIL) == 0

    @property
    def lse_never_returned(self):
        judged = [r for r in self.rows if r.o_ratio is not None]
        return bool(judged) and all(r.lse_ratio is None for r in judged)

    def summary(self):
        line = (f"{self.kernel}: {len(self.rows)} cases, {self.count(PASS)} passed, {self.count(FAIL)} failed, "
                f"{self.count(SKIPPED)} skipped")
        if self.lse_never_returned:
            line += "; no LSE returned: judged on O alone"
        return line

    def markdown(self):
        out = [self.summary(), "", "| case | O err/bound | LSE err/bound | result | detail |",
               "| --- | --- | --- | --- | --- |"]
        for r in self.rows:
            detail = "" if r.status == PASS else r.detail
            if r.status == FAIL and r.repro:
                detail += f"; reproduce: `{r.repro}`"
            out.append(f"| {r.case} | {_ratio(r.o_ratio)} | {_lse(r)} | {r.status} | {detail.replace('|', '/')} |")
        return "\n".join(out) + "\n"

    def csv(self):
        text = io.StringIO()
        writer = csv.writer(text, lineterminator="\n")
        writer.writerow(["kernel", "case", "dtype", "shape", "status", "o_err_over_bound", "lse_err_over_bound",
                         "detail", "hydragen_diff"])
        for r in self.rows:
            writer.writerow([self.kernel, r.case, r.dtype, r.shape, r.status, _number(r.o_ratio),
                             _number(r.lse_ratio), r.detail, r.repro])
        return text.getvalue()

    def __str__(self):
        return self.markdown()


def _ratio(value):
    return "" if value is None else f"{value:.3g}"


def _lse(row):
    if row.o_ratio is not None and row.lse_ratio is None:
        return "not returned"
    return _ratio(row.lse_ratio)


def _number(value):
    return "" if value is None else repr(value)
