"""One drive's results over several results folders, in date order (`ssdcompare history`,
`ssdcompare.history`).

Each folder is one date: its manifest's `created_at`. A job's repeats in a folder are that
date's figure: their geometric mean (as `compare` gives it), with their min and max. A
drive is followed from folder to folder as `compare` pairs drives
(ssdcompare.analysis.sides): by identity (serial, WWID, a loop device's backing file)
first, then by name, so a loop device attached again under another number stays one drive.
It is named as the first folder that has it names it.

Per drive and job, each date's figure is set against the first date's (the first date at
which the job has a figure: the reference), and each date is marked where it needs saying:
- *not comparable*: the jobfile (workload hash) differs from the reference's: shown, but no
  change is given;
- a verdict of NOT_JUDGED (cpu, host, disturbed, throttled): shown with its change, marked,
  since the figure is not the drive's alone;
- *no result*: no successful run of the job that date;
- *not run*: the drive, or the job, is not in that date's folder.

Between two dates of a drive, what the sweeps recorded differently of the machine and the
drive is said (kernel, firmware, fio, CPU governor, PCIe link, scheduler and the other
likeness facts, the CPU), so that a step in a trend line can be told from what caused it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from ssdcompare.analysis.compare import described_differences
from ssdcompare.analysis.likeness import Difference
from ssdcompare.analysis.overtime import (
    NOT_JUDGED,
    Metric,
    job_rows,
    metric_named,
    what_changed,
)
from ssdcompare.analysis.sides import Drive, Side, Sweep, follow_drives, load_side, started
from ssdcompare.errors import SsdcompareError
from ssdcompare.judge.stats import geometric_mean
from ssdcompare.results.store import unique_folders

# the marks a date's point may carry besides a verdict of NOT_JUDGED
NOT_COMPARABLE = "not comparable"
NO_RESULT = "no result"
NOT_RUN = "not run"


@dataclass(frozen=True)
class Date:
    """One results folder of a history: where, when it was made, and how it is headed."""

    path: Path
    created_at: str
    label: str  # "2026-11-27 02:40"; with seconds, or the folder's name, where two read alike


@dataclass(frozen=True)
class Point:
    """One date of a drive's job: the figure of its repeats and its change from the
    reference date (NaN where unknown or not given)."""

    figure: float  # the geometric mean of the date's repeats
    low: float  # their min
    high: float  # their max
    repeats: int
    change_pct: float  # from the reference date's figure; 0 at the reference itself
    mark: str | None = None  # NOT_COMPARABLE, NO_RESULT, NOT_RUN, or a verdict of NOT_JUDGED
    why: str | None = None  # the mark in words
    verdict: str | None = None
    workload_hash: str | None = None

    @property
    def has_figure(self) -> bool:
        return not math.isnan(self.figure)


@dataclass(frozen=True)
class Step:
    """What the sweeps recorded differently of a drive between two of its dates (indexes
    into History.dates; the drive may be missing from the folders between them)."""

    before: int
    after: int
    what: list[str]  # "kernel 6.1 -> 6.6"


@dataclass
class Trend:
    """One job of one drive over the dates."""

    job: str
    points: list[Point]  # one per date
    reference: int | None  # the date its changes are from; None without any figure


@dataclass
class DriveHistory:
    """One drive followed over the dates."""

    name: str  # as the first folder that has it names it
    names: list[str | None]  # its name in each date's folder (None: not there)
    followed: list[str | None]  # how it was found in each folder ("first seen", "by name")
    steps: list[Step] = field(default_factory=list)
    trends: list[Trend] = field(default_factory=list)


@dataclass
class History:
    """The results of drives over several results folders, date by date."""

    metric: Metric
    dates: list[Date]
    drives: list[DriveHistory]
    notes: list[str] = field(default_factory=list)

    def frame(self) -> pd.DataFrame:
        """A row per drive, job and date: the figure (geometric mean, min, max, repeats), the
        change from the reference date and the mark, for notebooks and other tools."""
        rows = [
            {"drive": drive.name, "name_then": drive.names[index], "job": trend.job,
             "date": self.dates[index].label, "created_at": self.dates[index].created_at,
             "folder": str(self.dates[index].path), "metric": self.metric.name,
             "figure": point.figure, "min": point.low, "max": point.high,
             "repeats": point.repeats, "change_pct": point.change_pct,
             "reference": index == trend.reference, "mark": point.mark, "why": point.why,
             "verdict": point.verdict, "workload_hash": point.workload_hash}
            for drive in self.drives for trend in drive.trends
            for index, point in enumerate(trend.points)
        ]  # fmt: skip
        return pd.DataFrame(rows)


def history(
    folders: list[str | Path] | tuple[str | Path, ...],
    metric: str = "iops",
    devices: list[str] | None = None,
) -> History:
    """The history of every drive (or of `devices`, as the first folder that has each one
    names it) over `folders`, two or more results folders, in date order; `metric`: iops,
    bw, mean, p99 or p99.9 (see the module's docstring)."""
    chosen_metric = metric_named(metric)
    if chosen_metric.name == "slo":  # a curve's answer at a target, which compare gives
        raise SsdcompareError("--metric slo: a history follows iops, bw, mean, p99 or p99.9")
    paths = unique_folders(folders)
    if len(paths) < 2:
        raise SsdcompareError(
            f"a history needs two or more different results folders (got {len(paths)}): "
            "give each folder of the drives' history, in any order (they are put in date "
            "order)"
        )
    sides = _dated_sides(paths)
    dates = [Date(s.sweeps[0].path, s.sweeps[0].created_at, s.role) for s in sides]
    chains = _chosen(_follow(sides), devices or [])
    summaries = [job_rows(side) for side in sides]
    drives = [_drive_history(chain, sides, summaries, chosen_metric) for chain in chains]
    notes = [note for side in sides for note in side.notes]
    return History(chosen_metric, dates, drives, notes)


def _dated_sides(paths: list[Path]) -> list[Side]:
    """Each folder as a side of its own, in date order, named by its date's label."""
    sides = sorted((load_side(str(p), [p]) for p in paths),
                   key=lambda s: started(s.sweeps[0]))  # fmt: skip
    for side, label in zip(sides, date_labels([s.sweeps[0] for s in sides]), strict=True):
        side.role = label
    return sides


def date_labels(sweeps: list[Sweep]) -> list[str]:
    """Each sweep's date as a heading ("2026-11-27 02:40"), to the second where two would
    read alike, and with its folder's name where even that is not enough."""
    for length in (16, 19):
        labels = [s.created_at[:length].replace("T", " ") for s in sweeps]
        if len(set(labels)) == len(labels):
            return labels
    return [f"{label} {s.path.name}" for label, s in zip(labels, sweeps, strict=True)]


@dataclass
class _Chain:
    """A drive followed over the sides: its name in each, how it was found, and its last
    appearance (what the next side is paired with)."""

    names: list[str | None]
    followed: list[str | None]
    latest: Drive
    name: str = ""
    # side -> why the drive found there by its name may be another drive (other serials)
    doubts: dict[int, str] = field(default_factory=dict)

    def present(self) -> list[int]:
        return [index for index, name in enumerate(self.names) if name is not None]


def _follow(sides: list[Side]) -> list[_Chain]:
    """The drives of every side, each followed over the sides as `compare` pairs them: a
    side's drives are paired with the last appearance of every drive seen before."""
    chains: list[_Chain] = []
    for index, side in enumerate(sides):
        known = {str(number): chain.latest for number, chain in enumerate(chains)}
        left_known, left_found = list(known), list(side.drives)
        pairs = follow_drives(known, side.drives, left_known, left_found,
                              ("an earlier folder", side.role))  # fmt: skip
        for pair in pairs:
            chain = chains[int(pair.base)]
            chain.names.append(pair.new)
            chain.followed.append(pair.how)
            chain.latest = side.drives[pair.new]
            if pair.note is not None:
                chain.doubts[index] = pair.note
        for name in left_found:
            chains.append(_Chain([None] * index + [name], [None] * index + ["first seen"],
                                 side.drives[name]))  # fmt: skip
        for chain in chains:  # not in this side: keep the dates in step
            if len(chain.names) == index:
                chain.names.append(None)
                chain.followed.append(None)
    _name_chains(chains, sides)
    return chains


def _name_chains(chains: list[_Chain], sides: list[Side]) -> None:
    """Each drive named as the first folder that has it names it; where two drives would
    share a name, the later one's name says the folder it starts in (`loop3 @B`)."""
    taken: set[str] = set()
    for chain in chains:
        first = chain.present()[0]
        name = str(chain.names[first])
        if name in taken:
            name = f"{name} @{sides[first].sweeps[0].path.name}"
        taken.add(name)
        chain.name = name


def _chosen(chains: list[_Chain], wanted: list[str]) -> list[_Chain]:
    """The drives asked for (every one when none is), by the name the history gives them,
    else by any name they had; an error naming the drives there are otherwise."""
    if not wanted:
        return chains
    chosen: list[_Chain] = []
    for given in wanted:
        found = [c for c in chains if c.name == given] or [
            c for c in chains if given in c.names]  # fmt: skip
        if len(found) != 1:
            listed = ", ".join(c.name for c in chains) or "none"
            problem = "could be any of several drives" if found else "is no drive"
            raise SsdcompareError(f"--device {given!r} {problem} in these folders; their "
                                  f"drives: {listed}")  # fmt: skip
        if found[0] not in chosen:
            chosen.append(found[0])
    return chosen


_Summary = dict[tuple[str, str], dict[str, Any]]


def _drive_history(
    chain: _Chain, sides: list[Side], summaries: list[_Summary], metric: Metric
) -> DriveHistory:
    """One drive's steps between its dates and its trend per job."""
    drive = DriveHistory(chain.name, chain.names, chain.followed)
    drive.steps = _steps(chain, sides)
    jobs = [job for index in chain.present() for (name, job) in summaries[index]
            if name == chain.names[index]]  # fmt: skip
    for job in dict.fromkeys(jobs):
        rows = [summaries[i].get((str(name), job)) if name is not None else None
                for i, name in enumerate(chain.names)]  # fmt: skip
        drive.trends.append(_trend(job, rows, metric))
    return drive


def _steps(chain: _Chain, sides: list[Side]) -> list[Step]:
    """What changed between each two consecutive dates of a drive."""
    present = chain.present()
    steps = []
    for before, after in zip(present, present[1:], strict=False):
        one = sides[before].drives[str(chain.names[before])].unit
        other = sides[after].drives[str(chain.names[after])].unit
        what = [change_words(d) for d in what_changed(one, other)]
        what += [chain.doubts[after]] if after in chain.doubts else []
        if what:
            steps.append(Step(before, after, what))
    return steps


def change_words(difference: Difference) -> str:
    """A change between two dates: "kernel 6.1 -> 6.6"."""
    before, after = difference.values.get("BASE", "?"), difference.values.get("NEW", "?")
    return f"{difference.fact} {before} -> {after}"


def _trend(job: str, rows: list[dict[str, Any] | None], metric: Metric) -> Trend:
    """A job's points over the dates from its summary row at each date (None: not run)."""
    points = [_figures(row, metric) for row in rows]
    reference = next((i for i, p in enumerate(points) if p.has_figure), None)
    base_row = rows[reference] if reference is not None else None
    if reference is None or base_row is None:
        return Trend(job, points, None)
    base = points[reference]
    marked = [_against(p, row, base, base_row) for p, row in zip(points, rows, strict=True)]
    return Trend(job, marked, reference)


def _figures(row: dict[str, Any] | None, metric: Metric) -> Point:
    """A date's figures of one job, and its mark where it has no figure or a verdict of
    NOT_JUDGED."""
    nan = math.nan
    if row is None:
        return Point(nan, nan, nan, 0, nan, NOT_RUN, "not in this folder")
    hashes = row.get("hashes") or []
    workload = hashes[0] if len(hashes) == 1 else None
    if not row["repeats"]:
        why = f"no successful run ({str(row.get('status') or 'failed').upper()})"
        return Point(nan, nan, nan, 0, nan, NO_RESULT, why, workload_hash=workload)
    verdict = row.get("verdict") if isinstance(row.get("verdict"), str) else None
    limited = verdict in NOT_JUDGED
    reason = row.get("verdict_reason")
    return Point(
        # the geometric mean of the repeats, as compare's figures: the changes then agree
        figure=geometric_mean(list(row.get(f"{metric.column}_per_repeat") or ())),
        low=_number(row.get(f"{metric.column}_min")),
        high=_number(row.get(f"{metric.column}_max")),
        repeats=int(row["repeats"]), change_pct=nan,
        mark=verdict if limited else None,
        why=(reason if isinstance(reason, str) else f"limited by {verdict}") if limited else None,
        verdict=verdict, workload_hash=workload,
    )  # fmt: skip


def _against(
    point: Point, row: dict[str, Any] | None, base: Point, base_row: dict[str, Any]
) -> Point:
    """A point with its change from the reference (`base`), or marked not comparable; a
    point not run, or without a result, as it is."""
    if row is None or point.mark in (NOT_RUN, NO_RESULT):
        return point
    theirs, mine = base_row.get("hashes") or [], row.get("hashes") or []
    if theirs and mine and theirs != mine:
        how = described_differences(row, base_row)
        said = ", ".join(how) if how else "compare the jobfile.fio files"
        why = f"the jobfile differs from the first date's: {said}"
        return replace(point, mark=NOT_COMPARABLE, why=why)
    if not point.has_figure or not base.figure > 0:
        return point
    return replace(point, change_pct=(point.figure / base.figure - 1) * 100)


def _number(value: object) -> float:
    """A summary's figure as a float; NaN where it is unknown (None, NA)."""
    if value is None or value is pd.NA:
        return math.nan
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return math.nan
