"""Steady state as SNIA's Solid State Storage Performance Test Specification (PTS) defines it.

A drive is in steady state for a workload when its results have stopped drifting. The PTS
runs the workload in rounds and looks at a measurement window of the last WINDOW rounds:

- range: the largest and smallest round differ by at most RANGE_PCT % of the window's mean;
- slope: the least-squares line through the window moves by at most SLOPE_PCT % of the mean
  from its first round to its last (the PTS's "slope excursion").

Both must hold. Rounds go on until they do, and stop after MAX_ROUNDS without: steady state
"not attained", which is recorded, never hidden.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

WINDOW = 5
RANGE_PCT = 20.0
SLOPE_PCT = 10.0
MAX_ROUNDS = 25
# bytes per second a fill (twice the span, sequential) is planned at: a slow drive past its cache
FILL_RATE_WORST = 100e6


@dataclass(frozen=True)
class Window:
    """The PTS figures of one measurement window."""

    mean: float
    range_pct: float  # (max - min) / mean x 100
    slope_pct: float  # |slope| x (rounds - 1) / mean x 100
    steady: bool
    slope: float = 0.0  # the least-squares line through the window: change per round
    intercept: float = 0.0  # the line's value at the window's first round


def judge_window(
    values: Sequence[float], range_pct: float = RANGE_PCT, slope_pct: float = SLOPE_PCT
) -> Window:
    """The PTS range and slope criteria over one window of round results (the PTS's own
    limits unless others are given)."""
    count = len(values)
    mean = sum(values) / count if count else 0.0
    if count < 2 or mean <= 0:
        return Window(mean, float("inf"), float("inf"), False)
    middle = (count - 1) / 2
    slope = sum((i - middle) * (v - mean) for i, v in enumerate(values)) / sum(
        (i - middle) ** 2 for i in range(count)
    )
    spread = (max(values) - min(values)) / mean * 100
    excursion = abs(slope) * (count - 1) / mean * 100
    return Window(mean, spread, excursion, spread <= range_pct and excursion <= slope_pct,
                  slope, mean - slope * middle)  # fmt: skip


def first_steady(
    rounds: Sequence[float],
    window: int = WINDOW,
    range_pct: float = RANGE_PCT,
    slope_pct: float = SLOPE_PCT,
) -> int | None:
    """The number of rounds after which steady state was first reached (the window ending
    there passes both criteria), or None."""
    for end in range(window, len(rounds) + 1):
        if judge_window(rounds[end - window : end], range_pct, slope_pct).steady:
            return end
    return None


@dataclass(frozen=True)
class Rounds:
    """The PTS judgement of rounds run so far: the measurement window (the last `window`
    rounds, numbered from 1) and its figures, when the rule first held, whether it holds
    now, and whether rounds are done (steady, or out of rounds)."""

    window: list[int]
    judged: Window
    steady_after: int | None
    attained: bool
    done: bool


def judge_rounds(
    values: Sequence[float],
    window: int = WINDOW,
    range_pct: float = RANGE_PCT,
    slope_pct: float = SLOPE_PCT,
    max_rounds: int = MAX_ROUNDS,
) -> Rounds:
    """The PTS rule over the rounds so far (`values`, each round's tracked figure)."""
    last = list(values[-window:])
    judged = judge_window(last, range_pct, slope_pct)
    attained = len(last) == window and judged.steady
    return Rounds(
        window=list(range(len(values) - len(last) + 1, len(values) + 1)),
        judged=judged,
        steady_after=first_steady(values, window, range_pct, slope_pct),
        attained=attained,
        done=attained or len(values) >= max_rounds,
    )
