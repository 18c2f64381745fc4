"""Bursts: a bursty job's I/O split at its idle gaps, from fio's log of every I/O."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from suitefiles import suite_file

import ssdcompare
from ssdcompare.analysis.perburst import split, summarize
from ssdcompare.fio.logs import COMPRESS_ABOVE, LogError, compress_large
from ssdcompare.report.build import write_report
from ssdcompare.results.files import ResultsFiles
from ssdcompare.run.plan import PlanOptions, make_plan
from ssdcompare.suite.workload import Workload

MIB = 1 << 20


def test_ios_are_split_where_the_idle_gap_is() -> None:
    # three bursts of 4 I/Os, 100 µs each, 1 s apart; completions in whole ms as fio logs them
    completed, lat = [], []
    for start_ms in (0, 1010, 2020):
        completed += [start_ms + 1, start_ms + 1, start_ms + 2, start_ms + 3]
        lat += [100_000] * 4
    bursts = split(np.array(completed, dtype="float64"), np.array(lat, dtype="float64"),
                   np.full(12, 4096), idle_s=1.0)  # fmt: skip
    assert list(bursts["burst"]) == [1, 2, 3]
    assert list(bursts["ios"]) == [4, 4, 4] and list(bursts["bytes"]) == [16384] * 3
    # from the first issue (1 ms - 100 µs) to the last completion (3 ms)
    assert bursts["duration_s"].tolist() == pytest.approx([0.0021] * 3)
    assert np.isnan(bursts["idle_s"].iloc[0])
    assert bursts["idle_s"].iloc[1:].tolist() == pytest.approx([1.0079, 1.0079])
    assert bursts["iops"].tolist() == pytest.approx([4 / 0.0021] * 3)
    assert bursts["lat_mean_us"].tolist() == pytest.approx([100.0] * 3)
    # gaps shorter than half the idle time stay inside a burst
    one = split(np.array([1.0, 2.0, 300.0]), np.array([1e5, 1e5, 1e5]), np.full(3, 512), 1.0)
    assert list(one["ios"]) == [3]


def test_which_jobs_log_every_io() -> None:
    def job(**fields: object) -> Workload:
        return Workload.model_validate({"rw": "randread", "bs": "4k", **fields})

    assert job(thinktime=1_000_000, thinktime_blocks=256, io_size="1g").logs_each_io
    assert job(thinktime=1_000_000, thinktime_blocks=256).bursty  # time-based: no split
    assert not job(thinktime=1_000_000, thinktime_blocks=256).logs_each_io
    assert not job(thinktime=1_000_000, thinktime_blocks=256, io_size="8g").logs_each_io
    assert not job(thinktime=500, thinktime_blocks=256, io_size="1g").bursty  # gaps too short
    assert not job(thinktime=1_000_000, io_size="1g").bursty  # an idle after every I/O


def test_the_plan_logs_every_io_of_bursty_jobs_and_warns_when_it_cannot(tmp_path: Path) -> None:
    suite = suite_file(
        tmp_path, "b",
        "{rw: randread, bs: 4k, io_size: 4m, thinktime: 100000, thinktime_blocks: 256}",
        "{rw: randread, bs: 4k, runtime: 5, thinktime: 100000, thinktime_blocks: 256}",
    )  # fmt: skip
    plan = make_plan(str(suite), str(tmp_path / "t.img"), PlanOptions(size_bytes=64 * MIB))
    capped, timed = plan.jobs
    assert "log_avg_msec=0" in capped.text and "write_iops_log" not in capped.text
    assert "log_avg_msec=1000" in timed.text and "write_iops_log" in timed.text
    assert any("not split into bursts" in w and timed.job_id in w for w in plan.warnings)


def test_large_logs_are_compressed_and_read_back(tmp_path: Path) -> None:
    lines = "".join(f"{i // 100}, {50000 + i % 7}, 0, 4096, 0\n" for i in range(60_000))
    big = tmp_path / "timeseries_lat.1.log"
    big.write_text(lines)
    small = tmp_path / "timeseries_clat.1.log"
    small.write_text("1, 2, 0, 4096, 0\n")
    assert big.stat().st_size > COMPRESS_ABOVE
    files = ResultsFiles(tmp_path)
    before = files.log_samples(big)
    assert compress_large(tmp_path, "timeseries") == [tmp_path / "timeseries_lat.1.log.gz"]
    assert not big.exists() and small.exists()  # small logs stay as fio wrote them
    assert files.log_samples(tmp_path / "timeseries_lat.1.log.gz") == before


@pytest.mark.fio
def test_a_bursty_job_is_split_into_its_bursts(tmp_path: Path) -> None:
    # 4 bursts of 256 4K reads, 400 ms idle after each: 1.6 s at least, mostly idle
    suite = suite_file(tmp_path, "b", "{rw: randread, bs: 4k, io_size: 4m, runtime: 60, "
                       "thinktime: 400000, thinktime_blocks: 256}")  # fmt: skip
    run = ssdcompare.run_sweep(str(tmp_path / "t.img"), suite=str(suite), out=tmp_path / "r",
                               size="32m")  # fmt: skip
    assert run.complete
    bursts = ssdcompare.bursts(run.path)
    assert list(bursts["burst"]) == [1, 2, 3, 4]
    assert list(bursts["ios"]) == [256] * 4 and list(bursts["bytes"]) == [MIB] * 4
    assert (bursts["idle_s"].iloc[1:] > 0.2).all()  # fio idled at least 400 ms between
    row = run.frame().iloc[0]
    assert row["bursts"] == 4 and row["total_ios"] == 1024
    # fio's IOPS divide by the idle gaps too; the bursts' own do not
    assert row["burst_iops"] > row["iops"] and row["burst_duty_pct"] < 100
    seconds = ssdcompare.timeseries(run.path)
    assert list(seconds["t_s"]) == list(range(1, len(seconds) + 1))  # every whole second
    assert seconds["iops"].sum() <= 1024
    assert run.report is not None
    html = run.report.read_text()
    assert "IOPS in bursts" in html and "fio's IOPS" in html


def test_processes_that_burst_side_by_side_add_up() -> None:
    # two fio processes, each 2 bursts of 100 I/Os in 10 ms with 90 ms idle, overlapping
    frame = pd.DataFrame({
        "process": [1, 1, 2, 2], "burst": [1, 2, 1, 2], "start_s": [0.0, 0.1, 0.005, 0.105],
        "duration_s": [0.01] * 4, "ios": [100] * 4, "bytes": [409600] * 4,
    })  # fmt: skip
    found = summarize(frame)
    assert found is not None and found.bursts == 4
    assert found.iops == pytest.approx(2 * 200 / 0.02)  # each at 10k IOPS while bursting
    assert found.duty_pct == pytest.approx(100 * 0.02 / 0.11)  # each process's own


@pytest.mark.fio
def test_a_damaged_log_costs_its_chart_not_the_report(tmp_path: Path) -> None:
    suite = suite_file(tmp_path, "b", "{rw: randread, bs: 4k, runtime: 2}")
    run = ssdcompare.run_sweep(str(tmp_path / "t.img"), suite=str(suite), out=tmp_path / "r",
                               size="8m", report=False)  # fmt: skip
    (log,) = run.path.glob("runs/*/*/r1/timeseries_iops.1.log")
    log.write_text("garbage,line\n" + log.read_text())
    with pytest.raises(LogError):
        ssdcompare.timeseries(run.path)
    damaged: list[str] = []
    assert ssdcompare.timeseries(run.path, damaged).empty and "not a fio log line" in damaged[0]
    html = write_report([run.path], tmp_path / "report.html").read_text()
    assert "Time series of a run left out" in html and "not a fio log line" in html
