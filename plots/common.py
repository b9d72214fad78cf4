"""Shared by the plots/ scripts: reading hydragen-sweep CSVs, method keys, the speedup join, axes and
saving. Expects the Debian python3 (/usr/bin/python3) with python3-matplotlib and python3-numpy."""
import argparse
import csv
import os
import sys
import zlib
from dataclasses import dataclass

import matplotlib

matplotlib.use("Agg")  # files only: the scripts run on headless machines
import matplotlib.pyplot as plt  # noqa: E402  (after choosing the backend)
from matplotlib import ticker  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.transforms import blended_transform_factory  # noqa: E402

INTS = ("B", "P", "S", "q_len", "Hq", "Hkv", "D")
FLOATS = ("median_ms", "min_ms", "max_ms", "tflops", "gbps", "floor_ms", "time_over_floor", "nominal_share")
# Two rows describe the same problem when all of these agree; only then is a speedup defined.
SHAPE = ("device", "dtype", "B", "P", "S", "q_len", "Hq", "Hkv", "D", "tree")
# What every figure holds fixed; its title names them.
SETTING = ("device", "dtype", "q_len", "Hq", "Hkv", "D")
SPEEDUP_COLUMNS = SHAPE + ("backend", "storage", "median_ms", "status")

# (target, baseline, extra lines): the first whose target and baseline are in the data is the default.
COMPARISONS = (
    ("cuda-hydragen:shared", "cuda-flash:redundant",
     ("cuda-flash:shared", "torch-hydragen:shared", "torch-flash:redundant", "flashinfer-cascade:shared",
      "flashinfer-paged:shared", "flashinfer-paged-tc:shared", "flashinfer-prefix-fa3:shared",
      "flashinfer-prefix-fa2:shared")),
    ("cpu-hydragen:shared", "cpu-flat:shared", ("cpu-flat:redundant",)),
)
# Names usable wherever a method is taken, each meaning per point the fastest of its members that ran
# (see Method): (what figures call it, members).
ALIASES = {
    "best-flat": ("best flat", ("cuda-flash:shared", "cuda-flash:redundant", "torch-flash:redundant",
                                "flashinfer-paged:shared", "flashinfer-paged-tc:shared")),
    "flashinfer": ("best FlashInfer", ("flashinfer-cascade:shared", "flashinfer-paged:shared",
                                       "flashinfer-paged-tc:shared", "flashinfer-prefix-fa3:shared",
                                       "flashinfer-prefix-fa2:shared")),
}
# Fixed colors so a method looks the same in every figure; Hydragen warm, flat attention cool, other
# libraries (FlashInfer) greens and browns, the aliases (best-ofs) dark shades.
COLORS = {
    "cuda-hydragen:shared": "#d62728", "cuda-flash:shared": "#1f77b4", "cuda-flash:redundant": "#17becf",
    "cuda-naive:shared": "#7f7f7f", "cuda-naive:redundant": "#c7c7c7", "torch-hydragen:shared": "#ff7f0e",
    "torch-flash:redundant": "#9467bd", "cpu-hydragen:shared": "#e377c2", "cpu-flat:shared": "#2ca02c",
    "cpu-flat:redundant": "#bcbd22", "flashinfer-cascade:shared": "#8c564b", "flashinfer-paged:shared": "#1b7837",
    "flashinfer-paged-tc:shared": "#b8860b", "flashinfer-prefix-fa3:shared": "#5aae61",
    "flashinfer-prefix-fa2:shared": "#a6611a", "best-flat": "#08306b", "flashinfer": "#543005",
}
ORDER = tuple(COLORS)


class InputError(Exception):
    """Bad input (file, column, value, selection): the script prints it on one line and exits 2."""


def run(main):
    try:
        main()
    except InputError as e:
        print(f"{os.path.basename(sys.argv[0])}: error: {e}", file=sys.stderr)
        sys.exit(2)


def arguments(description, speedup=False):
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("csv", nargs="+", help="hydragen-sweep CSV files, concatenated")
    parser.add_argument("--out", required=True, help="PNG file to write")
    parser.add_argument("--where", action="append", default=[], metavar="COLUMN=VALUE[,VALUE...]",
                        help="keep only rows whose COLUMN is one of the values (repeatable), e.g. --where S=0,256")
    if speedup:
        both = (f"; METHOD,METHOD,... or an alias ({', '.join(ALIASES)}) means per point the fastest of "
                "those methods that ran")
        parser.add_argument("--target", type=parse_methods,
                            help="backend[:storage] (default cuda-hydragen:shared, or cpu-hydragen:shared "
                                 "when the data has no CUDA pair)" + both)
        parser.add_argument("--baseline", type=parse_methods,
                            help="backend[:storage] (default cuda-flash:redundant, or cpu-flat:shared)" + both)
    return parser


def _convert(column, text, where):
    if column in INTS:
        try:
            return int(text)
        except ValueError:
            raise InputError(f"{where}: {column} is '{text}', not an integer") from None
    if column in FLOATS:
        if text == "":
            return None  # not measured: status is not ok, or no peaks (CPU) for the floor columns
        try:
            return float(text)
        except ValueError:
            raise InputError(f"{where}: {column} is '{text}', not a number") from None
    return text


def read_csv(path, columns):
    """The rows of one CSV as dicts of strings, in file order; InputError when the file cannot be read or lacks
    one of `columns`."""
    try:
        with open(path, newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in columns if c not in (reader.fieldnames or [])]
            if missing:
                raise InputError(f"{path}: missing column(s) {', '.join(missing)}")
            return list(reader)
    except OSError as e:
        raise InputError(f"cannot read {path}: {e.strerror}") from None


def load(paths, columns):
    """Rows of every file as dicts (ints, floats or None, strings), checking that `columns` exist."""
    rows = []
    for path in paths:
        for line, raw in enumerate(read_csv(path, [c for c in columns if c != "tree"]), start=2):
            where = f"{path}:{line}"
            row = {c: _convert(c, text or "", where) for c, text in raw.items() if c is not None}  # None: extra fields
            row.setdefault("tree", "prefix")  # files from before the sweep had trees
            if "median_ms" in row and row.get("status") == "ok" and row["median_ms"] is None:
                raise InputError(f"{where}: status ok without median_ms")
            rows.append(row)
    if not rows:
        raise InputError(f"no data rows in {', '.join(paths)}")
    return rows


def select(rows, where):
    """Rows matching every COLUMN=V1[,V2...] of --where (any of the values, compared as written in the CSV)."""
    for condition in where:
        column, sep, values = condition.partition("=")
        if not sep or column not in rows[0]:
            raise InputError(f"--where '{condition}': expected COLUMN=VALUE[,VALUE...] with a CSV column")
        rows = [r for r in rows if _text(r[column]) in values.split(",")]
        if not rows:
            raise InputError(f"no rows match --where {' '.join(where)}")
    return rows


def at_most(count, limit, what, narrow):
    """Refuses a figure too crowded to read, saying how to narrow it."""
    if count > limit:
        raise InputError(f"{count} {what} are more than {limit} to draw legibly: keep fewer with {narrow}")


def _text(value):
    return "" if value is None else f"{value:g}" if isinstance(value, float) else str(value)


def parse_method(spec):
    """'backend[:option=value...][:shared|redundant]' (hydragen-sweep's backend spec) -> method key
    'backend[:option=value...]:storage'; the storage defaults to shared as in hydragen-sweep."""
    fields = spec.split(":")
    storages = [f for f in fields[1:] if f in ("shared", "redundant")]
    options = [f for f in fields[1:] if f not in ("shared", "redundant")]
    if not fields[0] or len(storages) > 1 or any("=" not in f for f in options):
        raise argparse.ArgumentTypeError(f"'{spec}': expected backend[:option=value...][:shared|redundant]")
    return ":".join([fields[0]] + options + [storages[0] if storages else "shared"])


@dataclass(frozen=True)
class Method:
    """What --target, --baseline and --also name: one method key, or several (a list, or an alias) that
    stand at each point for the fastest of them with an ok row (see fastest())."""
    members: tuple  # method keys, 'backend:storage'
    alias: str | None = None  # a key of ALIASES when named by one

    @property
    def best_of(self):
        return self.alias is not None or len(self.members) > 1

    def __str__(self):
        return self.alias or ",".join(self.members)

    def absent(self, present):
        """Members without rows that it cannot do without: any for a method or a list (a typo, or the
        wrong file), all of them for an alias (which may well span more peers than were run)."""
        gone = [m for m in self.members if m not in present]
        return gone if self.alias is None or len(gone) == len(self.members) else []

    def measured(self, present):
        """An alias narrowed to its members with rows, so that labels name only what was compared."""
        kept = tuple(m for m in self.members if m in present)
        return Method(kept, self.alias) if self.alias is not None and kept else self


def parse_methods(spec):
    """--target/--baseline: a backend spec (parse_method), an alias of ALIASES, or a comma-separated list
    of either, meaning per point the fastest of them (an alias in a list stands for its members)."""
    if spec in ALIASES:
        return Method(ALIASES[spec][1], alias=spec)
    members = []
    for item in spec.split(","):
        for key in ALIASES[item][1] if item in ALIASES else (parse_method(item),):
            if key not in members:
                members.append(key)
    return Method(tuple(members))


def as_method(method):
    """A Method from a Method or a single method key."""
    return method if isinstance(method, Method) else Method((method,))


def method_key(row):
    """The CSV's backend column (the backend with its plan options) and its storage."""
    return f"{row['backend']}:{row['storage']}"


def method_label(method):
    """'cuda-flash (redundant)', 'fastest of A, B' for a list, 'best flat (fastest of A, B, ...)' for an alias."""
    method = as_method(method)
    if not method.best_of:
        backend, storage = method.members[0].rsplit(":", 1)
        return f"{backend} ({storage})"
    fastest_of = f"fastest of {', '.join(method.members)}"
    return f"{ALIASES[method.alias][0]} ({fastest_of})" if method.alias else fastest_of


def method_color(method):
    key = str(as_method(method))
    if key in COLORS:
        return COLORS[key]
    palette = plt.get_cmap("tab20").colors  # stable across runs and figures, unlike a color cycle
    return palette[zlib.crc32(key.encode()) % len(palette)]


def methods(rows):
    """Method keys present, known ones in a fixed order, then the rest alphabetically."""
    present = {method_key(r) for r in rows}
    return sorted(present, key=lambda k: (ORDER.index(k) if k in ORDER else len(ORDER), k))


def _check_present(method, present):
    gone = method.absent(present)
    if gone:
        what = (f"any method of {method.alias} ({', '.join(method.members)})" if method.alias else
                f"method {', '.join(gone)} of the list {method}" if method.best_of else f"method {gone[0]}")
        raise InputError(f"no rows for {what} (methods present: {', '.join(sorted(present))}; "
                         f"aliases: {', '.join(ALIASES)})")


def comparison(rows, target, baseline):
    """(target, baseline, extra methods to draw by default), as Methods with aliases narrowed to the
    members present: what was not given comes from the first pair of COMPARISONS present in the data."""
    present = set(methods(rows))
    if target is None or baseline is None:
        for t, b, extra in COMPARISONS:
            chosen = (target or Method((t,)), baseline or Method((b,)))
            if not any(m.absent(present) for m in chosen):
                chosen = tuple(m.measured(present) for m in chosen)
                return *chosen, [Method((m,)) for m in extra if m in present and Method((m,)) not in chosen]
        target, baseline = target or Method((COMPARISONS[0][0],)), baseline or Method((COMPARISONS[0][1],))
    for method in (target, baseline):
        _check_present(method, present)
    return target.measured(present), baseline.measured(present), []


@dataclass
class Ratio:
    shape: dict  # the SHAPE columns of the point
    speedup: float | None  # baseline median / target median; None when either did not run
    target_status: str
    baseline_status: str

    def note(self):
        """Cell text when there is no number: the paper's 'x' for a baseline out of memory."""
        if self.baseline_status == "oom" and self.target_status == "ok":
            return "x"
        return self.target_status if self.target_status != "ok" else self.baseline_status


def fastest(candidates):
    """The row a best-of stands for at one point, from its members' rows there: the fastest ok one; with
    none ok, an oom row when every member that ran was oom (the paper's "x"), else a failed one (its
    status is the note); None when every member was unsupported (outside its domain, e.g. FlashInfer's
    paged decode at q_len > 1): the best-of has no row there at all, as if not measured."""
    tried = [r for r in candidates if r["status"] != "unsupported"]
    ok = [r for r in tried if r["status"] == "ok"]
    if ok:
        return min(ok, key=lambda r: r["median_ms"])
    failed = [r for r in tried if r["status"] != "oom"]
    return (failed or tried or [None])[0]


def per_point(rows, method):
    """{SHAPE values: the row standing for the method there}: a later row of a member replaces an earlier
    one; a single method's row whatever its status, a best-of's from fastest()."""
    method = as_method(method)
    by_point = {}
    for row in rows:
        if method_key(row) in method.members:
            by_point.setdefault(tuple(row[c] for c in SHAPE), {})[method_key(row)] = row
    if not method.best_of:
        return {point: next(iter(members.values())) for point, members in by_point.items()}
    chosen = {point: fastest(members.values()) for point, members in by_point.items()}
    return {point: row for point, row in chosen.items() if row is not None}


def speedups(rows, target, baseline):
    """One Ratio per SHAPE point present for both methods (keys or Methods; per_point())."""
    by_baseline = per_point(rows, baseline)
    ratios = []
    for key, t in per_point(rows, target).items():
        b = by_baseline.get(key)
        if b is None:
            continue
        ok = t["status"] == "ok" and b["status"] == "ok"
        ratios.append(Ratio(dict(zip(SHAPE, key)), b["median_ms"] / t["median_ms"] if ok else None,
                            t["status"], b["status"]))
    return ratios


def joined(rows, target, baseline):
    """speedups(), failing when the methods share no point."""
    ratios = speedups(rows, target, baseline)
    if not ratios:
        raise InputError(f"{target} and {baseline} share no point ({', '.join(SHAPE)} all equal)")
    return ratios


def single(records, columns):
    """The one value of each column over the records (dicts); mixing values would overlay unlike points."""
    values = {}
    for c in columns:
        seen = sorted({_text(r[c]) for r in records})
        if len(seen) > 1:
            raise InputError(f"rows mix {c} values {', '.join(seen)}: keep one with --where {c}=VALUE")
        values[c] = records[0][c]
    return values


def setting(values):
    """'NVIDIA H100 80GB HBM3: bf16, Hq=8, Hkv=1, D=128' from single(..., SETTING)."""
    text = f"{values['device']}: {values['dtype']}, Hq={values['Hq']}, Hkv={values['Hkv']}, D={values['D']}"
    return text + (f", q_len={values['q_len']}" if values["q_len"] != 1 else "")


def size_axis(ax, values):
    """x axis of token or sequence counts: log2 when they span 8x or more, ticks at the values present."""
    values = sorted(set(values))
    if values[0] > 0 and values[-1] / values[0] >= 8:
        ax.set_xscale("log", base=2)
    if 2 <= len(values) <= 8:
        ax.xaxis.set_major_locator(ticker.FixedLocator(values))
        ax.xaxis.set_minor_locator(ticker.NullLocator())
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))


def panel_grid(count, ncols, width, height, **kwargs):
    """`count` panels of width x height inches in rows of `ncols`; returns the figure and those axes."""
    nrows = -(-count // ncols)
    fig, axes = plt.subplots(nrows, ncols, squeeze=False, layout="constrained",
                             figsize=(width * ncols + 0.8, height * nrows + 0.8), **kwargs)
    for ax in axes.flat[count:]:
        ax.set_visible(False)
    return fig, list(axes.flat[:count])


def label_edges(axes, ncols, xlabel, ylabel):
    """Axis labels on the bottom panel of each column and the left panel of each row only."""
    for k, ax in enumerate(axes):
        if k + ncols >= len(axes):
            ax.set_xlabel(xlabel)
        if k % ncols == 0:
            ax.set_ylabel(ylabel)


def log_y(ax):
    """Log y axis for ratios, labelled 1, 2, 5, 10... so that a range inside one decade still has numbers."""
    ax.set_yscale("log")
    ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1, 2, 5)))
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    ax.yaxis.set_minor_formatter(ticker.NullFormatter())


def mark_baseline_oom(ax, xs, color="black"):
    """The Hydragen paper's "x" near the top of the panel: the baseline did not fit, there is no ratio."""
    top = blended_transform_factory(ax.transData, ax.transAxes)
    for x in xs:
        ax.plot(x, 0.94, "x", color=color, ms=9, mew=2, transform=top, clip_on=False)


def oom_handle():
    return Line2D([], [], color="black", marker="x", ms=9, mew=2, ls="")


def oom_label(baseline):
    """Legend text for the "x": a best-of is out of memory only when every member that ran was."""
    return f"{'every one of ' if as_method(baseline).best_of else ''}{method_label(baseline)} out of memory"


def legend_below(fig, handles, labels, ncol=3):
    """Figure legend under the panels, so it never covers data (saved with bbox_inches='tight')."""
    fig.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, 0), ncol=min(len(labels), ncol),
               frameon=False)


def save(fig, path, title):
    fig.suptitle(title)
    try:
        if os.path.dirname(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
        fig.savefig(path, dpi=150, bbox_inches="tight")
    except OSError as e:
        raise InputError(f"cannot write {path}: {e.strerror}") from None
    plt.close(fig)
