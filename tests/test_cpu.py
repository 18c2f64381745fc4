"""The CPU sampler: arithmetic on injected sources, and a real busy process."""

from __future__ import annotations

import subprocess
import sys
import time
from collections import namedtuple

import psutil
import pytest

from ssdcompare.cpu import CATEGORIES, CpuSampler, CpuTrace

Times = namedtuple("Times", CATEGORIES)
ProcTimes = namedtuple("ProcTimes", "user system")


def cpu(**shares: float) -> Times:
    return Times(**{name: shares.get(name, 0.0) for name in CATEGORIES})


class FakeProcess:
    """A process whose CPU seconds are set by the test; raises once it has 'exited'."""

    def __init__(self, pid: int, seconds: list[float], kids: list[FakeProcess] | None = None):
        self.pid = pid
        self.seconds = seconds
        self.kids = kids or []

    def cpu_times(self) -> ProcTimes:
        if not self.seconds:
            raise psutil.NoSuchProcess(self.pid)
        return ProcTimes(self.seconds.pop(0), 0.0)

    def children(self, recursive: bool = False) -> list[FakeProcess]:
        return self.kids

    def name(self) -> str:
        return "fio"


def driven_sampler(times: list[list[Times]], clock: list[float], procs: dict[int, FakeProcess]):
    ticks = iter(clock)
    snapshots = iter(times)
    return CpuSampler(
        interval_s=0.1,
        clock=lambda: next(ticks),
        cpu_times=lambda: next(snapshots),
        process=lambda pid: procs[pid],
    )


def test_shares_come_from_deltas_of_cpu_times() -> None:
    worker = FakeProcess(11, [0.0, 0.1, 0.2])
    root = FakeProcess(10, [0.0, 0.0, 0.0], kids=[worker])
    sampler = driven_sampler(
        times=[
            [cpu(idle=100.0), cpu(idle=100.0)],
            [cpu(user=0.08, system=0.02, idle=100.0), cpu(softirq=0.05, iowait=0.05,
                                                            idle=100.0)],  # fmt: skip
            [cpu(user=0.16, system=0.04, idle=100.0), cpu(softirq=0.10, iowait=0.05,
                                                           idle=100.05)],  # fmt: skip
        ],
        clock=[0.0, 0.1, 0.2],
        procs={10: root},
    )
    sampler.start(10)
    sampler._stop.set()  # drive it by hand: no background samples
    sampler._thread.join()
    sampler.sample_once()
    sampler.sample_once()
    trace = sampler.stop()
    first, second = trace.samples
    assert first.cpus[0] == [80.0, 0.0, 20.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert first.cpus[1] == [0.0, 0.0, 0.0, 0.0, 50.0, 50.0, 0.0, 0.0]
    assert second.cpus[1] == [0.0, 0.0, 0.0, 0.0, 50.0, 0.0, 0.0, 50.0]
    assert first.workers == {"10": 0.0, "11": 100.0}
    summary = trace.summary()
    assert summary.cpu_max_busy_index == 0 and summary.cpu_max_busy_pct == 100.0
    # CPU1: busy = 100 - idle - iowait: 50 % then 50 %
    assert summary.per_cpu[1].busy_pct == 50.0
    assert summary.irq_softirq_max_pct == 50.0 and summary.irq_softirq_max_index == 1
    assert summary.cpu_busy_pct == 75.0
    assert summary.fio_worker_max_pct == 100.0 and summary.fio_worker_max_pid == 11
    assert summary.fio_workers_total_cores == 1.0


def test_summary_skips_the_ramp_and_tolerates_workers_that_exit() -> None:
    trace = CpuTrace(interval_s=0.1, cpu_count=1, samples=[
        {"t_s": 0.1, "cpus": [[100, 0, 0, 0, 0, 0, 0, 0]], "workers": {"5": 100.0}},
        {"t_s": 0.2, "cpus": [[10, 0, 0, 0, 0, 0, 0, 90]], "workers": {"5": 10.0, "6": 30.0}},
        {"t_s": 0.3, "cpus": [[30, 0, 0, 0, 0, 0, 0, 70]], "workers": {"6": 50.0}},
    ])  # fmt: skip
    summary = trace.summary(skip_s=0.15)
    assert summary.samples == 2
    assert summary.cpu_busy_pct == 20.0
    assert summary.fio_worker_max_pid == 6 and summary.fio_worker_max_pct == 40.0
    assert trace.summary(skip_s=5.0) is None
    again = CpuTrace.model_validate_json(trace.model_dump_json())
    assert again == trace


def test_a_vanished_worker_is_dropped_not_fatal() -> None:
    worker = FakeProcess(21, [0.0, 0.05])  # exits after two readings
    root = FakeProcess(20, [0.0, 0.0, 0.0, 0.0], kids=[worker])
    sampler = driven_sampler(
        times=[[cpu(idle=1.0)]] * 4, clock=[0.0, 0.1, 0.2, 0.3], procs={20: root}
    )
    sampler.start(20)
    sampler._stop.set()
    sampler._thread.join()
    sampler.sample_once()
    root.kids = []
    sampler.sample_once()
    trace = sampler.stop()
    assert trace.samples[0].workers == {"20": 0.0, "21": 50.0}
    assert trace.samples[1].workers == {"20": 0.0}
    assert trace.errors == 0


def test_real_busy_process_is_seen_at_a_full_core_and_the_sampler_is_cheap() -> None:
    child = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        sampler = CpuSampler(interval_s=0.1)
        sampler.start(child.pid)
        time.sleep(2.0)
        trace = sampler.stop()
    finally:
        child.kill()
        child.wait()
    assert trace.sampler_cpu_pct is not None and trace.sampler_cpu_pct < 10.0
    assert len(trace.samples) >= 15  # >= 10 Hz less start-up jitter
    summary = trace.summary(skip_s=0.3)
    assert summary.fio_worker_max_pct >= 80.0
    assert summary.fio_worker_max_pid == child.pid
    assert sampler.stop() is trace  # idempotent


def test_a_process_that_is_gone_before_sampling_gives_an_empty_but_valid_trace() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    sampler = CpuSampler(interval_s=0.05)
    sampler.start(child.pid)
    time.sleep(0.2)
    trace = sampler.stop()
    assert all(sample.workers == {} for sample in trace.samples)
    assert trace.summary() is None or trace.summary().fio_worker_max_pct is None


@pytest.mark.parametrize("interval", [0.05, 0.1])
def test_sampling_rate_follows_the_interval(interval: float) -> None:
    sampler = CpuSampler(interval_s=interval)
    sampler.start(None)
    time.sleep(1.0)
    trace = sampler.stop()
    assert abs(len(trace.samples) - 1.0 / interval) <= 0.35 / interval
