"""The PTS tests read over time (ssdcompare.suite.pts): write saturation (IOPS against time and
against the bytes written), host idle recovery (the IOPS of each burst, segment by segment)
and cross stimulus recovery (bandwidth against time, and how long each segment takes to
settle).

Each run's series comes from fio's time-series logs of its processes at the interval they
were logged at (a second, or finer for a scaled test: suite.longrun `log_ms`): the processes'
rates added up interval by interval. Times are seconds from the start of the run, and across
a group's runs (which ran back to back in one fio run) from the start of the first.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ssdcompare.fio.logs import LogError
from ssdcompare.results.models import RunStatus
from ssdcompare.results.store import ResultsDir
from ssdcompare.suite.pts import PtsSpec
from ssdcompare.suite.workload import Workload
from ssdcompare.target.devices import Target
from ssdcompare.units import format_count

SERIES_COLUMNS = ["device", "job", "t_s", "iops", "bw_bytes", "written_bytes"]
# a segment has settled once its figure stays within this share of where the segment ends
SETTLED_PCT = 10.0
# the end of a segment it settles to: its last tenth
END_SHARE = 0.1


def run_series(results: ResultsDir, status: RunStatus, workload: Workload) -> pd.DataFrame:
    """One run's series: per logged interval, its IOPS and bandwidth (every process and
    direction added), and the bytes written by the end of it. Empty when it has no logs or
    they cannot be read (a damaged log is left out, not guessed)."""
    step_ms = workload.log_ms
    columns = {}
    for kind, name in (("iops", "iops"), ("bw", "bw_bytes")):
        try:
            logs = [results.files.log_samples(path)
                    for path in results.timeseries_logs(status, kind)]  # fmt: skip
        except LogError:
            return pd.DataFrame(columns=SERIES_COLUMNS)
        columns[name] = _added(logs, step_ms, 1024.0 if kind == "bw" else 1.0)
    frame = pd.concat(columns, axis=1).sort_index()
    if frame.empty:
        return pd.DataFrame(columns=SERIES_COLUMNS)
    # an interval without a sample moved nothing (fio logs none while it idles)
    frame = frame.reindex(range(1, int(frame.index.max()) + 1)).fillna(0.0)
    frame.index.name = "t_s"
    frame = frame.reset_index()
    frame["t_s"] = frame["t_s"] * step_ms / 1000
    writes = "write" in workload.directions
    frame["written_bytes"] = (frame["bw_bytes"] * step_ms / 1000).cumsum() if writes else 0.0
    frame.insert(0, "job", status.job)
    frame.insert(0, "device", status.target)
    return frame[SERIES_COLUMNS]


def _added(logs: Iterable[object], step_ms: int, unit: float) -> pd.Series:
    """The logs' values added up per interval (its number from 1): fio logs an interval a
    few ms after it ends, so each sample belongs to the nearest whole interval. fio logs
    bandwidth in KiB/s (`unit` 1024 makes it bytes/s)."""
    parts = []
    for samples in logs:
        times = np.frombuffer(samples.time_ms, dtype=np.int64)  # type: ignore[attr-defined]
        values = np.frombuffer(samples.value, dtype=np.float64)  # type: ignore[attr-defined]
        steps = np.maximum(1, np.round(times / step_ms)).astype(np.int64)
        parts.append(pd.Series(values * unit, index=steps).groupby(level=0).sum())
    if not parts:
        return pd.Series(dtype=np.float64)
    return pd.concat(parts, axis=1).fillna(0.0).sum(axis=1)


def group_series(results: ResultsDir, jobs: list[str], target: str) -> pd.DataFrame:
    """A group's runs on one target, one after the other as they ran (round 1 of each): each
    run's times moved on by the runs before it."""
    workloads = {w.job_id: w for w in results.manifest.suite.workloads}
    found, start, written = [], 0.0, 0.0
    for job in jobs:
        status = results.status(target, job, 1)
        if status is None or status.status not in ("ok", "interrupted") or job not in workloads:
            continue
        series = run_series(results, status, workloads[job])
        if series.empty:
            continue
        series["t_s"] += start
        series["written_bytes"] += written
        start = float(series["t_s"].max())
        written = float(series["written_bytes"].max())
        found.append(series)
    return pd.concat(found, ignore_index=True) if found else pd.DataFrame(columns=SERIES_COLUMNS)


def bursts(series: pd.DataFrame) -> pd.DataFrame:
    """The bursts of a run with idle times (host idle recovery): each stretch of intervals
    with I/O between idle ones, its start and its mean IOPS (the intervals at its edges,
    partly idle, left out where it has more than two)."""
    busy = series["iops"].to_numpy() > 0
    rows = []
    edges = np.flatnonzero(np.diff(np.concatenate([[False], busy, [False]]).astype(np.int8)))
    for first, end in zip(edges[::2], edges[1::2], strict=True):
        inner = series.iloc[first + 1 : end - 1] if end - first > 2 else series.iloc[first:end]
        rows.append({"job": series["job"].iloc[first], "t_s": float(series["t_s"].iloc[first]),
                     "iops": float(inner["iops"].mean())})  # fmt: skip
    return pd.DataFrame(rows, columns=["job", "t_s", "iops"])


def settling(series: pd.DataFrame, metric: str = "bw_bytes") -> dict[str, float | None]:
    """How long each run of a series took to settle (cross stimulus recovery): the seconds
    from its start until its figure stays within SETTLED_PCT % of where it ends (the mean of
    its last END_SHARE); None when it never does before its last tenth."""
    found: dict[str, float | None] = {}
    for job, run in series.groupby("job", sort=False):
        values = run[metric].to_numpy()
        times = run["t_s"].to_numpy()
        tail = max(1, int(len(values) * END_SHARE))
        settled_at = float(np.mean(values[-tail:]))
        if settled_at <= 0:
            found[str(job)] = None
            continue
        off = np.abs(values - settled_at) > settled_at * SETTLED_PCT / 100
        last_off = int(np.flatnonzero(off)[-1]) + 1 if off.any() else 0
        found[str(job)] = (None if last_off >= len(values) - tail
                           else float(times[last_off] - times[0]))  # fmt: skip
    return found


# the tests read over time, and the group of each whose jobs run once, back to back
TIME_TESTS = ("wsat", "hir", "xsr")
# the most points a chart of a long series draws: beyond it, neighbouring intervals averaged
MOST_POINTS = 600


@dataclass(frozen=True)
class Segment:
    """One run of a time test's group, where it lies in the group's series: its job, its
    first and last second, and for a run with idle times (`idle_s`, the scaled idle after
    each burst of `burst_s`) whether the log's interval can tell its bursts apart: each burst
    and each idle time at least two intervals long."""

    job: str
    start_s: float
    end_s: float
    idle_s: float | None = None
    burst_s: float | None = None
    resolved: bool = True


@dataclass(frozen=True)
class DeviceSeries:
    """A time test's group on one device: its series (`group_series`), its segments in the
    order they ran, the device's capacity, the log's interval and the scale."""

    sweep: str
    target: str
    label: str
    test: str
    series: pd.DataFrame
    segments: list[Segment]
    capacity_bytes: int | None
    log_ms: int
    scale: float | None


def device_series(results: ResultsDir, target: Target, label: str,
                  pts: PtsSpec) -> DeviceSeries:  # fmt: skip
    """The series of a time test (TIME_TESTS) on one target: its group that runs once."""
    ids = [w.job_id for w in results.manifest.suite.workloads]
    workloads = {w.job_id: w for w in results.manifest.suite.workloads}
    jobs = [job for g in pts.groups if not g.rounds for job in pts.job_ids(g, ids)]
    series = group_series(results, jobs, target.name)
    log_ms = min((workloads[job].log_ms for job in jobs), default=1000)
    segments = [_segment(series, workloads[job]) for job in jobs
                if (series["job"] == job).any()]  # fmt: skip
    return DeviceSeries(str(results.path), target.name, label, pts.test, series, segments,
                        target.size_bytes, log_ms, results.manifest.suite.scale)  # fmt: skip


def _segment(series: pd.DataFrame, workload: Workload) -> Segment:
    times = series.loc[series["job"] == workload.job_id, "t_s"]
    step_s = workload.log_ms / 1000
    start, end = float(times.min()) - step_s, float(times.max())
    if workload.thinktime_us is None:
        return Segment(workload.job_id, start, end)
    idle_s = workload.thinktime_us / 1e6
    burst_s = workload.thinktime_iotime_s
    resolved = idle_s >= 2 * step_s and burst_s is not None and burst_s >= 2 * step_s
    return Segment(workload.job_id, start, end, idle_s, burst_s, resolved)


def tenths(values: pd.Series) -> tuple[float, float]:
    """The mean of a series' first tenth and of its last tenth (at least one value each);
    NaN for an empty one."""
    if values.empty:
        return math.nan, math.nan
    share = max(1, int(len(values) * END_SHARE))
    return float(values.iloc[:share].mean()), float(values.iloc[-share:].mean())


def thinned(series: pd.DataFrame, most: int = MOST_POINTS) -> pd.DataFrame:
    """A series of at most `most` rows for a chart: runs of neighbouring intervals of the
    same job averaged (their last time and written bytes kept)."""
    if len(series) <= most:
        return series
    size = math.ceil(len(series) / most)
    bins = series.groupby("job", sort=False).cumcount() // size
    grouped = series.groupby([series["job"], bins], sort=False)
    return grouped.agg(device=("device", "first"), job=("job", "first"), t_s=("t_s", "last"),
                       iops=("iops", "mean"), bw_bytes=("bw_bytes", "mean"),
                       written_bytes=("written_bytes", "last")).reset_index(drop=True)  # fmt: skip


@dataclass(frozen=True)
class Saturation:
    """Write saturation on one device: its fresh IOPS (the mean of the first tenth of the
    run), where they settle (the mean of the last tenth) and the bytes written, also in
    multiples of its capacity (NaN unknown)."""

    label: str
    fresh_iops: float
    settled_iops: float
    written_bytes: float
    capacities: float

    @property
    def drop_pct(self) -> float:
        """How much lower the settled IOPS are than the fresh ones, in % (negative: higher)."""
        if not self.fresh_iops > 0 or math.isnan(self.settled_iops):
            return math.nan
        return (1 - self.settled_iops / self.fresh_iops) * 100

    @property
    def words(self) -> str:
        if math.isnan(self.fresh_iops):
            return (f"{self.label}: no time series to read (no logs, logs without an interval "
                    "in them: a run shorter than fio's log interval, or logs that cannot be "
                    "read)")  # fmt: skip
        drop = self.drop_pct
        change = ("unknown" if math.isnan(drop) else f"{drop:.0f} % lower" if drop >= 0.5
                  else f"{-drop:.0f} % higher" if drop <= -0.5 else "unchanged")  # fmt: skip
        written = ("" if math.isnan(self.capacities)
                   else f" after {self.capacities:.2f}× its capacity written")  # fmt: skip
        return (f"{self.label}: the IOPS settle at {format_count(self.settled_iops)} (the mean "
                f"of the last tenth){written}, from {format_count(self.fresh_iops)} fresh (the "
                f"first tenth): {change}")  # fmt: skip


def saturation(device: DeviceSeries) -> Saturation:
    """Write saturation's figures of a device's series."""
    fresh, settled = tenths(device.series["iops"])
    written = float(device.series["written_bytes"].max()) if len(device.series) else math.nan
    capacity = device.capacity_bytes
    return Saturation(device.label, fresh, settled, written,
                      written / capacity if capacity else math.nan)  # fmt: skip


@dataclass(frozen=True)
class Recovery:
    """One idle-time segment of host idle recovery: its bursts' mean IOPS (NaN where the
    log cannot tell them apart: `resolved`) against the baseline before it (`baseline_job`'s
    mean IOPS; the steady rounds' window mean before the first)."""

    segment: Segment
    bursts: int
    burst_iops: float
    baseline_job: str | None
    baseline_iops: float

    @property
    def ratio(self) -> float:
        """The bursts' IOPS against the baseline's: above 1, the drive recovered when idle."""
        if not self.segment.resolved or not self.baseline_iops > 0:
            return math.nan
        return self.burst_iops / self.baseline_iops


def recovery(device: DeviceSeries, steady_iops: float | None) -> list[Recovery]:
    """Each idle-time segment of a device's host idle recovery, with the baseline before it:
    the run without idle times just before, or (before the first) `steady_iops`, the steady
    rounds' window mean."""
    found = []
    before: tuple[str | None, float] = (None, math.nan)
    if steady_iops is not None:
        before = ("steady rounds", steady_iops)
    for segment in device.segments:
        run = device.series[device.series["job"] == segment.job]
        if segment.idle_s is None:
            before = (segment.job, float(run["iops"].mean()))
            continue
        parts = bursts(run) if segment.resolved else pd.DataFrame(columns=["iops"])
        mean = float(parts["iops"].mean()) if segment.resolved and len(parts) else math.nan
        found.append(Recovery(segment, len(parts), mean, before[0], before[1]))
    return found


@dataclass(frozen=True)
class Settled:
    """One segment of cross stimulus recovery: its settled bandwidth (bytes/s, the mean of
    its last tenth) and the seconds it took to settle (None: it did not)."""

    segment: Segment
    bw_bytes: float
    settle_s: float | None


def settled(device: DeviceSeries) -> list[Settled]:
    """Each segment of a device's cross stimulus recovery: where it settled, and when."""
    after = settling(device.series)
    found = []
    for segment in device.segments:
        run = device.series[device.series["job"] == segment.job]
        found.append(Settled(segment, tenths(run["bw_bytes"])[1], after.get(segment.job)))
    return found
