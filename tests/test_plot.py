"""The report's charts as matplotlib Figures (ssdcompare.plot): every line, point, cell and
cliff is the figure the frame or its summary holds, and a figure saves as PNG and SVG."""

from __future__ import annotations

import io
import math
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import ssdcompare
import ssdcompare.plot
from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.result.models import DISTRIBUTION_PERCENTILES
from ssdcompare.report import chartkinds
from ssdcompare.report import svg as charts
from ssdcompare.report.build import build_context
from ssdcompare.report.chartkinds import ChartInputs, ChartKind, PlacedChart, whole
from ssdcompare.report.chartspec import Axis, LineChart, Series
from ssdcompare.results.store import ResultsDir

EXAMPLE = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"
FORMAT1 = Path(__file__).parent / "data" / "format1-results"
CLIFF_JOB, CLIFF_DEVICE = "randwrite-4k-qd32", "loop1"


@pytest.fixture(scope="module")
def frame() -> pd.DataFrame:
    return ssdcompare.load(EXAMPLE)


@pytest.fixture(scope="module")
def summary(frame: pd.DataFrame) -> pd.DataFrame:
    found = ssdcompare.job_summary(frame)
    # one mark for both, as in the report: the CPU or the host was the limit
    return found.assign(cpu_bound=found["cpu_bound"].fillna(False).astype(bool)
                        | found["verdict"].eq("host"))  # fmt: skip


def lines(ax: object, gid: str = "series") -> dict[str, object]:
    """The axes' lines of one kind by their label (a device's line is labelled by it)."""
    return {line.get_label(): line for line in ax.get_lines() if line.get_gid() == gid}  # type: ignore[attr-defined]


def panel(fig: object, title: str) -> object:
    """The one axes of a figure whose title starts with `title`."""
    found = [ax for ax in fig.axes if ax.get_title().startswith(title)]  # type: ignore[attr-defined]
    assert len(found) == 1, [ax.get_title() for ax in fig.axes]  # type: ignore[attr-defined]
    return found[0]


def curve(summary: pd.DataFrame, label: str, rw: str, x: str, y: str) -> pd.DataFrame:
    mine = (summary["label"] == label) & (summary["rw"] == rw) & (summary["bs_bytes"] == 4096)
    rows = summary[mine & (summary["fsync"].fillna(0) == 0)]
    return rows.sort_values(x)[[x, y, "cpu_bound"]]


def test_queue_depth_lines_are_the_summary_figures_and_bound_points_are_ringed(
    frame: pd.DataFrame, summary: pd.DataFrame
) -> None:
    fig = ssdcompare.plot.queue_depth(frame, family="random read")
    assert len(fig.axes) == 2  # IOPS and latency, of the one 4 KiB curve
    iops, latency = panel(fig, "IOPS — 4 KiB"), panel(fig, "latency (mean, thin: p99)")
    assert iops.get_xscale() == "log" and latency.get_yscale() == "log"
    for index, label in enumerate(["zram1", "loop1"]):
        points = curve(summary, label, "randread", "iodepth", "iops_value")
        line = lines(iops)[label]
        assert list(line.get_xdata()) == list(points["iodepth"])
        assert list(line.get_ydata()) == list(points["iops_value"])
        assert line.get_color() == charts.style(index)[0]  # the report's colour
        mean = curve(summary, label, "randread", "iodepth", "lat_mean_us_value")
        assert list(lines(latency)[label].get_ydata()) == list(mean["lat_mean_us_value"])
        p99 = curve(summary, label, "randread", "iodepth", "lat_p99_us_value")
        thin = lines(latency)[f"_{label} (thin)"]
        assert list(thin.get_ydata()) == list(p99["lat_p99_us_value"])
    # the RAM disk is CPU-bound at the deeper queues: each of those points is ringed
    bound = curve(summary, "zram1", "randread", "iodepth", "iops_value")
    bound = bound[bound["cpu_bound"]]
    assert len(bound) >= 1
    rings = [line for line in iops.get_lines() if line.get_gid() == "bound"]
    ringed = {xy for ring in rings for xy in zip(*ring.get_data(), strict=True)}
    assert ringed == set(zip(bound["iodepth"], bound["iops_value"], strict=True))
    legend = [text.get_text() for text in fig.legends[0].get_texts()]
    assert legend == ["zram1", "loop1", "CPU- or host-bound"]


def test_charts_of_several_families_come_in_the_reports_order_named_by_family(
    frame: pd.DataFrame,
) -> None:
    titles = [ax.get_title() for ax in ssdcompare.plot.queue_depth(frame).axes]
    assert titles == [
        "Random read: IOPS — 4 KiB", "Random read: latency (mean, thin: p99) — 4 KiB",
        "Random write: IOPS — 4 KiB", "Random write: latency (mean, thin: p99) — 4 KiB",
    ]  # fmt: skip


def as_sweep_of(frame: pd.DataFrame, setting: str, values: dict[float, object]) -> pd.DataFrame:
    """The example's 4 KiB random-read queue-depth runs told apart by another `setting`
    instead (their depths mapped to its `values`), to chart a sweep the example lacks:
    the figures the chart must show are still the summary's for each run."""
    part = frame[(frame["rw"] == "randread") & frame["iodepth"].isin(list(values))].copy()
    part[setting] = part["iodepth"].map(values)
    part["iodepth"] = 1
    part["knee_qd"] = pd.NA
    if setting == "rwmixread":
        part["rw"] = "randrw"
    return part


def as_curve_of(frame: pd.DataFrame) -> pd.DataFrame:
    """The example's 4 KiB random reads at QD 8 and 16 as the curve of its QD 32 run (its
    unpaced run), paced at what they achieved, to chart a curve the example lacks; QD 1 to
    4 stay the closed-loop runs beside it."""
    part = frame[(frame["rw"] == "randread") & (frame["bs_bytes"] == 4096)
                 & (frame["fsync"].fillna(0) == 0)].copy()  # fmt: skip
    part = part[part["iodepth"].isin([1, 2, 4, 8, 16, 32])]
    shares = {8: 50.0, 16: 80.0}
    paced = part["iodepth"].isin(list(shares))
    curve = paced | (part["iodepth"] == 32)
    part.loc[curve, "curve"] = "randread-4k-qd32"
    part.loc[paced, "curve_pct"] = part.loc[paced, "iodepth"].map(shares)
    part.loc[paced, "rate_asked_iops"] = part.loc[paced, "iops"]
    part.loc[paced, "rate_reached"] = True
    part.loc[curve, "iodepth"] = 32
    return part


def test_block_size_and_mix_lines_are_the_summary_figures(frame: pd.DataFrame) -> None:
    sizes = as_sweep_of(frame, "bs_bytes", {2: 4096, 4: 16384, 8: 65536})
    fig = ssdcompare.plot.block_size(sizes)
    summary = ssdcompare.job_summary(sizes)
    ax = panel(fig, "MB/s")
    assert ax.get_xscale() == "log"
    for label in ("zram1", "loop1"):
        rows = summary[summary["label"] == label].sort_values("bs_bytes")
        line = lines(ax)[label]
        assert list(line.get_xdata()) == list(rows["bs_bytes"])
        assert np.allclose(line.get_ydata(), rows["bw_bytes_value"] / 1e6)  # in MB/s
    shares = as_sweep_of(frame, "rwmixread", {2: 100, 4: 70, 8: 30})
    fig = ssdcompare.plot.mix(shares, devices=["loop1"])
    summary = ssdcompare.job_summary(shares)
    ax = panel(fig, "IOPS")
    rows = summary[summary["label"] == "loop1"].sort_values("rwmixread")
    line = lines(ax)["loop1"]
    assert list(line.get_xdata()) == list(rows["rwmixread"])
    assert list(line.get_ydata()) == list(rows["iops_value"])
    assert line.get_color() == charts.style(1)[0]  # loop1 keeps its colour when alone
    assert ax.get_xlim()[0] > ax.get_xlim()[1]  # 100 % read at the left, as in the report


def test_latency_distributions_are_the_repeats_mean_at_each_percentile(
    frame: pd.DataFrame,
) -> None:
    job = "randread-4k-qd16"
    fig = ssdcompare.plot.latency_distribution(frame, jobs=[job])
    ax = panel(fig, f"{job}: latency by percentile")
    assert ax.get_yscale() == "log" and ax.get_xscale() == "function"  # the nines
    for label in ("zram1", "loop1"):
        runs = frame[(frame["job"] == job) & (frame["label"] == label)]
        mean = np.mean(np.array(list(runs["lat_dist_us"])), axis=0)
        line = lines(ax)[label]
        assert list(line.get_xdata()) == list(DISTRIBUTION_PERCENTILES)
        assert np.allclose(line.get_ydata(), mean)


def with_a_cliff(tmp_path: Path) -> Path:
    """The example with CLIFF_JOB's IOPS on CLIFF_DEVICE logged for 12 s, falling from
    9000 to 2000 at the 7th second in every repeat."""
    copy = tmp_path / "cliff"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns(".cache"))
    values = [9000] * 6 + [2000] * 6
    text = "".join(f"{t * 1000 - 1}, {v}, 1, 4096, 0\n" for t, v in enumerate(values, 1))
    for log in copy.glob(f"runs/{CLIFF_DEVICE}/{CLIFF_JOB}/r*/timeseries_iops.1.log"):
        log.write_text(text)
    return copy


def test_a_time_series_is_the_seconds_averaged_and_its_cliff_is_at_the_frames_second(
    tmp_path: Path,
) -> None:
    folder = with_a_cliff(tmp_path)
    frame = ssdcompare.load(folder)
    cliff = frame.loc[(frame["job"] == CLIFF_JOB) & (frame["label"] == CLIFF_DEVICE), "cliff_s"]
    assert set(cliff) == {7.0}
    fig = ssdcompare.plot.timeseries(folder, jobs=[CLIFF_JOB])  # a folder, as the report takes
    ax = panel(fig, f"{CLIFF_JOB}: IOPS second by second")
    line = lines(ax)[CLIFF_DEVICE]
    assert list(line.get_xdata()) == list(range(1, 13))
    assert list(line.get_ydata()) == [9000.0] * 6 + [2000.0] * 6
    seconds = ssdcompare.timeseries(folder)
    mine = seconds[(seconds["job"] == CLIFF_JOB) & (seconds["device"] == "zram1")]
    by_second = mine.groupby("t_s")["iops"].mean()
    assert np.allclose(lines(ax)["zram1"].get_ydata(), by_second.to_numpy())
    marks = [m for m in ax.get_lines() if m.get_gid() == "mark"]
    assert len(marks) == 1 and list(marks[0].get_xdata()) == [7.0, 7.0]
    assert marks[0].get_color() == charts.style(1)[0]  # in the device's colour


def test_the_overview_cells_are_the_ratios(frame: pd.DataFrame) -> None:
    fig = ssdcompare.plot.overview(frame, baseline="loop1")
    ax = panel(fig, "IOPS against loop1, every job")
    cells = ax.images[0].get_array()
    jobs = [tick.get_text() for tick in ax.get_yticklabels()]
    summary = ssdcompare.job_summary(frame, baseline="loop1")
    ratios = ssdcompare.side_by_side(summary, "iops", baseline="loop1")["zram1/loop1"]
    assert sorted(jobs) == sorted(ratios.index) and cells.shape == (len(jobs), 1)
    for row, job in enumerate(jobs):
        assert math.isclose(float(cells[row, 0]), float(ratios[job]))
    # CPU- or host-bound results on grey, as in the report's heatmap
    assert any(patch.get_gid() == "bound" for patch in ax.patches)


def test_older_results_draw_too() -> None:
    fig = ssdcompare.plot.latency_distribution(FORMAT1, jobs=["randread-4k-qd1"])
    ax = fig.axes[0]
    assert set(lines(ax)) == {"zram1", "loop0"}


@pytest.mark.parametrize("kind", ssdcompare.plot.kinds())
def test_every_kind_saves_as_png_and_svg(frame: pd.DataFrame, kind: str) -> None:
    if kind in ("block_size", "mix"):
        sweep = {"block_size": ("bs_bytes", {2: 4096, 4: 8192}),
                 "mix": ("rwmixread", {2: 90, 4: 50, 8: 10})}[kind]  # fmt: skip
        results = as_sweep_of(frame, *sweep)
    elif kind == "latency_curve":
        results = as_curve_of(frame)
    else:
        results = frame[frame["job"].isin(["randread-4k-qd2", "randread-4k-qd4"])]
    fig = ssdcompare.plot.draw(kind, results)
    png, svg = io.BytesIO(), io.BytesIO()
    fig.savefig(png, format="png", dpi=40)
    fig.savefig(svg, format="svg")
    assert png.getvalue().startswith(b"\x89PNG") and b"<svg" in svg.getvalue()


def test_a_kind_added_to_the_registry_is_in_the_report_and_in_plot(
    frame: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    def bandwidth(inputs: ChartInputs, part: str | None, notes: list[str]) -> list[PlacedChart]:
        rows = inputs.ok[inputs.ok["job"] == "read-4m-qd16"]
        series = [
            Series(index=inputs.labels.index(label), xs=[0.0], ys=[float(bw)], label=label)
            for label, bw in zip(rows["label"], rows["bw_bytes_value"], strict=True)
        ]
        spec = LineChart("bandwidth", series, Axis("x"), Axis("bytes/s"))
        return [PlacedChart("Sequential read", "Bandwidth of read-4m-qd16", spec)]

    added = ChartKind("bandwidth", "Bandwidth per job", whole, bandwidth)
    monkeypatch.setitem(chartkinds.KINDS, "bandwidth", added)
    context = build_context(frame, [ResultsDir.open(EXAMPLE)])
    section = next(s for s in context["chart_sections"] if s.name == "Sequential read")
    assert section.groups[-1].title == "Bandwidth per job"
    assert "Bandwidth of read-4m-qd16" in [c["title"] for c in section.groups[-1].charts]
    assert "bandwidth" in ssdcompare.plot.kinds()
    fig = ssdcompare.plot.draw("bandwidth", frame)
    assert set(lines(fig.axes[0])) == {"zram1", "loop1"}


def test_a_selection_the_results_do_not_hold_is_named_with_what_they_hold(
    frame: pd.DataFrame,
) -> None:
    with pytest.raises(SsdcompareError, match="no device 'nvme0n1' .*choose among zram1, loop1"):
        ssdcompare.plot.queue_depth(frame, devices=["nvme0n1"])
    with pytest.raises(SsdcompareError, match="no family 'trim'"):
        ssdcompare.plot.queue_depth(frame, family="trim")
    with pytest.raises(SsdcompareError, match="no block_size chart .*two or more block sizes"):
        ssdcompare.plot.block_size(frame)
    with pytest.raises(SsdcompareError, match="no chart kind 'pie'"):
        ssdcompare.plot.draw("pie", frame)


@pytest.mark.slow  # seconds of its own: left out of the unprivileged rerun (test_markers)
def test_neither_the_package_nor_the_report_loads_matplotlib(tmp_path: Path) -> None:
    """matplotlib is loaded by the first figure, not before; figures never go through
    pyplot's global state."""
    code = f"""
import sys
import ssdcompare, ssdcompare.report.build, ssdcompare.plot
ssdcompare.report.build.write_report([{str(EXAMPLE)!r}], {str(tmp_path / "report.html")!r})
assert "matplotlib" not in sys.modules, "loaded by the report"
ssdcompare.plot.queue_depth({str(EXAMPLE)!r}).savefig({str(tmp_path / "qd.png")!r})
assert "matplotlib" in sys.modules and "matplotlib.pyplot" not in sys.modules
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "qd.png").stat().st_size > 0
