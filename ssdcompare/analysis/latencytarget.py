"""fio's search for the deepest queue that meets a latency target (the fio options
latency_target, latency_window and latency_percentile, given through a suite's `extra`): what
it found as the frame's columns, and what those tell in words.

fio starts such a job at QD 1 and judges it window by window. While the share of a window's
I/Os that finished within the target is at least the percentile, it raises the depth (doubling
it until a window misses, then halving the distance to the lowest depth that missed); a window
that misses lowers the depth again. When the depth stops changing, fio starts its statistics
anew, runs one more window at that depth and ends the job: the figures of a run whose search
settled are that last window's, and the run is shorter than its runtime. A job whose runtime
ends first reports the depth it had reached. Below QD 1 fio cannot go: where QD 1 misses the
target it stays there to the end, so a depth of 1 is its answer both when QD 1 meets the target
and when no depth does. The run's own latency at the percentile tells the two apart.
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Real

from ssdcompare.fio.result.models import JobResult, percentiles_from_bins
from ssdcompare.units import format_latency

# the frame's columns of the search, in their order (ssdcompare.analysis.columns)
SEARCH_COLUMNS = ("latency_depth", "latency_target_us", "latency_percentile",
                  "latency_window_us", "latency_at_percentile_us")  # fmt: skip
# a time-based run that measured less than this share of its runtime ended early: fio's search
# settled (fio started its statistics anew for the last window and then ended the job)
SETTLED_SHARE = 0.95


def search_values(job: JobResult) -> dict[str, object]:
    """The frame's columns of a job's search for a latency target, all None for a job
    without a target."""
    search = job.latency_search
    if search is None:
        return dict.fromkeys(SEARCH_COLUMNS)
    return {
        "latency_depth": search.depth,
        "latency_target_us": search.target_us,
        "latency_percentile": search.percentile,
        "latency_window_us": search.window_us,
        "latency_at_percentile_us": latency_at(job, search.percentile),
    }


def latency_at(job: JobResult, percentile: float | None) -> float | None:
    """The job's total latency (µs) at `percentile`, over its reads, writes and trims
    together as fio's search counts them: from their json+ histograms added up, by fio's own
    rule, or the percentile fio printed for a job of one direction. None when fio measured no
    percentiles of total latency (lat_percentiles, which ssdcompare's jobfiles set)."""
    parts = [d.lat for name, d in job.directions.items() if name != "sync"]
    if percentile is None or not parts or any(lat is None for lat in parts):
        return None
    if all(lat.bins for lat in parts if lat is not None):
        bins: dict[int, int] = {}
        for lat in parts:
            for value, count in (lat.bins or {}).items():
                bins[value] = bins.get(value, 0) + count
        key = f"{percentile:f}"
        return percentiles_from_bins(bins, [key]).get(key)
    only = parts[0]
    return only.percentile_us(percentile) if len(parts) == 1 and only is not None else None


def search_words(row: Mapping[str, object]) -> str | None:
    """What fio's search for a latency target found, in words, from a row of the frame (or
    of the summary): "fio found QD 12 meets p99.9 ≤ 500 µs"; "fio found no queue depth that
    meets ..." when it ended at QD 1 and the run's latency at the percentile misses the
    target; that the search had not settled when a run used its whole runtime; None for a
    run without a target."""
    depth, target = _number(row, "latency_depth"), _number(row, "latency_target_us")
    if depth is None or target is None:
        return None
    percentile = _number(row, "latency_percentile")
    share = f"p{percentile:g}" if percentile is not None else "latency"
    goal = f"{share} ≤ {format_latency(target)}"
    measured = _number(row, "latency_at_percentile_us")
    settled = _settled(row)
    if depth == 1 and measured is not None and measured > target:
        return (f"fio found no queue depth that meets {goal}: at QD 1 the run measured "
                f"{share} = {format_latency(measured)}")  # fmt: skip
    if settled is False:
        return (f"fio had not settled on a queue depth for {goal} when the job ended, at "
                f"QD {depth:.0f}: a longer runtime lets its search finish")  # fmt: skip
    if depth == 1 and measured is None and settled is None:
        return (f"fio ended at QD 1: QD 1 meets {goal} or no depth does, which the figures "
                f"of the run cannot tell without its {share}")  # fmt: skip
    return f"fio found QD {depth:.0f} meets {goal}"


def _settled(row: Mapping[str, object]) -> bool | None:
    """Whether fio's search settled (the run ended before its runtime, see SETTLED_SHARE);
    None when it cannot be told: a size-capped job, or times unknown."""
    measured, planned = _number(row, "measured_s"), _number(row, "runtime_s")
    if measured is None or planned is None or _number(row, "io_size_bytes") is not None:
        return None
    return measured < SETTLED_SHARE * planned


def _number(row: Mapping[str, object], column: str) -> float | None:
    """A column's value as a number; None when absent or unknown (None, NaN, NA)."""
    value = row.get(column)
    if isinstance(value, bool) or not isinstance(value, Real):
        return None  # pandas' NA is no number
    return float(value) if value == value else None
