"""Values no run can produce: the one check of a fio result and of a run's CPU samples.

A results folder can come from someone else, edited or damaged. fio's parser already reads
what is not a number (or nan/inf) as missing; this is the next line: numbers that are
numbers but cannot be true. A negative rate, count or latency; a rate beyond any device
(IOPS of 1e300); a job reported more often than it ran processes (an entry written twice,
which would double its IOPS when the entries are added up as numjobs clones); CPU shares
below 0 or above 100 %, or NaN, in the samples. A run with such a value is a failed run whose
error names the field, never its value.

The bounds are far from anything real: every recorded output in tests/data and
examples/results passes (a test checks), as do fresh sweeps.
"""

from __future__ import annotations

import math
from collections.abc import Iterator

from ssdcompare.cpu import CpuTrace
from ssdcompare.fioresult import DirectionResult, JobResult, LatencyStats

MAX_IOPS = 1e10  # ten billion I/Os per second: a thousand times the fastest device
MAX_BW_BYTES = 1e14  # 100 TB/s
MAX_BYTES = 1e20  # bytes moved by one run: 100 EB
MAX_LATENCY_US = 1e12  # about 11 days
MAX_RUNTIME_MS = 1e11  # about 3 years
# fio's usr_cpu/sys_cpu: percent of one CPU per job process (a process of many threads, as
# thread=1 makes, can pass 100 %): beyond a thousand cores is no machine
MAX_FIO_CPU_PCT = 1e5
# a sampled thread's share of one core: at most 100 %, plus what whole clock ticks counted
# over a short interval can add
MAX_WORKER_PCT = 200.0
SHARE_SLACK_PCT = 1.0  # one CPU's categories are rounded to 0.1 % each: their sum may pass 100


def job_problem(job: JobResult) -> str | None:
    """What is impossible in one job of fio's output (the first thing found), or None."""
    numjobs = job.options.get("numjobs")
    if numjobs is not None and numjobs.strip().isdigit() and job.processes != int(numjobs):
        # numjobs is in the options: fio reports the job once with group_reporting, else once
        # per clone; more entries than that is an entry written twice
        return "reports the job more often than it ran fio processes (an entry written twice?)"
    for field, value, high in (("usr_cpu", job.usr_cpu_pct, MAX_FIO_CPU_PCT),
                               ("sys_cpu", job.sys_cpu_pct, MAX_FIO_CPU_PCT)):  # fmt: skip
        problem = _beyond(field, value, high)
        if problem:
            return problem
    for name, direction in job.directions.items():
        problem = _direction_problem(name, direction)
        if problem:
            return problem
    return None


def _beyond(field: str, value: float | int | None, high: float) -> str | None:
    """Why `value` cannot be (negative, or above `high`), or None; unknown values pass."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if value < 0:
        return f"holds a negative {field}"
    if value > high:
        return f"holds a {field} beyond anything a run can give"
    return None


def _direction_problem(name: str, direction: DirectionResult) -> str | None:
    for field, value, high in (
        ("iops", direction.iops, MAX_IOPS),
        ("bw_bytes", direction.bw_bytes, MAX_BW_BYTES),
        ("io_bytes", direction.io_bytes, MAX_BYTES),
        ("total_ios", direction.total_ios, MAX_BYTES),
        ("runtime", direction.runtime_ms, MAX_RUNTIME_MS),
        ("short_ios", direction.short_ios, MAX_BYTES),
        ("drop_ios", direction.drop_ios, MAX_BYTES),
    ):
        problem = _beyond(f"{name}.{field}", value, high)
        if problem:
            return problem
    for kind, stats in (("clat", direction.clat), ("slat", direction.slat),
                        ("lat", direction.lat)):  # fmt: skip
        for field, value in _latencies(stats):
            high = MAX_BYTES if field == "sample count" else MAX_LATENCY_US
            problem = _beyond(f"{name}.{kind} {field}", value, high)
            if problem:
                return problem
    return None


def _latencies(stats: LatencyStats | None) -> Iterator[tuple[str, float | int | None]]:
    if stats is None:
        return
    yield from (("min", stats.min_us), ("max", stats.max_us), ("mean", stats.mean_us),
                ("stddev", stats.stddev_us))  # fmt: skip
    yield from (("percentile", value) for value in stats.percentiles_us.values())
    yield "sample count", stats.n


def trace_problem(trace: CpuTrace) -> str | None:
    """What is impossible in a run's CPU samples (the first thing found), or None. Unlike
    fio's output, the samples hold no unknown values: a NaN is damage too."""
    cores = max(trace.cpu_count, 1)
    for field, value, high in (
        ("interval_s", trace.interval_s, 3600.0),
        ("cpu_count", trace.cpu_count, 1 << 20),
        ("sampler_cpu_pct", trace.sampler_cpu_pct, MAX_WORKER_PCT),
        ("errors", trace.errors, 1 << 40),
    ):
        problem = _impossible(field, value, high)
        if problem:
            return problem
    if trace.interval_s <= 0 or trace.cpu_count < 1:
        return "holds a sampling interval or CPU count that is not above 0"
    for sample in trace.samples:
        problem = _impossible("sample time", sample.t_s, 1e9) or _impossible(
            "others_pct", sample.others_pct, 100.0 * cores + MAX_WORKER_PCT
        )
        if problem:
            return problem
        for shares in sample.cpus:
            for value in shares:
                problem = _impossible("CPU share", value, 100.0)
                if problem:
                    return problem
            if sum(shares) > 100.0 + SHARE_SLACK_PCT:
                return "holds a CPU whose shares add up to more than 100 %"
        for value in sample.workers.values():
            problem = _impossible("fio thread's CPU share", value, MAX_WORKER_PCT)
            if problem:
                return problem
        for value in sample.runnable.values():
            problem = _impossible("fio thread's runnable share", value, 100.0)
            if problem:
                return problem
    return None


def _impossible(field: str, value: float | int | None, high: float) -> str | None:
    """Like _beyond, but NaN and infinity are impossible too."""
    if value is None:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"holds a {field} that is not a number (NaN or infinite)"
    return _beyond(field, value, high)
