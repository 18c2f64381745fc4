"""Data that comes back wrong (a workload with `verify`): fio's words read into the run's
status, the run failed, the frame's columns, the terminal's summary and the report; on the
real fio and a loop device the test makes, then alters under fio's checksums. And what is
never called so: a healthy device under a workload fio cannot check (refused before it runs),
a read that found no verified data, a verified read's one pass, a run that checked nothing."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from blockdevs import loop_device
from pydantic import ValidationError
from suitefiles import suite_file

import ssdcompare
from ssdcompare.analysis.integrity import data_wrong_results, data_wrong_runs, unchecked_runs
from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.result.reader import parse_fio_text
from ssdcompare.fio.verify import (
    DATA_WRONG,
    NO_VERIFIED_DATA,
    run_failure,
    unexplained,
    verify_failure,
)
from ssdcompare.run.plan import PlanOptions, make_plan
from ssdcompare.run.runner import RunOutcome, _settle
from ssdcompare.suite.workload import Workload

# what fio 3.33 printed on stderr for a block altered after its verified write
CRC_WORDS = """\
crc32c: verify failed at file /dev/loop0 offset 1048576, length 65536 (requested block: offset=1048576, length=65536, flags=8)
       Expected CRC: 377b3780
       Received CRC: f0e92df4
"""  # noqa: E501
ALTERED_AT = (1 << 20) + 4096  # inside the 64 KiB block at 1 MiB
SPAN = "{bs: 64k, iodepth: 4, size: 8m, runtime: 1, verify: crc32c}"


def test_a_checksum_that_did_not_match_is_named_with_fios_words() -> None:
    found = verify_failure("fio: some note\n" + CRC_WORDS + "fio: pid=1, err=84/file:io_u.c\n")
    assert found is not None
    assert (found.what, found.offset_bytes, found.length_bytes) == ("crc32c mismatch", 1 << 20,
                                                                    65536)  # fmt: skip
    assert found.file == "/dev/loop0"
    # fio's own lines, the indented ones that go with the failure too, and nothing after
    assert found.words == [CRC_WORDS.splitlines()[0], "Expected CRC: 377b3780",
                           "Received CRC: f0e92df4"]  # fmt: skip
    assert found.summary == "crc32c mismatch at offset 1 MiB"
    assert found.error.startswith(f"{DATA_WRONG}: crc32c mismatch at offset 1 MiB. fio said: ")
    assert "Received CRC: f0e92df4" in found.error and "\n" not in found.error
    # errno 84's strerror says nothing of data, and is not what the run's error says
    assert "multibyte" not in found.error


def test_a_bad_header_and_an_older_fios_words_are_named_too() -> None:
    magic = verify_failure(
        "verify: bad magic header 0, wanted acca at file /dev/fd/3 offset 503808, length 4096 "
        "(requested block: offset=503808, length=4096)\n"
    )
    assert magic is not None and magic.what == "bad magic header"
    assert magic.offset_bytes == 503808 and magic.length_bytes == 4096
    assert magic.summary.startswith("bad magic header at offset 492 KiB (the block holds no")
    offset = verify_failure("verify: bad header offset 0, wanted 8192 at file f offset 8192, "
                            "length 4096 (requested block: offset=8192, length=4096)")  # fmt: skip
    assert offset is not None and offset.what == "bad header offset"
    assert "another offset" in offset.summary
    fresh = verify_failure("verify: bad magic header 0, wanted acca at file /dev/zram1 offset 0,"
                           " length 65536 (requested block: offset=0, length=65536)")  # fmt: skip
    assert fresh is not None and fresh.summary.startswith("bad magic header at offset 0 (")
    old = verify_failure("md5: verify failed at 1052672/4096\n")  # fio 2.x
    assert old is not None and old.what == "md5 mismatch" and old.offset_bytes == 1052672
    assert old.summary == "md5 mismatch at offset 1052672 (1.0 MiB)"


def test_a_verify_error_without_a_place_is_still_data_that_came_back_wrong() -> None:
    vague = verify_failure("fio: verify type mismatch (0 media, 4 given)\n")
    assert vague is not None and vague.offset_bytes is None
    assert vague.error.startswith(f"{DATA_WRONG}: verify failed. fio said: fio: verify type")
    assert verify_failure("fio: io_u error on file /dev/loop0: Input/output error\n") is None
    # EILSEQ from a job that verifies, fio's words not found (another fio printed elsewhere)
    silent = unexplained(84, ["rw", "verify", "verify_fatal"])
    assert silent is not None and silent.error.startswith(f"{DATA_WRONG}: verify failed.")
    assert unexplained(84, ["rw"]) is None and unexplained(5, ["verify"]) is None


def test_the_runs_in_which_data_came_back_wrong_are_listed_by_result() -> None:
    frame = pd.DataFrame({
        "sweep": ["s"] * 3, "device": ["loop0"] * 3, "label": ["loop0"] * 3,
        "job": ["read-64k", "read-64k", "write-64k"], "repeat": [1, 2, 1],
        "status": ["ok", "failed", "ok"],
        "verify_failed": pd.array([False, True, pd.NA], dtype="boolean"),
        "error": [None, f"{DATA_WRONG}: crc32c mismatch at offset 1 MiB. fio said: ...", None],
    })  # fmt: skip
    assert data_wrong_runs(frame) == [
        f"read-64k on loop0, run 2: {DATA_WRONG}: crc32c mismatch at offset 1 MiB. fio said: ..."
    ]
    # the result is marked, whatever its other repeat measured
    assert list(data_wrong_results(frame)) == [("s", "loop0", "read-64k")]
    assert data_wrong_runs(frame.drop(columns="verify_failed")) == []  # an older frame


def _alter(device: str, offset: int, length: int) -> None:
    """Other bytes at `offset` of the device itself, synced: fio reads them back."""
    handle = os.open(device, os.O_WRONLY)
    try:
        os.pwrite(handle, bytes([0xA5]) * length, offset)
        os.fsync(handle)
    finally:
        os.close(handle)


WRITES = ("write-4k-qd4-verifycrc32c", "write-64k-qd4-io8m-verifycrc32c")
READ = "read-64k-qd4-verifycrc32c"


@pytest.mark.root
@pytest.mark.fio
def test_data_that_came_back_wrong_fails_the_run_and_says_so(
    tmp_path: Path, run_cli: Callable[..., Any]
) -> None:
    writes = suite_file(
        tmp_path, "verified-writes",
        # time-based: fio checks as it writes (verify_backlog); then the whole span written
        # once, read back and checked: what the read job below checks
        "{rw: write, bs: 4k, iodepth: 4, size: 8m, runtime: 1, verify: crc32c}",
        f"{{rw: write, io_size: 8m, {SPAN[1:]}",
    )  # fmt: skip
    reads = suite_file(tmp_path, "verified-read", f"{{rw: read, {SPAN[1:]}")
    with loop_device(tmp_path / "disk.img", 16 << 20) as device:
        written = ssdcompare.run_sweep([device], suite=str(writes), out=tmp_path / "written",
                                       report=False)  # fmt: skip
        _alter(device, ALTERED_AT, 512)
        done = run_cli("sweep", "--devices", device, "--suite", str(reads),
                       "--out", str(tmp_path / "read"))  # fmt: skip
    _check_verified(written.path, Path(device).name)
    assert done.exit_code == 1, done.stderr  # a failed run, as for any other failure
    _check_failed(tmp_path / "read", Path(device).name)
    assert "FAILED: DATA CAME BACK WRONG" in done.stdout
    assert "crc32c mismatch at offset 1 MiB" in done.stdout.split("DATA CAME BACK WRONG:")[1]


def _check_verified(results: Path, device: str) -> None:
    """The verified writes ran ok, and fio checked what they wrote."""
    frame = ssdcompare.load(results).set_index("job")
    assert (frame["status"] == "ok").all() and not frame["verify_failed"].any()
    timed, capped = (frame.loc[job] for job in WRITES)
    # a read section of the blocks fio read back: all of the span written once
    assert capped["verified_bytes"] == 8 << 20
    assert timed["verified_bytes"] > 0
    # a time-based verified write shares its runtime with its checks: not a run cut short
    assert "planned" not in str(timed["verdict_reason"])
    output = results / "runs" / device / WRITES[1] / "r1" / "fio.json"
    assert json.loads(output.read_text())["jobs"][0]["read"]["total_ios"] == 128  # 64 KiB each


def _check_failed(results: Path, device: str) -> None:
    """The read that found the altered block failed in fio's words, and says so."""
    run = results / "runs" / device / READ / "r1"
    status = json.loads((run / "status.json").read_text())
    assert status["status"] == "failed" and status["fio_errno"] == 84
    assert status["error"].startswith(f"{DATA_WRONG}: crc32c mismatch at offset 1 MiB. ")
    assert "verify failed at file" in status["error"] and "offset 1048576" in status["error"]
    assert status["verify_failure"]["offset_bytes"] == 1 << 20
    assert not status["device_unusable"]
    assert "Received CRC" in (run / "fio.stderr.txt").read_text()  # kept as fio wrote it
    report = (results / "report.html").read_text()
    assert '<section id="data-wrong"' in report and "crc32c mismatch at offset 1 MiB" in report
    row = ssdcompare.load(results).iloc[0]
    assert row["status"] == "failed" and row["verify_failed"]
    assert row["verify_offset_bytes"] == 1 << 20


# --- a read that found no verified data, and fio's JSON after its messages -----------------

MAGIC = ("verify: bad magic header 0, wanted acca at file /dev/loop0 offset {}, length 4096 "
         "(requested block: offset={}, length=4096)")  # fmt: skip
READ_JOB = "[global]\nfilename=/dev/loop0\n[read]\nrw=read\nbs=4k\nverify=crc32c\n"
WRITE_JOB = READ_JOB.replace("rw=read", "rw=write")
# fio's JSON of a read that failed its checks after reading `total_ios` blocks
FAILED_READ = ('{{\n  "fio version" : "fio-3.33",\n  "jobs" : [{{"jobname" : "read", '
               '"groupid" : 0, "error" : 84, "read" : {{"total_ios" : {}}}}}]\n}}\n')  # fmt: skip


def _run_folder(folder: Path, failures: list[int], read: int | None, jobfile: str) -> Path:
    """A run's folder as fio leaves it: a bad magic header at each of `failures` (offsets)
    on stderr, its JSON (a read of `read` blocks; None: no JSON) and the jobfile."""
    folder.mkdir()
    (folder / "fio.stderr.txt").write_text("".join(MAGIC.format(o, o) + "\n" for o in failures))
    (folder / "fio.json").write_text(FAILED_READ.format(read) if read is not None else "")
    (folder / "jobfile.fio").write_text(jobfile)
    return folder


@pytest.mark.parametrize(
    ("failures", "read", "jobfile", "nothing_there"),
    [
        ([0, 4096, 8192, 12288], 4, READ_JOB, True),  # every block read lacked a header
        ([503808], 1, READ_JOB, True),  # a random read's first block
        ([4 << 20, (4 << 20) + 4096], 1058, READ_JOB, False),  # blocks before it passed
        ([0, 4096], 2, WRITE_JOB, False),  # a write reads back what it wrote itself
        ([0, 4096], None, READ_JOB, True),  # fio's JSON unreadable: at the span's start
        ([4 << 20], None, READ_JOB, False),  # ... elsewhere
    ],
)  # fmt: skip
def test_a_read_that_found_no_verified_data_is_not_data_that_came_back_wrong(
    tmp_path: Path, failures: list[int], read: int | None, jobfile: str, nothing_there: bool
) -> None:
    folder = _run_folder(tmp_path / "r1", failures, read, jobfile)
    found = run_failure(folder / "fio.stderr.txt", folder / "fio.json",
                        folder / "jobfile.fio", [], [])  # fmt: skip
    assert found is not None and found.offset_bytes == failures[0]
    assert found.no_verified_data is nothing_there
    if nothing_there:
        assert found.error.startswith(
            f"{NO_VERIFIED_DATA}: the span was never written by a verified job with this "
            "block size, or was overwritten since (fio found bad magic header at offset "
        )
        assert DATA_WRONG not in found.error and "fio said: verify: bad magic" in found.error
    else:
        assert found.error.startswith(f"{DATA_WRONG}: bad magic header at offset ")


def test_a_checksum_mismatch_among_headerless_blocks_is_data_that_came_back_wrong(
    tmp_path: Path,
) -> None:
    """A block that held fio's header, and data other than what was written: the span was
    written by a verified job, and the device gave it back wrong."""
    folder = _run_folder(tmp_path / "r1", [0], 2, READ_JOB)
    with open(folder / "fio.stderr.txt", "a") as handle:
        handle.write(CRC_WORDS)
    found = run_failure(folder / "fio.stderr.txt", folder / "fio.json",
                        folder / "jobfile.fio", [], [])  # fmt: skip
    assert found is not None and not found.no_verified_data
    assert found.error.startswith(f"{DATA_WRONG}: bad magic header at offset 0")


def test_fios_json_after_its_messages_in_the_middle_of_a_line_is_read() -> None:
    """At a deep queue fio's messages of blocks that failed their checks go into its output
    file too, and its JSON starts where the last one breaks off."""
    recorded = (Path(__file__).parent / "data" / "fdatasync-write-jsonplus.json").read_text()
    messages = "\n".join(MAGIC.format(o, o) for o in (0, 4096)) + "\nverify: bad magic he"
    output = parse_fio_text(messages + recorded)
    assert output.jobs == parse_fio_text(recorded).jobs
    assert output.notes == [MAGIC.format(0, 0), MAGIC.format(4096, 4096), "verify: bad magic he"]
    # only when it is certain: fio's JSON that does not run to the end of the text, or
    # messages inside it, leave it unreadable
    for damaged in (messages + recorded + "verify: bad", messages + recorded.replace(
            '"jobs"', 'verify: bad magic header\n  "jobs"', 1)):  # fmt: skip
        with pytest.raises(SsdcompareError):
            parse_fio_text(damaged)


def test_an_unreadable_output_still_names_data_that_came_back_wrong(tmp_path: Path) -> None:
    """fio's messages garbled its JSON: the run's error says what its stderr says."""
    folder = _run_folder(tmp_path / "r1", [4 << 20], None, READ_JOB)
    (folder / "fio.json").write_text('{\n  "fio version" : "fio-3.33",\nverify: bad magic')
    outcome = _settle(RunOutcome(state="ok", exit_code=1, duration_s=1.0), folder)
    assert outcome.state == "failed" and outcome.verify_failure is not None
    assert outcome.error is not None and outcome.error.startswith(
        f"{DATA_WRONG}: bad magic header at offset 4 MiB"
    )


# --- refused before anything runs -----------------------------------------------------------


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"rw": "randrw", "io_size": "4m"}, "verify on a mix (rw=randrw) is refused"),
        ({"rw": "rw"}, "verify on a mix (rw=rw) is refused"),
        ({"rw": "randwrite", "numjobs": 2}, "2 processes (numjobs) write one span"),
        ({"rw": "write", "numjobs": 2, "extra": {"verify": "md5"}}, "write one span"),
        ({"rw": "randwrite", "numjobs": 2, "size": "256k",
          "extra": {"offset_increment": "128k"}}, "offset_increment 128k is less than the span"),
        ({"rw": "read", "ramp_time": 1}, "drop ramp_time"),
        ({"rw": "write", "ioengine": "null"}, "the null engine moves no data"),
    ],
)  # fmt: skip
def test_what_fio_cannot_check_is_refused_when_loaded(fields: dict[str, Any], said: str) -> None:
    verify = {} if "verify" in fields.get("extra", {}) else {"verify": "crc32c"}
    with pytest.raises(ValidationError, match=re.escape(said)):
        Workload(bs="4k", **verify, **fields)


def test_processes_in_regions_of_their_own_may_verify() -> None:
    for extra, size in (({"offset_increment": "256k"}, "256k"), ({"offset_increment": "25%"},
                                                                  "10%")):  # fmt: skip
        Workload(rw="randwrite", bs="4k", numjobs=4, size=size, verify="crc32c", extra=extra)
    Workload(rw="read", bs="4k", numjobs=4, verify="crc32c")  # readers check, write nothing


VERIFIED_READ = "{rw: read, bs: 64k, size: 8m, runtime: 1, verify: crc32c}"


@pytest.mark.parametrize(
    ("options", "said"),
    [
        (PlanOptions(precondition=["fill"]), "--precondition fill fills the span"),
        (PlanOptions(states=["empty"]), "--states empty discards the span before every run"),
        (PlanOptions(states=["full"]), "--states full fills the span"),
        (PlanOptions(ceiling=True), "--ceiling runs each reading job on a fresh RAM disk"),
    ],
)
def test_the_sweeps_own_writes_under_a_verified_read_are_refused_when_planned(
    tmp_path: Path, options: PlanOptions, said: str
) -> None:
    suite = suite_file(tmp_path, "v", "{rw: write, bs: 64k, size: 8m, io_size: 8m, runtime: 1, "
                       "verify: crc32c}", VERIFIED_READ)  # fmt: skip
    target = tmp_path / "target.img"
    target.write_bytes(bytes(16 << 20))
    with pytest.raises(SsdcompareError, match=re.escape(said)) as refused:
        make_plan(str(suite), [str(target)], options)
    assert "read-64k-qd1-verifycrc32c checks what a verified write left" in str(refused.value)


def test_processes_sharing_a_region_of_a_target_are_refused_when_planned(tmp_path: Path) -> None:
    """A span as a share of the target: only the target tells how large it is."""
    target = tmp_path / "target.img"
    target.write_bytes(bytes(16 << 20))
    workload = "{{rw: randwrite, bs: 4k, numjobs: 2, size: 50%, runtime: 1, verify: crc32c, " \
               "extra: {{offset_increment: {}}}}}"  # fmt: skip
    apart = suite_file(tmp_path, "apart", workload.format("8m"))
    assert make_plan(str(apart), [str(target)]).jobs
    overlapping = suite_file(tmp_path, "overlapping", workload.format("1m"))
    with pytest.raises(SsdcompareError, match="on target.img: offset_increment 1m is less than "
                       r"the span each process writes \(8 MiB\)"):  # fmt: skip
        make_plan(str(overlapping), [str(target)])


# --- on the real fio and loop devices -------------------------------------------------------


def _zero(device: str, offset: int, length: int) -> None:
    """Zeros at `offset` of the device itself, synced: fio reads them back."""
    handle = os.open(device, os.O_WRONLY)
    try:
        os.pwrite(handle, bytes(length), offset)
        os.fsync(handle)
    finally:
        os.close(handle)


@pytest.mark.root
@pytest.mark.fio
def test_a_verified_read_reads_once_and_at_a_deep_queue_still_names_what_came_back_wrong(
    tmp_path: Path,
) -> None:
    """A verified read is one pass over its span, never a run cut short. Then, with 1 MiB of
    the span zeroed, every block in flight at QD32 fails its check, fio's messages land in its
    output before its JSON (mid-line), and the run still says data came back wrong there."""
    # size-capped: each ends after its pass, long before the runtime
    common = "bs: 4k, iodepth: 32, size: 16m, runtime: 10, verify: crc32c"
    writes = suite_file(tmp_path, "w", f"{{rw: write, io_size: 16m, {common}}}")
    reads = suite_file(tmp_path, "r", f"{{rw: read, {common}}}")
    with loop_device(tmp_path / "disk.img", 16 << 20) as device:
        ssdcompare.run_sweep([device], suite=str(writes), out=tmp_path / "w", report=False)
        passed = ssdcompare.run_sweep([device], suite=str(reads), out=tmp_path / "ok",
                                      report=False)  # fmt: skip
        _zero(device, 4 << 20, 1 << 20)
        ssdcompare.run_sweep([device], suite=str(reads), out=tmp_path / "r", report=False)
    row = ssdcompare.load(passed.path).iloc[0]
    assert row["status"] == "ok" and row["verified_bytes"] == 16 << 20
    assert "planned" not in str(row["verdict_reason"]), row["verdict_reason"]
    run = next((tmp_path / "ok").glob("runs/*/*/r1"))
    assert "\ntime_based=0\n" in (run / "jobfile.fio").read_text()
    run = next((tmp_path / "r").glob("runs/*/*/r1"))
    status = json.loads((run / "status.json").read_text())
    assert status["status"] == "failed" and status["fio_errno"] == 84  # its JSON was read
    assert status["error"].startswith(f"{DATA_WRONG}: bad magic header at offset 4 MiB")
    assert status["verify_failure"]["no_verified_data"] is False
    assert not (run / "fio.json").read_text().startswith("{")  # fio's messages came first


@pytest.mark.root
@pytest.mark.fio
def test_a_verified_read_of_a_span_never_written_is_no_failure_of_the_device(
    tmp_path: Path, run_cli: Callable[..., Any]
) -> None:
    reads = suite_file(tmp_path, "r", "{rw: read, bs: 4k, iodepth: 8, size: 8m, runtime: 1, "
                       "verify: crc32c}", "{rw: randread, bs: 4k, size: 8m, runtime: 1, "
                       "verify: crc32c}")  # fmt: skip
    with loop_device(tmp_path / "disk.img", 16 << 20) as device:
        done = run_cli("sweep", "--devices", device, "--suite", str(reads),
                       "--out", str(tmp_path / "r"))  # fmt: skip
    assert done.exit_code == 1, done.stderr  # failed runs: the check could not be made
    frame = ssdcompare.load(tmp_path / "r")
    assert (frame["status"] == "failed").all() and frame["verify_failed"].isna().all()
    assert frame["error"].str.startswith(f"{NO_VERIFIED_DATA}: the span was never written ").all()
    assert "DATA CAME BACK WRONG" not in done.stdout
    assert '<section id="data-wrong"' not in (tmp_path / "r" / "report.html").read_text()


@pytest.mark.root
@pytest.mark.fio
def test_healthy_devices_under_verified_writes_never_come_back_wrong(tmp_path: Path) -> None:
    """Processes of a verified write in regions of their own, random and sequential."""
    suite = suite_file(
        tmp_path, "v",
        "{rw: randwrite, bs: 4k, iodepth: 4, numjobs: 2, io_size: 1m, size: 256k, runtime: 5, "
        "verify: crc32c, extra: {offset_increment: 256k}}",
        "{rw: write, bs: 4k, iodepth: 4, numjobs: 4, size: 4m, runtime: 1, verify: crc32c, "
        "extra: {offset_increment: 25%}}",
    )  # fmt: skip
    with loop_device(tmp_path / "disk.img", 16 << 20) as device:
        done = ssdcompare.run_sweep([device], suite=str(suite), out=tmp_path / "out",
                                    report=False)  # fmt: skip
    frame = ssdcompare.load(done.path)
    assert (frame["status"] == "ok").all(), frame["error"].tolist()
    assert not frame["verify_failed"].any() and (frame["verified_bytes"] > 0).all()


@pytest.mark.root
@pytest.mark.fio
def test_a_verified_write_that_checked_nothing_says_so(
    tmp_path: Path, run_cli: Callable[..., Any]
) -> None:
    """Its runtime ends before its write phase (an idle time after every write makes sure),
    so fio reads nothing back: the terminal and the report say so."""
    suite = suite_file(tmp_path, "v", "{rw: write, bs: 4k, size: 1m, io_size: 1m, runtime: 0.3, "
                       "thinktime: 10000, verify: crc32c}")  # fmt: skip
    with loop_device(tmp_path / "disk.img", 16 << 20) as device:
        done = run_cli("sweep", "--devices", device, "--suite", str(suite),
                       "--out", str(tmp_path / "out"))  # fmt: skip
    assert done.exit_code == 0, done.stderr
    said = ("verify: nothing was read back: the runtime ended before the write phase did; "
            "give a longer runtime or a smaller io_size")  # fmt: skip
    frame = ssdcompare.load(tmp_path / "out")
    assert frame["verified_bytes"].tolist() == [0]
    assert unchecked_runs(frame) == [f"{frame['job'][0]} on {frame['label'][0]}, run 1: {said}"]
    assert said in done.stdout
    assert said in (tmp_path / "out" / "report.html").read_text()
