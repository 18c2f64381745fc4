"""Every run second by second, from fio's per-second logs, and the write cliff in them.

`timeseries(results)` gives a tidy frame, one row per (run, direction, second):

    sweep, host, device, job, repeat   which run (as in the results frame)
    direction                          read, write or trim
    t_s                                seconds since the job started (the end of the second);
                                       the seconds fio logged IOPS for (a job's last, partial
                                       second is in fio's latency log only, and left out)
                                       (a bursty job's log of every I/O gives every second,
                                       idle ones as 0; see ssdcompare.perburst)
    iops                               I/Os in that second, all fio processes of the job added
    bw_bytes                           bytes per second, added likewise (fio logs KiB/s)
    lat_mean_us                        mean total latency, µs, the processes' means weighted by
                                       their I/Os in that second

A **write cliff** is where throughput falls and stays down: an SSD's SLC cache running out, a
thermal throttle, a drive that starts garbage collecting. `find_cliff` marks the first
second from which the job's IOPS (all directions) stay below CLIFF_FRACTION of its level in
the first seconds: the second itself is below, the median of all seconds from there on is
below, and at least CLIFF_HOLD of them are. It needs MIN_SECONDS of series at least.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import TypeVar

import pandas as pd

from ssdcompare import framecache
from ssdcompare.fiologs import LogError
from ssdcompare.store import ResultsDir, ResultsFiles, RunStatus, unique_folders

T = TypeVar("T")

COLUMNS = ["sweep", "host", "device", "job", "repeat", "direction", "t_s", "iops", "bw_bytes",
           "lat_mean_us"]  # fmt: skip
CLIFF_FRACTION = 0.5  # below half of the first seconds' level
CLIFF_HOLD = 0.8  # ... in at least 80 % of the seconds from the cliff on
FIRST_SECONDS = 3  # the level the job starts at: the median of its first seconds
MIN_SECONDS = 6
_SERIES_COLUMNS = ["direction", "t_s", "iops", "bw_bytes", "lat_mean_us"]


@dataclass(frozen=True)
class Cliff:
    """Where a run's throughput fell and stayed down."""

    t_s: float  # the first second below
    before_iops: float  # the level of the first seconds
    after_iops: float  # the median from the cliff on


def logged_each_io(results: ResultsDir, status: RunStatus) -> bool:
    """A run whose fio logged every I/O (a bursty job, see ssdcompare.perburst): latency logs
    but no per-second IOPS logs."""
    return bool(results.timeseries_logs(status, "lat")) and not results.timeseries_logs(
        status, "iops"
    )


def _seconds_of_each_io(files: ResultsFiles, paths: list[Path]) -> pd.DataFrame:
    """Per-second rows from logs of every I/O: the I/Os that completed in each second, with
    the seconds without any (idle gaps) as zeros; the last, partial second left out."""
    rows = [(max(1, -(-s.time_ms // 1000)), s.direction, s.value, s.size)
            for path in paths for s in files.log_samples(path)]  # fmt: skip
    ios = pd.DataFrame(rows, columns=["t_s", "direction", "lat", "size"])
    if ios.empty:
        return pd.DataFrame(columns=_SERIES_COLUMNS)
    per_second = ios.groupby(["direction", "t_s"]).agg(
        iops=("lat", "size"), bw_bytes=("size", "sum"), lat=("lat", "mean")
    )  # fmt: skip
    last = int(ios["t_s"].max())
    every = pd.MultiIndex.from_product([sorted(ios["direction"].unique()), range(1, last)],
                                       names=["direction", "t_s"])  # fmt: skip
    per_second = per_second.reindex(every).reset_index()
    per_second[["iops", "bw_bytes"]] = per_second[["iops", "bw_bytes"]].fillna(0.0)
    per_second["lat_mean_us"] = per_second["lat"] / 1000
    return per_second[_SERIES_COLUMNS].astype({"iops": "float64", "bw_bytes": "float64"})


def _has_logs(results: ResultsDir, status: RunStatus) -> bool:
    return bool(results.timeseries_logs(status, "iops") or results.timeseries_logs(status, "lat"))


def _run_seconds(
    results: ResultsDir, status: RunStatus
) -> list[tuple[str, int, float, float, float]]:
    """One run's seconds from its per-second logs, as (direction, t_s, iops, bw_bytes,
    lat_mean_us) in order of direction and second: the processes' IOPS and bandwidth added,
    their mean latencies weighted by their IOPS. A value no log gave is NaN. A bursty run's
    come from its log of every I/O."""
    if logged_each_io(results, status):
        seconds = _seconds_of_each_io(results.files, results.timeseries_logs(status, "lat"))
        return list(seconds.itertuples(index=False, name=None))
    logs = {kind: results.timeseries_logs(status, kind) for kind in ("iops", "bw", "lat")}
    if not logs["iops"]:
        return []
    # the seconds are those fio logged IOPS for: at the end of a job fio flushes a last,
    # partial second into the latency log only ... and that partial second can round to the
    # last full one: the first sample of a (process, second, direction) is the one kept
    extra: dict[str, dict[tuple[int, int, str], float] | None] = {}
    for kind in ("bw", "lat"):
        if not logs[kind]:
            extra[kind] = None
            continue
        table: dict[tuple[int, int, str], float] = {}
        for process, path in enumerate(logs[kind]):
            for sample in results.files.log_samples(path):
                table.setdefault((process, round(sample.time_ms / 1000), sample.direction),
                                 sample.value)  # fmt: skip
        extra[kind] = table
    sums: dict[tuple[str, int], list[float]] = {}  # iops, bw (KiB/s), latency x iops; NaN: none
    nan = math.nan
    for process, path in enumerate(logs["iops"]):
        for sample in results.files.log_samples(path):
            t_s = round(sample.time_ms / 1000)
            at = (process, t_s, sample.direction)
            bw = extra["bw"].get(at, nan) if extra["bw"] is not None else nan
            lat = extra["lat"].get(at, nan) if extra["lat"] is not None else nan
            found = sums.setdefault((sample.direction, t_s), [nan, nan, nan])
            for index, value in enumerate((sample.value, bw, lat * sample.value)):
                if value == value:  # NaN adds nothing, as in a sum that skips it
                    found[index] = value if found[index] != found[index] else found[index] + value
    rows = []
    for (direction, t_s), (iops, bw, weighted) in sorted(sums.items()):
        if iops == 0:
            lat_us = nan if weighted == 0 or weighted != weighted else math.inf
        else:
            lat_us = weighted / iops / 1000
        rows.append((direction, t_s, iops, bw * 1024, lat_us))
    return rows


def find_cliff(t_s: Iterable[float], iops: Iterable[float]) -> Cliff | None:
    """The write cliff of one run's IOPS per second (see the module docstring), or None."""
    pairs = sorted((t, v) for t, v in zip(t_s, iops, strict=True) if v == v)
    if len(pairs) < MIN_SECONDS:
        return None
    values = [float(v) for _, v in pairs]
    before = median(values[:FIRST_SECONDS])
    if not before > 0:
        return None
    limit = before * CLIFF_FRACTION
    for index in range(FIRST_SECONDS, len(values) - 1):
        rest = values[index:]
        if rest[0] < limit and sum(v < limit for v in rest) / len(rest) >= CLIFF_HOLD:
            after = median(rest)
            if after < limit:
                return Cliff(float(pairs[index][0]), before, after)
    return None


def run_cliff(results: ResultsDir, status: RunStatus) -> Cliff | None:
    """The write cliff of one run, from its IOPS logs (all directions added). None for a
    bursty run (fio logged every I/O): its idle gaps are not a cliff."""
    if not results.timeseries_logs(status, "iops"):  # no per-second logs, or each I/O's
        return None
    if logged_each_io(results, status):
        return None
    try:
        seconds = _run_seconds(results, status)
    except LogError:
        return None
    total: dict[int, float] = {}  # all directions added; NaN where none was logged
    for _, t_s, iops, _, _ in seconds:
        known = total.get(t_s, math.nan)
        total[t_s] = iops if known != known else (known + iops if iops == iops else known)
    return find_cliff(total.keys(), total.values()) if total else None


def gather(
    results: str | Path | Iterable[str | Path],
    columns: list[str],
    of_run: Callable[[ResultsDir, RunStatus], pd.DataFrame | None],
    damaged: list[str] | None = None,
) -> pd.DataFrame:
    """One tidy frame from every run of one or more results folders: `of_run` gives a run's
    rows (None or empty: none), each labelled with its sweep, host, device, job and repeat.
    A damaged log raises LogError, unless `damaged` is a list: then the run is left out and
    the error added to it."""
    parts = []
    for path in unique_folders(results):
        folder = ResultsDir.open(path)
        for status, rows in _each_run(folder, folder.statuses(), of_run, damaged):
            if rows is None or rows.empty:
                continue
            parts.append(rows.assign(
                sweep=str(folder.path), host=folder.manifest.host.hostname,
                device=status.target, job=status.job, repeat=status.repeat,
            ))  # fmt: skip
    if not parts:
        return pd.DataFrame({column: pd.Series(dtype="object") for column in columns})
    frame = pd.concat(parts, ignore_index=True)[columns]
    frame["repeat"] = frame["repeat"].astype("Int64")
    return frame


def timeseries(
    results: str | Path | Iterable[str | Path], damaged: list[str] | None = None
) -> pd.DataFrame:
    """Every second of every run in one or more results folders, as a tidy frame. A damaged
    log is an error, unless `damaged` is a list to collect such errors in: then the run is
    left out and the error added to it."""
    parts = []
    for folder in unique_folders(results):
        # kept in the folder's cache while no file of it changes (ssdcompare.framecache);
        # a folder with a damaged log is read again each time, so the damage is said each time
        errors: list[str] = []
        collect = errors if damaged is not None else None  # else a damaged log raises
        frame = framecache.cached(
            folder, "timeseries", "",
            lambda folder=folder, collect=collect: _folder_seconds(ResultsDir.open(folder),
                                                                   collect),
            keep=lambda errors=errors: not errors,
        )  # fmt: skip
        if damaged is not None:
            damaged += errors
        parts.append(frame)
    if not parts:
        return _seconds_frame([])
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]


def _folder_seconds(folder: ResultsDir, damaged: list[str] | None) -> pd.DataFrame:
    """The seconds of every ok or interrupted run of one folder with logs, as one frame (the
    rows are gathered as tuples: a frame per run would cost more than reading its logs). A
    damaged log raises LogError, or with `damaged` leaves its run out and says why there."""
    rows: list[tuple[object, ...]] = []
    where = (str(folder.path), folder.manifest.host.hostname)
    logged = [status for status in folder.statuses()
              if status.status in ("ok", "interrupted") and _has_logs(folder, status)]  # fmt: skip
    for status, found in _each_run(folder, logged, _run_seconds, damaged):
        run = (*where, status.target, status.job, status.repeat)
        rows += [(*run, *second) for second in found]
    return _seconds_frame(rows)


def _each_run(
    folder: ResultsDir,
    statuses: Iterable[RunStatus],
    read: Callable[[ResultsDir, RunStatus], T],
    damaged: list[str] | None,
) -> Iterator[tuple[RunStatus, T]]:
    """Each run with what `read` makes of it. A damaged log raises LogError, unless
    `damaged` is a list: then the run is left out and the error added to it."""
    for status in statuses:
        try:
            found = read(folder, status)
        except LogError as err:
            if damaged is None:
                raise
            damaged.append(str(err))
            continue
        yield status, found


def _seconds_frame(rows: list[tuple[object, ...]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame["repeat"] = frame["repeat"].astype("Int64")
    frame["t_s"] = frame["t_s"].astype("float64")
    for column in ("iops", "bw_bytes", "lat_mean_us"):
        frame[column] = frame[column].astype("float64")
    return frame
