"""Per-second time series from fio's logs, and the write cliff in them."""

from __future__ import annotations

import gzip
import subprocess
import threading
import time
from pathlib import Path

import pytest
from blkio import ReadCap, needs_blkio
from blockdevs import loop_device
from fioprocs import fio_has_read, fio_processes, wait_for
from suitefiles import suite_file
from test_report import chromium

import ssdcompare
from ssdcompare.analysis.persecond import find_cliff
from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.logs import LogError
from ssdcompare.report.build import write_report
from ssdcompare.results.files import ResultsFiles

# judged on CPU use or timing: runs alone, never beside other tests (scripts/test.sh)
pytestmark = pytest.mark.serial


def test_a_log_is_read_plain_or_gzipped_and_a_cut_last_line_is_left_out(tmp_path: Path) -> None:
    text = "1000, 7917, 0, 4096, 0\n2001, 120, 1, 4096, 0, 0\n3000, 5"
    plain = tmp_path / "timeseries_iops.1.log"
    plain.write_text(text)
    packed = tmp_path / "timeseries_iops.2.log.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    files = ResultsFiles(tmp_path)  # the one reader of a results folder's files
    for path in (plain, packed):
        samples = files.log_samples(path)
        assert [(s.time_ms, s.value, s.direction) for s in samples] == [
            (1000, 7917.0, "read"), (2001, 120.0, "write")]  # fmt: skip
    broken = tmp_path / "timeseries_bw.1.log"
    broken.write_text("1000, 7917, 0, 4096, 0\nnot a log line\n2000, 1, 0, 4096, 0\n")
    with pytest.raises(LogError, match="timeseries_bw.1.log line 2 is not a fio log line$"):
        files.log_samples(broken)  # the line is named by its number, never quoted


def test_a_cliff_is_where_throughput_falls_and_stays_down() -> None:
    seconds = list(range(1, 13))
    cache = [9000, 9100, 8900, 9050, 8800, 9000, 2000, 1900, 2100, 9000, 1800, 2000]
    cliff = find_cliff(seconds, cache)
    assert cliff is not None and cliff.t_s == 7  # one second back up does not undo it
    assert cliff.before_iops == 9000 and cliff.after_iops == 2000
    # noise, a single dip, a slow drift and too short a run are no cliffs
    assert find_cliff(seconds, [9000, 7000, 11000, 6500, 9800, 8000] * 2) is None
    assert find_cliff(seconds, [9000] * 5 + [100] + [9000] * 6) is None
    assert find_cliff(seconds, [9000 - 300 * i for i in range(12)]) is None
    assert find_cliff(seconds[:5], [9000, 9000, 9000, 100, 100]) is None


def test_timeseries_of_something_that_is_not_results_says_so(tmp_path: Path) -> None:
    with pytest.raises(SsdcompareError, match="not an ssdcompare results folder"):
        ssdcompare.timeseries(tmp_path)


class Throttle(ReadCap):
    """Reads from one device capped at `iops`; fio moves in on demand."""

    def __init__(self, device: str, iops: int) -> None:
        super().__init__(device, iops, "test")
        self.applied_at: float | None = None  # seconds after fio's job started

    def catch(self, results: Path) -> None:
        processes = fio_processes(results)
        for proc in processes:
            self.join(proc.pid)
        self.applied_at = time.time() - max(p.create_time() for p in processes)


@pytest.mark.root
@pytest.mark.fio
@needs_blkio
def test_a_device_throttled_partway_shows_a_cliff_at_that_second(tmp_path: Path) -> None:
    suite = suite_file(tmp_path, "steady-read", "{rw: randread, bs: 4k, iodepth: 1, runtime: 8}")
    out = tmp_path / "results"
    with loop_device(tmp_path / "disk.img", 64 << 20) as device:
        throttle = Throttle(device, iops=50)
        try:

            def throttle_partway() -> None:
                wait_for(lambda: fio_has_read(out), "fio to start reading")
                time.sleep(3.5)  # when does not matter: the test reads when it happened
                throttle.catch(out)

            worker = threading.Thread(target=throttle_partway)
            worker.start()
            run = ssdcompare.run_sweep(device, suite=str(suite), out=out, report=False)
            worker.join()
        finally:
            throttle.remove()
    assert throttle.applied_at is not None and run.complete
    row = run.frame().iloc[0]
    assert abs(row["cliff_s"] - throttle.applied_at) <= 2, (row["cliff_s"], throttle.applied_at)
    assert row["cliff_after_iops"] < 100 < 10 * 100 < row["cliff_before_iops"]
    # its likely cause: a reading job fills no write cache, a loop device has no health log
    assert row["cliff_written_bytes"] == 0
    assert row["cliff_cause"].startswith("not a write cache: the job had written nothing")
    assert "no health log tells whether the drive throttled" in row["cliff_cause"]
    seconds = ssdcompare.timeseries(out)
    assert set(seconds["direction"]) == {"read"}
    ticks = sorted(seconds["t_s"])
    assert ticks[0] == 1 and ticks == list(range(1, len(ticks) + 1)) and len(ticks) >= 7
    # the report, as a browser shows it: the chart over time and the cliff in the table
    report = write_report([out], tmp_path / "report.html")
    dom = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", report.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    ).stdout  # fmt: skip
    assert "IOPS over time: " in dom and "Random read" in dom
    assert 'class="cliff"' in dom and f"write cliff at {row['cliff_s']:.0f} s in 1 of 1" in dom
    assert dom.count("<svg") >= 2  # the time series besides the others
    assert f"write cliff at {row['cliff_s']:.0f} s" in dom.split('id="charts"')[1]  # marked


@pytest.mark.fio
def test_every_job_of_a_sweep_has_a_row_for_every_second(tmp_path: Path) -> None:
    run = ssdcompare.run_sweep(
        str(tmp_path / "t.img"), suite=str(Path(__file__).parent / "suites" / "tiny.yaml"),
        size="16m", out=tmp_path / "results", report=False,
    )  # fmt: skip
    seconds = ssdcompare.timeseries(run.path)
    frame = run.frame()
    assert set(seconds["job"]) == set(frame["job"])
    for (job, _direction), rows in seconds.groupby(["job", "direction"]):
        ticks = sorted(rows["t_s"])
        assert ticks == list(range(1, len(ticks) + 1)) and len(ticks) >= 1, (job, ticks)
        assert (rows["iops"] > 0).all() and (rows["bw_bytes"] > 0).all()
        assert (rows["lat_mean_us"] > 0).all()
    # a mix has a read and a write series; numjobs clones are added into one
    assert set(seconds.loc[seconds["job"] == "randwrite-4k-qd16", "direction"]) == {"write"}


def test_a_second_is_counted_once_even_when_fio_logs_a_partial_one_beside_it() -> None:
    # fio ends a job's latency log with a partial second that can fall on the last full one
    # (3000 ms twice): each second's IOPS must be exactly what the IOPS log says
    example = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"
    seconds = ssdcompare.timeseries(example)
    for log in sorted(example.glob("runs/*/*/r1/timeseries_iops.1.log"))[:6]:
        device, job = log.parts[-4], log.parts[-3]
        mine = seconds[(seconds["device"] == device) & (seconds["job"] == job)
                       & (seconds["repeat"] == 1)]  # fmt: skip
        logged = [float(s.value) for s in ResultsFiles(example).log_samples(log)]
        assert sorted(mine["iops"]) == sorted(logged), (device, job)
