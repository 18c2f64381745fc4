"""fio's count of a run's I/O against the block layer's own (ssdcompare.judge.iocount): real
runs on loop devices and a RAM disk agree with it; a run during which a process of the test
writes to the device, and a buffered run whose reads the page cache serves, are told apart
with the figures and their meaning; the rule itself on clear-cut counts."""

from __future__ import annotations

import mmap
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from blockdevs import loop_device, zram_device
from reportbrowser import measure
from suitefiles import suite_file
from test_safety_files import mounted

import ssdcompare
from ssdcompare.cli.terminal import summary_lines
from ssdcompare.judge.iocount import (
    CACHED,
    ELSEWHERE,
    OK,
    SHARED,
    UNWRITTEN,
    Counts,
    Run,
    check_io,
)
from ssdcompare.judge.verdict import RunFacts, Verdict, judge_run
from ssdcompare.report.build import write_report
from ssdcompare.target import probes

MB = 1 << 20


def _suite(folder: Path, *workloads: str, span: str = "8m", name: str = "io") -> str:
    return str(suite_file(folder, name, *workloads, defaults=f"{{size: {span}}}"))


def _read_on_a_loop_device(folder: Path, suite: str, while_made: list[str] | None = None
                           ) -> tuple[pd.Series, str, str | None]:  # fmt: skip
    """A reading sweep of `suite` on a new loop device (named in `while_made` first): the
    run's first row, its io_check and reason."""
    with loop_device(folder / "disk.img", 16 * MB) as loop:
        if while_made is not None:
            while_made.append(loop)
        run = ssdcompare.run_sweep([loop], suite=suite, out=folder / "r", read_only=True,
                                   report=False)  # fmt: skip
    assert run.complete
    frame = run.frame()
    return (frame.iloc[0], *_checked(frame))


def _checked(frame: pd.DataFrame) -> tuple[str, str | None]:
    """The run's io_check and reason (every row of a run carries the same)."""
    assert frame["io_check"].nunique(dropna=False) == 1
    row = frame.iloc[0]
    return row["io_check"], row["io_check_reason"]


@pytest.mark.root
@pytest.mark.fio
def test_direct_reads_and_writes_on_a_loop_device_are_what_the_device_saw(
    tmp_path: Path,
) -> None:
    suite = _suite(tmp_path, "{rw: randread, bs: 4k, iodepth: 4, runtime: 1}",
                   "{rw: randwrite, bs: 64k, iodepth: 2, runtime: 1}")  # fmt: skip
    with loop_device(tmp_path / "disk.img", 16 * MB) as loop:
        run = ssdcompare.run_sweep([loop], suite=suite, out=tmp_path / "r", report=False)
    assert run.complete
    frame = run.frame()
    assert list(frame["io_check"]) == [OK, OK]
    assert frame["io_check_reason"].isna().all()
    reads = frame[frame["direction"] == "read"].iloc[0]
    assert reads["disk_read_bytes"] == reads["io_bytes"] > 0  # every byte, and no more


@pytest.mark.root
@pytest.mark.fio
def test_a_ram_disk_agrees_too(tmp_path: Path) -> None:
    suite = _suite(tmp_path, "{rw: randread, bs: 4k, iodepth: 8, runtime: 1}")
    with zram_device(16 * MB) as ram:
        run = ssdcompare.run_sweep([ram], suite=suite, out=tmp_path / "r", read_only=True,
                                   report=False)  # fmt: skip
    assert run.complete
    assert _checked(run.frame()) == (OK, None)


@pytest.fixture
def writer_during_runs(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """A thread of this process that writes to the device the whole time each run lasts:
    started once the probes have read the counters before fio starts, stopped (after at
    least one write reached the device) before they read them again after fio ends. Append
    the device's path to the list to make it write there."""
    devices: list[str] = []
    real = probes.snapshot
    state: dict[str, object] = {}

    def write(path: str, stop: threading.Event, wrote: threading.Event) -> None:
        block = mmap.mmap(-1, MB)  # page-aligned, as O_DIRECT needs
        fd = os.open(path, os.O_WRONLY | os.O_DIRECT)
        try:
            while not stop.is_set():
                os.pwrite(fd, block, 8 * MB)  # in the second half of the device
                wrote.set()
        finally:
            os.close(fd)
            wrote.set()  # also when a write failed: the run's check then shows no writer

    def snapshot(target: object, before: bool = True) -> object:
        running = state.pop("thread", None)
        if running is not None:  # after the run: stop the writer once it has written
            wrote, stop = state.pop("wrote"), state.pop("stop")
            wrote.wait(30)  # type: ignore[attr-defined]
            stop.set()  # type: ignore[attr-defined]
            running.join(30)  # type: ignore[attr-defined]
        taken = real(target, before)  # type: ignore[arg-type]
        if before and devices:
            stop, wrote = threading.Event(), threading.Event()
            thread = threading.Thread(target=write, args=(devices[0], stop, wrote))
            state.update(thread=thread, stop=stop, wrote=wrote)
            thread.start()
        return taken

    monkeypatch.setattr("ssdcompare.run.jobrun.probes.snapshot", snapshot)
    yield devices


@pytest.mark.root
@pytest.mark.fio
def test_a_process_writing_to_the_device_during_a_run_is_told(
    tmp_path: Path, writer_during_runs: list[str]
) -> None:
    suite = _suite(tmp_path, "{rw: randread, bs: 4k, iodepth: 4, runtime: 1}")
    row, check, reason = _read_on_a_loop_device(tmp_path, suite, writer_during_runs)
    assert check == SHARED
    assert row["disk_write_bytes"] >= MB  # the writer's, of a job that only reads
    assert reason.startswith("the device wrote ") and "where fio counted 0 B" in reason
    assert "another process used the device during the run" in reason
    # not the drive's alone: disturbed (or CPU-bound on a busy host, the reason added)
    assert row["verdict"] in ("disturbed", "cpu") and reason in row["verdict_reason"]
    html = write_report([tmp_path / "r"], tmp_path / "report.html").read_text()
    # a reader sees it among the warnings at the top, before any table
    seen = measure(html, """
      var items = Array.from(document.querySelectorAll("#warnings li"));
      var at = items.findIndex(function (li) {
        return li.textContent.indexOf("The block layer's count disagrees") === 0; });
      if (at < 0 || at + 1 >= items.length) return null;
      var item = items[at + 1];  // the run, on a line of its own
      var box = item.getBoundingClientRect(), table = document.querySelector("table");
      return {text: item.textContent, height: box.height, width: box.width,
              beforeTables: !table || box.bottom <= table.getBoundingClientRect().top};
      """, 1000, tmp_path)  # fmt: skip
    assert seen is not None and seen["height"] > 0 and seen["width"] > 0 and seen["beforeTables"]
    assert "another process used the device during the run" in seen["text"]
    said = summary_lines(tmp_path / "r")  # what the terminal shows at the end of the sweep
    at = said.index("The device did not see what fio counted (the block layer's count):")
    assert "another process used the device during the run" in said[at + 1]


@pytest.mark.root
@pytest.mark.fio
def test_a_group_is_checked_on_its_members_devices_together(
    tmp_path: Path, writer_during_runs: list[str]
) -> None:
    """A group of two loop devices: a mixed job's reads and writes agree with what both
    devices saw; a writer on one member during another sweep is told on every row of it."""
    mixed_suite = _suite(tmp_path, "{rw: randrw, rwmixread: 70, bs: 4k, iodepth: 4, runtime: 1}",
                         name="mixed")  # fmt: skip
    reads_suite = _suite(tmp_path, "{rw: randread, bs: 4k, iodepth: 4, runtime: 1}")
    with loop_device(tmp_path / "a.img", 16 * MB) as one, \
            loop_device(tmp_path / "b.img", 16 * MB) as two:  # fmt: skip
        group = f"{one}+{two}"
        first = ssdcompare.run_sweep([group], suite=mixed_suite,
                                     out=tmp_path / "mixed", report=False)  # fmt: skip
        writer_during_runs.append(two)
        second = ssdcompare.run_sweep([group], suite=reads_suite, out=tmp_path / "reads",
                                      read_only=True, report=False)  # fmt: skip
    assert first.complete and second.complete
    mixed, reads = first.frame(), second.frame()
    # the group's own rows carry the check; its members' rows do not repeat it
    own, members = mixed[mixed["member"].isna()], mixed[mixed["member"].notna()]
    assert len(own) == 2 and set(own["io_check"]) == {OK} and len(members) == 4
    assert members["io_check"].isna().all() and members["verdict"].notna().all()
    assert len(reads) == 3 and list(reads["io_check"].fillna("-")) == [SHARED, "-", "-"]
    assert "another process used the device" in reads.iloc[0]["io_check_reason"]


@pytest.mark.root
@pytest.mark.fio
def test_buffered_reads_the_page_cache_served_are_told(tmp_path: Path) -> None:
    suite = _suite(tmp_path, "{rw: randread, bs: 4k, iodepth: 1, runtime: 1, direct: false}",
                   span="2m")  # fmt: skip
    row, check, reason = _read_on_a_loop_device(tmp_path, suite)
    assert check == CACHED
    # the span once at most, and what udev reads of a device just made (blkid looks at its
    # first and last blocks, as it may while the job runs): far less than fio read
    assert row["disk_read_bytes"] <= 2 * MB + 128 * 1024 < row["io_bytes"]
    assert "served from the page cache (buffered I/O, direct=0)" in reason
    assert "measures the host's memory, not the drive" in reason
    # not compared as the drive's: the host answered
    assert row["verdict"] == "host" and row["verdict_reason"].startswith(reason)


@pytest.mark.root
@pytest.mark.fio
def test_a_file_is_checked_on_the_device_under_its_filesystem(tmp_path: Path) -> None:
    """Direct reads of a file reach the loop device its ext4 lives on (with the filesystem's
    own I/O besides: only a shortfall could be told); buffered ones the page cache serves."""
    suite = _suite(tmp_path, "{rw: randread, bs: 4k, iodepth: 4, runtime: 1}",
                   "{rw: randread, bs: 4k, iodepth: 1, runtime: 1, direct: false}",
                   span="2m")  # fmt: skip
    with loop_device(tmp_path / "disk.img", 64 * MB) as loop:
        subprocess.run(["mkfs.ext4", "-q", "-F", loop], check=True)
        with mounted(loop, tmp_path / "mnt") as mnt:
            run = ssdcompare.run_sweep([str(mnt / "t.img")], suite=suite, out=tmp_path / "r",
                                       size="2m", report=False)  # fmt: skip
    assert run.complete
    frame = run.frame().set_index("job")
    assert set(frame["disk_devices"]) == {Path(loop).name}
    assert frame.loc["randread-4k-qd4", "io_check"] == OK
    assert frame.loc["randread-4k-qd1-buffered", "io_check"] == CACHED
    assert "served from the page cache" in frame.loc["randread-4k-qd1-buffered", "io_check_reason"]


def _device(read: float = 0, write: float = 0, read_ios: float = 0, write_ios: float = 0,
            read_merges: float = 0, write_merges: float = 0) -> Counts:  # fmt: skip
    return Counts(read, write, read_ios, write_ios, read_merges, write_merges)


def test_the_rule_on_clear_cut_counts() -> None:
    fio = Counts(400 * MB, 0, 102_400, 0)
    same = Run(direct=True, whole_device=True)
    agreed = check_io(fio, _device(400 * MB, 0, 102_400), same)
    assert agreed.result == OK and agreed.reason is None
    # within the tolerance: 2 % and what the kernel reads around a run
    assert check_io(fio, _device(410 * MB, 3 * MB, 104_000), same).result == OK
    # requests merged on the way count as the I/Os they were
    assert check_io(fio, _device(400 * MB, 0, 51_200, 0, 51_200), same).result == OK
    too_few = check_io(fio, _device(400 * MB, 0, 50_000), same)
    assert too_few.result == ELSEWHERE and "fio completed 102,400 reads" in too_few.reason
    written = check_io(fio, _device(400 * MB, 64 * MB, 102_400, 1_000), same)
    assert written.result == SHARED and "another process" in written.reason
    # a file target's device carries the filesystem and other files: only a shortfall counts
    on_file = Run(direct=True, whole_device=False)
    assert check_io(fio, _device(900 * MB, 64 * MB, 230_000, 1_000), on_file).result == OK
    sparse = check_io(fio, _device(0, 0, 0), on_file)  # reads of blocks never written
    assert sparse.result == UNWRITTEN and "sparse or preallocated" in sparse.reason
    lost = check_io(Counts(0, 400 * MB, 0, 102_400), _device(0, 40 * MB, 0, 10_240), on_file)
    assert lost.result == ELSEWHERE and "not this device's" in lost.reason
    # a ramp the device counts and fio does not: more in the job's direction is no sign,
    # writes to a reading job's device still are
    ramped = Run(direct=True, whole_device=True, partly_counted=True)
    assert check_io(fio, _device(520 * MB, 0, 133_000), ramped).result == OK
    assert check_io(fio, _device(520 * MB, 64 * MB, 133_000, 1_000), ramped).result == SHARED
    # through the page cache: what is short was the cache's; what is more (read-ahead, a
    # page read before part of it is written) is the kernel's own, and no sign
    buffered = Run(direct=False, whole_device=True)
    held = check_io(Counts(0, 400 * MB, 0, 102_400), _device(30 * MB, 100 * MB, 7_000, 800),
                    buffered)  # fmt: skip
    assert held.result == CACHED and "still held in the page cache" in held.reason
    read_ahead = check_io(fio, _device(460 * MB, 0, 3_700), buffered)
    assert read_ahead.result == OK
    # the mmap engine goes through the page cache whatever direct says
    mapped = check_io(fio, _device(8 * MB, 0, 2_048), Run(direct=True, whole_device=True,
                                                          engine="mmap"))  # fmt: skip
    assert mapped.result == CACHED and "the mmap engine" in mapped.reason
    # fio's "mixed" section adds reads and writes up: so are the device's
    mixed = check_io(Counts(400 * MB, 0, 102_400, 0), _device(280 * MB, 120 * MB, 71_680, 30_720),
                     Run(direct=True, whole_device=True, merged_directions=True))  # fmt: skip
    assert mixed.result == OK
    with pytest.raises(ValueError):
        check_io(fio, _device(float("nan")), same)


def test_what_the_count_shows_becomes_the_verdict() -> None:
    """A run the host answered (page cache, a file's unwritten blocks) is `host`; one whose
    device did more, or less than fio counted with direct I/O, is `disturbed`."""
    for check, verdict in ((CACHED, "host"), (UNWRITTEN, "host"), (SHARED, "disturbed"),
                           (ELSEWHERE, "disturbed"), (OK, "drive")):  # fmt: skip
        reason = None if check == OK else f"the reason of {check}"
        found = judge_run(RunFacts(cpu_bound=False, cpu_reason=None, io_check=check,
                                   io_reason=reason))  # fmt: skip
        assert found.verdict == verdict and found.reason == reason, check
    # the CPU's reason joins the host's
    found = judge_run(
        RunFacts(
            cpu_bound=True,
            cpu_reason="fio worker saturated",
            io_check=CACHED,
            io_reason="served from the page cache",
        )
    )
    assert found == Verdict("host", "served from the page cache; fio worker saturated")


@pytest.mark.root
@pytest.mark.fio
def test_results_the_page_cache_answered_get_advice_of_their_own(tmp_path: Path) -> None:
    """Two loop devices read through the page cache: both results are the host's, left out
    of the answer as such, and the advice is about direct I/O, not about the CPU."""
    suite = _suite(tmp_path, "{rw: randread, bs: 4k, iodepth: 1, runtime: 1, direct: false}",
                   span="2m")  # fmt: skip
    with loop_device(tmp_path / "a.img", 16 * MB) as one, \
            loop_device(tmp_path / "b.img", 16 * MB) as two:  # fmt: skip
        run = ssdcompare.run_sweep([one, two], suite=suite, out=tmp_path / "r", read_only=True)
    assert run.complete and run.report is not None
    assert set(run.frame()["verdict"]) == {"host"}
    html = run.report.read_text()
    assert "The page cache or the filesystem, not the device, answered 2 result(s)" in html
    assert "use direct I/O (direct: true, the default)" in html and "measured the host)" in html
    said = summary_lines(tmp_path / "r")
    assert any(line.startswith("Host-bound: these numbers measure the host") for line in said)
