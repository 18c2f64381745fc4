"""The report's charts: every kind in the registry (ssdcompare.report.chartkinds), built from the
report's figures, drawn as SVG (ssdcompare.report.svg) and placed in sections: an overview of
every ratio, then each pattern family's curves, latency distributions and time series."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ssdcompare.analysis.slo import Slo
from ssdcompare.report import svg as charts
from ssdcompare.report.chartkinds import (
    KINDS,
    ChartInputs,
    ChartKind,
    PlacedChart,
    passes,
    section_rank,
)
from ssdcompare.report.chartspec import LineChart


@dataclass
class ChartGroup:
    """Charts of one kind within a section (e.g. IOPS against queue depth), side by side."""

    title: str
    charts: list[dict[str, str]] = field(default_factory=list)


@dataclass
class ChartSections:
    """The report's chart sections in order, the notes on charts left out, and the parts
    the charts share (their definitions go on the page once, before the charts)."""

    sections: list[ChartSection]
    notes: list[str]
    shared: charts.SharedParts


@dataclass
class ChartSection:
    """One family's charts (random reads, ...), or the overview: a collapsible section."""

    name: str
    groups: list[ChartGroup] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.charts)

    @property
    def charts(self) -> list[dict[str, str]]:
        """Every chart of the section, group after group."""
        return [chart for group in self.groups for chart in group.charts]


def _place(sections: dict[str, ChartSection], notes: list[str], kind: ChartKind,
           chart: PlacedChart, shared: charts.SharedParts) -> None:  # fmt: skip
    """Draw one chart into its section, under its kind's heading (its axes placed from
    `shared`); one that cannot be drawn becomes a line in `notes`."""
    try:
        svg = charts.svg(chart.spec, shared) if chart.spec is not None else None
    except Exception as err:  # a chart is never worth losing the whole report over
        kind_of = type(err).__name__
        notes.append(f"{chart.title}: left out, it could not be drawn ({kind_of}: {err}).")
        return
    if svg is None:
        notes.append(
            f"{chart.title}: left out, there is no figure to plot (no I/O was "
            "measured, or none logged: a run shorter than its log interval)."
        )
        return
    section = sections.setdefault(chart.section, ChartSection(chart.section))
    group = next((g for g in section.groups if g.title == kind.heading), None)
    if group is None:
        group = ChartGroup(kind.heading)
        section.groups.append(group)
    keys = charts.keys(chart.spec) if isinstance(chart.spec, LineChart) else ""
    group.charts.append({"title": chart.title + chart.caption, "svg": svg, "wide": chart.wide,
                         "legend": keys})  # fmt: skip


def chart_sections(
    frame: pd.DataFrame,
    summary: pd.DataFrame,
    rows_of: dict[tuple[object, object], dict[str, Any]],
    labels: list[str],
    baseline: str,
    ratios: pd.DataFrame,
    order: list[str],
    slos: list[Slo] | None = None,
) -> ChartSections:
    """The report's charts in sections: an overview of every ratio, then each family's
    curves (queue depth, latency against load, block size, read share), latency
    distributions and time series; and a note for each chart left out. The arguments are
    chartkinds.ChartInputs'."""
    inputs = ChartInputs(frame, summary, rows_of, labels, baseline, ratios, order, slos or [])
    notes: list[str] = []
    sections: dict[str, ChartSection] = {}
    shared = charts.SharedParts()
    for kinds in passes(KINDS):
        for part in kinds[0].over(inputs, notes):
            for kind in kinds:
                for chart in kind.build(inputs, part, notes):
                    _place(sections, notes, kind, chart, shared)
    ranked = sorted(sections.values(), key=lambda section: section_rank(section.name))
    return ChartSections(ranked, notes, shared)
