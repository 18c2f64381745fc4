"""Data that comes back wrong (a workload with `verify`): fio's words read into the run's
status, the run failed, the frame's columns, the terminal's summary and the report; on the
real fio and a loop device the test makes, then alters under fio's checksums."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from blockdevs import loop_device
from suitefiles import suite_file

import ssdcompare
from ssdcompare.analysis.integrity import data_wrong_results, data_wrong_runs
from ssdcompare.fio.verify import DATA_WRONG, unexplained, verify_failure

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
