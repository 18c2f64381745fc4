"""Chart specs (ssdcompare.report.chartspec) drawn as a matplotlib Figure, for notebooks and files.

The drawing follows the report's SVG charts: each device's colour, marker and dash
(charts.style), the same axes, ranges and ticks (charts.axis_layout), CPU- or host-bound
points inside a black ring with a cross, write cliffs as dashed lines, knees as hollow
diamonds, latency targets as dash-dotted lines with each device's answer a hollow diamond on
them, and a chart's own keys (line styles, hollow and crossed points) in the legend. Figures
are made as `matplotlib.figure.Figure` objects, never through pyplot's
global state, so this works without a display; matplotlib is imported only when a figure is
made, so the report and `import ssdcompare` never load it.

Every artist has a gid saying what it is: "series" (a device's line; its label is the
device's, a thin line's starts with "_"), "bars" (min-max), "bound" (the ring marks), "mark"
(a cliff), "knee", "apart" (points that could not reach their load), "target" and "answer";
"band" (a shaded area: a PTS measurement window, a range around its mean) and "guide" (a
window's mean or least-squares line); a heatmap's image holds the ratios themselves, its
marked cells are patches with the gid "bound" or "disturbed".
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ssdcompare.report import svg as charts
from ssdcompare.report.chartspec import (
    Axis,
    Band,
    Guide,
    Heatmap,
    Key,
    LineChart,
    Series,
    Spec,
    TargetMark,
)

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

# the report's marker names, as matplotlib's
MARKERS = {"circle": "o", "square": "s", "triangle": "^", "diamond": "D", "down": "v",
           "plus": "P", "cross": "X", "star": "*"}  # fmt: skip
PANEL_INCHES = (5.0, 3.4)  # one line chart
COLUMNS_UP_TO = 2  # line charts side by side in one figure
RATIO_TICKS = (0.5, 0.75, 1.0, 1.5, 2.0)  # the heatmap's colour bar


def figure(specs: list[Spec], labels: list[str]) -> Figure:
    """One Figure holding every spec, line charts two side by side, with one legend of the
    devices (`labels`, in the report's order) above them."""
    from matplotlib.figure import Figure

    heatmaps = [s for s in specs if isinstance(s, Heatmap)]
    columns = min(len(specs), COLUMNS_UP_TO) if not heatmaps else 1
    rows = math.ceil(len(specs) / columns)
    width, height = PANEL_INCHES[0] * columns, PANEL_INCHES[1] * rows
    if heatmaps:  # as tall as its jobs and as wide as its devices
        width = max(width, 3.0 + 1.1 * max(len(h.columns) for h in heatmaps))
        height = sum(_heatmap_inches(s) for s in specs)
    fig = Figure(figsize=(width, height), layout="constrained")
    grid = fig.subplots(rows, columns, squeeze=False)
    panels = grid.flatten()
    for ax, spec in zip(panels, specs, strict=False):
        if isinstance(spec, Heatmap):
            draw_heatmap(ax, spec)
        else:
            draw_line_chart(ax, spec)
    for ax in panels[len(specs) :]:
        ax.remove()
    line_charts = [s for s in specs if isinstance(s, LineChart)]
    if line_charts:
        _legend(fig, line_charts, labels)
    return fig


def _heatmap_inches(spec: Spec) -> float:
    if isinstance(spec, Heatmap):
        return 1.4 + 0.28 * len(spec.rows)
    return PANEL_INCHES[1]


def line_style(index: int, thin: bool = False, dash: str | None = None) -> dict[str, Any]:
    """A device's line as matplotlib draws it: colour, dash and marker (charts.style); `dash`
    a line style of its own instead of the device's ("" solid)."""
    colour, marker, own = charts.style(index)
    dash = own if dash is None else dash
    pattern = (
        (0, (3.0, 2.0)) if thin else (0, tuple(float(d) for d in dash.split())) if dash else "-"
    )
    return {
        "color": colour,
        "linestyle": pattern,
        "linewidth": 0.9 if thin else 1.5,
        "marker": MARKERS[marker],
        "markersize": 3.5 if thin else 5.0,
    }


def draw_line_chart(ax: Axes, chart: LineChart) -> None:
    """One line chart into `ax`: a line per series, bars, bound marks, cliffs and knees."""
    ax.set_title(chart.title, fontsize=9)
    ax.set_xlabel(chart.x.label)
    ax.set_ylabel(chart.y.label)
    kept = charts.drawable_points(chart)
    if not kept:
        return
    xs, ys = charts.chart_extent(chart, kept)
    _axis(ax, "x", chart.x, xs)
    _axis(ax, "y", chart.y, ys)
    ax.grid(True, color="#e5e5e5", linewidth=0.6)
    ax.set_axisbelow(True)
    for band in chart.bands:
        _band(ax, band, chart)
    for guide in chart.guides:
        _guide(ax, guide, chart)
    for mark in chart.marks:
        if charts.drawable(chart.x.scale, mark.x):
            ax.axvline(mark.x, color=charts.style(mark.index)[0], linestyle=(0, (4, 3)),
                       linewidth=1.0, gid="mark", label=f"_{mark.tip}")  # fmt: skip
    for target in chart.targets:
        if charts.drawable(chart.y.scale, target.y):
            _target(ax, target.y, target.label)
    for line, good in kept:
        _series(ax, line, good, chart.y)
    for mark in chart.target_marks:
        if charts.drawable(chart.x.scale, mark.x) and charts.drawable(chart.y.scale, mark.y):
            _target_mark(ax, mark)
    for knee in chart.knees:
        if charts.drawable(chart.x.scale, knee.x) and charts.drawable(chart.y.scale, knee.y):
            ax.plot([knee.x], [knee.y], linestyle="none", marker="D", markersize=11,
                    markerfacecolor="none", markeredgecolor=charts.style(knee.index)[0],
                    markeredgewidth=1.8, gid="knee", label=f"_{knee.tip}", zorder=4)  # fmt: skip


def _series(ax: Axes, line: Series, good: list[int], y: Axis) -> None:
    """A series' line through its drawable points (in the order of x), its points drawn
    apart, its min-max bars and the rings of its CPU- or host-bound points."""
    style = line_style(line.index, line.thin, line.dash)
    if not (line.markers or len(good) == 1):  # a line of one point is still drawn
        style["marker"] = None
    if not line.joined:
        style["linestyle"] = "none"
    if line.hollow:
        style["markerfacecolor"] = "#fff"
    label = line.label or f"device {line.index + 1}"
    label += f" {line.name}" if line.name else ""
    on = [i for i in good if not (i < len(line.apart) and line.apart[i])]
    ax.plot([line.xs[i] for i in on], [line.ys[i] for i in on], **style, gid="series",
            label=f"_{label} (thin)" if line.thin else label, zorder=3)  # fmt: skip
    apart = [i for i in good if i not in on]
    if apart:  # a load the run could not reach: a cross off the line
        ax.plot([line.xs[i] for i in apart], [line.ys[i] for i in apart], linestyle="none",
                marker="x", markersize=7, markeredgewidth=1.8, color=style["color"],
                gid="apart", label=f"_{label} (could not reach its load)", zorder=3)  # fmt: skip
    bars = _bars(line, good, y)
    if bars:
        bx, low, high = zip(*bars, strict=True)
        ax.vlines(bx, low, high, color=style["color"], linewidth=1.0, gid="bars")
    bound = [i for i in good if i < len(line.bound) and line.bound[i]]
    if bound:
        _bound_marks(ax, [line.xs[i] for i in bound], [line.ys[i] for i in bound])


def _band(ax: Axes, band: Band, chart: LineChart) -> None:
    """A shaded area under the lines (the axes' range cuts it, as in the report)."""
    if not all(charts.drawable(chart.x.scale, v) for v in (band.x0, band.x1)):
        return
    shade = {"color": band.shade, "alpha": band.opacity, "linewidth": 0, "gid": "band",
             "label": f"_{band.tip}", "zorder": 1}  # fmt: skip
    if band.y0 is None or band.y1 is None:
        ax.axvspan(band.x0, band.x1, **shade)
    else:
        ax.fill_between([band.x0, band.x1], [band.y0] * 2, [band.y1] * 2, **shade)


def _guide(ax: Axes, guide: Guide, chart: LineChart) -> None:
    """A straight dark grey line (a window's mean, a fitted line) over the bands."""
    points = ((guide.x0, guide.y0), (guide.x1, guide.y1))
    if not all(charts.drawable(chart.x.scale, x) and charts.drawable(chart.y.scale, y)
               for x, y in points):  # fmt: skip
        return
    dash = (0, tuple(float(d) for d in guide.dash.split())) if guide.dash else "-"
    ax.plot([guide.x0, guide.x1], [guide.y0, guide.y1], color=charts.GUIDE_INK, linestyle=dash,
            linewidth=1.3, gid="guide", label=f"_{guide.tip}", zorder=2)  # fmt: skip


def _bars(line: Series, good: list[int], y: Axis) -> list[tuple[float, float, float]]:
    """The min-max bars of a series' points that have one: (x, low, high)."""
    if line.lows is None or line.highs is None:
        return []
    found = []
    for i in good:
        low, high = line.lows[i], line.highs[i]
        if charts.drawable(y.scale, low) and charts.drawable(y.scale, high) and high > low:
            found.append((line.xs[i], low, high))
    return found


def _bound_marks(ax: Axes, xs: list[float], ys: list[float]) -> None:
    """CPU- or host-bound points: a black ring with a cross, over the device's marker."""
    ring = {"linestyle": "none", "markerfacecolor": "none", "markeredgecolor": "#000",
            "markeredgewidth": 1.2, "gid": "bound", "zorder": 5}  # fmt: skip
    ax.plot(xs, ys, marker="o", markersize=11, label="_CPU- or host-bound", **ring)
    ax.plot(xs, ys, marker="x", markersize=6, label="_bound cross", **ring)


_TARGET_DASH = (0, (7.0, 3.0, 1.5, 3.0))  # the report's dash-dot


def _target(ax: Axes, y: float, label: str) -> None:
    """A latency target: a dark dash-dotted line across the plot, named at its right end."""
    ax.axhline(y, color="#333", linestyle=_TARGET_DASH, linewidth=1.1, gid="target",
               label=f"_{label}", zorder=2)  # fmt: skip
    ax.annotate(label, (1, y), xycoords=("axes fraction", "data"), xytext=(-3, 3),
                textcoords="offset points", ha="right", va="bottom", fontsize=7)  # fmt: skip


def _target_mark(ax: Axes, mark: TargetMark) -> None:
    """A device's answer on a target: a hollow diamond in its colour, with a dotted line
    down to the x axis."""
    colour = charts.style(mark.index)[0]
    low = ax.get_ylim()[0]  # the axes are laid out already (_axis)
    ax.plot([mark.x, mark.x], [low, mark.y], color=colour, linestyle=(0, (1.5, 2.5)),
            linewidth=1.0, gid="answer-line", label="_", zorder=4)  # fmt: skip
    ax.plot([mark.x], [mark.y], linestyle="none", marker="D", markersize=8,
            markerfacecolor="#fff", markeredgecolor=colour, markeredgewidth=1.8, gid="answer",
            label=f"_{mark.tip}", zorder=6)  # fmt: skip


def _axis(ax: Axes, which: str, axis: Axis, values: list[float]) -> None:
    """An axis's scale, range and ticks, as the report's chart has them."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

    low, high, ticks = charts.axis_layout(axis, values, vertical=which == "y")
    scaled = ax.xaxis if which == "x" else ax.yaxis
    set_scale = ax.set_xscale if which == "x" else ax.set_yscale
    if axis.scale in ("log2", "log10"):
        set_scale("log", base=2 if axis.scale == "log2" else 10)
    elif axis.scale == "nines":
        set_scale("function", functions=(_nines, _from_nines))
    limits = (high, low) if axis.reverse else (low, high)
    (ax.set_xlim if which == "x" else ax.set_ylim)(*limits)
    write = axis.ticks or (_general if axis.scale == "nines" else charts.number)
    scaled.set_major_locator(FixedLocator(ticks))
    scaled.set_major_formatter(FuncFormatter(lambda value, _: write(value)))
    scaled.set_minor_locator(NullLocator())


def _general(value: float) -> str:
    return f"{value:g}"


def _nines(values: Any) -> Any:
    """Percentiles to their 'nines' (90 % -> 1, 99 % -> 2), as the report's axis spreads
    them."""
    share = 1 - np.asarray(values, dtype=float) / 100
    return -np.log10(np.maximum(share, 1e-7))


def _from_nines(values: Any) -> Any:
    return 100 * (1 - 10 ** -np.asarray(values, dtype=float))


def _legend(fig: Figure, specs: list[LineChart], labels: list[str]) -> None:
    """The devices drawn, in the report's order, and the bound mark where there is one."""
    from matplotlib.lines import Line2D

    drawn = {line.index for spec in specs for line in spec.series}
    marked = any(line.markers for spec in specs for line in spec.series)
    # lines that each have a style of their own (a percentile's): a device is its colour
    restyled = all(line.dash is not None for spec in specs for line in spec.series)
    entries: list[Any] = []
    names = []
    for index in sorted(drawn):
        style = line_style(index)
        if not marked:  # lines drawn without markers (time series) are shown without
            style["marker"] = None
        if restyled:
            style["linestyle"] = "-"
        entries.append(Line2D([], [], **style))
        names.append(labels[index] if index < len(labels) else f"device {index + 1}")
    if any(any(line.bound) for spec in specs for line in spec.series):
        mark = {"linestyle": "none", "markerfacecolor": "none", "markeredgecolor": "#000"}
        ring = Line2D([], [], marker="o", markersize=9, **mark)
        cross = Line2D([], [], marker="x", markersize=5, **mark)
        entries.append((ring, cross))  # drawn one over the other, as on the points
        names.append("CPU- or host-bound")
    for key in dict.fromkeys(key for spec in specs for key in spec.keys):
        entries.append(_key_entry(key))
        names.append(key.text)
    # as many columns as the figure's width holds (about 2.2 inches each), up to 4
    across = max(1, min(len(entries), 4, int(fig.get_figwidth() / 2.2)))
    fig.legend(entries, names, loc="outside upper center", ncols=across, fontsize=8,
               frameon=False)  # fmt: skip


def _key_entry(key: Key) -> Any:
    """A chart's own key as a legend entry, in grey (the devices' colours are theirs)."""
    from matplotlib.lines import Line2D

    grey = {"color": "#555", "markeredgecolor": "#555"}
    if key.kind == "line":
        dash = (0, tuple(float(d) for d in key.dash.split())) if key.dash else "-"
        return Line2D([], [], linestyle=dash, linewidth=1.5, **grey)
    if key.kind == "target":
        return Line2D([], [], color="#333", linestyle=_TARGET_DASH, linewidth=1.1)
    if key.kind == "band":
        from matplotlib.patches import Patch

        return Patch(facecolor=key.shade or charts.BOUND_GREY, edgecolor="none")
    marker = {"answer": "D", "apart": "x"}.get(key.kind, "o")
    face = "#555" if key.kind == "point" else "#fff"
    return Line2D([], [], linestyle="none", marker=marker, markerfacecolor=face,
                  markeredgewidth=1.5, markersize=6, **grey)  # fmt: skip


def heatmap_colours() -> Any:
    """The report's ratio colours as a colormap and its norm: ratios from 1/2 to 2 on a log
    scale (the full colour at a factor of 2, as in the report)."""
    from matplotlib.colors import FuncNorm, ListedColormap

    steps = np.linspace(-1.0, 1.0, 257)
    colours = [charts.ratio_colour(float(2.0**step)) for step in steps]
    cmap = ListedColormap(colours).with_extremes(bad="#ffffff")
    return cmap, FuncNorm((_log2, np.exp2), vmin=0.5, vmax=2.0)


def _log2(values: Any) -> Any:
    """log2 of ratios; what is not positive (a colour bar's ends) is far below the scale."""
    return np.log2(np.maximum(np.asarray(values, dtype=float), 1e-12))


def draw_heatmap(ax: Axes, spec: Heatmap) -> None:
    """Ratios as coloured cells (the image holds the ratios; a pair without one is masked),
    each with its figure; CPU- or host-bound cells on grey, disturbed ones hatched."""
    from matplotlib.patches import Rectangle

    values = np.full((len(spec.rows), len(spec.columns)), np.nan)
    for (r, c), (ratio, _, _) in spec.cells.items():
        if ratio is not None and math.isfinite(ratio) and ratio > 0:
            values[r, c] = ratio
    cmap, norm = heatmap_colours()
    image = ax.imshow(np.ma.masked_invalid(values), cmap=cmap, norm=norm, aspect="auto")
    for (r, c), (ratio, _, limit) in spec.cells.items():
        if limit:
            ax.add_patch(Rectangle((c - 0.5, r - 0.5), 1, 1, gid=limit,
                                   facecolor=charts.BOUND_GREY if limit == "bound" else "#fff",
                                   hatch="///" if limit == "disturbed" else None,
                                   edgecolor=charts.DISTURBED_STRIPE if limit == "disturbed"
                                   else charts.BOUND_GREY, linewidth=0))  # fmt: skip
        if ratio is not None and math.isfinite(ratio):
            dark = not limit and ratio > 0 and abs(math.log2(ratio)) > 0.6
            ax.text(c, r, f"{ratio:.2f}", ha="center", va="center", fontsize=8,
                    color="#fff" if dark else "#000")  # fmt: skip
    ax.set_title(spec.title, fontsize=9)
    ax.set_xticks(range(len(spec.columns)), spec.columns)
    ax.xaxis.tick_top()
    ax.set_yticks(range(len(spec.rows)), spec.rows, fontsize=8)
    bar = ax.figure.colorbar(image, ax=ax, label="ratio to the baseline", shrink=0.6)
    bar.set_ticks(RATIO_TICKS, labels=[f"{t:g}" for t in RATIO_TICKS])
