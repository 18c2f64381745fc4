"""The report quotes each job's jobfile, folded, from the results folder's stored jobfile.fio:
once for the devices that ran the same workload, with the lines their jobfiles differ in; a
jobfile that cannot be read is said so, never quoted. Results of a real sweep (the
example's), copied and changed where a test needs it."""

from __future__ import annotations

import html
import os
import re
import shutil
from pathlib import Path

import pytest
from test_frame_compare import CHANGED_JOB, OTHER_HASH, changed_copy

from ssdcompare.analysis.frame import load
from ssdcompare.analysis.summary import job_summary
from ssdcompare.report.build import write_report

EXAMPLE = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"
JOB = "randwrite-4k-qd8"


def _section(report: str) -> str:
    found = re.search(r'<section id="jobfiles">.*?</section>', report, re.S)
    assert found is not None
    return found.group(0)


def _details(report: str) -> dict[str, str]:
    """Each job's folded jobfile, by job."""
    found = re.findall(r'<details class="jobfile" id="jobfile-([^"]+)">(.*?)</details>',
                       _section(report), re.S)  # fmt: skip
    return dict(found)


def _quoted(details: str) -> list[str]:
    return [html.unescape(text) for text in re.findall(r"<pre>(.*?)</pre>", details, re.S)]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("jobfiles") / "report.html"
    return write_report([EXAMPLE], out, baseline="loop1").read_text()


def test_each_job_has_its_stored_jobfile_once_with_the_other_devices_target(report: str) -> None:
    details = _details(report)
    jobs = list(dict.fromkeys(load(EXAMPLE)["job"]))
    assert sorted(details) == sorted(jobs)
    assert '<details class="jobfile" id="jobfile-' in report and " open" not in _section(report)
    for job, shown in details.items():
        # zram1 (the first device) is quoted: exactly what fio read
        stored = (EXAMPLE / "runs" / "zram1" / job / "r1" / "jobfile.fio").read_text()
        assert _quoted(shown) == [stored], job
        assert "every device" in shown
    # loop1's jobfiles differ in their target alone, in every job: said once
    shared = re.findall(r"<li>(.*?)</li>", _section(report).split("<details")[0])
    assert shared == ["loop1's jobfile of every job: the same but for "
                      "<code>filename=/dev/loop1</code> and 1 comment line."]  # fmt: skip
    loop1 = (EXAMPLE / "runs" / "loop1" / JOB / "r1" / "jobfile.fio").read_text()
    zram1 = (EXAMPLE / "runs" / "zram1" / JOB / "r1" / "jobfile.fio").read_text()
    differs = [b for a, b in zip(zram1.splitlines(), loop1.splitlines(), strict=True) if a != b]
    assert differs == [f"; ssdcompare 0.1.0 | suite ramdisk-vs-loop | job {JOB} | target loop1",
                       "filename=/dev/loop1"]  # fmt: skip


def test_devices_that_ran_other_workloads_get_a_jobfile_each(tmp_path: Path) -> None:
    copy = changed_copy(tmp_path)
    report = write_report([EXAMPLE, copy], tmp_path / "r.html").read_text()
    details = _details(report)
    changed = details[CHANGED_JOB]
    assert "&ne; jobfiles" in changed or "≠ jobfiles" in changed
    summary = job_summary(load([EXAMPLE, copy]))
    hashes = list(dict.fromkeys(summary.loc[summary["job"] == CHANGED_JOB, "workload_hash"]))
    assert len(hashes) == 2 and OTHER_HASH in hashes
    assert all(f"(workload {h})" in changed for h in hashes)
    first, second = _quoted(changed)
    assert "runtime=3\n" in first and "ioengine=io_uring" in first
    assert "runtime=10\n" in second and "ioengine=libaio" in second
    assert second == (copy / "runs" / "zram1" / CHANGED_JOB / "r1" / "jobfile.fio").read_text()
    # every other job ran one workload on all four
    assert all("every device" in shown for job, shown in details.items() if job != CHANGED_JOB)


def test_a_jobfile_that_cannot_be_read_is_said_so_and_never_quoted(tmp_path: Path) -> None:
    copy = tmp_path / "received"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns(".cache"))
    secret = tmp_path / "elsewhere.fio"
    secret.write_text("; SECRET-LINE that is no part of these results\n")
    runs = sorted((copy / "runs" / "zram1" / JOB).glob("r*"))
    for run in runs:  # every repeat's: a link to a file outside the folder
        (run / "jobfile.fio").unlink()
        os.symlink(secret, run / "jobfile.fio")
    # and one of loop1's is no text: its first repeat, so the next one is quoted
    (copy / "runs" / "loop1" / "read-4m-qd16" / "r1" / "jobfile.fio").write_bytes(b"\xff\xfe\x00")
    report = write_report([copy], tmp_path / "r.html").read_text()
    assert "SECRET-LINE" not in report
    shown = _details(report)[JOB]
    said = re.findall(r'<p class="unread">Not quoted: (.*?)</p>', shown)
    assert len(said) == 1 and said[0].startswith(f"zram1: runs/zram1/{JOB}/r1/jobfile.fio ")
    assert "symbolic link" in said[0]
    # loop1's own jobfile stands for the job: what its fio read
    stored = (copy / "runs" / "loop1" / JOB / "r1" / "jobfile.fio").read_text()
    assert _quoted(shown) == [stored]
    reads = _details(report)["read-4m-qd16"]
    assert "Not quoted" not in reads  # r2 of loop1 is read instead of the damaged r1
    assert "loop1's: the same but for <code>filename=/dev/loop1</code>" in reads
