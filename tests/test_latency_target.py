"""fio's search for the deepest queue that meets a latency target (latency_target,
latency_window, latency_percentile through `extra`): planned and run on a real loop device, read
from fio's JSON by both readers, in the frame as fio.json has it, and said in words in the
summary, the report and the terminal."""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pandas as pd
import pytest
from blockdevs import loop_device
from conftest import CliResult
from markupsafe import escape
from suitefiles import suite_file

import ssdcompare
from ssdcompare.analysis.latencytarget import SEARCH_COLUMNS, search_words
from ssdcompare.analysis.summary import job_summary
from ssdcompare.cli.terminal import summary_lines
from ssdcompare.fio.result import quick as fioquick
from ssdcompare.fio.result import reader as fioresult
from ssdcompare.fio.result.merge import merge_jobs
from ssdcompare.fio.result.models import LatencySearch
from ssdcompare.fio.result.plausibility import job_problem
from ssdcompare.fio.result.reader import parse_fio_text
from ssdcompare.suite.options import extra_option_problem, value_problem
from ssdcompare.suite.workload import Workload
from ssdcompare.units import format_latency

# one worker runs this file's tests (scripts/test.sh: --dist loadgroup): their module
# fixture, a sweep or a big results folder, is then made once, not once per worker
pytestmark = pytest.mark.xdist_group("test_latency_target")

DATA = Path(__file__).parent / "data"
RECORDED = DATA / "latency-target-loopdev-jsonplus.json"
MB = 1 << 20

# the options as the task of a suite would give them, then a target every depth meets and
# one no I/O meets, each judged in windows short enough for fio's search to settle in 2 s
AS_ASKED = "{latency_target: 500us, latency_window: 1s, latency_percentile: 99.9}"
ALWAYS_MET = "{latency_target: 1s, latency_window: 200ms, latency_percentile: 99.9}"
NEVER_MET = "{latency_target: 1us, latency_window: 200ms, latency_percentile: 99.9}"
JOBS = {
    "asked": "randread-4k-qd4+latency_percentile99.9+latency_target500us+latency_window1s",
    "met": "randread-4k-qd4+latency_percentile99.9+latency_target1s+latency_window200ms",
    "never": "randread-4k-qd4+latency_percentile99.9+latency_target1us+latency_window200ms",
}


# ---- the options in a suite ------------------------------------------------------------------


def test_the_options_and_the_values_fio_takes_for_them_pass_through_extra() -> None:
    for name in ("latency_target", "latency_window", "latency_percentile"):
        assert extra_option_problem(name) is None, name
        assert extra_option_problem(name, allowed=()) is None, name  # no --allow-option
    for name, value in (("latency_target", "500us"), ("latency_target", 500),
                        ("latency_target", "0.5ms"), ("latency_window", "1s"),
                        ("latency_window", 1000000), ("latency_window", "200ms"),
                        ("latency_percentile", 99.9), ("latency_percentile", "99.99"),
                        ("latency_percentile", 100)):  # fmt: skip
        assert value_problem(name, value) is None, (name, value)
    workload = Workload(rw="randread", bs="4k", iodepth=32,
                        extra={"latency_target": "500us", "latency_window": "1s",
                               "latency_percentile": 99.9})  # fmt: skip
    assert workload.job_id.endswith("+latency_percentile99.9+latency_target500us"
                                    "+latency_window1s")  # fmt: skip


def test_fio_accepts_the_plan_in_every_such_form(
    fio: Any, run_cli: Callable[..., CliResult], tmp_path: Path
) -> None:
    suite = suite_file(tmp_path, "latency-forms",
                       f"{{rw: randread, bs: 4k, iodepth: 32, extra: {AS_ASKED}}}",
                       "{rw: randread, bs: 4k, iodepth: 8, extra: {latency_target: 500,"
                       " latency_window: 1000000, latency_percentile: 100}}",
                       "{rw: randwrite, bs: 4k, iodepth: 16, extra: {latency_target: 0.5ms,"
                       " latency_window: 200ms, latency_percentile: 99.99}}",
                       defaults="{runtime: 2, size: 8m}")  # fmt: skip
    done = run_cli(
        "plan", "--suite", str(suite), "--devices", str(tmp_path / "t.img"), "--size", "8m"
    )
    assert done.exit_code == 0, done.stderr
    assert "accepts all 3 jobfiles" in done.stdout
    assert "latency_target=500us" in done.stdout and "latency_window=1000000" in done.stdout


# ---- a real sweep on a loop device -----------------------------------------------------------


@pytest.fixture(scope="module")
def sweep(fio: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """One sweep of the three jobs on a new loop device (removed after the sweep)."""
    folder = tmp_path_factory.mktemp("latency-target")
    suite = suite_file(folder, "latency-target",
                       *(f"{{rw: randread, bs: 4k, iodepth: 4, extra: {extra}}}"
                         for extra in (AS_ASKED, ALWAYS_MET, NEVER_MET)),
                       defaults="{runtime: 2, size: 16m}")  # fmt: skip
    with loop_device(folder / "disk.img", 32 * MB) as loop:
        run = ssdcompare.run_sweep([loop], suite=str(suite), out=folder / "r", read_only=True)
    assert run.complete
    yield run.path


def _rows(sweep: Path) -> dict[str, dict[str, Any]]:
    """The frame's row of each job (one direction: one row per run)."""
    frame = ssdcompare.load(sweep)
    assert len(frame) == len(JOBS) and (frame["status"] == "ok").all()
    return {row["job"]: row for row in frame.to_dict("records")}


@pytest.mark.root
def test_the_frame_holds_what_each_runs_fio_json_says(sweep: Path) -> None:
    for job, row in _rows(sweep).items():
        raw = json.loads(Path(row["fio_json"]).read_text())["jobs"][0]
        assert row["latency_depth"] == raw["latency_depth"], job
        assert row["latency_target_us"] == raw["latency_target"] / 1000, job  # fio: ns
        assert row["latency_percentile"] == raw["latency_percentile"], job
        assert row["latency_window_us"] == raw["latency_window"], job  # fio: µs
        # the run's latency at the percentile is fio's own (one direction: its printed one)
        printed = raw["read"]["lat_ns"]["percentile"]["99.900000"] / 1000
        assert row["latency_at_percentile_us"] == printed, job
    rows = _rows(sweep)
    assert rows[JOBS["asked"]]["latency_target_us"] == 500.0
    assert rows[JOBS["asked"]]["latency_window_us"] == 1e6
    assert rows[JOBS["met"]]["latency_window_us"] == 200_000.0


@pytest.mark.root
def test_a_target_every_depth_meets_is_met_at_the_deepest_queue_allowed(sweep: Path) -> None:
    row = _rows(sweep)[JOBS["met"]]
    said = {k: row[k] for k in (*SEARCH_COLUMNS, "measured_s", "io_check", "verdict_reason")}
    assert row["latency_depth"] == 4, said  # the job's iodepth: fio goes no deeper
    assert search_words(row) == "fio found QD 4 meets p99.9 ≤ 1.00 s", said
    # the search settled and fio ended the job early, by design: not a run cut short; and
    # the device, which saw every window, counted more than fio's figures of the last one
    assert row["measured_s"] < row["runtime_s"], said
    reason = row["verdict_reason"]  # None, or NaN where the frame has no reason
    assert not isinstance(reason, str) or "planned" not in reason, said
    assert row["io_check"] == "ok", said


@pytest.mark.root
def test_a_target_no_io_meets_is_told_as_no_queue_depth(sweep: Path) -> None:
    row = _rows(sweep)[JOBS["never"]]
    assert row["latency_depth"] == 1 and row["latency_at_percentile_us"] > 1.0
    words = search_words(row)
    assert words is not None
    assert words.startswith("fio found no queue depth that meets p99.9 ≤ 1.0 µs: at QD 1 "
                            "the run measured p99.9 = ")  # fmt: skip


@pytest.mark.root
def test_the_summary_and_the_report_say_what_fio_found(sweep: Path) -> None:
    rows = _rows(sweep)
    summary = job_summary(ssdcompare.load(sweep)).set_index("job")
    html = (sweep / "report.html").read_text()  # written by the sweep
    for job, row in rows.items():
        words = search_words(row)
        assert words is not None and f"QD {row['latency_depth']}" in words, job
        assert summary.loc[job, "latency_search"] == words
        assert str(escape(f"{job} on {row['label']}: {words}")) in html, job
    assert 'class="search"' in html


@pytest.mark.root
def test_the_terminal_summary_says_it_in_a_line_per_run(sweep: Path) -> None:
    lines = summary_lines(sweep)
    start = lines.index("fio's search for a latency target:")
    said = lines[start + 1 : start + 1 + len(JOBS)]
    for job, row in _rows(sweep).items():
        assert f"  {job} on {row['label']}, run 1: {search_words(row)}" in said, job


# ---- the recorded output: both readers, and what is missing --------------------------------


def _both_ways(text: str) -> tuple[Any, Any]:
    """The quick reading of a text (None: not taken) and the careful one."""
    quick = fioquick._quick(text, "x")
    with mock.patch.object(fioresult, "_quick", lambda text, source: None):
        return quick, parse_fio_text(text, "x")


def test_both_readers_read_the_recorded_search_alike() -> None:
    quick, careful = _both_ways(RECORDED.read_text())
    assert quick is not None  # a plain output the quick reading takes
    assert quick.model_dump() == careful.model_dump()
    found = {job.name: job.latency_search for job in careful.jobs}
    assert found == {
        "met": LatencySearch(depth=8, target_us=1e6, percentile=99.9, window_us=200_000.0),
        "missed": LatencySearch(depth=1, target_us=1.0, percentile=99.9, window_us=200_000.0),
        "untargeted": None,  # fio printed a target of 0 and its iodepth as the depth
    }


def test_a_job_without_a_target_has_na_columns_never_zero() -> None:
    frame = ssdcompare.read_fio(RECORDED).set_index("job")
    assert frame.loc["untargeted", list(SEARCH_COLUMNS)].isna().all()
    assert frame.loc["met", "latency_depth"] == 8
    assert frame["latency_depth"].dtype == "Int64"
    measured = frame.loc["missed", "latency_at_percentile_us"]
    assert measured > 1.0
    assert search_words(frame.loc["met"].to_dict()) == "fio found QD 8 meets p99.9 ≤ 1.00 s"
    assert search_words(frame.loc["missed"].to_dict()) == (
        "fio found no queue depth that meets p99.9 ≤ 1.0 µs: at QD 1 the run measured p99.9 = "
        f"{format_latency(measured)}")  # fmt: skip
    assert search_words(frame.loc["untargeted"].to_dict()) is None


def _edited(edit: Any) -> str:
    doc = json.loads(RECORDED.read_text())
    for job in doc["jobs"]:
        edit(job)
    return json.dumps(doc, indent=2, separators=(",", " : "))


def test_keys_fio_did_not_print_are_missing_for_both_readers() -> None:
    def no_keys(job: dict[str, Any]) -> None:
        for key in ("latency_depth", "latency_target", "latency_percentile", "latency_window"):
            del job[key]

    def no_depth(job: dict[str, Any]) -> None:
        del job["latency_depth"]

    for edit, want in ((no_keys, None), (no_depth, 1.0)):
        quick, careful = _both_ways(_edited(edit))
        assert quick is not None and quick.model_dump() == careful.model_dump()
        missed = careful.jobs[1].latency_search
        if want is None:
            assert missed is None
        else:
            assert missed is not None and missed.depth is None and missed.target_us == want


def test_newer_fios_names_for_the_target_and_window_read_the_same() -> None:
    def renamed(job: dict[str, Any]) -> None:
        job["latency_target_ns"] = job.pop("latency_target")
        job["latency_window_us"] = job.pop("latency_window")

    quick, careful = _both_ways(_edited(renamed))
    assert quick is not None and quick.model_dump() == careful.model_dump()
    recorded = _both_ways(RECORDED.read_text())[1]
    assert [j.latency_search for j in careful.jobs] == [j.latency_search for j in recorded.jobs]


def test_fio_2_wrote_the_target_in_microseconds() -> None:
    # fio 2.x: latencies without _ns and the target in µs (the quick reading leaves it)
    doc = json.loads((DATA / "synthetic-fio-2.x-layout.json").read_text())
    doc["jobs"][0].update(latency_depth=2, latency_target=500, latency_window=100000)
    quick, careful = _both_ways(json.dumps(doc, indent=2))
    assert quick is None
    search = careful.jobs[0].latency_search
    assert search is not None and search.target_us == 500.0 and search.window_us == 1e5


def test_unusable_and_impossible_values_are_named_never_read_as_zero() -> None:
    quick, careful = _both_ways(_edited(lambda job: job.update(latency_depth="deep")))
    assert quick is None  # a text where a count belongs: the careful reading's
    assert careful.jobs[0].latency_search.depth is None
    assert any("latency_depth" in warning for warning in careful.warnings)
    _, careful = _both_ways(_edited(lambda job: job.update(latency_depth=0)))
    assert job_problem(careful.jobs[0]) == "holds a latency_depth no queue can have"
    _, careful = _both_ways(_edited(lambda job: job.update(latency_percentile=120)))
    assert "latency_percentile" in (job_problem(careful.jobs[0]) or "")


def test_clones_that_ended_at_different_depths_leave_the_depth_unknown() -> None:
    job = _both_ways(RECORDED.read_text())[1].jobs[0]
    search = job.latency_search
    assert search is not None
    other = job.model_copy(update={"latency_search": search.model_copy(update={"depth": 4})})
    assert merge_jobs([job, job]).latency_search == search
    merged = merge_jobs([job, other]).latency_search
    assert merged is not None and merged.depth is None and merged.target_us == search.target_us


# ---- the words -------------------------------------------------------------------------------


def _row(**values: Any) -> dict[str, Any]:
    row = {"latency_depth": 12, "latency_target_us": 500.0, "latency_percentile": 99.9,
           "latency_window_us": 1e6, "latency_at_percentile_us": 420.0, "measured_s": 1.0,
           "runtime_s": 10, "io_size_bytes": pd.NA}  # fmt: skip
    return {**row, **values}


def test_the_words_say_what_fio_found_and_what_can_be_told() -> None:
    assert search_words(_row()) == "fio found QD 12 meets p99.9 ≤ 500 µs"
    assert search_words(_row(latency_depth=1)) == "fio found QD 1 meets p99.9 ≤ 500 µs"
    missed = _row(latency_depth=1, latency_at_percentile_us=740.0, measured_s=10.0)
    assert search_words(missed) == ("fio found no queue depth that meets p99.9 ≤ 500 µs: at QD 1"
                                    " the run measured p99.9 = 740 µs")  # fmt: skip
    # the whole runtime used: fio's search had not settled, whatever depth it was at
    assert search_words(_row(measured_s=10.0)) == (
        "fio had not settled on a queue depth for p99.9 ≤ 500 µs when the job ended, at QD 12: "
        "a longer runtime lets its search finish")  # fmt: skip
    # QD 1 without the run's latency and without telling whether the search settled
    assert search_words(_row(latency_depth=1, latency_at_percentile_us=math.nan,
                             io_size_bytes=1 << 30)) == (
        "fio ended at QD 1: QD 1 meets p99.9 ≤ 500 µs or no depth does, which the figures of "
        "the run cannot tell without its p99.9")  # fmt: skip
    assert search_words(_row(latency_percentile=100.0)) == "fio found QD 12 meets p100 ≤ 500 µs"
    for missing in (pd.NA, None, math.nan):
        assert search_words(_row(latency_depth=missing)) is None
        assert search_words(_row(latency_target_us=missing)) is None


def test_repeats_that_found_different_depths_are_each_said_with_their_count() -> None:
    frame = ssdcompare.read_fio(RECORDED)
    met = frame[frame["job"] == "met"]
    runs = pd.concat([met.assign(repeat=r, latency_depth=d) for r, d in ((1, 8), (2, 8), (3, 4))])
    (said,) = job_summary(runs)["latency_search"].tolist()
    assert said == ("2 of 3 runs: fio found QD 8 meets p99.9 ≤ 1.00 s; "
                    "1 of 3 runs: fio found QD 4 meets p99.9 ≤ 1.00 s")  # fmt: skip
