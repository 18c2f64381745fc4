"""The CPU-bound rule: unit cases, and ground truth measured with the real fio."""

from __future__ import annotations

from pathlib import Path

import pytest
from blockdevs import can_make_devices, loop_device, zram_device

from ssdcompare import sweep
from ssdcompare.cpu import CpuSummary
from ssdcompare.cpubound import Thresholds, judge
from ssdcompare.frame import load
from ssdcompare.plan import make_plan

SUITES = Path(__file__).parent / "suites"


def summary(busy: float = 20.0, worker: float | None = 30.0, irq: float = 1.0,
            irq_index: int = 1, cpus: int = 2) -> CpuSummary:  # fmt: skip
    return CpuSummary(
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


@pytest.mark.skipif(not can_make_devices(), reason="needs root for the RAM disk and loop device")
def test_ground_truth_with_real_fio(tmp_path: Path) -> None:
    """null engine: bound; rate-limited: not; RAM disk 4K QD128: bound; loop 4K QD1 fsync: not."""
    expected = {
        ("scratch.img", "null-engine"): True,
        ("scratch.img", "rate-limited"): False,
    }
    with zram_device(256 << 20) as zram, loop_device(tmp_path / "loop.img", 256 << 20) as loop:
        expected[(Path(zram).name, "randread-4k-qd128")] = True
        expected[(Path(loop).name, "randwrite-4k-qd1-fsync")] = False
        file_plan = make_plan(str(SUITES / "ground-truth.yaml"), str(tmp_path / "scratch.img"),
                              size_bytes=64 << 20)  # fmt: skip
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
    verdicts = frame.groupby(["device", "job"])["cpu_bound"].first().to_dict()
    reasons = frame.groupby(["device", "job"])["cpu_bound_reason"].first().to_dict()
    for key, bound in expected.items():
        assert bool(verdicts[key]) is bound, (key, reasons[key], frame[
            (frame["device"] == key[0]) & (frame["job"] == key[1])
        ][["fio_worker_max_pct", "cpu_busy_pct", "irq_softirq_max_pct"]].to_dict("records"))
    assert "fio worker" in reasons[("scratch.img", "null-engine")]
