"""A chart as plain data: what to draw, not how. The report's chart choice (chartkinds) builds
these; svg.py draws them as SVG for the report, figure.py as matplotlib Figures.

A `LineChart` holds two axes, one or more `Series` (a device's line, its points' tooltips and
CPU- or host-bound marks), vertical `Mark`s (write cliffs) and `Knee`s (saturation knees);
a latency-vs-load chart also horizontal `Target`s (latency targets), each device's
`TargetMark` on them, and `Key`s: its own legend of what its line styles and points mean. A
PTS steady-state chart also has shaded `Band`s (the measurement window, the ranges around its
mean) and `Guide`s (the window's mean, its least-squares line).
A `Heatmap` holds rows (jobs), columns (devices) and a `Cell` per measured pair: the ratio to
the baseline and what limited it. Devices are named by their position (`index`), which picks
their colour, marker and dash (charts.style) the same way in every renderer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import NamedTuple

# the scales an axis can have: "nines" spreads percentiles (90, 99, 99.9 ... equally apart)
SCALES = ("linear", "log2", "log10", "nines")


@dataclass
class Axis:
    """An axis: its label, scale (one of SCALES) and how its tick values are written."""

    label: str
    scale: str = "linear"  # linear, log10, log2 or nines (percentiles: 90, 99, 99.9 ...)
    ticks: Callable[[float], str] | None = None  # how a tick value is written
    reverse: bool = False
    zero: bool = False  # a linear axis that starts at 0
    at_data: bool = False  # ticks at the data's own values (queue depths, block sizes)


@dataclass
class Series:
    """One device's line: points (x, y), optional min-max bars, bound flags and tooltips."""

    index: int  # the device's position: its colour, marker and dash
    xs: list[float]
    ys: list[float]
    # a note per point (its figures, a limit); the device is the series' own (label, index)
    tips: list[str] = field(default_factory=list)
    bound: list[bool] = field(default_factory=list)  # CPU- or host-bound points
    lows: list[float] | None = None
    highs: list[float] | None = None
    thin: bool = False  # a second line of the same device (e.g. p99 beside the mean)
    markers: bool = True
    tip: str = ""  # the whole line's tooltip (lines drawn without markers have no others)
    label: str = ""  # the device's label, for a legend
    name: str = ""  # what the line is of beside its device ("p99"), for a legend
    # a dash pattern of its own, the same for every device (a percentile's), instead of the
    # device's; "" is solid
    dash: str | None = None
    hollow: bool = False  # its markers drawn hollow (closed-loop runs beside paced ones)
    joined: bool = True  # False: points only, no line through them
    # points drawn apart, as a cross and left out of the line (a load the run could not reach)
    apart: list[bool] = field(default_factory=list)


class Mark(NamedTuple):
    """A vertical dashed line in a device's colour at `x` (a write cliff)."""

    index: int
    x: float
    tip: str


class Knee(NamedTuple):
    """A hollow diamond in a device's colour at (x, y): a saturation knee."""

    index: int
    x: float
    y: float
    tip: str


class Target(NamedTuple):
    """A horizontal dash-dotted line across the plot at `y`: a latency target, named by
    `label` at its right end."""

    y: float
    label: str
    tip: str


class TargetMark(NamedTuple):
    """A device's answer at a target: a hollow diamond in its colour at (x, y), with a dotted
    line down to the x axis (where its figure is read)."""

    index: int
    x: float
    y: float
    tip: str


class Key(NamedTuple):
    """One entry of a chart's own legend: what is drawn (`kind`: "line" with its `dash`,
    "point", "hollow", "apart", "target", "answer", "band" with its `shade`) and what it
    stands for."""

    kind: str
    text: str
    dash: str = ""
    shade: str = ""  # a band's colour


class Band(NamedTuple):
    """A shaded area from x `x0` to `x1`, between y `y0` and `y1` (None: the plot's whole
    height), under the lines: a measurement window, a range around a mean. Its `shade` is a
    colour, drawn at `opacity` so that bands over each other show both."""

    x0: float
    x1: float
    y0: float | None
    y1: float | None
    shade: str
    opacity: float
    tip: str


class Guide(NamedTuple):
    """A straight dark grey line from (x0, y0) to (x1, y1) in a dash of its own ("" solid),
    over the bands and under the points: a window's mean, a line fitted through it."""

    x0: float
    y0: float
    x1: float
    y1: float
    dash: str
    tip: str


@dataclass
class LineChart:
    """A chart of lines, one (or two, one thin) per device, with marks and knees; targets
    and the devices' marks on them; its own legend (`keys`) beside the devices'."""

    title: str
    series: list[Series]
    x: Axis
    y: Axis
    marks: list[Mark] = field(default_factory=list)
    knees: list[Knee] = field(default_factory=list)
    targets: list[Target] = field(default_factory=list)
    target_marks: list[TargetMark] = field(default_factory=list)
    keys: list[Key] = field(default_factory=list)
    bands: list[Band] = field(default_factory=list)
    guides: list[Guide] = field(default_factory=list)


class Cell(NamedTuple):
    """One heatmap cell: the ratio (None when unknown), its tooltip, and what limited it:
    "bound" (CPU- or host-bound), "disturbed", or "" for none."""

    ratio: float | None
    tip: str
    limit: str


@dataclass
class Heatmap:
    """Ratios to the baseline as coloured cells: rows are jobs, columns devices; a pair
    without a result has no cell."""

    title: str
    rows: list[str]
    columns: list[str]
    cells: dict[tuple[int, int], Cell]


Spec = LineChart | Heatmap


def latency_tick(value: float) -> str:
    """A latency tick (µs) in few characters: 20µs, 1ms, 2.5s."""
    for limit, unit in ((1e6, "s"), (1e3, "ms")):
        if value >= limit:
            return f"{value / limit:g}{unit}"
    return f"{value:g}µs"


def latency_axis() -> Axis:
    """The latency axis of every chart that has one: logarithmic, ticks in µs, ms, s."""
    return Axis("latency (log)", "log10", ticks=latency_tick)
