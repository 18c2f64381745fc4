"""Latency-vs-load curves: an unpaced run, then points paced by fio at shares of the maximum;
points that could not reach their load; the answer at a latency target (`--slo`)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest
from blkio import needs_blkio, read_capped
from blockdevs import loop_device
from suitefiles import suite_file

import ssdcompare
from ssdcompare.analysis.pacing import reach_tolerance_pct
from ssdcompare.analysis.slo import AT_LEAST, MET, NEVER, parse_slo

RunCli = Callable[..., object]  # the run_cli fixture: exit_code, stdout, stderr
CAP_IOPS = 2000  # the throttled device's reads per second
# shares of 10,000 IOPS: 1,000 well below the cap, 4,000 and 8,000 well above it and
# well below what a loop device gives on any machine (20k-200k IOPS)
# (8,000 IOPS at QD16 takes a few % of a CPU: the free device reaches it beside other tests)
BASE, CURVE = 10_000, [10, 40, 80]


def _points(frame: pd.DataFrame, device: str) -> pd.DataFrame:
    rows = frame[(frame["device"] == device) & frame["curve_pct"].notna()]
    return rows.sort_values("curve_pct").reset_index(drop=True)


@pytest.mark.slow  # one of the longest: started early (tests/conftest.py)
@pytest.mark.root
@pytest.mark.fio
@needs_blkio
def test_a_capped_device_cannot_reach_the_points_above_its_cap(tmp_path: Path) -> None:
    suite = suite_file(
        tmp_path, "curve",
        f"{{rw: randread, bs: 4k, iodepth: 16, size: 48m, curve: {CURVE}, "
        f"curve_base: {BASE}}}",
        defaults="{runtime: 1}",
    )  # fmt: skip
    out = tmp_path / "results"
    with loop_device(tmp_path / "free.img", 64 << 20) as free, \
            loop_device(tmp_path / "capped.img", 64 << 20) as capped:  # fmt: skip
        with read_capped(capped, CAP_IOPS, "curve") as cap:
            done = subprocess.run(
                cap.command(sys.executable, "-m", "ssdcompare", "sweep", "--suite", str(suite),
                            "--devices", f"{free},{capped}", "--out", str(out),
                            "--slo", "p99=100ms"),
                capture_output=True, text=True, timeout=300,
            )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    free_name, capped_name = Path(free).name, Path(capped).name
    frame = ssdcompare.load(out)
    maxima = frame[frame["job"] == "randread-4k-qd16@max"].set_index("device")["iops"]
    assert maxima[capped_name] < CAP_IOPS * 1.1 < BASE < maxima[free_name]
    # every point is paced at its share of the rate given, on both devices: the load fio
    # offers is the nearest its whole-microsecond gaps allow
    fast = _points(frame, free_name)
    slow = _points(frame, capped_name)
    assert list(fast["curve_pct"]) == list(slow["curve_pct"]) == CURVE
    assert list(fast["rate_asked_iops"]) == list(slow["rate_asked_iops"])
    assert all(
        abs(a - BASE * p / 100) < BASE * p / 100 * 0.01
        for a, p in zip(fast["rate_asked_iops"], CURVE, strict=True)
    )
    # the free device reaches every point
    for asked, reached, ok in zip(fast["rate_asked_iops"], fast["rate_reached_pct"],
                                  fast["rate_reached"], strict=True):  # fmt: skip
        assert ok and reached >= 100 - reach_tolerance_pct(asked, 1), (asked, reached)
    # the capped one reaches those below its cap, and none above it
    for asked, ok, reached in zip(slow["rate_asked_iops"], slow["rate_reached"],
                                  slow["iops"], strict=True):  # fmt: skip
        if asked > CAP_IOPS * 1.15:
            assert ok is False or ok == False, (asked, reached)  # noqa: E712
            assert reached < CAP_IOPS * 1.05
        elif asked < CAP_IOPS * 0.7:
            assert ok, (asked, reached)
    assert list(slow["rate_reached"]) == [True, False, False]
    # the fio output says what it was asked: rate_iops in the job's options, Poisson arrivals
    point = slow.iloc[-1]
    options = json.loads(Path(point["fio_json"]).read_text())["jobs"][0]["job options"]
    assert options["rate_process"] == "poisson" and int(options["rate_iops"]) > CAP_IOPS
    _check_answers(frame, free_name, capped_name)
    # the terminal summary gave the answer at the target, per device
    assert "randread-4k-qd16, p99 ≤ 100.00 ms: " in done.stdout, done.stdout


def _check_answers(frame: pd.DataFrame, free: str, capped: str) -> None:
    """The answers at targets: the capped device's within its cap, the free one's above it,
    the bracketing points those the curve's latencies make."""
    slo = parse_slo("p99=100ms")  # far above any loop device's p99: every reached point meets it
    summary = ssdcompare.job_summary(frame, slo=slo)
    rows = summary[summary["slo"].notna()].set_index("label")
    assert rows.loc[capped, "slo_status"] == AT_LEAST
    assert rows.loc[capped, "slo_iops"] < CAP_IOPS
    assert rows.loc[capped, "slo_below"].startswith("10 %: ")  # its highest reached point
    assert rows.loc[free, "slo_status"] == AT_LEAST
    assert rows.loc[free, "slo_iops"] > CAP_IOPS * 2
    assert rows.loc[free, "slo_below"].startswith("80 %: ")
    # both are lower bounds ("at least"): no ratio between them
    assert pd.isna(rows.loc[capped, "slo_ratio"]) and rows.loc[capped, "slo_ratio_kind"] is None
    # a target between two of the free device's points: the answer lies between them
    fast = _points(frame, free)
    worst = fast["lat_p99_us"].to_numpy()
    top = int(worst.argmax())
    if top == 0:  # the lightest load had the worst tail: no load meets a target below it
        answer = ssdcompare.job_summary(frame, slo=f"p99={worst[0] * 0.9:.3f}us")
        assert answer[answer["label"] == free]["slo_status"].iloc[0] == NEVER
        return
    limit = math.sqrt(worst[:top].max() * worst[top])
    summary = ssdcompare.job_summary(frame, slo=f"p99={limit:.3f}us")
    row = summary[(summary["label"] == free) & summary["slo"].notna()].iloc[0]
    assert row["slo_status"] == MET
    below, above = fast.iloc[top - 1], fast.iloc[top]
    assert (
        row["slo_below_pct"] == below["curve_pct"] and row["slo_above_pct"] == above["curve_pct"]
    )
    low, high = sorted((below["iops"], above["iops"]))
    assert low <= row["slo_iops"] <= high


def _rate_line(path: Path) -> str:
    return next(line for line in path.read_text().splitlines() if line.startswith("rate_iops="))


@pytest.mark.fio
def test_a_curve_stops_past_its_limit_and_resumes_at_the_same_rates(tmp_path: Path) -> None:
    suite = suite_file(
        tmp_path, "curve",
        "{rw: randread, bs: 4k, iodepth: 4, curve: [10, 50, 90], stop_p99: 1us, "
        "curve_base: fastest}",
        defaults="{runtime: 1}",
    )  # fmt: skip
    files = [str(tmp_path / "a.dat"), str(tmp_path / "b.dat")]
    run = ssdcompare.run_sweep(files, suite=str(suite), out=tmp_path / "results", size="16m",
                               report=False)  # fmt: skip
    said = [(s.target, s.job, s.status) for s in run.outcome.statuses]
    # the maxima of every device first: the points are shares of the highest
    assert said[:2] == [("a.dat", "randread-4k-qd4@max", "ok"), ("b.dat", "randread-4k-qd4@max",
                                                                  "ok")]  # fmt: skip
    # no read takes under a microsecond: after the lowest point, the curve stops
    for device in ("a.dat", "b.dat"):
        mine = {job: (status, s) for (t, job, status), s in
                zip(said, run.outcome.statuses, strict=True) if t == device}  # fmt: skip
        assert mine["randread-4k-qd4@10pct"][0] == "ok"
        for higher in ("randread-4k-qd4@50pct", "randread-4k-qd4@90pct"):
            status, record = mine[higher]
            assert status == "skipped"
            assert record.error is not None and record.error.startswith(
                "the curve stopped at 10 % (randread-4k-qd4@10pct): its p99 latency was "
            )
            assert record.error.endswith("past stop_p99 1.0 µs")
    # the only point reached answers any target it meets: at least its IOPS
    answers = ssdcompare.latency_targets(run.frame(), "p99=10s")
    assert list(answers["label"]) == ["a.dat", "b.dat"]
    assert set(answers["slo_status"]) == {AT_LEAST} and set(answers["slo_below_pct"]) == {10}
    with pytest.raises(ssdcompare.SsdcompareError, match="give a latency target"):
        ssdcompare.latency_targets(run.frame(), [])
    folder = run.path / "runs" / "a.dat" / "randread-4k-qd4@10pct" / "r1"
    rate = _rate_line(folder / "jobfile.fio")
    assert rate == _rate_line(run.path / "runs" / "b.dat" / "randread-4k-qd4@10pct" / "r1"
                              / "jobfile.fio")  # fmt: skip
    # the point run again (its folder gone): paced at the rate the stored maxima give
    for item in folder.iterdir():
        item.unlink()
    folder.rmdir()
    again = ssdcompare.run_sweep(files, resume=run.path, report=False)
    assert [(s.job, s.status) for s in again.outcome.statuses if s.target == "a.dat"][0] == (
        "randread-4k-qd4@10pct",
        "ok",
    )
    assert _rate_line(folder / "jobfile.fio") == rate


@pytest.mark.fio
def test_the_plan_says_what_each_curve_is_paced_at(tmp_path: Path, run_cli: RunCli) -> None:
    suite = suite_file(
        tmp_path, "curve",
        "{rw: randread, bs: 4k, curve: [10, 90], stop_p99: 2ms}",
        "{rw: randrw, bs: 8k, iodepth: 8, curve: [50], curve_base: 20k}",
        defaults="{runtime: 2}",
    )  # fmt: skip
    done = run_cli("plan", "--suite", str(suite), "--devices", str(tmp_path / "t.dat"),
                   "--size", "16m", "--brief")  # fmt: skip
    assert done.exit_code == 0, done  # type: ignore[attr-defined]
    lines = done.stdout.splitlines()  # type: ignore[attr-defined]
    assert [line.split()[0] for line in lines if "@" in line.split(" ")[0]] == [
        "randread-4k-qd1@max", "randread-4k-qd1@10pct", "randread-4k-qd1@90pct",
        "randrw50-8k-qd8@max", "randrw50-8k-qd8@50pct",
    ]  # fmt: skip
    assert (
        "  randread-4k-qd1: randread-4k-qd1@max unpaced, then paced (Poisson arrivals) at "
        "10, 90 % of each device's own maximum; stops past p99 2.00 ms"
    ) in lines
    assert (
        "  randrw50-8k-qd8: randrw50-8k-qd8@max unpaced, then paced (Poisson arrivals) at "
        "50 % of 20,000 IOPS"
    ) in lines
    # the estimate counts the unpaced runs: 5 runs of 2 s and fio's start-up each
    assert "5 jobs x 1 target(s) x 1 repeat(s) = 5 fio runs" in done.stdout  # type: ignore[attr-defined]


@pytest.mark.fio
def test_a_point_fio_cannot_pace_or_an_impossible_maximum_is_skipped(tmp_path: Path) -> None:
    suite = suite_file(
        tmp_path, "curve",
        # fio's null engine does millions of I/Os a second: half of that is beyond its pacing
        "{id: nullio, rw: randread, bs: 4k, iodepth: 4, ioengine: null, curve: [50]}",
        "{rw: randread, bs: 4k, iodepth: 4, curve: [10]}",
        defaults="{runtime: 1}",
    )  # fmt: skip
    target = str(tmp_path / "t.dat")
    run = ssdcompare.run_sweep(target, suite=str(suite), out=tmp_path / "r", size="16m",
                               report=False)  # fmt: skip
    said = {s.job: s for s in run.outcome.statuses}
    assert said["nullio@max"].status == "ok"
    null = said["nullio@50pct"]
    assert null.status == "skipped" and null.error is not None
    assert null.error.startswith("fio cannot pace ") and null.error.endswith("with numjobs")
    assert said["randread-4k-qd4@10pct"].status == "ok"
    # a maximum no run can produce (edited, or damaged): no point is paced from it
    runs = run.path / "runs" / "t.dat"
    output = runs / "randread-4k-qd4@max" / "r1" / "fio.json"
    data = json.loads(output.read_text())
    data["jobs"][0]["read"]["iops"] = 1e300
    output.write_text(json.dumps(data))
    point = runs / "randread-4k-qd4@10pct" / "r1"
    for item in point.iterdir():
        item.unlink()
    point.rmdir()
    again = ssdcompare.run_sweep(target, resume=run.path, report=False)
    redone = {s.job: s for s in again.outcome.statuses}["randread-4k-qd4@10pct"]
    assert redone.status == "skipped" and redone.error is not None
    assert "has no result on t.dat in repeat 1" in redone.error
