"""The HTML comparison report: one self-contained file built from result frames.

It never runs fio: everything comes from the stored results through `frame.load`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from ssdcompare import charts
from ssdcompare.answer import headline
from ssdcompare.errors import SsdcompareError
from ssdcompare.fiooptions import OPT_IN
from ssdcompare.fioresult import DISTRIBUTION_PERCENTILES
from ssdcompare.frame import (
    SERIES_SETTINGS,
    damaged_runs,
    is_false,
    is_true,
    job_summary,
    known_true,
    load,
    side_by_side,
)
from ssdcompare.outputs import check_report_path
from ssdcompare.persecond import timeseries
from ssdcompare.resources import templates
from ssdcompare.stats import aggregate_values, why_untested
from ssdcompare.store import ResultsDir, unique_folders, write_atomic
from ssdcompare.units import (
    format_bytes,
    format_count,
    format_duration,
    format_latency,
    format_rate,
)
from ssdcompare.verdict import VERDICTS
from ssdcompare.version import __version__
from ssdcompare.workload import RW_LABELS

TEMPLATE = "report.html.j2"
CV_WARN_PCT = 10.0
DAMAGED_LISTED = 10  # damaged runs named one by one in the warnings, the rest counted
OPEN_UP_TO = 60  # jobs: a larger report opens with its sections folded (the filter opens them)

# the pattern families, in the order the report shows them
_FAMILY = {rw: (order, label.capitalize()) for order, (rw, label) in enumerate(RW_LABELS.items())}
_FAMILY_ORDER = {label: order for order, label in _FAMILY.values()}


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
    disturbed: bool = False  # verdict disturbed: steal, other processes, spread, short run
    reason: str | None = None
    footnote: int | None = None
    # False when this device ran the job from another jobfile than the baseline (different
    # workload hash): no ratio, a mark, and the footnote `jobfile_footnote` says what differs
    comparable: bool = True
    jobfile_note: str | None = None
    jobfile_footnote: int | None = None
    state: str = ""  # the state preconditioning put the drive in ("filled, steady")
    # a write cliff in some run: where, and the levels before and after (a footnote)
    cliff: str = ""
    cliff_footnote: int | None = None
    # raw numbers for sorting the table: the displayed text ("1.20 GB/s") does not sort
    sort_iops: float = -1.0
    sort_bw: float = -1.0
    sort_lat: float = -1.0
    sort_p99: float = -1.0
    sort_ratio: float = -1.0


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


def _what(row: dict[str, Any] | pd.Series) -> str:
    parts = [format_bytes(row["bs_bytes"])]
    if pd.notna(row["rwmixread"]) and row["rw"] in ("rw", "randrw"):
        parts.append(f"{int(row['rwmixread'])}/{100 - int(row['rwmixread'])} r/w")
    parts.append(f"QD{int(row['iodepth'])}")
    if int(row["numjobs"]) > 1:
        parts.append(f"x{int(row['numjobs'])} jobs")
    parts += _flush_words(row.get("fsync"), row.get("fdatasync"))
    return " ".join(parts)


def _flush_words(fsync: Any, fdatasync: Any) -> list[str]:
    """How often the job flushes, as tables and charts say it: "fsync", "fdatasync/4"."""
    words = []
    for flush, value in (("fsync", fsync), ("fdatasync", fdatasync)):
        every = int(value) if value is not None and pd.notna(value) else 0
        if every:
            words.append(flush if every == 1 else f"{flush}/{every}")
    return words


def _sort_key(value: Any) -> float:
    """A number the table's sort can use; unknown values sort below every real figure."""
    return float(value) if value is not None and pd.notna(value) else -1.0


def _sweep_choices(results: ResultsDir) -> list[str]:
    """What the person running a sweep accepted that a reader must know about."""
    manifest = results.manifest
    found = []
    for option in manifest.allowed_options:
        found.append(
            f"{results.path.name}: fio option {option} was accepted with --allow-option: "
            f"{OPT_IN.get(option, 'it changes what the figures mean')}."
        )
    if manifest.guard_overrides:
        found.append(
            f"{results.path.name}: --destroy-data overwrote {'; '.join(manifest.guard_overrides)}."
        )
    return found


def _missing_ceilings(results: ResultsDir) -> list[str]:
    """A --ceiling sweep's reading jobs whose RAM-disk run did not finish: no ceiling."""
    manifest = results.manifest
    if not manifest.ceiling:
        return []
    missing = [w.job_id for w in manifest.suite.workloads
               if not w.writes and results.ceiling_iops(w.job_id) is None]  # fmt: skip
    if not missing:
        return []
    return [f"No ceiling for {', '.join(missing)}: the run on the RAM disk did not finish "
            f"(see ceiling/<job>/status.json in {results.path}); resume the sweep to measure "
            "it again. Their results are judged without one."]  # fmt: skip


def _warnings(frame: pd.DataFrame, summary: pd.DataFrame, sweeps: list[ResultsDir]) -> list[str]:
    found = []
    for results in sweeps:
        found += _sweep_choices(results)
        found += _missing_ceilings(results)
        remote = sorted({h.where for t in results.manifest.targets for p in t.parts
                         if p.remote and p.host is not None for h in [p.host]})  # fmt: skip
        if remote:
            found.append(
                f"Not CPU-sampled: host {', '.join(remote)} is another machine. Its results "
                "are judged on fio's own CPU figures only: verdict unknown unless fio's worker "
                "was saturated. Devices here and on hosts at this machine's addresses were "
                "sampled in full."
            )
        host = results.manifest.host
        odd = [g for g in host.cpu_governors if g != "performance"]
        if odd:
            found.append(
                f"{host.hostname}: CPU frequency governor is {', '.join(odd)}, not "
                "performance: clock changes add noise and can lower QD1 results "
                "(set it with `cpupower frequency-set -g performance`)."
            )
    found += _state_warnings(frame, sweeps)
    noisy = summary[(summary["repeats"] >= 2) & (summary["iops_cv_pct"] >= CV_WARN_PCT)]
    for _, row in noisy.iterrows():
        found.append(
            f"{row['job']} on {row['label']}: repeats differ by {row['iops_cv_pct']:.0f} % "
            "(coefficient of variation): run more repeats or longer jobs before trusting it."
        )
    if (summary["repeats"] < 2).all():
        found.append(
            "Each job ran once: run-to-run spread is unknown (use --repeat 3 to measure it)."
        )
    differing = summary[~summary["comparable"].fillna(True).astype(bool)]
    if not differing.empty:
        found.append(
            f"{len(differing)} result(s) ran a different jobfile than the baseline for the same "
            "job (other runtime, span, engine or options): marked ≠ jobfile and given no ratio; "
            "the notes say what differs."
        )
    bad = summary[summary["status"] != "ok"]
    if not bad.empty:
        found.append(
            f"{len(bad)} job(s) did not complete on some device: shown as FAILED, "
            "INTERRUPTED or DAMAGED, never as numbers."
        )
    damaged = damaged_runs(frame)
    if damaged:
        shown = "; ".join(damaged[:DAMAGED_LISTED])
        more = len(damaged) - DAMAGED_LISTED
        found.append(
            f"{len(damaged)} run(s) whose stored files cannot be used (damaged, refused, "
            f"holding impossible values, or not of this sweep) are left out of the figures: "
            f"{shown}" + (f"; and {more} more" if more > 0 else "")
        )
    return found


def _placed(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The rows the report can place (their workload is known), and a warning naming each
    run it cannot: a run folder that is not part of its sweep's plan (copied in from another
    sweep) has no workload, so no table or chart to be in."""
    known = frame["rw"].notna()
    runs = frame[~known].drop_duplicates(["sweep", "device", "job", "repeat"])
    said = [f"Not shown: {row['job']} on {row['label']} (repeat {row['repeat']}), "
            f"{str(row['status']).upper()}: {row['error'] or 'no result'}"
            for _, row in runs.iterrows()]  # fmt: skip
    return frame[known], said


def _sweep_info(results: ResultsDir) -> dict[str, object]:
    manifest = results.manifest
    runtimes = sorted({w.runtime_s for w in manifest.suite.workloads})
    ramps = sorted({w.ramp_s for w in manifest.suite.workloads})
    return {
        "path": str(results.path),
        "name": results.path.name,
        "suite": manifest.suite.name,
        "description": manifest.suite.description,
        "created_at": manifest.created_at,
        "host": manifest.host,
        "memory": format_bytes(manifest.host.memory_bytes),
        "runtime": ", ".join(format_duration(r) for r in runtimes),
        "ramp": ", ".join(format_duration(r) for r in ramps),
        "repeat": manifest.repeat,
        "jobs": len(manifest.suite.workloads),
        "ioengine": manifest.ioengine,
        "targets": ", ".join(t.name for t in manifest.targets),
        "precondition": (" then ".join(manifest.precondition) + " (SNIA PTS)")
        if manifest.precondition
        else _states_words(manifest.states)
        if manifest.states
        else "none: each drive as found",
    }


def _devices(sweeps: list[ResultsDir], labels: list[str], frame: pd.DataFrame) -> list[dict]:
    rows = []
    seen = set()
    for results in sweeps:
        parts = {p.name: p for t in results.manifest.targets for p in t.parts}
        for info in results.manifest.devices:
            part = parts.get(info.name)
            mine = frame["sweep"] == str(results.path)
            if part is not None and part.host is not None:  # "a:nvme0n1": nvme0n1 on host a
                mine &= (frame["device"] == part.device) & (frame["host"] == part.host.name)
            else:
                mine &= frame["device"] == info.name
            match = frame[mine]
            label = match["label"].iloc[0] if not match.empty else info.name
            if label in seen or label not in labels:
                continue
            seen.add(label)
            rows.append({
                "label": label,
                "model": info.model or "-",
                "firmware": info.firmware or "-",
                "size": format_bytes(info.size_bytes),
                "sort_size": _sort_key(info.size_bytes),
                "interface": info.transport or "-",
                "rotational": "-" if info.rotational is None else (
                    "yes" if info.rotational else "no"),
                "scheduler": info.scheduler or "-",
                "host": (part.host.where if part is not None and part.host is not None
                         else results.manifest.host.hostname),  # fmt: skip
                "path": info.path,
                "extra": ", ".join(
                    f"{k}={v}" for k, v in (
                        ("backing file", info.loop_backing_file),
                        ("compression", info.zram_comp_algorithm),
                        ("filesystem", info.filesystem),
                    ) if v
                ),
            })  # fmt: skip
    return rows


def _cell(row: dict[str, Any] | None, ratio: float | None, significant: object, baseline: bool,
          footnotes: Footnotes, baseline_limit: str = "", untested: str = "") -> Cell:  # fmt: skip
    """A table cell for one device's row of a job; `untested` is why its ratio could not be
    tested, should it not be (ssdcompare.stats.why_untested)."""
    if row is None:
        return Cell(status="missing")
    if row["status"] != "ok":
        text = f"{str(row['status']).upper()}: {row['error'] or 'no result'}"
        return Cell(status=str(row["status"]), reason=text, footnote=_note(footnotes, text))
    cell = Cell(
        status="ok",
        iops=format_count(row["iops_value"]),
        bw=format_rate(row["bw_bytes_value"]),
        lat=format_latency(row["lat_mean_us_value"]),
        p99=format_latency(row["lat_p99_us_value"]),
        sort_iops=_sort_key(row["iops_value"]),
        sort_bw=_sort_key(row["bw_bytes_value"]),
        sort_lat=_sort_key(row["lat_mean_us_value"]),
        sort_p99=_sort_key(row["lat_p99_us_value"]),
    )
    if row["repeats"] >= 2 and pd.notna(row["iops_min"]):
        cell.cv = f"±{row['iops_cv_pct']:.0f}%"
        cell.spread = (
            f"{row['repeats']} repeats: IOPS {format_count(row['iops_min'])}–"
            f"{format_count(row['iops_max'])}, CV {row['iops_cv_pct']:.1f} %"
        )
    if baseline:
        cell.ratio = "baseline"
        cell.sort_ratio = 1.0
    elif is_false(row.get("comparable")):
        cell.comparable = False
        cell.ratio = "≠ jobfile"
        cell.jobfile_note = str(row["comparable_note"])
        cell.jobfile_footnote = _note(footnotes, cell.jobfile_note)
    elif ratio is not None and pd.notna(ratio):
        cell.ratio = f"×{ratio:.2f}"
        cell.sort_ratio = float(ratio)
        tested = pd.notna(row.get("p_value", float("nan")))
        if tested and row["ratio_ci_low"] == row["ratio_ci_high"]:
            # no spread on either side (stats.compare): nothing was weighed, nothing to test
            cell.ratio_test = (f"over all repeats ×{row['ratio']:.2f}, every repeat the same "
                               "on each side: " + ("a certain difference" if significant
                                                   else "no difference"))  # fmt: skip
        elif tested:
            # the test weighs every repeat: its ratio (of geometric means) can differ from the
            # one shown, which is of the table's aggregates (--aggregate best, median)
            cell.ratio_test = (
                f"over all repeats ×{row['ratio']:.2f}, 95 % CI "
                f"×{row['ratio_ci_low']:.2f}–{row['ratio_ci_high']:.2f}, p = "
                f"{row['p_value']:.2g} (Welch's t-test)"
            )
        if baseline_limit:
            cell.ratio_note = (f"vs a {baseline_limit} baseline: the ratio says little about "
                               "the drives")  # fmt: skip
            if cell.ratio_test:
                cell.ratio_note += f" ({cell.ratio_test})"
        elif significant is False:
            cell.ratio_note = f"not significant: {cell.ratio_test}"
        elif not tested:
            cell.ratio_note = f"not tested: {untested}"
    _drive_notes(cell, row, footnotes)
    verdict = row.get("verdict")
    if is_true(row["cpu_bound"]) or verdict in ("cpu", "host"):
        cell.cpu_bound = True
        cell.limit = "host-bound" if verdict == "host" else "CPU-bound"
        cell.reason = str(row["verdict_reason"] or row["cpu_bound_reason"])
    elif verdict == "disturbed":
        cell.disturbed = True
        cell.reason = f"disturbed: {row['verdict_reason']}"
    elif isinstance(row.get("verdict_reason"), str):  # a drive result with a note
        cell.reason = str(row["verdict_reason"])
    if cell.reason:
        # the same reason for many results is one note: its number in each cell says where
        cell.footnote = _note(footnotes, cell.reason)
    return cell


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
    """The drive's state (tooltip) and a write cliff (footnote) of one cell."""
    state = row.get("drive_state")
    if isinstance(state, str) and state != "as found":
        cell.state = state
    if row.get("cliff_runs", 0):
        cell.cliff = (
            f"write cliff at {row['cliff_s']:.0f} s in {row['cliff_runs']} of "
            f"{row['repeats']} run(s): {format_count(row['cliff_before_iops'])} → "
            f"{format_count(row['cliff_after_iops'])} IOPS"
        )
        cell.cliff_footnote = _note(footnotes, f"{row['job']} on {row['label']}: {cell.cliff}")


def _first_rows(summary: pd.DataFrame) -> dict[tuple[object, object], dict[str, Any]]:
    """The summary's row of each (job, device), the first one, as the table shows it."""
    found: dict[tuple[object, object], dict[str, Any]] = {}
    for record in summary.to_dict("records"):
        found.setdefault((record["job"], record["label"]), record)
    return found


def _groups(
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
    jobs["family"] = jobs["rw"].map(lambda rw: _FAMILY.get(rw, (9, rw))[0])
    jobs = jobs.sort_values(
        ["family", "bs_bytes", "numjobs", "fsync", "fdatasync", "rwmixread", "iodepth"],
        ascending=[True, True, True, True, True, False, True], kind="stable",
    )  # fmt: skip
    limits_of: dict[object, set[str]] = {}
    for record in summary[summary["label"] == baseline].to_dict("records"):
        limits_of.setdefault(record["job"], set()).add(_record_limit(record))
    ratio_of = ratios.to_dict("index")
    for order, job_row in enumerate(jobs.to_dict("records")):
        job = job_row["job"]
        name = _family_name(job_row["rw"])
        group = groups.setdefault(name, Group(name))
        cells = []
        baseline_limit = _worst_limit(limits_of.get(job, set()))
        base_row = rows_of.get((job, baseline)) or {}
        for label in labels:
            row = rows_of.get((job, label))
            ratio = significant = None
            if label != baseline and job in ratio_of:
                ratio = ratio_of[job][f"{label}/{baseline}"]
                significant = ratio_of[job][f"{label} significant"]
                significant = None if pd.isna(significant) else bool(significant)
            untested = why_untested((row or {}).get("repeats"), base_row.get("repeats"))
            cells.append(_cell(row, ratio, significant, label == baseline, footnotes,
                               baseline_limit, untested))  # fmt: skip
        extra = job_row.get("extra_options")
        extra = str(extra) if extra is not None and pd.notna(extra) else None
        what = _what(job_row)
        group.rows.append(Row(str(job), what, cells, extra=extra, order=order))
    return list(groups.values())


_LIMITS = ("host-bound", "CPU-bound", "disturbed", "")  # the first one found is the one said


def _record_limit(record: dict[str, Any]) -> str:
    """What limited one baseline result, in words ("CPU-bound"), or "" for a drive."""
    verdict = record.get("verdict")
    if verdict == "host":
        return "host-bound"
    if verdict == "cpu" or is_true(record.get("cpu_bound")):
        return "CPU-bound"
    return "disturbed" if verdict == "disturbed" else ""


def _worst_limit(found: set[str]) -> str:
    """What limited the baseline's result(s) of a job: the first of _LIMITS among them."""
    return next((limit for limit in _LIMITS if limit in found), "")


def build_context(frame: pd.DataFrame, sweeps: list[ResultsDir], baseline: str | None = None,
                  aggregate: str = "mean") -> dict[str, object]:  # fmt: skip
    """Everything the template shows, computed from the frame (no fio, no sysfs)."""
    frame, unplaced = _placed(frame)
    if frame.empty:
        raise SsdcompareError("no results to report: the sweep recorded no runs yet")
    labels = list(dict.fromkeys(frame["label"]))
    baseline = labels[0] if baseline is None else baseline
    if baseline not in labels:
        raise SsdcompareError(f"--baseline {baseline!r} is not one of: {', '.join(labels)}")
    summary = job_summary(frame, baseline, aggregate)
    labels = list(dict.fromkeys(summary["label"]))
    footnotes = Footnotes()
    ratios = side_by_side(summary, "iops", baseline)
    rows_of = _first_rows(summary)
    groups = _groups(summary, rows_of, ratios, labels, baseline, footnotes)
    # outside the main table one mark stands for both: the CPU or the host was the limit
    limited = summary.assign(cpu_bound=known_true(summary["cpu_bound"])
                             | summary["verdict"].eq("host"))  # fmt: skip
    limited_runs = frame.assign(cpu_bound=known_true(frame["cpu_bound"])
                                | frame["verdict"].eq("host"))  # fmt: skip
    order = [row.job for group in groups for row in group.rows]
    sections, chart_notes = _charts(limited_runs, limited, rows_of, labels, baseline, ratios,
                                    order)  # fmt: skip
    return {
        "version": __version__,
        "generated_at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "labels": labels,
        "baseline": baseline,
        "aggregate": {
            "mean": "means",
            "median": "medians",
            "best": "the best run (highest IOPS and MB/s, lowest latency)",
        }[aggregate],
        "sweeps": [_sweep_info(s) for s in sweeps],
        "devices": _devices(sweeps, labels, frame),
        "warnings": _warnings(frame, summary, sweeps) + unplaced,
        "groups": groups,
        "footnotes": footnotes,
        "headline": [h.sentence for h in headline(summary, baseline)],
        "verdict_counts": _verdict_counts(summary),
        "state_pairs": _state_pairs(limited, labels),
        "burst_rows": _burst_rows(limited_runs, labels),
        "chart_sections": sections,
        "charts": [chart for section in sections for g in section.groups for chart in g.charts],
        "chart_notes": chart_notes,
        "chart_legend": charts.legend(labels),
        "open_all": len(order) <= OPEN_UP_TO,
        "cpu_bound_count": int(
            (known_true(summary["cpu_bound"]) | summary["verdict"].isin(["cpu", "host"])).sum()
        ),
        "title": " vs ".join(labels),
    }


@dataclass
class ChartGroup:
    """Charts of one kind within a section (e.g. IOPS against queue depth), side by side."""

    title: str
    charts: list[dict[str, str]] = field(default_factory=list)


@dataclass
class ChartSection:
    """One family's charts (random reads, ...), or the overview: a collapsible section."""

    name: str
    groups: list[ChartGroup] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(len(g.charts) for g in self.groups)


def _add_chart(
    group: ChartGroup,
    notes: list[str],
    title: str,
    draw: Callable[..., str | None],
    *args: object,
    caption: str = "",
    **kwargs: object,
) -> None:
    """Draw one chart into `group`; one that cannot be drawn becomes a line in `notes`."""
    try:
        svg = draw(*args, **kwargs)
    except Exception as err:  # a chart is never worth losing the whole report over
        notes.append(f"{title}: left out, it could not be drawn ({type(err).__name__}: {err}).")
        return
    if svg is None:
        notes.append(f"{title}: left out, there is no figure to plot (no I/O was measured).")
        return
    group.charts.append({"title": title + caption, "svg": svg})


# a chart draws one line per device: results from differing jobfiles are flagged on it
_DIFFERING = "; includes results whose jobfiles differ from the baseline's (see the notes)"
# the workload settings a curve's points share, and the one it sweeps (here iodepth first)
_CURVE_KEYS = ["iodepth", *SERIES_SETTINGS]


_CURVE_COLUMNS = ["label", "job", "cpu_bound", "verdict", "knee_qd", "comparable",
                  *[f"{m}_{a}" for m in ("iops", "bw_bytes", "lat_mean_us", "lat_p99_us")
                    for a in ("value", "min", "max")]]  # fmt: skip


def _family_name(rw: object) -> str:
    return _FAMILY.get(rw, (9, str(rw)))[1]  # type: ignore[arg-type]


def _curve_words(key: dict[str, Any], leave: str) -> str:
    """What a curve's points share, in words ("4 KiB, QD32, 2 jobs"), but the swept `leave`."""
    words = []
    if leave != "bs_bytes":
        words.append(format_bytes(key["bs_bytes"]))
    if leave != "iodepth":
        words.append(f"QD{int(key['iodepth'])}")
    state = key.get("state")
    if state is not None and pd.notna(state):
        words.append(f"{state} drive")
    mix = key.get("rwmixread")
    if (
        leave != "rwmixread"
        and mix is not None
        and pd.notna(mix)
        and key["rw"] in ("rw", "randrw")
    ):
        words.append(f"{int(mix)} % read")
    numjobs = key.get("numjobs")
    if numjobs is not None and pd.notna(numjobs) and int(numjobs) > 1:
        words.append(f"{int(numjobs)} jobs")
    words += _flush_words(key.get("fsync"), key.get("fdatasync"))
    extra = key.get("extra_options")
    if extra is not None and pd.notna(extra):
        words.append(str(extra))
    return ", ".join(words)


def _series(
    points: list[dict[str, Any]],
    labels: list[str],
    x: str,
    y: str,
    tip: Callable[..., str],
    bars: tuple[str, str] | None = None,
    thin: bool = False,
) -> list[charts.Series]:
    """One chart line per device of `points` (summary records), in the report's device
    order."""
    by_label: dict[str, list[dict[str, Any]]] = {}
    for point in points:
        by_label.setdefault(str(point["label"]), []).append(point)
    found = []
    for label, rows in by_label.items():
        rows = sorted(rows, key=lambda r: _number(r[x]))
        found.append(
            charts.Series(
                index=labels.index(label),
                xs=[_number(r[x]) for r in rows],
                ys=[_number(r[y]) for r in rows],
                tips=[tip(r) for r in rows],
                bound=[is_true(r["cpu_bound"]) for r in rows],
                lows=[_number(r[bars[0]]) for r in rows] if bars else None,
                highs=[_number(r[bars[1]]) for r in rows] if bars else None,
                thin=thin,
            )
        )
    return found


def _number(value: Any) -> float:
    """A figure as a float; NaN for what is not known (None, NA)."""
    return math.nan if _absent(value) else float(value)


def _absent(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and value != value)


def _point_tip(row: dict[str, Any], where: str, what: str) -> str:
    """A point's tooltip: the device, where on the curve, the figure, and a limit."""
    limit = _record_limit(row)
    return f"{row['label']}, {where}: {what}" + (f" ({limit})" if limit else "")


def _at_depth(row: dict[str, Any]) -> str:
    return f"QD{int(row['iodepth'])}"


def _curves(
    section: ChartSection, notes: list[str], ok: pd.DataFrame, labels: list[str], sweep: str
) -> None:
    """The charts where one workload setting rises along x, devices overlaid: queue depth
    (IOPS, and mean and p99 latency), block size (MB/s) or read share (IOPS)."""
    keys = [k for k in _CURVE_KEYS if k != sweep]
    # the columns the charts read: records of a few columns are quick to make
    records = ok[list(dict.fromkeys([*_CURVE_KEYS, *_CURVE_COLUMNS]))].to_dict("records")
    curves: dict[tuple[object, ...], list[dict[str, Any]]] = {}
    for record in records:  # NaN and NA are one "not set" value in a key, as in a groupby
        key = tuple(None if _absent(record[k]) else record[k] for k in keys)
        curves.setdefault(key, []).append(record)
    first = ChartGroup(
        {
            "iodepth": "IOPS and latency against queue depth",
            "bs_bytes": "Throughput against block size",
            "rwmixread": "IOPS against the read share",
        }[sweep]
    )
    least = 3 if sweep == "rwmixread" else 2
    for key, points in curves.items():
        if len({p[sweep] for p in points if not _absent(p[sweep])}) < least:
            continue
        what = _curve_words(dict(zip(keys, key, strict=True)), sweep)
        caption = _DIFFERING if _is_false_any(points) else ""
        if sweep == "iodepth":
            iops = _series(
                points,
                labels,
                "iodepth",
                "iops_value",
                lambda r: _point_tip(r, _at_depth(r), f"{format_count(r['iops_value'])} IOPS"),
                ("iops_min", "iops_max"),
            )
            knees = [
                (
                    labels.index(str(r["label"])),
                    float(r["iodepth"]),
                    float(r["iops_value"]),
                    f"{r['label']}: saturation knee at QD{int(r['iodepth'])}",
                )
                for r in points
                if pd.notna(r.get("knee_qd")) and r["iodepth"] == r["knee_qd"]
            ]
            _add_chart(
                first,
                notes,
                f"IOPS against queue depth: {what}",
                charts.line_chart,
                f"IOPS — {what}",
                iops,
                charts.Axis("queue depth", "log2", ticks=_int_text, at_data=True),
                charts.Axis("IOPS", zero=True),
                knees=knees,
                caption=caption,
            )
            mean = _series(
                points,
                labels,
                "iodepth",
                "lat_mean_us_value",
                lambda r: _point_tip(
                    r,
                    _at_depth(r),
                    f"mean {format_latency(r['lat_mean_us_value'])}, "
                    f"p99 {format_latency(r['lat_p99_us_value'])}",
                ),
                ("lat_mean_us_min", "lat_mean_us_max"),
            )
            # the p99 line: its figures are in the mean's tooltips, so no markers of its own
            p99 = _series(points, labels, "iodepth", "lat_p99_us_value", lambda r: "", thin=True)
            for line in p99:
                line.markers, line.tips, line.bound = False, [], []
            _add_chart(
                first,
                notes,
                f"Mean latency against queue depth: {what}",
                charts.line_chart,
                f"latency (mean, thin: p99) — {what}",
                mean + p99,
                charts.Axis("queue depth", "log2", ticks=_int_text, at_data=True),
                charts.Axis("latency (log)", "log10", ticks=_latency_tick),
                caption=caption,
            )
        elif sweep == "bs_bytes":
            lines = _series(
                points,
                labels,
                "bs_bytes",
                "bw_bytes_value",
                lambda r: _point_tip(
                    r, format_bytes(r["bs_bytes"]), format_rate(r["bw_bytes_value"])
                ),
                ("bw_bytes_min", "bw_bytes_max"),
            )
            _add_chart(
                first,
                notes,
                f"Throughput against block size: {what}",
                charts.line_chart,
                f"MB/s — {what}",
                _in_mb(lines),
                charts.Axis("block size", "log2", ticks=_size_tick, at_data=True),
                charts.Axis("MB/s", zero=True),
                caption=caption,
            )
        else:
            lines = _series(
                points,
                labels,
                "rwmixread",
                "iops_value",
                lambda r: _point_tip(
                    r, f"{r['rwmixread']} % read", f"{format_count(r['iops_value'])} IOPS"
                ),
                ("iops_min", "iops_max"),
            )
            _add_chart(
                first,
                notes,
                f"Read/write mix: {what}",
                charts.line_chart,
                f"IOPS — {what}",
                lines,
                charts.Axis("read share (%)", reverse=True),
                charts.Axis("IOPS", zero=True),
                caption=caption,
            )
    if first.charts:
        section.groups.append(first)


def _in_mb(lines: list[charts.Series]) -> list[charts.Series]:
    for line in lines:
        line.ys = [v / 1e6 for v in line.ys]
        line.lows = [v / 1e6 for v in line.lows] if line.lows is not None else None
        line.highs = [v / 1e6 for v in line.highs] if line.highs is not None else None
    return lines


def _int_text(value: float) -> str:
    return str(int(value))


def _size_tick(value: float) -> str:
    return format_bytes(int(value)).replace(" ", "").replace("iB", "")


def _latency_tick(value: float) -> str:
    """A latency tick (µs) in few characters: 20µs, 1ms, 2.5s."""
    for limit, unit in ((1e6, "s"), (1e3, "ms")):
        if value >= limit:
            return f"{value / limit:g}{unit}"
    return f"{value:g}µs"


def _distributions(
    section: ChartSection, notes: list[str], runs: pd.DataFrame, jobs: list[str], labels: list[str]
) -> None:
    """Each job's latency distribution (percentiles on a 'nines' axis), devices overlaid;
    the average of the repeats at each percentile. A mixed job's writes are the thin lines."""
    group = ChartGroup("Latency distribution per job")
    wanted = set(jobs)
    runs = runs[(runs["status"] == "ok") & (runs["direction"] != "sync")]
    columns = ["job", "label", "direction", "cpu_bound", "lat_dist_us", *_THREE]
    by_job: dict[object, dict[tuple[str, str], list[dict[str, Any]]]] = {}
    for record in runs[columns].to_dict("records"):
        if record["job"] in wanted:
            mine = by_job.setdefault(record["job"], {})
            mine.setdefault((str(record["label"]), str(record["direction"])), []).append(record)
    percentiles = list(DISTRIBUTION_PERCENTILES)
    for job in jobs:
        lines = []
        parts = by_job.get(job, {})
        directions = {direction for _, direction in parts}
        for (label, direction), mine in parts.items():
            curves = [r["lat_dist_us"] for r in mine if isinstance(r["lat_dist_us"], tuple)]
            if curves:
                xs = percentiles
                ys = [
                    aggregate_values([c[i] for c in curves], "mean")
                    for i in range(len(percentiles))
                ]
            else:  # results without a distribution: fio's three percentiles
                xs = [50.0, 99.0, 99.9]
                ys = [aggregate_values([_number(r[c]) for r in mine], "mean") for c in _THREE]
            said = ", ".join(f"p{x:g} {format_latency(y)}" for x, y in zip(xs, ys, strict=True)
                             if x in _SAID and y == y)  # fmt: skip
            bound = any(is_true(r["cpu_bound"]) for r in mine)
            lines.append(
                charts.Series(
                    index=labels.index(label),
                    xs=xs,
                    ys=ys,
                    tip=f"{label} {direction}: {said}",
                    markers=len(xs) <= len(_THREE),
                    # a bound run's curve: one mark at its tail, not a ring on every point
                    bound=[False] * (len(xs) - 1) + [bound],
                    thin=direction == "write" and len(directions) > 1,
                )
            )
        _add_chart(
            group,
            notes,
            f"Latency distribution: {job}",
            charts.line_chart,
            f"{job}: latency by percentile",
            lines,
            charts.Axis("percentile (%)", "nines", ticks=lambda v: f"{v:g}"),
            charts.Axis("latency (log)", "log10", ticks=_latency_tick),
        )
    if group.charts:
        section.groups.append(group)


_THREE = ("lat_p50_us", "lat_p99_us", "lat_p999_us")
_SAID = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999)  # a distribution's tooltip names these
PER_JOB_UP_TO = 200  # jobs; a larger suite draws per-job charts for some of them (_charts)


def _curve_ends(ok: pd.DataFrame) -> set[object]:
    """The jobs at the lowest and highest queue depth of each queue-depth curve, and the jobs
    that are in no such curve."""
    keys = [k for k in _CURVE_KEYS if k != "iodepth"]
    found: set[object] = set()
    for _, part in ok.groupby(keys, sort=False, dropna=False):
        depths = part["iodepth"].astype("float64")
        if depths.nunique() < 2:
            found.update(part["job"])
        else:
            found.update(part.loc[depths.isin([depths.min(), depths.max()]), "job"])
    return found


def _timeseries_charts(
    sections: dict[str, ChartSection],
    notes: list[str],
    frame: pd.DataFrame,
    ok: pd.DataFrame,
    labels: list[str],
    order: list[str],
    family: dict[object, str],
) -> None:
    """IOPS second by second, a small chart per job in its family's section, devices
    overlaid (repeats averaged), each device's write cliff a dashed line in its colour."""
    folders = [p for p in dict.fromkeys(frame["sweep"].dropna()) if p]
    if not folders:
        return
    damaged: list[str] = []
    seconds = timeseries(folders, damaged)
    notes += [f"Time series of a run left out: {error}" for error in damaged]
    if seconds.empty:
        return
    names = frame[["sweep", "host", "device", "label"]].drop_duplicates()
    seconds = seconds.merge(names, on=["sweep", "host", "device"], how="inner")
    seconds = seconds[seconds["iops"].notna()]
    # directions added within a run, then runs averaged per second
    per_run = seconds.groupby(["job", "label", "repeat", "t_s"], sort=False)["iops"].sum()
    mean = per_run.groupby(level=["job", "label", "t_s"], sort=False).mean().reset_index()
    cliffs = ok[["job", "label", "cliff_s"]].dropna()
    groups: dict[str, ChartGroup] = {}
    parts = dict(list(mean.groupby("job", sort=False)))
    for job in [j for j in order if j in parts]:
        part = parts[job]
        name = family.get(job)
        if name is None:
            continue
        group = groups.setdefault(name, ChartGroup("IOPS over time per job"))
        lines = [
            charts.Series(
                index=labels.index(str(label)),
                xs=rows["t_s"].tolist(),
                ys=rows["iops"].tolist(),
                markers=False,
            )
            for label, rows in part.groupby("label", sort=False)
        ]
        marks = [
            (
                labels.index(str(c["label"])),
                float(c["cliff_s"]),
                f"{c['label']}: write cliff at {c['cliff_s']:.0f} s",
            )
            for c in cliffs[cliffs["job"] == job].to_dict("records")
        ]
        _add_chart(
            group,
            notes,
            f"IOPS over time: {job}",
            charts.line_chart,
            f"{job}: IOPS second by second",
            lines,
            charts.Axis("seconds"),
            charts.Axis("IOPS", zero=True),
            marks=marks,
        )
    for name, group in groups.items():
        sections.setdefault(name, ChartSection(name)).groups.append(group)


def _overview(
    rows_of: dict[tuple[object, object], dict[str, Any]],
    labels: list[str],
    baseline: str,
    ratios: pd.DataFrame,
    order: list[str],
) -> str | None:
    """Every job's IOPS ratio to the baseline per device, as one heatmap."""
    others = [label for label in labels if label != baseline]
    if not others or ratios.empty:
        return None
    cells: dict[tuple[int, int], tuple[float | None, str, bool]] = {}
    for r, job in enumerate(order):
        base = rows_of.get((job, baseline))
        for c, label in enumerate(others):
            row = rows_of.get((job, label))
            if row is None or base is None or row["status"] != "ok" or base["status"] != "ok":
                continue
            ratio = ratios.at[job, f"{label}/{baseline}"] if job in ratios.index else None
            ratio = float(ratio) if ratio is not None and pd.notna(ratio) else None
            limits = {_record_limit(row), _record_limit(base)} - {""}
            tip = f"{job}: {label} " + (f"×{ratio:.2f}" if ratio is not None else "no ratio")
            if limits:  # the heading says the rest: IOPS against the baseline
                tip += f", {' / '.join(sorted(limits))}"
            elif is_false(row.get("significant")):
                tip += ", not significant"
            cells[(r, c)] = (ratio, tip, bool(limits))
    return charts.heatmap(f"IOPS against {baseline}, every job", order, others, cells)


def _charts(
    frame: pd.DataFrame,
    summary: pd.DataFrame,
    rows_of: dict[tuple[object, object], dict[str, Any]],
    labels: list[str],
    baseline: str,
    ratios: pd.DataFrame,
    order: list[str],
) -> tuple[list[ChartSection], list[str]]:
    """The report's charts in sections: an overview of every ratio, then each family's
    curves (queue depth, block size, read share), latency distributions and time series."""
    notes: list[str] = []
    found: list[ChartSection] = []
    overview = ChartSection("Overview")
    group = ChartGroup("Every job against the baseline")
    _add_chart(
        group,
        notes,
        f"IOPS against {baseline}, every job",
        _overview,
        rows_of,
        labels,
        baseline,
        ratios,
        order,
    )
    if group.charts:
        overview.groups.append(group)
        found.append(overview)
    ok = summary[summary["status"] == "ok"]
    # bursty jobs have their own table: their IOPS count idle gaps, not a queue depth's worth
    steady = ok[ok["thinktime_us"].isna()]
    sections: dict[str, ChartSection] = {}
    families = steady.assign(family=steady["rw"].map(_family_name))
    for name, part in families.groupby("family", sort=False):
        section = sections.setdefault(str(name), ChartSection(str(name)))
        for sweep in ("iodepth", "bs_bytes", "rwmixread"):
            _curves(section, notes, part, labels, sweep)
    jobs_of: dict[str, list[str]] = {}
    job_family = ok.drop_duplicates("job").set_index("job")["rw"].map(_family_name).to_dict()
    for job in order:
        if job in job_family:
            jobs_of.setdefault(job_family[job], []).append(job)
    shown = order
    if len(order) > PER_JOB_UP_TO:
        # a thousand small charts say less than a few: each queue-depth curve's lightest and
        # heaviest load, every job outside such a curve, and (over time) every write cliff
        ends = _curve_ends(ok)
        cliffs = set(ok.loc[ok["cliff_s"].notna(), "job"])
        jobs_of = {name: [j for j in jobs if j in ends] for name, jobs in jobs_of.items()}
        shown = [j for j in order if j in ends or j in cliffs]
        notes.append(
            f"Latency distributions and IOPS over time: {len(order)} jobs, so they are drawn "
            "for each queue-depth curve's lowest and highest depth, every job outside such a "
            "curve, and (over time) every job with a write cliff. ssdcompare.load() (column "
            "lat_dist_us) and ssdcompare.timeseries() hold every job's."
        )
    for name, jobs in jobs_of.items():
        _distributions(sections.setdefault(name, ChartSection(name)), notes, frame, jobs, labels)
    _timeseries_charts(sections, notes, frame, ok, labels, shown, job_family)
    ranked = sorted(sections.values(), key=lambda s: _FAMILY_ORDER.get(s.name, 99))
    return found + [s for s in ranked if s.groups], notes


def _state_warnings(frame: pd.DataFrame, sweeps: list[ResultsDir]) -> list[str]:
    """What state the drives were measured in, and where that was not the state asked for."""
    found = []
    bare = [s.path.name for s in sweeps if not s.manifest.precondition and not s.manifest.states]
    if bare:
        found.append(
            f"Devices were not preconditioned ({', '.join(bare)}): results show each drive "
            "in the state it was in (fresh drives score above spec; SLC caches flatter short "
            "runs). Use --precondition fill,workload for steady-state figures."
        )
    if "steady_state" in frame.columns:
        drifting = frame[known_true(~frame["steady_state"].astype("boolean"))]
        for (job, label), rows in drifting.groupby(["job", "label"], sort=False):
            rounds = rows["ss_rounds"].dropna()
            found.append(
                f"{job} on {label}: not steady after {int(rounds.max()) if len(rounds) else '?'} "
                "rounds of preconditioning (SNIA PTS): its figures may still be drifting."
            )
    lost = frame[frame["state"].notna() & (frame["drive_state"] == "unknown")]
    for (job, label), _ in lost.groupby(["job", "label"], sort=False):
        found.append(
            f"{job} on {label}: the drive state before the run is not recorded "
            "(no state step in its results): it may not be the state its name says."
        )
    return found


def _states_words(states: list[str]) -> str:
    said = {"empty": "empty (the span discarded, TRIM, before every run)",
            "full": "full (the span filled before the pass)"}  # fmt: skip
    return "a pass over the jobs in each drive state: " + ", then ".join(said[s] for s in states)


def _burst_rows(frame: pd.DataFrame, labels: list[str]) -> list[dict[str, object]]:
    """Each bursty job's figures while bursting, per device (means over repeats), next to
    fio's own IOPS, which count the idle gaps."""
    bursty = frame[(frame["status"] == "ok") & frame["bursts"].notna()]
    rows = []
    for job, group in bursty.groupby("job", sort=False):
        cells = []
        for label in labels:
            runs = group[group["label"] == label].drop_duplicates(["sweep", "repeat"])
            if runs.empty:
                cells.append(None)
                continue
            cells.append({
                "bursts": f"{runs['bursts'].mean():.0f}",
                "iops": format_count(runs["burst_iops"].mean()),
                "bw": format_rate(runs["burst_bw_bytes"].mean()),
                "duty": f"{runs['burst_duty_pct'].mean():.0f} %",
                "fio_iops": format_count(group.loc[group["label"] == label, "iops"].sum()
                                         / len(runs)),
                "cpu": bool(known_true(runs["cpu_bound"]).any()),
                "sort": _sort_key(runs["burst_iops"].mean()),
                "sort_bursts": _sort_key(runs["bursts"].mean()),
                "sort_bw": _sort_key(runs["burst_bw_bytes"].mean()),
                "sort_duty": _sort_key(runs["burst_duty_pct"].mean()),
                "sort_fio_iops": _sort_key(
                    group.loc[group["label"] == label, "iops"].sum() / len(runs)
                ),
            })  # fmt: skip
        rows.append({"job": job, "what": _what(group.iloc[0]), "cells": cells})
    return rows


def _verdict_counts(summary: pd.DataFrame) -> list[tuple[str, int]]:
    """How many results got each verdict, in VERDICTS order."""
    counts = summary["verdict"].value_counts()
    return [(v, int(counts[v])) for v in VERDICTS if v in counts.index]


def _state_pairs(summary: pd.DataFrame, labels: list[str]) -> list[dict[str, object]]:
    """Each job of a --states sweep on the empty drive next to the full one, per device:
    IOPS in both states and full / empty (below 1: the full drive is slower)."""
    ok = summary[(summary["status"] == "ok") & summary["state"].notna()]
    if ok["state"].nunique() < 2:
        return []
    ok = ok.assign(
        base=[j.removesuffix(f".{s}") for j, s in zip(ok["job"], ok["state"], strict=True)]
    )
    rows = []
    for base, group in ok.groupby("base", sort=False):
        cells = []
        for label in labels:
            mine = group[group["label"] == label].set_index("state")
            if not {"empty", "full"} <= set(mine.index):
                cells.append(
                    {
                        "empty": "-",
                        "full": "-",
                        "ratio": "",
                        "cpu": False,
                        "sort": -1,
                        "sort_empty": -1,
                        "sort_full": -1,
                    }
                )
                continue
            # a bursty job's own IOPS count its idle gaps: compare it while bursting
            column = "burst_iops_mean" if mine["burst_iops_mean"].notna().all() else "iops_value"
            empty, full = mine.at["empty", column], mine.at["full", column]
            ratio = full / empty if empty else float("nan")
            cells.append({
                "empty": format_count(empty), "full": format_count(full),
                "ratio": f"{ratio:.2f}×" if pd.notna(ratio) else "-",
                "cpu": bool(known_true(mine["cpu_bound"]).any()),
                "sort": ratio if pd.notna(ratio) else -1,
                "sort_empty": _sort_key(empty), "sort_full": _sort_key(full),
            })  # fmt: skip
        rows.append({"job": base, "what": _what(group.iloc[0]), "cells": cells})
    return rows


def _is_false_any(points: list[dict[str, Any]]) -> bool:
    return any(is_false(point["comparable"]) for point in points)


def render_report(frame: pd.DataFrame, sweeps: list[ResultsDir], baseline: str | None = None,
                  aggregate: str = "mean") -> str:  # fmt: skip
    """The report as one HTML string."""
    context = build_context(frame, sweeps, baseline, aggregate)
    return templates().get_template(TEMPLATE).render(**context)


def write_report(paths: Iterable[str | Path], output: str | Path, baseline: str | None = None,
                 aggregate: str = "mean") -> Path:  # fmt: skip
    """Load results folders, render the report and write it atomically to `output`: an
    .html name, never over a results file or a file that is not a report of ssdcompare's
    (ssdcompare.outputs)."""
    # one folder named twice (./A and A/, a symlink) is read once, or it would count double
    folders = unique_folders(paths)
    if not folders:
        raise SsdcompareError("give at least one results folder")
    target = Path(output)
    check_report_path(target, folders)
    sweeps = [ResultsDir.open(p) for p in folders]
    frame = load(folders)
    text = render_report(frame, sweeps, baseline, aggregate)
    check_report_path(target, folders)  # rendering takes a while: look again just before
    write_atomic(target, text)
    return target
