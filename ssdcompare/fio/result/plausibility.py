"""Values no run can produce: the one check of a fio result and of a run's CPU samples.

A results folder can come from someone else, edited or damaged. fio's parser already reads
what is not a number (or nan/inf) as missing; this is the next line: numbers that are
numbers but cannot be true. A negative rate, count or latency; a rate beyond any device
(IOPS of 1e300); a latency target's search at a depth below 1 or for a percentile beyond 100;
a job reported more often than it ran processes (an entry written twice, which would double
its IOPS when the entries are added up as numjobs clones); numbers that contradict each other
(IOPS or bandwidth that disagree with the count and runtime fio made them of, a rate over a
runtime of 0, a latency whose mean is not between its min and max); CPU shares below 0 or
above 100 %, or NaN, in the samples. A run with such a value is a
failed run whose error names the field, never its value.

The bounds are far from anything real: every recorded output in tests/data and
examples/results passes (a test checks), as do fresh sweeps.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterator

from ssdcompare.fio.result.models import (
    DirectionResult,
    FioOutput,
    JobResult,
    LatencySearch,
    LatencyStats,
)
from ssdcompare.judge.cpu import CpuTrace

MAX_IOPS = 1e10  # ten billion I/Os per second: a thousand times the fastest device
MAX_BW_BYTES = 1e14  # 100 TB/s
MAX_BYTES = 1e20  # bytes moved by one run: 100 EB
MAX_LATENCY_US = 1e12  # about 11 days
MAX_RUNTIME_MS = 1e11  # about 3 years
MAX_QUEUE_DEPTH = 2**31  # fio keeps a job's depth in an int
# fio's usr_cpu/sys_cpu: percent of one CPU per job process (a process of many threads, as
# thread=1 makes, can pass 100 %): beyond a thousand cores is no machine
MAX_FIO_CPU_PCT = 1e5
# a sampled thread's share of one core: at most 100 %, plus what whole clock ticks counted
# over a short interval can add
MAX_WORKER_PCT = 200.0
# a rate against its count over the runtime: recorded outputs agree within 0.2 % (fio ≥ 3
# exactly); older fio printed whole IOPS and whole KiB/s
RATE_TOLERANCE = 0.05
RATE_SLACK_IOPS = 1.0
RATE_SLACK_BYTES = 1024.0
SHARE_SLACK_PCT = 1.0  # one CPU's categories are rounded to 0.1 % each: their sum may pass 100


def output_problem(output: FioOutput) -> str | None:
    """What is impossible in any job of fio's output (the first thing found), or None."""
    return next((p for p in map(job_problem, output.jobs) if p is not None), None)


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
    problem = _search_problem(job.latency_search)
    if problem:
        return problem
    # entries of numjobs clones merged here add up rates over runtimes of their own, where the
    # runtime kept is the longest: their rate is at least the count over it, not equal to it
    merged = job.processes > 1 and not job.group_reporting
    for name, direction in job.directions.items():
        problem = _direction_problem(name, direction) or _rates_problem(name, direction, merged)
        if problem:
            return problem
    return None


def _search_problem(search: LatencySearch | None) -> str | None:
    """What is impossible in fio's search for a latency target: a depth below 1 (fio starts
    at 1) or beyond any queue, a target, window or percentile out of its range."""
    if search is None:
        return None
    if search.depth is not None and not 1 <= search.depth <= MAX_QUEUE_DEPTH:
        return "holds a latency_depth no queue can have"
    if search.percentile is not None and not 0 < search.percentile <= 100:
        return "holds a latency_percentile that is no percentage"
    return _beyond("latency_target", search.target_us, MAX_LATENCY_US) or _beyond(
        "latency_window", search.window_us, MAX_RUNTIME_MS * 1000
    )


def _beyond(field: str, value: float | int | None, high: float) -> str | None:
    """Why `value` cannot be (negative, or above `high`), or None; unknown values pass."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if value < 0 or math.copysign(1.0, value) < 0:  # -0.0 too: fio never prints one
        return f"holds a negative {field}"
    if value > high:
        return f"holds a {field} beyond anything a run can give"
    return None


# a direction's figures, as its problems name them, and their bounds
_FIGURES = ("iops", "bw_bytes", "io_bytes", "total_ios", "runtime", "short_ios", "drop_ios")
_FIGURES_OF = operator.attrgetter(
    "iops", "bw_bytes", "io_bytes", "total_ios", "runtime_ms", "short_ios", "drop_ios"
)
_BOUNDS = (MAX_IOPS, MAX_BW_BYTES, MAX_BYTES, MAX_BYTES, MAX_RUNTIME_MS, MAX_BYTES, MAX_BYTES)


def _direction_problem(name: str, direction: DirectionResult) -> str | None:
    for field, value, high in zip(_FIGURES, _FIGURES_OF(direction), _BOUNDS, strict=True):
        if value is None or 0 < value <= high:
            continue  # unknown, or within bounds as a rule: told without a call
        if not _within(value, high):  # a 0, a NaN, or one to name
            return _beyond(f"{name}.{field}", value, high)
    for kind, stats in (("clat", direction.clat), ("slat", direction.slat),
                        ("lat", direction.lat)):  # fmt: skip
        if stats is None:
            continue
        # every figure within bounds, as a rule: only else is each looked at and named
        for field, value in [] if _plausible(stats) else _latencies(stats):
            high = MAX_BYTES if field == "sample count" else MAX_LATENCY_US
            problem = _beyond(f"{name}.{kind} {field}", value, high)
            if problem:
                return problem
        if not _ordered(stats.min_us, stats.mean_us, stats.max_us):
            return f"holds a {name}.{kind} whose mean is not between its min and max"
    return None


def _ordered(low: float, mean: float, high: float) -> bool:
    """low <= mean <= high, but for rounding in the last digits (NaN: unknown, passes)."""
    slack = 1e-9 * max(abs(low), abs(high)) + 1e-6
    return not (low > mean + slack or mean > high + slack or low > high + slack)


def _rates_problem(name: str, direction: DirectionResult, merged: bool) -> str | None:
    """A rate that contradicts the count and runtime it was made of: fio divides total_ios
    and io_bytes by the runtime, so they agree but for rounding (older fio: whole IOPS and
    whole KiB/s). Unknown values (None, NaN) pass."""
    runtime = direction.runtime_ms
    for field, rate, count, slack in (
        ("iops", direction.iops, direction.total_ios, RATE_SLACK_IOPS),
        ("bw_bytes", direction.bw_bytes, direction.io_bytes, RATE_SLACK_BYTES),
    ):
        if runtime is None or count is None or math.isnan(rate):
            continue
        if runtime == 0:
            if rate > 0:
                return f"holds a {name}.{field} above 0 over a runtime of 0"
            continue
        expected = count * 1000.0 / runtime
        low, high = (
            expected * (1 - RATE_TOLERANCE) - slack,
            expected * (1 + RATE_TOLERANCE) + slack,
        )
        if rate < low or (rate > high and not merged):
            what = "total_ios" if field == "iops" else "io_bytes"
            return f"holds a {name}.{field} that disagrees with its {what} over its runtime"
    return None


def _latencies(stats: LatencyStats | None) -> Iterator[tuple[str, float | int | None]]:
    if stats is None:
        return
    yield from (("min", stats.min_us), ("max", stats.max_us), ("mean", stats.mean_us),
                ("stddev", stats.stddev_us))  # fmt: skip
    yield from (("percentile", value) for value in stats.percentiles_us.values())
    yield "sample count", stats.n


def _plausible(stats: LatencyStats | None) -> bool:
    """Whether _latencies(stats) are all within bounds, told without naming each: a count
    within its bound and every figure above 0 and within its own, as nearly all are (a 0, a
    NaN or any other is looked at one by one). min() and max() over the percentiles pass over
    a NaN but when it comes first, and then this says no: either way a NaN is looked at
    again, or (unknown) needs no look."""
    if stats is None:
        return True
    if stats.n is not None and not 0 <= stats.n <= MAX_BYTES:
        return False
    high = MAX_LATENCY_US
    if not (0 < stats.min_us <= high and 0 < stats.max_us <= high
            and 0 < stats.mean_us <= high and 0 < stats.stddev_us <= high):  # fmt: skip
        return False
    printed = stats.percentiles_us.values()
    return not printed or (min(printed) > 0 and max(printed) <= high)


def _within(value: float | int | None, high: float) -> bool:
    """_beyond(..., value, high) is None, told without making its message."""
    if value is None or value != value:  # unknown (None, NaN) passes
        return True
    return 0 <= value <= high and math.copysign(1.0, value) > 0


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
    numbers = trace.cpu_numbers
    if numbers and (len(numbers) != trace.cpu_count or len(set(numbers)) != len(numbers)
                    or not all(0 <= n < 1 << 20 for n in numbers)):  # fmt: skip
        return "names its CPUs other than once each, by numbers from 0 (cpu_numbers)"
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
