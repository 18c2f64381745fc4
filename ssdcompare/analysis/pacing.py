"""A curve run's columns: which curve it belongs to and at what share of the maximum, the
load fio offered it (from fio's own record of the job's `rate_iops`, through fio's Poisson
pacing rule: ssdcompare.fio.pacing) and the share of it the run reached.

A point that fell short of its load by more than REACH_TOLERANCE_PCT "could not reach" it:
the device (or the host) could not take that load, and the point's latency is no point of
the curve. A short run at a low rate counts few arrivals, and a Poisson count of N arrivals
varies by about sqrt(N) by chance alone: a shortfall within three of those standard
deviations is never called one (600 IOPS for 2 s: 8.7 %; 10,000 IOPS for 60 s: 0.4 %, so
the 2 % rule).
"""

from __future__ import annotations

import math

import numpy

from ssdcompare.fio.pacing import offered_iops
from ssdcompare.fio.result.models import JobResult
from ssdcompare.suite.workload import Workload
from ssdcompare.units import format_count

REACH_TOLERANCE_PCT = 2.0  # a point more than 2 % short of its load could not reach it
_CHANCE_SIGMAS = 3.0


def pacing_columns(workload: Workload | None, job: JobResult | None) -> dict[str, object]:
    """`curve`, `curve_pct`, `curve_base` of a curve's run; for a paced run with fio's output
    also `rate_asked_iops` (the load fio offered, every process and direction added),
    `rate_reached_pct` and `rate_reached`. Empty for any other run."""
    if workload is None or workload.curve_name is None:
        return {}
    found: dict[str, object] = {
        "curve": workload.curve_name,
        "curve_pct": workload.point,
        "curve_base": str(workload.curve_base),
    }
    asked = asked_iops(job) if job is not None and workload.paced else None
    if asked is not None and job is not None:
        reached = job.total_iops / asked * 100
        allowed = reach_tolerance_pct(asked, _measured_s(job) or workload.runtime_s)
        found.update(rate_asked_iops=asked, rate_reached_pct=reached,
                     rate_reached=reached >= 100 - allowed)  # fmt: skip
    return found


def _measured_s(job: JobResult) -> float | None:
    """How long the run measured, in seconds (fio's runtime per process); None unknown."""
    if not job.job_runtime_ms or job.job_runtime_ms <= 0:
        return None
    return job.job_runtime_ms / max(job.processes, 1) / 1000


def reach_tolerance_pct(asked_iops: float, runtime_s: float) -> float:
    """How far short of its load (%) a run may fall and still have reached it: 2 %, or
    three standard deviations of its Poisson count of arrivals where that is more."""
    arrivals = asked_iops * runtime_s
    chance = _CHANCE_SIGMAS * 100 / math.sqrt(arrivals) if arrivals > 0 else math.inf
    return max(REACH_TOLERANCE_PCT, chance)


def asked_iops(job: JobResult) -> float | None:
    """The load a paced run was offered: from fio's record of its options, `rate_iops` per
    process (one value per direction, reads,writes,trims; one value paces every direction)
    through fio's pacing rule, for the directions the job moved, times the processes fio
    reported in the entry. None when the job was not paced or the value cannot be read."""
    value = job.options.get("rate_iops")
    if not value:
        return None
    parts = value.split(",")
    if len(parts) > 3 or not all(part.isascii() and part.isdigit() for part in parts if part):
        return None  # fio writes at most reads,writes,trims, in plain digits
    rates = [int(part) if part else 0 for part in parts]
    order = ("read", "write", "trim")
    moved = [d for d in order if d in job.directions]
    offered = [offered_iops(rates[min(order.index(d), len(rates) - 1)]) for d in moved]
    if not offered or any(o is None for o in offered):
        return None  # fio did not pace some direction: no load was set
    return sum(o for o in offered if o is not None) * job.processes


def reach_words(row: dict[str, object] | object) -> str | None:
    """ "could not reach its load: 1.98k of 4.00k IOPS (49 %)" for a result (a frame's or a
    summary's row) that fell short of its load; None for any other."""
    get = row.get if hasattr(row, "get") else (lambda key: None)  # type: ignore[union-attr]
    reached_it = get("rate_reached")
    if not isinstance(reached_it, bool | numpy.bool_) or reached_it:
        return None  # reached, unknown (NA) or no curve point
    asked, reached = get("rate_asked_iops"), get("rate_reached_pct")
    if not isinstance(asked, float | int) or not isinstance(reached, float | int):
        return "could not reach its load"
    return (f"could not reach its load: {format_count(asked * reached / 100)} of "
            f"{format_count(asked)} IOPS ({reached:.0f} %)")  # fmt: skip
