"""One stored run of a sweep as rows of the results frame: one per direction (and, for a
group, per member and direction), with every column the run's files can tell (fio's search
for a latency target: per run, the same on each of its rows).

A row's figures come from the run's fio output (fio.json) and CPU samples (cpu.json), read
through the results folder and checked before they become figures: an output or a trace
that is missing, refused, damaged or impossible turns an ok run into a failed or damaged one
with NaN figures, its error naming the file. ssdcompare.analysis.frame puts the rows of every
run of a folder together into the frame.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence

from ssdcompare.analysis.latencytarget import SEARCH_COLUMNS, search_values
from ssdcompare.analysis.pacing import pacing_columns
from ssdcompare.analysis.perburst import run_summary
from ssdcompare.analysis.persecond import cliff_cause, run_cliff
from ssdcompare.fio.check import JobfileError, read_jobfile
from ssdcompare.fio.jobfile import member_section, rendered_size, span_words
from ssdcompare.fio.result.merge import merge_jobs
from ssdcompare.fio.result.models import DIRECTIONS, FioOutput, FioOutputError, JobResult
from ssdcompare.fio.result.plausibility import job_problem, trace_problem
from ssdcompare.judge.cpu import ChosenCpus, CpuStats, Thresholds, judge
from ssdcompare.judge.iocount import Counts, Run, check_io
from ssdcompare.judge.verdict import Throttling, throttled_reason
from ssdcompare.results.files import StoredFileError
from ssdcompare.results.models import RoundsRecord, RunStatus
from ssdcompare.results.store import ResultsDir
from ssdcompare.suite.pts import RoundGroup
from ssdcompare.suite.realism import given, realism_columns
from ssdcompare.suite.workload import Workload
from ssdcompare.target.devices import Target
from ssdcompare.target.hosts import Host
from ssdcompare.target.probes import columns_of
from ssdcompare.target.probes.health import PROBE as HEALTH_PROBE
from ssdcompare.target.topology import parse_cpulist
from ssdcompare.units import parse_size

# Columns taken as they are from the CpuStats of a run's samples (cpu_count comes from the
# manifest's host instead).
_CPU_STATS_COLUMNS = (
    "cpu_busy_pct", "cpu_max_busy_pct", "irq_softirq_max_pct", "fio_worker_max_pct",
    "fio_worker_max_runnable_pct", "fio_workers_total_cores", "steal_pct", "iowait_pct",
    "others_pct", "others_top",
)  # fmt: skip


# the CPU samples of a run's first half second (fio starting) are left out of its judgement
START_UP_S = 0.5


def direction_values(job: JobResult, direction: str) -> dict[str, object]:
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
            lat_p9999_us=lat.percentile_us(99.99),
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


def verify_columns(
    status: RunStatus, workload: Workload | None, job: JobResult | None, base: dict[str, object]
) -> dict[str, object]:
    """What fio's checks of the data found in a run: whether data came back wrong and where
    (`status.verify_failure`), or, for a finished run of a job with verify (`base` holds its
    status and checksum), that every block passed and how many bytes fio checked."""
    failure = status.verify_failure
    if failure is not None and failure.no_verified_data:
        return {}  # a read that found nothing verified to check: neither passed nor failed
    if failure is not None:
        return {"verify_failed": True, "verify_offset_bytes": failure.offset_bytes}
    if base.get("verify") is None or base["status"] != "ok" or job is None:
        return {}
    checked = None
    if workload is not None and workload.directions in (("read",), ("write",)):
        # a job that only writes reads back for its checks alone; one that only reads checks
        # every read: fio's read section counts exactly the bytes checked
        read = job.directions.get("read")
        if read is not None:
            checked = read.io_bytes
        elif "read" in job.empty_directions:
            checked = 0  # fio checked nothing (a time-based run shorter than its backlog)
    return {"verify_failed": False, "verified_bytes": checked}


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
        **realism_columns(workload),
    }


def _state_columns(
    results: ResultsDir, status: RunStatus, workload: Workload | None
) -> dict[str, object]:
    """What state the drive was put in before the run (see ssdcompare.run.precondition), and
    for a PTS test, where the run stands in its group's rounds."""
    pts = results.manifest.suite.pts
    before = _precondition_words(results, status, workload)
    if pts is None:
        return before
    rounds = _rounds_columns(results, status)
    if "drive_state" in rounds and before["drive_state"] != "as found":
        rounds["drive_state"] = f"{before['drive_state']}, {rounds['drive_state']}"
    return {**before, **rounds}


def _rounds_columns(results: ResultsDir, status: RunStatus) -> dict[str, object]:
    """A PTS test's run: its test and group, whether its group was steady and after how many
    rounds, whether its round is in the window, the scale. An ok run of a group whose
    rounds.json is missing, refused, damaged or disagrees with itself (results.models
    .rounds_problem) is damaged: which rounds its figures belong to is not known."""
    suite = results.manifest.suite
    assert suite.pts is not None
    group = suite.pts.group_of(status.job)
    purge = results.purge_record(status.target)
    values: dict[str, object] = {
        "pts_test": suite.pts.test, "scale": suite.scale,
        "purge": None if purge is None else purge.how if purge.purged else "not purged",
    }  # fmt: skip
    if group is None:
        return values
    values["pts_group"] = group.name
    if not group.rounds:
        return values
    record, problem = checked_rounds_record(results, status.target, group)
    if record is not None and status.repeat > len(record.rounds) and status.status == "ok":
        problem = _damaged(results, status.target, group, f"it holds {len(record.rounds)} "
                           f"rounds, and round {status.repeat} ran")  # fmt: skip
    elif record is None and problem is None:
        problem = f"no record of the rounds of group {group.name} (rounds.json)"
    if problem is not None:  # which rounds make the window is not known: no figure is
        if status.status == "ok":
            values.update(status="damaged", error=f"{problem}; rerun with --resume")
        return values
    assert record is not None
    # a group that ended before a round gave its figure has no window: its rounds stand
    window = status.repeat in record.window if record.window else None
    values.update(steady_state=record.attained, ss_rounds=len(record.rounds),
                  ss_window=window)  # fmt: skip
    values["drive_state"] = "steady" if record.attained else "not steady"
    return values


# a results folder opened for reading -> its groups' records as checked: each record is
# checked once per reading, however many runs its group has
_CHECKED: weakref.WeakKeyDictionary[
    ResultsDir, dict[tuple[str, str], tuple[RoundsRecord | None, str | None]]
] = weakref.WeakKeyDictionary()


def checked_rounds_record(
    results: ResultsDir, target: str, group: RoundGroup
) -> tuple[RoundsRecord | None, str | None]:
    """A PTS group's record as a reader takes it: (the record, None); (None, None) when
    there is none; (None, why) when it is refused, damaged, at odds with itself or with the
    rounds fio ran (ResultsDir.rounds_record_problem)."""
    known = _CHECKED.setdefault(results, {})
    if (target, group.name) not in known:
        record, problem = results.read_rounds_record(target, group.name)
        if record is not None:
            problem = results.rounds_record_problem(target, group, record)
            if problem is not None:
                record, problem = None, _damaged(results, target, group, problem)
        known[(target, group.name)] = (record, problem)
    return known[(target, group.name)]


def _damaged(results: ResultsDir, target: str, group: RoundGroup, problem: str) -> str:
    where = results.files.name(results.rounds_dir(target, group.name))
    return f"{where}/rounds.json is damaged: {problem}"


def _precondition_words(
    results: ResultsDir, status: RunStatus, workload: Workload | None
) -> dict[str, object]:
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
    capped = facts.jobs[0].get("io_size") if facts.jobs else None
    whole = capacity if isinstance(capacity, int) else None
    if size is None:
        used = whole
    elif size.endswith("%"):
        used = int(whole * float(size[:-1]) / 100) if whole else None
    else:
        used = parse_size(size)
    found: dict[str, object] = {"span": span_words(workload, size), "span_bytes": used}
    if workload.io_size_spans is not None and capped is not None:
        found["io_size_bytes"] = parse_size(capped)  # spans made bytes as fio was given them
    return found


def run_rows(
    results: ResultsDir,
    status: RunStatus,
    workload: Workload | None,
    device: dict[str, object],
    thresholds: Thresholds,
    members: Sequence[Target] = (),
    member_info: dict[str, dict[str, object]] | None = None,
    hosts: Sequence[Host] = (),
) -> list[dict[str, object]]:
    """The frame's rows of one run (`status`) of the sweep in `results`: one per direction,
    then, for a group run (`members`), one per member and direction. `workload` is None for a
    run the plan does not have; `device` holds the manifest's facts of the target and
    `member_info` those of every target by name; with `hosts`, only their servers' entries
    of fio's output are the run's."""
    base = _run_columns(results, status, workload, device, members)
    parts: dict[str, JobResult] = {}
    job = _fio_job(results, status, base, parts if members else None, hosts)
    cpu_stats = _cpu_stats(results, status, workload, base)
    if base["status"] != "ok":  # cpu.json made the run a failed one
        job = None
        parts.clear()
    if cpu_stats is not None:
        base.update({name: getattr(cpu_stats, name) for name in _CPU_STATS_COLUMNS})
    base.update(columns_of(results.probes(status)))
    directions = list(workload.directions) if workload is not None else ["read"]
    if job is not None and "mixed" in job.directions:
        # unified_rw_reporting: fio adds reads and writes up in one "mixed" section
        directions = [d for d in DIRECTIONS if d in job.directions]
    if job is not None:
        log_read = base.get("health_drives") is not None
        base.update(_measured_columns(results, status, workload, job, cpu_stats, thresholds,
                                      _thermal(base), log_read))  # fmt: skip
        base.update(_io_check_columns(job, base, workload, members))
        base.update(search_values(job))
    base.update(pacing_columns(workload, job))
    base.update(verify_columns(status, workload, job, base))
    rows = []
    for direction in directions:
        row = dict(base, direction=direction)
        if job is not None:
            row.update(direction_values(job, direction))
        rows.append(row)
    if members:
        rows += _member_rows(base, directions, members, parts, status, member_info or {})
    return rows


def _run_columns(
    results: ResultsDir,
    status: RunStatus,
    workload: Workload | None,
    device: dict[str, object],
    members: Sequence[Target],
) -> dict[str, object]:
    """What every row of a run shares before its outputs are read: the run, the sweep, the
    workload, the device, the span that ran and the drive's state."""
    manifest = results.manifest
    return {
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


# Throttling's fields (ssdcompare.judge.verdict) and the frame columns they are read from
_THROTTLING_COLUMNS = {
    "t1_events": "throttle_t1_events", "t1_s": "throttle_t1_s",
    "t2_events": "throttle_t2_events", "t2_s": "throttle_t2_s",
    "warning_min": "warning_temp_min", "critical_min": "critical_temp_min",
    "temp_after_c": "temp_after_c",
}  # fmt: skip


def throttling_of(value: Callable[[str], object]) -> Throttling:
    """What the drive's health log counted over a run, from its columns (`value` gives a
    column's value; NaN and anything but a number are unknown)."""
    found = {}
    for field, column in _THROTTLING_COLUMNS.items():
        number = value(column)
        known = isinstance(number, int | float) and not isinstance(number, bool)
        found[field] = float(number) if known and number == number else None  # type: ignore[arg-type]
    return Throttling(**found)


def _thermal(base: dict[str, object]) -> bool | None:
    """Whether the drive's health log counted throttling (or time above its warning or
    critical temperature) during the run, as the `throttled` verdict judges it; None when it
    has no thermal counters."""
    if throttled_reason(throttling_of(base.get)) is not None:
        return True
    return None if base.get("throttle_events") is None else False


def _measured_columns(
    results: ResultsDir,
    status: RunStatus,
    workload: Workload | None,
    job: JobResult,
    cpu_stats: CpuStats | None,
    thresholds: Thresholds,
    thermal: bool | None = None,
    log_read: bool = False,
) -> dict[str, object]:
    """What a run that measured tells besides its figures per direction: fio's own CPU
    figures, whether the CPU bounded it, its write cliff and its likely cause (`thermal`:
    whether the drive throttled, see _thermal; `log_read`: whether its health log was read),
    its share of the host's ceiling and, for a bursty job, its bursts."""
    host = results.manifest.host
    chosen = chosen_cpus(workload, host.numa_nodes)
    verdict = judge(cpu_stats, job.usr_cpu_pct, job.sys_cpu_pct, host.cpu_threads, thresholds,
                    chosen)  # fmt: skip
    values: dict[str, object] = {
        "fio_cpu_usr_pct": job.usr_cpu_pct,
        "fio_cpu_sys_pct": job.sys_cpu_pct,
        "cpu_bound": verdict.cpu_bound,
        "cpu_bound_reason": verdict.reason,
    }
    cliff = run_cliff(results, status)
    if cliff is not None:
        saturated = (cpu_stats is not None and cpu_stats.fio_worker_max_pct is not None
                     and cpu_stats.fio_worker_max_pct >= thresholds.worker_pct)  # fmt: skip
        cause = cliff_cause(thermal, saturated, cliff.written_bytes, log_read)
        values.update(cliff_s=cliff.t_s, cliff_before_iops=cliff.before_iops,
                      cliff_after_iops=cliff.after_iops,
                      cliff_written_bytes=cliff.written_bytes, cliff_cause=cause)  # fmt: skip
    # only reading jobs have a ceiling (results made before that may hold others)
    writes = workload is None or workload.writes
    # a curve's paced points have the ceiling of its unpaced run: the host's limit for the job
    ceiling_job = workload.max_run_id if workload is not None and workload.paced else None
    ceiling = results.ceiling_iops(ceiling_job or status.job) if not writes else None
    if ceiling is not None:
        values.update(ceiling_iops=ceiling, ceiling_pct=job.total_iops / ceiling * 100)
    if workload is not None and workload.bursty:
        burst = run_summary(results, status, (workload.thinktime_us or 0) / 1e6)
        if burst is not None:
            values.update(bursts=burst.bursts, burst_iops=burst.iops,
                          burst_bw_bytes=burst.bw_bytes,
                          burst_duty_pct=burst.duty_pct)  # fmt: skip
    return values


def chosen_cpus(workload: Workload | None, numa_nodes: dict[str, str]) -> ChosenCpus | None:
    """The CPUs the workload gave fio's jobs, for the CPU-bound rule; None when it chose none.
    With `numa_cpu_nodes`, the CPUs of those nodes as the sweep's manifest recorded them
    (`numa_nodes`: node -> its CPUs): fio runs a job on them after applying `cpus_allowed`,
    which they then replace. Lists are read with the kernel's reading, bounded (a
    manifest may come from someone else)."""
    if workload is None:
        return None
    nodes, allowed = given(workload, "numa_cpu_nodes"), given(workload, "cpus_allowed")
    if nodes is not None:
        cpus: set[int] = set()
        for node in sorted(parse_cpulist(nodes)):
            if str(node) not in numa_nodes:
                return ChosenCpus(None, f"numa_cpu_nodes={nodes}")
            cpus |= parse_cpulist(numa_nodes[str(node)])
        return ChosenCpus(frozenset(cpus), f"numa_cpu_nodes={nodes}")
    if allowed is not None:
        return ChosenCpus(frozenset(parse_cpulist(allowed)), "cpus_allowed")
    return None


def _io_check_columns(
    job: JobResult,
    base: dict[str, object],
    workload: Workload | None,
    members: Sequence[Target],
) -> dict[str, object]:
    """fio's count of the run's I/O against the block layer's (ssdcompare.judge.iocount): the
    `io_check` columns, left out when either count is unknown, or when a group has members
    on other hosts (fio counts their I/O, this machine's counters do not)."""
    device = _device_counts(base)
    fio = _fio_counts(job)
    if workload is None or device is None or fio is None:
        return {}
    if any(m.host or m.remote for m in members):  # counted on this machine only
        return {}
    whole = all(m.kind == "block" for m in members) if members else (
        base.get("target_kind") == "block")  # fmt: skip
    engine = base.get("ioengine")
    found = check_io(fio, device, Run(
        direct=workload.direct, whole_device=whole,
        partly_counted=bool(workload.ramp_s) or job.latency_search is not None,
        merged_directions="mixed" in job.directions,
        engine=engine if isinstance(engine, str) else None))  # fmt: skip
    return {"io_check": found.result, "io_check_reason": found.reason}


def _fio_counts(job: JobResult) -> Counts | None:
    """fio's bytes and I/Os, read and written (its "mixed" section as the reads); None when
    a count is unknown. A direction fio did not report moved nothing."""
    merged = "mixed" in job.directions
    figures = []
    for name in ("mixed", None) if merged else ("read", "write"):
        direction = job.directions.get(name) if name is not None else None
        if direction is None:
            figures.append((0.0, 0.0))
        elif direction.io_bytes is None or direction.total_ios is None:
            return None
        else:
            figures.append((float(direction.io_bytes), float(direction.total_ios)))
    (read_bytes, read_ios), (write_bytes, write_ios) = figures
    return Counts(read_bytes, write_bytes, read_ios, write_ios)


def _device_counts(base: dict[str, object]) -> Counts | None:
    """The device's counts among a run's probe columns; None when any is unknown."""
    values = {}
    for kind in ("bytes", "ios", "merges"):
        for direction in ("read", "write"):
            value = base.get(f"disk_{direction}_{kind}")
            if not isinstance(value, int | float) or isinstance(value, bool) or value != value:
                return None
            values[f"{direction}_{kind}"] = float(value)
    return Counts(**values)


# the columns only a group's own rows carry (see _member_rows)
_GROUP_ONLY = (*(c.name for c in HEALTH_PROBE.columns), "io_check", "io_check_reason")


def _member_rows(
    base: dict[str, object],
    directions: list[str],
    members: Sequence[Target],
    parts: dict[str, JobResult],
    status: RunStatus,
    info: dict[str, dict[str, object]],
) -> list[dict[str, object]]:
    """A group run's rows per member, from the member's own section of fio's output (the
    group's rows add them up). What was read of the group's drives as a whole (their health
    logs, the block layer's count against fio's) is the group's rows' alone: on a member's
    it would name the member for what another drive did, and count it once per member."""
    rows = []
    for number, member in enumerate(members, start=1):
        part = parts.get(member_section(status.job, number))
        mine = dict(base, **info.get(member.name, {}), device=member.device, member=number)
        mine.update(dict.fromkeys(_GROUP_ONLY))
        if member.host is not None:  # a group across hosts: each member on its own
            mine.update(host=member.host.name, port=member.host.port, remote=member.remote)
        if part is not None:
            mine.update(fio_cpu_usr_pct=part.usr_cpu_pct, fio_cpu_sys_pct=part.sys_cpu_pct)
        # each member's section searched for a latency target on its own
        mine.update(search_values(part) if part is not None else dict.fromkeys(SEARCH_COLUMNS))
        for direction in directions:
            row = dict(mine, direction=direction)
            if part is not None:
                row.update(direction_values(part, direction))
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
    return trace.stats(skip_s=workload.ramp_s + START_UP_S if workload else START_UP_S)
