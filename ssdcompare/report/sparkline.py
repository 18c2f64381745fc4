"""A job's trend over dates as a small inline SVG line (a sparkline) for the history page
(ssdcompare.report.history): a point per date with a figure, its min and max as a whisker,
each point's date and figures in its hover title, and a vertical mark between two dates
where the sweeps recorded a change of the machine or the drive (kernel, firmware, fio, ...).

The dates are spaced evenly, in their order: the page's tables say when each was made. The
vertical axis starts at 0, so that a small change looks small.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

from ssdcompare.analysis.history import NOT_COMPARABLE, Point, Step

WIDTH, HEIGHT, PAD = 220, 48, 6


@dataclass(frozen=True)
class SparkPoint:
    """One date on the line: its place (0, 1, ... in date order), figures and hover text."""

    place: int
    point: Point
    title: str


def sparkline(
    points: Sequence[SparkPoint], dates: int, steps: Sequence[Step], step_titles: Sequence[str]
) -> str | None:
    """The SVG of one job's trend over `dates` dates; `steps` are marked between their two
    dates, each titled by `step_titles`. None when no date has a figure above 0."""
    drawn = [p for p in points if p.point.has_figure]
    top = max((max(p.point.figure, _known(p.point.high)) for p in drawn), default=0.0)
    if not top > 0:
        return None
    x = _xs(dates)

    def y(value: float) -> float:
        return HEIGHT - PAD - value / top * (HEIGHT - 2 * PAD)

    parts = [_base(y(0.0))]
    parts += [_step_mark(x, step, title) for step, title in zip(steps, step_titles, strict=True)]
    joined = [p for p in drawn if p.point.mark != NOT_COMPARABLE]
    if len(joined) > 1:
        path = " ".join(f"{'M' if i == 0 else 'L'}{x[p.place]:.1f} {y(p.point.figure):.1f}"
                        for i, p in enumerate(joined))  # fmt: skip
        parts.append(f'<path class="trend" d="{path}"/>')
    for spark in drawn:
        parts.append(_whisker(x[spark.place], spark.point, y))
        parts.append(_dot(x[spark.place], y(spark.point.figure), spark))
    return (f'<svg class="spark" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
            f'height="{HEIGHT}" role="img">' + "".join(parts) + "</svg>")  # fmt: skip


def _xs(dates: int) -> list[float]:
    """Each date's place across the line, evenly spaced (one date: in the middle)."""
    if dates < 2:
        return [WIDTH / 2]
    gap = (WIDTH - 2 * PAD) / (dates - 1)
    return [PAD + index * gap for index in range(dates)]


def _known(value: float) -> float:
    return value if value == value else 0.0


def _base(y0: float) -> str:
    return f'<line class="zero" x1="0" x2="{WIDTH}" y1="{y0:.1f}" y2="{y0:.1f}"/>'


def _step_mark(x: list[float], step: Step, title: str) -> str:
    """A vertical mark halfway between the two dates of a change, titled with it."""
    middle = (x[step.before] + x[step.after]) / 2
    return (f'<g class="change"><title>{escape(title)}</title><line x1="{middle:.1f}" '
            f'x2="{middle:.1f}" y1="0" y2="{HEIGHT}"/></g>')  # fmt: skip


def _whisker(px: float, point: Point, y: Callable[[float], float]) -> str:
    """The min to max of a date's repeats, where they differ."""
    if not (point.low == point.low and point.high == point.high) or point.low == point.high:
        return ""
    low, high = y(point.low), y(point.high)
    return f'<line class="whisker" x1="{px:.1f}" x2="{px:.1f}" y1="{low:.1f}" y2="{high:.1f}"/>'


def _dot(px: float, py: float, spark: SparkPoint) -> str:
    """A date's point: hollow where not comparable, grey where a verdict marks it."""
    mark = spark.point.mark
    kind = "nc" if mark == NOT_COMPARABLE else "limited" if mark else "ok"
    return (f'<circle class="point {kind}" cx="{px:.1f}" cy="{py:.1f}" r="3">'
            f"<title>{escape(spark.title)}</title></circle>")  # fmt: skip
