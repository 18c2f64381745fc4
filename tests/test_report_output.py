"""Where a report may be written: an .html name, never over a file of the results, never over
a file that is not a report ssdcompare made. Results of a real sweep (the example's), copied."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import CliResult

from ssdcompare.errors import SsdcompareError
from ssdcompare.report.build import write_report
from ssdcompare.results.store import ResultsDir

EXAMPLE = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"
RUN = Path("runs") / "loop1" / "randwrite-4k-qd128" / "r1"


@pytest.fixture
def results(tmp_path: Path) -> Path:
    folder = tmp_path / "A"
    shutil.copytree(EXAMPLE, folder)
    return folder


def checksums(folder: Path) -> dict[str, str]:
    """Every results file's checksum (the derived .cache and the reports left out)."""
    return {
        str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(folder.rglob("*"))
        if path.is_file() and ".cache" not in path.parts and path.suffix != ".html"
    }


@pytest.mark.parametrize(
    "name", ["manifest.json", str(RUN / "fio.json"), str(RUN / "cpu.json"),
             str(RUN / "status.json"), str(RUN / "jobfile.fio")],
)  # fmt: skip
def test_report_never_writes_over_a_results_file(
    results: Path, name: str, run_cli: Callable[..., CliResult]
) -> None:
    before = checksums(results)
    done = run_cli("report", str(results), "-o", str(results / name))
    assert done.exit_code == 2, done
    assert done.stderr.startswith("error: ") and len(done.stderr.strip().splitlines()) == 1
    assert "Traceback" not in done.stderr
    with pytest.raises(SsdcompareError, match=r"\.html"):
        write_report([results], results / name)
    assert checksums(results) == before
    ResultsDir.open(results)  # still a results folder


def test_report_refuses_a_file_it_did_not_make_and_replaces_its_own(
    results: Path, tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    notes = tmp_path / "notes.html"
    notes.write_text("<!DOCTYPE html><html><head><title>my notes</title></head></html>\n")
    kept = notes.read_bytes()
    done = run_cli("report", str(results), "-o", str(notes))
    assert done.exit_code == 2 and "not a report ssdcompare made" in done.stderr, done
    with pytest.raises(SsdcompareError, match="not a report ssdcompare made"):
        write_report([results], notes)
    assert notes.read_bytes() == kept
    # a link named like a report, to a results file, is no report either
    link = results / "link.html"
    link.symlink_to(results / "manifest.json")
    before = checksums(results)
    with pytest.raises(SsdcompareError, match="not a report ssdcompare made"):
        write_report([results], link)
    assert checksums(results) == before and link.is_symlink()
    # its own report (the default name, and another) is written again
    assert run_cli("report", str(results)).exit_code == 0
    assert run_cli("report", str(results)).exit_code == 0
    mine = tmp_path / "Report.HTM"
    write_report([results], mine)
    write_report([results], mine)
    assert "ssdcompare" in mine.read_text()[:1000]
    assert checksums(results) == before


def test_report_names_must_be_html(
    results: Path, tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    for name in ("report.txt", "report", "report.json", "report.html.bak"):
        done = run_cli("report", str(results), "-o", str(tmp_path / name))
        assert done.exit_code == 2 and "ending in .html" in done.stderr, done
        assert not (tmp_path / name).exists()


def test_report_stays_out_of_the_runs_folders(
    results: Path, run_cli: Callable[..., CliResult]
) -> None:
    before = checksums(results)
    target = results / RUN / "report.html"
    done = run_cli("report", str(results), "-o", str(target))
    assert done.exit_code == 2 and "inside the results folder" in done.stderr, done
    assert not target.exists() and checksums(results) == before


# ---- exports and a plan's jobfiles: the same care ------------------------------------------


def test_export_never_writes_over_a_file_it_did_not_make(
    results: Path, tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    payroll = tmp_path / "payroll.csv"
    payroll.write_text("name,salary\nalice,1\n")
    done = run_cli("export", str(results), "-o", str(payroll))
    assert done.exit_code == 2 and "not an export ssdcompare made" in done.stderr
    assert payroll.read_text() == "name,salary\nalice,1\n"
    before = checksums(results)
    inside = run_cli("export", str(results), "-o", str(results / RUN / "x.csv"))
    assert inside.exit_code == 2 and "among its runs" in inside.stderr
    assert checksums(results) == before
    # its own exports it replaces, the frame's and the summary's alike
    ours = tmp_path / "ours.csv"
    for flags in ([], ["--summary"], []):
        done = run_cli("export", str(results), "-o", str(ours), *flags)
        assert done.exit_code == 0, done.stderr


def test_plan_out_never_follows_a_link_nor_writes_over_someone_elses_file(
    tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    out = tmp_path / "plan"
    # `ssdcompare plan` with these options
    args = ("plan", "--suite", "quick", "--devices", str(tmp_path / "t.img"), "--size", "64m",
            "--no-validate", "--out", str(out))  # fmt: skip
    assert run_cli(*args).exit_code == 0
    first = next(out.glob("t.img/*.fio"))
    assert run_cli(*args).exit_code == 0  # its own jobfiles it writes again
    victim = tmp_path / "victim.conf"
    victim.write_text("precious\n")
    first.unlink()
    first.symlink_to(victim)  # a link in place of a jobfile, to someone's file: refused
    done = run_cli(*args)
    assert done.exit_code == 2 and "not a jobfile ssdcompare rendered" in done.stderr
    assert victim.read_text() == "precious\n"
    first.unlink()
    first.write_text("someone's notes\n")
    done = run_cli(*args)
    assert done.exit_code == 2 and "not a jobfile ssdcompare rendered" in done.stderr
    assert first.read_text() == "someone's notes\n"
    under_dev = run_cli(*args[:-1], "/dev/ssdcompare-plan-test")
    assert under_dev.exit_code == 2 and not Path("/dev/ssdcompare-plan-test").exists()
