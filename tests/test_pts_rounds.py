"""A PTS test's rounds (ssdcompare.suite.pts, ssdcompare.run.rounds): its structure checked when
the suite is read, a round run back to back in one fio run and cut into each job's run, the
PTS steady-state rule deciding when the rounds stop, and --scale shortening it all."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path

import pytest
from blkio import iops_capped, needs_blkio
from blockdevs import loop_device

import ssdcompare
from ssdcompare.cli.terminal import announce, rounds_words
from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.rounds import job_output, process_numbers, round_text, section_spans_s
from ssdcompare.results.models import RoundsRecord
from ssdcompare.results.store import ResultsDir
from ssdcompare.run.plan import JOB_OVERHEAD_S, ROUND_JOB_PAUSE_S, PlanOptions, make_plan
from ssdcompare.run.rounds import _judge
from ssdcompare.suite.files import load_suite
from ssdcompare.suite.pts import RoundGroup

MIB = 1 << 20
CAP = 2000  # IOPS a loop device is held to: its rounds then barely differ


def pts_suite(folder: Path, pts: str, *, runtime: str = "60", name: str = "mini") -> Path:
    """A small PTS-like suite: two random jobs and a sequential one, with `pts` as its block."""
    path = folder / f"{name}.yaml"
    path.write_text(
        f"name: {name}\ndescription: a small PTS test of the tests\n"
        f"defaults: {{iodepth: 4, runtime: {runtime}}}\n"
        "workloads:\n"
        "  - {rw: randwrite, bs: 4k}\n"
        "  - {rw: randread, bs: 4k}\n"
        "  - {rw: write, bs: 64k}\n"
        f"pts:\n{pts}"
    )
    return path


ROUNDS = ("  test: iops\n  groups:\n"
          "    - {name: rounds, jobs: [randwrite-4k-qd4, randread-4k-qd4], "
          "track: randwrite-4k-qd4, max_rounds: 6}\n"
          "    - {name: once}\n")  # fmt: skip


@pytest.mark.parametrize(
    ("block", "said"),
    [
        ("  test: iops\n  groups:\n    - {name: a, jobs: [nope], track: nope}\n    - {name: b}\n",
         "no job 'nope' in the suite"),
        ("  test: iops\n  groups:\n    - {name: a, jobs: [randwrite-4k-qd4]}\n"
         "    - {name: b, jobs: [randwrite-4k-qd4, randread-4k-qd4, write-64k-qd4]}\n",
         "job 'randwrite-4k-qd4' is in 'a' and 'b'"),
        ("  test: iops\n  groups:\n    - {name: a, jobs: [randwrite-4k-qd4]}\n",
         "jobs in no group: randread-4k-qd4, write-64k-qd4"),
        ("  test: iops\n  groups:\n    - {name: a, track: write-64k-qd5}\n",
         "the tracking job 'write-64k-qd5' is not one of the group's jobs"),
        ("  test: iops\n  groups:\n    - {name: a}\n    - {name: a, jobs: []}\n",
         "give each group its own name"),
        ("  test: smart\n  groups:\n    - {name: a}\n", "test"),
    ],
)  # fmt: skip
def test_a_pts_block_that_does_not_fit_its_jobs_is_refused(
    tmp_path: Path, block: str, said: str
) -> None:
    with pytest.raises(SsdcompareError, match="invalid suite") as caught:
        load_suite(pts_suite(tmp_path, block))
    assert said in str(caught.value)


def test_a_pts_test_refuses_what_would_break_its_rounds(tmp_path: Path) -> None:
    suite = str(pts_suite(tmp_path, ROUNDS))
    target = str(tmp_path / "t.img")
    for asked, flag in [({"repeat": 3}, "--repeat"), ({"read_only": True}, "--read-only"),
                        ({"states": ["empty"]}, "--states"),
                        ({"precondition": ["workload"]}, "--precondition workload"),
                        ({"precondition": ["fill"]}, "drop --precondition$"),
                        ({"precondition": []}, "drop --precondition$"),
                        ({"runtime_s": 5}, "drop --runtime .--scale shortens every time"),
                        ({"scale": 0.00001}, "--scale 1e-05")]:  # fmt: skip
        with pytest.raises(SsdcompareError, match=flag):
            make_plan(suite, target, PlanOptions(size_bytes=MIB, **asked))
    # its own preparation, as the suite gives it
    assert make_plan("pts-wsat", target, PlanOptions(size_bytes=MIB)).precondition == []
    with pytest.raises(SsdcompareError, match="--scale shortens a PTS test"):
        make_plan("quick", target, PlanOptions(scale=0.1, size_bytes=MIB))


def test_scale_shortens_every_time_and_cap_and_says_so(tmp_path: Path) -> None:
    plan = make_plan(
        "pts-hir", str(tmp_path / "t.img"), PlanOptions(scale=0.01, size_bytes=64 * MIB)
    )
    assert plan.suite.scale == 0.01
    jobs = {j.job_id: j for j in plan.jobs}
    assert "runtime=600ms\n" in jobs["hir-steady"].text  # a minute's round
    idle = jobs["hir-idle10"].text
    assert "runtime=54\n" in idle and "thinktime=100000us\n" in idle  # 5400 s, 10 s idle
    assert "thinktime_iotime=50ms\n" in idle and "log_avg_msec=10\n" in idle
    wsat = make_plan(
        "pts-wsat", str(tmp_path / "w.img"), PlanOptions(scale=0.5, size_bytes=64 * MIB)
    )
    # four spans of 64 MiB (the cap stays whole, scaled or not), shared by the job's 4
    # processes: 64 MiB each; its 24 hours halved
    assert "io_size=64m\n" in wsat.jobs[0].text and "time_based=0\n" in wsat.jobs[0].text
    assert "runtime=12h\n" in wsat.jobs[0].text or "runtime=43200\n" in wsat.jobs[0].text


def test_the_estimate_counts_fios_pause_between_a_rounds_jobs_and_says_rounds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    options = PlanOptions(scale=0.002, size_bytes=64 * MIB)
    plan = make_plan("pts-latency", str(tmp_path / "t.img"), options)
    assert len(plan.jobs) == 9
    jobs_s = sum(j.workload.duration_s for j in plan.jobs)  # 9 x 0.12 s
    # 25 rounds at most, each one fio run whose 9 jobs are each followed by fio's pause
    assert plan.rounds_s == pytest.approx(25 * (JOB_OVERHEAD_S + jobs_s + 9 * ROUND_JOB_PAUSE_S))
    assert plan.estimated_s == pytest.approx(plan.rounds_s + plan.precondition_s)
    assert 9 * ROUND_JOB_PAUSE_S > jobs_s  # scaled, the pauses are most of a round
    assert rounds_words(plan) == "9 jobs a round, up to 25 rounds until steady"
    announce(plan, tmp_path / "r", [])
    said = capsys.readouterr().err.splitlines()[-1]
    assert said.startswith("pts-latency on 1 device(s): 9 jobs a round, up to 25 rounds until "
                           "steady; at most ")  # fmt: skip
    throughput = make_plan("pts-throughput", str(tmp_path / "t.img"), options)
    each = "2 jobs a round, up to 25 rounds until steady"
    assert rounds_words(throughput) == f"1m: {each}; 128k: {each}"
    hir = make_plan("pts-hir", str(tmp_path / "t.img"), options)
    assert rounds_words(hir) == ("steady: 1 job a round, up to 25 rounds until steady; "
                                 "recovery: 10 jobs once")  # fmt: skip
    recovery = [j for j in hir.jobs if j.job_id != "hir-steady"]  # runs once: one fio run
    assert hir.rounds_s == pytest.approx(
        25 * (JOB_OVERHEAD_S + hir.jobs[0].workload.duration_s + ROUND_JOB_PAUSE_S)
        + JOB_OVERHEAD_S
        + sum(j.workload.duration_s + ROUND_JOB_PAUSE_S for j in recovery)
    )


def test_a_round_is_one_jobfile_whose_jobs_follow_each_other() -> None:
    alone = "[global]\nfilename=/dev/x\nbs=4k\n\n[a]\nrw=randread\nnumjobs=2\n"
    other = "[global]\nfilename=/dev/x\nbs=8k\n\n[b]\nrw=randwrite\n"
    text = round_text([("a", alone), ("b", other)], "a round")
    assert text.count("\nstonewall\n") == 1 and "[b]\nstonewall\nfilename=/dev/x\nbs=8k" in text
    assert "[a]\nfilename=/dev/x\nbs=4k\nrw=randread\nnumjobs=2" in text  # [global] folded in
    assert process_numbers([2, 1, 4]) == [range(1, 3), range(3, 4), range(4, 8)]
    entries = [{"jobname": "a", "job_runtime": 600}, {"jobname": "b", "job_runtime": 250}]
    output = {"fio version": "fio-3.33", "jobs": entries}
    assert job_output(output, "b") == {"fio version": "fio-3.33", "jobs": [output["jobs"][1]]}
    assert job_output(output, "c") is None
    # a's two processes ran side by side for 0.3 s (600 ms summed), then b for 0.25 s
    assert section_spans_s(output, ["a", "b"], [0, 0], [2, 1]) == [(0.0, 0.3), (0.3, 0.55)]


@pytest.mark.parametrize(
    ("rounds", "attained", "done", "window"),
    [
        ([100, 101, 99, 100, 100], True, True, [1, 2, 3, 4, 5]),
        ([50, 100, 101, 99, 100, 100], True, True, [2, 3, 4, 5, 6]),
        ([100, 130, 70, 100, 100], False, False, [1, 2, 3, 4, 5]),  # range 60 %
        ([80, 85, 90, 95, 100], False, False, [1, 2, 3, 4, 5]),  # slope excursion 22 %
        ([100, 130, 70, 100, 100, 100], False, True, [2, 3, 4, 5, 6]),  # out of rounds
        ([100, 100], False, False, [1, 2]),
    ],
)
def test_the_pts_rule_decides_when_rounds_stop(
    rounds: list[float], attained: bool, done: bool, window: list[int]
) -> None:
    group = RoundGroup(name="g", track="x", max_rounds=6)
    record = RoundsRecord(target="t", group="g", track="x", rounds=rounds)
    _judge(record, group)
    assert (record.attained, record.done, record.window) == (attained, done, window)
    if attained:
        assert record.steady_after == len(rounds)
        assert record.window_range_pct <= 20 and record.window_slope_pct <= 10


def test_a_round_without_a_figure_ends_its_group() -> None:
    record = RoundsRecord(target="t", group="g", track="x", rounds=[100, None])
    _judge(record, RoundGroup(name="g", track="x"))
    assert record.done and not record.attained and record.error == "round 2 has no figure"


def _capped_sweep(
    tmp_path: Path, suite: str, scale: float, size: int = 16 * MIB
) -> tuple[Path, str]:
    """`suite` scaled on a loop device of `size` held to CAP IOPS; the results folder and
    device name."""
    with contextlib.ExitStack() as stack:
        caps = stack.enter_context(iops_capped("sequence"))
        device = stack.enter_context(loop_device(tmp_path / "d.img", size))
        caps.cap(device, CAP, CAP)
        caps.join(os.getpid())
        try:
            run = ssdcompare.run_sweep(device, suite=suite, out=tmp_path / "r", scale=scale,
                                       report=False)  # fmt: skip
        finally:
            (caps.group.parent / "cgroup.procs").write_text(str(os.getpid()))
    assert run.complete
    return run.path, Path(device).name


@needs_blkio
@pytest.mark.root
@pytest.mark.fio
def test_rounds_run_until_steady_and_each_job_is_a_run_of_its_own(tmp_path: Path) -> None:
    path, name = _capped_sweep(tmp_path, str(pts_suite(tmp_path, ROUNDS)), 0.002)
    results = ResultsDir.open(path)
    record = results.rounds_record(name, "rounds")
    assert record is not None and record.done and record.track == "randwrite-4k-qd4"
    ran = len(record.rounds)
    # steady in the fewest rounds a window allows, or out of them: never anything between
    assert (ran, record.window) in ((5, [1, 2, 3, 4, 5]), (6, [2, 3, 4, 5, 6]))
    assert record.attained == (ran == 5 or record.steady_after == 6)
    once = results.rounds_record(name, "once")
    assert once is not None and once.done and once.rounds == [None]
    assert sorted(p.name for p in (path / "rounds" / name / "rounds").iterdir()) == [
        *(f"r{n:04d}" for n in range(1, ran + 1)),
        "rounds.json",
    ]
    round_one = (path / "rounds" / name / "rounds" / "r0001" / "jobfile.fio").read_text()
    assert round_one.count("\nstonewall\n") == 1 and "runtime=120ms" in round_one
    for job in ("randwrite-4k-qd4", "randread-4k-qd4"):
        for number in range(1, ran + 1):
            folder = path / "runs" / name / job / f"r{number}"
            status = json.loads((folder / "status.json").read_text())
            assert status["status"] == "ok", status
            assert any(
                f"rounds/{name}/rounds/r{number:04d}/fio.json" in n for n in status["notes"]
            )
            output = json.loads((folder / "fio.json").read_text())
            assert [e["jobname"] for e in output["jobs"]] == [job]
            assert "[global]" in (folder / "jobfile.fio").read_text()  # as it would run alone
            assert (folder / "timeseries_iops.1.log").exists()
    frame = ssdcompare.load(path)
    rows = frame[frame["pts_group"] == "rounds"]
    assert set(rows["repeat"]) == set(range(1, ran + 1))
    assert rows["ss_window"].sum() == 2 * 5  # both jobs, the window's 5 rounds
    assert set(frame["scale"]) == {0.002} and set(frame["pts_test"]) == {"iops"}
    summary = ssdcompare.job_summary(frame).set_index("job")
    assert summary.loc["randwrite-4k-qd4", "repeats"] == 5  # the window's rounds only
    assert summary.loc["write-64k-qd4", "repeats"] == 1


@needs_blkio
@pytest.mark.root
@pytest.mark.fio
def test_write_saturation_ends_after_its_spans_are_written(tmp_path: Path) -> None:
    from ssdcompare.analysis.ptstime import group_series

    path, name = _capped_sweep(tmp_path, "pts-wsat", 0.05, 4 * MIB)
    jobfile = (path / "runs" / name / "wsat" / "r1" / "jobfile.fio").read_text()
    # 4 x 4 MiB, shared by 4 processes: 4 MiB each (scaled, only the 24 hours are shorter)
    assert "io_size=4m\n" in jobfile and "time_based=0\n" in jobfile
    output = json.loads((path / "runs" / name / "wsat" / "r1" / "fio.json").read_text())
    assert output["jobs"][0]["write"]["io_bytes"] == 4 * 4 * MIB
    series = group_series(ResultsDir.open(path), ["wsat"], name)
    # the time series adds up what its intervals logged (the last, cut short, is not)
    assert not series.empty and 0 < series["written_bytes"].iloc[-1] <= 16 * MIB
    # it ended at its cap: no shortfall of its runtime to call it disturbed for
    (row,) = ssdcompare.load(path).drop_duplicates("job").itertuples()
    assert row.io_size_bytes == 4 * MIB and "planned" not in str(row.verdict_reason)


def test_a_rounds_sections_are_cut_by_when_their_processes_lived() -> None:
    from ssdcompare.fio.rounds import lived_spans_s

    # sections of 1, 2 and 1 processes, seen by the sampler at these times
    seen = {"11": [0.3, 1.2], "20": [1.6, 2.5], "21": [1.7, 2.6], "30": [3.0, 3.1]}
    assert lived_spans_s(seen, [1, 2, 1], 0.1) == pytest.approx(
        [(0.3, 1.3), (1.6, 2.7), (3.0, 3.2)]
    )
    assert lived_spans_s(seen, [1, 1, 1], 0.1) is None  # a process more than the sections have
    assert lived_spans_s({**seen, "21": [1.7, 3.05]}, [1, 2, 1], 0.1) is None  # overlapping


@pytest.mark.fio
def test_the_sampler_sees_each_sections_processes_come_and_go(tmp_path: Path) -> None:
    import subprocess

    from ssdcompare.fio.rounds import lived_spans_s
    from ssdcompare.run.sampler import CpuSampler

    target = tmp_path / "t.img"
    target.write_bytes(b"\0" * MIB)
    sections = [(name, f"[global]\nfilename={target}\nsize=1m\nrw=read\nbs=4k\nthinktime=1ms\n"
                       f"time_based=1\nruntime=1\ngroup_reporting=1\n\n[{name}]\nnumjobs={n}\n")
                for name, n in (("a", 1), ("b", 2), ("c", 1))]  # fmt: skip
    jobfile = tmp_path / "round.fio"
    jobfile.write_text(round_text(sections, "three sections"))
    sampler = CpuSampler()
    proc = subprocess.Popen(["fio", "--output-format=json", str(jobfile)], cwd=tmp_path,
                            stdout=subprocess.PIPE, text=True)  # fmt: skip
    sampler.start(proc.pid)
    output = json.loads(proc.communicate(timeout=60)[0])
    trace = sampler.stop()
    assert proc.returncode == 0 and [e["jobname"] for e in output["jobs"]] == ["a", "b", "c"]
    # fio's job processes, one section after the other, each seen: a section's time is its
    # processes' lives, where fio's summed runtimes leave out fio's pauses between sections
    assert len(trace.worker_spans) == 4
    spans = lived_spans_s(trace.worker_spans, [1, 2, 1], trace.interval_s)
    assert spans is not None and all(start < end for start, end in spans)
    assert all(later[0] >= earlier[1] - trace.interval_s
               for earlier, later in zip(spans, spans[1:], strict=False))  # fmt: skip


def test_the_rounds_of_a_window_are_judged_as_rounds_and_never_tested_as_repeats() -> None:
    from ssdcompare.judge.stats import ROUNDS_UNTESTED, why_untested
    from ssdcompare.judge.verdict import Verdict, judge_repeats

    drive = Verdict("drive", None)
    spread = judge_repeats([drive] * 5, 14.0, 5, rounds=True)
    assert spread.verdict == "disturbed"
    assert spread.reason.startswith("the 5 rounds of the window differ by 14 %")
    assert why_untested(5, 5, rounds=True) == ROUNDS_UNTESTED
    assert why_untested(5, 5) != ROUNDS_UNTESTED


def _failing_fio(folder: Path, fail_at: int) -> Path:
    """The real fio, except that its `fail_at`-th round (a jobfile with stonewall) reports
    fio error 5 for the round's first job and exits 1, as fio does when a job fails (real fio
    gives no way to fail one job of a healthy device on demand)."""
    import shutil
    import sys

    script = folder / "fio"
    count = folder / "rounds-run"
    script.write_text(f"""#!{sys.executable}
import json, pathlib, subprocess, sys
args = sys.argv[1:]
done = subprocess.run([{shutil.which("fio")!r}, *args], close_fds=False)
out = next((a.split("=", 1)[1] for a in args if a.startswith("--output=")), None)
count = pathlib.Path({str(count)!r})
if out and args and "\\nstonewall\\n" in pathlib.Path(args[-1]).read_text():
    number = int(count.read_text()) + 1 if count.exists() else 1
    count.write_text(str(number))
    if number == {fail_at}:
        data = json.loads(pathlib.Path(out).read_text())
        data["jobs"][0]["error"] = 5
        pathlib.Path(out).write_text(json.dumps(data))
        sys.exit(1)
sys.exit(done.returncode)
""")
    script.chmod(0o755)
    return script


@pytest.mark.fio
def test_a_failed_round_ends_its_group_in_place_and_a_resume_runs_it_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = str(pts_suite(tmp_path, ROUNDS))
    monkeypatch.setenv("SSDCOMPARE_FIO", str(_failing_fio(tmp_path, 3)))
    target = str(tmp_path / "t.img")
    run = ssdcompare.run_sweep(target, suite=suite, out=tmp_path / "r", scale=0.002,
                               size="16m", report=False)  # fmt: skip
    results = ResultsDir.open(run.path)
    record = results.rounds_record("t.img", "rounds")
    assert record is not None and record.done and not record.attained
    # rounds 1 and 2 kept their numbers; the third is the failed one, and none ran after it
    assert len(record.rounds) == 3 and record.rounds[2] is None and record.failed_round == 3
    assert record.error is not None and record.error.startswith(
        "round 3 failed: randwrite-4k-qd4: fio error 5")  # fmt: skip
    statuses = {s.job: s.status for s in results.statuses() if s.repeat == 3}
    # only the job fio reported the error for failed; the other's part of the round is fine
    assert statuses == {"randwrite-4k-qd4": "failed", "randread-4k-qd4": "ok"}
    assert not (run.path / "runs" / "t.img" / "randwrite-4k-qd4" / "r4").exists()
    monkeypatch.delenv("SSDCOMPARE_FIO")  # fio as it is
    again = ssdcompare.run_sweep(resume=run.path, report=False)
    assert again.complete
    record = ResultsDir.open(run.path).rounds_record("t.img", "rounds")
    assert record is not None and record.done and record.failed_round is None
    assert all(figure is not None for figure in record.rounds) and len(record.rounds) >= 5
    kept = run.path / "runs" / "t.img" / "randwrite-4k-qd4"
    assert (kept / "r3.attempt-1").is_dir() and (kept / "r3" / "fio.json").is_file()
    assert (run.path / "rounds" / "t.img" / "rounds" / "r0003.attempt-1").is_dir()
    # a sweep stopped after storing a round's runs but before its record took it in: the
    # resume records the round from what it stored, and does not run it again
    results = ResultsDir.open(run.path)
    record = results.rounds_record("t.img", "rounds")
    assert record is not None
    last = len(record.rounds)
    results.save_rounds_record(record.model_copy(update={"rounds": record.rounds[:-1],
                                                         "done": False}))  # fmt: skip
    ssdcompare.run_sweep(resume=run.path, report=False)
    record = ResultsDir.open(run.path).rounds_record("t.img", "rounds")
    assert record is not None and len(record.rounds) == last and record.done
    assert not (kept / f"r{last}.attempt-1").exists()
    # a colleague's edit of the record: its rounds' runs are damaged, said once, and the
    # report is written without them
    from ssdcompare.analysis.frame import damaged_runs
    from ssdcompare.report.build import write_report

    assert record.window_mean is not None
    page = write_report([run.path], tmp_path / "whole.html").read_text()
    # its preparation and rounds are said in its section, not as advice it cannot follow
    assert "Use --precondition" not in page and "rounds of preconditioning" not in page
    edited = record.model_copy(update={"window_mean": record.window_mean * 2})
    ResultsDir.open(run.path).save_rounds_record(edited)
    frame = ssdcompare.load(run.path)
    rows = frame[frame["pts_group"] == "rounds"]
    assert set(rows["status"]) == {"damaged"} and rows["ss_window"].isna().all()
    (said,) = damaged_runs(frame)
    assert "rounds/t.img/rounds/rounds.json is damaged: its window's mean " in said
    assert said.startswith(f"t.img randwrite-4k-qd4 r1 and {2 * last - 1} more runs: ")
    page = write_report([run.path], tmp_path / "edited.html").read_text()
    assert "its rounds cannot be told apart: rounds/t.img/rounds/rounds.json is damaged" in page
    # made to agree with itself, the record still disagrees with the rounds fio ran: damaged;
    # and a resume records the rounds again from them, without running fio
    original = ResultsDir.open(run.path).rounds_record("t.img", "rounds")
    faked = RoundsRecord(target="t.img", group="rounds", track=record.track,
                         rounds=[2 * f for f in record.rounds])  # fmt: skip
    _judge(faked, RoundGroup(name="rounds", track=record.track, max_rounds=6))
    ResultsDir.open(run.path).save_rounds_record(faked)
    (said,) = damaged_runs(ssdcompare.load(run.path))
    assert "rounds.json is damaged: round 1's figure" in said and "fio output's" in said
    ssdcompare.run_sweep(resume=run.path, report=False)
    rebuilt = ResultsDir.open(run.path).rounds_record("t.img", "rounds")
    assert rebuilt is not None and rebuilt.rounds == record.rounds
    assert original is not None and not damaged_runs(ssdcompare.load(run.path))
    assert not (kept / "r1.attempt-1").exists()


@pytest.mark.parametrize(
    ("change", "said"),
    [
        ({}, None),
        (
            {"window": [1, 2, 3, 4, 5]},
            "it says window 1-5, steady True, done True, and its rounds give window 2-6",
        ),
        ({"attained": False}, "steady False"),
        ({"window_mean": 90.0}, "its window's mean 90.0 is not the mean of its window's rounds"),
        ({"rounds": [-5.0] * 6}, "a round's figure no round gives"),
        ({"rounds": [float("nan")] * 6}, "a round's figure no round gives"),
        ({"rounds": [100.0] * 7}, "it holds 7 rounds, and the group runs at most 6"),
        ({"rounds": []}, "its rounds give window none"),
        ({"track": "other"}, "it tracks other iops, and the suite x iops"),
        ({"failed_round": 2}, "its failed round 2 is not its round without a figure"),
        ({"failed_round": 7}, "its failed round 7 is not its round without a figure"),
        ({"target": "u"}, "it is the record of u g"),
        ({"group": "h"}, "it is the record of t h"),
    ],
)
def test_a_rounds_record_that_disagrees_with_itself_is_damaged(
    change: dict[str, object], said: str | None
) -> None:
    from ssdcompare.results.models import rounds_problem

    group = RoundGroup(name="g", track="x", max_rounds=6)
    record = RoundsRecord(target="t", group="g", track="x", rounds=[50, 100, 101, 99, 100, 100])
    _judge(record, group)
    assert record.attained and record.window == [2, 3, 4, 5, 6]
    problem = rounds_problem(record.model_copy(update=change), group, "t")
    assert problem == said if said is None else said in str(problem)
    # a round that failed ends the group, judged as it was before it
    failed = RoundsRecord(target="t", group="g", track="x", rounds=[100, 101])
    _judge(failed, group)
    failed = failed.model_copy(update={"rounds": [100, 101, None], "done": True,
                                       "failed_round": 3})  # fmt: skip
    assert rounds_problem(failed, group) is None


def test_the_end_of_a_stopped_sweep_gives_no_verdict_on_a_group_not_done() -> None:
    from ssdcompare.cli.terminal import _rounds_words

    group = RoundGroup(name="g", track="x", max_rounds=6)
    record = RoundsRecord(target="t", group="g", track="x", rounds=[100, 140])
    _judge(record, group)
    assert not record.done
    said = _rounds_words(record, group)
    assert said.startswith("not steady yet after 2 rounds: the sweep stopped before the group")
    record.rounds += [60, 100, 130, 70]
    _judge(record, group)
    assert record.done and _rounds_words(record, group).startswith("NOT steady in 6 rounds: ")
