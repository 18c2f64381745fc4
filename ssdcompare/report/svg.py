"""Charts for the report, drawn as inline SVG: small, sharp at any zoom, quick to make
(a thousand panels take well under a second), and every point says its figures on hover.

Readable in greyscale and by colour-blind readers: every device has its own colour (Okabe-Ito
palette), marker shape and dash pattern (colours and markers come round again after 8 devices,
dashes after 7, so the first 56 differ in something). CPU- or host-bound points are drawn
hollow inside a black ring with a cross. Legends are not drawn inside plots (they would cover
data): the report shows one legend above its charts, made by `legend`, and a chart's own keys
(its line styles, hollow and crossed points, targets) beside it, made by `keys`.

`svg` draws a chart spec (ssdcompare.report.chartspec) and returns SVG markup, or None when
there is nothing it can draw. Values that are missing, or not positive on a log axis, are
left out; log axes are used only for values that are positive by nature (latency, queue
depth, block size).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

from ssdcompare.report.chartspec import (
    Axis,
    Band,
    Cell,
    Guide,
    Heatmap,
    Key,
    Knee,
    LineChart,
    Mark,
    Series,
    Spec,
    Target,
    TargetMark,
)

# Okabe-Ito colours, distinct for the common colour-vision deficiencies
# (the eighth, Okabe-Ito's black, is a dark grey: black rings mark CPU-bound points)
COLOURS = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#5A5A5A"]
MARKERS = ["circle", "square", "triangle", "diamond", "down", "plus", "cross", "star"]
# seven patterns against eight colours and markers: no two of the first 56 devices look alike
DASHES = ["", "6 3", "2 2", "8 3 2 3", "4 1", "1 3", "10 2"]

# What limited a result looks the same in the report's tables and in its charts: a CPU- or
# host-bound result on grey, a disturbed one under yellow stripes (2 px of every 7, at 45°)
BOUND_GREY = "#d9d9d9"
DISTURBED_STRIPE = "#e3b844"

# one chart's drawing space: the page scales it to the width it has (its viewBox keeps the
# proportions); its title is the page's, above it, where a long one wraps instead of being cut
WIDTH, HEIGHT = 400, 250
_LEFT, _RIGHT, _TOP, _BOTTOM = 58, 16, 10, 38


def style(index: int) -> tuple[str, str, str]:
    """A device's colour, marker and dash pattern, by its position in the report."""
    return (
        COLOURS[index % len(COLOURS)],
        MARKERS[index % len(MARKERS)],
        DASHES[index % len(DASHES)],
    )


def device_styles(count: int) -> str:
    """The page's style rules for the first `count` devices' lines and markers: a chart names
    a device by its class (`d2`), and its colour and dash are said once for the page, not on
    every line and every group of markers of a thousand charts."""
    rules = []
    for index in range(count):
        colour, _, dash = style(index)
        dashed = f";stroke-dasharray:{dash}" if dash else ""
        rules.append(f"svg.chart path.d{index}{{stroke:{colour}{dashed}}}"
                     f"svg.chart g.d{index}{{fill:{colour}}}")  # fmt: skip
    return "\n".join(rules)


def _forward(scale: str, value: float) -> float:
    if scale == "log10":
        return math.log10(value)
    if scale == "log2":
        return math.log2(value)
    if scale == "nines":  # 90 % -> 1, 99 % -> 2, 99.9 % -> 3
        return -math.log10(max(1 - value / 100, 1e-7))
    return value


def drawable(scale: str, value: float) -> bool:
    """Whether a value can be drawn on an axis of `scale`: a number, positive on a log axis."""
    if value is None or isinstance(value, bool) or not math.isfinite(value):
        return False
    return value > 0 if scale in ("log10", "log2") else True


def _nice_step(span: float, count: int = 5) -> float:
    raw = span / max(count, 1)
    power = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    for factor in (1, 2, 2.5, 5, 10):
        if raw <= factor * power:
            return factor * power
    return 10 * power


def _ticks(axis: Axis, low: float, high: float, data: Sequence[float]) -> list[float]:
    if axis.at_data:
        values = sorted(set(data))
        while len(values) > 9:  # every other one: labels must not run into each other
            values = values[::2]
        return values
    if axis.scale == "nines":
        # the last nines sit close together: 99.9999 would run into 99.999's label
        return [p for p in (50, 90, 99, 99.9, 99.99, 99.999) if low <= p <= high]
    if axis.scale == "log2":
        first, last = math.ceil(math.log2(low)), math.floor(math.log2(high))
        return [2.0**k for k in range(first, last + 1)][-9:] or [low]
    if axis.scale == "log10":
        first, last = math.floor(math.log10(low)), math.ceil(math.log10(high))
        decades = [10.0**k for k in range(first, last + 1)]
        if last - first <= 2:  # a narrow range: 2 and 5 within each decade as well
            decades = sorted(d * m for d in decades for m in (1, 2, 5))
        return [d for d in decades if low <= d <= high * 1.0001] or [low]
    step = _nice_step(high - low) if high > low else max(abs(high), 1.0)
    start = math.floor(low / step) * step
    return [
        start + i * step
        for i in range(int((high - start) / step + 1.0001) + 1)
        if low - 1e-9 <= start + i * step <= high + 1e-9
    ]


def _range(axis: Axis, values: list[float]) -> tuple[float, float]:
    low, high = min(values), max(values)
    if axis.scale == "nines":
        return 0.0, max(high, 99.0)
    if axis.scale in ("log10", "log2"):
        if low == high:
            return low / 2, high * 2
        pad = (high / low) ** 0.05  # points at the ends keep clear of the axes' labels
        return low / pad, high * pad
    if axis.zero:
        low = min(low, 0.0)
    if low == high:
        return (low - 1, high + 1) if low else (0.0, 1.0)
    pad = (high - low) * 0.04
    return (low if axis.zero and low == 0 else low - pad), high + pad


def number(value: float) -> str:
    """A tick value, short: 950, 1.2k, 35k, 1.5M."""
    size = abs(value)
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if size >= limit:
            return f"{value / limit:.3g}{suffix}"
    return f"{value:.3g}"


class _Plot:
    """The coordinate system of one chart: data values to pixels."""

    def __init__(
        self, x: Axis, y: Axis, xs: list[float], ys: list[float], width: int, height: int
    ) -> None:
        self.x, self.y = x, y
        self.width, self.height = width, height
        x_low, x_high, self.x_ticks = axis_layout(x, xs)
        y_low, y_high, self.y_ticks = axis_layout(y, ys, vertical=True)
        self.x_range, self.y_range = (x_low, x_high), (y_low, y_high)
        # each axis's ends on its own scale, for every point of the chart
        self._x_ends = (_forward(x.scale, x_low), _forward(x.scale, x_high))
        self._y_ends = (_forward(y.scale, y_low), _forward(y.scale, y_high))

    def px(self, value: float) -> float:
        low, high = self._x_ends
        share = (_forward(self.x.scale, value) - low) / (high - low) if high > low else 0.5
        if self.x.reverse:
            share = 1 - share
        return _LEFT + share * (self.width - _LEFT - _RIGHT)

    def py(self, value: float) -> float:
        low, high = self._y_ends
        share = (_forward(self.y.scale, value) - low) / (high - low) if high > low else 0.5
        return self.height - _BOTTOM - share * (self.height - _TOP - _BOTTOM)


def _marker(
    kind: str, x: float, y: float, colour: str, r: float = 3.2, filled: bool = True
) -> str:
    """A device's marker; `filled` False leaves its fill to the group it is drawn in."""
    at = f'fill="{colour}"' if filled else ""
    if kind == "circle":
        return f'<circle cx="{x:.0f}" cy="{y:.0f}" r="{r}" {at}'.rstrip() + "/>"
    if kind == "square":  # as a path: a marker is drawn for every point of every chart
        side = f"{2 * r:g}"
        return f'<path d="M{x - r:.0f} {y - r:.0f}h{side}v{side}h-{side}z" {at}'.rstrip() + "/>"
    shapes = {
        "triangle": [(0, -1.2), (1.1, 0.8), (-1.1, 0.8)],
        "down": [(0, 1.2), (1.1, -0.8), (-1.1, -0.8)],
        "diamond": [(0, -1.3), (1.1, 0), (0, 1.3), (-1.1, 0)],
        "star": [
            (0, -1.4),
            (0.4, -0.4),
            (1.4, -0.4),
            (0.6, 0.3),
            (0.9, 1.3),
            (0, 0.7),
            (-0.9, 1.3),
            (-0.6, 0.3),
            (-1.4, -0.4),
            (-0.4, -0.4),
        ],
    }
    if kind in shapes:  # corners rounded to pixels, each drawn from the one before
        corners = [(round(x + dx * r), round(y + dy * r)) for dx, dy in shapes[kind]]
        steps = " ".join(f"{b[0] - a[0]} {b[1] - a[1]}"
                         for a, b in zip(corners, corners[1:], strict=False))  # fmt: skip
        return f'<path d="M{corners[0][0]} {corners[0][1]}l{steps}z" {at}'.rstrip() + "/>"
    if kind == "plus":
        return (
            f'<path d="M{x - r:.0f} {y:.0f}h{2 * r}M{x:.0f} {y - r:.0f}v{2 * r}" '
            f'stroke="{colour}" stroke-width="2"/>'
        )
    return (
        f'<path d="M{x - r:.0f} {y - r:.0f}l{2 * r} {2 * r}M{x - r:.0f} {y + r:.0f}'
        f'l{2 * r} {-2 * r}" stroke="{colour}" stroke-width="2"/>'
    )


def _bound_mark(x: float, y: float) -> str:
    """A CPU- or host-bound point: a black ring with a cross, over the device's marker."""
    return (
        f'<circle cx="{x:.0f}" cy="{y:.0f}" r="7" fill="none" stroke="#000" '
        f'stroke-width="1.3"/><path d="M{x - 3.5:.0f} {y - 3.5:.0f}l7 7M{x - 3.5:.0f} '
        f'{y + 3.5:.0f}l7 -7" stroke="#000" stroke-width="1.3"/>'
    )


def svg(spec: Spec, shared: SharedParts | None = None) -> str | None:
    """A chart spec drawn as SVG markup, or None when it has nothing to draw; the parts it
    shares with other charts placed from `shared` (written where they are without it)."""
    if isinstance(spec, Heatmap):
        return heatmap(spec)
    return line_chart(spec, shared=shared)


def line_chart(chart: LineChart, width: int = WIDTH, height: int = HEIGHT,
               shared: SharedParts | None = None) -> str | None:  # fmt: skip
    """One chart of lines, one (or two, one thin) per device, with its marks (vertical dashed
    lines) and knees (hollow diamonds). None when no point can be drawn. Its axes are placed
    from `shared` (SharedParts), or written in it without."""
    kept = drawable_points(chart)
    if not kept:
        return None
    x, y = chart.x, chart.y
    plot = _Plot(x, y, *chart_extent(chart, kept), width, height)
    out = [_frame(plot, chart.title, shared if shared is not None else _Inline())]
    out += [_band(plot, band) for band in chart.bands]
    out += [_mark(plot, mark) for mark in chart.marks if drawable(x.scale, mark.x)]
    out += [_target(plot, target) for target in chart.targets if drawable(y.scale, target.y)]
    out += [_guide(plot, guide) for guide in chart.guides if _guide_drawable(chart, guide)]
    lines, markers = [], []  # every line first, every marker over them
    for line, good in kept:
        lines.append(_line_path(plot, line, good))
        markers.append(_points(plot, line, good))
    # colours, dashes, fill and stroke width come from the page's style (one rule each, not an
    # attribute on every line: device_styles)
    out.append(f'<g class="lines">{"".join(lines)}</g>{"".join(markers)}')
    out += [_knee(plot, knee) for knee in chart.knees
            if drawable(x.scale, knee.x) and drawable(y.scale, knee.y)]  # fmt: skip
    out += [_target_mark(plot, mark) for mark in chart.target_marks
            if drawable(x.scale, mark.x) and drawable(y.scale, mark.y)]  # fmt: skip
    out.append("</svg>")
    return "".join(out)


def drawable_points(chart: LineChart) -> list[tuple[Series, list[int]]]:
    """Each series that has a point to draw, with the positions of those points in the
    order of x: missing values, and values not positive on a log axis, are left out."""
    kept: list[tuple[Series, list[int]]] = []
    for line in chart.series:
        good = [
            i
            for i, (a, b) in enumerate(zip(line.xs, line.ys, strict=True))
            if drawable(chart.x.scale, a) and drawable(chart.y.scale, b)
        ]
        if good:
            kept.append((line, sorted(good, key=lambda i: line.xs[i])))
    return kept


def point_extent(kept: list[tuple[Series, list[int]]], y: Axis) -> tuple[list[float], list[float]]:
    """The x and y values the axes must hold: the points, and their min-max bars."""
    xs = [line.xs[i] for line, good in kept for i in good]
    ys = [line.ys[i] for line, good in kept for i in good]
    for line, good in kept:
        for values in (line.lows, line.highs):
            if values is not None:
                ys += [values[i] for i in good if drawable(y.scale, values[i])]
    return xs, ys


def chart_extent(
    chart: LineChart, kept: list[tuple[Series, list[int]]]
) -> tuple[list[float], list[float]]:
    """The x and y values a chart's axes must hold: its points and bars (point_extent), its
    targets' latencies and the devices' marks on them."""
    xs, ys = point_extent(kept, chart.y)
    ys += [t.y for t in chart.targets if drawable(chart.y.scale, t.y)]
    ys += [v for band in chart.bands for v in (band.y0, band.y1)
           if v is not None and drawable(chart.y.scale, v)]  # fmt: skip
    for guide in chart.guides:
        if _guide_drawable(chart, guide):
            xs += [guide.x0, guide.x1]
            ys += [guide.y0, guide.y1]
    for mark in chart.target_marks:
        if drawable(chart.x.scale, mark.x) and drawable(chart.y.scale, mark.y):
            xs.append(mark.x)
            ys.append(mark.y)
    return xs, ys


def axis_layout(
    axis: Axis, values: list[float], vertical: bool = False
) -> tuple[float, float, list[float]]:
    """An axis's range (low, high) and ticks for `values`, as every renderer draws it."""
    low, high = _range(axis, values)
    ticks = _ticks(axis, low, high, values)
    if vertical and axis.scale == "linear" and ticks:  # the top tick is the top of the axis
        high = max(high, ticks[-1])
    return low, high, ticks


def _mark(plot: _Plot, mark: Mark) -> str:
    """A vertical dashed line across the plot, in the device's colour."""
    px = plot.px(mark.x)
    return (
        f'<line x1="{px:.0f}" x2="{px:.0f}" y1="{_TOP}" y2="{plot.height - _BOTTOM}" '
        f'stroke="{style(mark.index)[0]}" stroke-dasharray="4 3">'
        f"<title>{escape(mark.tip)}</title></line>"
    )


def _knee(plot: _Plot, knee: Knee) -> str:
    """A hollow diamond around a point, in the device's colour."""
    px, py = plot.px(knee.x), plot.py(knee.y)
    return (
        f'<polygon points="{px:.0f},{py - 9:.0f} {px + 8:.0f},{py:.0f} '
        f'{px:.0f},{py + 9:.0f} {px - 8:.0f},{py:.0f}" fill="none" '
        f'stroke="{style(knee.index)[0]}" stroke-width="1.8">'
        f"<title>{escape(knee.tip)}</title></polygon>"
    )


# a latency target: dash-dotted, dark, under the lines
_TARGET = 'stroke="#333" stroke-width="1.2" stroke-dasharray="7 3 1.5 3"'
# its name at its right end, readable over the lines and points beneath it
_HALO = 'text-anchor="end" paint-order="stroke" stroke="#fff" stroke-width="3"'


def _target(plot: _Plot, target: Target) -> str:
    """A horizontal dash-dotted line across the plot at the target, named at its right end."""
    py = plot.py(target.y)
    right = plot.width - _RIGHT
    return (
        f'<g class="target"><title>{escape(target.tip)}</title>'
        f'<path d="M{_LEFT} {py:.0f}H{right}" {_TARGET}/>'
        f'<text x="{right - 3}" y="{py - 4:.0f}" {_HALO}>{escape(target.label)}</text>'
        "</g>"
    )


def _band(plot: _Plot, band: Band) -> str:
    """A shaded area, cut to the plot (a band reaching past the axes' range stops at them)."""
    x_low, x_high = plot.x_range
    left, right = max(band.x0, x_low), min(band.x1, x_high)
    if not (drawable(plot.x.scale, left) and drawable(plot.x.scale, right)) or right <= left:
        return ""
    top, bottom = float(_TOP), float(plot.height - _BOTTOM)
    if band.y1 is not None and drawable(plot.y.scale, band.y1):
        top = min(max(plot.py(band.y1), top), bottom)
    if band.y0 is not None and drawable(plot.y.scale, band.y0):
        bottom = max(min(plot.py(band.y0), bottom), top)
    x0, x1 = sorted((plot.px(left), plot.px(right)))
    return (f'<rect class="band" x="{x0:.1f}" y="{top:.1f}" width="{x1 - x0:.1f}" '
            f'height="{bottom - top:.1f}" fill="{band.shade}" fill-opacity="{band.opacity:g}">'
            f"<title>{escape(band.tip)}</title></rect>")  # fmt: skip


def _guide_drawable(chart: LineChart, guide: Guide) -> bool:
    return all(drawable(chart.x.scale, v) for v in (guide.x0, guide.x1)) and all(
        drawable(chart.y.scale, v) for v in (guide.y0, guide.y1))  # fmt: skip


# a guide: dark grey, over the bands and under the device's line and points
GUIDE_INK = "#333"


def _guide(plot: _Plot, guide: Guide) -> str:
    """A straight dark grey line between two points, with its tooltip."""
    dash = f' stroke-dasharray="{guide.dash}"' if guide.dash else ""
    return (f'<path class="guide" d="M{plot.px(guide.x0):.1f} {plot.py(guide.y0):.1f}'
            f'L{plot.px(guide.x1):.1f} {plot.py(guide.y1):.1f}" stroke="{GUIDE_INK}" '
            f'stroke-width="1.4" fill="none"{dash}>'
            f"<title>{escape(guide.tip)}</title></path>")  # fmt: skip


def _target_mark(plot: _Plot, mark: TargetMark) -> str:
    """A device's answer on a target: a hollow diamond in its colour, and a dotted line down
    to the x axis, where its IOPS are read."""
    px, py = plot.px(mark.x), plot.py(mark.y)
    colour = style(mark.index)[0]
    return (
        f'<g class="answer"><title>{escape(mark.tip)}</title>'
        f'<path d="M{px:.0f} {py:.0f}V{plot.height - _BOTTOM}" stroke="{colour}" '
        f'stroke-dasharray="1.5 2.5"/>'
        f'<polygon points="{px:.0f},{py - 7:.0f} {px + 6:.0f},{py:.0f} {px:.0f},{py + 7:.0f} '
        f'{px - 6:.0f},{py:.0f}" fill="#fff" stroke="{colour}" stroke-width="2"/></g>'
    )


def _points(plot: _Plot, line: Series, good: list[int]) -> str:
    """A series' markers, bars, bound marks and tooltips, in one group of its colour."""
    colour, marker, _ = style(line.index)
    # a line of one point is no line: its marker is drawn whatever the line asks
    shaped = line.markers or len(good) == 1
    if not (shaped or line.tips or line.lows is not None):  # a bare line: its bound marks
        good = [i for i in good if i < len(line.bound) and line.bound[i]]
    drawn = [_point(plot, line, i, colour, marker if shaped else "") for i in good]
    drawn = [point for point in drawn if point]
    # the device's colour from the page's style (device_styles), once for all its markers
    return f'<g class="d{line.index}">{"".join(drawn)}</g>' if drawn else ""


def _point(plot: _Plot, line: Series, i: int, colour: str, marker: str) -> str:
    """Point `i` of a series: its marker (none for `marker` ""), its min-max bar, its bound
    mark and its tooltip."""
    px, py = plot.px(line.xs[i]), plot.py(line.ys[i])
    bar = _bar(plot, line, i, px, colour)
    size = 2.2 if line.thin else 3.2
    shape = _shape(line, i, marker, px, py, colour, size)
    bound = _bound_mark(px, py) if i < len(line.bound) and line.bound[i] else ""
    tip = f"<title>{escape(line.tips[i])}</title>" if i < len(line.tips) else ""
    if shape and not (bar or bound):  # the tooltip inside the marker: no group needed
        return shape.replace("/>", f">{tip}</{shape[1 : shape.index(' ')]}>", 1)
    if bar or shape or bound or tip:
        return f"<g>{tip}{bar}{shape}{bound}</g>"
    return ""


def _shape(line: Series, i: int, marker: str, px: float, py: float, colour: str,
           size: float) -> str:  # fmt: skip
    """Point `i`'s marker: the device's, filled by its group, or hollow (white inside its
    colour); a point drawn apart is a cross in its colour; "" without a marker."""
    if _apart(line, i):
        return _marker("cross", px, py, colour, size + 1.3).replace("<path", '<path class="apart"')
    if not marker:
        return ""
    if not line.hollow:
        return _marker(marker, px, py, colour, size, filled=False)
    shape = _marker(marker, px, py, colour, size, filled=False)
    open_ = f' class="hollow" fill="#fff" stroke="{colour}" stroke-width="1.5"'
    return shape.replace(" ", open_ + " ", 1) if 'stroke="' not in shape else shape


def _apart(line: Series, i: int) -> bool:
    """Whether point `i` of a series is drawn apart (a cross, off the line)."""
    return i < len(line.apart) and line.apart[i]


def _bar(plot: _Plot, line: Series, i: int, px: float, colour: str) -> str:
    """Point `i`'s min-max bar, or "" without one."""
    if line.lows is None or line.highs is None:
        return ""
    low, high = line.lows[i], line.highs[i]
    scale = plot.y.scale
    if not (drawable(scale, low) and drawable(scale, high) and high > low):
        return ""
    return (
        f'<line x1="{px:.0f}" x2="{px:.0f}" y1="{plot.py(low):.0f}" '
        f'y2="{plot.py(high):.0f}" stroke="{colour}"/>'
    )


def _line_path(plot: _Plot, line: Series, good: list[int]) -> str:
    """A device's line through its points: a path from the first point, each step drawn
    from the one before (shorter than absolute points: a chart is sent as text). Points
    drawn apart are not on it; a series not joined has none ("")."""
    good = [i for i in good if not _apart(line, i)]
    if not good or not line.joined:
        return ""
    points = [(round(plot.px(line.xs[i])), round(plot.py(line.ys[i]))) for i in good]
    steps = " ".join(f"{b[0] - a[0]} {b[1] - a[1]}"
                     for a, b in zip(points, points[1:], strict=False))  # fmt: skip
    # colour and dash from the page's style by the device's class; a thin line is dashed alike
    # for every device (the page's style too)
    kind = f"d{line.index} thin" if line.thin else f"d{line.index}"
    tip = f"<title>{escape(line.tip)}</title>" if line.tip else ""
    head = f'<path d="M{points[0][0]} {points[0][1]}' + (f"l{steps}" if steps else "")
    # a line style of its own beats the device's dash from the page's style
    own = f' style="stroke-dasharray:{line.dash or "none"}"' if line.dash is not None else ""
    return f'{head}" class="{kind}"{own}' + (f">{tip}</path>" if tip else "/>")


class SharedParts:
    """Parts that many charts draw alike (an axis with its grid lines, ticks and label), each
    written once for the page (`definitions`: an SVG of definitions placed before the charts)
    and placed in a chart by a reference to it. A part carries its own colours and
    alignment: the page's style does not reach into a referenced part."""

    def __init__(self) -> None:
        self._ids: dict[str, str] = {}  # a part's markup -> its id

    def place(self, part: str) -> str:
        """A reference to `part`, which is defined once however many charts place it."""
        found = self._ids.setdefault(part, f"a{len(self._ids)}")
        return f'<use href="#{found}"/>'

    def definitions(self) -> str:
        """Every part placed so far, as one SVG that draws nothing itself; "" without any."""
        if not self._ids:
            return ""
        parts = "".join(f'<g id="{key}">{part}</g>' for part, key in self._ids.items())
        return f'<svg class="parts" aria-hidden="true"><defs>{parts}</defs></svg>'


class _Inline(SharedParts):
    """Parts written where they are placed: a chart drawn on its own, outside a report."""

    def place(self, part: str) -> str:
        return part


def _frame(plot: _Plot, title: str, shared: SharedParts) -> str:
    """The chart's box, grid, ticks and axis labels, an axis at a time (charts of the same
    depths, block sizes or seconds share theirs: `shared`). Its title is the <title> (the
    chart's name for screen readers and on hover); the page shows it above the chart."""
    w, h = plot.width, plot.height
    return (
        f'<svg class="chart" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img">'
        f"<title>{escape(title)}</title>{shared.place(_x_axis(plot))}"
        f"{shared.place(_y_axis(plot))}"
    )


_GRID = 'stroke="#e6e6e6" fill="none"'
_TICKS = 'fill="#333"'
_LABEL = 'text-anchor="middle" fill="#5f5f5f"'


def _x_axis(plot: _Plot) -> str:
    """The plot's box, its vertical grid lines (one path), the x ticks' labels in a group
    that places them, and the axis's label."""
    w, h = plot.width, plot.height
    write = plot.x.ticks or (str if plot.x.scale == "nines" else number)
    grid, below = [], []
    for value in plot.x_ticks:
        px = plot.px(value)
        grid.append(f"M{px:.0f} {_TOP}V{h - _BOTTOM}")
        below.append(f'<text x="{px:.0f}">{escape(write(value))}</text>')
    return (
        f'<rect x="{_LEFT}" y="{_TOP}" width="{w - _LEFT - _RIGHT}" '
        f'height="{h - _TOP - _BOTTOM}" fill="#fff" stroke="#999"/>'
        f'<path d="{"".join(grid)}" {_GRID}/>'
        f'<g text-anchor="middle" {_TICKS} transform="translate(0 {h - _BOTTOM + 14})">'
        f"{''.join(below)}</g>"
        f'<text x="{(w + _LEFT - _RIGHT) / 2:.0f}" y="{h - 6}" {_LABEL}>'
        f"{escape(plot.x.label)}</text>"
    )


def _y_axis(plot: _Plot) -> str:
    """The horizontal grid lines (one path), the y ticks' labels and the axis's label."""
    w, h = plot.width, plot.height
    write = plot.y.ticks or number
    grid, beside = [], []
    for value in plot.y_ticks:
        py = plot.py(value)
        grid.append(f"M{_LEFT} {py:.0f}H{w - _RIGHT}")
        beside.append(f'<text y="{py:.0f}">{escape(write(value))}</text>')
    return (
        f'<path d="{"".join(grid)}" {_GRID}/>'
        f'<g text-anchor="end" {_TICKS} transform="translate({_LEFT - 5} 4)">'
        f"{''.join(beside)}</g>"
        f'<text transform="translate(13 {(h - _BOTTOM + _TOP) / 2:.0f}) rotate(-90)" '
        f"{_LABEL}>{escape(plot.y.label)}</text>"
    )


def _fit(text: str, width: float, per_character: float = 7.0) -> str:
    """`text` cut to fit `width` pixels (`per_character` px a character), with "…"."""
    most = int(width / per_character)
    return text if len(text) <= most else text[: most - 1] + "…"


def legend(labels: Sequence[str], bound: bool = True, extra: Sequence[str] = ()) -> str:
    """The devices' colours, markers and dashes as one HTML line (with the marks for CPU- or
    host-bound points and the knee), shown above a section's charts."""
    items = []
    for index, label in enumerate(labels):
        colour, marker, dash = style(index)
        dashed = f' stroke-dasharray="{dash}"' if dash else ""
        items.append(
            f'<span class="key"><svg width="34" height="12" viewBox="0 0 34 12">'
            f'<line x1="1" x2="33" y1="6" y2="6" stroke="{colour}" stroke-width="1.8"'
            f"{dashed}/>{_marker(marker, 17, 6, colour)}</svg>{escape(label)}</span>"
        )
    if bound:
        items.append(
            '<span class="key"><svg width="18" height="18" viewBox="0 0 18 18">'
            + _bound_mark(9, 9)
            + "</svg>CPU- or host-bound (measures the host)</span>"
        )
    items += [f'<span class="key">{escape(text)}</span>' for text in extra]
    return '<div class="keys">' + "".join(items) + "</div>"


def keys(chart: LineChart) -> str:
    """A chart's own legend (its `keys`: line styles, hollow and crossed points, targets) as
    one HTML line, shown with the chart; "" without keys."""
    if not chart.keys:
        return ""
    items = [
        f'<span class="key"><svg width="34" height="14" viewBox="0 0 34 14">'
        f"{_key_drawing(key)}</svg>{escape(key.text)}</span>"
        for key in chart.keys
    ]
    return '<div class="keys chart-keys">' + "".join(items) + "</div>"


# a key is drawn in grey: the devices' colours are the main legend's
_KEY_INK = 'stroke="#555" stroke-width="1.8"'


def _key_drawing(key: Key) -> str:
    """The little drawing of one key."""
    if key.kind == "line":
        dash = f' stroke-dasharray="{key.dash}"' if key.dash else ""
        return f'<path d="M1 7H33" {_KEY_INK}{dash}/>'
    if key.kind == "target":
        return f'<path d="M1 7H33" {_TARGET}/>'
    if key.kind == "answer":
        return f'<polygon points="17,1 23,7 17,13 11,7" fill="#fff" {_KEY_INK}/>'
    if key.kind == "apart":
        return _marker("cross", 17, 7, "#555", 4.5)
    if key.kind == "band":
        return f'<rect x="1" y="1" width="32" height="12" fill="{key.shade or BOUND_GREY}"/>'
    fill = "#fff" if key.kind == "hollow" else "#555"
    return f'<circle cx="17" cy="7" r="3.6" fill="{fill}" {_KEY_INK}/>'


def heatmap(spec: Heatmap) -> str | None:
    """Ratios to the baseline as coloured cells: rows are jobs, columns devices. Blue is
    faster than the baseline, orange slower, white even. A cell's `limit` marks a result
    that says little about the drives as the report's tables do: "bound" (CPU- or
    host-bound) on grey, "disturbed" under the yellow stripes. A missing result is left
    empty. None without any cell.

    Drawn at its own size (its labels at 12 px, its figures at 11 px): it is as tall as its
    jobs, and the page lets it scroll rather than shrink it."""
    rows, columns = spec.rows, spec.columns
    if not spec.cells or not rows or not columns:
        return None
    # a column as wide as its heading (up to 24 characters), so headings never run together
    cell_w = max(64, round(min(24, max(len(c) for c in columns)) * _HEADING_PX) + 14)
    left = min(12 + round(_LABEL_PX * max(len(r) for r in rows)), 330)
    width = left + cell_w * len(columns) + 8
    height = _HEAT_TOP + _ROW_PX * len(rows) + 4
    out = [
        f'<svg class="chart heatmap" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img">'
        f"<title>{escape(spec.title)}</title>"
        # the tables' hatch: stripes of 2 px every 7, at 45 degrees
        '<defs><pattern id="disturbed" width="7" height="7" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="7" height="7" fill="#fff"/>'
        f'<rect width="2" height="7" fill="{DISTURBED_STRIPE}"/></pattern></defs>'
    ]
    for c, name in enumerate(columns):
        x = left + c * cell_w + cell_w / 2
        shown = _fit(name, cell_w - 8, _HEADING_PX)
        out.append(
            f'<text x="{x:.0f}" y="{_HEAT_TOP - 8}" class="head">{escape(shown)}'
            + (f"<title>{escape(name)}</title>" if shown != name else "")
            + "</text>"
        )
    out += [_heat_row(spec, r, left, cell_w) for r in range(len(rows))]
    out.append("</svg>")
    return "".join(out)


def _heat_row(spec: Heatmap, r: int, left: int, cell_w: int) -> str:
    """Row `r` of a heatmap: its job's name and its cells."""
    name = spec.rows[r]
    shown = _fit(name, left - 10, _LABEL_PX)
    label = escape(shown) + (f"<title>{escape(name)}</title>" if shown != name else "")
    # a row's cells are placed by its group: each cell names only its column
    row = [f'<g transform="translate(0 {_HEAT_TOP + r * _ROW_PX})">'
           f'<text x="{left - 6}" y="14" class="job">{label}</text>']  # fmt: skip
    for c in range(len(spec.columns)):
        found = spec.cells.get((r, c))
        if found is not None:
            row.append(_heat_cell(Cell(*found), left + c * cell_w, cell_w))
    return "".join(row) + "</g>"


def _heat_cell(cell: Cell, x: int, cell_w: int) -> str:
    """One heatmap cell at `x`: its colour or mark, its figure and its tooltip."""
    ratio, tip, limit = cell
    fill = (BOUND_GREY if limit == "bound" else "url(#disturbed)"
            if limit == "disturbed" else ratio_colour(ratio))  # fmt: skip
    text = f"{ratio:.2f}" if ratio is not None and math.isfinite(ratio) else ""
    # figures have a white halo (clear of the hatch) unless on grey or a dark colour
    kind = ' class="b"' if limit == "bound" else ""
    if not limit and _strong(ratio):
        kind = ' class="d"'
    # the tooltip on the cell; its figure lets the pointer through to it
    return (
        f'<rect x="{x}" width="{cell_w - 1}" height="{_ROW_PX - 1}" '
        f'fill="{fill}"><title>{escape(tip)}</title></rect>'
        f'<text x="{x + cell_w / 2:.0f}" y="14"{kind}>{text}</text>'
    )


# the heatmap's sizes: a row, and the width of a character of a job (12 px) and of a heading
_ROW_PX = 20
_HEAT_TOP = 26  # the column headings above the rows
_LABEL_PX = 7.0
_HEADING_PX = 7.6


def _strong(ratio: float | None) -> bool:
    """A ratio whose colour is dark enough to need white figures on it."""
    return ratio is not None and ratio > 0 and math.isfinite(ratio) and abs(math.log2(ratio)) > 0.6


def ratio_colour(ratio: float | None) -> str:
    """A ratio's colour in the heatmap: blue for faster than the baseline, orange for slower,
    by the log of the ratio; white within 2 %. Colour-blind safe (blue against orange)."""
    if ratio is None or not math.isfinite(ratio) or ratio <= 0:
        return "#ffffff"
    strength = min(abs(math.log2(ratio)) / 1.0, 1.0)  # a factor of 2 is the full colour
    if strength < 0.03:
        return "#ffffff"
    far = (33, 102, 172) if ratio > 1 else (214, 96, 0)  # blue / orange
    mix = [round(255 + (f - 255) * (0.15 + 0.85 * strength)) for f in far]
    return "#{:02x}{:02x}{:02x}".format(*mix)
