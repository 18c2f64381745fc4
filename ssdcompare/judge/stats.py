"""Is a difference real? Two devices' repeats of one job compared, and repeats aggregated.

`compare(values, baseline)` takes the per-repeat figures of one job on two devices (IOPS, or
p99 latency) and gives their ratio with a 95 % confidence interval and Welch's t-test:

- the test runs on the logarithms of the values: performance differences are ratios (a drive
  1.5x faster), run-to-run noise scales with the level, and a ratio's interval is then
  symmetric around it on a log scale. The ratio is that of the geometric means;
- Welch's test does not assume both devices vary alike (a drive near its limits varies less);
- with fewer than MIN_REPEATS repeats on either side there is no verdict (None): two repeats
  give one degree of freedom and an interval too wide to say anything (`why_untested` says
  which reason it was, for people);
- repeats without any spread (rate-limited jobs, p99 latencies in fio's histogram buckets)
  leave the test undefined only when neither side varies, and then need none: the same
  value on both sides is no difference (ratio 1, p 1), two different values a certain one
  (p 0, the interval the ratio itself). With spread on one side Welch's test works as it is.

A difference is `significant` when p < ALPHA (5 %). With 3 repeats per device, a ratio of
1.10 is told from noise when each device's runs vary by about 4 % (standard deviation over
mean) or less; noisier runs need more repeats.

`aggregate_values(values, how, higher_is_better)` is the figure a table shows for several repeats:
the mean (default), the median, or the best (as CrystalDiskMark reports the best of 5).
"""

from __future__ import annotations

import math
import numbers
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

MIN_REPEATS = 3
SAME = 1e-9  # logarithms closer than this are equal (float noise, e.g. 100 and 100.0000001)
ALPHA = 0.05
CONFIDENCE = 0.95
Aggregate = Literal["mean", "median", "best"]
AGGREGATES: tuple[str, ...] = Aggregate.__args__  # type: ignore[attr-defined]


@dataclass(frozen=True)
class Comparison:
    """One device against the baseline on one job and metric."""

    ratio: float  # geometric mean of the device's repeats / the baseline's
    ci_low: float  # the ratio's 95 % confidence interval
    ci_high: float
    p_value: float  # Welch's t-test on the logarithms
    significant: bool  # p_value < ALPHA


def _usable(values: Sequence[float]) -> list[float] | None:
    found = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if len(found) < MIN_REPEATS or any(v <= 0 for v in found):
        return None
    return found


def compare(values: Sequence[float], baseline: Sequence[float]) -> Comparison | None:
    """`values` against `baseline` (each device's per-repeat figures); None with fewer than
    MIN_REPEATS positive values on either side. When neither side varies (to float noise:
    common for rate-limited jobs, and for p99 latency, which fio gives in histogram buckets)
    there is nothing to test: equal values are no difference, unequal ones a certain one."""
    mine, theirs = _usable(values), _usable(baseline)
    if mine is None or theirs is None:
        return None
    a = [math.log(v) for v in theirs]
    b = [math.log(v) for v in mine]
    diff = statistics.fmean(b) - statistics.fmean(a)
    var_a = statistics.variance(a) / len(a)
    var_b = statistics.variance(b) / len(b)
    se = math.sqrt(var_a + var_b)
    if se < SAME:  # no spread on either side: the difference is what it is
        ratio = 1.0 if abs(diff) < SAME else math.exp(diff)
        differs = ratio != 1.0
        return Comparison(ratio=ratio, ci_low=ratio, ci_high=ratio,
                          p_value=0.0 if differs else 1.0, significant=differs)  # fmt: skip
    df = (var_a + var_b) ** 2 / (var_a**2 / (len(a) - 1) + var_b**2 / (len(b) - 1))
    t = diff / se
    # scipy's t distribution, imported here: it takes a second to load, which every command
    # would pay, while only a comparison of 3 or more repeats a side needs it
    from scipy.stats import t as student_t

    p_value = float(2 * student_t.sf(abs(t), df))
    spread = float(student_t.ppf(0.5 + CONFIDENCE / 2, df)) * se
    return Comparison(
        ratio=math.exp(diff), ci_low=math.exp(diff - spread), ci_high=math.exp(diff + spread),
        p_value=p_value, significant=p_value < ALPHA,
    )  # fmt: skip


ROUNDS_UNTESTED = ("rounds of a PTS window, which follow one another on one drive, not "
                   "independent repeats")  # fmt: skip


def why_untested(repeats: object, baseline_repeats: object, rounds: bool = False) -> str:
    """Why two devices' repeats of a job were not tested, said for people, from how many
    finished on each side: fewer than MIN_REPEATS on one, else a repeat whose figure cannot
    be tested (zero, or unknown: a run that moved no data, a figure fio did not report).
    `rounds`: the figures are the rounds of a PTS test's window, never tested (each round
    starts where the one before left the drive, so they are not independent samples)."""
    if rounds:
        return ROUNDS_UNTESTED
    # numpy's and pandas' integers too; NA (unknown) as none
    counts = [int(n) if isinstance(n, numbers.Real) and not math.isnan(n) else 0
              for n in (repeats, baseline_repeats)]  # fmt: skip
    if min(counts) < MIN_REPEATS:
        return f"fewer than {MIN_REPEATS} repeats a side"
    return "a repeat without a figure to test (zero or unknown)"


def aggregate_values(
    values: Sequence[float], how: str = "mean", higher_is_better: bool = True
) -> float:
    """The figure for several repeats: their mean, median or best (the highest IOPS, the
    lowest latency). NaN without values."""
    found = sorted(float(v) for v in values if v is not None and not math.isnan(float(v)))
    if not found:
        return math.nan
    if how == "mean":
        return sum(found) / len(found)
    if how == "median":
        middle = len(found) // 2
        return found[middle] if len(found) % 2 else (found[middle - 1] + found[middle]) / 2
    if how == "best":
        return found[-1] if higher_is_better else found[0]
    raise ValueError(f"unknown aggregate {how!r}; use one of {', '.join(AGGREGATES)}")


def geometric_mean(values: Sequence[float]) -> float:
    """The figure a change over time is the ratio of (what `compare` tests): the geometric
    mean of the known values; 0 when one is 0 (a run that did no I/O), NaN without any."""
    found = [float(v) for v in values if v is not None and not math.isnan(float(v))]
    if not found:
        return math.nan
    if min(found) <= 0:
        return 0.0
    return math.exp(statistics.fmean(math.log(v) for v in found))


KNEE_GROWTH = 0.10  # IOPS growing less than 10 % per doubling of the queue depth ...
KNEE_LATENCY = 1.5  # ... while mean latency grows by 1.5x or more per doubling (~linearly)


def find_knee(
    depths: Sequence[float], iops: Sequence[float], lat_us: Sequence[float]
) -> int | None:
    """The saturation knee of a queue-depth series: the lowest depth from which every further
    doubling adds less than KNEE_GROWTH of IOPS while the mean latency keeps growing about
    as fast as the depth (KNEE_LATENCY or more per doubling): queueing more only waits
    longer. None with fewer than 3 depths, or when the series does not saturate."""
    points = sorted(
        (float(d), float(i), float(t))
        for d, i, t in zip(depths, iops, lat_us, strict=True)
        if d > 0 and i > 0 and t > 0 and not (math.isnan(float(i)) or math.isnan(float(t)))
    )
    if len({d for d, _, _ in points}) != len(points) or len(points) < 3:
        return None

    def saturated(a: tuple[float, float, float], b: tuple[float, float, float]) -> bool:
        doublings = math.log2(b[0] / a[0])
        growth = (b[1] / a[1]) ** (1 / doublings) - 1
        waiting = (b[2] / a[2]) ** (1 / doublings)
        return growth < KNEE_GROWTH and waiting >= KNEE_LATENCY

    steps = [saturated(points[k], points[k + 1]) for k in range(len(points) - 1)]
    for start in range(len(steps)):
        if all(steps[start:]):
            return int(points[start][0])
    return None
