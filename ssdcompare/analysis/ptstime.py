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

from collections.abc import Iterable

import numpy as np
import pandas as pd

from ssdcompare.fio.logs import LogError
from ssdcompare.results.models import RunStatus
from ssdcompare.results.store import ResultsDir
from ssdcompare.suite.workload import Workload

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
