"""Results as a tidy pandas frame: one row per (host, device, job, repeat, direction).

Every number in the frame is read from a stored fio JSON file or CPU trace (the `fio_json`
column names the file), so any cell can be traced back and recomputed. Unknown values are NaN
(float columns), NA (Int64, boolean) or None (text); a failed or interrupted run keeps its rows
with NaN figures, never zeros.

The columns, their types, units and where each comes from are written once, in
ssdcompare.analysis.columns (the registry the frame's columns are made from; docs/results-format.md
shows it as tables). For a raw fio file (read_fio) a sweep's sources stand for fio's own: the
job's options for the workload, the entry's "jobname" for the job, the last part of its
filename for the device.

What lat_* means: lat_source says which of fio's objects they come from, "lat" (lat_ns:
submission + completion, what the application waits for) or "clat" (clat_ns: completion
only). lat is used when fio printed percentiles for it (lat_percentiles=1), else clat.
ssdcompare's jobfiles set lat_percentiles=1, so new results have lat_* = total latency;
results recorded before that (and raw fio runs with fio's defaults) have lat_* =
completion latency (clat), which leaves out submission. Check lat_source before
comparing lat_* across such results, or compare clat_*, which mean the same in both.
"""

from __future__ import annotations

import glob
import math
from collections import namedtuple
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ssdcompare.analysis import cache as framecache
from ssdcompare.analysis.columns import (
    BOOLEAN_COLUMNS,
    COLUMNS,
    FLOAT_COLUMNS,
    INT_COLUMNS,
    TEXT_COLUMNS,
)
from ssdcompare.analysis.perburst import run_summary
from ssdcompare.analysis.persecond import run_cliff
from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.check import JobfileError, read_jobfile
from ssdcompare.fio.jobfile import member_section, rendered_size, span_words
from ssdcompare.fio.result.merge import merge_jobs
from ssdcompare.fio.result.models import DIRECTIONS, FioOutput, FioOutputError, JobResult
from ssdcompare.fio.result.plausibility import job_problem, trace_problem
from ssdcompare.fio.result.reader import parse_fio_file
from ssdcompare.judge.cpu import CpuStats, Thresholds, judge
from ssdcompare.judge.stats import AGGREGATES, aggregate_values, compare, find_knee
from ssdcompare.judge.verdict import RunFacts, Verdict, judge_repeats, judge_run
from ssdcompare.results.files import StoredFileError, write_atomic
from ssdcompare.results.models import RunStatus
from ssdcompare.results.outputs import check_export_path
from ssdcompare.results.store import ResultsDir, given_paths, unique_folders
from ssdcompare.suite.workload import Workload
from ssdcompare.target.devices import Target
from ssdcompare.target.hosts import Host
from ssdcompare.target.probes import columns_of
from ssdcompare.units import format_bytes, parse_size

# Columns taken as they are from the CpuStats of a run's samples (cpu_count comes from the
# manifest's host instead).
_CPU_STATS_COLUMNS = (
    "cpu_busy_pct", "cpu_max_busy_pct", "irq_softirq_max_pct", "fio_worker_max_pct",
    "fio_worker_max_runnable_pct", "fio_workers_total_cores", "steal_pct", "iowait_pct",
    "others_pct", "others_top",
)  # fmt: skip


def _direction_values(job: JobResult, direction: str) -> dict[str, object]:
    result = job.directions.get(direction)
    if result is None:
        if direction in job.empty_directions:  # fio printed it with zeros: a true zero
            return {"iops": 0.0, "bw_bytes": 0.0, "io_bytes": 0, "total_ios": 0}
        return {}  # not printed, or nothing usable in it: unknown
    lat = result.latency
    values: dict[str, object] = {
        "iops": result.iops,
        "bw_bytes": result.bw_bytes,
        "io_bytes": result.io_bytes,
        "total_ios": result.total_ios,
        "measured_s": result.runtime_ms / 1000 if result.runtime_ms else None,
    }
    if lat is not None:
        values.update(
            lat_mean_us=lat.mean_us,
            lat_stddev_us=lat.stddev_us,
            lat_min_us=lat.min_us,
            lat_max_us=lat.max_us,
            lat_p50_us=lat.percentile_us(50),
            lat_p99_us=lat.percentile_us(99),
            lat_p999_us=lat.percentile_us(99.9),
            lat_source=result.latency_source,
            lat_dist_us=lat.distribution_us(),
        )
    # completion and submission latency on their own, whatever lat_* follows: lat_* changed
    # meaning when the jobfiles began to ask for lat_percentiles, clat_* did not
    if result.clat is not None:
        values.update(clat_mean_us=result.clat.mean_us, clat_p99_us=result.clat.percentile_us(99))
    if result.slat is not None:
        values["slat_mean_us"] = result.slat.mean_us
    return values


def _workload_columns(workload: Workload | None, sweep_ioengine: str) -> dict[str, object]:
    if workload is None:
        return {}
    return {
        "rw": workload.rw,
        "bs_bytes": workload.bs_bytes,
        "iodepth": workload.iodepth,
        "numjobs": workload.numjobs,
        "rwmixread": workload.rwmixread,
        "fsync": workload.fsync,
        "fdatasync": workload.fdatasync,
        "runtime_s": workload.runtime_s,
        "ramp_s": workload.ramp_s,
        "io_size_bytes": workload.io_size_bytes,
        "thinktime_us": workload.thinktime_us,
        "span": workload.span_label,
        "ioengine": workload.ioengine or sweep_ioengine,
        "extra_options": workload.extra_label,
    }


def _state_columns(
    results: ResultsDir, status: RunStatus, workload: Workload | None
) -> dict[str, object]:
    """What state the drive was put in before the run (see ssdcompare.run.precondition)."""
    if workload is not None and workload.state is not None:
        steps = {r.number: r for r in results.state_records(status.target)}
        step = steps.get(status.state_step) if status.state_step is not None else None
        reached = step is not None and step.ok and step.state == workload.state
        return {"drive_state": workload.state if reached else "unknown", "state": workload.state}
    steps = results.manifest.precondition
    if not steps:
        return {"drive_state": "as found"}
    words = []
    values: dict[str, object] = {}
    if "fill" in steps:
        filled = results.fill_record(status.target)
        words.append("filled" if filled is not None and filled.ok else "fill failed")
    if "workload" in steps:
        record = results.steady_record(status.target, status.job)
        if record is None:
            words.append("steady state unknown")
        else:
            words.append("steady" if record.attained else "not steady")
            values.update(steady_state=record.attained, ss_rounds=len(record.rounds_iops))
    return {"drive_state": ", ".join(words), **values}


def _span_columns(
    results: ResultsDir, status: RunStatus, workload: Workload | None, capacity: object
) -> dict[str, object]:
    """The span that ran, read from the stored jobfile's size= (what fio read), rather than
    the one the suite asked for: a target smaller than a byte span gets less."""
    if workload is None:
        return {}
    text = results.jobfile_text(status)
    try:
        facts = read_jobfile(text) if text is not None else None
    except JobfileError:
        facts = None
    if facts is None:
        return {}  # no jobfile (a skipped run): the span asked for stands
    size = rendered_size(facts)
    whole = capacity if isinstance(capacity, int) else None
    if size is None:
        used = whole
    elif size.endswith("%"):
        used = int(whole * float(size[:-1]) / 100) if whole else None
    else:
        used = parse_size(size)
    return {"span": span_words(workload, size), "span_bytes": used}


def _run_rows(
    results: ResultsDir,
    status: RunStatus,
    workload: Workload | None,
    device: dict[str, object],
    thresholds: Thresholds,
    members: Sequence[Target] = (),
    member_info: dict[str, dict[str, object]] | None = None,
    hosts: Sequence[Host] = (),
) -> list[dict[str, object]]:
    manifest = results.manifest
    base: dict[str, object] = {
        "host": manifest.host.hostname,
        "device": status.target,
        "remote": False,
        "group": status.target if members else None,
        "job": status.job,
        "repeat": status.repeat,
        "status": status.status,
        "error": status.error,
        "suite": manifest.suite.name,
        "workload_hash": status.workload_hash,
        "fio_version": manifest.host.fio_version,
        "started_at": status.started_at,
        "sweep": str(results.path),
        "sampler_cpu_pct": status.sampler_cpu_pct,
        "cpu_count": manifest.host.cpu_threads,
        **_workload_columns(workload, manifest.ioengine),
        **device,
        **_span_columns(results, status, workload, device.get("size_bytes")),
        **_state_columns(results, status, workload),
    }
    directions = list(workload.directions) if workload is not None else ["read"]
    workload_writes = workload is None or workload.writes
    parts: dict[str, JobResult] = {}
    job = _fio_job(results, status, base, parts if members else None, hosts)
    cpu_stats = _cpu_stats(results, status, workload, base)
    if base["status"] != "ok":  # cpu.json made the run a failed one
        job = None
        parts.clear()
    if cpu_stats is not None:
        base.update({name: getattr(cpu_stats, name) for name in _CPU_STATS_COLUMNS})
    base.update(columns_of(results.probes(status)))
    if job is not None and "mixed" in job.directions:
        # unified_rw_reporting: fio adds reads and writes up in one "mixed" section
        directions = [d for d in DIRECTIONS if d in job.directions]
    if job is not None:
        base.update(fio_cpu_usr_pct=job.usr_cpu_pct, fio_cpu_sys_pct=job.sys_cpu_pct)
        verdict = judge(
            cpu_stats, job.usr_cpu_pct, job.sys_cpu_pct, manifest.host.cpu_threads, thresholds
        )
        base.update(cpu_bound=verdict.cpu_bound, cpu_bound_reason=verdict.reason)
        cliff = run_cliff(results, status)
        if cliff is not None:
            base.update(cliff_s=cliff.t_s, cliff_before_iops=cliff.before_iops,
                        cliff_after_iops=cliff.after_iops)  # fmt: skip
        # only reading jobs have a ceiling (results made before that may hold others)
        ceiling = results.ceiling_iops(status.job) if not workload_writes else None
        if ceiling is not None:
            base.update(ceiling_iops=ceiling, ceiling_pct=job.total_iops / ceiling * 100)
        if workload is not None and workload.bursty:
            burst = run_summary(results, status, (workload.thinktime_us or 0) / 1e6)
            if burst is not None:
                base.update(bursts=burst.bursts, burst_iops=burst.iops,
                            burst_bw_bytes=burst.bw_bytes,
                            burst_duty_pct=burst.duty_pct)  # fmt: skip
    rows = []
    for direction in directions:
        row = dict(base, direction=direction)
        if job is not None:
            row.update(_direction_values(job, direction))
        rows.append(row)
    if members:
        rows += _member_rows(base, directions, members, parts, status, member_info or {})
    return rows


def _member_rows(
    base: dict[str, object],
    directions: list[str],
    members: Sequence[Target],
    parts: dict[str, JobResult],
    status: RunStatus,
    info: dict[str, dict[str, object]],
) -> list[dict[str, object]]:
    """A group run's rows per member, from the member's own section of fio's output (the
    group's rows add them up)."""
    rows = []
    for number, member in enumerate(members, start=1):
        part = parts.get(member_section(status.job, number))
        mine = dict(base, **info.get(member.name, {}), device=member.device, member=number)
        if member.host is not None:  # a group across hosts: each member on its own
            mine.update(host=member.host.name, port=member.host.port, remote=member.remote)
        if part is not None:
            mine.update(fio_cpu_usr_pct=part.usr_cpu_pct, fio_cpu_sys_pct=part.sys_cpu_pct)
        for direction in directions:
            row = dict(mine, direction=direction)
            if part is not None:
                row.update(_direction_values(part, direction))
            rows.append(row)
    return rows


def _fio_job(
    results: ResultsDir,
    status: RunStatus,
    base: dict[str, object],
    parts: dict[str, JobResult] | None = None,
    hosts: Sequence[Host] = (),
) -> JobResult | None:
    """The run's job as fio reported it; a missing, unreadable or impossible output turns an
    ok run into a failed one in `base` (an ok without a believable raw output is no
    measurement), its error naming the file and why, never quoting it. A group run's
    sections (one per member) are kept in `parts` by name, and added up as the job. With
    `hosts`, only their servers' entries count: a run of several hosts at once
    (--parallel-hosts) made when one fio client ran them all keeps the whole output in each
    device's folder."""
    if status.status != "ok":
        return None
    fio_path = results.fio_json(status)
    name = results.files.name(fio_path)
    try:
        output = results.fio_output(status)
    except StoredFileError as err:
        if not err.missing:
            base["fio_json"] = str(fio_path)
        base.update(status="failed" if err.missing else "damaged",
                    error=f"{err}; rerun with --resume")  # fmt: skip
        return None
    except FioOutputError as err:
        base.update(status="damaged", error=f"{name} {err.reason}", fio_json=str(fio_path))
        return None
    base["fio_json"] = str(fio_path)
    entries = _own_entries(output, hosts)
    numjobs = base.get("numjobs")
    problem = _entries_problem(entries, status.job, parts is not None, name,
                               numjobs if isinstance(numjobs, int) else None)  # fmt: skip
    if problem is not None:
        base.update(status="damaged", error=f"{problem}; rerun with --resume")
        return None
    job = entries[0]
    if parts is not None:
        parts.update({j.name: j for j in entries})
        job = merge_jobs(entries)
    # the engine fio ran with, as it reports it: older manifests do not record it
    engine = (job.options if job else output.global_options).get("ioengine")
    if engine:
        base["ioengine"] = engine
    return job


def _own_entries(output: FioOutput, hosts: Sequence[Host]) -> list[JobResult]:
    """The entries of fio's output that are the run's: with `hosts`, their servers' only."""
    entries = output.jobs
    servers = {(h.address, h.port) for h in hosts}
    if servers and any(j.hostname is not None for j in entries):
        entries = [j for j in entries if (j.hostname, j.port) in servers]
    return entries


def _entries_problem(
    entries: list[JobResult], job: str, group: bool, name: str, numjobs: int | None = None
) -> str | None:
    """Why a sweep run's entries (of fio's output `name`) cannot be its result, or None: a sweep's
    jobfile holds one section named after the job (a group's: one per member, see
    jobfile.member_section), reported once (group_reporting) or once per numjobs clone (a
    member's, added up by name when read). Each covers the workload's `numjobs` processes:
    more is an entry written twice, whatever the output's own options say."""
    if not entries:
        return f"{name}: fio's output holds no job"
    names = {entry.name for entry in entries}
    if group:
        wrong = any(not section.startswith(f"{job}.m") for section in names)
    else:
        wrong = names != {job} or len(entries) != 1
    if wrong:
        return f"{name} reports other jobs than this run's (the output of another run?)"
    if any(not entry.ok for entry in entries):
        return f"{name} reports that fio's job failed"
    for entry in entries:
        problem = job_problem(entry)
        if problem is not None:
            return f"{name} {problem}: impossible for a run, so the file is damaged"
    if numjobs is not None and any(entry.processes > numjobs for entry in entries):
        return (f"{name} reports the job as run by more fio processes than its workload's "
                f"numjobs={numjobs} (an entry written twice?): damaged")  # fmt: skip
    return None


def _cpu_stats(
    results: ResultsDir, status: RunStatus, workload: Workload | None, base: dict[str, object]
) -> CpuStats | None:
    """The run's CPU samples summed up over the measured period; None without samples. A
    cpu.json that is refused, damaged or holds impossible values makes an ok run a failed
    one in `base`, naming cpu.json (its figures would judge the run wrongly)."""
    try:
        trace = results.cpu_trace(status)
        problem = trace_problem(trace) if trace is not None else None
    except StoredFileError as err:
        trace, problem = None, f"{err}"
    if problem is not None and trace is not None:
        name = results.files.name(results.cpu_json(status))
        problem = f"{name} {problem}: impossible, so the file is damaged"
    if problem is not None:
        if status.status == "ok" and base["status"] == "ok":
            base.update(status="damaged", error=f"{problem}; rerun with --resume")
        return None
    if trace is None:
        return None
    return trace.stats(skip_s=workload.ramp_s + 0.5 if workload else 0.5)


def known_true(values: pd.Series) -> pd.Series:
    """A flag column (cpu_bound, significant, ...) as plain booleans: True only where it is
    known to be set; NA (cannot tell) reads as False."""
    return values.fillna(False).astype(bool)


def is_true(value: object) -> bool:
    """One flag: True only when known to be set; None and NA (cannot tell) are not True."""
    return value is not None and bool(pd.notna(value)) and bool(value)


def is_false(value: object) -> bool:
    """One flag: True only when known to be unset; None and NA (cannot tell) are not False."""
    return value is not None and bool(pd.notna(value)) and not bool(value)


def _typed(rows: list[dict[str, object]]) -> pd.DataFrame:
    # the columns the rows hold, then the others (all NaN, as pandas makes them): pandas
    # builds a frame from dicts at half the cost without the columns no row has
    frame = pd.DataFrame(rows).reindex(columns=COLUMNS) if rows else pd.DataFrame(columns=COLUMNS)
    for column in FLOAT_COLUMNS:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    for column in INT_COLUMNS:
        frame[column] = _whole_numbers(frame[column])
    for column in BOOLEAN_COLUMNS:
        frame[column] = frame[column].astype("boolean")
    for column in TEXT_COLUMNS:  # a text column no row fills is text too, of None, not NaN
        if frame[column].dtype == "float64":
            frame[column] = pd.Series([None] * len(frame), index=frame.index, dtype=object)
    # one run far above the job's ceiling discredits that ceiling for all its runs
    worst = frame.groupby(["sweep", "job"], dropna=False)["ceiling_pct"].transform("max")
    inputs = [_na_as_none(frame[column]) for column in _VerdictInputs._fields]
    # runs alike in every input share one verdict, judged once
    judged: dict[tuple[Any, ...], Verdict | None] = {}
    verdicts = []
    for values in zip(*inputs, _na_as_none(worst), strict=True):
        if values not in judged:
            judged[values] = _run_verdict(_VerdictInputs._make(values[:-1]), values[-1])
        verdicts.append(judged[values])
    frame["verdict"] = [v.verdict if v else None for v in verdicts]
    frame["verdict_reason"] = [v.reason if v else None for v in verdicts]
    return frame


# the columns a run's verdict is judged on (_run_verdict, _unsampled)
_VerdictInputs = namedtuple("_VerdictInputs", [
    "status", "io_size_bytes", "runtime_s", "measured_s", "cpu_bound", "cpu_bound_reason",
    "steal_pct", "others_pct", "others_top", "ceiling_pct", "remote", "host",
    "fio_cpu_usr_pct", "fio_cpu_sys_pct"])  # fmt: skip


def _na_as_none(column: pd.Series) -> list[Any]:
    """A column's values with None for every kind of NA (NaN, pd.NA)."""
    return column.astype(object).where(column.notna(), None).tolist()


def _whole_numbers(column: pd.Series) -> pd.Series:
    """An Int64 column: what is no whole number of 64 bits is NA. A raw fio output prints
    options as it was given them, and fio takes iodepth=1.5 or rwmixread=50.5."""
    numbers = pd.to_numeric(column, errors="coerce")
    try:
        return numbers.astype("Int64")
    except (TypeError, ValueError, OverflowError):
        values = [_whole(value) for value in numbers.tolist()]
        return pd.Series(values, index=column.index, dtype="Int64", name=column.name)


def _whole(value: Any) -> int | None:
    try:
        whole = int(value)
    except (TypeError, ValueError, OverflowError):
        return None  # NA, NaN, inf
    return whole if whole == value and -(2**63) <= whole < 2**63 else None


def _run_verdict(row: Any, ceiling_worst_pct: object = None) -> Verdict | None:
    """One row's verdict (ssdcompare.judge.verdict); None for a run that did not finish."""
    if row.status != "ok":
        return None

    def known(value: object) -> float | None:
        return None if value is None or pd.isna(value) else float(value)  # type: ignore[arg-type]

    timed = pd.isna(row.io_size_bytes) and pd.notna(row.runtime_s)
    return judge_run(RunFacts(
        cpu_bound=None if pd.isna(row.cpu_bound) else bool(row.cpu_bound),
        cpu_reason=row.cpu_bound_reason, steal_pct=known(row.steal_pct),
        others_pct=known(row.others_pct),
        others_top=row.others_top if isinstance(row.others_top, str) else None,
        runtime_s=known(row.measured_s), planned_s=known(row.runtime_s) if timed else None,
        ceiling_pct=known(row.ceiling_pct), ceiling_worst_pct=known(ceiling_worst_pct),
        unsampled=_unsampled(row),
    ))  # fmt: skip


def _unsampled(row: Any) -> str | None:
    """Why a run has no CPU samples, when it is on another machine."""
    if pd.isna(row.remote) or not row.remote:
        return None
    worker = [v for v in (row.fio_cpu_usr_pct, row.fio_cpu_sys_pct) if pd.notna(v)]
    figure = f" (its worker at {sum(worker):.0f} % of a core)" if len(worker) == 2 else ""
    return (f"host {row.host} is another machine, not sampled from here: only fio's own CPU "
            f"figures are known{figure}")  # fmt: skip


def load_results(
    results: ResultsDir, thresholds: Thresholds | None = None, cache: bool = True
) -> pd.DataFrame:
    """The frame of one results folder, failed and interrupted runs included (numbers NaN).

    With `cache`, a copy of the frame is kept in the folder and used again while no file of
    it has changed (ssdcompare.analysis.cache); without, it is always built from the raw files.
    """
    thresholds = thresholds or Thresholds()
    if not cache:
        return _load_results(results, thresholds)
    return framecache.cached(results.path, "frame", repr(thresholds),
                             lambda: _load_results(results, thresholds))  # fmt: skip


def _load_results(results: ResultsDir, thresholds: Thresholds) -> pd.DataFrame:
    manifest = results.manifest
    workloads = {w.job_id: w for w in manifest.suite.workloads}
    devices: dict[str, dict[str, object]] = {}
    for info in manifest.devices:
        devices[info.name] = {
            "model": info.model,
            "firmware": info.firmware,
            "size_bytes": info.size_bytes,
            "transport": info.transport,
            "rotational": info.rotational,
            "scheduler": info.scheduler,
            "target_kind": info.kind,
        }
    for target in manifest.targets:
        # a device on a fio server is named by that host, a group across hosts by its members
        if target.host is not None or len(target.hosts) > 1:
            host, device = results.run_place(target.name)
            port = target.host.port if target.host is not None else None
            devices.setdefault(target.name, {}).update(
                host=host, port=port, device=device, remote=target.remote
            )
    rows: list[dict[str, object]] = []
    order = {w.job_id: i for i, w in enumerate(manifest.suite.workloads)}
    targets = {t.name: i for i, t in enumerate(manifest.targets)}
    units = {t.name: t for t in manifest.targets}
    statuses = sorted(
        results.statuses(),
        key=lambda s: (s.repeat, targets.get(s.target, 99), order.get(s.job, 10**6)),
    )
    for status in statuses:
        # a run folder the plan does not have (copied in) is no run of this workload
        planned = results.planned(status.target, status.job, status.repeat)
        rows.extend(
            _run_rows(
                results,
                status,
                workloads.get(status.job) if planned else None,
                devices.get(status.target, {}),
                thresholds,
                units[status.target].members if status.target in units else (),
                devices,
                units[status.target].hosts if status.target in units else (),
            )
        )
    return _typed(rows)


def load(
    paths: str | Path | Iterable[str | Path],
    thresholds: Thresholds | None = None,
    cache: bool = True,
) -> pd.DataFrame:
    """Load one or more sweep results folders into one tidy frame (each folder read once).

    Each folder's frame is kept in its `.cache/` and read from there again while none of its
    files has changed; `cache=False` always builds it from the raw files."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    frames = [load_results(ResultsDir.open(p), thresholds, cache) for p in unique_folders(paths)]
    if not frames:
        raise SsdcompareError("no results folders given")
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    return _label_devices(frame)


def read_fio(
    paths: str | Path | Iterable[str | Path], thresholds: Thresholds | None = None
) -> pd.DataFrame:
    """A frame from raw fio JSON outputs made outside ssdcompare: one file, a list of them, or
    a glob ("runs/*.json"), read into one frame (built once, however many files).

    Columns fio's output cannot tell (device metadata, CPU samples) are null; the CPU-bound
    judgement uses fio's own usr/sys figures and stays null unless they show a saturated worker.
    Client/server output gives each server's host and port.
    """
    thresholds = thresholds or Thresholds()
    rows: list[dict[str, object]] = []
    for path in _fio_paths(paths):
        rows += _fio_file_rows(path, thresholds)
    return _label_devices(_typed(rows))


def _fio_paths(paths: str | Path | Iterable[str | Path]) -> list[Path]:
    if isinstance(paths, Path):
        return [paths]
    if isinstance(paths, str):
        if not any(char in paths for char in "*?["):
            return [Path(paths)]
        found = sorted(Path(p) for p in glob.glob(paths, recursive=True))
        if not found:
            raise SsdcompareError(f"no file matches {paths!r}")
        return found
    found = given_paths(paths, "fio outputs")
    if not found:
        raise SsdcompareError("no fio output files given")
    return found


def _device_name(filename: str | None) -> str | None:
    """A fio `filename` as a sweep names its target: the last part of the path (a list of
    files, "a:b", is left as it is)."""
    if not filename or ":" in filename.replace("\\:", ""):
        return filename
    return Path(filename.replace("\\:", ":")).name or filename


def _fio_file_rows(path: Path, thresholds: Thresholds) -> list[dict[str, object]]:
    output = parse_fio_file(path)
    rows = []
    for job in output.jobs:
        options = job.options  # this job's own server's options in client/server output
        verdict = judge(None, job.usr_cpu_pct, job.sys_cpu_pct, None, thresholds)
        problem = job_problem(job) if job.ok else None
        error = None if job.ok else f"fio job error {job.error}"
        if problem is not None:
            error = f"{path.name} {problem}: impossible for a run, so the file is damaged"
        base: dict[str, object] = {
            "host": job.hostname,
            "port": job.port,
            # what was measured: the filename, named as a sweep names it ("zram1" for
            # /dev/zram1, "test.img" for a file), else the host (client/server), else the file
            "device": _device_name(options.get("filename")) or job.hostname or path.stem,
            "job": job.name,
            "repeat": 1,
            "status": "damaged" if problem is not None else "failed" if error else "ok",
            "error": error,
            "rw": options.get("rw") or options.get("readwrite"),
            "iodepth": options.get("iodepth"),
            "numjobs": job.processes,
            "rwmixread": options.get("rwmixread"),
            "fsync": options.get("fsync"),
            "fdatasync": options.get("fdatasync"),
            "span": options.get("size"),
            "ioengine": options.get("ioengine"),
            "fio_cpu_usr_pct": job.usr_cpu_pct,
            "fio_cpu_sys_pct": job.sys_cpu_pct,
            "cpu_bound": verdict.cpu_bound,
            "cpu_bound_reason": verdict.reason,
            "fio_version": output.fio_version,
            "fio_json": str(path),
            "sweep": None,
            "target_kind": None,
        }
        bs = options.get("bs") or options.get("blocksize")
        if bs:
            try:
                base["bs_bytes"] = parse_size(bs)
            except ValueError:
                pass
        directions = [d for d in DIRECTIONS if d in job.directions] or ["read"]
        for direction in directions:
            values = _direction_values(job, direction) if problem is None else {}
            rows.append(dict(base, direction=direction, **values))
    return rows


def _label_devices(frame: pd.DataFrame) -> pd.DataFrame:
    """A `label` per compared unit: the device, qualified by host (several hosts), host:port
    (several fio servers on one host) or sweep (one device in several sweeps)."""
    frame = frame.copy()
    device = frame["device"].astype("string")
    host = frame["host"].astype("string")
    port = frame["port"] if "port" in frame.columns else pd.Series(pd.NA, index=frame.index)
    port = port.astype("Int64")
    # servers on one host differ only by their port, so such a host is named with it
    ports = frame.assign(port=port).dropna(subset=["host", "port"])
    per_host = ports.groupby("host")["port"].nunique()
    by_port = frame["host"].isin(per_host[per_host > 1].index) & port.notna()
    where = host.where(~by_port, host + ":" + port.astype("string"))
    qualify = by_port.copy()
    if frame["host"].nunique(dropna=True) > 1:
        qualify |= host.notna()
    # a client/server entry without a filename is named after its host: do not repeat it
    qualified = where.where(device == host, where + ":" + device)
    label = device.where(~qualify, qualified)
    units = frame.assign(port=port)[["host", "port", "device", "sweep"]].drop_duplicates()
    if units.duplicated(["host", "port", "device"]).any():
        # the same device in several sweeps (e.g. before/after a firmware update)
        sweep_name = frame["sweep"].map(lambda p: Path(p).name if isinstance(p, str) else "")
        label = label + " @" + sweep_name.astype("string")
    if "member" in frame.columns:
        # a group's member: named with its group ("loop0 in loop0+loop1")
        in_group = frame["member"].notna()
        group_label = label.where(frame["member"].isna()).groupby(
            [frame["sweep"], frame["group"]], dropna=False).transform("first")  # fmt: skip
        label = label.where(~in_group, label + " in " + group_label.fillna(frame["group"]))
    frame["label"] = label
    return frame


_PER_RUN_KEYS = ["sweep", "host", "device", "label", "job", "repeat"]
_WORKLOAD_KEYS = ["rw", "bs_bytes", "iodepth", "numjobs", "rwmixread", "fsync", "fdatasync",
                  "workload_hash"]  # fmt: skip
# What else describes how a result was made; kept in the summary so that a differing workload
# hash can be explained ("runtime 10 s vs 3 s") without the manifests at hand.
_RUN_FACTS = ["runtime_s", "ramp_s", "span", "ioengine", "extra_options", "fio_version",
              "lat_source", "drive_state", "state", "thinktime_us", "io_size_bytes",
              "group", "member"]  # fmt: skip
# Columns that tell how two results of one job were made, named as a reader knows them
_DESCRIBED = [
    ("rw", "rw"), ("bs_bytes", "bs"), ("iodepth", "iodepth"), ("numjobs", "numjobs"),
    ("rwmixread", "rwmixread"), ("fsync", "fsync"), ("fdatasync", "fdatasync"),
    ("runtime_s", "runtime"), ("ramp_s", "ramp_time"), ("span", "size/span"),
    ("ioengine", "ioengine"), ("extra_options", "extra options"), ("fio_version", "fio version"),
    ("lat_source", "latency measured as"),
]  # fmt: skip


def _per_run(frame: pd.DataFrame) -> pd.DataFrame:
    """Read, write and trim of one run combined: IOPS and bandwidth add up, the mean latency
    is weighted by each direction's I/O count, the p99 is the worst direction's. A figure
    unknown in one direction is unknown for the run (a sum without it would pass for the
    whole); a direction that did no I/O adds 0 and has no latency to weigh."""
    data = frame[frame["direction"] != "sync"].copy()
    idle = data["total_ios"] == 0
    data["lat_weighted"] = (data["lat_mean_us"] * data["total_ios"]).where(~idle, 0.0)
    for column in ("lat_p99_us", "lat_max_us"):
        # an idle direction has no latency; a busy one without it leaves the run's unknown
        data[f"{column}_unknown"] = data[column].isna() & ~idle
    keys = [k for k in _PER_RUN_KEYS if k in data.columns]
    # frames written by an older version (e.g. read back from CSV) lack the newer columns
    facts = [k for k in _WORKLOAD_KEYS + _RUN_FACTS if k in data.columns]
    firsts = ["status", "error", *facts, "cpu_bound_reason",
              *[k for k in (*_CLIFF_COLUMNS, "burst_iops") if k in data.columns]]  # fmt: skip
    # the group's number of each row: every aggregate below is a vectorised one over it
    codes = data.groupby(keys, sort=False, dropna=False).ngroup()
    by = data.groupby(codes.to_numpy(), sort=True)
    runs = data.loc[~codes.duplicated().to_numpy(), keys].reset_index(drop=True)
    for column, values in by[firsts].first().items():
        runs[column] = values.to_numpy()
    summed = ["iops", "bw_bytes", "total_ios", "lat_weighted"]
    gaps = data[summed].isna().groupby(codes.to_numpy(), sort=True).any()
    sums = by[summed].sum(min_count=1).where(~gaps)
    for column, values in sums.items():
        runs[column] = values.to_numpy()
    worst = ["lat_p99_us", "lat_max_us"]
    unknown = by[[f"{c}_unknown" for c in worst]].any().to_numpy()
    for index, (column, values) in enumerate(by[worst].max().items()):
        runs[column] = values.where(~unknown[:, index]).to_numpy()
    # CPU-bound when a direction was; NA when no direction could tell
    bound = known_true(data["cpu_bound"]).groupby(codes.to_numpy()).any()
    told = data["cpu_bound"].notna().groupby(codes.to_numpy()).any()
    runs["cpu_bound"] = pd.Series(bound.to_numpy(), dtype="object").where(told.to_numpy(), pd.NA)
    if "verdict" in data.columns:  # the first verdict in VERDICTS order among its directions
        pairs: dict[int, list[Verdict]] = {}
        for code, verdict, reason in zip(codes.to_numpy(), data["verdict"],
                                         data["verdict_reason"], strict=True):  # fmt: skip
            if isinstance(verdict, str):
                pairs.setdefault(int(code), []).append(Verdict(verdict, reason))
        runs["verdict_pair"] = [judge_repeats(pairs[c], None, 1) if c in pairs else None
                                for c in range(len(runs))]  # fmt: skip
    # no I/O at all: no latency (0 / 0 is unknown, not a number)
    runs["lat_mean_us"] = runs["lat_weighted"] / runs["total_ios"].where(runs["total_ios"] != 0)
    for column in _WORKLOAD_KEYS + _RUN_FACTS:
        if column not in runs.columns:
            runs[column] = pd.NA
    return runs.drop(columns=["lat_weighted"])


def _missing(value: object) -> bool:
    # "" is what a status that could not be read carries as its hash
    return value is None or bool(pd.isna(value)) or value == ""


def _shown(column: str, value: object) -> str:
    if _missing(value):
        return "none" if column in ("extra_options", "fsync", "fdatasync") else "unknown"
    if column in ("runtime_s", "ramp_s"):
        return f"{int(value)} s"  # type: ignore[call-overload]
    if column == "bs_bytes":
        return format_bytes(int(value))  # type: ignore[call-overload]
    if column == "lat_source":
        return "total (lat)" if value == "lat" else "completion only (clat)"
    return str(value)


def _difference_note(row: dict[str, Any], reference: dict[str, Any], baseline: str) -> str:
    """Why a result is not comparable to the baseline's, with what the summary can tell."""
    differences = [
        f"{name} {_shown(column, row.get(column))} vs {_shown(column, reference.get(column))}"
        for column, name in _DESCRIBED
        if _missing(row.get(column)) != _missing(reference.get(column))
        or (not _missing(row.get(column)) and row.get(column) != reference.get(column))
    ]
    text = (
        f"{row['job']} on {row['label']}: the jobfiles differ from {baseline}'s (workload hash "
        f"{row['workload_hash']} vs {reference['workload_hash']})"
    )
    if differences:
        text += ": " + ", ".join(differences)
    else:
        text += (
            "; the results do not record which option differs: compare the jobfile.fio files "
            "of the two runs"
        )
    return text + ". Not the same workload, so no ratio is given."


def _comparability(summary: pd.DataFrame, baseline: str) -> tuple[pd.Series, pd.Series]:
    """Per summary row: whether its workload hash equals the baseline's for the same job
    (NA when either is unknown), and a note explaining a difference."""
    wanted = ["job", "label", "workload_hash"] + [c for c, _ in _DESCRIBED if c in summary]
    records = summary[list(dict.fromkeys(wanted))].to_dict("records")
    reference: dict[object, dict[str, object]] = {}
    for record in records:
        if record["label"] == baseline:
            reference.setdefault(record["job"], record)
    flags: list[object] = []
    notes: list[str | None] = []
    for row in records:
        if row["label"] == baseline:
            flags.append(True)
            notes.append(None)
            continue
        ref = reference.get(row["job"])
        if ref is None:
            flags.append(pd.NA)
            notes.append(None)
            continue
        ours, theirs = row.get("workload_hash"), ref.get("workload_hash")
        if _missing(ours) or _missing(theirs):
            # raw fio files carry no hash: nothing to judge
            flags.append(pd.NA)
            notes.append(None)
        elif ours == theirs:
            flags.append(True)
            notes.append(None)
        else:
            flags.append(False)
            notes.append(_difference_note(row, ref, baseline))
    return (
        pd.Series(flags, index=summary.index, dtype="boolean"),
        pd.Series(notes, index=summary.index, dtype="object"),
    )


def _baseline(labels: list[str], baseline: str | None) -> str:
    if not labels:
        raise SsdcompareError("no results to compare")
    return labels[0] if baseline is None else label_named(labels, baseline)


def label_named(labels: list[str], name: str) -> str:
    """The label `name` means: itself, or the one label it is short for: a device named
    without the sweep (`zram1` for `zram1 @20261126-quick`) or without its host. An error
    when it names none, or several (the same device in two sweeps: give the whole label)."""
    if name in labels:
        return name
    short = [label for label in labels if name in _short_names(label)]
    if len(short) == 1:
        return short[0]
    if short:
        raise SsdcompareError(
            f"baseline {name!r} could be {' or '.join(map(repr, short))}: give one of them "
            "whole (the same device in several results folders)"
        )
    raise SsdcompareError(f"baseline {name!r} is not among the devices: {', '.join(labels)}")


def _short_names(label: str) -> set[str]:
    """What a label may be called for short: without " @<sweep>", without "<host>:"."""
    device = label.split(" @", 1)[0]
    return {device, device.split(":")[-1]}


_CLIFF_COLUMNS = ("cliff_s", "cliff_before_iops", "cliff_after_iops")


def _cliffs(runs: list[tuple[float, float, float]]) -> dict[str, object]:
    """A job's write cliffs over its repeats (second, IOPS before, IOPS after of each run's,
    NaN without one): how many runs had one, the earliest second, and the median levels
    before and after."""
    cliffs = [c for c in runs if not math.isnan(c[0])]
    if not cliffs:
        return {"cliff_runs": 0, **dict.fromkeys(_CLIFF_COLUMNS, float("nan"))}
    return {
        "cliff_runs": len(cliffs),
        "cliff_s": min(c[0] for c in cliffs),
        "cliff_before_iops": aggregate_values([c[1] for c in cliffs], "median"),
        "cliff_after_iops": aggregate_values([c[2] for c in cliffs], "median"),
    }


_SUMMED = ("iops", "bw_bytes", "lat_mean_us", "lat_p99_us", "lat_max_us")


def _known_values(values: list[float]) -> list[float]:
    return [v for v in values if not math.isnan(v)]


def _mean(values: list[float]) -> float:
    """The mean of the known values (NaN left out, as pandas does); NaN without any."""
    known = _known_values(values)
    return sum(known) / len(known) if known else math.nan


def _spread(metric: str, values: list[float]) -> dict[str, float]:
    """Mean, sample standard deviation, min, max and coefficient of variation (%) of one
    metric's repeats; NaN values are left out, and NaN stands for what cannot be told."""
    known = _known_values(values)
    mean = _mean(known)
    std = math.nan
    if len(known) > 1:
        std = math.sqrt(sum((v - mean) ** 2 for v in known) / (len(known) - 1))
    return {
        f"{metric}_mean": mean,
        f"{metric}_std": std,
        f"{metric}_min": min(known) if known else math.nan,
        f"{metric}_max": max(known) if known else math.nan,
        f"{metric}_cv_pct": std / mean * 100 if mean else math.nan,
    }


def frame_given(value: object, what: str, made_by: str) -> pd.DataFrame:
    """`value` when it is a pandas frame; else SsdcompareError saying which frame `what`
    takes (`made_by` names the call that makes one)."""
    if not isinstance(value, pd.DataFrame):
        raise SsdcompareError(f"{what}: {type(value).__name__} {value!r:.60} is not a frame; "
                              f"give the frame {made_by} made")  # fmt: skip
    return value


def job_summary(
    frame: pd.DataFrame, baseline: str | None = None, aggregate: str = "mean"
) -> pd.DataFrame:
    """One row per (device, job): repeats aggregated to mean, stddev, min, max and coefficient
    of variation (cv_pct = stddev / mean x 100; 10 % or more means the runs disagree).

    Failed or interrupted repeats are left out of the figures and counted in `failed_runs`;
    a job with no successful repeat keeps its status and NaN figures, never zeros.

    `comparable` says whether the row ran the same workload (equal `workload_hash`) as the
    baseline label (`baseline`, else the first label) for that job: False when the jobfiles
    differ, with the reason in `comparable_note`; NA when either side has no hash (raw fio
    files) or the baseline did not run the job.

    `<metric>_value` is the figure tables show: the mean, median or best of the repeats, as
    `aggregate` says (named in the `aggregate` column). Against the baseline, with 3 or more
    repeats on both sides (ssdcompare.judge.stats): `ratio` of IOPS with `ratio_ci_low` /
    `ratio_ci_high` (95 %), `p_value` (Welch's t-test on the logarithms) and `significant`;
    the same for p99 latency as `p99_ratio`, `p99_ratio_ci_low`, `p99_ratio_ci_high`,
    `p99_p_value`, `p99_significant`. NA with fewer repeats or jobfiles that differ.
    """
    frame = frame_given(frame, "job_summary", "ssdcompare.load (or read_fio)")
    if aggregate not in AGGREGATES:
        raise SsdcompareError(f"--aggregate {aggregate}: use one of {', '.join(AGGREGATES)}")
    frame = _label_devices(frame) if "label" not in frame.columns else frame
    runs = _per_run(frame)
    rows = []
    repeats: dict[tuple[object, object], dict[str, list[float]]] = {}
    keys = ["sweep", "host", "device", "label", "job"]
    codes = runs.groupby(keys, sort=False, dropna=False).ngroup().to_numpy()
    members: dict[int, list[int]] = {}
    for position, code in enumerate(codes):
        members.setdefault(int(code), []).append(position)
    # plain lists: one group's figures are a handful of numbers, not worth a frame each
    firsts = runs[keys + _WORKLOAD_KEYS + _RUN_FACTS].to_dict("records")
    status = runs["status"].tolist()
    error = runs["error"].tolist()
    metrics = {m: runs[m].astype("float64").tolist() for m in _SUMMED}
    extra = {c: runs[c].astype("float64").tolist() if c in runs.columns else [math.nan] * len(runs)
             for c in (*_CLIFF_COLUMNS, "burst_iops")}  # fmt: skip
    bound = runs["cpu_bound"].tolist()
    bound_reason = runs["cpu_bound_reason"].tolist()
    pairs = runs["verdict_pair"].tolist() if "verdict_pair" in runs.columns else [None] * len(runs)
    for code in range(len(members)):
        group = members[code]
        ok = [i for i in group if status[i] == "ok"]
        row: dict[str, object] = dict(firsts[group[0]])
        row["repeats"] = len(ok)
        row["failed_runs"] = len(group) - len(ok)
        row["status"] = "ok" if ok else str(status[group[-1]])
        row["error"] = None if ok else error[group[-1]]
        for metric in _SUMMED:
            found = [metrics[metric][i] for i in ok]
            row.update(_spread(metric, found))
            lower_better = metric.startswith("lat_")
            row[f"{metric}_value"] = aggregate_values(found, aggregate, not lower_better)
        row["aggregate"] = aggregate
        repeats[(row["label"], row["job"])] = {m: [metrics[m][i] for i in ok] for m in _COMPARED}
        for metric, values in repeats[(row["label"], row["job"])].items():
            row[f"{metric}_per_repeat"] = tuple(values)  # for comparisons made later
        told = [bool(bound[i]) for i in ok if not _missing(bound[i])]
        row["cpu_bound"] = any(told) if told else pd.NA
        reasons = [bound_reason[i] for i in ok if is_true(bound[i])]
        row["cpu_bound_reason"] = reasons[0] if reasons else None
        row.update(_cliffs([(extra["cliff_s"][i], extra["cliff_before_iops"][i],
                             extra["cliff_after_iops"][i]) for i in ok]))  # fmt: skip
        row["burst_iops_mean"] = _mean([extra["burst_iops"][i] for i in ok])
        judged = [pairs[i] for i in ok if pairs[i] is not None]
        verdict = judge_repeats(judged, row["iops_cv_pct"], len(ok)) if ok else None
        row["verdict"] = verdict.verdict if verdict else None
        row["verdict_reason"] = verdict.reason if verdict else None
        rows.append(row)
    summary = pd.DataFrame(rows)
    if not summary.empty:
        summary["cpu_bound"] = summary["cpu_bound"].astype("boolean")
        for column in [c for c in INT_COLUMNS if c in summary.columns]:
            summary[column] = _whole_numbers(summary[column])
        chosen = _baseline(list(dict.fromkeys(summary["label"])), baseline)
        summary["comparable"], summary["comparable_note"] = _comparability(summary, chosen)
        _compare_repeats(summary, repeats, chosen)
        summary["compared_to"] = chosen
        summary["knee_qd"] = _knees(summary)
    return summary


# what makes results one workload but for its queue depth (the report's curves use it too)
SERIES_SETTINGS = ["rw", "bs_bytes", "numjobs", "rwmixread", "fsync", "fdatasync",
                   "extra_options", "state", "thinktime_us", "io_size_bytes"]  # fmt: skip
# a queue-depth series: the same workload on the same device at rising iodepth
_SERIES_KEYS = ["sweep", "host", "device", "label", *SERIES_SETTINGS]


def _knees(summary: pd.DataFrame) -> pd.Series:
    """The saturation knee of each row's queue-depth series (ssdcompare.judge.stats.find_knee)."""
    knees = pd.Series(pd.NA, index=summary.index, dtype="Int64")
    ok = summary[summary["status"] == "ok"]
    keys = [k for k in _SERIES_KEYS if k in ok.columns]
    if ok.empty:
        return knees
    depths = ok["iodepth"].astype("float64").tolist()
    iops = ok["iops_value"].astype("float64").tolist()
    lat = ok["lat_mean_us_value"].astype("float64").tolist()
    series: dict[int, list[int]] = {}
    for position, code in enumerate(ok.groupby(keys, sort=False, dropna=False).ngroup()):
        series.setdefault(int(code), []).append(position)
    index = ok.index
    for positions in series.values():
        if len({depths[i] for i in positions if not math.isnan(depths[i])}) < 3:
            continue
        knee = find_knee([depths[i] for i in positions], [iops[i] for i in positions],
                         [lat[i] for i in positions])  # fmt: skip
        if knee is not None:
            knees[index[positions]] = knee
    return knees


_COMPARED = {"iops": "", "lat_p99_us": "p99_"}  # metric -> prefix of its comparison columns


def _compare_repeats(
    summary: pd.DataFrame,
    repeats: dict[tuple[object, object], dict[str, list[float]]],
    baseline: str,
) -> None:
    """Each row's repeats against the baseline's for the same job (ssdcompare.judge.stats)."""
    for metric, prefix in _COMPARED.items():
        found: dict[str, list[object]] = {name: [] for name in
                                         ("ratio", "ratio_ci_low", "ratio_ci_high", "p_value",
                                          "significant")}  # fmt: skip
        for label, job, comparable in zip(summary["label"], summary["job"],
                                          summary["comparable"], strict=True):  # fmt: skip
            mine, theirs = repeats.get((label, job)), repeats.get((baseline, job))
            result = None
            if (
                label != baseline
                and theirs is not None
                and mine is not None
                and not is_false(comparable)
            ):
                result = compare(mine[metric], theirs[metric])
            values = ((result.ratio, result.ci_low, result.ci_high, result.p_value,
                       result.significant) if result is not None
                      else (float("nan"),) * 4 + (pd.NA,))  # fmt: skip
            for name, value in zip(found, values, strict=True):
                found[name].append(value)
        for name, column in found.items():
            summary[prefix + name] = pd.Series(
                column,
                index=summary.index,
                dtype="boolean" if name == "significant" else "float64",
            )


def side_by_side(
    summary: pd.DataFrame, metric: str = "iops", baseline: str | None = None
) -> pd.DataFrame:
    """Devices side by side for one metric, with each device's ratio to the baseline device.

    Columns: `<label>` (the summary's aggregate of the repeats, the mean unless job_summary
    was asked for another) and `<label> verdict` (what limited the result: drive, cpu,
    host, disturbed, unknown; a ratio of results that are not `drive` on both sides compares
    the CPU or the host, not the drives); for each device but the baseline,
    `<label>/<baseline>` (ratio of the figures), `<label> significant` (Welch's t-test with 3
    or more repeats on both sides, see ssdcompare.judge.stats: for IOPS and p99 latency; NA
    otherwise, and for other metrics) and `<label> comparable` (False when that label ran the
    job with a different jobfile than the baseline: different workload hash). A job that is
    not comparable gets no ratio and no significance, and a `note` column (present only
    then) says which jobfiles differ and how. `baseline` defaults to the device the summary
    was made against (job_summary's baseline), else the first device; against another, the
    significance is tested anew from the summary's repeats.
    """
    summary = frame_given(summary, "side_by_side", "ssdcompare.job_summary")
    column = f"{metric}_value" if f"{metric}_value" in summary.columns else f"{metric}_mean"
    labels = list(dict.fromkeys(summary["label"]))
    if baseline is None and "compared_to" in summary.columns:
        made_against = summary["compared_to"].dropna()
        baseline = str(made_against.iloc[0]) if len(made_against) else None
    baseline = _baseline(labels, baseline)
    jobs = list(dict.fromkeys(summary["job"]))

    def pivot(values: str) -> pd.DataFrame:
        found = summary.pivot_table(index="job", columns="label", values=values,
                                    aggfunc="first", dropna=False)  # fmt: skip
        return found.reindex(index=jobs, columns=labels)

    table = pivot(column)
    verdicts = pivot("verdict") if "verdict" in summary.columns else None
    significance = _significance(summary, metric, baseline)
    flags, notes = _comparability(summary, baseline)
    flag_of: dict[tuple[object, object], object] = {}
    notes_of: dict[object, list[str]] = {}
    for (job, label), flag, note in zip(
        summary[["job", "label"]].itertuples(index=False), flags, notes, strict=True
    ):
        flag_of.setdefault((job, label), flag)
        if note:
            notes_of.setdefault(job, []).append(note)
    out = pd.DataFrame(index=jobs)
    out.index.name = "job"
    for label in labels:
        out[label] = table[label]
        if verdicts is not None:
            out[f"{label} verdict"] = verdicts[label].astype(object).where(
                verdicts[label].notna(), None)  # fmt: skip
    for label in labels:
        if label == baseline:
            continue
        comparable = pd.Series([flag_of.get((job, label), pd.NA) for job in jobs], index=jobs,
                               dtype="boolean")  # fmt: skip
        same = comparable.fillna(True).astype(bool)
        out[f"{label}/{baseline}"] = (table[label] / table[baseline]).where(same)
        out[f"{label} significant"] = pd.Series(
            [significance.get((job, label), pd.NA) for job in jobs], index=jobs, dtype="boolean"
        ).where(same)
        out[f"{label} comparable"] = comparable
    if notes_of:
        out["note"] = [" ".join(notes_of.get(job, [])) or None for job in jobs]
    return out


def _significance(
    summary: pd.DataFrame, metric: str, baseline: str
) -> dict[tuple[object, object], object]:
    """(job, label) -> whether `metric` differs significantly from `baseline`'s: the
    summary's own test when it was made against `baseline`, else tested anew from its
    repeats (`<metric>_per_repeat`). Nothing for metrics that are not tested."""
    if metric not in _COMPARED:
        return {}
    tested = f"{_COMPARED[metric]}significant"
    same = "compared_to" not in summary.columns or (summary["compared_to"] == baseline).all()
    if same and tested in summary.columns:
        keys = zip(summary["job"], summary["label"], strict=True)
        return dict(zip(keys, summary[tested], strict=True))
    per_repeat = f"{metric}_per_repeat"
    if per_repeat not in summary.columns:
        return {}
    keys = zip(summary["job"], summary["label"], strict=True)
    values = {key: list(runs or ()) for key, runs in zip(keys, summary[per_repeat], strict=True)}
    found: dict[tuple[object, object], object] = {}
    for (job, label), mine in values.items():
        theirs = values.get((job, baseline))
        result = compare(mine, theirs) if label != baseline and theirs is not None else None
        found[(job, label)] = result.significant if result is not None else pd.NA
    return found


def damaged_runs(frame: pd.DataFrame) -> list[str]:
    """Each run whose stored files cannot be used (status `damaged`), in words: "loop0
    randread-4k-qd1 r1: runs/loop0/randread-4k-qd1/r1/fio.json is a symbolic link; ..."."""
    rows = frame[frame["status"] == "damaged"].drop_duplicates(["sweep", "device", "job",
                                                                "repeat"])  # fmt: skip
    label = rows["label"] if "label" in rows.columns else rows["device"]
    return [f"{name} {job} r{repeat}: {error}" for name, job, repeat, error
            in zip(label, rows["job"], rows["repeat"], rows["error"], strict=True)]  # fmt: skip


def export(paths: Iterable[str | Path], output: str | Path, summary: bool = False) -> int:
    """Write the frame (or the per-job summary) of results folders to CSV or Parquet.

    Parquet needs pyarrow (`pip install 'ssdcompare[parquet]'`). Returns the number of rows
    written.
    """
    folders = given_paths(paths)
    return export_frame(load(folders), output, summary, folders)


def export_frame(
    frame: pd.DataFrame,
    output: str | Path,
    summary: bool = False,
    folders: Iterable[str | Path] = (),
) -> int:
    """`export` of a frame already loaded (from the results `folders`: the export is never
    written among their runs, nor over anything but an export of ssdcompare's)."""
    check_export_path(Path(output), [Path(f) for f in folders])
    if summary:
        frame = job_summary(frame)
    target = Path(output)
    suffix = target.suffix.lower()
    if suffix == ".csv":
        text = _formula_safe(frame).to_csv(index=False)
        write_atomic(target, text)
    elif suffix == ".parquet":
        try:
            # pyarrow named, not pandas' "auto": the extra installs it, and the file's types
            # (Int64, boolean, string) do not depend on which engine happens to be present
            data = frame.to_parquet(index=False, engine="pyarrow")
        except ImportError:
            raise SsdcompareError(
                "Parquet export needs pyarrow, which is not installed: "
                "pip install 'ssdcompare[parquet]' (or export to .csv)"
            ) from None
        write_atomic(target, data)
    else:
        raise SsdcompareError(f"cannot export to {target.name}: use a .csv or .parquet name")
    return len(frame)


# what makes a spreadsheet read a cell as a formula (OWASP: CSV injection)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _formula_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with every text cell that a spreadsheet would take for a formula (a
    hostname of "=cmd|..." in someone else's manifest) prefixed with a single quote, as
    OWASP advises; numeric columns are left as they are (a negative number stays one)."""
    safe = frame.copy()
    for column in safe.columns:
        if pd.api.types.is_numeric_dtype(safe[column]) or pd.api.types.is_bool_dtype(safe[column]):
            continue
        values = safe[column].tolist()
        if any(isinstance(v, str) and v.startswith(_FORMULA_START) for v in values):
            safe[column] = pd.array(
                ["'" + v if isinstance(v, str) and v.startswith(_FORMULA_START) else v
                 for v in values], dtype=safe[column].dtype,
            )  # fmt: skip
    return safe
