"""Charts never break the report: jobs without I/O, values a log axis cannot show, failures."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import pytest

from ssdcompare import charts
from ssdcompare.frame import load
from ssdcompare.report import build_context, write_report
from ssdcompare.store import ResultsDir

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
    assert (idle["status"] == "ok").all() and idle["iops"].isna().all()
    out = tmp_path / "report.html"
    write_report([copy], out)
    html = out.read_text()
    row = re.search(rf"<td>{IDLE_JOB}</td>.*?</tr>", html, re.S)
    assert row is not None and "×0.00" not in row.group(0)
    # the queue-depth charts are drawn from the other points; the idle job's own chart is
    # left out, and the report says so
    assert "IOPS against queue depth: random read, 4 KiB" in html
    assert "Mean latency against queue depth: random read, 4 KiB" in html
    assert f"Latency percentiles: {IDLE_JOB}: left out" in html
    assert html.count("data:image/png;base64,") >= 4


def _points(values: list[float]) -> pd.DataFrame:
    depths = [1, 2, 4, 8][: len(values)]
    return pd.DataFrame({
        "label": "dev", "iodepth": depths, "cpu_bound": pd.array([False] * len(values)),
        "iops_value": values, "iops_min": values, "iops_max": values,
        "lat_mean_us_value": values, "lat_mean_us_min": values, "lat_mean_us_max": values,
        "rwmixread": [100, 70, 30, 0][: len(values)],
    })  # fmt: skip


def test_log_axes_skip_what_is_not_positive() -> None:
    mixed = _points([0.0, float("nan"), 120.0, 250.0])
    assert charts.qd_chart(mixed, "lat_mean_us", "µs", "t").startswith("data:image/png")
    assert charts.qd_chart(mixed, "iops", "IOPS", "t").startswith("data:image/png")
    assert charts.mix_chart(mixed, "t").startswith("data:image/png")
    nothing = _points([0.0, float("nan")])
    assert charts.qd_chart(nothing, "lat_mean_us", "µs", "t") is None
    # IOPS of 0 is a real figure on a linear axis
    assert charts.qd_chart(nothing, "iops", "IOPS", "t") is not None
    rows = pd.DataFrame({
        "job": "j", "status": "ok", "direction": ["read", "write"], "label": "dev",
        "lat_p50_us": [0.0, float("nan")], "lat_p99_us": [0.0, float("nan")],
        "lat_p999_us": [0.0, float("nan")],
    })  # fmt: skip
    assert charts.percentile_chart(rows, "j") is None
    rows.loc[0, "lat_p99_us"] = 80.0
    assert charts.percentile_chart(rows, "j") is not None
    assert plt.get_fignums() == []  # no figure left open


def test_a_chart_that_cannot_be_drawn_is_left_out_with_a_note(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(fig: object) -> str:
        raise ValueError("Data cannot be log-scaled because all values are <= 0.")

    monkeypatch.setattr(charts, "_png", broken)
    frame = load(EXAMPLE)
    context = build_context(frame, [ResultsDir.open(EXAMPLE)])
    assert context["charts"] == []
    notes = context["chart_notes"]
    assert notes and all("could not be drawn" in note for note in notes)
    assert any("IOPS against queue depth" in note and "log-scaled" in note for note in notes)
    assert plt.get_fignums() == []  # the failed figures were closed
