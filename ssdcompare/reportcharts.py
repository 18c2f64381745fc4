"""The report's charts: which are drawn from the results, from which figures, and in which
section (an overview of every ratio, then each pattern family's curves, latency distributions
and time series). The drawing itself is ssdcompare.charts'."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ssdcompare import charts
from ssdcompare.fioresult import DISTRIBUTION_PERCENTILES
from ssdcompare.frame import SERIES_SETTINGS, is_false, is_true
from ssdcompare.persecond import timeseries
from ssdcompare.reporttable import (
    FAMILY_ORDER,
    family_name,
    flush_words,
    record_limit,
    worst_limit,
)
from ssdcompare.stats import aggregate_values
from ssdcompare.units import format_bytes, format_count, format_latency, format_rate


@dataclass
class ChartGroup:
    """Charts of one kind within a section (e.g. IOPS against queue depth), side by side."""

    title: str
    charts: list[dict[str, str]] = field(default_factory=list)


@dataclass
class ChartSection:
    """One family's charts (random reads, ...), or the overview: a collapsible section."""

    name: str
    groups: list[ChartGroup] = field(default_factory=list)

    @property
    def count(self) -> int:
        return sum(len(g.charts) for g in self.groups)


def _add_chart(
    group: ChartGroup,
    notes: list[str],
    title: str,
    draw: Callable[..., str | None],
    *args: object,
    caption: str = "",
    wide: bool = False,
    **kwargs: object,
) -> None:
    """Draw one chart into `group` under `title` (and `caption`); one that cannot be drawn
    becomes a line in `notes`. A `wide` chart is drawn at its own size, on a row of its own."""
    try:
        svg = draw(*args, **kwargs)
    except Exception as err:  # a chart is never worth losing the whole report over
        notes.append(f"{title}: left out, it could not be drawn ({type(err).__name__}: {err}).")
        return
    if svg is None:
        notes.append(f"{title}: left out, there is no figure to plot (no I/O was measured).")
        return
    group.charts.append({"title": title + caption, "svg": svg, "wide": wide})


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
    extra = key.get("extra_options")
    if extra is not None and pd.notna(extra):
        words.append(str(extra))
    return ", ".join(words)


def _series(
    points: list[dict[str, Any]],
    labels: list[str],
    x: str,
    y: str,
    tip: Callable[..., str],
    bars: tuple[str, str] | None = None,
    thin: bool = False,
) -> list[charts.Series]:
    """One chart line per device of `points` (summary records), in the report's device
    order."""
    by_label: dict[str, list[dict[str, Any]]] = {}
    for point in points:
        by_label.setdefault(str(point["label"]), []).append(point)
    found = []
    for label, rows in by_label.items():
        rows = sorted(rows, key=lambda r: _number(r[x]))
        found.append(
            charts.Series(
                index=labels.index(label),
                xs=[_number(r[x]) for r in rows],
                ys=[_number(r[y]) for r in rows],
                tips=[tip(r) for r in rows],
                bound=[is_true(r["cpu_bound"]) for r in rows],
                lows=[_number(r[bars[0]]) for r in rows] if bars else None,
                highs=[_number(r[bars[1]]) for r in rows] if bars else None,
                thin=thin,
            )
        )
    return found


def _number(value: Any) -> float:
    """A figure as a float; NaN for what is not known (None, NA)."""
    return math.nan if _absent(value) else float(value)


def _absent(value: Any) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and value != value)


def _point_tip(row: dict[str, Any], where: str, what: str) -> str:
    """A point's tooltip: the device, where on the curve, the figure, and a limit."""
    limit = record_limit(row)
    return f"{row['label']}, {where}: {what}" + (f" ({limit})" if limit else "")


def _at_depth(row: dict[str, Any]) -> str:
    return f"QD{int(row['iodepth'])}"


def _curves(
    section: ChartSection, notes: list[str], ok: pd.DataFrame, labels: list[str], sweep: str
) -> None:
    """The charts where one workload setting rises along x, devices overlaid: queue depth
    (IOPS, and mean and p99 latency), block size (MB/s) or read share (IOPS)."""
    keys = [k for k in _CURVE_KEYS if k != sweep]
    # the columns the charts read: records of a few columns are quick to make
    records = ok[list(dict.fromkeys([*_CURVE_KEYS, *_CURVE_COLUMNS]))].to_dict("records")
    curves: dict[tuple[object, ...], list[dict[str, Any]]] = {}
    for record in records:  # NaN and NA are one "not set" value in a key, as in a groupby
        key = tuple(None if _absent(record[k]) else record[k] for k in keys)
        curves.setdefault(key, []).append(record)
    first = ChartGroup(
        {
            "iodepth": "IOPS and latency against queue depth",
            "bs_bytes": "Throughput against block size",
            "rwmixread": "IOPS against the read share",
        }[sweep]
    )
    least = 3 if sweep == "rwmixread" else 2
    for key, points in curves.items():
        if len({p[sweep] for p in points if not _absent(p[sweep])}) < least:
            continue
        what = _curve_words(dict(zip(keys, key, strict=True)), sweep)
        caption = _DIFFERING if _is_false_any(points) else ""
        if sweep == "iodepth":
            iops = _series(
                points,
                labels,
                "iodepth",
                "iops_value",
                lambda r: _point_tip(r, _at_depth(r), f"{format_count(r['iops_value'])} IOPS"),
                ("iops_min", "iops_max"),
            )
            knees = [
                (
                    labels.index(str(r["label"])),
                    float(r["iodepth"]),
                    float(r["iops_value"]),
                    f"{r['label']}: saturation knee at QD{int(r['iodepth'])}",
                )
                for r in points
                if pd.notna(r.get("knee_qd")) and r["iodepth"] == r["knee_qd"]
            ]
            _add_chart(
                first,
                notes,
                f"IOPS against queue depth: {what}",
                charts.line_chart,
                f"IOPS — {what}",
                iops,
                charts.Axis("queue depth", "log2", ticks=_int_text, at_data=True),
                charts.Axis("IOPS", zero=True),
                knees=knees,
                caption=caption,
            )
            mean = _series(
                points,
                labels,
                "iodepth",
                "lat_mean_us_value",
                lambda r: _point_tip(
                    r,
                    _at_depth(r),
                    f"mean {format_latency(r['lat_mean_us_value'])}, "
                    f"p99 {format_latency(r['lat_p99_us_value'])}",
                ),
                ("lat_mean_us_min", "lat_mean_us_max"),
            )
            # the p99 line: its figures are in the mean's tooltips, so no markers of its own
            p99 = _series(points, labels, "iodepth", "lat_p99_us_value", lambda r: "", thin=True)
            for line in p99:
                line.markers, line.tips, line.bound = False, [], []
            _add_chart(
                first,
                notes,
                f"Mean latency against queue depth: {what}",
                charts.line_chart,
                f"latency (mean, thin: p99) — {what}",
                mean + p99,
                charts.Axis("queue depth", "log2", ticks=_int_text, at_data=True),
                charts.Axis("latency (log)", "log10", ticks=_latency_tick),
                caption=" (thin lines: p99)" + caption,
            )
        elif sweep == "bs_bytes":
            lines = _series(
                points,
                labels,
                "bs_bytes",
                "bw_bytes_value",
                lambda r: _point_tip(
                    r, format_bytes(r["bs_bytes"]), format_rate(r["bw_bytes_value"])
                ),
                ("bw_bytes_min", "bw_bytes_max"),
            )
            _add_chart(
                first,
                notes,
                f"Throughput against block size: {what}",
                charts.line_chart,
                f"MB/s — {what}",
                _in_mb(lines),
                charts.Axis("block size", "log2", ticks=_size_tick, at_data=True),
                charts.Axis("MB/s", zero=True),
                caption=caption,
            )
        else:
            lines = _series(
                points,
                labels,
                "rwmixread",
                "iops_value",
                lambda r: _point_tip(
                    r, f"{r['rwmixread']} % read", f"{format_count(r['iops_value'])} IOPS"
                ),
                ("iops_min", "iops_max"),
            )
            _add_chart(
                first,
                notes,
                f"Read/write mix: {what}",
                charts.line_chart,
                f"IOPS — {what}",
                lines,
                charts.Axis("read share (%)", reverse=True),
                charts.Axis("IOPS", zero=True),
                caption=caption,
            )
    if first.charts:
        section.groups.append(first)


def _in_mb(lines: list[charts.Series]) -> list[charts.Series]:
    for line in lines:
        line.ys = [v / 1e6 for v in line.ys]
        line.lows = [v / 1e6 for v in line.lows] if line.lows is not None else None
        line.highs = [v / 1e6 for v in line.highs] if line.highs is not None else None
    return lines


def _int_text(value: float) -> str:
    return str(int(value))


def _size_tick(value: float) -> str:
    return format_bytes(int(value)).replace(" ", "").replace("iB", "")


def _latency_tick(value: float) -> str:
    """A latency tick (µs) in few characters: 20µs, 1ms, 2.5s."""
    for limit, unit in ((1e6, "s"), (1e3, "ms")):
        if value >= limit:
            return f"{value / limit:g}{unit}"
    return f"{value:g}µs"


def _distributions(
    section: ChartSection, notes: list[str], runs: pd.DataFrame, jobs: list[str], labels: list[str]
) -> None:
    """Each job's latency distribution (percentiles on a 'nines' axis), devices overlaid;
    the average of the repeats at each percentile. A mixed job's writes are the thin lines."""
    group = ChartGroup("Latency distribution per job")
    wanted = set(jobs)
    runs = runs[(runs["status"] == "ok") & (runs["direction"] != "sync")]
    columns = ["job", "label", "direction", "cpu_bound", "lat_dist_us", *_THREE]
    by_job: dict[object, dict[tuple[str, str], list[dict[str, Any]]]] = {}
    for record in runs[columns].to_dict("records"):
        if record["job"] in wanted:
            mine = by_job.setdefault(record["job"], {})
            mine.setdefault((str(record["label"]), str(record["direction"])), []).append(record)
    percentiles = list(DISTRIBUTION_PERCENTILES)
    for job in jobs:
        lines = []
        parts = by_job.get(job, {})
        directions = {direction for _, direction in parts}
        for (label, direction), mine in parts.items():
            curves = [r["lat_dist_us"] for r in mine if isinstance(r["lat_dist_us"], tuple)]
            if curves:
                xs = percentiles
                ys = [
                    aggregate_values([c[i] for c in curves], "mean")
                    for i in range(len(percentiles))
                ]
            else:  # results without a distribution: fio's three percentiles
                xs = [50.0, 99.0, 99.9]
                ys = [aggregate_values([_number(r[c]) for r in mine], "mean") for c in _THREE]
            said = ", ".join(f"p{x:g} {format_latency(y)}" for x, y in zip(xs, ys, strict=True)
                             if x in _SAID and y == y)  # fmt: skip
            bound = any(is_true(r["cpu_bound"]) for r in mine)
            lines.append(
                charts.Series(
                    index=labels.index(label),
                    xs=xs,
                    ys=ys,
                    tip=f"{label} {direction}: {said}",
                    markers=len(xs) <= len(_THREE),
                    # a bound run's curve: one mark at its tail, not a ring on every point
                    bound=[False] * (len(xs) - 1) + [bound],
                    thin=direction == "write" and len(directions) > 1,
                )
            )
        _add_chart(
            group,
            notes,
            f"Latency distribution: {job}",
            charts.line_chart,
            f"{job}: latency by percentile",
            lines,
            charts.Axis("percentile (%)", "nines", ticks=lambda v: f"{v:g}"),
            charts.Axis("latency (log)", "log10", ticks=_latency_tick),
        )
    if group.charts:
        section.groups.append(group)


_THREE = ("lat_p50_us", "lat_p99_us", "lat_p999_us")
_SAID = (50.0, 90.0, 99.0, 99.9, 99.99, 99.999)  # a distribution's tooltip names these
PER_JOB_UP_TO = 200  # jobs; a larger suite draws per-job charts for some of them (chart_sections)


def _curve_ends(ok: pd.DataFrame) -> set[object]:
    """The jobs at the lowest and highest queue depth of each queue-depth curve, and the jobs
    that are in no such curve."""
    keys = [k for k in _CURVE_KEYS if k != "iodepth"]
    found: set[object] = set()
    for _, part in ok.groupby(keys, sort=False, dropna=False):
        depths = part["iodepth"].astype("float64")
        if depths.nunique() < 2:
            found.update(part["job"])
        else:
            found.update(part.loc[depths.isin([depths.min(), depths.max()]), "job"])
    return found


def _timeseries_charts(
    sections: dict[str, ChartSection],
    notes: list[str],
    frame: pd.DataFrame,
    ok: pd.DataFrame,
    labels: list[str],
    order: list[str],
    family: dict[object, str],
) -> None:
    """IOPS second by second, a small chart per job in its family's section, devices
    overlaid (repeats averaged), each device's write cliff a dashed line in its colour."""
    folders = [p for p in dict.fromkeys(frame["sweep"].dropna()) if p]
    if not folders:
        return
    damaged: list[str] = []
    seconds = timeseries(folders, damaged)
    notes += [f"Time series of a run left out: {error}" for error in damaged]
    if seconds.empty:
        return
    names = frame[["sweep", "host", "device", "label"]].drop_duplicates()
    seconds = seconds.merge(names, on=["sweep", "host", "device"], how="inner")
    seconds = seconds[seconds["iops"].notna()]
    # directions added within a run, then runs averaged per second
    per_run = seconds.groupby(["job", "label", "repeat", "t_s"], sort=False)["iops"].sum()
    mean = per_run.groupby(level=["job", "label", "t_s"], sort=False).mean().reset_index()
    cliffs = ok[["job", "label", "cliff_s"]].dropna()
    groups: dict[str, ChartGroup] = {}
    parts = dict(list(mean.groupby("job", sort=False)))
    for job in [j for j in order if j in parts]:
        part = parts[job]
        name = family.get(job)
        if name is None:
            continue
        group = groups.setdefault(name, ChartGroup("IOPS over time per job"))
        lines = [
            charts.Series(
                index=labels.index(str(label)),
                xs=rows["t_s"].tolist(),
                ys=rows["iops"].tolist(),
                markers=False,
            )
            for label, rows in part.groupby("label", sort=False)
        ]
        marks = [
            (
                labels.index(str(c["label"])),
                float(c["cliff_s"]),
                f"{c['label']}: write cliff at {c['cliff_s']:.0f} s",
            )
            for c in cliffs[cliffs["job"] == job].to_dict("records")
        ]
        _add_chart(
            group,
            notes,
            f"IOPS over time: {job}",
            charts.line_chart,
            f"{job}: IOPS second by second",
            lines,
            charts.Axis("seconds"),
            charts.Axis("IOPS", zero=True),
            marks=marks,
        )
    for name, group in groups.items():
        sections.setdefault(name, ChartSection(name)).groups.append(group)


def _overview(
    rows_of: dict[tuple[object, object], dict[str, Any]],
    labels: list[str],
    baseline: str,
    ratios: pd.DataFrame,
    order: list[str],
) -> str | None:
    """Every job's IOPS ratio to the baseline per device, as one heatmap."""
    others = [label for label in labels if label != baseline]
    if not others or ratios.empty:
        return None
    cells: dict[tuple[int, int], tuple[float | None, str, str]] = {}
    for r, job in enumerate(order):
        base = rows_of.get((job, baseline))
        for c, label in enumerate(others):
            row = rows_of.get((job, label))
            if row is None or base is None or row["status"] != "ok" or base["status"] != "ok":
                continue
            ratio = ratios.at[job, f"{label}/{baseline}"] if job in ratios.index else None
            ratio = float(ratio) if ratio is not None and pd.notna(ratio) else None
            limits = {record_limit(row), record_limit(base)} - {""}
            tip = f"{job}: {label} " + (f"×{ratio:.2f}" if ratio is not None else "no ratio")
            if limits:  # the heading says the rest: IOPS against the baseline
                tip += f", {' / '.join(sorted(limits))}"
            elif is_false(row.get("significant")):
                tip += ", not significant"
            # marked as the tables mark the worse of the two sides: grey for the CPU or the
            # host, the hatch for a disturbance
            worst = worst_limit(limits)
            cells[(r, c)] = (ratio, tip, "bound" if worst.endswith("bound") else worst)
    return charts.heatmap(f"IOPS against {baseline}, every job", order, others, cells)


def chart_sections(
    frame: pd.DataFrame,
    summary: pd.DataFrame,
    rows_of: dict[tuple[object, object], dict[str, Any]],
    labels: list[str],
    baseline: str,
    ratios: pd.DataFrame,
    order: list[str],
) -> tuple[list[ChartSection], list[str]]:
    """The report's charts in sections: an overview of every ratio, then each family's
    curves (queue depth, block size, read share), latency distributions and time series."""
    notes: list[str] = []
    found: list[ChartSection] = []
    overview = ChartSection("Overview")
    group = ChartGroup("Every job against the baseline")
    _add_chart(
        group,
        notes,
        f"IOPS against {baseline}, every job",
        _overview,
        rows_of,
        labels,
        baseline,
        ratios,
        order,
        wide=True,
    )
    if group.charts:
        overview.groups.append(group)
        found.append(overview)
    ok = summary[summary["status"] == "ok"]
    # bursty jobs have their own table: their IOPS count idle gaps, not a queue depth's worth
    steady = ok[ok["thinktime_us"].isna()]
    sections: dict[str, ChartSection] = {}
    families = steady.assign(family=steady["rw"].map(family_name))
    for name, part in families.groupby("family", sort=False):
        section = sections.setdefault(str(name), ChartSection(str(name)))
        for sweep in ("iodepth", "bs_bytes", "rwmixread"):
            _curves(section, notes, part, labels, sweep)
    jobs_of: dict[str, list[str]] = {}
    job_family = ok.drop_duplicates("job").set_index("job")["rw"].map(family_name).to_dict()
    for job in order:
        if job in job_family:
            jobs_of.setdefault(job_family[job], []).append(job)
    shown = order
    if len(order) > PER_JOB_UP_TO:
        # a thousand small charts say less than a few: each queue-depth curve's lightest and
        # heaviest load, every job outside such a curve, and (over time) every write cliff
        ends = _curve_ends(ok)
        cliffs = set(ok.loc[ok["cliff_s"].notna(), "job"])
        jobs_of = {name: [j for j in jobs if j in ends] for name, jobs in jobs_of.items()}
        shown = [j for j in order if j in ends or j in cliffs]
        notes.append(
            f"Latency distributions and IOPS over time: {len(order)} jobs, so they are drawn "
            "for each queue-depth curve's lowest and highest depth, every job outside such a "
            "curve, and (over time) every job with a write cliff. ssdcompare.load() (column "
            "lat_dist_us) and ssdcompare.timeseries() hold every job's."
        )
    for name, jobs in jobs_of.items():
        _distributions(sections.setdefault(name, ChartSection(name)), notes, frame, jobs, labels)
    _timeseries_charts(sections, notes, frame, ok, labels, shown, job_family)
    ranked = sorted(sections.values(), key=lambda s: FAMILY_ORDER.get(s.name, 99))
    return found + [s for s in ranked if s.groups], notes


def _is_false_any(points: list[dict[str, Any]]) -> bool:
    return any(is_false(point["comparable"]) for point in points)
