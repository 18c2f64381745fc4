"""A chart as plain data: what to draw, not how. The report's chart choice (chartkinds) builds
these; svg.py draws them as SVG for the report, figure.py as matplotlib Figures.

A `LineChart` holds two axes, one or more `Series` (a device's line, its points' tooltips and
CPU- or host-bound marks), vertical `Mark`s (write cliffs) and `Knee`s (saturation knees).
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


@dataclass
class LineChart:
    """A chart of lines, one (or two, one thin) per device, with marks and knees."""

    title: str
    series: list[Series]
    x: Axis
    y: Axis
    marks: list[Mark] = field(default_factory=list)
    knees: list[Knee] = field(default_factory=list)


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
