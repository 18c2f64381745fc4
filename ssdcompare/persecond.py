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

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from ssdcompare import framecache
from ssdcompare.fiologs import LogError, read_log
from ssdcompare.store import ResultsDir, RunStatus, unique_folders

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


def _samples(paths: list[Path], kind: str) -> pd.DataFrame:
    rows = [
        (process, round(s.time_ms / 1000), s.direction, s.value)
        for process, path in enumerate(paths)
        for s in read_log(path)
    ]
    return pd.DataFrame(rows, columns=["process", "t_s", "direction", kind])


def logged_each_io(results: ResultsDir, status: RunStatus) -> bool:
    """A run whose fio logged every I/O (a bursty job, see ssdcompare.perburst): latency logs
    but no per-second IOPS logs."""
    return bool(results.timeseries_logs(status, "lat")) and not results.timeseries_logs(
        status, "iops"
    )


def _seconds_of_each_io(paths: list[Path]) -> pd.DataFrame:
    """Per-second rows from logs of every I/O: the I/Os that completed in each second, with
    the seconds without any (idle gaps) as zeros; the last, partial second left out."""
    rows = [(max(1, -(-s.time_ms // 1000)), s.direction, s.value, s.size)
            for path in paths for s in read_log(path)]  # fmt: skip
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


def run_series(results: ResultsDir, status: RunStatus) -> pd.DataFrame:
    """One run's seconds: direction, t_s, iops, bw_bytes, lat_mean_us (empty without logs)."""
    if logged_each_io(results, status):
        return _seconds_of_each_io(results.timeseries_logs(status, "lat"))
    logs = {kind: results.timeseries_logs(status, kind) for kind in ("iops", "bw", "lat")}
    if not logs["iops"]:
        return pd.DataFrame(columns=_SERIES_COLUMNS)
    keys = ["process", "t_s", "direction"]
    merged = _samples(logs["iops"], "iops")
    for kind in ("bw", "lat"):
        if logs[kind]:
            # the seconds are those fio logged IOPS for: at the end of a job fio flushes a
            # last, partial second into the latency log only
            # ... and that partial second can round to the last full one: keep the full one,
            # or the merge would count that second twice
            extra = _samples(logs[kind], kind).drop_duplicates(keys, keep="first")
            merged = merged.merge(extra, on=keys, how="left")
        else:
            merged[kind] = float("nan")
    merged["lat_weighted"] = merged["lat"] * merged["iops"]
    per_second = merged.groupby(["direction", "t_s"], sort=True).agg(
        iops=("iops", lambda s: s.sum(min_count=1)),
        bw=("bw", lambda s: s.sum(min_count=1)),
        lat_weighted=("lat_weighted", lambda s: s.sum(min_count=1)),
    ).reset_index()  # fmt: skip
    per_second["bw_bytes"] = per_second["bw"] * 1024
    per_second["lat_mean_us"] = per_second["lat_weighted"] / per_second["iops"] / 1000
    return per_second[_SERIES_COLUMNS]


def find_cliff(t_s: Iterable[float], iops: Iterable[float]) -> Cliff | None:
    """The write cliff of one run's IOPS per second (see the module docstring), or None."""
    series = pd.Series(list(iops), index=list(t_s), dtype="float64").dropna().sort_index()
    if len(series) < MIN_SECONDS:
        return None
    before = float(series.iloc[:FIRST_SECONDS].median())
    if not before > 0:
        return None
    limit = before * CLIFF_FRACTION
    values = series.to_numpy()
    for index in range(FIRST_SECONDS, len(values) - 1):
        rest = values[index:]
        below = rest < limit
        if below[0] and below.mean() >= CLIFF_HOLD and float(pd.Series(rest).median()) < limit:
            return Cliff(float(series.index[index]), before, float(pd.Series(rest).median()))
    return None


def run_cliff(results: ResultsDir, status: RunStatus) -> Cliff | None:
    """The write cliff of one run, from its IOPS logs (all directions added). None for a
    bursty run (fio logged every I/O): its idle gaps are not a cliff."""
    if not results.timeseries_logs(status, "iops"):  # no per-second logs, or each I/O's
        return None
    if logged_each_io(results, status):
        return None
    try:
        seconds = run_series(results, status)
    except LogError:
        return None
    if seconds.empty:
        return None
    total = seconds.groupby("t_s")["iops"].sum(min_count=1)
    return find_cliff(total.index, total.to_numpy())


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
    paths = [results] if isinstance(results, (str, Path)) else list(results)
    parts = []
    for path in unique_folders(paths):
        folder = ResultsDir.open(path)
        for status in folder.statuses():
            try:
                rows = of_run(folder, status)
            except LogError as err:
                if damaged is None:
                    raise
                damaged.append(str(err))
                continue
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
    log is an error, unless `damaged` is a list to collect such errors in (see gather)."""

    def of_run(folder: ResultsDir, status: RunStatus) -> pd.DataFrame | None:
        if status.status not in ("ok", "interrupted") or not _has_logs(folder, status):
            return None
        return run_series(folder, status)

    paths = [results] if isinstance(results, (str, Path)) else list(results)
    parts = []
    for folder in unique_folders(paths):
        # kept in the folder's cache while no file of it changes (ssdcompare.framecache);
        # a folder with a damaged log is read again each time, so the damage is said each time
        wanted = framecache.key(folder, "timeseries")
        frame = framecache.read(folder, wanted, "timeseries")
        if frame is None:
            errors: list[str] = []
            frame = gather(folder, COLUMNS, of_run, errors if damaged is not None else None)
            if not frame.empty:
                frame["t_s"] = frame["t_s"].astype("float64")
            if errors and damaged is not None:
                damaged += errors
            else:
                framecache.write(folder, wanted, frame, "timeseries")
        parts.append(frame)
    if not parts:
        return gather([], COLUMNS, of_run, damaged)
    return pd.concat(parts, ignore_index=True) if len(parts) > 1 else parts[0]
