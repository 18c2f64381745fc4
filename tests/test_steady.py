"""Steady state by SNIA's PTS: a window of five rounds, its range and its slope excursion."""

from __future__ import annotations

import pytest

from ssdcompare.judge.steady import first_steady, judge_window


def test_a_flat_window_is_steady_and_says_its_figures() -> None:
    window = judge_window([100, 102, 98, 101, 99])
    assert window.steady and window.mean == 100
    assert window.range_pct == pytest.approx(4.0)
    assert window.slope_pct == pytest.approx(0.3 * 4)  # least-squares slope -0.3 per round


def test_range_and_slope_each_break_steadiness() -> None:
    wide = judge_window([80, 120, 100, 120, 80])  # range 40 % of the mean, no trend
    assert not wide.steady and wide.range_pct == pytest.approx(40.0) and wide.slope_pct == 0
    drifting = judge_window([92, 96, 100, 104, 108])  # range 16 %, but slope 16 % over it
    assert not drifting.steady and drifting.range_pct == pytest.approx(16.0)
    assert drifting.slope_pct == pytest.approx(16.0)


def test_rounds_become_steady_once_the_fall_is_over() -> None:
    # a fresh drive: fast, falling as it fills, then flat
    rounds = [300, 260, 200, 150, 120, 104, 101, 99, 100, 98, 101]
    # rounds 5-9 still span 20.04 % (120 against 99); rounds 6-10 are steady
    assert first_steady(rounds) == 10
    assert first_steady(rounds[:9]) is None
    assert first_steady([100, 100, 100, 100]) is None  # fewer rounds than a window
