"""The PTS tests read over time, from small hand-made series (no fio): write saturation's
fresh and settled IOPS, host idle recovery's bursts against their baselines (and the bursts
a log cannot tell apart), cross stimulus recovery's settled bandwidth and settling time, and
their charts and tables as the report builds them."""

from __future__ import annotations

import math

import pandas as pd

from ssdcompare.analysis.ptstime import (
    DeviceSeries,
    Segment,
    recovery,
    saturation,
    settled,
    thinned,
)
from ssdcompare.report.pts import _recovery_grid, _settled_grid
from ssdcompare.report.ptstimechart import hir_chart, wsat_charts, xsr_chart


def series(parts: list[tuple[str, list[float]]], step_s: float = 0.1) -> pd.DataFrame:
    """Runs back to back: each job's IOPS per interval (4 KiB writes)."""
    rows, t, written = [], 0.0, 0.0
    for job, values in parts:
        for value in values:
            t = round(t + step_s, 6)
            written += value * 4096 * step_s
            rows.append({"device": "d", "job": job, "t_s": t, "iops": value,
                         "bw_bytes": value * 4096, "written_bytes": written})  # fmt: skip
    return pd.DataFrame(rows)


def device(test: str, data: pd.DataFrame, segments: list[Segment],
           capacity: int | None = 1 << 20) -> DeviceSeries:  # fmt: skip
    return DeviceSeries("s", "d", "dev", test, data, segments, capacity, 100, 0.001)


def segments_of(data: pd.DataFrame, idle: dict[str, tuple[float, bool]]) -> list[Segment]:
    found = []
    for job, run in data.groupby("job", sort=False):
        idle_s, resolved = idle.get(str(job), (None, True))
        found.append(Segment(str(job), float(run["t_s"].min()) - 0.1, float(run["t_s"].max()),
                             idle_s, 0.3 if idle_s else None, resolved))  # fmt: skip
    return found


def test_write_saturation_reads_fresh_and_settled_tenths_and_the_capacity_written() -> None:
    data = series([("wsat", [1000.0] * 10 + [600.0] * 80 + [250.0] * 10)])
    mine = device("wsat", data, segments_of(data, {}), capacity=4096 * 1000)
    found = saturation(mine)
    assert found.fresh_iops == 1000 and found.settled_iops == 250
    assert found.drop_pct == 75
    assert math.isclose(found.capacities, data["written_bytes"].max() / (4096 * 1000))
    assert "settle at 250" in found.words and "75 % lower" in found.words
    assert "1.00k fresh" in found.words
    time_chart, written_chart = wsat_charts(mine, 0)
    assert time_chart.series[0].xs[-1] == data["t_s"].iloc[-1]
    assert written_chart.series[0].xs[-1] == found.capacities
    assert written_chart.x.ticks is not None and written_chart.x.ticks(1.0) == "1×"


def test_without_a_capacity_write_saturation_has_only_its_time_chart() -> None:
    data = series([("wsat", [500.0] * 20)])
    mine = device("wsat", data, segments_of(data, {}), capacity=None)
    assert math.isnan(saturation(mine).capacities)
    assert "unchanged" in saturation(mine).words
    assert len(wsat_charts(mine, 0)) == 1


def test_host_idle_recovery_sets_each_idle_times_bursts_against_the_baseline_before() -> None:
    burst = [0.0, 0.0, 900.0, 1200.0, 1200.0, 800.0]  # idle, then a burst with partial edges
    data = series([("idle5", burst * 3), ("base1", [400.0] * 10), ("idle10", burst * 2)])
    segments = segments_of(data, {"idle5": (0.2, True), "idle10": (0.2, True)})
    rows = recovery(device("hir", data, segments), steady_iops=600.0)
    assert [(r.segment.job, r.bursts, r.burst_iops, r.baseline_job, r.baseline_iops)
            for r in rows] == [("idle5", 3, 1200.0, "steady rounds", 600.0),
                               ("idle10", 2, 1200.0, "base1", 400.0)]  # fmt: skip
    assert [r.ratio for r in rows] == [2.0, 3.0]
    grid = _recovery_grid("dev", rows, 100)
    assert [[c.text for c in row] for row in grid.rows] == [
        ["idle5", "200 ms", "1.20k", "600", "2.00×"],
        ["idle10", "200 ms", "1.20k", "400", "3.00×"],
    ]
    chart = hir_chart(device("hir", data, segments), 0)
    assert chart is not None and len(chart.bands) == 2  # the two idle-time segments
    assert [s.ys for s in chart.series if not s.joined] == [[1200.0] * 3, [1200.0] * 2]


def test_bursts_shorter_than_the_log_interval_are_said_so_not_figured() -> None:
    data = series([("idle5", [700.0] * 10)])  # bursts merged into every interval
    rows = recovery(device("hir", data, segments_of(data, {"idle5": (0.001, False)})), 600.0)
    assert len(rows) == 1 and math.isnan(rows[0].burst_iops) and math.isnan(rows[0].ratio)
    (row,) = _recovery_grid("dev", rows, 100).rows
    assert row[2].text == "not resolved" and "cannot tell the bursts apart" in row[2].tip
    assert row[4].text == "-"


def test_cross_stimulus_recovery_says_where_and_when_each_segment_settled() -> None:
    data = series([("seq1", [100.0] * 20), ("rand", [900.0] * 5 + [300.0] * 15),
                   ("seq2", [100.0, 500.0] * 10)])  # fmt: skip
    rows = settled(device("xsr", data, segments_of(data, {})))
    assert [(r.segment.job, r.bw_bytes) for r in rows] == [
        ("seq1", 100 * 4096),
        ("rand", 300 * 4096),
        ("seq2", 300 * 4096),
    ]
    assert [r.settle_s for r in rows][:2] == [0.0, 0.5] and rows[2].settle_s is None
    grid = _settled_grid("dev", rows)
    assert [row[2].text for row in grid.rows] == ["0.00 s", "0.50 s", "did not settle"]
    chart = xsr_chart(device("xsr", data, segments_of(data, {})), 0)
    assert chart is not None and len(chart.bands) == 3
    assert max(chart.series[0].ys) == 900 * 4096 / 1e6


def test_a_long_series_is_thinned_for_its_chart_by_averaging_neighbours() -> None:
    data = series([("a", [1.0, 3.0] * 700), ("b", [5.0] * 10)])
    small = thinned(data, most=141)  # bins of 10 intervals
    assert len(small) == 141 and set(small["job"]) == {"a", "b"}
    assert set(small.loc[small["job"] == "a", "iops"]) == {2.0}
    assert small["written_bytes"].iloc[-1] == data["written_bytes"].iloc[-1]
