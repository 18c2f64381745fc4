"""The report's sections for SNIA PTS tests (ssdcompare.analysis.pts): a section per test,
saying whether it was scaled, per device how its drive was purged and filled and how each
group's rounds went (steady after N rounds, or not in N; the window's rounds, mean, range
and slope excursion against the limits) with its steady-state chart, then the tables the
test reports, of the window's figures: IOPS by block size and read/write mix (iops), MB/s
written and read per block size (throughput), mean, p99.9, p99.99 and maximum latency
(latency), IOPS and mean latency by threads and queue depth with a chart and the most IOPS
under 5 ms (dirth). The figures come from the analysis; here they become words, cells and
SVG."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ssdcompare.analysis.pts import (
    DIRTH_LIMIT_US,
    TAIL_IOS,
    GroupRounds,
    PtsTables,
    dirth_answer,
    ordered,
)
from ssdcompare.analysis.ptstime import (
    TIME_TESTS,
    Recovery,
    Settled,
    recovery,
    saturation,
    settled,
)
from ssdcompare.judge.verdict import LIMIT_WORDS
from ssdcompare.report import svg
from ssdcompare.report.chartspec import LineChart
from ssdcompare.report.ptschart import dirth_chart, steady_chart
from ssdcompare.report.ptstimechart import hir_chart, wsat_charts, xsr_chart
from ssdcompare.suite.pts import METRIC_WORDS
from ssdcompare.units import format_count, format_latency, format_rate

TITLES = {"iops": "IOPS", "throughput": "throughput", "latency": "latency", "wsat":
          "write saturation", "hir": "host idle recovery", "xsr": "cross-stimulus recovery",
          "dirth": "demand intensity / response time (DIRTH)"}  # fmt: skip
# what each test's tables are, for the reader
TABLE_WORDS = {
    "iops": "IOPS of each block size (rows) at each read/write mix (columns: % reads / % "
            "writes), a table per device",
    "throughput": "MB/s (10⁶ bytes/s) written and read at each block size",
    "latency": "mean, 99.9th and 99.99th percentile latency (each the mean of the window's "
               "rounds, a mixed job's worse direction in each round) and the highest latency "
               "of any I/O in the window, at each block size and read/write mix; a percentile "
               "in grey had fewer I/Os in some window round than it needs (1,000 for p99.9, "
               "10,000 for p99.99), so it is about the largest latency seen: hover it for "
               "how many",
    "wsat": "IOPS against time and against the bytes written (in multiples of the device's "
            "capacity), per device; fresh is the mean of the first tenth of the run, settled "
            "the mean of its last tenth",
    "hir": "each burst's mean IOPS against time, the idle-time segments shaded and the "
           "baselines (writes without idling) between them; per idle time, the bursts' mean "
           "IOPS against the baseline before it (above 1×, the drive recovered when idle)",
    "xsr": "bandwidth against time, each segment shaded; per segment, its settled bandwidth "
           "(the mean of its last tenth) and how long after its start it stayed within 10 % "
           "of it",
    "dirth": "IOPS and mean latency at each number of threads (rows) and queue depth per "
             "thread (columns), a table per device; the chart draws IOPS against mean latency, "
             "a line per thread count",
}  # fmt: skip


@dataclass
class Head:
    """A heading cell of a table: its text, and the columns and rows it spans."""

    text: str
    span: int = 1
    rows: int = 1


@dataclass
class Cell:
    """A table cell: its figure, a second line under it, its marks (what limited it) and its
    tooltip."""

    text: str
    sub: str = ""
    cls: str = ""
    tip: str = ""


@dataclass
class Grid:
    """One table of a PTS section: its caption, heading rows and body rows."""

    caption: str
    head: list[list[Head]]
    rows: list[list[Cell]]


@dataclass
class GroupView:
    """A group's rounds on one device: in words and as its steady-state chart."""

    name: str
    words: str
    window: str | None
    steady: bool
    svg: str | None
    keys: str
    title: str


@dataclass
class DeviceView:
    """One device of a PTS section: how its drive was prepared and its groups' rounds."""

    label: str
    purge: str
    purged: bool
    fill: str
    groups: list[GroupView] = field(default_factory=list)


@dataclass
class PtsSection:
    """A PTS test's section of the report."""

    test: str
    title: str
    scaled: str | None
    rule: list[str]
    window_words: str
    devices: list[DeviceView]
    table_words: str
    grids: list[Grid]
    charts: list[dict[str, str]]
    answers: list[str]
    results_title: str = "Results of the measurement window"


# a section's tables, its charts (title, svg, legend, class) and its answers in words
SectionResults = tuple[list[Grid], list[dict[str, str]], list[str]]


def scaled_words(scale: float) -> str:
    """The banner of a scaled PTS run."""
    return (f"Scaled by {scale:g}: every runtime and idle time of this PTS test was "
            f"{scale:g} of the specification's, so these are a first look at the drives, not "
            "a PTS result.")  # fmt: skip


def scaled_banners(tables: PtsTables | None) -> list[str]:
    """The report's banner lines: one per scale its PTS tests were run at (none unscaled)."""
    if tables is None:
        return []
    scales: dict[float, list[str]] = {}
    for device in tables.devices:
        if device.scale is not None:
            scales.setdefault(device.scale, []).append(f"{TITLES[device.test]} on {device.label}")
    if len(scales) == 1 and len({d.scale for d in tables.devices}) == 1:
        return [scaled_words(next(iter(scales)))]
    return [f"{', '.join(where)}: {scaled_words(scale)}" for scale, where in scales.items()]


def pts_sections(tables: PtsTables | None, labels: list[str]) -> list[PtsSection]:
    """A section per PTS test in `tables`; `labels` are every device of the report in its
    order (a device's colour is its place there)."""
    if tables is None:
        return []
    return [_section(tables.of_test(test), labels) for test in tables.tests]


def _section(part: PtsTables, labels: list[str]) -> PtsSection:
    test = part.devices[0].test
    scales = {d.scale for d in part.devices}
    scale = next(iter(scales)) if len(scales) == 1 else None
    grids, charts, answers = _results(test, part, labels)
    section = PtsSection(
        test=test, title=f"SNIA PTS {TITLES[test]} test",
        scaled=scaled_words(scale) if scale is not None else (
            "Some of these devices ran scaled: see the banner at the top." if len(scales) > 1
            else None),
        rule=_rules(part), window_words=_window_words(part),
        devices=[_device(part, label, labels) for label in part.labels],
        table_words=TABLE_WORDS.get(test, "each job's figures"), grids=grids, charts=charts,
        answers=answers,
    )  # fmt: skip
    if test in TIME_TESTS:
        section.window_words = _series_words(part)
        section.results_title = "Over time"
    return section


def _series_words(part: PtsTables) -> str:
    """Where a time test's figures come from: fio's logs of its runs, at their interval."""
    steps = sorted({device.log_ms for device in part.series})
    every = " or ".join(f"{step} ms" for step in steps) or "unknown"
    return ("The figures of this test come from fio's time-series logs of its runs, the "
            f"processes added up interval by interval (every {every}); its Results table "
            "rows are each run's whole-run figures.")  # fmt: skip


def _rules(part: PtsTables) -> list[str]:
    """How each group ran, once per group: until what was steady, by which rule."""
    said: dict[str, str] = {}
    for group in part.groups:
        limits = group.limits
        if group.group in said:
            continue
        if not limits.rounds:
            said[group.group] = f"{group.group}: its jobs run once, in order"
            continue
        said[group.group] = (
            f"{group.group}: rounds of its jobs back to back until the "
            f"{METRIC_WORDS.get(limits.metric, limits.metric)} of {limits.track} is steady: "
            f"over a window of the last {limits.window} rounds, the highest and lowest within "
            f"{limits.range_pct:g} % of their mean and the least-squares line through them "
            f"moving by at most {limits.slope_pct:g} % of it; at most {limits.max_rounds} rounds"
        )
    return list(said.values())


def _window_words(part: PtsTables) -> str:
    """Which rounds the figures are averaged over, here and in the report's Results table."""
    windows = [f"{g.label} {g.group}: rounds {g.window[0]}–{g.window[-1]} of {len(g.rounds)}"
               for g in part.groups if g.window]  # fmt: skip
    where = "; ".join(windows) if windows else "no group has a window yet"
    return ("Every figure of this test, in its tables below and in the Results table, is the "
            "mean over its group's measurement window, not over every round (the maximum "
            f"latency is the window's highest): {where}.")  # fmt: skip


def _device(part: PtsTables, label: str, labels: list[str]) -> DeviceView:
    prep = next(d for d in part.devices if d.label == label)
    index = labels.index(label) if label in labels else 0
    view = DeviceView(label, prep.purge_words, bool(prep.purge and prep.purge.purged),
                      prep.fill_words)  # fmt: skip
    for group in part.groups:
        if group.label == label:
            view.groups.append(_group_view(group, index))
    return view


def _group_view(group: GroupRounds, index: int) -> GroupView:
    spec = steady_chart(group, index) if group.limits.rounds else None
    drawn = svg.svg(spec) if spec is not None else None
    steady = group.attained or not group.limits.rounds
    return GroupView(group.group, group.words, group.window_words(), steady, drawn,
                     svg.keys(spec) if spec is not None else "",
                     spec.title if spec is not None else group.group)  # fmt: skip


def _results(test: str, part: PtsTables,
             labels: list[str]) -> tuple[list[Grid], list[dict[str, str]], list[str]]:  # fmt: skip
    """The test's tables, its charts (DIRTH's and the time tests') and its answers."""
    if test in TIME_TESTS:
        return _time_results(test, part, labels)
    data = ordered(part.figures, part.labels)
    if data.empty:
        return [], [], []
    if test == "iops":
        return [_mix_grid(data, label, part.baseline) for label in part.labels
                if (data["label"] == label).any()], [], []  # fmt: skip
    if test == "throughput":
        return [_throughput_grid(data, part)], [], []
    if test == "latency":
        return [_latency_grid(data, part)], [], []
    if test == "dirth":
        return _dirth(data, part, labels)
    return [_jobs_grid(data, part)], [], []


def _marks(row: dict[str, Any]) -> str:
    """What limited a result, as the report's tables mark it: grey, hatched, or failed."""
    if row.get("status") != "ok":
        return "failed"
    verdict = row.get("verdict")
    return "cpu" if verdict in ("cpu", "host") else "dist" if verdict in (
        "disturbed", "throttled") else ""  # fmt: skip


def _tip(row: dict[str, Any]) -> str:
    """A cell's tooltip: the job, the rounds its figure is the mean of, what limited it."""
    if row.get("status") != "ok":
        return f"{row['job']}: {str(row.get('status')).upper()}: {row.get('error') or ''}"
    said = f"{row['job']}: mean of {row['rounds']} window rounds"
    said += f" ({row['window']})" if isinstance(row.get("window"), str) else ""
    limit = LIMIT_WORDS.get(str(row.get("verdict")))
    if limit:
        said += f"; {limit}: {row.get('verdict_reason') or ''}"
    elif row.get("verdict") == "unknown":
        said += f"; verdict unknown: {row.get('verdict_reason') or ''}"
    return said


def _cell(row: dict[str, Any] | None, metric: str, ratio: str | None = None) -> Cell:
    """One figure of a job on a device, with its ratio to the baseline under it."""
    if row is None:
        return Cell("not run", cls="muted")
    if row.get("status") != "ok":
        return Cell(str(row.get("status")).upper(), cls="failed", tip=_tip(row))
    value = row.get(metric)
    text = _formatted(metric, value)
    sub = ""
    if ratio is not None:
        found = row.get(ratio)
        sub = f"{found:.2f}×" if isinstance(found, float) and math.isfinite(found) else ""
    return Cell(text, sub, _marks(row), _tip(row))


def _formatted(metric: str, value: object) -> str:
    if not isinstance(value, int | float) or not math.isfinite(value):
        return "-"
    if metric == "bw_bytes":
        return format_rate(value)
    if metric.startswith("lat_"):
        return format_latency(value)
    return format_count(value)


def _by(data: pd.DataFrame, *keys: str) -> dict[tuple[object, ...], dict[str, Any]]:
    return {tuple(row[k] for k in keys): row for row in data.to_dict("records")}


def _values(data: pd.DataFrame, name: str) -> list[object]:
    return list(dict.fromkeys(data[name]))


def _mix_grid(data: pd.DataFrame, label: str, baseline: str) -> Grid:
    """The IOPS test's table of one device: block sizes down, read/write mixes across."""
    mixes = _values(data.sort_values("mix key", ascending=False, kind="stable"), "mix")
    sizes = _values(data, "block size")
    cells = _by(data[data["label"] == label], "block size", "mix")
    ratio = "iops_ratio" if label != baseline else None
    rows = [[Cell(size), *[_cell(cells.get((size, mix)), "iops", ratio) for mix in mixes]]
            for size in sizes]  # fmt: skip
    caption = f"{label}: IOPS" + (f" (under each: × {baseline})" if ratio else "")
    return Grid(caption, [[Head("block size"), *[Head(str(mix)) for mix in mixes]]], rows)


def _device_heads(part: PtsTables, lead: list[str], columns: list[str]) -> list[list[Head]]:
    """Two heading rows: `lead` columns, then each device over its `columns`."""
    first = [Head(text, rows=2) for text in lead]
    first += [Head(label, span=len(columns)) for label in part.labels]
    return [first, [Head(text) for _ in part.labels for text in columns]]


def _throughput_grid(data: pd.DataFrame, part: PtsTables) -> Grid:
    """MB/s written and read per block size, the devices side by side."""
    cells = _by(data, "label", "block size", "mix")
    rows = []
    for size in _values(data, "block size"):
        row = [Cell(size)]
        for label in part.labels:
            ratio = "bw_ratio" if label != part.baseline else None
            row += [_cell(cells.get((label, size, mix)), "bw_bytes", ratio)
                    for mix in ("0/100", "100/0")]  # fmt: skip
        rows.append(row)
    caption = "MB/s written and read" + (
        f" (under each: × {part.baseline})" if len(part.labels) > 1 else "")  # fmt: skip
    return Grid(caption, _device_heads(part, ["block size"], ["write", "read"]), rows)


_LATENCY = (("lat_mean_us", "mean"), ("lat_p999_us", "p99.9"), ("lat_p9999_us", "p99.99"),
            ("lat_max_us", "max"))  # fmt: skip


def _latency_grid(data: pd.DataFrame, part: PtsTables) -> Grid:
    """Latency per block size and mix, the devices side by side."""
    cells = _by(data, "label", "block size", "mix")
    keys = list(dict.fromkeys(zip(data["block size"], data["mix"], strict=True)))
    rows = []
    for size, mix in keys:
        row = [Cell(str(size)), Cell(str(mix), cls="key")]
        for label in part.labels:
            found = cells.get((label, size, mix))
            row += [_thin_marked(_cell(found, metric), found, metric) for metric, _ in _LATENCY]
        rows.append(row)
    heads = _device_heads(part, ["block size", "read/write"], [name for _, name in _LATENCY])
    return Grid("latency over the window", heads, rows)


def _thin_marked(cell: Cell, row: dict[str, Any] | None, metric: str) -> Cell:
    """A latency percentile backed by too few I/Os (analysis.pts.TAIL_IOS) greyed, its
    tooltip saying from how many: it is then about the largest latency seen."""
    needed = TAIL_IOS.get(metric)
    if needed is None or row is None or row.get("status") != "ok":
        return cell
    backed = row.get(metric.replace("_us", "_backed"))
    if backed is pd.NA or backed is None or bool(backed):
        return cell
    ios = row.get(metric.replace("_us", "_ios"))
    count = f"{ios:,.0f}" if isinstance(ios, int | float) and math.isfinite(ios) else "?"
    name = {"lat_p999_us": "99.9th", "lat_p9999_us": "99.99th"}[metric]
    why = (f"from {count} I/Os (the fewest of a window round, in the direction counted): "
           f"fewer than {needed:,}, so this is about the largest latency seen, not a {name} "
           "percentile")  # fmt: skip
    cell.cls = f"{cell.cls} thin".strip()
    cell.tip = f"{why}; {cell.tip}" if cell.tip else why
    return cell


def _jobs_grid(data: pd.DataFrame, part: PtsTables) -> Grid:
    """Any other test's jobs: IOPS, MB/s and mean latency per job, devices side by side."""
    cells = _by(data, "label", "job")
    rows = [[Cell(str(job)), *[_cell(cells.get((label, job)), metric) for label in part.labels
                               for metric in ("iops", "bw_bytes", "lat_mean_us")]]
            for job in _values(data, "job")]  # fmt: skip
    return Grid("each job", _device_heads(part, ["job"], ["IOPS", "MB/s", "mean lat"]), rows)


def _dirth(data: pd.DataFrame, part: PtsTables,
           labels: list[str]) -> tuple[list[Grid], list[dict[str, str]], list[str]]:  # fmt: skip
    """DIRTH: a table and a chart per device, and each device's answer."""
    grids, charts, answers = [], [], []
    for label in part.labels:
        mine = data[data["label"] == label]
        if mine.empty:
            continue
        answer = dirth_answer(label, mine[mine["status"] == "ok"])
        answers.append(answer.words)
        grids.append(_dirth_grid(mine, label))
        index = labels.index(label) if label in labels else 0
        spec = dirth_chart(mine[mine["status"] == "ok"], label, index, answer)
        drawn = svg.svg(spec) if spec is not None else None
        if spec is not None and drawn is not None:
            charts.append({"title": spec.title, "svg": drawn, "legend": svg.keys(spec),
                           "cls": "dirth-chart"})  # fmt: skip
    return grids, charts, answers


def _dirth_grid(mine: pd.DataFrame, label: str) -> Grid:
    """One device's DIRTH table: threads down, queue depth across; IOPS over mean latency,
    a point whose mean latency passed 5 ms marked."""
    depths = sorted(int(q) for q in mine["iodepth"].dropna().unique())
    threads = sorted(int(t) for t in mine["numjobs"].dropna().unique())
    cells = {(int(r["numjobs"]), int(r["iodepth"])): r for r in mine.to_dict("records")}
    rows = []
    for count in threads:
        row = [Cell(str(count))]
        for depth in depths:
            found = cells.get((count, depth))
            cell = _cell(found, "iops")
            if found is not None and found.get("status") == "ok":
                latency = found.get("lat_mean_us")
                cell.sub = _formatted("lat_mean_us", latency)
                if isinstance(latency, float) and latency >= DIRTH_LIMIT_US:
                    cell.sub += " ›5 ms"
            row.append(cell)
        rows.append(row)
    heads = [[Head("threads"), *[Head(f"QD {depth}") for depth in depths]]]
    return Grid(f"{label}: IOPS, and mean latency under each", heads, rows)


def results_note(tables: PtsTables | None) -> str | None:
    """What the Results table's figures of PTS jobs are: their window's means."""
    if tables is None:
        return None
    windows = [f"{g.label} {g.group}: rounds {g.window[0]}–{g.window[-1]} of {len(g.rounds)}"
               + ("" if g.attained else " (not steady: its last rounds)")
               for g in tables.groups if g.window]  # fmt: skip
    where = "; ".join(windows) or "no group has a window yet"
    return ("SNIA PTS jobs: each figure is the mean over the job's group's measurement window, "
            "not over every round, and ± is the spread of those rounds (a job's repeats are its "
            f"rounds): {where}.")  # fmt: skip


def _time_results(test: str, part: PtsTables, labels: list[str]) -> SectionResults:
    """A test read over time (wsat, hir, xsr): its tables, charts and answers per device."""
    grids: list[Grid] = []
    charts: list[dict[str, str]] = []
    answers: list[str] = []
    for device in part.series:
        index = labels.index(device.label) if device.label in labels else 0
        if test == "wsat":
            answers.append(saturation(device).words)
            specs: list[LineChart | None] = list(wsat_charts(device, index))
        elif test == "hir":
            grids.append(_recovery_grid(device.label, recovery(device, part.steady_mean(device)),
                                        device.log_ms))  # fmt: skip
            specs = [hir_chart(device, index)]
        else:
            grids.append(_settled_grid(device.label, settled(device)))
            specs = [xsr_chart(device, index)]
        charts += [_drawn(spec, f"{test}-chart") for spec in specs if spec is not None]
    return grids, charts, answers


def _drawn(spec: LineChart, cls: str) -> dict[str, str]:
    return {"title": spec.title, "svg": svg.svg(spec) or "", "legend": svg.keys(spec),
            "cls": cls}  # fmt: skip


def _recovery_grid(label: str, rows: list[Recovery], log_ms: int) -> Grid:
    """One device's host idle recovery: per idle time, the bursts against the baseline."""
    body = []
    for row in rows:
        segment = row.segment
        idle = f"{(segment.idle_s or 0) * 1000:g} ms"
        baseline = Cell(format_count(row.baseline_iops) if row.baseline_iops > 0 else "-",
                        row.baseline_job or "no baseline")  # fmt: skip
        if not segment.resolved:
            why = (f"each {(segment.burst_s or 0) * 1000:g} ms burst or {idle} idle time is "
                   f"shorter than two {log_ms} ms log intervals: the time series cannot tell "
                   "the bursts apart")  # fmt: skip
            body.append(
                [
                    Cell(segment.job),
                    Cell(idle, cls="key"),
                    Cell("not resolved", why, "muted", why),
                    baseline,
                    Cell("-"),
                ]
            )
            continue
        ratio = f"{row.ratio:.2f}×" if math.isfinite(row.ratio) else "-"
        body.append([Cell(segment.job), Cell(idle, cls="key"),
                     Cell(format_count(row.burst_iops), f"{row.bursts} bursts"), baseline,
                     Cell(ratio, "recovered" if row.ratio > 1 else "")])  # fmt: skip
    heads = [[Head(t) for t in ("segment", "idle time", "bursts' mean IOPS", "baseline IOPS",
                                "bursts ÷ baseline")]]  # fmt: skip
    return Grid(f"{label}: each idle time's bursts against the baseline before it", heads, body)


def _settled_grid(label: str, rows: list[Settled]) -> Grid:
    """One device's cross stimulus recovery: per segment, its settled MB/s and when."""
    body = [[Cell(row.segment.job), Cell(_formatted("bw_bytes", row.bw_bytes)),
             Cell("did not settle" if row.settle_s is None else f"{row.settle_s:.2f} s",
                  cls="muted" if row.settle_s is None else "")] for row in rows]  # fmt: skip
    heads = [[Head("segment"), Head("settled MB/s"), Head("settled after")]]
    return Grid(f"{label}: each segment's settled bandwidth (the mean of its last tenth)", heads,
                body)  # fmt: skip
