"""When nothing could be compared as drives, the report says what limited the results and
what to do next, under the answer (whose sentence stays as ssdcompare.headline makes it)."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest
from test_report_scale import _benchmark

from ssdcompare.analysis.frame import load
from ssdcompare.analysis.summary import job_summary
from ssdcompare.report.build import build_context, render_report
from ssdcompare.results.store import ResultsDir

EXAMPLE = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"


def busy_host(frame: pd.DataFrame) -> pd.DataFrame:
    """The example's runs as on a busy host: every one that measured a drive had the
    hypervisor give 12 % of the CPUs to other guests (its CPU-bound runs stay so)."""
    frame = frame.copy()
    drive = frame["verdict"] == "drive"
    frame.loc[drive, "steal_pct"] = 12.0
    frame.loc[drive, "verdict"] = "disturbed"
    frame.loc[drive, "verdict_reason"] = "CPU steal 12 % (the hypervisor ran other guests)"
    return frame


def _answer(html: str) -> str:
    found = re.search(r'<section id="headline">.*?</section>', html, re.S)
    assert found is not None
    return found.group(0)


def test_on_a_busy_host_the_answer_says_what_limited_and_what_to_do() -> None:
    frame, sweeps = busy_host(load(EXAMPLE)), [ResultsDir.open(EXAMPLE)]
    context = build_context(frame, sweeps, "loop1")
    assert context["headline"] == [
        "zram1 and loop1 cannot be compared as drives: none of their 19 jobs measured the "
        "drives on both sides (12 measured the CPU, 7 were disturbed)."
    ]  # the sentence as the answer makes it
    advice = context["advice"]
    verdicts = job_summary(frame, "loop1")["verdict"].value_counts()
    assert advice.results == 38
    assert advice.limits == (f"{verdicts['cpu']} CPU-bound, {verdicts['disturbed']} disturbed "
                             f"({verdicts['disturbed']} by CPU steal, 7 by repeats that "
                             "differ)")  # fmt: skip
    helps = " ".join(advice.helps)
    assert "real drives rather than RAM disks (zram1 is a RAM disk" in helps
    assert "--ceiling" in helps  # the example was swept without it
    assert "Run when the host is quiet" in helps
    assert "--runtime 30 or more, 3 s here" in helps
    assert "--repeat 6" in helps and "--repeat 3 or more" not in helps  # it has 3 already
    shown = _answer(render_report(frame, sweeps, "loop1"))
    assert "What to do next" in shown and "What limited the 38 results: " in shown
    assert all(line.replace("'", "&#39;") in shown for line in advice.helps)


def test_results_that_compare_need_no_advice() -> None:
    context = build_context(load(EXAMPLE), [ResultsDir.open(EXAMPLE)], "loop1")
    assert context["advice"] is None
    assert "What to do next" not in render_report(load(EXAMPLE), [ResultsDir.open(EXAMPLE)])


@pytest.mark.slow  # writes a small synthetic sweep and renders it; neither root nor fio
def test_runs_cut_short_and_run_once_are_told_apart(tmp_path: Path) -> None:
    # the benchmark's results: each run's fio output is a recorded 1 s run of a 5 s job
    folder = _benchmark().synthetic_results(tmp_path / "synthetic", 8, 2)
    context = build_context(load(folder), [ResultsDir.open(folder)])
    assert context["headline"][0].endswith("cannot be compared as drives: none of their 8 "
                                           "jobs measured the drives on both sides (8 were "
                                           "disturbed).")  # fmt: skip
    advice = context["advice"]
    assert advice.limits == "16 disturbed (16 by a run cut short)"
    helps = " ".join(advice.helps)
    assert "ended before their runtime" in helps and "status.json" in helps
    assert "--repeat 3 or more (1 here)" in helps and "5 s here" in helps
    # no CPU-bound result, no RAM disk, no other guests: nothing said about them
    assert "RAM disk" not in helps and "--ceiling" not in helps and "quiet" not in helps
