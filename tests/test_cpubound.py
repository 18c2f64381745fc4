"""The CPU-bound rule: unit cases, and ground truth measured with the real fio."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from blockdevs import loop_device, zram_device

from ssdcompare.analysis.frame import load
from ssdcompare.judge.cpu import CpuStats, Thresholds, judge, trace_from
from ssdcompare.run import sweep
from ssdcompare.run.plan import PlanOptions, make_plan

# judged on CPU use or timing: runs alone, never beside other tests (scripts/test.sh)
pytestmark = pytest.mark.serial

SUITES = Path(__file__).parent / "suites"
# the wording of rule 1 when it fires on a worker's share of a core
FULL_CORE_CLAIM = "% of one core"


def summary(busy: float = 20.0, worker: float | None = 30.0, irq: float = 1.0,
            irq_index: int = 1, cpus: int = 2) -> CpuStats:  # fmt: skip
    return CpuStats(
        samples=30, duration_s=3.0, cpu_count=cpus, cpu_busy_pct=busy, cpu_max_busy_pct=busy,
        cpu_max_busy_index=0, irq_softirq_max_pct=irq, irq_softirq_max_index=irq_index,
        fio_worker_max_pct=worker, fio_worker_max_pid=1 if worker is not None else None,
        fio_workers_total_cores=(worker or 0) / 100, per_cpu=[], workers=[],
    )  # fmt: skip


def test_a_saturated_fio_worker_is_cpu_bound() -> None:
    verdict = judge(summary(worker=99.4), 60.0, 39.0)
    assert verdict.cpu_bound is True
    assert verdict.reason == "fio worker at 99 % of one core"


def test_fio_own_figure_counts_when_the_samples_missed_the_worker() -> None:
    verdict = judge(summary(worker=None), 70.0, 25.0)
    assert verdict.cpu_bound is True and "95 %" in verdict.reason


def test_a_busy_machine_is_cpu_bound_and_named_in_words() -> None:
    assert judge(summary(busy=96.2, worker=60.0), 30.0, 20.0).reason == "both CPUs 96 % busy"
    assert judge(summary(busy=93.0, worker=40.0, cpus=8), 30.0, 10.0).reason == (
        "all 8 CPUs 93 % busy"
    )


def test_interrupt_bound_cpu_is_named() -> None:
    verdict = judge(summary(irq=93.4, irq_index=1, worker=50.0), 20.0, 20.0)
    assert verdict.cpu_bound is True and verdict.reason == "CPU1 93 % in irq+softirq"


def test_several_reasons_are_all_given() -> None:
    verdict = judge(summary(busy=97.0, worker=100.0), 50.0, 50.0)
    assert verdict.reason == "fio worker at 100 % of one core; both CPUs 97 % busy"


def test_below_thresholds_is_not_cpu_bound_and_thresholds_are_parameters() -> None:
    assert judge(summary(busy=50.0, worker=70.0), 40.0, 30.0).cpu_bound is False
    strict = Thresholds(worker_pct=60.0)
    assert judge(summary(busy=50.0, worker=70.0), 40.0, 30.0, thresholds=strict).cpu_bound


def test_without_samples_the_verdict_is_unknown_not_false() -> None:
    assert judge(None, 10.0, 5.0).cpu_bound is None
    assert judge(None, None, None).cpu_bound is None
    assert judge(None, 80.0, 19.0).cpu_bound is True


def machine_busy_only(reason: str, cpu_count: int) -> bool:
    """Whether `reason` names only the machine-wide rule (all CPUs busy), nothing else."""
    who = {1: "the CPU", 2: "both CPUs"}.get(cpu_count, f"all {cpu_count} CPUs")
    return reason.startswith(f"{who} ") and reason.endswith(" % busy") and ";" not in reason


@pytest.mark.root
@pytest.mark.fio
def test_ground_truth_with_real_fio(tmp_path: Path) -> None:
    """null engine: bound; rate-limited: not; RAM disk 4K QD128: bound; loop 4K QD1 fsync: not.

    Other processes may keep every CPU busy while this runs: then the machine-wide rule rightly
    marks every result CPU-bound, so a "not bound" job may be judged bound for that reason (and
    only that one) when the samples show all CPUs >= 90 % busy.
    """
    expected = {
        ("scratch.img", "null-engine"): True,
        ("scratch.img", "rate-limited"): False,
    }
    with zram_device(256 << 20) as zram, loop_device(tmp_path / "loop.img", 256 << 20) as loop:
        expected[(Path(zram).name, "randread-4k-qd128")] = True
        expected[(Path(loop).name, "randwrite-4k-qd1-fsync")] = False
        file_plan = make_plan(str(SUITES / "ground-truth.yaml"), str(tmp_path / "scratch.img"),
                              PlanOptions(size_bytes=64 << 20))  # fmt: skip
        file_plan.suite = file_plan.suite.model_copy(update={"workloads": [
            w for w in file_plan.suite.workloads if w.job_id in ("null-engine", "rate-limited")
        ]})  # fmt: skip
        file_plan.jobs = [j for j in file_plan.jobs if j.job_id in ("null-engine", "rate-limited")]
        device_plan = make_plan(str(SUITES / "ground-truth.yaml"), f"{zram},{loop}")
        device_plan.jobs = [
            j for j in device_plan.jobs
            if (j.target.path, j.job_id) in ((zram, "randread-4k-qd128"),
                                             (loop, "randwrite-4k-qd1-fsync"))
        ]  # fmt: skip
        folders = []
        for index, plan in enumerate((file_plan, device_plan)):
            results, _ = sweep.start(plan, tmp_path / f"results-{index}", command_line=["test"])
            outcome = sweep.run(plan, results)
            assert outcome.count("ok") == len(plan.jobs)
            folders.append(results.path)
    frame = load(folders)
    rows = frame.groupby(["device", "job"]).first()
    for key, bound in expected.items():
        row = rows.loc[key]
        facts = (key, row["cpu_bound_reason"], row[
            ["fio_worker_max_pct", "cpu_busy_pct", "irq_softirq_max_pct"]
        ].to_dict())  # fmt: skip
        assert not pd.isna(row["cpu_bound"]), facts  # judged: samples were taken
        if bound:
            assert bool(row["cpu_bound"]) is True, facts
        elif bool(row["cpu_bound"]):
            assert row["cpu_busy_pct"] >= 90.0, facts
            assert machine_busy_only(row["cpu_bound_reason"], os.cpu_count() or 1), facts
    assert "fio worker" in rows.loc[("scratch.img", "null-engine")]["cpu_bound_reason"]


def threads_suite(folder: Path, numjobs: int) -> Path:
    """A suite of one null-engine job run as `numjobs` threads of one fio process."""
    path = folder / "threads.yaml"
    path.write_text(
        "name: threads\ndescription: fio jobs as threads of one process\n"
        "defaults: {runtime: 3, ramp_time: 1, size: 64m}\nworkloads:\n"
        f"  - {{id: null-threads, rw: randread, bs: 4k, iodepth: 1, ioengine: null,"
        f" numjobs: {numjobs}, extra: {{thread: ~}}}}\n"  # ~: the bare option `thread`
    )
    return path


@pytest.mark.fio
def test_jobs_run_as_threads_are_judged_thread_by_thread(tmp_path: Path) -> None:
    """thread=1 with three job threads per CPU on the null engine: the trace holds each job
    thread as a worker of its own, none of them got a full core, and the verdict (CPU-bound:
    the threads never wait and fill every CPU) does not claim a worker at a full core."""
    cpus = os.cpu_count() or 1
    numjobs = 3 * cpus
    plan = make_plan(str(threads_suite(tmp_path, numjobs)), str(tmp_path / "scratch.img"),
                     PlanOptions(size_bytes=64 << 20))  # fmt: skip
    assert "\nthread\n" in plan.jobs[0].text and f"numjobs={numjobs}" in plan.jobs[0].text
    results, _ = sweep.start(plan, tmp_path / "results", command_line=["test"])
    assert sweep.run(plan, results).count("ok") == 1
    traces = list(results.path.rglob("cpu.json"))
    assert len(traces) == 1
    trace = trace_from(json.loads(traces[0].read_text()))
    summary = trace.stats(skip_s=1.0)  # the ramp
    assert summary is not None
    assert set(trace.worker_names.values()) == {"fio"}  # one process: fio, with its threads
    # job threads spin (the null engine never waits); fio's main and helper threads sleep
    job_threads = [w for w in summary.workers if w.mean_pct >= 2.0]
    assert len(job_threads) == numjobs, [(w.pid, w.mean_pct) for w in summary.workers]
    assert len(summary.workers) > numjobs  # and fio's main thread beside them
    assert max(w.mean_pct for w in job_threads) < 90.0  # a share of a core, never a full one
    row = load(results.path).iloc[0]
    assert row["fio_worker_max_pct"] < 90.0
    assert bool(row["cpu_bound"]) is True
    assert FULL_CORE_CLAIM not in row["cpu_bound_reason"], row["cpu_bound_reason"]
