"""The latency-vs-load chart: one per curve (a workload paced at shares of its maximum,
ssdcompare.run.curve), as a chart spec (ssdcompare.report.chartspec).

Latency (log) against the IOPS each run achieved (directions added, linear), a colour per
device, a line style per latency (p50, p99, p99.9, and any other a target is set on: the
worst direction's, ssdcompare.analysis.slo.run_points). The curve's paced runs are filled
points joined by their line; closed-loop runs of the same workload are hollow points beside
it: the curve's own unpaced run (`<job>@max`) and the same workload run without a curve at
other queue depths (a queue-depth sweep), since such a run queues as deep as it may instead
of arriving at a rate. A paced run that could not reach its load is a cross off the line:
its latency is that of another load than its point's. Each latency target (`--slo`) is a
horizontal line at its limit, with each device's answer (the highest IOPS within it,
ssdcompare.analysis.slo.slo_summary) marked on it.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import pandas as pd

from ssdcompare.analysis.frame import is_false, is_true
from ssdcompare.analysis.slo import AT_LEAST, Slo, run_points, slo_summary
from ssdcompare.analysis.summary import SERIES_SETTINGS
from ssdcompare.judge.verdict import limit_word
from ssdcompare.report.chartspec import (
    Axis,
    Key,
    LineChart,
    Series,
    Target,
    TargetMark,
    latency_axis,
)
from ssdcompare.report.table import family_name, workload_words
from ssdcompare.units import format_count, format_latency

# the latencies drawn, each in a line style of its own (the same for every device): the
# three fio reports, and one a target is set on beside them
LINE_STYLES = {"p50": "1.5 3", "p99": "", "p99.9": "7 3", "p99.99": "10 2 2 2", "mean": "4 2"}
DRAWN = ("p50", "p99", "p99.9")
# what makes runs one workload but for their queue depth and pacing
SAME_WORKLOAD = [*SERIES_SETTINGS, "span_bytes", "ioengine"]
IOPS_AXIS = Axis("IOPS achieved", zero=True)


def load_charts(
    frame: pd.DataFrame,
    labels: list[str],
    family: str | None = None,
    slos: Sequence[Slo] = (),
    baseline: str | None = None,
) -> list[tuple[str, str, LineChart]]:
    """A chart per curve (and drive state) of `frame` whose workload is of `family` (every
    family's for None): (its title in the report, a caption saying what is drawn, the spec).
    `labels` are the devices in the report's order (their colours); `slos` the latency
    targets drawn, answered against `baseline`."""
    runs = _finished(frame)
    if runs.empty or "curve" not in runs.columns:
        return []
    paced = runs[runs["curve"].notna() & runs["curve_pct"].notna()]
    found = []
    for (curve, state), rows in paced.groupby(["curve", "state"], sort=False, dropna=False):
        if family is not None and family_name(rows["rw"].iloc[0]) != family:
            continue
        mine = runs[runs["curve"].eq(curve).fillna(False) & _same(runs, "state", state)]
        found.append(_chart(runs, mine, labels, list(slos), baseline))
    return found


def _finished(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of finished runs with a workload; not a group member's own rows."""
    rows = frame[(frame["status"] == "ok") & (frame["direction"] != "sync")]
    rows = rows[rows["rw"].notna()]
    return rows[rows["member"].isna()] if "member" in rows.columns else rows


def _same(rows: pd.DataFrame, column: str, value: Any) -> pd.Series:
    """Which rows hold `value` in `column`: not set (None, NaN, NA) matches not set."""
    if column not in rows.columns:
        return pd.Series(True, index=rows.index)
    if _absent(value):
        return rows[column].isna()
    return rows[column].eq(value).fillna(False).astype(bool)


def _absent(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def _closed_loop(runs: pd.DataFrame, mine: pd.DataFrame) -> pd.DataFrame:
    """The closed-loop runs beside a curve (`mine`: its rows): its unpaced run, and the
    same workload run without a curve on its devices, at any queue depth."""
    first = mine.iloc[0]
    same = runs["curve"].isna() & runs["label"].isin(set(mine["label"]))
    for column in SAME_WORKLOAD:
        same &= _same(runs, column, first.get(column))
    return run_points(pd.concat([mine[mine["curve_pct"].isna()], runs[same]]))


def _chart(
    runs: pd.DataFrame,
    mine: pd.DataFrame,
    labels: list[str],
    slos: list[Slo],
    baseline: str | None,
) -> tuple[str, str, LineChart]:
    """One curve's chart (`mine`: its rows in one drive state) with its caption."""
    paced = run_points(mine[mine["curve_pct"].notna()])
    closed = _closed_loop(runs, mine)
    metrics = list(dict.fromkeys([*DRAWN, *(slo.metric for slo in slos)]))
    first = mine.iloc[0]
    base = first.get("curve_base")
    series = []
    for label in [label for label in labels if label in set(mine["label"])]:
        index = labels.index(label)
        series += _paced_series(paced[paced["label"] == label], index, label, metrics, base)
        series += _closed_series(closed[closed["label"] == label], index, label, metrics)
    targets, marks = _targets(mine, slos, labels, baseline)
    state = first.get("state")
    name = str(first["curve"]) + ("" if _absent(state) else f" ({state} drive)")
    spec = LineChart(f"latency against load — {name}", series, IOPS_AXIS, latency_axis(),
                     targets=targets, target_marks=marks,
                     keys=_keys(metrics, series, targets, marks))  # fmt: skip
    shares = ", ".join(f"{p:g}" for p in sorted(set(paced["curve_pct"])))
    whose = "the fastest device's maximum" if base == "fastest" else "each device's maximum"
    caption = f" ({workload_words(first)}; paced at {shares} % of {whose})"
    return f"Latency against load: {name}", caption, spec


def _paced_series(points: pd.DataFrame, index: int, label: str, metrics: list[str],
                  base: object) -> list[Series]:  # fmt: skip
    """A device's paced runs as a line per latency and repeat, joined in the order of their
    load; a run that could not reach its load is drawn apart."""
    found = []
    repeats = list(_by_repeat(points))
    for repeat, rows in repeats:
        rows = rows.sort_values("curve_pct")
        said = f" (repeat {repeat})" if len(repeats) > 1 else ""
        apart = [is_false(reached) for reached in rows["rate_reached"]]
        for metric in metrics:
            tips = [_paced_tip(row, metric, base) + said for _, row in rows.iterrows()]
            found.append(_series(rows, index, label, metric, tips, apart=apart))
    return found


def _by_repeat(points: pd.DataFrame) -> Iterator[tuple[object, pd.DataFrame]]:
    """A device's runs per repeat (of each results folder)."""
    for (_, repeat), rows in points.groupby(["sweep", "repeat"], sort=True, dropna=False):
        yield repeat, rows


def _closed_series(
    points: pd.DataFrame, index: int, label: str, metrics: list[str]
) -> list[Series]:
    """A device's closed-loop runs as hollow points per latency, not joined."""
    if points.empty:
        return []
    rows = points.sort_values(["iodepth", "repeat"])
    found = []
    for metric in metrics:
        tips = [_closed_tip(row, metric) for _, row in rows.iterrows()]
        found.append(_series(rows, index, label, metric, tips, hollow=True))
    return found


def _series(rows: pd.DataFrame, index: int, label: str, metric: str, tips: list[str],
            apart: list[bool] | None = None, hollow: bool = False) -> Series:  # fmt: skip
    """One latency of a device's runs (`rows`: run_points) as a series."""
    return Series(
        index=index,
        xs=[float(v) for v in rows["iops"]],
        ys=[float(v) for v in rows[f"lat_{metric}"]],
        tips=tips,
        bound=[_bound(row) for _, row in rows.iterrows()],
        label=label,
        name=metric + (" (closed loop)" if hollow else ""),
        dash=LINE_STYLES[metric],
        hollow=hollow,
        joined=not hollow,
        apart=apart or [],
    )


def _bound(run: pd.Series) -> bool:
    """A run the CPU or the host limited."""
    return run.get("verdict") in ("cpu", "host") or is_true(run.get("cpu_bound"))


def _limit(run: pd.Series) -> str:
    limit = limit_word(run.get("verdict"), cpu_bound=is_true(run.get("cpu_bound")))
    return f" ({limit})" if limit else ""


def _paced_tip(run: pd.Series, metric: str, base: object) -> str:
    """ "70 % of the maximum: asked 45.2k IOPS, reached 44.9k, p99 812 µs"."""
    of = "the fastest device's maximum" if base == "fastest" else "the maximum"
    asked, achieved = run["rate_asked_iops"], format_count(run["iops"])
    if _absent(asked):  # fio's record of the rate could not be read
        load = f"{achieved} IOPS (the load it was offered is not known)"
    else:
        load = f"asked {format_count(asked)} IOPS, reached {achieved}"
    if is_false(run["rate_reached"]):
        load += f" ({run['rate_reached_pct']:.0f} %: could not reach its load)"
    latency = format_latency(run[f"lat_{metric}"])
    return f"{run['curve_pct']:g} % of {of}: {load}, {metric} {latency}{_limit(run)}"


def _closed_tip(run: pd.Series, metric: str) -> str:
    """ "QD 8 (closed loop): 56.2k IOPS, p99 1.74 ms"."""
    own = "" if _absent(run["curve"]) else ", the curve's maximum"  # its unpaced run
    depth = "QD ?" if _absent(run["iodepth"]) else f"QD {int(run['iodepth'])}"
    latency = format_latency(run[f"lat_{metric}"])
    return (f"{depth}{own} (closed loop): {format_count(run['iops'])} IOPS, {metric} "
            f"{latency}{_limit(run)}")  # fmt: skip


def _targets(
    mine: pd.DataFrame, slos: list[Slo], labels: list[str], baseline: str | None
) -> tuple[list[Target], list[TargetMark]]:
    """Each target as a line at its limit, and each device's answer marked on it."""
    if not slos:
        return [], []
    targets = [Target(slo.limit_us, slo.label, f"latency target: {slo.label}") for slo in slos]
    by_label = {slo.label: slo for slo in slos}
    marks = []
    for _, row in slo_summary(mine, slos, baseline).iterrows():
        slo = by_label.get(row["slo"])
        iops = row["slo_iops"]
        if slo is None or _absent(iops) or row["label"] not in labels:
            continue
        marks.append(TargetMark(labels.index(row["label"]), float(iops), slo.limit_us,
                                _answer_tip(row, slo)))  # fmt: skip
    return targets, marks


def _answer_tip(row: pd.Series, slo: Slo) -> str:
    """A device's answer at a target in words, with the points it lies between."""
    figure = format_count(row["slo_iops"])
    if row["slo_status"] == AT_LEAST:
        return (f"{row['label']} within {slo.label}: at least {figure} IOPS (every point "
                f"meets it, up to {row['slo_below']})")  # fmt: skip
    between = (f" (between {row['slo_below']} and {row['slo_above']})"
               if isinstance(row["slo_below"], str) else "")  # fmt: skip
    repeats = " (the mean of its repeats' answers)" if row["slo_status"] == "varies" else ""
    return f"{row['label']} within {slo.label}: {figure} IOPS{between}{repeats}"


def _keys(metrics: list[str], series: list[Series], targets: list[Target],
          marks: list[TargetMark]) -> list[Key]:  # fmt: skip
    """The chart's own legend: its line styles, and the kinds of point and mark it has."""
    keys = [Key("line", metric, LINE_STYLES[metric]) for metric in metrics]
    keys.append(Key("point", "paced"))
    if any(line.hollow for line in series):
        keys.append(Key("hollow", "closed loop (unpaced, other depths)"))
    if any(any(line.apart) for line in series):
        keys.append(Key("apart", "could not reach its load"))
    if targets:
        keys.append(Key("target", "latency target"))
    if marks:
        keys.append(Key("answer", "highest IOPS within it"))
    return keys
