"""A latency-vs-load curve as it runs: each point paced at its share of the maximum that the
curve's unpaced run measured (on its own device, or the highest of the sweep's devices), and
the stop rule that skips the higher points once a point's p99 latency passes `stop_p99`.

The rate is set as the run starts (`rate_iops`, per fio process and direction, after the
planned `rate_process=poisson`), from the stored output of the unpaced run of the same repeat
and drive state: a resumed sweep paces its points exactly as the first would have.
"""

from __future__ import annotations

import math

from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.jobfile import RenderedJob, paced_text
from ssdcompare.fio.pacing import offered_iops, rate_for
from ssdcompare.fio.result.models import FioOutput, FioOutputError
from ssdcompare.fio.result.plausibility import output_problem
from ssdcompare.results.store import ResultsDir
from ssdcompare.suite.workload import Workload
from ssdcompare.target.devices import Target
from ssdcompare.units import format_count, format_latency


def paced(results: ResultsDir, job: RenderedJob, repeat: int) -> tuple[RenderedJob, str | None]:
    """A curve point ready to run, its rate in its jobfile; or with why it must be skipped
    (its maximum unknown, or the curve stopped below it). Any other job as it is."""
    workload = job.workload
    if workload.point is None:
        return job, None
    stop = _stopped_below(results, job, repeat)
    if stop is not None:
        return job, stop
    maximum, why = _maximum(results, job, repeat)
    if maximum is None:
        return job, why
    total = maximum * workload.point / 100
    paced_at = rates(workload, total, job.target)
    offered = _offered(workload, paced_at, job.target)
    if not total * 0.9 <= offered <= total * 1.1:  # beyond what fio's pacing can offer
        return job, (f"fio cannot pace {format_count(total)} IOPS as this job runs (its "
                     f"nearest is {format_count(offered)}: its gaps between I/Os are whole "
                     "microseconds per process): split the load over more processes with "
                     "numjobs")  # fmt: skip
    return job.model_copy(update={"text": paced_text(job.text, paced_at)}), None


def _processes(workload: Workload, target: Target) -> int:
    """The fio processes a run of `workload` on `target` paces: numjobs, on every member."""
    return workload.numjobs * (len(target.members) or 1)


def _offered(workload: Workload, paced_at: tuple[int, ...], target: Target) -> float:
    """The load fio offers a run paced at `paced_at` (per process and direction)."""
    return sum(offered_iops(rate) or math.inf for rate in paced_at) * _processes(workload, target)


def rates(workload: Workload, total_iops: float, target: Target) -> tuple[int, ...]:
    """`rate_iops` per fio process for a run of `total_iops`: split over the job's processes
    (numjobs, and a group's members) and, for a mix, over reads and writes by its share;
    each the rate at which fio's Poisson pacing offers the load closest to its part
    (ssdcompare.fio.pacing)."""
    per_process = total_iops / _processes(workload, target)
    if workload.rwmixread is None or len(workload.directions) < 2:
        return (rate_for(per_process),)
    reads = per_process * workload.rwmixread / 100
    return (rate_for(reads), rate_for(per_process - reads))


def _maximum(results: ResultsDir, job: RenderedJob, repeat: int) -> tuple[float | None, str]:
    """The IOPS the point's rate is a share of, or why it is not known."""
    workload = job.workload
    if isinstance(workload.curve_base, int):
        return float(workload.curve_base), ""  # a rate given in IOPS
    max_id = workload.max_run_id
    assert max_id is not None
    own = workload.curve_base == "own"
    # every device the sweep planned it on, also those a resume of some devices leaves out
    planned = results.manifest.planned
    names = [job.target.name] if own else [n for n, jobs in planned.items() if max_id in jobs]
    measured = [iops for n in names if (iops := _run_iops(results, n, max_id, repeat))]
    if not measured:
        where = f"on {job.target.name}" if own else "on any device"
        return None, (f"the curve's unpaced run {max_id} has no result {where} in repeat "
                      f"{repeat}: its points have no maximum to be a share of")  # fmt: skip
    return max(measured), ""


def _run_iops(results: ResultsDir, target: str, job_id: str, repeat: int) -> float | None:
    """The IOPS of a finished run, all directions added; None when it failed or is missing."""
    output = _output(results, target, job_id, repeat)
    return output.ok_iops if output is not None else None


def _output(results: ResultsDir, target: str, job_id: str, repeat: int) -> FioOutput | None:
    """A finished run's fio output; None when it failed, is missing or cannot be read, or
    holds figures no run can produce (it paces and stops nothing: it is no result)."""
    status = results.status(target, job_id, repeat)
    if status is None or status.status != "ok" or not results.finished(status):
        return None
    try:
        output = results.fio_output(status)
    except (FioOutputError, SsdcompareError):
        return None
    return output if output_problem(output) is None else None


def _stopped_below(results: ResultsDir, job: RenderedJob, repeat: int) -> str | None:
    """Why the curve stopped before this point (stop_p99): a lower point of the same device,
    repeat and pass whose p99 latency passed the limit; None when none did."""
    workload = job.workload
    limit = workload.stop_p99_us
    if limit is None or workload.curve is None or workload.point is None:
        return None
    for share in (s for s in workload.curve if s < workload.point):
        lower = workload.curve_run_id(share)
        assert lower is not None  # a curve's point
        output = _output(results, job.target.name, lower, repeat)
        p99 = worst_p99_us(output) if output is not None else None
        if p99 is not None and p99 > limit:
            return (f"the curve stopped at {share:g} % ({lower}): its p99 latency was "
                    f"{format_latency(p99)}, past stop_p99 {format_latency(limit)}")  # fmt: skip
    return None


def worst_p99_us(output: FioOutput) -> float | None:
    """The highest p99 latency of an output's directions (µs); None when none is known."""
    found = []
    for job in output.jobs:
        for direction in job.directions.values():
            stats = direction.latency
            value = stats.percentile_us(99) if stats is not None else None
            if value is not None and direction.direction != "sync":
                found.append(value)
    return max(found, default=None)
