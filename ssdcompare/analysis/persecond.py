"""Every run second by second, from fio's per-second logs, and the write cliff in them.

`timeseries(results)` gives a tidy frame, one row per (run, direction, second):

    sweep, host, device, job, repeat   which run (as in the results frame)
    direction                          read, write or trim
    t_s                                seconds since the job started (the end of the second);
                                       the seconds fio logged IOPS for (a job's last, partial
                                       second is in fio's latency log only, and left out)
                                       (a bursty job's log of every I/O gives every second,
                                       idle ones as 0; see ssdcompare.analysis.perburst)
    iops                               I/Os in that second, all fio processes of the job added
    bw_bytes                           bytes per second, added likewise (fio logs KiB/s)
    lat_mean_us                        mean total latency, µs, the processes' means weighted by
                                       their I/Os in that second

A **write cliff** is where throughput falls and stays down: an SSD's SLC cache running out, a
thermal throttle, a drive that starts garbage collecting. `find_cliff` marks the first
second from which the job's IOPS (all directions) stay below CLIFF_FRACTION of its level in
the first seconds: the second itself is below, the median of all seconds from there on is
below, and at least CLIFF_HOLD of them are. It needs MIN_SECONDS of series at least.

A cliff says its likely cause (`cliff_cause`): **thermal** when the drive's health log counted
throttling during the run (ssdcompare.target.probes.health), **CPU** when the sampler saw a fio
worker saturated, **cache** when the drive did not throttle (its log says so) and the CPU had
room: a cache (an SLC cache, a controller's buffer) ran out, after the bytes the job had
written by then. Without a health log, thermal cannot be ruled out and the cause says so. A
job that had written nothing when it fell (a reading job) filled no write cache: something
else slowed the device (another process, a limit on the host), unless the heat did.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any, TypeVar

import numpy as np
import pandas as pd

from ssdcompare.analysis import cache as framecache
from ssdcompare.fio.logs import DIRECTIONS, LogError, Samples
from ssdcompare.results.files import ResultsFiles
from ssdcompare.results.models import RunStatus
from ssdcompare.results.store import ResultsDir, unique_folders
from ssdcompare.suite.longrun import LOG_MS

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
    # what the job had written when it fell: its logged write bandwidth over the seconds before
    written_bytes: float | None = None


def logged_each_io(results: ResultsDir, status: RunStatus) -> bool:
    """A run whose fio logged every I/O (a bursty job, see
    ssdcompare.analysis.perburst): latency logs but no per-second IOPS logs."""
    return bool(results.timeseries_logs(status, "lat")) and not results.timeseries_logs(
        status, "iops"
    )


# a run's seconds, column by column (_SERIES_COLUMNS): a hostile log can hold millions
Seconds = dict[str, np.ndarray]
_NAMES = np.array([DIRECTIONS[code] for code in sorted(DIRECTIONS)], dtype=object)
# directions in name order (read, trim, write), as the rows are sorted
_NAME_RANK = np.argsort(np.argsort(_NAMES))


def _seconds_of_each_io(files: ResultsFiles, paths: list[Path]) -> Seconds:
    """Per-second rows from logs of every I/O: the I/Os that completed in each second, with
    the seconds without any (idle gaps) as zeros; the last, partial second left out."""
    logs = [files.log_samples(path) for path in paths]
    ios = pd.DataFrame({
        "t_s": np.maximum(1, -(-_column(logs, "time_ms", np.int64) // 1000)),
        "direction": _NAMES[_column(logs, "direction_code", np.int8)],
        "lat": _column(logs, "value", np.float64),
        "size": _column(logs, "size", np.int64),
    })  # fmt: skip
    if ios.empty:
        return {column: np.array([]) for column in _SERIES_COLUMNS}
    per_second = ios.groupby(["direction", "t_s"]).agg(
        iops=("lat", "size"), bw_bytes=("size", "sum"), lat=("lat", "mean")
    )  # fmt: skip
    last = int(ios["t_s"].max())
    every = pd.MultiIndex.from_product([sorted(ios["direction"].unique()), range(1, last)],
                                       names=["direction", "t_s"])  # fmt: skip
    per_second = per_second.reindex(every).reset_index()
    per_second[["iops", "bw_bytes"]] = per_second[["iops", "bw_bytes"]].fillna(0.0)
    per_second["lat_mean_us"] = per_second["lat"] / 1000
    per_second = per_second.astype({"iops": "float64", "bw_bytes": "float64"})
    return {column: per_second[column].to_numpy() for column in _SERIES_COLUMNS}


def _column(logs: list[Samples], name: str, dtype: type) -> np.ndarray:
    """One column of several logs' samples, one after the other (read without a copy)."""
    return np.concatenate(
        [np.frombuffer(getattr(log, name), dtype=dtype) for log in logs] or [np.array([], dtype)]
    )


def _has_logs(results: ResultsDir, status: RunStatus, log_ms: int) -> bool:
    """Whether a run has logs read a second at a time: a run of a scaled PTS test logs more
    finely (its workload's `log_ms`, suite.longrun), and its seconds would add up rates; it
    is left out."""
    if log_ms != LOG_MS:
        return False
    return bool(results.timeseries_logs(status, "iops") or results.timeseries_logs(status, "lat"))


def _keyed(samples: Samples) -> tuple[np.ndarray, np.ndarray]:
    """A per-second log's (second and direction as one key, value): the second is its time
    rounded to the nearest one (fio logs a second a few ms after it ends)."""
    seconds = np.round(np.frombuffer(samples.time_ms, dtype=np.int64) / 1000).astype(np.int64)
    codes = np.frombuffer(samples.direction_code, dtype=np.int8)
    return seconds * len(DIRECTIONS) + codes, np.frombuffer(samples.value, dtype=np.float64)


def _first_of_each(samples: Samples | None) -> tuple[np.ndarray, np.ndarray]:
    """A per-second log's keys (see _keyed), sorted and each once, with the value of the
    first sample of each; none without a log."""
    if samples is None:
        return np.array([], np.int64), np.array([], np.float64)
    keys, values = _keyed(samples)
    order = np.argsort(keys, kind="stable")
    keys, values = keys[order], values[order]
    first = np.ones(len(keys), dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    return keys[first], values[first]


def _looked_up(table: tuple[np.ndarray, np.ndarray], keys: np.ndarray) -> np.ndarray:
    """The values `table` (from _first_of_each) has for `keys`; NaN for a key it lacks."""
    known, values = table
    if not len(known):
        return np.full(len(keys), np.nan)
    at = np.minimum(np.searchsorted(known, keys), len(known) - 1)
    return np.where(known[at] == keys, values[at], np.nan)


def _sums(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Each group's sum (groups begin at `starts`) of the values that are not NaN; NaN for a
    group with none."""
    known = ~np.isnan(values)
    sums = np.add.reduceat(np.where(known, values, 0.0), starts)
    return np.where(np.add.reduceat(known.astype(np.int64), starts) > 0, sums, np.nan)


def _run_seconds(results: ResultsDir, status: RunStatus) -> Seconds:
    """One run's seconds from its per-second logs (_SERIES_COLUMNS), in order of direction
    and second: the processes' IOPS and bandwidth added, their mean latencies weighted by
    their IOPS. A value no log gave is NaN. A bursty run's come from its log of every I/O."""
    if logged_each_io(results, status):
        return _seconds_of_each_io(results.files, results.timeseries_logs(status, "lat"))
    logs = {kind: results.timeseries_logs(status, kind) for kind in ("iops", "bw", "lat")}
    # the seconds are those fio logged IOPS for: at the end of a job fio flushes a last,
    # partial second into the latency log only ... and that partial second can round to the
    # last full one: the first sample of a (process, second, direction) is the one kept
    parts: list[tuple[np.ndarray, ...]] = []
    for process, path in enumerate(logs["iops"]):
        keys, iops = _keyed(results.files.log_samples(path))
        found = [iops]
        for kind in ("bw", "lat"):
            kept = logs[kind][process] if process < len(logs[kind]) else None
            log = results.files.log_samples(kept) if kept is not None else None
            found.append(_looked_up(_first_of_each(log), keys))
        parts.append((keys, found[0], found[1], found[2] * found[0]))
    if not parts or not sum(len(part[0]) for part in parts):
        return {column: np.array([]) for column in _SERIES_COLUMNS}
    keys, iops, bw, weighted = (np.concatenate(column) for column in zip(*parts, strict=True))
    seconds, codes = keys // len(DIRECTIONS), keys % len(DIRECTIONS)
    order = np.lexsort((seconds, _NAME_RANK[codes]))  # stable: the processes' order kept
    keys, seconds, codes = keys[order], seconds[order], codes[order]
    starts = np.flatnonzero(np.concatenate([[True], keys[1:] != keys[:-1]]))
    iops, bw, weighted = (_sums(column[order], starts) for column in (iops, bw, weighted))
    with np.errstate(divide="ignore", invalid="ignore"):
        lat_us = weighted / iops / 1000
    idle = (weighted == 0) | np.isnan(weighted)
    lat_us = np.where(iops == 0, np.where(idle, np.nan, np.inf), lat_us)
    return {"direction": _NAMES[codes[starts]], "t_s": seconds[starts], "iops": iops,
            "bw_bytes": bw * 1024, "lat_mean_us": lat_us}  # fmt: skip


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
    # how many seconds from each on are below: one pass, not one per second
    below_from = list(itertools.accumulate(reversed([v < limit for v in values])))[::-1]
    for index in range(FIRST_SECONDS, len(values) - 1):
        rest = len(values) - index
        if values[index] < limit and below_from[index] / rest >= CLIFF_HOLD:
            after = median(values[index:])
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
    if not len(seconds["t_s"]):
        return None
    order = np.argsort(seconds["t_s"], kind="stable")
    t_s = seconds["t_s"][order]
    starts = np.flatnonzero(np.concatenate([[True], t_s[1:] != t_s[:-1]]))
    # all directions added; NaN where none was logged
    cliff = find_cliff(t_s[starts], _sums(seconds["iops"][order], starts))
    if cliff is None:
        return None
    # each logged second's bytes per second is what that second wrote; no write logged
    # before the cliff: nothing was written (a reading job), a true 0
    before = (seconds["direction"] == "write") & (seconds["t_s"] < cliff.t_s)
    rates = seconds["bw_bytes"][before]
    written = 0.0 if not before.any() else (
        float(np.nansum(rates)) if not np.isnan(rates).all() else None)  # fmt: skip
    return dataclasses.replace(cliff, written_bytes=written)


def cliff_cause(
    thermal: bool | None,
    worker_saturated: bool,
    written_bytes: float | None,
    log_read: bool = False,
) -> str:
    """The likely cause of a run's write cliff in words (see the module): `thermal` whether
    the drive's health log counted throttling during the run (None: not known, because no
    log was read or, `log_read`, the log read does not count throttling: a SATA or SAS
    drive's), whether the sampler saw a fio worker saturated, and the bytes the job had
    written when it fell."""
    if thermal:
        return "thermal: the drive throttled during the run (its health log counted it)"
    if worker_saturated:
        return "CPU: the sampler saw a fio worker saturated"
    written = f"{written_bytes / 1e9:.1f} GB" if written_bytes is not None else "an unknown amount"
    unknown = ("its health log does not count throttling" if log_read
               else "no health log tells whether the drive throttled")  # fmt: skip
    if written_bytes == 0:
        heat = unknown if thermal is None else "the drive did not throttle"
        return (
            f"not a write cache: the job had written nothing when it fell; {heat}, so "
            "something else slowed the device (another process, a limit on the host)"
        )
    if thermal is None:
        return f"cache or thermal: the job had written {written} when it fell; {unknown}"
    return f"cache: no throttling; the device had written {written} when it fell"


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
            host, device = folder.run_place(status.target)
            parts.append(rows.assign(
                sweep=str(folder.path), host=host, device=device, job=status.job,
                repeat=status.repeat,
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
        # kept in the folder's cache while no file of it changes (ssdcompare.analysis.cache);
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
    runs' columns are joined once: a frame per run would cost more than reading its logs). A
    damaged log raises LogError, or with `damaged` leaves its run out and says why there."""
    runs: list[tuple[tuple[object, ...], Seconds]] = []
    log_ms = {w.job_id: w.log_ms for w in folder.manifest.suite.workloads}
    logged = [status for status in folder.statuses()
              if status.status in ("ok", "interrupted")
              and _has_logs(folder, status, log_ms.get(status.job, LOG_MS))]  # fmt: skip
    for status, found in _each_run(folder, logged, _run_seconds, damaged):
        if len(found["t_s"]):
            place = folder.run_place(status.target)
            runs.append(((str(folder.path), *place, status.job, status.repeat), found))
    return _seconds_frame(runs)


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


def _seconds_frame(runs: list[tuple[tuple[object, ...], Seconds]]) -> pd.DataFrame:
    """One frame (COLUMNS) from each run's label (sweep, host, device, job, repeat) and
    seconds."""
    lengths = [len(seconds["t_s"]) for _, seconds in runs]
    data: dict[str, Any] = {}
    for index, column in enumerate(COLUMNS[:5]):
        labels = np.empty(len(runs), dtype=object)
        labels[:] = [run[index] for run, _ in runs]
        data[column] = np.repeat(labels, lengths)
    for column in _SERIES_COLUMNS:
        data[column] = np.concatenate([seconds[column] for _, seconds in runs] or [[]])
    frame = pd.DataFrame(data, columns=COLUMNS).infer_objects()  # text columns as text
    frame["repeat"] = frame["repeat"].astype("Int64")
    frame["t_s"] = frame["t_s"].astype("float64")
    for column in ("iops", "bw_bytes", "lat_mean_us"):
        frame[column] = frame[column].astype("float64")
    return frame
