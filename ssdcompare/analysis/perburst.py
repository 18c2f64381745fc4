"""Bursts: the I/O of a bursty job split at its idle gaps, with each burst's own figures.

A bursty job (Workload.bursty: a thinktime of 10 ms or more after every thinktime_blocks
I/Os, AnandTech's burst tests) idles between bursts, and fio's IOPS and bandwidth for it
divide by the whole run, idle gaps included: they describe the duty cycle as much as the
drive. With a size cap (io_size) fio logs every I/O of such a job (Workload.logs_each_io):
its completion time (whole ms since the job started), its total latency (ns) and its size.

An I/O begins a new burst when it was issued (completion time minus latency) more than half
the job's idle gap after the I/O before it completed. `bursts(results)` gives one row per
burst:

    sweep, host, device, job, repeat   which run (as in the results frame)
    process                            the fio process (numjobs > 1 makes several)
    burst                              1, 2, ... in each process
    start_s                            when its first I/O was issued, s since the job started
    duration_s                         from then to its last completion (at least 1 ms: the
                                       log's timestamps are whole milliseconds, so a burst's
                                       length is known to about 1 ms)
    idle_s                             the gap before it (NaN for the first)
    ios, bytes                         its I/Os and their bytes
    iops, bw_bytes                     ios / duration_s, bytes / duration_s
    lat_mean_us, lat_p99_us            its I/Os' mean and 99th-percentile total latency

`run_summary` gives a run's figures over all its bursts, the frame's burst columns: the
number of bursts, IOPS and bandwidth while bursting (each process's I/Os over its bursting
time, added over processes), and the duty cycle (bursting time over the time from the first
issue to the last completion; the mean over processes).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ssdcompare.analysis.persecond import gather, logged_each_io
from ssdcompare.fio.logs import LogError
from ssdcompare.results.models import RunStatus
from ssdcompare.results.store import ResultsDir

COLUMNS = ["sweep", "host", "device", "job", "repeat", "process", "burst", "start_s",
           "duration_s", "idle_s", "ios", "bytes", "iops", "bw_bytes", "lat_mean_us",
           "lat_p99_us"]  # fmt: skip
_RUN_COLUMNS = COLUMNS[5:]
MIN_DURATION_S = 0.001  # the log's resolution


@dataclass(frozen=True)
class BurstSummary:
    """One run's bursts taken together."""

    bursts: int
    iops: float  # all I/Os over the bursts' time
    bw_bytes: float
    duty_pct: float  # bursting time over the whole span of I/O


def split(completed_ms: np.ndarray, lat_ns: np.ndarray, sizes: np.ndarray,
          idle_s: float) -> pd.DataFrame:  # fmt: skip
    """One process's I/Os (completion ms, latency ns, bytes) as bursts (_RUN_COLUMNS but
    process)."""
    order = np.argsort(completed_ms, kind="stable")
    done = completed_ms[order] / 1000.0
    lat_s = lat_ns[order] / 1e9
    issued = done - lat_s
    gaps = issued[1:] - done[:-1]
    number = np.concatenate([[1], 1 + np.cumsum(gaps > idle_s / 2)])
    ios = pd.DataFrame({"burst": number, "issued": issued, "done": done, "lat_us": lat_s * 1e6,
                        "bytes": sizes[order]})  # fmt: skip
    grouped = ios.groupby("burst", sort=True)
    frame = grouped.agg(
        start_s=("issued", "min"), end_s=("done", "max"), ios=("lat_us", "size"),
        bytes=("bytes", "sum"), lat_mean_us=("lat_us", "mean"),
    ).reset_index()  # fmt: skip
    frame["lat_p99_us"] = grouped["lat_us"].quantile(0.99).to_numpy()
    frame["start_s"] = frame["start_s"].clip(lower=0)
    frame["duration_s"] = (frame["end_s"] - frame["start_s"]).clip(lower=MIN_DURATION_S)
    frame["idle_s"] = frame["start_s"] - frame["end_s"].shift(1)
    frame["iops"] = frame["ios"] / frame["duration_s"]
    frame["bw_bytes"] = frame["bytes"] / frame["duration_s"]
    return frame


def run_bursts(results: ResultsDir, status: RunStatus, idle_s: float) -> pd.DataFrame:
    """One run's bursts (_RUN_COLUMNS); empty unless fio logged every I/O of it."""
    if not logged_each_io(results, status):
        return pd.DataFrame(columns=_RUN_COLUMNS)
    parts = []
    for process, path in enumerate(results.timeseries_logs(status, "lat"), start=1):
        samples = results.files.log_samples(path)  # column by column, read without a copy
        if not samples:
            continue
        completed = np.frombuffer(samples.time_ms, dtype=np.int64).astype("float64")
        lat = np.frombuffer(samples.value, dtype=np.float64)
        sizes = np.frombuffer(samples.size, dtype=np.int64)
        parts.append(split(completed, lat, sizes, idle_s).assign(process=process))
    if not parts:
        return pd.DataFrame(columns=_RUN_COLUMNS)
    return pd.concat(parts, ignore_index=True)[_RUN_COLUMNS]


def summarize(frame: pd.DataFrame) -> BurstSummary | None:
    """A run's bursts taken together (None without bursts). Each fio process bursts on its
    own schedule: rates are each process's I/Os over its own bursting time, added up over the
    processes (they run side by side); the duty cycle is the processes' mean."""
    if frame.empty:
        return None
    iops = bw = 0.0
    duties = []
    for _, bursts in frame.groupby("process", sort=True):
        busy = float(bursts["duration_s"].sum())
        span = float((bursts["start_s"] + bursts["duration_s"]).max() - bursts["start_s"].min())
        iops += float(bursts["ios"].sum()) / busy
        bw += float(bursts["bytes"].sum()) / busy
        duties.append(min(busy / span * 100, 100.0) if span > 0 else 100.0)
    return BurstSummary(bursts=len(frame), iops=iops, bw_bytes=bw,
                        duty_pct=sum(duties) / len(duties))  # fmt: skip


def run_summary(results: ResultsDir, status: RunStatus, idle_s: float) -> BurstSummary | None:
    """The frame's burst columns of one run; None when it has no bursts or unreadable logs."""
    try:
        return summarize(run_bursts(results, status, idle_s))
    except LogError:
        return None


def bursts(
    results: str | Path | Iterable[str | Path], damaged: list[str] | None = None
) -> pd.DataFrame:
    """Every burst of every bursty run in one or more results folders, as a tidy frame. A
    damaged log is an error, unless `damaged` is a list to collect such errors in."""

    def of_run(folder: ResultsDir, status: RunStatus) -> pd.DataFrame | None:
        workload = next((w for w in folder.manifest.suite.workloads if w.job_id == status.job),
                        None)  # fmt: skip
        if status.status != "ok" or workload is None or not workload.bursty:
            return None
        return run_bursts(folder, status, (workload.thinktime_us or 0) / 1e6)

    return gather(results, COLUMNS, of_run, damaged)
