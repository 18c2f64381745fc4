"""The charts of a SNIA PTS test (ssdcompare.analysis.pts) as chart specs, drawn by both
renderers (svg.py for the report, figure.py for `ssdcompare.plot.steady_state` and
`ssdcompare.plot.dirth`):

- the steady-state chart of a device's group: the tracking variable per round (points and a
  line), the measurement window shaded, the window's mean as a line with bands of ±10 % and
  ±20 % around it, and the least-squares line through the window (the slope the PTS judges);
- the DIRTH chart of a device: IOPS against mean latency, a line per thread count through its
  queue depths, the PTS's 5 ms limit, and the most IOPS under it marked.
"""

from __future__ import annotations

import pandas as pd

from ssdcompare.analysis.pts import (
    DIRTH_LIMIT_US,
    DIRTH_LIMIT_WORDS,
    DirthAnswer,
    GroupRounds,
    metric_words,
)
from ssdcompare.report.chartspec import (
    Axis,
    Band,
    Guide,
    Key,
    LineChart,
    Series,
    Target,
    TargetMark,
    latency_tick,
)
from ssdcompare.report.svg import DASHES
from ssdcompare.suite.pts import METRIC_WORDS
from ssdcompare.units import format_count, format_latency

# the window, and the ranges around its mean: the same green, the closer the deeper
WINDOW_SHADE, WINDOW_OPACITY = "#0072B2", 0.07
RANGE_SHADE = "#009E73"
RANGE_OPACITY = {20: 0.10, 10: 0.16}
SLOPE_DASH = "6 3"  # the least-squares line; the mean is solid
_MARGIN = 0.4  # rounds: the shaded window reaches this far beyond its first and last round


def _shade_on_white(layers: list[tuple[str, float]]) -> str:
    """The colour bands laid over each other on white show, for a legend's swatch."""
    red, green, blue = 255.0, 255.0, 255.0
    for colour, opacity in layers:
        r, g, b = (int(colour[i : i + 2], 16) for i in (1, 3, 5))
        red, green, blue = (c + (o - c) * opacity for c, o in ((red, r), (green, g), (blue, b)))
    return "#{:02x}{:02x}{:02x}".format(*(round(c) for c in (red, green, blue)))


def _unit(metric: str) -> tuple[float, Axis]:
    """What a tracking variable's figures are divided by for the chart, and its y axis."""
    if metric == "bw":
        return 1e6, Axis("MB/s")
    if metric == "lat_mean":
        return 1.0, Axis("mean latency", ticks=latency_tick)
    return 1.0, Axis("IOPS")


def steady_chart(group: GroupRounds, index: int) -> LineChart | None:
    """A group's steady-state chart on one device (`index`: its place in the report, for its
    colour); None without a round to draw."""
    known = [(n, v) for n, v in enumerate(group.rounds, start=1) if v is not None]
    if not known:
        return None
    divisor, y = _unit(group.metric)
    window = set(group.window)
    tips = [f"round {n}: {metric_words(group.metric, v)}"
            + (" (in the measurement window)" if n in window else "")
            for n, v in known]  # fmt: skip
    what = f"{METRIC_WORDS.get(group.metric, group.metric)} of {group.track}"
    line = Series(index, [float(n) for n, _ in known], [v / divisor for _, v in known],
                  tips=tips, label=group.label, name=what)  # fmt: skip
    chart = LineChart(f"{group.label}: {group.group} ({group.words})", [line],
                      Axis("round", at_data=True, ticks=lambda v: f"{v:.0f}"), y)  # fmt: skip
    _mark_window(chart, group, divisor)
    return chart


def _mark_window(chart: LineChart, group: GroupRounds, divisor: float) -> None:
    """The window shaded, the bands around its mean, the mean and the least-squares line,
    and the keys saying what each is."""
    record = group.record
    if record is None or not record.window or record.window_mean is None:
        return
    first, last = record.window[0], record.window[-1]
    mean = record.window_mean / divisor
    left, right = first - _MARGIN, last + _MARGIN
    rounds = f"rounds {first}–{last}"
    chart.bands.append(Band(left, right, None, None, WINDOW_SHADE, WINDOW_OPACITY,
                            f"measurement window: {rounds}"))  # fmt: skip
    layers = [(WINDOW_SHADE, WINDOW_OPACITY)]
    chart.keys.append(Key("band", f"measurement window ({rounds})", shade=_shade_on_white(layers)))
    for pct in (20, 10):
        layers.append((RANGE_SHADE, RANGE_OPACITY[pct]))
        tip = f"±{pct} % of the window's mean ({(1 - pct / 100) * 100:g}–{100 + pct:g} %)"
        chart.bands.append(Band(left, right, mean * (1 - pct / 100), mean * (1 + pct / 100),
                                RANGE_SHADE, RANGE_OPACITY[pct], tip))  # fmt: skip
        chart.keys.append(Key("band", f"±{pct} % of the mean", shade=_shade_on_white(layers)))
    words = metric_words(group.metric, record.window_mean)
    chart.guides.append(Guide(first, mean, last, mean, "", f"the window's mean: {words}"))
    chart.keys.append(Key("line", "the window's mean"))
    if record.slope is not None and record.intercept is not None:
        end = record.intercept + record.slope * (last - first)
        excursion = "unknown" if record.window_slope_pct is None else (
            f"{record.window_slope_pct:.1f} %")  # fmt: skip
        tip = (f"least-squares line through the window: it moves {excursion} of the mean "
               f"(at most {group.limits.slope_pct:g} %)")  # fmt: skip
        chart.guides.append(Guide(first, record.intercept / divisor, last, end / divisor,
                                  SLOPE_DASH, tip))  # fmt: skip
        chart.keys.append(Key("line", "least-squares line (slope)", SLOPE_DASH))


def dirth_chart(points: pd.DataFrame, label: str, index: int,
                answer: DirthAnswer | None) -> LineChart | None:  # fmt: skip
    """A device's DIRTH chart from its points (window figures of its finished jobs): IOPS
    against mean latency, a line per thread count (a dash each, in the device's colour)
    through its queue depths; None without a point."""
    known = points.dropna(subset=["iops", "lat_mean_us", "numjobs", "iodepth"])
    if known.empty:
        return None
    chart = LineChart(f"{label}: IOPS against mean latency", [],
                      Axis("IOPS", zero=True), Axis("mean latency (log)", "log10",
                                                    ticks=latency_tick))  # fmt: skip
    for k, threads in enumerate(sorted(known["numjobs"].astype(int).unique())):
        mine = known[known["numjobs"] == threads].sort_values("iodepth")
        dash = DASHES[k % len(DASHES)]
        chart.series.append(Series(
            index, mine["iops"].astype(float).tolist(), mine["lat_mean_us"].astype(float).tolist(),
            tips=[f"{_threads(threads)} × QD {int(qd)}: {format_count(iops)} IOPS, "
                  f"{format_latency(lat)} mean" for qd, iops, lat in
                  mine[["iodepth", "iops", "lat_mean_us"]].to_numpy()],
            bound=[v in ("cpu", "host") for v in mine["verdict"]], label=label,
            name=_threads(threads), dash=dash))  # fmt: skip
        chart.keys.append(Key("line", _threads(threads), dash))
    limit = DIRTH_LIMIT_WORDS
    chart.targets.append(Target(DIRTH_LIMIT_US, f"{limit} mean", "the PTS's limit for a "
                                "useful mean response time"))  # fmt: skip
    chart.keys.append(Key("target", f"{limit} mean latency"))
    if answer is not None and answer.iops is not None and answer.lat_mean_us is not None:
        chart.target_marks.append(TargetMark(index, answer.iops, answer.lat_mean_us,
                                             answer.words))  # fmt: skip
        chart.keys.append(Key("answer", f"the most IOPS under {limit}"))
    return chart


def _threads(count: int) -> str:
    return f"{count} thread{'s' if count != 1 else ''}"
