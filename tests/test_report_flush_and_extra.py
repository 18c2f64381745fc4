"""fdatasync and other fio options given through `extra`, from a real sweep to the report and
the terminal summary."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from test_report import parse

from ssdcompare.analysis.frame import load
from ssdcompare.analysis.summary import job_summary
from ssdcompare.cli.terminal import summary_lines

SUITE = """\
name: flush-and-extra
description: fdatasync through extra, a rate-limited read, and a plain read
defaults: {runtime: 1, size: 8m}
workloads:
  - {rw: randwrite, bs: 4k, iodepth: 1, extra: {fdatasync: 1}}
  - {rw: randread, bs: 4k, iodepth: 1, extra: {rate_iops: 200}}
  - {rw: read, bs: 64k, iodepth: 2}
"""
FLUSHED = "randwrite-4k-qd1+fdatasync"
LIMITED = "randread-4k-qd1+rate_iops200"
PLAIN = "read-64k-qd2"


# every test here reads one real sweep
# one worker runs this file's tests (scripts/test.sh: --dist loadgroup): their module
# fixture, a sweep or a big results folder, is then made once, not once per worker
pytestmark = [pytest.mark.fio, pytest.mark.xdist_group("test_report_flush_and_extra")]


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("flush-and-extra")
    (folder / "suite.yaml").write_text(SUITE)
    out = folder / "results"
    done = subprocess.run(
        [sys.executable, "-m", "ssdcompare", "sweep", "--devices", str(folder / "t.img"),
         "--size", "16m", "--suite", str(folder / "suite.yaml"), "--out", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return out


def test_fdatasync_from_extra_is_a_column_like_fsync(sweep: Path) -> None:
    frame = load(sweep)
    assert frame["fdatasync"].dtype == "Int64"
    flushed = frame[frame["job"] == FLUSHED]
    assert flushed["direction"].tolist() == ["write", "sync"]
    assert flushed["fdatasync"].tolist() == [1, 1] and flushed["fsync"].tolist() == [0, 0]
    sync = flushed[flushed["direction"] == "sync"].iloc[0]
    assert sync["total_ios"] > 0 and sync["lat_mean_us"] > 0  # the fdatasync calls
    assert (frame.loc[frame["job"] != FLUSHED, "fdatasync"] == 0).all()
    summary = job_summary(frame)
    assert summary.set_index("job").loc[FLUSHED, "fdatasync"] == 1


def test_extra_options_are_a_column(sweep: Path) -> None:
    frame = load(sweep).drop_duplicates("job").set_index("job")
    assert frame.loc[LIMITED, "extra_options"] == "rate_iops=200"
    assert frame.loc[FLUSHED, "extra_options"] == "fdatasync=1"
    assert pd.isna(frame.loc[PLAIN, "extra_options"])


def test_new_sweeps_report_total_latency_and_completion_latency_apart(sweep: Path) -> None:
    frame = load(sweep)
    io = frame[frame["direction"] != "sync"]
    assert (io["lat_source"] == "lat").all()  # the jobfiles ask for lat_percentiles
    assert (io["clat_mean_us"] > 0).all() and (io["clat_p99_us"] > 0).all()
    assert (io["lat_mean_us"] >= io["clat_mean_us"]).all()


def test_the_report_describes_flushes_and_extra_options(sweep: Path) -> None:
    html = (sweep / "report.html").read_text()  # written by the sweep itself

    def workload(job: str) -> str:
        row = re.search(rf"<td>{re.escape(job)}</td>.*?</tr>", html, re.S)
        assert row is not None
        return parse(row.group(0)).cells[1]["text"]

    assert "fdatasync" in workload(FLUSHED).split("+")[0]  # like "fsync" for fsync jobs
    assert "+ rate_iops=200" in workload(LIMITED)
    assert "+" not in workload(PLAIN)


def test_the_terminal_summary_shows_extra_options(sweep: Path) -> None:
    lines = summary_lines(sweep)
    assert f"{LIMITED}  (+ rate_iops=200)" in lines
    assert PLAIN in lines  # a plain job's line is its id alone
