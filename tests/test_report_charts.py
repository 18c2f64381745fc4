"""Charts never break the report: jobs without I/O, values a log axis cannot show, failures."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pandas as pd
import pytest

from ssdcompare.analysis.frame import load
from ssdcompare.report import svg as charts
from ssdcompare.report.build import build_context, write_report
from ssdcompare.report.chartspec import Axis, Cell, Heatmap, LineChart, Series
from ssdcompare.results.store import ResultsDir

EXAMPLE = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"
IDLE_JOB = "randread-4k-qd2"  # one point of the example's queue-depth sweep


def idle_copy(tmp_path: Path) -> Path:
    """The example, but IDLE_JOB completed without doing any I/O on both devices (as a
    rate-limited or thinktime job can): fio reports zeros, and the run is still ok."""
    copy = tmp_path / "idle"
    shutil.copytree(EXAMPLE, copy)
    for path in copy.glob(f"runs/*/{IDLE_JOB}/r*/fio.json"):
        output = json.loads(path.read_text())
        read = output["jobs"][0]["read"]
        for key in ("io_bytes", "io_kbytes", "bw_bytes", "bw", "iops", "total_ios"):
            read[key] = 0
        for key in ("slat_ns", "clat_ns", "lat_ns"):
            read[key] = {"min": 0, "max": 0, "mean": 0.0, "stddev": 0.0, "N": 0}
        path.write_text(json.dumps(output))
    return copy


@pytest.mark.slow  # renders whole reports; neither root nor fio
def test_a_job_that_did_no_io_leaves_the_report_whole(tmp_path: Path) -> None:
    copy = idle_copy(tmp_path)
    frame = load(copy)
    idle = frame[frame["job"] == IDLE_JOB]
    # fio printed the direction with zeros: a true 0, not an unknown
    assert (idle["status"] == "ok").all() and (idle["iops"] == 0).all()
    out = tmp_path / "report.html"
    write_report([copy], out)
    html = out.read_text()
    row = re.search(rf"<td>{IDLE_JOB}</td>.*?</tr>", html, re.S)
    assert row is not None and "×0.00" not in row.group(0)
    # the queue-depth charts are drawn from the other points; the idle job's own chart is
    # left out, and the report says so
    assert "IOPS against queue depth: 4 KiB" in html
    assert "Mean latency against queue depth: 4 KiB" in html
    assert f"Latency distribution: {IDLE_JOB}: left out" in html
    assert html.count("<svg") >= 4


def _points(values: list[float]) -> pd.DataFrame:
    depths = [1, 2, 4, 8][: len(values)]
    return pd.DataFrame({
        "label": "dev", "iodepth": depths, "cpu_bound": pd.array([False] * len(values)),
        "iops_value": values, "iops_min": values, "iops_max": values,
        "lat_mean_us_value": values, "lat_mean_us_min": values, "lat_mean_us_max": values,
        "rwmixread": [100, 70, 30, 0][: len(values)],
    })  # fmt: skip


def _line(values: list[float], bound: list[bool] | None = None) -> Series:
    return Series(index=0, xs=[1, 2, 4, 8][: len(values)], ys=values,
                         tips=[f"point {i}" for i in range(len(values))],
                         bound=bound or [False] * len(values))  # fmt: skip


def _chart(series: list[Series], x: Axis, y: Axis) -> str | None:
    return charts.svg(LineChart("t", series, x, y))


def test_log_axes_skip_what_is_not_positive() -> None:
    depth = Axis("queue depth", "log2", at_data=True)
    mixed = _line([0.0, float("nan"), 120.0, 250.0])
    latency = _chart([mixed], depth, Axis("µs", "log10"))
    assert latency is not None and latency.startswith("<svg")
    # on a log axis only the two positive points are drawn, each with its tooltip
    assert latency.count("<title>point") == 2
    iops = _chart([mixed], depth, Axis("IOPS", zero=True))
    assert iops is not None and iops.count("<title>point") == 3  # 0 is a figure; NaN is not
    nothing = _line([0.0, float("nan")])
    assert _chart([nothing], depth, Axis("µs", "log10")) is None
    # IOPS of 0 is a real figure on a linear axis
    assert _chart([nothing], depth, Axis("IOPS", zero=True)) is not None
    assert _chart([], depth, Axis("IOPS")) is None


def test_a_bound_point_is_ringed_and_a_chart_holds_no_legend_over_its_data() -> None:
    svg = _chart([_line([10.0, 20.0], bound=[False, True])], Axis("x"), Axis("y"))
    assert svg is not None
    assert svg.count('r="7"') == 1  # one ring: the bound point
    # the legend is drawn once per section, outside every plot
    assert "point 0" in svg and "legend" not in svg
    legend = charts.legend(["a", "b"])
    assert ">a</span>" in legend and ">b</span>" in legend and "CPU- or host-bound" in legend


def test_the_heatmap_colours_faster_and_slower_apart_and_marks_limits_as_the_tables_do() -> None:
    svg = charts.svg(Heatmap("h", ["j1", "j2", "j3", "j4"], ["b"], {
        (0, 0): Cell(2.0, "j1 faster", ""), (1, 0): Cell(0.5, "j2 slower", ""),
        (2, 0): Cell(1.0, "j3 bound", "bound"), (3, 0): Cell(1.5, "j4 disturbed", "disturbed"),
    }))  # fmt: skip
    assert svg is not None
    cell = r'<rect x="[^"]+" width="[^"]+" height="[^"]+" fill="([^"]+)"><title>'
    fills = re.findall(cell, svg)
    assert len(fills) == 4 and fills[0] != fills[1] and "#ffffff" not in fills[:2]
    # grey for the CPU or the host, the yellow hatch for a disturbance: the tables' marks
    assert fills[2] == charts.BOUND_GREY and fills[3] == "url(#disturbed)"
    assert f'fill="{charts.DISTURBED_STRIPE}"' in svg
    assert charts.svg(Heatmap("h", [], [], {})) is None


def test_a_chart_that_cannot_be_drawn_is_left_out_with_a_note(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*args: object) -> str:
        raise ValueError("Data cannot be log-scaled because all values are <= 0.")

    monkeypatch.setattr(charts, "_frame", broken)
    monkeypatch.setattr(charts, "heatmap", broken)
    frame = load(EXAMPLE)
    context = build_context(frame, [ResultsDir.open(EXAMPLE)])
    assert context["charts"] == []
    notes = context["chart_notes"]
    assert notes and all("could not be drawn" in note for note in notes)
    assert any("IOPS against queue depth" in note and "log-scaled" in note for note in notes)
