"""Repeats that do not vary are still compared, and what is not tested says why: in the
summary, the answer and the report."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest
from suitefiles import suite_file

import ssdcompare
from ssdcompare.analysis.answer import headline
from ssdcompare.report.build import build_context
from ssdcompare.results.store import ResultsDir

FEW = "fewer than 3 repeats a side"
NO_FIGURE = "a repeat without a figure to test (zero or unknown)"


def _untested(repeats: list[tuple[str, int, int]]) -> pd.DataFrame:
    """Jobs of b against a, none tested: (job, a's repeats, b's repeats)."""
    rows = []
    for job, mine, theirs in repeats:
        for label, count in (("a", mine), ("b", theirs)):
            rows.append({"label": label, "job": job, "status": "ok", "iops_value": 100.0,
                         "lat_p99_us_value": 10.0, "verdict": "drive", "comparable": True,
                         "repeats": count, "significant": pd.NA,
                         "ratio": float("nan")})  # fmt: skip
    return pd.DataFrame(rows)


def test_the_answer_says_why_jobs_were_not_tested() -> None:
    few = headline(_untested([("j1", 3, 2), ("j2", 1, 1)]), "a")[0]
    assert few.sentence.endswith(f"Not tested for significance: {FEW}.")
    # enough repeats, and still not tested: not for want of repeats
    other = headline(_untested([("j1", 3, 3)]), "a")[0]
    assert FEW not in other.sentence
    assert other.sentence.endswith(f"Not tested for significance: {NO_FIGURE}.")
    both = headline(_untested([("j1", 3, 2), ("j2", 3, 3), ("j3", 5, 2)]), "a")[0]
    assert both.sentence.endswith(
        f"Not tested for significance: 2 with {FEW}, 1 with {NO_FIGURE}.")  # fmt: skip
    # beside tested jobs, the untested ones say why too
    mixed = _untested([("j1", 3, 3), ("j2", 3, 2)])
    mixed.loc[(mixed["label"] == "b") & (mixed["job"] == "j1"), ["significant", "ratio"]] = \
        [False, 1.0]  # fmt: skip
    assert headline(mixed, "a")[0].sentence.endswith(
        f"not significantly different, 1 untested ({FEW}).")  # fmt: skip


@pytest.mark.fio
def test_rate_limited_repeats_are_tested_and_the_report_says_why_one_is_not(
    tmp_path: Path,
) -> None:
    suite = suite_file(tmp_path, "capped",
                       "{rw: randread, bs: 4k, iodepth: 1, extra: {rate_iops: 200}}",
                       defaults="{runtime: 1}")  # fmt: skip
    devices = [str(tmp_path / "one.img"), str(tmp_path / "two.img")]
    run = ssdcompare.run_sweep(devices, suite=str(suite), size="8m", repeat=3,
                               out=tmp_path / "r", report=False)  # fmt: skip
    assert run.complete
    frame = run.frame()
    summary = ssdcompare.job_summary(frame, baseline="one.img")
    other = summary[summary["label"] == "two.img"]
    # however alike the capped repeats came out, each pair is tested
    assert other["p_value"].notna().all() and other["p99_p_value"].notna().all(), other
    for line in headline(summary):
        assert FEW not in line.sentence and "untested" not in line.sentence
    # whether a run here measured the drive is up to this VM's neighbours; the point is the
    # ratio's note, which a CPU-bound or disturbed baseline would take: judge them drives
    frame = frame.assign(verdict="drive", verdict_reason=None, cpu_bound=False)
    notes = _ratio_notes(frame, run.path)
    assert not any(note.startswith("not tested") for note in notes), notes
    # a repeat that moved no data leaves 3 repeats a side untested: not for want of repeats
    job = other["job"].iloc[0]
    hole = (frame["device"] == "two.img") & (frame["job"] == job) & (frame["repeat"] == 2)
    frame.loc[hole, "iops"] = float("nan")
    notes = _ratio_notes(frame, run.path)
    assert f"not tested: {NO_FIGURE}" in notes and not any(FEW in note for note in notes)
    # every repeat the same on both sides: no difference, and no test pretended
    assert _ratio_notes(frame.assign(iops=200.0), run.path) == [
        "not significant: over all repeats ×1.00, every repeat the same on each side: no "
        "difference"]  # fmt: skip


def _ratio_notes(frame: pd.DataFrame, path: Path) -> list[str]:
    context = build_context(frame, [ResultsDir.open(path)], baseline="one.img")
    return [cell.ratio_note for group in context["groups"] for row in group.rows
            for cell in row.cells if cell.ratio_note]  # fmt: skip
