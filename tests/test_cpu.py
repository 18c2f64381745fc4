"""The CPU sampler: arithmetic on injected sources, and real processes told apart.

Nothing here depends on how fast this machine is or how much CPU other work leaves: the
sampler's rate and its own cost are figures, printed by benchmarks/sampler_cost.py.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections import namedtuple
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from ssdcompare.judge.cpu import CATEGORIES, CpuTrace, judge
from ssdcompare.run import sampler
from ssdcompare.run.sampler import CpuSampler

# judged on CPU use or timing: runs alone, never beside other tests (scripts/test.sh)
pytestmark = pytest.mark.serial

Times = namedtuple("Times", CATEGORIES)
ProcTimes = namedtuple("ProcTimes", "user system")
PThread = namedtuple("PThread", "id user_time system_time")  # as psutil.Process.threads()
# A generous bound for a few samples to arrive, only ever reached when something is broken.
PATIENCE_S = 60.0


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


class FakeThreadedProcess:
    """A process with threads, as psutil shows them: `threads()` gives each thread's CPU
    seconds (one list per reading, consumed in order)."""

    def __init__(self, pid: int, readings: list[dict[int, float]]):
        self.pid = pid
        self.readings = readings

    def threads(self) -> list[PThread]:
        if not self.readings:
            raise psutil.NoSuchProcess(self.pid)
        return [PThread(tid, used, 0.0) for tid, used in self.readings.pop(0).items()]

    def children(self, recursive: bool = False) -> list[FakeThreadedProcess]:
        return []

    def name(self) -> str:
        return "fio"


def driven_sampler(
    times: list[list[Times]],
    clock: list[float],
    procs: dict[int, object],
    schedstat: dict[int, list[float]] | None = None,
) -> CpuSampler:
    """A sampler on injected sources; `schedstat` gives each thread's runnable seconds, one
    reading per call (none at all by default)."""
    ticks = iter(clock)
    snapshots = iter(times)
    runnable = schedstat or {}
    return CpuSampler(
        interval_s=0.1,
        clock=lambda: next(ticks),
        cpu_times=lambda: next(snapshots),
        process=lambda pid: procs[pid],
        schedstat=lambda pid, tid: runnable[tid].pop(0) if runnable.get(tid) else None,
    )


def drive_by_hand(sampler: CpuSampler, root_pid: int | None) -> None:
    """Start `sampler` but take its samples only through sample_once (no background ones)."""
    sampler.start(root_pid)
    sampler._stop.set()
    assert sampler._thread is not None
    sampler._thread.join()


def test_shares_come_from_deltas_of_cpu_times() -> None:
    worker = FakeProcess(11, [0.0, 0.1, 0.2])
    root = FakeProcess(10, [0.0, 0.0, 0.0], kids=[worker])
    sampler = driven_sampler(
        times=[
            [cpu(idle=100.0), cpu(idle=100.0)],
            [
                cpu(user=0.08, system=0.02, idle=100.0),
                cpu(softirq=0.05, iowait=0.05, idle=100.0),
            ],  # fmt: skip
            [
                cpu(user=0.16, system=0.04, idle=100.0),
                cpu(softirq=0.10, iowait=0.05, idle=100.05),
            ],  # fmt: skip
        ],
        clock=[0.0, 0.1, 0.2],
        procs={10: root},
    )
    drive_by_hand(sampler, 10)
    sampler.sample_once()
    sampler.sample_once()
    trace = sampler.stop()
    first, second = trace.samples
    assert first.cpus[0] == [80.0, 0.0, 20.0, 0.0, 0.0, 0.0, 0.0, 0.0]
    assert first.cpus[1] == [0.0, 0.0, 0.0, 0.0, 50.0, 50.0, 0.0, 0.0]
    assert second.cpus[1] == [0.0, 0.0, 0.0, 0.0, 50.0, 0.0, 0.0, 50.0]
    assert first.workers == {"10": 0.0, "11": 100.0}
    summary = trace.stats()
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
    summary = trace.stats(skip_s=0.15)
    assert summary.samples == 2
    assert summary.cpu_busy_pct == 20.0
    assert summary.fio_worker_max_pid == 6 and summary.fio_worker_max_pct == 40.0
    assert trace.stats(skip_s=5.0) is None
    again = CpuTrace.model_validate_json(trace.model_dump_json())
    assert again == trace


def test_a_vanished_worker_is_dropped_not_fatal() -> None:
    worker = FakeProcess(21, [0.0, 0.05])  # exits after two readings
    root = FakeProcess(20, [0.0, 0.0, 0.0, 0.0], kids=[worker])
    sampler = driven_sampler(
        times=[[cpu(idle=1.0)]] * 4, clock=[0.0, 0.1, 0.2, 0.3], procs={20: root}
    )
    drive_by_hand(sampler, 20)
    sampler.sample_once()
    root.kids = []
    sampler.sample_once()
    trace = sampler.stop()
    assert trace.samples[0].workers == {"20": 0.0, "21": 50.0}
    assert trace.samples[1].workers == {"20": 0.0}
    assert trace.errors == 0


def test_each_thread_of_a_process_is_a_worker_of_its_own() -> None:
    """fio with thread=1: three job threads at half a core each are three workers at 50 %,
    not one at 150 %; a thread started between samples counts from the next sample."""
    fio = FakeThreadedProcess(30, [
        {30: 0.0, 31: 0.0, 32: 0.0, 33: 0.0},  # start()
        {30: 0.0, 31: 0.05, 32: 0.05, 33: 0.05},
        {30: 0.001, 31: 0.10, 32: 0.10, 33: 0.10, 34: 0.5},  # thread 34 appears
        {30: 0.001, 31: 0.15, 32: 0.15, 33: 0.15, 34: 0.55},
    ])  # fmt: skip
    schedstat = {tid: [0.0, 0.1, 0.2, 0.3] for tid in (31, 32, 33)}
    schedstat.update({30: [0.0, 0.0, 0.001, 0.001], 34: [0.6, 0.65]})
    sampler = driven_sampler(
        times=[[cpu(user=0.0), cpu(user=0.0)]]
        + [[cpu(user=0.075 * n, idle=0.025 * n), cpu(user=0.075 * n, idle=0.025 * n)]
           for n in (1, 2, 3)],
        clock=[0.0, 0.1, 0.2, 0.3],
        procs={30: fio},
        schedstat=schedstat,
    )  # fmt: skip
    drive_by_hand(sampler, 30)
    for _ in range(3):
        sampler.sample_once()
    trace = sampler.stop()
    assert [sorted(s.workers, key=int) for s in trace.samples] == [
        ["30", "31", "32", "33"], ["30", "31", "32", "33"], ["30", "31", "32", "33", "34"],
    ]  # fmt: skip
    assert trace.samples[0].workers == {"30": 0.0, "31": 50.0, "32": 50.0, "33": 50.0}
    assert trace.samples[2].workers["34"] == 50.0
    assert trace.samples[0].runnable == {"30": 0.0, "31": 100.0, "32": 100.0, "33": 100.0}
    assert set(trace.worker_names) == {"30", "31", "32", "33", "34"}
    assert set(trace.worker_names.values()) == {"fio"}
    summary = trace.stats()
    assert summary is not None
    assert summary.fio_worker_max_pct == 50.0  # one thread, not the process's 150 %
    assert summary.fio_worker_max_runnable_pct == 100.0
    assert len(summary.workers) == 5
    assert summary.fio_workers_total_cores == round((1.5 + 1.51 + 2.0) / 3, 2)
    verdict = judge(summary, 50.0, 0.0, cpu_count=2)
    assert verdict.cpu_bound is True and verdict.reason is not None
    assert "runnable 100 %" in verdict.reason
    assert "% of one core" not in verdict.reason  # no single worker was at a full core


def test_a_process_whose_threads_cannot_be_read_is_one_worker() -> None:
    hidden = FakeProcess(40, [0.0, 0.08])
    hidden.threads = lambda: (_ for _ in ()).throw(psutil.AccessDenied(40))  # type: ignore
    sampler = driven_sampler(times=[[cpu(idle=1.0)]] * 2, clock=[0.0, 0.1], procs={40: hidden})
    drive_by_hand(sampler, 40)
    sampler.sample_once()
    assert sampler.stop().samples[0].workers == {"40": 80.0}


class FakeClock:
    """Monotonic time that moves by `step` on each reading."""

    def __init__(self, step: float):
        self.step = step
        self.now = -step

    def __call__(self) -> float:
        self.now += self.step
        return round(self.now, 6)


class CountingStop:
    """Stands in for the sampler's stop event: records each wait and ends after `rounds`."""

    def __init__(self, rounds: int):
        self.rounds = rounds
        self.waits: list[float | None] = []

    def wait(self, timeout: float | None = None) -> bool:
        self.waits.append(timeout)
        return len(self.waits) > self.rounds

    def set(self) -> None:
        self.rounds = 0


@pytest.mark.parametrize("interval", [0.05, 0.1])
def test_the_loop_waits_one_interval_per_sample(interval: float) -> None:
    sampler = CpuSampler(
        interval_s=interval, clock=FakeClock(interval), cpu_times=lambda: [cpu(idle=1.0)]
    )
    stop = CountingStop(rounds=7)
    sampler._stop = stop  # type: ignore[assignment]
    sampler.start(None)
    assert sampler._thread is not None
    sampler._thread.join(timeout=PATIENCE_S)
    trace = sampler.stop()
    assert stop.waits == [interval] * 8  # seven samples, then the wait that saw the stop
    assert [s.t_s for s in trace.samples] == [round(interval * n, 3) for n in range(1, 8)]
    assert trace.interval_s == interval and trace.errors == 0
    assert trace.sampler_cpu_pct is not None


def test_shares_use_the_time_that_really_passed() -> None:
    """A late sample divides by the time since the previous one, not the nominal interval;
    a sample with no time passed is not taken."""
    worker = FakeProcess(51, [0.0, 0.05, 0.15, 0.15])
    root = FakeProcess(50, [0.0] * 4, kids=[worker])
    sampler = driven_sampler(
        times=[[cpu(idle=1.0)], [cpu(user=0.05, idle=1.05)], [cpu(user=0.15, idle=1.15)],
               [cpu(user=0.15, idle=1.15)]],
        clock=[0.0, 0.1, 0.3, 0.3],
        procs={50: root},
    )  # fmt: skip
    drive_by_hand(sampler, 50)
    for _ in range(3):
        sampler.sample_once()
    trace = sampler.stop()
    assert [s.t_s for s in trace.samples] == [0.1, 0.3]
    assert [s.workers["51"] for s in trace.samples] == [50.0, 50.0]
    assert trace.samples[1].cpus[0][CATEGORIES.index("user")] == 50.0


def wait_for_samples(sampler: CpuSampler, count: int) -> None:
    """Block until the running sampler holds `count` samples (however slow this machine)."""
    deadline = time.monotonic() + PATIENCE_S
    while len(sampler._trace.samples if sampler._trace else []) < count:
        assert time.monotonic() < deadline, f"fewer than {count} samples in {PATIENCE_S} s"
        time.sleep(0.05)


@pytest.fixture
def busy_and_idle() -> Iterator[tuple[int, int, int]]:
    """A parent process with two children: one spinning on a CPU, one asleep.

    Yields (parent, busy, idle) pids; all three are killed after the test.
    """
    script = (
        "import subprocess, sys, time\n"
        "busy = subprocess.Popen([sys.executable, '-c', 'while True: pass'])\n"
        "idle = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(3600)'])\n"
        "print(busy.pid, idle.pid, flush=True)\n"
        "time.sleep(3600)\n"
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
        start_new_session=True,  # one process group: killed together
    )  # fmt: skip
    try:
        assert parent.stdout is not None
        busy, idle = map(int, parent.stdout.readline().split())
        yield parent.pid, busy, idle
    finally:
        os.killpg(parent.pid, signal.SIGKILL)
        parent.wait()


def test_a_busy_process_is_told_from_a_sleeping_one(busy_and_idle: tuple[int, int, int]) -> None:
    """Whatever share of a CPU other work leaves it, a spinning process is the busiest worker
    and runnable most of the time, a sleeping one almost never."""
    parent, busy, idle = busy_and_idle
    sampler = CpuSampler(interval_s=0.1)
    sampler.start(parent)
    wait_for_samples(sampler, 20)
    trace = sampler.stop()
    assert sampler.stop() is trace  # idempotent
    assert trace.errors == 0
    summary = trace.stats()
    assert summary is not None
    workers = {w.pid: w for w in summary.workers}
    assert {parent, busy, idle} <= set(workers)
    assert workers[busy].samples == workers[idle].samples == summary.samples
    assert summary.fio_worker_max_pid == busy
    assert workers[busy].mean_pct > workers[idle].mean_pct
    if Path(f"/proc/{os.getpid()}/task/{os.getpid()}/schedstat").exists():
        assert summary.fio_worker_max_runnable_pid == busy
        busy_runnable, idle_runnable = workers[busy].runnable_pct, workers[idle].runnable_pct
        assert busy_runnable is not None and idle_runnable is not None
        assert busy_runnable >= 50.0 and idle_runnable <= 10.0, (busy_runnable, idle_runnable)


def test_a_process_that_is_gone_before_sampling_gives_an_empty_but_valid_trace() -> None:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    sampler = CpuSampler(interval_s=0.05)
    sampler.start(child.pid)
    wait_for_samples(sampler, 3)
    trace = sampler.stop()
    assert len(trace.samples) >= 3 and trace.errors == 0
    assert all(s.workers == {} and s.runnable == {} for s in trace.samples)
    assert trace.worker_names == {}
    assert all(len(s.cpus) == trace.cpu_count == psutil.cpu_count() for s in trace.samples)
    summary = trace.stats()
    assert summary is not None and summary.samples == len(trace.samples)
    assert summary.fio_worker_max_pct is None and summary.fio_workers_total_cores is None
    assert summary.workers == []


# --- the direct /proc readers ------------------------------------------------------------

LINUX_PROC = pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="needs Linux /proc")


def test_a_proc_stat_cpu_line_is_read_in_category_order() -> None:
    """Steal is its own category; guest and guest_nice are left out (the kernel counts them
    in user and nice already); a column an old kernel does not write is 0."""
    data = (
        b"cpu  30 2 13 400 5 0 7 9 11 0\n"
        b"cpu0 10 1 3 200 4 0 5 6 7 0\n"  # user nice system idle iowait irq softirq steal ...
        b"cpu1 20 1 10 200 1 8 2 3 4 1\n"
        b"cpu3 5 0 1 90 0 0 0\n"  # an old kernel: no steal; CPU2 is offline
        b"intr 12345 0 0 1 cpu 2\n"
        b"ctxt 99\n"
    )
    rows = sampler.parse_cpu_lines(data)
    assert [dict(zip(CATEGORIES, row, strict=True)) for row in rows] == [
        {"user": 10, "nice": 1, "system": 3, "irq": 0, "softirq": 5, "iowait": 4, "steal": 6,
         "idle": 200},
        {"user": 20, "nice": 1, "system": 10, "irq": 8, "softirq": 2, "iowait": 1, "steal": 3,
         "idle": 200},
        {"user": 5, "nice": 0, "system": 1, "irq": 0, "softirq": 0, "iowait": 0, "steal": 0,
         "idle": 90},
    ]  # fmt: skip


def test_a_proc_stat_line_is_read_whatever_the_name_holds() -> None:
    name, fields = sampler.parse_stat(b"42 (a) b (c) S 1 42 42 0 -1 4194560 0 0 0 0 17 3 0 0\n")
    assert name == "a) b (c"
    assert fields[0] == b"S" and int(fields[1]) == 1  # the state, then the parent pid
    assert sampler._stat_seconds(fields) == (17 / sampler._TICKS, 3 / sampler._TICKS)
    with pytest.raises(ValueError):
        sampler.parse_stat(b"")


@LINUX_PROC
def test_the_direct_cpu_times_are_psutils() -> None:
    files = sampler.ProcFiles()
    try:
        before = psutil.cpu_times(percpu=True)
        ours = files.cpu_times()
        after = psutil.cpu_times(percpu=True)
        again = files.cpu_times()  # read again through the kept descriptor
    finally:
        files.close()
    assert len(ours) == len(again) == len(before) == psutil.cpu_count()
    tick = 1 / sampler._TICKS
    for low, row, high, later in zip(before, ours, after, again, strict=True):
        for name, value, next_value in zip(CATEGORIES, row, later, strict=True):
            seconds = value / sampler._TICKS
            assert getattr(low, name) - tick / 2 <= seconds <= getattr(high, name) + tick / 2
            assert next_value >= value


@LINUX_PROC
def test_the_direct_process_reader_agrees_with_psutil() -> None:
    """Name, children and per-thread CPU seconds of a real process tree."""
    files = sampler.ProcFiles()
    me = psutil.Process()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        proc = sampler.ProcProcess(files, os.getpid())
        assert proc.name() == me.name()
        assert child.pid in [p.pid for p in proc.children(recursive=True)]
        assert {p.pid for p in proc.children(recursive=True)} == {
            p.pid for p in me.children(recursive=True)
        }
        before = {t.id: t.user_time + t.system_time for t in me.threads()}
        files.new_sample()
        ours = dict(proc.thread_seconds())
        after = {t.id: t.user_time + t.system_time for t in me.threads()}
        assert set(ours) == set(before) == set(after)
        tick = 1 / sampler._TICKS
        for tid, seconds in ours.items():  # on-CPU nanoseconds against clock ticks
            assert before[tid] - tick <= seconds <= after[tid] + 2 * tick, tid
            assert proc.runnable_seconds(tid) is None or proc.runnable_seconds(tid) >= seconds
        low, times, high = me.cpu_times(), proc.cpu_times(), me.cpu_times()
        assert low.user <= times.user <= high.user and low.system <= times.system <= high.system
    finally:
        child.kill()
        child.wait()
        files.close()


@LINUX_PROC
def test_threads_that_start_and_end_are_followed_and_their_files_closed() -> None:
    files = sampler.ProcFiles()
    proc = sampler.ProcProcess(files, os.getpid())
    done = threading.Event()
    worker = threading.Thread(target=done.wait)
    try:
        files.new_sample()
        tids = [tid for tid, _ in proc.thread_seconds()]
        worker.start()
        assert worker.native_id is not None
        files.new_sample()  # a thread was started: listed again
        assert worker.native_id in [tid for tid, _ in proc.thread_seconds()]
        kept = f"/proc/{os.getpid()}/task/{worker.native_id}/"
        assert any(path.startswith(kept) for path in files._fds)
        done.set()
        worker.join()
        gone = time.monotonic() + PATIENCE_S  # join() returns a moment before the thread ends
        while Path(f"/proc/{os.getpid()}/task/{worker.native_id}").exists():
            assert time.monotonic() < gone, "the thread never ended"
            time.sleep(0.01)
        files.new_sample()  # nothing started: the list is kept, the ended thread noticed
        assert [tid for tid, _ in proc.thread_seconds()] == tids
        assert not any(path.startswith(kept) for path in files._fds)
    finally:
        done.set()
        files.close()
    assert files._fds == {}


@LINUX_PROC
def test_a_process_that_ends_raises_lookup_error_and_keeps_no_files() -> None:
    files = sampler.ProcFiles()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    proc = sampler.ProcProcess(files, child.pid)
    files.new_sample()
    assert [tid for tid, _ in proc.thread_seconds()] == [child.pid]
    assert proc.runnable_seconds(child.pid) is not None
    child.kill()
    child.wait()
    files.new_sample()
    with pytest.raises(ProcessLookupError):
        proc.thread_seconds()
    assert files._fds.keys() <= {"/proc/loadavg"}
    with pytest.raises(ProcessLookupError):
        sampler.ProcProcess(files, child.pid).name()
    with pytest.raises(ProcessLookupError):
        proc.cpu_times()
    assert sampler.ProcProcess(files, child.pid).children(recursive=True) == []
    files.close()


@LINUX_PROC
def test_other_processes_leave_kernel_threads_out() -> None:
    files = sampler.ProcFiles()
    found = files.user_processes()
    again = files.user_processes()  # kernel threads known: not read again
    me = psutil.Process()
    assert found[os.getpid()][0] == me.name() and os.getpid() in again
    assert found[os.getpid()][1] >= me.cpu_times().user - 1 / sampler._TICKS
    kernel = [p.pid for p in psutil.process_iter(["ppid"]) if p.info["ppid"] == 2] + [2]
    assert not set(kernel) & set(found) and not set(kernel) & set(again)


@LINUX_PROC
def test_a_sampled_worker_that_ends_is_dropped_without_an_error() -> None:
    """With the direct readers: the worker's samples stop, its files are closed."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    sampler_ = CpuSampler(interval_s=0.1)
    drive_by_hand(sampler_, child.pid)
    sampler_.sample_once()
    assert child.pid in sampler_._tracked
    child.kill()
    child.wait()
    sampler_.sample_once()
    assert child.pid not in sampler_._tracked
    trace = sampler_.stop()
    assert trace.errors == 0
    assert str(child.pid) in trace.samples[0].workers
    assert trace.samples[1].workers == {}
    assert list(trace.worker_names) == [str(child.pid)] and trace.worker_names[str(child.pid)]
    assert sampler_._files._fds == {}


@LINUX_PROC
def test_past_the_descriptor_budget_files_are_opened_for_each_read() -> None:
    files = sampler.ProcFiles(keep=0)
    proc = sampler.ProcProcess(files, os.getpid())
    for _ in range(2):
        files.new_sample()
        assert len(files.cpu_times()) == psutil.cpu_count()
        assert os.getpid() in dict(proc.thread_seconds())
        assert proc._thread_count() == len(psutil.Process().threads())
    assert files._fds == {}
