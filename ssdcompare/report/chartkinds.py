"""The kinds of chart the report draws, as a registry: each kind builds chart specs
(ssdcompare.report.chartspec) from the report's figures. The report
(ssdcompare.report.sections) draws every kind in `KINDS` as SVG into its sections;
ssdcompare.plot draws any of them as a matplotlib Figure. A kind added to `KINDS` appears in
both.

A kind's `over` says what it is built for, in order: the whole results (`whole`), each pattern
family that has steady jobs (`steady_families`: curves), or each family of the jobs drawn one
by one (`job_families`: per-job charts). Its `build` returns `PlacedChart`s for one of those:
a spec and where the report shows it (section, title, caption).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import pandas as pd

from ssdcompare.analysis.frame import is_false, is_true
from ssdcompare.analysis.persecond import timeseries
from ssdcompare.analysis.slo import Slo
from ssdcompare.analysis.summary import SERIES_SETTINGS, options_line
from ssdcompare.fio.result.models import DISTRIBUTION_PERCENTILES
from ssdcompare.judge.stats import aggregate_values
from ssdcompare.report import loadchart
from ssdcompare.report.chartspec import (
    Axis,
    Cell,
    Heatmap,
    Knee,
    LineChart,
    Mark,
    Series,
    Spec,
    latency_axis,
)
from ssdcompare.report.table import (
    FAMILY_ORDER,
    family_name,
    flush_words,
    record_limit,
    records,
    worst_limit,
)
from ssdcompare.units import format_bytes, format_count, format_latency, format_rate

OVERVIEW = "Overview"  # the section of the charts over every job, before the families'
PER_JOB_UP_TO = 200  # jobs; a larger suite draws per-job charts for some of them


@dataclass
class ChartInputs:
    """What charts are built from: the report's figures. `frame` has a row per run and
    direction, `summary` a row per job and device; in both, `cpu_bound` marks a result the
    CPU or the host limited. `rows_of` is the summary's first row of each (job, label),
    `ratios` IOPS against `baseline` per job (compare.side_by_side), `order` the jobs in the
    report's reading order, `labels` the devices in its order, `slos` the latency targets
    curves are answered at."""

    frame: pd.DataFrame
    summary: pd.DataFrame
    rows_of: dict[tuple[object, object], dict[str, Any]]
    labels: list[str]
    baseline: str
    ratios: pd.DataFrame
    order: list[str]
    slos: list[Slo] = field(default_factory=list)

    @cached_property
    def ok(self) -> pd.DataFrame:
        return self.summary[self.summary["status"] == "ok"]

    @cached_property
    def steady_parts(self) -> dict[str, pd.DataFrame]:
        """Each family's results of steady jobs: bursty jobs have their own table, their IOPS
        count idle gaps, not a queue depth's worth; a curve's paced runs have their own chart
        (loadchart), their IOPS are the load they were given, not what a depth can do."""
        steady = self.ok[self.ok["thinktime_us"].isna()]
        if "curve_pct" in steady.columns:
            steady = steady[steady["curve_pct"].isna()]
        families = steady.assign(family=steady["rw"].map(family_name))
        return {str(name): part for name, part in families.groupby("family", sort=False)}

    @cached_property
    def curve_records(self) -> dict[str, list[dict[str, Any]]]:
        """Each family's steady results as records of the columns curves read (records of a
        few columns are quick to make), made once for every kind of curve."""
        columns = list(dict.fromkeys([*_CURVE_KEYS, *_CURVE_COLUMNS]))
        return {name: records(part, columns) for name, part in self.steady_parts.items()}

    @cached_property
    def distribution_runs(self) -> dict[object, dict[tuple[str, str], list[dict[str, Any]]]]:
        """The finished runs of every job drawn one by one, by job and (device, direction):
        the figures of its latency distribution."""
        runs = self.frame
        drawn = runs["job"].isin([job for jobs in self.per_job[0].values() for job in jobs])
        runs = runs[drawn & (runs["status"] == "ok") & (runs["direction"] != "sync")]
        columns = ["job", "label", "direction", "cpu_bound", "lat_dist_us", *_THREE]
        by_job: dict[object, dict[tuple[str, str], list[dict[str, Any]]]] = {}
        for record in records(runs, columns):
            mine = by_job.setdefault(record["job"], {})
            mine.setdefault((str(record["label"]), str(record["direction"])), []).append(record)
        return by_job

    @cached_property
    def job_family(self) -> dict[object, str]:
        ok = self.ok.drop_duplicates("job")
        return ok.set_index("job")["rw"].map(family_name).to_dict()

    @cached_property
    def per_job(self) -> tuple[dict[str, list[str]], list[str], str]:
        """The jobs drawn one by one, per family and in all, and a note when not all are:
        a thousand small charts say less than a few, so a large suite's are each queue-depth
        curve's lightest and heaviest load, every job outside such a curve, and (over time)
        every job with a write cliff."""
        jobs_of: dict[str, list[str]] = {}
        for job in self.order:
            if job in self.job_family:
                jobs_of.setdefault(self.job_family[job], []).append(job)
        if len(self.order) <= PER_JOB_UP_TO:
            return jobs_of, self.order, ""
        ends = _curve_ends(self.ok)
        cliffs = set(self.ok.loc[self.ok["cliff_s"].notna(), "job"])
        jobs_of = {name: [j for j in jobs if j in ends] for name, jobs in jobs_of.items()}
        shown = [j for j in self.order if j in ends or j in cliffs]
        note = (
            f"Latency distributions and IOPS over time: {len(self.order)} jobs, so they are "
            "drawn for each queue-depth curve's lowest and highest depth, every job outside "
            "such a curve, and (over time) every job with a write cliff. ssdcompare.load() "
            "(column lat_dist_us) and ssdcompare.timeseries() hold every job's."
        )
        return jobs_of, shown, note


@dataclass
class PlacedChart:
    """A chart spec and where the report shows it: its section (a family, or OVERVIEW), its
    title there and a caption after it. `spec` None: there was nothing to chart."""

    section: str
    title: str
    spec: Spec | None
    caption: str = ""
    wide: bool = False  # drawn at its own size, on a row of its own


Over = Callable[[ChartInputs, list[str]], list[str | None]]
Build = Callable[[ChartInputs, "str | None", list[str]], list[PlacedChart]]


@dataclass(frozen=True)
class ChartKind:
    """A kind of chart: its name (ssdcompare.plot's), the heading of its charts in a report
    section, what it is built `over` and how (`build`, given one of those and a list for
    notes on what was left out)."""

    name: str
    heading: str
    over: Over
    build: Build
    needs: str = ""  # what results it needs, in words, for when there is nothing to draw


def section_rank(section: str) -> int:
    """Where a report section goes: the overview first, then the families in the tables'
    order."""
    return -1 if section == OVERVIEW else FAMILY_ORDER.get(section, 99)


def whole(inputs: ChartInputs, notes: list[str]) -> list[str | None]:
    """Built once, over all the results."""
    return [None]


def steady_families(inputs: ChartInputs, notes: list[str]) -> list[str | None]:
    """Built for each family that has steady jobs (curves across jobs)."""
    return list(inputs.steady_parts)


def job_families(inputs: ChartInputs, notes: list[str]) -> list[str | None]:
    """Built for each family of the jobs drawn one by one (a chart per job)."""
    jobs_of, _, note = inputs.per_job
    if note:
        notes.append(note)
    return list(jobs_of)


def passes(kinds: dict[str, ChartKind]) -> Iterator[list[ChartKind]]:
    """The kinds in runs that share what they are built over: a run is built one family at
    a time, each family's kinds together, so a section reads in the order of `kinds`."""
    for _, run in itertools.groupby(kinds.values(), key=lambda kind: kind.over):
        yield list(run)


# a chart draws one line per device: results from differing jobfiles are flagged on it
_DIFFERING = "; includes results whose jobfiles differ from the baseline's (see the notes)"
# the workload settings a curve's points share, and the one it sweeps (here iodepth first)
_CURVE_KEYS = ["iodepth", *SERIES_SETTINGS]
_CURVE_COLUMNS = ["label", "job", "cpu_bound", "verdict", "knee_qd", "comparable",
                  *[f"{m}_{a}" for m in ("iops", "bw_bytes", "lat_mean_us", "lat_p99_us")
                    for a in ("value", "min", "max")]]  # fmt: skip


def _curve_words(key: dict[str, Any], leave: str) -> str:
    """What a curve's points share, in words ("4 KiB, QD32, 2 jobs"), but the swept `leave`."""
    words = []
    if leave != "bs_bytes":
        words.append(format_bytes(key["bs_bytes"]))
    if leave != "iodepth":
        words.append(f"QD{int(key['iodepth'])}")
    state = key.get("state")
    if state is not None and pd.notna(state):
        words.append(f"{state} drive")
    mix = key.get("rwmixread")
    if (
        leave != "rwmixread"
        and mix is not None
        and pd.notna(mix)
        and key["rw"] in ("rw", "randrw")
    ):
        words.append(f"{int(mix)} % read")
    numjobs = key.get("numjobs")
    if numjobs is not None and pd.notna(numjobs) and int(numjobs) > 1:
        words.append(f"{int(numjobs)} jobs")
    words += flush_words(key.get("fsync"), key.get("fdatasync"))
    extra = options_line(key)
    if extra is not None:
        words.append(extra)
    return ", ".join(words)


def _curves(
    found_in: list[dict[str, Any]], sweep: str
) -> list[tuple[str, str, list[dict[str, Any]]]]:
    """The curves of one family's results (`found_in`: ChartInputs.curve_records) where
    `sweep` rises along x and every other setting stays: (what they share in words, a
    caption, their summary records). A curve needs two settings (three for the read share)."""
    keys = [k for k in _CURVE_KEYS if k != sweep]
    curves: dict[tuple[object, ...], list[dict[str, Any]]] = {}
    for record in found_in:  # NaN and NA are one "not set" value in a key, as in a groupby
        key = tuple(None if _absent(record[k]) else record[k] for k in keys)
        curves.setdefault(key, []).append(record)
    least = 3 if sweep == "rwmixread" else 2
    found = []
    for key, points in curves.items():
        if len({p[sweep] for p in points if not _absent(p[sweep])}) < least:
            continue
        what = _curve_words(dict(zip(keys, key, strict=True)), sweep)
        differing = any(is_false(point["comparable"]) for point in points)
        found.append((what, _DIFFERING if differing else "", points))
    return found


def _series(
    points: list[dict[str, Any]],
    labels: list[str],
    x: str,
    y: str,
    tip: Callable[..., str],
    bars: tuple[str, str] | None = None,
    thin: bool = False,
) -> list[Series]:
    """One chart line per device of `points` (summary records), in the report's device
    order."""
    by_label: dict[str, list[dict[str, Any]]] = {}
    for point in points:
        by_label.setdefault(str(point["label"]), []).append(point)
    found = []
    for label, rows in by_label.items():
        rows = sorted(rows, key=lambda r: _number(r[x]))
        found.append(
            Series(
                index=labels.index(label),
                xs=[_number(r[x]) for r in rows],
                ys=[_number(r[y]) for r in rows],
                tips=[tip(r) for r in rows],
                bound=[is_true(r["cpu_bound"]) for r in rows],
                lows=[_number(r[bars[0]]) for r in rows] if bars else None,
                highs=[_number(r[bars[1]]) for r in rows] if bars else None,
                thin=thin,
                label=label,
            )
        )
    return found


def _number(value: Any) -> float:
    """A figure as a float; NaN for what is not known (None, NA)."""
    return math.nan if _absent(value) else float(value)


def _absent(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and value != value)


def _point_tip(row: dict[str, Any], where: str, what: str) -> str:
    """A point's tooltip: where on the curve, the figure, and a limit. Its device is its
    series' (the report names it once per group of points and puts it before each on load)."""
    limit = record_limit(row)
    return f"{where}: {what}" + (f" ({limit})" if limit else "")


def _at_depth(row: dict[str, Any]) -> str:
    return f"QD{int(row['iodepth'])}"


def _int_text(value: float) -> str:
    return str(int(value))


def _size_tick(value: float) -> str:
    return format_bytes(int(value)).replace(" ", "").replace("iB", "")


_DEPTH = Axis("queue depth", "log2", ticks=_int_text, at_data=True)
_LATENCY = latency_axis()


def queue_depth_charts(
    inputs: ChartInputs, family: str | None, notes: list[str]
) -> list[PlacedChart]:
    """Per queue-depth curve of a family: IOPS (with the saturation knees), and mean latency
    with p99 as thin lines, against queue depth; a line per device."""
    found = []
    labels = inputs.labels
    for what, caption, points in _curves(inputs.curve_records[str(family)], "iodepth"):
        iops = _series(
            points, labels, "iodepth", "iops_value",
            lambda r: _point_tip(r, _at_depth(r), f"{format_count(r['iops_value'])} IOPS"),
            ("iops_min", "iops_max"),
        )  # fmt: skip
        knees = [
            Knee(labels.index(str(r["label"])), float(r["iodepth"]), float(r["iops_value"]),
                 f"{r['label']}: saturation knee at QD{int(r['iodepth'])}")
            for r in points
            if pd.notna(r.get("knee_qd")) and r["iodepth"] == r["knee_qd"]
        ]  # fmt: skip
        spec = LineChart(f"IOPS — {what}", iops, _DEPTH, Axis("IOPS", zero=True), knees=knees)
        found.append(PlacedChart(str(family), f"IOPS against queue depth: {what}", spec, caption))
        latency = LineChart(f"latency (mean, thin: p99) — {what}", _latency_lines(points, labels),
                            _DEPTH, _LATENCY)  # fmt: skip
        title = f"Mean latency against queue depth: {what}"
        found.append(PlacedChart(str(family), title, latency, " (thin lines: p99)" + caption))
    return found


def _latency_lines(points: list[dict[str, Any]], labels: list[str]) -> list[Series]:
    """Mean latency per device, and p99 as thin lines without markers of their own (their
    figures are in the mean's tooltips)."""
    mean = _series(
        points, labels, "iodepth", "lat_mean_us_value",
        lambda r: _point_tip(r, _at_depth(r), f"mean {format_latency(r['lat_mean_us_value'])}, "
                             f"p99 {format_latency(r['lat_p99_us_value'])}"),
        ("lat_mean_us_min", "lat_mean_us_max"),
    )  # fmt: skip
    p99 = _series(points, labels, "iodepth", "lat_p99_us_value", lambda r: "", thin=True)
    for line in p99:
        line.markers, line.tips, line.bound = False, [], []
    return mean + p99


def block_size_charts(
    inputs: ChartInputs, family: str | None, notes: list[str]
) -> list[PlacedChart]:
    """Per block-size curve of a family: throughput (MB/s) against block size."""
    found = []
    for what, caption, points in _curves(inputs.curve_records[str(family)], "bs_bytes"):
        lines = _series(
            points, inputs.labels, "bs_bytes", "bw_bytes_value",
            lambda r: _point_tip(r, format_bytes(r["bs_bytes"]), format_rate(r["bw_bytes_value"])),
            ("bw_bytes_min", "bw_bytes_max"),
        )  # fmt: skip
        x = Axis("block size", "log2", ticks=_size_tick, at_data=True)
        spec = LineChart(f"MB/s — {what}", _in_mb(lines), x, Axis("MB/s", zero=True))
        title = f"Throughput against block size: {what}"
        found.append(PlacedChart(str(family), title, spec, caption))
    return found


def latency_load_charts(
    inputs: ChartInputs, family: str | None, notes: list[str]
) -> list[PlacedChart]:
    """Per latency-vs-load curve of a family: p50, p99 and p99.9 latency against the IOPS
    achieved, paced points joined, closed-loop runs of the same workload hollow, the latency
    targets with each device's answer on them (ssdcompare.report.loadchart)."""
    charts = loadchart.load_charts(inputs.frame, inputs.labels, str(family), inputs.slos,
                                   inputs.baseline)  # fmt: skip
    return [PlacedChart(str(family), title, spec, caption) for title, caption, spec in charts]


def _in_mb(lines: list[Series]) -> list[Series]:
    for line in lines:
        line.ys = [v / 1e6 for v in line.ys]
        line.lows = [v / 1e6 for v in line.lows] if line.lows is not None else None
        line.highs = [v / 1e6 for v in line.highs] if line.highs is not None else None
    return lines


def mix_charts(inputs: ChartInputs, family: str | None, notes: list[str]) -> list[PlacedChart]:
    """Per read/write-mix curve of a family: IOPS against the read share (100 % at left)."""
    found = []
    for what, caption, points in _curves(inputs.curve_records[str(family)], "rwmixread"):
        lines = _series(
            points, inputs.labels, "rwmixread", "iops_value",
            lambda r: _point_tip(r, f"{r['rwmixread']} % read",
                                 f"{format_count(r['iops_value'])} IOPS"),
            ("iops_min", "iops_max"),
        )  # fmt: skip
        x = Axis("read share (%)", reverse=True)
        spec = LineChart(f"IOPS — {what}", lines, x, Axis("IOPS", zero=True))
        found.append(PlacedChart(str(family), f"Read/write mix: {what}", spec, caption))
    return found


_THREE = ("lat_p50_us", "lat_p99_us", "lat_p999_us")
_SAID = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999)  # a distribution's tooltip names these


def distribution_charts(
    inputs: ChartInputs, family: str | None, notes: list[str]
) -> list[PlacedChart]:
    """Each job's latency distribution (percentiles on a 'nines' axis), devices overlaid;
    the average of the repeats at each percentile. A mixed job's writes are the thin lines."""
    jobs = inputs.per_job[0].get(str(family), [])
    found = []
    for job in jobs:
        parts = inputs.distribution_runs.get(job, {})
        directions = {direction for _, direction in parts}
        lines = [_distribution(label, direction, mine, inputs.labels, len(directions) > 1)
                 for (label, direction), mine in parts.items()]  # fmt: skip
        x = Axis("percentile (%)", "nines", ticks=lambda v: f"{v:g}")
        spec = LineChart(f"{job}: latency by percentile", lines, x, _LATENCY)
        found.append(PlacedChart(str(family), f"Latency distribution: {job}", spec))
    return found


def _distribution(
    label: str, direction: str, mine: list[dict[str, Any]], labels: list[str], mixed: bool
) -> Series:
    """One device's latency by percentile in one direction, its repeats averaged."""
    curves = [r["lat_dist_us"] for r in mine if isinstance(r["lat_dist_us"], tuple)]
    if curves:
        xs = list(DISTRIBUTION_PERCENTILES)
        ys = [aggregate_values([c[i] for c in curves], "mean") for i in range(len(xs))]
    else:  # results without a distribution: fio's three percentiles
        xs = [50.0, 99.0, 99.9]
        ys = [aggregate_values([_number(r[c]) for r in mine], "mean") for c in _THREE]
    said = ", ".join(f"p{x:g} {format_latency(y)}" for x, y in zip(xs, ys, strict=True)
                     if x in _SAID and y == y)  # fmt: skip
    bound = any(is_true(r["cpu_bound"]) for r in mine)
    return Series(
        index=labels.index(label),
        xs=xs,
        ys=ys,
        tip=f"{label} {direction}: {said}",
        markers=len(xs) <= len(_THREE),
        # a bound run's curve: one mark at its tail, not a ring on every point
        bound=[False] * (len(xs) - 1) + [bound],
        thin=direction == "write" and mixed,
        label=label,
    )


def _curve_ends(ok: pd.DataFrame) -> set[object]:
    """The jobs at the lowest and highest queue depth of each queue-depth curve, and the jobs
    that are in no such curve."""
    keys = [k for k in _CURVE_KEYS if k != "iodepth"]
    curves: dict[tuple[object, ...], list[tuple[float, object]]] = {}
    for record in records(ok, [*keys, "iodepth", "job"]):  # NaN and NA: one "not set" value
        key = tuple(None if _absent(record[k]) else record[k] for k in keys)
        curves.setdefault(key, []).append((_number(record["iodepth"]), record["job"]))
    found: set[object] = set()
    for points in curves.values():
        depths = {depth for depth, _ in points if not math.isnan(depth)}
        ends = (min(depths), max(depths)) if len(depths) >= 2 else None
        found.update(job for depth, job in points if ends is None or depth in ends)
    return found


def timeseries_charts(
    inputs: ChartInputs, family: str | None, notes: list[str]
) -> list[PlacedChart]:
    """IOPS second by second, a small chart per job in its family's section, devices
    overlaid (repeats averaged), each device's write cliff a dashed line in its colour."""
    shown = inputs.per_job[1]
    lines_of = _job_seconds(inputs.frame, notes, shown)
    cliffs_of: dict[object, list[dict[str, Any]]] = {}
    for cliff in records(inputs.ok[["job", "label", "cliff_s"]].dropna()):
        cliffs_of.setdefault(cliff["job"], []).append(cliff)
    found = []
    for job in [j for j in shown if j in lines_of]:
        name = inputs.job_family.get(job)
        if name is None:
            continue
        lines = [Series(index=inputs.labels.index(label), xs=xs, ys=ys, markers=False,
                        label=label) for label, (xs, ys) in lines_of[job].items()]  # fmt: skip
        marks = [
            Mark(inputs.labels.index(str(c["label"])), float(c["cliff_s"]),
                 f"{c['label']}: write cliff at {c['cliff_s']:.0f} s")
            for c in cliffs_of.get(job, [])
        ]  # fmt: skip
        spec = LineChart(f"{job}: IOPS second by second", lines, Axis("seconds"),
                         Axis("IOPS", zero=True), marks=marks)  # fmt: skip
        found.append(PlacedChart(name, f"IOPS over time: {job}", spec))
    return found


def _job_seconds(
    frame: pd.DataFrame, notes: list[str], jobs: list[str]
) -> dict[object, dict[str, tuple[list[float], list[float]]]]:
    """The seconds and IOPS of each of `jobs` per device (_mean_seconds), in one pass."""
    mean = _mean_seconds(frame, notes, jobs)
    found: dict[object, dict[str, tuple[list[float], list[float]]]] = {}
    if mean is None:
        return found
    columns = [mean[c].tolist() for c in ("job", "label", "t_s", "iops")]
    for job, label, second, iops in zip(*columns, strict=True):
        xs, ys = found.setdefault(job, {}).setdefault(str(label), ([], []))
        xs.append(second)
        ys.append(iops)
    return found


def _mean_seconds(frame: pd.DataFrame, notes: list[str], jobs: list[str]) -> pd.DataFrame | None:
    """IOPS per job (of `jobs`), device and second: directions added within a run, then the
    frame's runs averaged. None without any second logged."""
    folders = [p for p in dict.fromkeys(frame["sweep"].dropna()) if p]
    if not folders:
        return None
    damaged: list[str] = []
    seconds = timeseries(folders, damaged)
    notes += [f"Time series of a run left out: {error}" for error in damaged]
    if seconds.empty:
        return None
    seconds = seconds[seconds["job"].isin(jobs)]
    # the runs the frame holds, named by its labels: of a PTS test, its window's rounds
    runs = frame[["sweep", "host", "device", "label", "job", "repeat"]].drop_duplicates()
    seconds = seconds.merge(runs, on=["sweep", "host", "device", "job", "repeat"], how="inner")
    seconds = seconds[seconds["iops"].notna()]
    per_run = seconds.groupby(["job", "label", "repeat", "t_s"], sort=False)["iops"].sum()
    return per_run.groupby(level=["job", "label", "t_s"], sort=False).mean().reset_index()


def overview_charts(
    inputs: ChartInputs, family: str | None, notes: list[str]
) -> list[PlacedChart]:
    """Every job's IOPS ratio to the baseline per device, as one heatmap."""
    baseline = inputs.baseline
    title = f"IOPS against {baseline}, every job"
    present = set(inputs.summary["label"])  # a selection of devices keeps their colours
    others = [label for label in inputs.labels if label != baseline and label in present]
    spec = None
    if others and not inputs.ratios.empty:
        cells = {}
        for r, job in enumerate(inputs.order):
            for c, label in enumerate(others):
                cell = _ratio_cell(inputs, job, label)
                if cell is not None:
                    cells[(r, c)] = cell
        spec = Heatmap(title, list(inputs.order), others, cells)
    return [PlacedChart(OVERVIEW, title, spec, wide=True)]


def _ratio_cell(inputs: ChartInputs, job: str, label: str) -> Cell | None:
    """A device's IOPS against the baseline's for one job, marked as the tables mark the
    worse of the two sides: grey for the CPU or the host, the hatch for a disturbance."""
    baseline, ratios = inputs.baseline, inputs.ratios
    base, row = inputs.rows_of.get((job, baseline)), inputs.rows_of.get((job, label))
    if row is None or base is None or row["status"] != "ok" or base["status"] != "ok":
        return None
    ratio = ratios.at[job, f"{label}/{baseline}"] if job in ratios.index else None
    ratio = float(ratio) if ratio is not None and pd.notna(ratio) else None
    limits = {record_limit(row), record_limit(base)} - {""}
    tip = f"{job}: {label} " + (f"×{ratio:.2f}" if ratio is not None else "no ratio")
    if limits:  # the heading says the rest: IOPS against the baseline
        tip += f", {' / '.join(sorted(limits))}"
    elif is_false(row.get("significant")):
        tip += ", not significant"
    worst = worst_limit(limits)
    # a throttling drive is hatched as a disturbance is; the tip says which
    mark = "bound" if worst.endswith("bound") else "disturbed" if worst == "throttled" else worst
    return Cell(ratio, tip, mark)


# every kind, in the order a report section shows them
KINDS: dict[str, ChartKind] = {
    kind.name: kind
    for kind in (
        ChartKind("overview", "Every job against the baseline", whole, overview_charts,
                  "two or more devices that ran the same jobs"),
        ChartKind("queue_depth", "IOPS and latency against queue depth", steady_families,
                  queue_depth_charts, "a job run at two or more queue depths"),
        ChartKind("latency_curve", "Latency against load", steady_families,
                  latency_load_charts, "a job run with a latency-vs-load curve (curve: [...])"),
        ChartKind("block_size", "Throughput against block size", steady_families,
                  block_size_charts, "a job run with two or more block sizes"),
        ChartKind("mix", "IOPS against the read share", steady_families, mix_charts,
                  "a mixed job run with three or more read shares"),
        ChartKind("latency_distribution", "Latency distribution per job", job_families,
                  distribution_charts, "a job that did I/O"),
        ChartKind("timeseries", "IOPS over time per job", whole, timeseries_charts,
                  "fio's per-second logs (every sweep keeps them)"),
    )
}  # fmt: skip
