"""The report's charts as matplotlib Figures, for notebooks and image files.

Each function draws one kind of chart the report draws, from a results frame
(`ssdcompare.load`) or results folders (what `ssdcompare report` takes), and returns a
`matplotlib.figure.Figure` with a panel per chart: the same figures, device colours, markers,
log axes and CPU-bound marks as the report, and a legend of the devices. Restyle it as any
Figure, and save it with `fig.savefig("qd.png")` (or .svg, .pdf). In Jupyter a Figure shows
itself as a cell's last value, once matplotlib's inline backend is on (`%matplotlib inline`,
or any `import matplotlib.pyplot`).

Every function takes the same selection: `family` (a pattern family: "random read" or
"randread"), `devices` (labels), `jobs` (job names), `baseline` (the device ratios are
against: the first device unless named) and `aggregate` (how repeats combine: mean, median,
best). Devices keep the colour they have in the report of the whole results.
`latency_curve` takes a curve's name and latency targets (`slo`) instead of jobs.

    import ssdcompare.plot
    fig = ssdcompare.plot.queue_depth("results/20261122-120000-quick", family="random read")
    fig.savefig("qd.png")

`draw(kind, ...)` draws any kind in the registry (`kinds()`), so a kind added to
ssdcompare.report.chartkinds.KINDS is drawn here as it is in the report.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from ssdcompare.analysis.compare import side_by_side
from ssdcompare.analysis.frame import known_true, load
from ssdcompare.analysis.pts import PtsTables, dirth_answer, pts_tables
from ssdcompare.analysis.slo import Slo, parse_slos
from ssdcompare.analysis.summary import in_windows, job_summary
from ssdcompare.errors import SsdcompareError
from ssdcompare.report.chartkinds import KINDS, ChartInputs, section_rank
from ssdcompare.report.chartspec import Heatmap, LineChart, Spec
from ssdcompare.report.figure import figure
from ssdcompare.report.ptschart import dirth_chart, steady_chart
from ssdcompare.report.ptstimechart import hir_chart, wsat_charts, xsr_chart
from ssdcompare.report.svg import drawable_points
from ssdcompare.report.table import Footnotes, family_name, first_rows, table_groups

if TYPE_CHECKING:
    from matplotlib.figure import Figure

Results = pd.DataFrame | str | Path | Iterable[str | Path]

__all__ = [
    "block_size", "dirth", "draw", "kinds", "latency_curve", "latency_distribution", "mix",
    "overview", "queue_depth", "steady_state", "timeseries",
]  # fmt: skip
Targets = str | Slo | Iterable[str | Slo] | None


def queue_depth(
    results: Results,
    family: str | None = None,
    devices: Iterable[str] | None = None,
    jobs: Iterable[str] | None = None,
    baseline: str | None = None,
    aggregate: str = "mean",
) -> Figure:
    """IOPS against queue depth (each device's saturation knee a hollow diamond) and mean
    latency with p99 as thin lines, for every queue-depth curve: the same workload at rising
    iodepth. Bars span the repeats' minimum to maximum.

        fig = ssdcompare.plot.queue_depth(frame, family="random read")
        fig.savefig("qd.png")
    """
    return draw("queue_depth", results, family, devices, jobs, baseline, aggregate)


def latency_curve(
    results: Results,
    curve: str | None = None,
    slo: Targets = None,
    baseline: str | None = None,
    family: str | None = None,
    devices: Iterable[str] | None = None,
) -> Figure:
    """Latency against load for every latency-vs-load curve (or the one named `curve`, the
    job a suite gave `curve: [...]`): p50, p99 and p99.9 (three line styles) against the
    IOPS each run achieved, a colour per device. The curve's paced runs are filled points on
    their line; closed-loop runs of the same workload (the curve's unpaced run, the same job
    at other queue depths) hollow points; a run that could not reach its load a cross off
    the line. Each latency target in `slo` ("p99=1ms", or several) is a horizontal line,
    with each device's answer (the highest IOPS within it, against `baseline`) a diamond on it.

        fig = ssdcompare.plot.latency_curve(frame, "randread-4k-qd32", slo="p99=1ms")
    """
    frame = _frame_of(results)
    if curve is not None:
        held = frame["curve"].dropna() if "curve" in frame.columns else pd.Series(dtype=str)
        if curve not in set(held):
            if held.empty:
                raise SsdcompareError(f"no curve {curve!r}: these results hold no curve")
            raise _not_held("curve", [curve], held)
        frame = frame[frame["curve"].isna() | frame["curve"].eq(curve)]
    return draw("latency_curve", frame, family, devices, None, baseline, slo=slo)


def block_size(
    results: Results,
    family: str | None = None,
    devices: Iterable[str] | None = None,
    jobs: Iterable[str] | None = None,
    baseline: str | None = None,
    aggregate: str = "mean",
) -> Figure:
    """Throughput (MB/s) against block size, for every block-size curve.

    fig = ssdcompare.plot.block_size("results/20261122-120000-quick", family="read")
    """
    return draw("block_size", results, family, devices, jobs, baseline, aggregate)


def mix(
    results: Results,
    family: str | None = None,
    devices: Iterable[str] | None = None,
    jobs: Iterable[str] | None = None,
    baseline: str | None = None,
    aggregate: str = "mean",
) -> Figure:
    """IOPS against the read share of mixed jobs (100 % read at the left).

    fig = ssdcompare.plot.mix(frame, devices=["nvme0n1", "nvme1n1"])
    """
    return draw("mix", results, family, devices, jobs, baseline, aggregate)


def latency_distribution(
    results: Results,
    family: str | None = None,
    devices: Iterable[str] | None = None,
    jobs: Iterable[str] | None = None,
    baseline: str | None = None,
    aggregate: str = "mean",
) -> Figure:
    """Each job's latency by percentile (50, 90, 99, 99.9 ... spread as nines, latency on a
    log axis), devices overlaid; a mixed job's writes are the thin lines.

        fig = ssdcompare.plot.latency_distribution(frame, jobs=["randread-4k-qd1"])
    """
    return draw("latency_distribution", results, family, devices, jobs, baseline, aggregate)


def timeseries(
    results: Results,
    family: str | None = None,
    devices: Iterable[str] | None = None,
    jobs: Iterable[str] | None = None,
    baseline: str | None = None,
    aggregate: str = "mean",
) -> Figure:
    """Each job's IOPS second by second (repeats averaged), devices overlaid, each device's
    write cliff (throughput that falls to under half and stays there) a dashed line in its
    colour at the second it fell (the frame's `cliff_s`).

        fig = ssdcompare.plot.timeseries(frame, jobs=["randwrite-4k-qd32"])
    """
    return draw("timeseries", results, family, devices, jobs, baseline, aggregate)


def overview(
    results: Results,
    family: str | None = None,
    devices: Iterable[str] | None = None,
    jobs: Iterable[str] | None = None,
    baseline: str | None = None,
    aggregate: str = "mean",
) -> Figure:
    """Every job's IOPS against the baseline's, a cell per device: blue is faster, orange
    slower; CPU- or host-bound results on grey, disturbed ones hatched.

        fig = ssdcompare.plot.overview(frame, baseline="nvme0n1")
    """
    return draw("overview", results, family, devices, jobs, baseline, aggregate)


def steady_state(
    results: Results, devices: Iterable[str] | None = None, groups: Iterable[str] | None = None
) -> Figure:
    """A SNIA PTS test's steady-state charts, one per device and group that ran in rounds:
    the tracking variable per round, the measurement window shaded with bands of ±10 % and
    ±20 % around its mean, the mean and the least-squares line through the window. `results`
    are results folders, or the frame `ssdcompare.load` made of them (the rounds' records are
    read from its folders).

        fig = ssdcompare.plot.steady_state("results/20261127-pts-iops")
    """
    tables = _pts(results)
    chosen, named = _names(devices), _names(groups)
    _held("device", chosen, [g.label for g in tables.groups])
    _held("group", named, [g.group for g in tables.groups])
    specs = [(g, steady_chart(g, tables.labels.index(g.label))) for g in tables.groups
             if g.limits.rounds and (chosen is None or g.label in chosen)
             and (named is None or g.group in named)]  # fmt: skip
    drawn = [_scaled(spec, tables, g.label, g.test) for g, spec in specs if spec is not None]
    if not drawn:
        raise SsdcompareError("no round of a PTS group to draw in these results (a group "
                              "draws once its first round is recorded)")  # fmt: skip
    return figure(list(drawn), tables.labels)


def dirth(results: Results, devices: Iterable[str] | None = None) -> Figure:
    """A SNIA PTS DIRTH test's IOPS against mean latency, a chart per device with a line per
    thread count through its queue depths, the 5 ms limit, and the most IOPS under it marked
    (the window's means). `results` as for `steady_state`.

        fig = ssdcompare.plot.dirth("results/20261127-pts-dirth")
    """
    tables = _pts(results)
    chosen = _names(devices)
    figures = tables.figures
    points = figures[(figures["pts_test"] == "dirth") & (figures["status"] == "ok")]
    _held("device", chosen, list(points["label"]))
    specs = []
    for index, label in enumerate(tables.labels):
        mine = points[points["label"] == label]
        if mine.empty or (chosen is not None and label not in chosen):
            continue
        spec = dirth_chart(mine, label, index, dirth_answer(label, mine))
        if spec is not None:
            specs.append(_scaled(spec, tables, label, "dirth"))
    if not specs:
        raise SsdcompareError("no finished DIRTH job in these results: give the results of "
                              "the pts-dirth suite")  # fmt: skip
    return figure(list(specs), tables.labels)


def pts_time(results: Results, test: str, devices: Iterable[str] | None = None) -> Figure:
    """A SNIA PTS test read over time, as its report section draws it, a chart per device:
    `test` "wsat" (IOPS against time and against the capacity written), "hir" (each burst's
    IOPS, the idle-time segments shaded) or "xsr" (bandwidth by segment). `results` as for
    `steady_state`.

        fig = ssdcompare.plot.pts_time("results/20261127-pts-xsr", "xsr")
    """
    draw = {"wsat": wsat_charts, "hir": lambda d, i: [hir_chart(d, i)],
            "xsr": lambda d, i: [xsr_chart(d, i)]}  # fmt: skip
    if test not in draw:
        raise SsdcompareError(f"pts_time: no PTS test {test!r} read over time: give wsat, hir "
                              "or xsr")  # fmt: skip
    tables = _pts(results)
    chosen = _names(devices)
    held = tables.series_of(test)
    _held("device", chosen, [d.label for d in held])
    mine = [d for d in held if chosen is None or d.label in chosen]
    specs = [_scaled(spec, tables, d.label, test) for d in mine
             for spec in draw[test](d, tables.labels.index(d.label))
             if spec is not None]  # fmt: skip
    if not specs:
        raise SsdcompareError(f"no time series of the PTS {test} test to draw in these results "
                              "(fio logged none: see each run's timeseries_*.log)")  # fmt: skip
    return figure(list(specs), tables.labels)


def _scaled(spec: LineChart, tables: PtsTables, label: str, test: str) -> LineChart:
    """A PTS chart titled with the factor its device's run was scaled by ("..., scaled
    ×0.01"), as the report says it above the section: a scaled run is no PTS result."""
    scales = {d.scale for d in tables.devices if d.label == label and d.test == test}
    scale = next(iter(scales)) if len(scales) == 1 else None
    return spec if scale is None else replace(spec, title=f"{spec.title}, scaled ×{scale:g}")


def _pts(results: Results) -> PtsTables:
    """The PTS tests of results folders or of a frame of them (ssdcompare.pts_tables)."""
    return pts_tables(results)


def _held(name: str, chosen: list[str] | None, held: list[str]) -> None:
    """A choice of devices or groups the results do not hold is an error naming them."""
    missing = [c for c in chosen or [] if c not in held]
    if missing:
        raise _not_held(name, missing, pd.Series(held, dtype="object"))


def kinds() -> list[str]:
    """The kinds of chart there are, in the order a report shows them: any is `draw`n."""
    return list(KINDS)


def draw(
    kind: str,
    results: Results,
    family: str | None = None,
    devices: Iterable[str] | None = None,
    jobs: Iterable[str] | None = None,
    baseline: str | None = None,
    aggregate: str = "mean",
    slo: Targets = None,
) -> Figure:
    """Every chart of one `kind` (see `kinds()`) the report draws from `results`, within the
    selection, as one Figure; `slo`: latency targets drawn on the latency curves.

        fig = ssdcompare.plot.draw("queue_depth", frame, devices=["nvme0n1", "nvme1n1"])
    """
    if kind not in KINDS:
        raise SsdcompareError(f"no chart kind {kind!r}: choose one of {', '.join(KINDS)}")
    devices, jobs = _names(devices), _names(jobs)
    targets = parse_slos(slo if slo is None or isinstance(slo, str | Slo) else list(slo))
    inputs = _chart_inputs(_frame_of(results), family, devices, jobs, baseline, aggregate)
    inputs.slos = targets
    specs = _specs(kind, inputs)
    if not specs:
        needs = KINDS[kind].needs
        raise SsdcompareError(
            f"no {kind} chart to draw from these results"
            + (f" ({_selection(family, devices, jobs)})" if family or devices or jobs else "")
            + (f": it needs {needs}" if needs else "")
            + "; choose other results, or leave out some of the selection"
        )
    return figure(specs, inputs.labels)


def _specs(kind: str, inputs: ChartInputs) -> list[Spec]:
    """The kind's charts that have something to draw, in the report's order; each title
    begins with the report's section (the family) when they come from more than one."""
    notes: list[str] = []  # what the report would list as left out: here, simply not drawn
    chosen = KINDS[kind]
    found = [(chart.section, chart.spec) for part in chosen.over(inputs, notes)
             for chart in chosen.build(inputs, part, notes)
             if chart.spec is not None and _has_points(chart.spec)]  # fmt: skip
    found.sort(key=lambda chart: section_rank(chart[0]))  # stable: in the report's order
    if len({section for section, _ in found}) < 2:
        return [spec for _, spec in found]
    return [replace(spec, title=f"{section}: {spec.title}") for section, spec in found]


def _has_points(spec: Spec) -> bool:
    return bool(spec.cells if isinstance(spec, Heatmap) else drawable_points(spec))


def _selection(family: str | None, devices: list[str] | None, jobs: list[str] | None) -> str:
    """The selection in words, for a message."""
    said = [f"family {family}"] if family else []
    said += [f"devices {', '.join(devices)}"] if devices else []
    said += [f"jobs {', '.join(jobs)}"] if jobs else []
    return "; ".join(said)


def _names(chosen: Iterable[str] | None) -> list[str] | None:
    """Devices or jobs asked for, as a list (one name alone is a list of one)."""
    if chosen is None:
        return None
    return [chosen] if isinstance(chosen, str) else [str(name) for name in chosen]


# the columns charts are built from, which any frame of ssdcompare.load or read_fio has
_NEEDED = ("job", "label", "rw", "iodepth", "status", "verdict", "cpu_bound", "sweep")


def _frame_of(results: Results) -> pd.DataFrame:
    """A results frame: the one given, or the folders' (ssdcompare.load)."""
    frame = results if isinstance(results, pd.DataFrame) else load(results)
    missing = [column for column in _NEEDED if column not in frame.columns]
    if missing:
        raise SsdcompareError(
            f"this frame has no column {', '.join(missing)}: give a frame of ssdcompare.load "
            "(or its results folders)"
        )
    return frame


def _chart_inputs(
    frame: pd.DataFrame,
    family: str | None,
    devices: list[str] | None,
    jobs: list[str] | None,
    baseline: str | None,
    aggregate: str,
) -> ChartInputs:
    """What the charts are built from, as the report builds it from the same results: the
    frame and its per-job summary, ratios against the baseline, the jobs in the report's
    order; CPU- and host-bound results marked alike."""
    frame = frame[frame["rw"].notna()]  # a run outside its sweep's plan has no workload
    frame = in_windows(frame)  # a PTS job over its window's rounds, as the report has it
    labels = list(dict.fromkeys(frame["label"]))  # every device keeps the report's colour
    frame = _selected(frame, family, devices, jobs)
    present = list(dict.fromkeys(frame["label"]))
    baseline = present[0] if baseline is None else baseline
    if baseline not in present:
        raise SsdcompareError(
            f"no device {baseline!r} to be the baseline here: choose one of {', '.join(present)}"
        )
    summary = job_summary(frame, baseline, aggregate)
    ratios = side_by_side(summary, "iops", baseline)
    rows_of = first_rows(summary)
    groups = table_groups(summary, rows_of, ratios, present, baseline, Footnotes())
    order = [row.job for group in groups for row in group.rows]
    # outside the report's table one mark stands for both: the CPU or the host was the limit
    frame = frame.assign(cpu_bound=known_true(frame["cpu_bound"]) | frame["verdict"].eq("host"))
    summary = summary.assign(
        cpu_bound=known_true(summary["cpu_bound"]) | summary["verdict"].eq("host")
    )
    return ChartInputs(frame, summary, rows_of, labels, baseline, ratios, order)


def _selected(
    frame: pd.DataFrame, family: str | None, devices: list[str] | None, jobs: list[str] | None
) -> pd.DataFrame:
    """The rows of the chosen family, devices and jobs; a choice the results do not hold
    is named with what they do hold."""
    keep = pd.Series(True, index=frame.index)
    if family is not None:
        families = frame["rw"].map(family_name)
        wanted = {family.lower(), family_name(family).lower()}
        keep &= families.str.lower().isin(wanted)
        if not keep.any():
            raise _not_held("family", [family], families)
    for name, column, chosen in (("device", "label", devices), ("job", "job", jobs)):
        if chosen is not None:
            missing = [c for c in chosen if c not in set(frame[column])]
            if missing:
                raise _not_held(name, missing, frame[column])
            keep &= frame[column].isin(chosen)
    if not keep.any():
        raise SsdcompareError(
            f"nothing in these results is of {_selection(family, devices, jobs)} at once: "
            "choose fewer of them"
        )
    return frame[keep]


def _not_held(name: str, missing: list[str], held: pd.Series) -> SsdcompareError:
    """The error for a choice the results do not hold, naming what they hold."""
    return SsdcompareError(
        f"no {name} {', '.join(map(repr, missing))} in these results: choose among "
        + ", ".join(map(str, dict.fromkeys(held)))
    )
