"""The charts of the SNIA PTS tests read over time (ssdcompare.analysis.ptstime) as chart
specs, drawn by both renderers (svg.py for the report, figure.py for `ssdcompare.plot.pts_time`):

- write saturation: IOPS against time, and IOPS against the bytes written in multiples of the
  device's capacity, a chart each per device;
- host idle recovery: each burst's IOPS against time (or, where the log cannot tell the
  bursts apart, each interval's), the idle-time segments shaded, the baselines between them;
- cross stimulus recovery: bandwidth against time, each segment shaded and named.
"""

from __future__ import annotations

import pandas as pd

from ssdcompare.analysis.ptstime import DeviceSeries, Segment, bursts, thinned
from ssdcompare.report.chartspec import Axis, Band, Key, LineChart, Series
from ssdcompare.units import format_count, format_rate

SEGMENT_SHADES = ("#0072B2", "#E69F00")  # segments alternate between these
SEGMENT_OPACITY = 0.08


def _seconds(value: float) -> str:
    return f"{value:g} s"


def wsat_charts(device: DeviceSeries, index: int) -> list[LineChart]:
    """A device's write saturation: IOPS against time, and against the capacities written
    (none without a capacity); empty without a series."""
    data = thinned(device.series)
    if data.empty:
        return []
    tips = [f"{t:.2f} s: {format_count(v)} IOPS" for t, v in zip(data["t_s"], data["iops"],
                                                                   strict=True)]  # fmt: skip
    charts = [LineChart(f"{device.label}: IOPS against time", [
        Series(index, data["t_s"].tolist(), data["iops"].tolist(), tips=tips, markers=False,
               label=device.label, name="IOPS")], Axis("time (s)", ticks=_seconds),
        Axis("IOPS", zero=True))]  # fmt: skip
    if device.capacity_bytes:
        written = (data["written_bytes"] / device.capacity_bytes).tolist()
        tips = [f"{w:.2f}× capacity written: {format_count(v)} IOPS" for w, v in
                zip(written, data["iops"], strict=True)]  # fmt: skip
        charts.append(LineChart(f"{device.label}: IOPS against the capacity written", [
            Series(index, written, data["iops"].tolist(), tips=tips, markers=False,
                   label=device.label, name="IOPS")],
            Axis("written (× capacity)", ticks=lambda v: f"{v:g}×"),
            Axis("IOPS", zero=True)))  # fmt: skip
    return charts


def _segment_bands(chart: LineChart, segments: list[Segment], names: dict[str, str]) -> None:
    """Each segment shaded, alternating, its name in its tooltip; and a key."""
    for n, segment in enumerate(segments):
        chart.bands.append(Band(segment.start_s, segment.end_s, None, None,
                                SEGMENT_SHADES[n % 2], SEGMENT_OPACITY,
                                names.get(segment.job, segment.job)))  # fmt: skip


def xsr_chart(device: DeviceSeries, index: int) -> LineChart | None:
    """A device's cross stimulus recovery: MB/s against time, each segment shaded."""
    data = thinned(device.series)
    if data.empty:
        return None
    tips = [f"{job} {t:.2f} s: {format_rate(v)}" for job, t, v in
            data[["job", "t_s", "bw_bytes"]].to_numpy()]  # fmt: skip
    chart = LineChart(f"{device.label}: bandwidth against time", [
        Series(index, data["t_s"].tolist(), (data["bw_bytes"] / 1e6).tolist(), tips=tips,
               markers=False, label=device.label, name="MB/s")],
        Axis("time (s)", ticks=_seconds), Axis("MB/s", zero=True))  # fmt: skip
    _segment_bands(
        chart,
        device.segments,
        {s.job: f"segment {s.job}: {s.start_s:.2f}–{s.end_s:.2f} s" for s in device.segments},
    )
    chart.keys.append(Key("band", "a segment (shaded; hover for its job)",
                          shade=SEGMENT_SHADES[0]))  # fmt: skip
    return chart


def hir_chart(device: DeviceSeries, index: int) -> LineChart | None:
    """A device's host idle recovery: each burst's mean IOPS at its start (each interval's
    IOPS where the bursts cannot be told apart), the baselines' intervals as a thin line, the
    idle-time segments shaded."""
    series = device.series
    if series.empty:
        return None
    chart = LineChart(f"{device.label}: IOPS of each burst against time", [],
                      Axis("time (s)", ticks=_seconds), Axis("IOPS", zero=True))  # fmt: skip
    idle = [s for s in device.segments if s.idle_s is not None]
    for segment in device.segments:
        run = series[series["job"] == segment.job]
        chart.series.append(_hir_line(run, segment, index, device.label))
    _segment_bands(chart, idle, {s.job: _idle_words(s, device.scale) for s in idle})
    chart.keys.append(Key("band", "idle-time segment (hover for its idle time)",
                          shade=SEGMENT_SHADES[0]))  # fmt: skip
    chart.keys.append(Key("point", "a burst's mean IOPS"))
    chart.keys.append(Key("line", "baseline (no idle time) and unresolved bursts, per interval"))
    return chart


def _hir_line(run: pd.DataFrame, segment: Segment, index: int, label: str) -> Series:
    """One segment's line: its bursts as points, or its intervals as a thin line."""
    if segment.idle_s is not None and segment.resolved:
        found = bursts(run)
        tips = [f"{segment.job}: burst at {t:.2f} s: {format_count(v)} IOPS" for t, v in
                zip(found["t_s"], found["iops"], strict=True)]  # fmt: skip
        return Series(index, found["t_s"].tolist(), found["iops"].tolist(), tips=tips,
                      joined=False, label=label, name=segment.job)  # fmt: skip
    data = thinned(run)
    return Series(index, data["t_s"].tolist(), data["iops"].tolist(), markers=False, thin=True,
                  tip=f"{segment.job}: IOPS per log interval", label=label,
                  name=segment.job)  # fmt: skip


def _idle_words(segment: Segment, scale: float | None) -> str:
    """An idle-time segment named by its idle time (and the specification's, scaled)."""
    idle = segment.idle_s or 0.0
    said = f"{segment.job}: idle {idle * 1000:g} ms after each burst"
    if scale:
        said += f" (the specification's {idle / scale:g} s, scaled)"
    return said
