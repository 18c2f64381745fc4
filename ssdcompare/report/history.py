"""A history (ssdcompare.analysis.history) for people and machines: text for a terminal,
Markdown, JSON, and a self-contained HTML page (templates/history.html.j2) with a table
and a trend line per job. Each says the dates (and their folders), per drive what changed
between two dates, and per job each date's figure with its change from the first date and
its mark (not comparable, a verdict, no result, not run).
"""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ssdcompare.analysis.history import NOT_COMPARABLE, NOT_RUN, DriveHistory, History, Point
from ssdcompare.report.changes import figure
from ssdcompare.report.sparkline import SparkPoint, sparkline
from ssdcompare.resources import templates
from ssdcompare.results.files import write_atomic
from ssdcompare.results.outputs import check_report_path
from ssdcompare.version import __version__

TEMPLATE = "history.html.j2"


def summary_line(found: History) -> str:
    """What the history holds, in one line."""
    drives = len(found.drives)
    return (f"History of {found.metric.words}: {drives} drive{'s' * (drives != 1)} over "
            f"{len(found.dates)} dates (each folder one date, the geometric mean of its repeats); "
            "each change is from the job's first date.")  # fmt: skip


def change_text(point: Point) -> str:
    """A date's change from the first: "+2.0 %"; "" where none is given."""
    return "" if math.isnan(point.change_pct) else f"{point.change_pct:+.1f} %"


def cell(point: Point, reference: bool, metric: str) -> str:
    """A date's cell: "15.3k IOPS +2.0 %", "16.0k IOPS not comparable", "14.1k IOPS -7.0 %
    [cpu]", "no result", "not run"; the first date's figure without a change."""
    if not point.has_figure:
        return point.mark or "-"
    said = figure(metric, point.figure)
    if point.mark == NOT_COMPARABLE:
        return f"{said} {NOT_COMPARABLE}"
    change = "" if reference else change_text(point)
    mark = f"[{point.mark}]" if point.mark else ""
    return " ".join(part for part in (said, change, mark) if part)


def step_line(found: History, before: int, after: int, what: list[str]) -> str:
    """ "between 2026-11-27 02:40 and 2026-11-28 10:00: kernel 6.1 -> 6.6"."""
    dates = found.dates
    return f"between {dates[before].label} and {dates[after].label}: {'; '.join(what)}"


def followed_lines(found: History, drive: DriveHistory) -> list[str]:
    """How the drive was found in each folder where that is worth saying: under another
    name, by its identity rather than its name, or not at all."""
    lines = []
    for index, (name, how) in enumerate(zip(drive.names, drive.followed, strict=True)):
        date = found.dates[index].label
        if name is None:
            lines.append(f"not in {date} ({found.dates[index].path})")
        elif name != drive.name or how not in ("first seen", "by name"):
            lines.append(f"{name} at {date}, followed {how}")
    return lines


def mark_lines(found: History, drive: DriveHistory) -> list[str]:
    """Each job's marks with why, a line per mark and reason with the dates it holds for
    (a date the whole drive is missing from is said once, by followed_lines)."""
    lines = []
    for trend in drive.trends:
        dates: dict[tuple[str, str | None], list[str]] = {}
        for index, point in enumerate(trend.points):
            if point.mark is None or point.mark == NOT_RUN and drive.names[index] is None:
                continue
            dates.setdefault((point.mark, point.why), []).append(found.dates[index].label)
        for (mark, why), labels in dates.items():
            said = f": {why}" if why else ""
            lines.append(f"{trend.job} at {', '.join(labels)}: {mark}{said}")
    return lines


def table_rows(found: History, drive: DriveHistory) -> list[list[str]]:
    """The drive's table: a header (job and the dates), then a row per job."""
    rows = [["job", *(d.label for d in found.dates)]]
    for trend in drive.trends:
        rows.append([trend.job, *(cell(p, i == trend.reference, found.metric.name)
                                  for i, p in enumerate(trend.points))])  # fmt: skip
    return rows


def text_lines(found: History) -> list[str]:
    """For a terminal: the summary, the dates, then per drive how it was followed, what
    changed between its dates, a table (job rows, date columns) and the marks."""
    lines = [summary_line(found), "dates:"]
    lines += [f"  {d.label}  {d.path}" for d in found.dates]
    lines += [f"note: {n}" for n in found.notes]
    for drive in found.drives:
        lines += ["", drive.name]
        lines += [f"  {line}" for line in followed_lines(found, drive)]
        lines += [f"  {step_line(found, s.before, s.after, s.what)}" for s in drive.steps]
        rows = table_rows(found, drive)
        widths = [max(len(c) for c in column) for column in zip(*rows, strict=True)]
        lines.append("")
        for cells in rows:
            padded = "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True))
            lines.append(f"  {padded.rstrip()}")
        marks = mark_lines(found, drive)
        if marks:
            lines += ["", "  Marks:"] + [f"    {line}" for line in marks]
    return lines


def _escaped(text: str) -> str:
    return text.replace("|", "\\|")


def markdown(found: History) -> str:
    """For a pull request or a wiki: the summary, the dates, and per drive its changes, a
    table (job rows, date columns) and the marks."""
    lines = [f"**{summary_line(found)}**", ""]
    lines += [f"- {d.label}: `{d.path}`" for d in found.dates]
    lines += [f"- note: {_escaped(n)}" for n in found.notes]
    for drive in found.drives:
        lines += ["", f"### {_escaped(drive.name)}", ""]
        said = followed_lines(found, drive)
        said += [step_line(found, s.before, s.after, s.what) for s in drive.steps]
        lines += [f"- {_escaped(line)}" for line in said] + ([""] if said else [])
        header, *rows = table_rows(found, drive)
        lines += ["| " + " | ".join(_escaped(c) for c in header) + " |",
                  "|" + "---|" * len(header)]  # fmt: skip
        lines += ["| " + " | ".join(_escaped(c) for c in cells) + " |" for cells in rows]
        marks = mark_lines(found, drive)
        if marks:
            lines += ["", "Marks:", ""] + [f"- {_escaped(line)}" for line in marks]
    return "\n".join(lines) + "\n"


def json_document(found: History) -> str:
    """Everything, for machines: the metric, the dates, and per drive its names, how it was
    followed, what changed between its dates and every job's points."""
    document = {
        "summary": summary_line(found),
        "metric": found.metric.name,
        "dates": [{"date": d.label, "created_at": d.created_at, "folder": str(d.path)}
                  for d in found.dates],
        "drives": [_drive_document(found, drive) for drive in found.drives],
        "notes": found.notes,
    }  # fmt: skip
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _drive_document(found: History, drive: DriveHistory) -> dict[str, Any]:
    return {
        "drive": drive.name,
        "names": drive.names,
        "followed": drive.followed,
        "changes": [{"from": found.dates[s.before].label, "to": found.dates[s.after].label,
                     "what": s.what} for s in drive.steps],
        "jobs": [{"job": t.job, "reference": None if t.reference is None
                  else found.dates[t.reference].label,
                  "points": [_point_document(found, i, p) for i, p in enumerate(t.points)]}
                 for t in drive.trends],
    }  # fmt: skip


def _point_document(found: History, index: int, point: Point) -> dict[str, Any]:
    values = {"date": found.dates[index].label, "figure": point.figure, "min": point.low,
              "max": point.high, "repeats": point.repeats, "change_pct": point.change_pct,
              "mark": point.mark, "why": point.why, "verdict": point.verdict,
              "workload_hash": point.workload_hash}  # fmt: skip
    # JSON has no NaN: an unknown figure is null
    return {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in values.items()}


def render_html(found: History) -> str:
    """The history as one self-contained HTML page."""
    context = {
        "version": __version__,
        "generated_at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "summary": summary_line(found),
        "metric": found.metric.words,
        "dates": found.dates,
        "notes": found.notes,
        "drives": [_drive_context(found, drive) for drive in found.drives],
    }
    return templates().get_template(TEMPLATE).render(**context)


def _drive_context(found: History, drive: DriveHistory) -> dict[str, Any]:
    """A drive's part of the page: how it was followed, its changes, and per job a table
    and a trend line."""
    titles = [step_line(found, s.before, s.after, s.what) for s in drive.steps]
    jobs = []
    for trend in drive.trends:
        sparks = [SparkPoint(i, p, _point_title(found, i, p, i == trend.reference))
                  for i, p in enumerate(trend.points)]  # fmt: skip
        jobs.append({
            "job": trend.job,
            "line": sparkline(sparks, len(found.dates), drive.steps, titles),
            "cells": [_html_cell(found, p, i == trend.reference)
                      for i, p in enumerate(trend.points)],
        })  # fmt: skip
    return {"name": drive.name, "followed": followed_lines(found, drive), "changes": titles,
            "jobs": jobs, "marks": mark_lines(found, drive)}  # fmt: skip


def _point_title(found: History, index: int, point: Point, reference: bool) -> str:
    """A point's hover title: its date, figure, spread and change."""
    metric = found.metric.name
    said = f"{found.dates[index].label}: {figure(metric, point.figure)}"
    if point.repeats > 1:
        said += (f" (geometric mean of {point.repeats}, {figure(metric, point.low)} … "
                 f"{figure(metric, point.high)})")  # fmt: skip
    if not reference and change_text(point):
        said += f", {change_text(point)} from the first date"
    return said + (f"; {point.mark}" if point.mark else "")


def _html_cell(found: History, point: Point, reference: bool) -> dict[str, Any]:
    metric = found.metric.name
    spread = (f"{figure(metric, point.low)} … {figure(metric, point.high)}"
              if point.has_figure and point.repeats > 1 else "")  # fmt: skip
    return {
        "figure": figure(metric, point.figure) if point.has_figure else "",
        "spread": spread,
        "repeats": point.repeats,
        "change": "first" if reference else change_text(point),
        "mark": point.mark or "",
        "why": point.why or "",
        "kind": "nc" if point.mark == NOT_COMPARABLE else "marked" if point.mark else "",
    }


def write_html(found: History, output: str | Path) -> Path:
    """Render the page and write it atomically to `output`: an .html name, never among a
    results folder's runs nor over a file that is not a page of ssdcompare's
    (ssdcompare.results.outputs)."""
    target = Path(output)
    folders = [d.path for d in found.dates]
    check_report_path(target, folders)
    text = render_html(found)
    check_report_path(target, folders)  # look again just before writing
    write_atomic(target, text)
    return target
