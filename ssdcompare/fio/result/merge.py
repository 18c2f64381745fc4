"""Merging what fio reports apart: the entries of numjobs clones into one job, the directions
and latencies of several into one (percentiles from merged json+ bins), and how many fio
processes an entry covers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ssdcompare.fio.result.models import (
    DIRECTIONS,
    DirectionResult,
    JobResult,
    LatencySearch,
    LatencyStats,
    percentiles_from_bins,
)


def _identity(job: JobResult) -> tuple[Any, ...]:
    """What tells one job's entries from another's: host, port, group, name and options."""
    return (job.hostname, job.port, job.groupid, job.name, tuple(sorted(job.job_options.items())))


def _numjobs(options: dict[str, str]) -> int:
    try:
        return max(int(options.get("numjobs", "1").strip()), 1)
    except ValueError:
        return 1


def _reporting(options: dict[str, str]) -> tuple[bool | None, int]:
    """Whether one entry's clones were reported together (None: the output cannot tell), and
    how many fio processes the entry covers."""
    numjobs = _numjobs(options)
    setting = options.get("group_reporting")
    if setting is not None:
        grouped: bool | None = setting.strip().lower() not in ("0", "false", "no")
    else:
        # several clones, one entry: fio reported them together
        grouped = True if numjobs > 1 else None
    return grouped, numjobs if grouped else 1


def _option_summary(options: dict[str, str], all_sets: Sequence[dict[str, str]]) -> str:
    """The options that tell this set from the others, as "rw=randread, bs=4k"."""
    keys = sorted(
        {k for o in all_sets for k in o if any(o2.get(k) != o.get(k) for o2 in all_sets)}
    )
    return ", ".join(f"{k}={options.get(k, '(unset)')}" for k in keys) or "same options"


def merge_jobs(entries: Sequence[JobResult]) -> JobResult:
    """One result from entries of the same job (numjobs clones without group_reporting).

    Sums: io_bytes, bw_bytes, iops, total/short/drop ios, ctx, job_runtime_ms, processes.
    runtime_ms: the longest. CPU: total CPU time over total runtime (fio's own group_reporting
    arithmetic), so still percent of one CPU per process; a plain mean if a runtime is missing.
    Latency: n summed, min of mins, max of maxes, n-weighted mean, and the standard deviation
    of the pooled samples (within-entry spread plus spread of the means). Where fio printed no N
    (before 3.18) each entry is weighted by its direction's total_ios and n stays None.
    Percentiles cannot be merged as such: with json+ bins in every entry they are recomputed
    from the summed bins by fio's rule; without bins they are left empty (percentiles_lost).
    A value unknown (None or NaN) in any entry makes its sum unknown too.
    The first non-zero error wins; a merged result with an error has no directions. Host,
    port and options are the first entry's (entries of one job share them), and so is the
    search for a latency target, its depth left unknown where the clones' depths differ.
    """
    first = entries[0]
    error = next((job.error for job in entries if job.error), 0)
    runtimes = [job.job_runtime_ms for job in entries]
    usr, sys_ = _merged_cpu(entries)
    directions: dict[str, DirectionResult] = {}
    empty: list[str] = []
    if error == 0:
        for name in DIRECTIONS:
            parts = [job.directions[name] for job in entries if name in job.directions]
            if parts:
                directions[name] = _merge_direction(parts)
            elif all(name in job.empty_directions for job in entries):
                empty.append(name)  # no entry moved anything: a true zero
    return JobResult(
        name=first.name,
        groupid=first.groupid,
        error=error,
        hostname=first.hostname,
        port=first.port,
        job_runtime_ms=_sum(runtimes),
        usr_cpu_pct=usr,
        sys_cpu_pct=sys_,
        ctx=_sum([job.ctx for job in entries]),
        processes=sum(job.processes for job in entries),
        group_reporting=False,
        job_options=first.job_options,
        global_options=first.global_options,
        directions=directions,
        empty_directions=empty,
        steadystate=first.steadystate,
        latency_search=_merged_search(entries),
    )


def _merged_search(entries: Sequence[JobResult]) -> LatencySearch | None:
    """The entries' search for a latency target: each clone searches on its own, so the
    depth is known only when they all ended at the same one."""
    first = entries[0].latency_search
    if first is None or all(job.latency_search == first for job in entries):
        return first
    return first.model_copy(update={"depth": None})


def _merged_cpu(entries: Sequence[JobResult]) -> tuple[float, float]:
    """usr and sys CPU of entries merged: total CPU time over total runtime (fio's own
    group_reporting arithmetic), or a plain mean when a runtime is missing."""
    runtimes = [job.job_runtime_ms for job in entries]
    if all(runtimes):
        total_runtime = sum(r for r in runtimes if r)
        usr = sum(j.usr_cpu_pct * (j.job_runtime_ms or 0) for j in entries) / total_runtime
        sys_ = sum(j.sys_cpu_pct * (j.job_runtime_ms or 0) for j in entries) / total_runtime
        return usr, sys_
    usr = sum(j.usr_cpu_pct for j in entries) / len(entries)
    return usr, sum(j.sys_cpu_pct for j in entries) / len(entries)


def _sum(values: Sequence[int | None]) -> int | None:
    """The sum, or None when any value is unknown."""
    if any(value is None for value in values):
        return None
    return sum(value for value in values if value is not None)


def _merge_direction(parts: Sequence[DirectionResult]) -> DirectionResult:
    if len(parts) == 1:
        return parts[0]
    weights = [part.total_ios for part in parts]
    runtimes = [p.runtime_ms for p in parts]
    return DirectionResult(
        direction=parts[0].direction,
        io_bytes=_sum([p.io_bytes for p in parts]),
        bw_bytes=sum(p.bw_bytes for p in parts),
        iops=sum(p.iops for p in parts),
        runtime_ms=None if None in runtimes else max(r for r in runtimes if r is not None),
        total_ios=_sum(weights),
        short_ios=_sum([p.short_ios for p in parts]),
        drop_ios=_sum([p.drop_ios for p in parts]),
        clat=merge_latency([p.clat for p in parts], weights),
        slat=merge_latency([p.slat for p in parts], weights),
        lat=merge_latency([p.lat for p in parts], weights),
    )


def merge_latency(
    stats: Sequence[LatencyStats | None], fallback_weights: Sequence[int | None]
) -> LatencyStats | None:
    """Pool latency stats of several entries (see `merge_jobs`); None entries are skipped.

    `fallback_weights` (one per entry, e.g. total_ios) stand in for N where fio printed none;
    when a needed weight is unknown too, the pooled mean and spread are NaN (unknown).
    """
    present = [(s, w) for s, w in zip(stats, fallback_weights, strict=True) if s is not None]
    if not present:
        return None
    if len(present) == 1:
        return present[0][0]
    known_n = all(s.n is not None for s, _ in present)
    mean, stddev = _pooled([s for s, _ in present], [s.n if known_n else w for s, w in present])
    bins = _summed_bins([s for s, _ in present])
    keys = {key for s, _ in present for key in s.percentiles_us}
    percentiles = percentiles_from_bins(bins, keys) if bins is not None else {}
    had_percentiles = any(s.percentiles_us or s.percentiles_lost for s, _ in present)
    return LatencyStats(
        n=sum(s.n or 0 for s, _ in present) if known_n else None,
        min_us=_extreme(min, [s.min_us for s, _ in present]),
        max_us=_extreme(max, [s.max_us for s, _ in present]),
        mean_us=mean,
        stddev_us=stddev,
        percentiles_us=percentiles,
        bins=bins,
        percentiles_lost=had_percentiles and not percentiles,
    )


def _pooled(stats: Sequence[LatencyStats], chosen: Sequence[int | None]) -> tuple[float, float]:
    """The n-weighted mean of entries' latencies (`chosen`: each one's weight) and the standard
    deviation of their pooled samples; NaN when a weight is unknown."""
    if any(w is None for w in chosen):
        return math.nan, math.nan  # an entry's weight is unknown, so is the pooled mean
    weights = [float(w) for w in chosen if w is not None]
    total = sum(weights)
    if total <= 0:
        weights, total = [1.0] * len(stats), float(len(stats))
    mean = sum(w * s.mean_us for s, w in zip(stats, weights, strict=True)) / total
    # pooled sum of squares: each entry's own (n - 1) * var plus its mean's offset
    # (products, not powers: a power of a huge float raises where a product becomes inf)
    squares = sum(
        max(w - 1, 0) * s.stddev_us * s.stddev_us + w * (s.mean_us - mean) * (s.mean_us - mean)
        for s, w in zip(stats, weights, strict=True)
    )
    return mean, math.sqrt(squares / (total - 1)) if total > 1 else 0.0


def _summed_bins(stats: Sequence[LatencyStats]) -> dict[int, int] | None:
    """The entries' json+ histograms added up, in rising order; None unless every entry has
    one (percentiles cannot be merged without)."""
    if not all(s.bins for s in stats):
        return None
    bins: dict[int, int] = {}
    for s in stats:
        for value, count in (s.bins or {}).items():
            bins[value] = bins.get(value, 0) + count
    return dict(sorted(bins.items()))


def _extreme(pick: Any, values: Sequence[float]) -> float:
    """min or max of values; NaN when one is unknown (NaN): it might have been the extreme."""
    if any(math.isnan(value) for value in values):
        return math.nan
    return float(pick(values))
