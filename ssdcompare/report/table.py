"""The report's results table: a row per job, grouped by pattern family, and a cell per
device with its figures, its ratio to the baseline, what limited it and its notes."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ssdcompare.analysis.frame import is_false, is_true
from ssdcompare.analysis.pacing import reach_words
from ssdcompare.analysis.summary import options_line
from ssdcompare.judge.stats import why_untested
from ssdcompare.judge.verdict import LIMIT_WORDS, limit_word
from ssdcompare.suite.workload import RW_LABELS
from ssdcompare.units import format_bytes, format_count, format_latency, format_rate

# the pattern families, in the order the report shows them
FAMILY = {rw: (order, label.capitalize()) for order, (rw, label) in enumerate(RW_LABELS.items())}
FAMILY_ORDER = {label: order for order, label in FAMILY.values()}


@dataclass
class Cell:
    """One device's figures for one job, ready to display."""

    status: str
    iops: str = "-"
    bw: str = "-"
    lat: str = "-"
    p99: str = "-"
    ratio: str = ""
    ratio_note: str = ""
    ratio_test: str = ""  # the ratio's confidence interval and p-value, with 3+ repeats
    spread: str = ""
    cv: str = ""
    cpu_bound: bool = False  # the CPU or the host was the limit (verdict cpu or host)
    limit: str = ""  # "CPU-bound" or "host-bound", for the tooltip
    # verdict disturbed (steal, other processes, spread, short run) or throttled (the drive
    # slowed itself to cool down): hatched alike, the reason says which
    disturbed: bool = False
    reason: str | None = None
    footnote: int | None = None
    # False when this device ran the job from another jobfile than the baseline (different
    # workload hash): no ratio, a mark, and the footnote `jobfile_footnote` says what differs
    comparable: bool = True
    jobfile_note: str | None = None
    jobfile_footnote: int | None = None
    state: str = ""  # the state preconditioning put the drive in ("filled, steady")
    # that state as the table says it under the figures ("filled, steady after 5 rounds")
    state_words: str = ""
    state_off: bool = False  # not the state asked for: not steady, a failed fill, unknown
    # a write cliff in some run: where, and the levels before and after (a footnote)
    cliff: str = ""
    cliff_footnote: int | None = None
    # what fio's search for a latency target found (analysis.latencytarget): a footnote
    search: str = ""
    search_footnote: int | None = None
    # data came back wrong in a run of this result (fio's checks of the data failed), in
    # words with fio's own: said on the cell whatever its figures, with a footnote
    data_wrong: str = ""
    data_wrong_footnote: int | None = None
    # raw numbers for sorting the table: the displayed text ("1.20 GB/s") does not sort
    sort_iops: float = -1.0
    sort_bw: float = -1.0
    sort_lat: float = -1.0
    sort_p99: float = -1.0
    sort_ratio: float = -1.0

    @property
    def marks(self) -> str:
        """The classes of the device's cells: what limited it, a differing jobfile."""
        limit = "cpu" if self.cpu_bound else "dist" if self.disturbed else ""
        return f"{limit} nc".strip() if not self.comparable else limit

    @property
    def tip(self) -> str:
        """The tooltip of the device's figures: what limited it (or the spread of its repeats,
        or how its jobfile differs), a drive result's note, the drive's state."""
        if self.cpu_bound:
            said = [f"{self.limit}: {self.reason}"]
        elif self.disturbed:
            said = [self.reason or ""]
        else:
            said = [self.spread if self.comparable else self.jobfile_note or "", self.reason or ""]
        if self.state:
            said.append(f"drive {self.state}")
        return " · ".join(part for part in said if part)

    @property
    def written_tip(self) -> str:
        """The tooltip as the page writes it: none where it says just what the cell's own
        footnote says, whose text the page takes for it on load (said once, in the notes)."""
        tip = self.tip
        return "" if self.footnote is not None and tip == self.reason else tip

    @property
    def ratio_mark(self) -> str:
        """What the table says beside the ratio: "not significant", or the baseline's limit
        ("vs a CPU-bound"), which the table's legend explains."""
        if self.ratio_note.startswith("not significant"):
            return "not significant"
        return self.ratio_note.split(" baseline")[0] if self.ratio_note.startswith("vs") else ""

    @property
    def ratio_tip(self) -> str:
        """The ratio's tooltip: its note, or (against a limited baseline, which the legend
        explains once) its test."""
        return self.ratio_test if self.ratio_note.startswith("vs") else (
            self.ratio_note or self.ratio_test)  # fmt: skip


@dataclass
class Row:
    job: str
    what: str
    cells: list[Cell]
    extra: str | None = None  # fio options beyond the typed fields, shown with the workload
    order: int = 0  # position in the table's own order, which the workload column sorts by


@dataclass
class Group:
    name: str
    rows: list[Row] = field(default_factory=list)


def workload_words(row: dict[str, Any] | pd.Series) -> str:
    parts = [format_bytes(row["bs_bytes"])]
    if pd.notna(row["rwmixread"]) and row["rw"] in ("rw", "randrw"):
        parts.append(f"{int(row['rwmixread'])}/{100 - int(row['rwmixread'])} r/w")
    parts.append(f"QD{int(row['iodepth'])}")
    if int(row["numjobs"]) > 1:
        parts.append(f"x{int(row['numjobs'])} jobs")
    parts += flush_words(row.get("fsync"), row.get("fdatasync"))
    return " ".join(parts)


def flush_words(fsync: Any, fdatasync: Any) -> list[str]:
    """How often the job flushes, as tables and charts say it: "fsync", "fdatasync/4"."""
    words = []
    for flush, value in (("fsync", fsync), ("fdatasync", fdatasync)):
        every = int(value) if value is not None and pd.notna(value) else 0
        if every:
            words.append(flush if every == 1 else f"{flush}/{every}")
    return words


def sort_key(value: Any) -> float:
    """A number the table's sort can use; unknown values sort below every real figure."""
    return float(value) if value is not None and pd.notna(value) else -1.0


def _cell(row: dict[str, Any] | None, ratio: float | None, significant: object, baseline: bool,
          footnotes: Footnotes, baseline_limit: str = "", untested: str = "") -> Cell:  # fmt: skip
    """A table cell for one device's row of a job; `untested` is why its ratio could not be
    tested, should it not be (ssdcompare.judge.stats.why_untested)."""
    if row is None:
        return Cell(status="missing")
    wrong = row.get("data_wrong")
    if row["status"] != "ok":
        text = f"{str(row['status']).upper()}: {row['error'] or 'no result'}"
        return Cell(status=str(row["status"]), reason=text, footnote=_note(footnotes, text),
                    data_wrong=wrong if isinstance(wrong, str) else "")  # fmt: skip
    cell = _figures(row)
    if isinstance(wrong, str):  # in a repeat whose figures are left out: still said
        cell.data_wrong = f"{row['job']} on {row['label']}, in a repeat: {wrong}"
        cell.data_wrong_footnote = _note(footnotes, cell.data_wrong)
    if baseline:
        cell.ratio = "baseline"
        cell.sort_ratio = 1.0
    elif is_false(row.get("comparable")):
        cell.comparable = False
        cell.ratio = "≠ jobfile"
        cell.jobfile_note = str(row["comparable_note"])
        cell.jobfile_footnote = _note(footnotes, cell.jobfile_note)
    elif pd.notna(row.get("curve_pct")):
        # a paced point's IOPS are the load it was given: a ratio would read as a speed-up
        cell.ratio = "paced"
        cell.ratio_note = (
            "a curve's point, paced at a load: its IOPS are the load it was "
            "given, so no ratio; see the answer at a latency target"
        )
    elif ratio is not None and pd.notna(ratio):
        _ratio(cell, row, float(ratio), significant, baseline_limit, untested)
    _drive_notes(cell, row, footnotes)
    _search_note(cell, row, footnotes)
    _limit(cell, row, footnotes)
    return cell


def _figures(row: dict[str, Any]) -> Cell:
    """A finished result's figures, their numbers to sort by, and its repeats' spread."""
    cell = Cell(
        status="ok",
        iops=format_count(row["iops_value"]),
        bw=format_rate(row["bw_bytes_value"]),
        lat=format_latency(row["lat_mean_us_value"]),
        p99=format_latency(row["lat_p99_us_value"]),
        sort_iops=sort_key(row["iops_value"]),
        sort_bw=sort_key(row["bw_bytes_value"]),
        sort_lat=sort_key(row["lat_mean_us_value"]),
        sort_p99=sort_key(row["lat_p99_us_value"]),
    )
    if row["repeats"] >= 2 and pd.notna(row["iops_min"]):
        cell.cv = f"±{row['iops_cv_pct']:.0f}%"
        cell.spread = (
            f"{row['repeats']} repeats: IOPS {format_count(row['iops_min'])}–"
            f"{format_count(row['iops_max'])}, CV {row['iops_cv_pct']:.1f} %"
        )
    return cell


def _ratio(cell: Cell, row: dict[str, Any], ratio: float, significant: object,
           baseline_limit: str, untested: str) -> None:  # fmt: skip
    """A device's ratio to the baseline, its test, and what the reader should know of it."""
    cell.ratio = f"×{ratio:.2f}"
    cell.sort_ratio = ratio
    tested = pd.notna(row.get("p_value", float("nan")))
    if tested:
        cell.ratio_test = _ratio_test(row, significant)
    if baseline_limit:
        cell.ratio_note = (f"vs a {baseline_limit} baseline: the ratio says little about "
                           "the drives")  # fmt: skip
        if cell.ratio_test:
            cell.ratio_note += f" ({cell.ratio_test})"
    elif significant is False:
        cell.ratio_note = f"not significant: {cell.ratio_test}"
    elif not tested:
        cell.ratio_note = f"not tested: {untested}"


def _ratio_test(row: dict[str, Any], significant: object) -> str:
    """What the test of a ratio found, over all repeats (stats.compare)."""
    if row["ratio_ci_low"] == row["ratio_ci_high"]:
        # no spread on either side: nothing was weighed, nothing to test
        return (f"over all repeats ×{row['ratio']:.2f}, every repeat the same on each side: "
                + ("a certain difference" if significant else "no difference"))  # fmt: skip
    # the test weighs every repeat: its ratio (of geometric means) can differ from the one
    # shown, which is of the table's aggregates (--aggregate best, median)
    return (
        f"over all repeats ×{row['ratio']:.2f}, 95 % CI "
        f"×{row['ratio_ci_low']:.2f}–{row['ratio_ci_high']:.2f}, p = "
        f"{row['p_value']:.2g} (Welch's t-test)"
    )


def _limit(cell: Cell, row: dict[str, Any], footnotes: Footnotes) -> None:
    """What limited the result (CPU or host, a disturbance) or a drive result's note, as the
    cell's reason, with the footnote that says it."""
    verdict = row.get("verdict")
    if is_true(row["cpu_bound"]) or verdict in ("cpu", "host"):
        cell.cpu_bound = True
        cell.limit = limit_word(verdict, cpu_bound=True)
        cell.reason = str(row["verdict_reason"] or row["cpu_bound_reason"])
    elif verdict in ("throttled", "disturbed"):
        cell.disturbed = True
        cell.reason = f"{verdict}: {row['verdict_reason']}"
    elif isinstance(row.get("verdict_reason"), str):  # a drive result with a note
        cell.reason = str(row["verdict_reason"])
    short = reach_words(row)
    if short:  # a curve point that fell short: its latency is no point of the curve
        cell.reason = "; ".join(filter(None, [short, cell.reason]))
    if cell.reason:
        # the same reason for many results is one note: its number in each cell says where
        cell.footnote = _note(footnotes, cell.reason)


class Footnotes(list[str]):
    """The results' notes in order; a text said again keeps its first number."""

    def __init__(self) -> None:
        super().__init__()
        self.numbers: dict[str, int] = {}

    def number(self, text: str) -> int:
        if text not in self.numbers:
            self.append(text)
            self.numbers[text] = len(self)
        return self.numbers[text]


def _note(footnotes: Footnotes, text: str) -> int:
    """The number of the footnote saying `text`, added if none says it yet."""
    return footnotes.number(text)


def _drive_notes(cell: Cell, row: dict[str, Any], footnotes: Footnotes) -> None:
    """The drive's state (tooltip, and words for under the figures) and a write cliff
    (footnote) of one cell."""
    state = row.get("drive_state")
    if isinstance(state, str) and state != "as found":
        cell.state = state
    cell.state_words = drive_state_words(state, row.get("ss_rounds"))
    cell.state_off = not isinstance(state, str) or any(
        word in state for word in ("not steady", "fill failed", "unknown")
    )
    if row.get("cliff_runs", 0):
        cell.cliff = (
            f"write cliff at {row['cliff_s']:.0f} s in {row['cliff_runs']} of "
            f"{row['repeats']} run(s): {format_count(row['cliff_before_iops'])} → "
            f"{format_count(row['cliff_after_iops'])} IOPS"
        )
        cell.cliff_footnote = _note(footnotes, f"{row['job']} on {row['label']}: {cell.cliff}")


def _search_note(cell: Cell, row: dict[str, Any], footnotes: Footnotes) -> None:
    """What fio's search for a latency target found in the job's runs on this device, as a
    footnote of its cell."""
    found = row.get("latency_search")
    if isinstance(found, str):
        cell.search = found
        cell.search_footnote = _note(footnotes, f"{row['job']} on {row['label']}: {found}")


def drive_state_words(state: object, rounds: object = None) -> str:
    """A result's drive state in a reader's words: "filled, steady after 5 rounds", "not
    steady after 25 rounds", "empty drive", "as found"; `rounds` are the preconditioning
    rounds of the job (ss_rounds)."""
    if not isinstance(state, str):
        return "drive state unknown"
    known = rounds is not None and bool(pd.notna(rounds))
    count = int(rounds) if known else 0  # type: ignore[call-overload]
    after = f" after {count} round{'' if count == 1 else 's'}" if known else ""
    words = {"steady": f"steady{after}", "not steady": f"not steady{after}",
             "empty": "empty drive", "full": "full drive",
             "unknown": "drive state unknown"}  # fmt: skip
    return ", ".join(words.get(part, part) for part in state.split(", "))


def records(frame: pd.DataFrame, columns: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """The rows of `frame` as dicts of its `columns` (all without), the values as
    frame.to_dict("records") gives them (pandas' NA as None), made a column at a time rather
    than a value at a time."""
    names = list(frame.columns if columns is None else dict.fromkeys(columns))
    values = [[None if v is pd.NA else v for v in frame[name].tolist()] for name in names]
    return [dict(zip(names, row, strict=True)) for row in zip(*values, strict=True)]


def first_rows(summary: pd.DataFrame) -> dict[tuple[object, object], dict[str, Any]]:
    """The summary's row of each (job, device), the first one, as the table shows it."""
    found: dict[tuple[object, object], dict[str, Any]] = {}
    for record in records(summary):
        found.setdefault((record["job"], record["label"]), record)
    return found


# what the table says of a job's workload (workload_words), and what it is sorted by
_WORKLOAD = ["job", "rw", "bs_bytes", "rwmixread", "iodepth", "numjobs", "fsync", "fdatasync",
             "extra_options", "workload_options"]  # fmt: skip


def table_groups(
    summary: pd.DataFrame,
    rows_of: dict[tuple[object, object], dict[str, Any]],
    ratios: pd.DataFrame,
    labels: list[str],
    baseline: str,
    footnotes: Footnotes,
) -> list[Group]:
    """The table's rows, one per job, grouped by family (random reads, ...) in reading
    order; a cell per device. Footnotes are added to `footnotes` as cells need them."""
    groups: dict[str, Group] = {}
    jobs = summary.drop_duplicates("job").copy()
    jobs["family"] = jobs["rw"].map(lambda rw: FAMILY.get(rw, (9, rw))[0])
    jobs = jobs.sort_values(
        ["family", "bs_bytes", "numjobs", "fsync", "fdatasync", "rwmixread", "iodepth"],
        ascending=[True, True, True, True, True, False, True], kind="stable",
    )  # fmt: skip
    limits_of: dict[object, set[str]] = {}
    for record in records(summary[summary["label"] == baseline], ["job", "verdict", "cpu_bound"]):
        limits_of.setdefault(record["job"], set()).add(record_limit(record))
    ratio_of = ratios.to_dict("index")
    for order, job_row in enumerate(records(jobs, _WORKLOAD)):
        job = job_row["job"]
        name = family_name(job_row["rw"])
        group = groups.setdefault(name, Group(name))
        cells = []
        baseline_limit = worst_limit(limits_of.get(job, set()))
        base_row = rows_of.get((job, baseline)) or {}
        for label in labels:
            row = rows_of.get((job, label))
            ratio = significant = None
            if label != baseline and job in ratio_of:
                ratio = ratio_of[job][f"{label}/{baseline}"]
                significant = ratio_of[job][f"{label} significant"]
                significant = None if pd.isna(significant) else bool(significant)
            untested = why_untested((row or {}).get("repeats"), base_row.get("repeats"),
                                    pd.notna((row or base_row).get("pts_group")))  # fmt: skip
            cells.append(_cell(row, ratio, significant, label == baseline, footnotes,
                               baseline_limit, untested))  # fmt: skip
        extra = options_line(job_row)
        what = workload_words(job_row)
        group.rows.append(Row(str(job), what, cells, extra=extra, order=order))
    return list(groups.values())


_LIMITS = (*LIMIT_WORDS.values(), "")  # the first one found is the one said


def record_limit(record: dict[str, Any]) -> str:
    """What limited one baseline result, in words ("CPU-bound"), or "" for a drive."""
    return limit_word(record.get("verdict"), cpu_bound=is_true(record.get("cpu_bound")))


def worst_limit(found: set[str]) -> str:
    """What limited the baseline's result(s) of a job: the first of _LIMITS among them."""
    return next((limit for limit in _LIMITS if limit in found), "")


def family_name(rw: object) -> str:
    return FAMILY.get(rw, (9, str(rw)))[1]  # type: ignore[arg-type]
