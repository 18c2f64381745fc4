"""Each result's drive state where a reader sees it: a line under its IOPS in the results
table (filled, steady after N rounds, not steady after N, empty or full drive), shown when the
results were measured in states preconditioning put the drives in. The results are the
example's, recorded as preconditioned through the results folder's own records."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
from reportbrowser import measure
from test_report import parse

from ssdcompare.report.build import write_report
from ssdcompare.results.models import FillRecord, SteadyRecord, now_iso
from ssdcompare.results.store import ResultsDir

EXAMPLE = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"
NOT_STEADY = "randwrite-4k-qd32"  # on loop1: its rounds ran out before it was steady
ROUNDS = {"zram1": 5, "loop1": 7}  # rounds until steady
MAX_ROUNDS = 25


def preconditioned_copy(tmp_path: Path) -> Path:
    """The example as if swept with --precondition fill,workload: both drives filled, every
    job steady after its rounds but NOT_STEADY on loop1, not steady after 25."""
    copy = tmp_path / "preconditioned"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns(".cache"))
    results = ResultsDir.open(copy)
    results.manifest.precondition = ["fill", "workload"]
    results.save_manifest()
    now = now_iso()
    for target, rounds in ROUNDS.items():
        results.save_fill_record(FillRecord(target=target, ok=True, size=None, started_at=now,
                                            finished_at=now, io_bytes=1 << 30))  # fmt: skip
        for workload in results.manifest.suite.workloads:
            steady = (target, workload.job_id) != ("loop1", NOT_STEADY)
            count = rounds if steady else MAX_ROUNDS
            results.save_steady_record(SteadyRecord(
                target=target, job=workload.job_id, rounds_iops=[1000.0] * count,
                attained=steady, steady_after=count if steady else None,
            ))  # fmt: skip
    return copy


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> str:
    folder = preconditioned_copy(tmp_path_factory.mktemp("states"))
    return write_report([folder], folder / "report.html", baseline="loop1").read_text()


def test_every_result_says_its_drive_state_and_rounds_under_its_figures(report: str) -> None:
    rows = re.findall(r"<tr><td>([^<]+)</td>(.*?)</tr>", report, re.S)
    assert len(rows) == 19
    for job, cells in rows:
        found = parse(f"<table><tr><td>{job}</td>{cells}</tr></table>").cells
        for label, iops in (("zram1", found[2]), ("loop1", found[7])):
            steady = (label, job) != ("loop1", NOT_STEADY)
            said = (f"filled, steady after {ROUNDS[label]} rounds" if steady
                    else f"filled, not steady after {MAX_ROUNDS} rounds")  # fmt: skip
            assert iops["text"].endswith(said), (job, label, iops["text"])
    # a drive still drifting is told apart from the others
    assert report.count('<span class="state off">') == 1
    assert "Under each IOPS figure: the state" in report
    assert "not preconditioned" not in report


def test_results_without_drive_states_carry_no_such_line(tmp_path: Path) -> None:
    html = write_report([EXAMPLE], tmp_path / "report.html").read_text()
    assert 'class="state' not in html and "Under each IOPS figure" not in html


def test_a_browser_shows_the_state_on_a_line_of_its_own_under_the_figure(
    report: str, tmp_path: Path
) -> None:
    seen = measure(report, """
      return Array.from(document.querySelectorAll("#results span.state")).map(function (s) {
        var cell = s.closest("td").getBoundingClientRect(), line = s.getBoundingClientRect();
        var figure = document.createRange();
        figure.selectNodeContents(s.closest("td").firstChild);
        return {top: line.top, figureBottom: figure.getBoundingClientRect().bottom,
                inCell: line.left >= cell.left && line.right <= cell.right + 1,
                size: parseFloat(getComputedStyle(s).fontSize), text: s.textContent};
      });""", 900, tmp_path)  # fmt: skip
    assert len(seen) == 19 * 2
    for line in seen:
        assert line["top"] >= line["figureBottom"] - 1 and line["inCell"], line
        assert line["size"] >= 10 and line["text"].startswith("filled, ")
