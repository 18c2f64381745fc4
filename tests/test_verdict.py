"""One verdict per result: drive, cpu, host, disturbed or unknown, with the reason."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from blockdevs import loop_device, zram_device
from fioprocs import DEADLINE_S, fio_has_read, fio_processes, wait_for
from suitefiles import suite_file

import ssdcompare
from ssdcompare.analysis.answer import headline
from ssdcompare.cli.terminal import summary_lines
from ssdcompare.errors import SsdcompareError
from ssdcompare.judge.verdict import RunFacts, Verdict, judge_repeats, judge_run
from ssdcompare.report.build import build_context
from ssdcompare.results.store import ResultsDir
from ssdcompare.run.ceiling import why_not

SUITES = Path(__file__).parent / "suites"

# judged on CPU use or timing: runs alone, never beside other tests (scripts/test.sh)
pytestmark = pytest.mark.serial

QUIET = dict(cpu_bound=False, cpu_reason=None, steal_pct=0.5, others_pct=2.0)


def test_each_rule_gives_its_verdict_and_reason() -> None:
    assert judge_run(RunFacts(**QUIET)) == Verdict("drive", None)
    cpu = judge_run(RunFacts(**{**QUIET, "cpu_bound": True, "cpu_reason": "both CPUs 99 % busy"}))
    assert cpu == Verdict("cpu", "both CPUs 99 % busy")
    steal = judge_run(RunFacts(**{**QUIET, "steal_pct": 28.0}))
    assert steal.verdict == "disturbed" and "CPU steal 28 %" in (steal.reason or "")
    other = judge_run(RunFacts(**{**QUIET, "others_pct": 95.0, "others_top": "gzip (pid 9) 95 %"}))
    assert other.verdict == "disturbed" and "gzip (pid 9) 95 %" in (other.reason or "")
    short = judge_run(RunFacts(**QUIET, runtime_s=3.0, planned_s=10.0))
    assert short.verdict == "disturbed" and "3.0 s of the 10 s" in (short.reason or "")
    assert judge_run(RunFacts(**QUIET, runtime_s=9.5, planned_s=10.0)).verdict == "drive"
    host = judge_run(RunFacts(**QUIET, ceiling_pct=93.0))
    assert host.verdict == "host" and "93 %" in (host.reason or "")
    assert judge_run(RunFacts(cpu_bound=None, cpu_reason=None)).verdict == "unknown"
    # a CPU-bound run on a noisy host is cpu: the first rule in order wins
    both = judge_run(RunFacts(cpu_bound=True, cpu_reason="x", steal_pct=40.0))
    assert both.verdict == "cpu"


def test_a_cpu_reason_names_the_neighbours_and_a_ceiling_below_the_run_is_not_trusted() -> None:
    # both CPUs busy because of another process: the cpu reason says whose
    busy = judge_run(RunFacts(cpu_bound=True, cpu_reason="both CPUs 97 % busy", steal_pct=1.0,
                              others_pct=95.0, others_top="gzip (pid 9) 95 %"))  # fmt: skip
    assert busy.verdict == "cpu"
    assert busy.reason == ("both CPUs 97 % busy; other processes used 95 % of a core on "
                           "average; the busiest at its peak: gzip (pid 9) 95 %")  # fmt: skip
    # within noise of the ceiling (up to 120 %) the host is the limit ...
    assert judge_run(RunFacts(**QUIET, ceiling_pct=115.0)).verdict == "host"
    # ... far above it, the ceiling run was disturbed: judged as if there were no ceiling
    above = judge_run(RunFacts(**QUIET, ceiling_pct=212.0))
    assert above.verdict == "drive"
    assert "212 %" in (above.reason or "") and "not used" in (above.reason or "")
    cpu = judge_run(RunFacts(cpu_bound=True, cpu_reason="fio worker at 99 %", ceiling_pct=300.0))
    assert cpu.verdict == "cpu" and (cpu.reason or "").startswith("fio worker at 99 %; ")


def test_one_run_far_above_a_ceiling_discredits_it_for_all_and_figures_are_judged_as_quoted(
) -> None:  # fmt: skip
    # this run is at 103 %, but a run of the same job got 130 %: the ceiling is not used
    near = judge_run(RunFacts(**QUIET, ceiling_pct=103.0, ceiling_worst_pct=130.0))
    assert near.verdict == "drive"
    assert "a run of the job got 130 % of it (this one 103 %)" in (near.reason or "")
    # 120.4 % is quoted as 120 % and judged as such: host, not a discredited ceiling
    edge = judge_run(RunFacts(**QUIET, ceiling_pct=120.4))
    assert edge.verdict == "host" and "at 120 %" in (edge.reason or "")
    assert judge_run(RunFacts(**QUIET, ceiling_pct=79.6)).verdict == "host"  # quoted as 80 %
    # a host-bound run on a busy host names the neighbour too
    busy = judge_run(RunFacts(**{**QUIET, "others_pct": 60.0, "others_top": "yes (pid 7) 60 %"},
                              ceiling_pct=95.0))  # fmt: skip
    assert busy.verdict == "host" and "yes (pid 7) 60 %" in (busy.reason or "")


def test_repeats_take_the_first_verdict_and_their_spread() -> None:
    drive, cpu = Verdict("drive", None), Verdict("cpu", "fio worker at 99 % of one core")
    assert judge_repeats([drive, drive, drive], 2.0, 3) == drive
    assert judge_repeats([drive, cpu, drive], 2.0, 3) == cpu
    spread = judge_repeats([drive, drive, drive], 25.0, 3)
    assert spread.verdict == "disturbed" and "25 %" in (spread.reason or "")
    assert judge_repeats([], None, 0).verdict == "unknown"
    # judged as quoted: a CV shown as 10 % is 10 %
    assert judge_repeats([drive, drive, drive], 9.95, 3).verdict == "disturbed"
    # what the runs said stays said when the spread decides
    noted = Verdict("drive", "the host's ceiling for the job is not used: ...")
    spread_noted = judge_repeats([noted, noted, noted], 24.0, 3)
    assert spread_noted.verdict == "disturbed" and "ceiling" in (spread_noted.reason or "")


def _summary(rows: list[tuple[str, str, float, str]]) -> pd.DataFrame:
    return pd.DataFrame([
        {"label": label, "job": job, "status": "ok", "iops_value": iops,
         "lat_p99_us_value": 1e6 / iops if iops else float("nan"), "verdict": verdict,
         "comparable": True,
         "significant": pd.NA, "ratio": float("nan")}
        for label, job, iops, verdict in rows
    ])  # fmt: skip


def test_the_headline_counts_only_drive_limited_jobs() -> None:
    summary = _summary([
        ("a", "j1", 100, "drive"), ("b", "j1", 200, "drive"),
        ("a", "j2", 100, "drive"), ("b", "j2", 50, "drive"),
        ("a", "j3", 100, "drive"), ("b", "j3", 400, "drive"),
        ("a", "j4", 100, "cpu"), ("b", "j4", 100, "drive"),
        ("a", "j5", 100, "drive"), ("b", "j5", 900, "disturbed"),
    ])  # fmt: skip
    (line,) = headline(summary, "a")
    assert line.jobs == 3 and line.total == 5
    assert line.iops_ratio == pytest.approx((2 * 0.5 * 4) ** (1 / 3))
    assert dict(line.left_out) == {"cpu": 1, "disturbed": 1}
    assert line.untested == 3
    assert line.sentence.startswith("b is 1.59× faster than a on the 3 of 5 jobs")
    assert "Left out: 1 measured the CPU, 1 was disturbed." in line.sentence
    none = headline(_summary([("a", "j", 1, "cpu"), ("b", "j", 2, "cpu")]), "a")[0]
    assert none.jobs == 0 and "cannot be compared as drives" in none.sentence


def test_the_headline_says_what_it_could_not_count_and_never_calls_noise_faster() -> None:
    summary = _summary([
        ("a", "j1", 100, "drive"), ("b", "j1", 103, "drive"),
        ("a", "j2", 100, "drive"), ("b", "j2", 103, "drive"),
        ("a", "j3", 100, "drive"), ("b", "j3", 0, "drive"),  # finished, moved no data
    ])  # fmt: skip
    summary.loc[summary["label"] == "b", "significant"] = False
    summary.loc[(summary["job"] == "j2"), "lat_p99_us_value"] = float("nan")
    (line,) = headline(summary, "a")
    assert dict(line.left_out) == {"idle": 1}
    assert line.ties == 2 and line.p99_jobs == 1
    # 1.03x with no significant difference is not "faster"
    assert line.sentence.startswith("b is not significantly different from a on the 2 of 3 "
                                    "jobs")  # fmt: skip
    assert "p99 latency ×0.97 over 1 of them" in line.sentence
    assert "1 did no I/O" in line.sentence
    # the significance counts belong to the summary's baseline; another one is an error
    summary["compared_to"] = "a"
    assert headline(summary)[0].baseline == "a"
    with pytest.raises(SsdcompareError, match="job_summary\\(frame, baseline='b'\\)"):
        headline(summary, "b")
    with pytest.raises(SsdcompareError, match="baseline 'c' is not among the devices"):
        headline(summary, "c")
    with pytest.raises(SsdcompareError, match="baseline '' is not among the devices"):
        headline(summary, "")


def _tested(rows: list[tuple[str, float, object, str]]) -> pd.DataFrame:
    """Jobs of b against a: (job, b's IOPS ratio, significant, b's verdict); a does 100."""
    found = []
    for job, ratio, significant, verdict in rows:
        found.append({"label": "a", "job": job, "status": "ok", "iops_value": 100.0,
                      "lat_p99_us_value": 10.0, "verdict": "drive", "comparable": True,
                      "significant": pd.NA, "ratio": float("nan")})  # fmt: skip
        found.append({"label": "b", "job": job, "status": "ok", "iops_value": 100.0 * ratio,
                      "lat_p99_us_value": 10.0, "verdict": verdict, "comparable": True,
                      "significant": significant, "ratio": ratio})  # fmt: skip
    return pd.DataFrame(found)


def test_the_answer_never_claims_more_than_its_tests_and_counts_alike_either_way() -> None:
    # the average leans to slower, the one significant job is faster: no verdict, the figure
    mixed = headline(_tested([("j1", 1.1, True, "drive"), ("j2", 0.5, False, "drive"),
                              ("j3", 0.5, False, "drive")]), "a")[0]  # fmt: skip
    assert mixed.sentence.startswith("b's IOPS are 0.65× a's on the 3 of 3 jobs that measured "
                                     "the drives, with no consistent difference")  # fmt: skip
    # one job tested and not different, five untested: not "not significantly different"
    partly = headline(_tested([("t", 1.0, False, "drive")] + [
        (f"u{k}", 2.0, pd.NA, "drive") for k in range(5)]), "a")[0]  # fmt: skip
    assert "not significantly different from" not in partly.sentence
    assert "1 not significantly different, 5 untested" in partly.sentence
    # one significant win and two ties is not "faster": most tested jobs did not differ
    ties = headline(_tested([("j1", 1.5, True, "drive"), ("j2", 1.05, False, "drive"),
                             ("j3", 1.0, False, "drive")]), "a")[0]  # fmt: skip
    assert "with no consistent difference" in ties.sentence
    # agreeing tests: the direction is said
    agree = headline(_tested([("j1", 1.5, True, "drive"), ("j2", 1.4, True, "drive")]), "a")[0]
    assert agree.sentence.startswith("b is 1.45× faster than a")
    # left out for the same reason whichever device is the baseline
    pair = _tested([("j1", 1.0, pd.NA, "disturbed")])
    pair.loc[pair["label"] == "a", "verdict"] = "cpu"
    assert dict(headline(pair, "a")[0].left_out) == {"cpu": 1}
    assert dict(headline(pair, "b")[0].left_out) == {"cpu": 1}
    # a finished run whose directions fio printed with zeros did no I/O at all
    idle = _tested([("j1", 1.0, pd.NA, "drive"), ("j2", 1.0, pd.NA, "drive")])
    idle.loc[(idle["label"] == "b") & (idle["job"] == "j2"), "iops_value"] = 0.0
    line = headline(idle, "a")[0]
    assert dict(line.left_out) == {"idle": 1} and "1 did no I/O" in line.sentence
    # ... while one whose IOPS fio did not give (nan) is unknown, not idle
    idle.loc[(idle["label"] == "b") & (idle["job"] == "j2"), "iops_value"] = float("nan")
    line = headline(idle, "a")[0]
    assert dict(line.left_out) == {"unknown figures": 1}
    assert "1 had no IOPS figure" in line.sentence
    one = _tested([("j1", 1.0, pd.NA, "drive"), ("j2", 1.0, pd.NA, "disturbed")])
    assert "Left out: 1 was disturbed." in headline(one, "a")[0].sentence


@pytest.mark.root
@pytest.mark.fio
def test_a_busy_neighbour_never_lets_a_result_pass_as_the_drives(tmp_path: Path) -> None:
    # two processes that keep both CPUs busy beside the sweep, started and stopped by us
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(2)]
    try:
        suite = suite_file(tmp_path, "hog", "{rw: randread, bs: 4k, iodepth: 1, runtime: 2}")
        with loop_device(tmp_path / "disk.img", 16 << 20) as device:
            run = ssdcompare.run_sweep(device, suite=str(suite), out=tmp_path / "r", repeat=2,
                                       report=False)  # fmt: skip
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()
    frame = run.frame()
    assert run.complete and len(frame) == 2
    # each repeat is judged on its own, and both the same way: never "drive"
    verdicts = set(frame["verdict"])
    assert len(verdicts) == 1 and verdicts <= {"cpu", "disturbed"}, frame["verdict_reason"]
    for reason in frame["verdict_reason"]:
        assert "busy" in reason or "other processes used" in reason, reason
    assert (frame["others_pct"] >= 10).all() or set(frame["verdict"]) == {"cpu"}
    summary = ssdcompare.job_summary(frame)
    assert summary["verdict"].iloc[0] in ("cpu", "disturbed")
    # the terminal says so too, with the reason naming the neighbour where it was seen
    lines = summary_lines(run.path)
    assert lines[1].endswith("[CPU-bound]") or lines[1].endswith("[disturbed]"), lines
    assert lines[3] in (
        "CPU-bound: these numbers measure the CPU, not the drive:",
        "Disturbed: something besides the workload perturbed these numbers:",
    )
    assert lines[4].startswith(f"  {frame['job'].iloc[0]} on ")


@pytest.mark.root
@pytest.mark.fio
def test_a_ram_disk_measured_against_the_ceiling_comes_out_host(tmp_path: Path) -> None:
    # a job capped at 400 IOPS gets exactly that from any RAM disk: the device under test
    # reaches 100 % of the ceiling, whatever the host's noise
    suite = suite_file(tmp_path, "capped", "{rw: randread, bs: 4k, iodepth: 1, runtime: 2, "
                       "extra: {rate_iops: 400}}", "{rw: randwrite, bs: 4k, iodepth: 1, "
                       "runtime: 1, extra: {rate_iops: 400}}")  # fmt: skip
    before = set(Path("/sys/block").iterdir())
    job = "randread-4k-qd1+rate_iops400"
    writes = "randwrite-4k-qd1+rate_iops400"
    with zram_device(64 << 20) as device:
        run = ssdcompare.run_sweep(device, suite=str(suite), out=tmp_path / "r", ceiling=True,
                                   report=False)  # fmt: skip
        assert run.complete
        ceiling = run.path / "ceiling" / job
        assert (ceiling / "fio.json").is_file() and (ceiling / "jobfile.fio").is_file()
        frame = run.frame().set_index("job")
        row = frame.loc[job]
        assert 350 < row["ceiling_iops"] < 450 and row["ceiling_pct"] >= 80
        assert row["verdict"] == "host" and "ceiling" in row["verdict_reason"]
        # writes get no ceiling: zram compresses, its writes can be slower than a drive's
        assert not (run.path / "ceiling" / writes).exists()
        assert pd.isna(frame.loc[writes, "ceiling_iops"])
        assert frame.loc[writes, "verdict"] != "host"
        # an interrupted ceiling run is no ceiling: the report says so, a resume measures it
        status = ceiling / "status.json"
        status.write_text(status.read_text().replace('"status": "ok"', '"status": "interrupted"'))
        assert ResultsDir.open(run.path).ceiling_iops(job) is None
        warnings = build_context(run.frame(), [ResultsDir.open(run.path)])["warnings"]
        assert any(w.startswith(f"No ceiling for {job}:") for w in warnings)
        again = ssdcompare.run_sweep(resume=run.path, report=False)
        assert again.complete and 350 < (ResultsDir.open(run.path).ceiling_iops(job) or 0) < 450
    assert set(Path("/sys/block").iterdir()) == before  # the ceiling's RAM disks are gone too
    # results made before writing jobs lost their ceiling: one found for a write is not used
    shutil.copytree(run.path / "ceiling" / job, run.path / "ceiling" / writes)
    assert pd.isna(run.frame().set_index("job").loc[writes, "ceiling_iops"])
    manifest = (run.path / "manifest.json").read_text()
    assert '"ceiling": true' in manifest


@pytest.mark.root
@pytest.mark.fio
def test_a_sweep_stopped_while_measuring_the_ceiling_says_by_what(tmp_path: Path) -> None:
    out = tmp_path / "r"
    before = set(Path("/sys/block").iterdir())
    with loop_device(tmp_path / "loop.img", 64 << 20) as device:
        proc = subprocess.Popen(
            [sys.executable, "-m", "ssdcompare", "sweep", "--devices", device, "--ceiling",
             "--suite", str(SUITES / "long-read.yaml"), "--out", str(out)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        wait_for(lambda: fio_has_read(out, where="ceiling"), "the ceiling run to read")
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert "interrupted by SIGTERM" in stderr and "Ctrl-C" not in stderr, stderr
    assert f"--resume {out}" in stderr and "Traceback" not in stderr
    assert fio_processes(out) == []
    assert set(Path("/sys/block").iterdir()) == before  # the ceiling's RAM disk is gone


def test_the_ceiling_needs_root() -> None:
    assert "needs root" in (why_not(root=False) or "")


def test_the_headline_stays_callable_however_often_it_is_reached() -> None:
    # a module named like the function would replace it on the package once imported
    first, second = ssdcompare.headline, ssdcompare.headline
    assert callable(first) and first is second and ssdcompare.bursts is ssdcompare.bursts
