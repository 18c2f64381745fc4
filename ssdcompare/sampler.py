"""Sampling the CPU while fio runs: per-CPU busy shares and the CPU use of each fio worker.

fio's own usr_cpu/sys_cpu covers only its job threads; interrupt and softirq work, kernel
workers (loop, zram, io_uring SQPOLL) and other processes are invisible to it. A background
thread samples /proc through psutil at >= 10 Hz so a CPU limit can be seen whatever its cause.
The samples make a CpuTrace (ssdcompare.cpu), which the runner stores as cpu.json.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from typing import Any

import psutil

from ssdcompare.cpu import CATEGORIES, CpuSample, CpuTrace

# Refresh the list of fio's processes every sample at first (workers fork at start-up), then
# only every Nth sample: scanning /proc is the sampler's largest cost.
_EARLY_REFRESH_S = 2.0
# a fio server forks a job's processes only after the client has connected and sent it
_EARLY_REFRESH_SERVER_S = 10.0
_LATE_REFRESH_EVERY = 10
# Other processes' CPU use (not fio, not ssdcompare, not kernel threads) is read from every
# /proc/<pid>/stat every this many samples: a busy neighbour disturbs a measurement.
_OTHERS_EVERY = 10
_PF_KTHREAD = 0x00200000  # /proc/<pid>/stat flags: a kernel thread
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _cpu_fields(times: Any) -> list[float]:
    # psutil on Linux counts guest time inside user and nice already: leave guest out
    return [float(getattr(times, name, 0.0)) for name in CATEGORIES]


def _shares(before: list[Any], after: list[Any]) -> list[list[float]]:
    result = []
    for old, new in zip(before, after, strict=False):
        deltas = [max(b - a, 0.0) for a, b in zip(_cpu_fields(old), _cpu_fields(new), strict=True)]
        total = sum(deltas)
        if total <= 0:
            result.append([0.0] * (len(CATEGORIES) - 1) + [100.0])
        else:
            result.append([round(d / total * 100, 1) for d in deltas])
    return result


class CpuSampler:
    """Samples CPU use in a background thread between start(root_pid) and stop().

    Inject `cpu_times` (per-CPU times, like psutil.cpu_times(percpu=True)), `process`
    (pid -> psutil.Process-like), `schedstat` ((pid, tid) -> seconds runnable, or None) and
    `clock` to drive it deterministically in tests.
    """

    def __init__(
        self,
        interval_s: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
        cpu_times: Callable[[], list[Any]] = lambda: psutil.cpu_times(percpu=True),
        process: Callable[[int], Any] = psutil.Process,
        schedstat: Callable[[int, int], float | None] | None = None,
        others: Callable[[], dict[int, tuple[str, float]]] | None = None,
    ) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._cpu_times = cpu_times
        self._process = process
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._trace: CpuTrace | None = None
        self._root_pid: int | None = None
        self._servers: tuple[int, ...] = ()
        self._tracked: dict[int, Any] = {}  # pid -> process
        self._thread_seconds: dict[int, float] = {}  # tid -> CPU seconds at the last sample
        self._thread_runnable: dict[int, float] = {}  # tid -> schedstat run + wait seconds
        self._schedstat = schedstat
        self._others = others if others is not None else _user_processes
        self._others_seconds: dict[int, tuple[str, float]] = {}  # pid -> (name, CPU seconds)
        self._others_at = 0.0
        self._started = 0.0
        self._last = 0.0
        self._last_times: list[Any] = []
        self._count = 0

    def start(self, root_pid: int | None = None, *servers: int) -> None:
        """Begin sampling; `root_pid` is fio's main process (its children are the workers).
        `servers` are the pids of local fio servers a client `root_pid` runs its jobs on:
        their children are the workers then."""
        self._root_pid = root_pid
        self._servers = servers
        self._started = self._last = self._clock()
        self._last_times = self._cpu_times()
        self._trace = CpuTrace(interval_s=self.interval_s, cpu_count=len(self._last_times))
        self._refresh_workers()
        self._others_seconds, self._others_at = self._others(), self._started
        self._thread = threading.Thread(target=self._loop, name="ssdcompare-cpu", daemon=True)
        self._thread.start()

    def stop(self) -> CpuTrace:
        """Stop sampling and return the trace (safe to call more than once)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        if self._trace is None:
            self._trace = CpuTrace(interval_s=self.interval_s, cpu_count=0)
        return self._trace

    def sample_once(self) -> None:
        """Take one sample now (the thread calls this each interval; tests call it directly)."""
        assert self._trace is not None, "start() first"
        now = self._clock()
        times = self._cpu_times()
        wall = now - self._last
        if wall <= 0:
            return
        workers, runnable = self._worker_shares(wall)
        sample = CpuSample(
            t_s=round(now - self._started, 3),
            cpus=_shares(self._last_times, times),
            workers=workers,
            runnable=runnable,
        )
        self._last, self._last_times = now, times
        self._count += 1
        if self._count % _OTHERS_EVERY == 0:
            sample.others_pct, sample.others_top = self._other_processes(now)
        self._trace.samples.append(sample)
        window = _EARLY_REFRESH_SERVER_S if self._servers else _EARLY_REFRESH_S
        early = now - self._started < window
        if early or self._count % _LATE_REFRESH_EVERY == 0:
            self._refresh_workers()

    def _loop(self) -> None:
        assert self._trace is not None
        cpu_start, wall_start = time.thread_time(), time.monotonic()
        while not self._stop.wait(self.interval_s):
            try:
                self.sample_once()
            except Exception:  # a collector never fails the run: count and go on
                self._trace.errors += 1
        wall = time.monotonic() - wall_start
        if wall > 0:
            self._trace.sampler_cpu_pct = round((time.thread_time() - cpu_start) / wall * 100, 2)

    def _other_processes(self, now: float) -> tuple[float | None, str | None]:
        """CPU used since the last look by processes that are neither fio's nor ours, in %
        of one core, and the busiest of them in words."""
        current = self._others()
        wall = now - self._others_at
        before, self._others_seconds, self._others_at = self._others_seconds, current, now
        if wall <= 0:
            return None, None
        ours = {os.getpid(), *self._tracked}
        used = {
            pid: (name, seconds - before[pid][1])
            for pid, (name, seconds) in current.items()
            if pid in before and pid not in ours and seconds >= before[pid][1]
        }  # fmt: skip
        total = sum(delta for _, delta in used.values()) / wall * 100
        top = max(used.items(), key=lambda item: item[1][1], default=None)
        words = None
        if top is not None and top[1][1] > 0:
            words = f"{top[1][0]} (pid {top[0]}) {top[1][1] / wall * 100:.0f} %"
        return round(total, 1), words

    def _refresh_workers(self) -> None:
        if self._root_pid is None or self._trace is None:
            return
        found = []
        for pid in (self._root_pid, *self._servers):
            try:
                root = self._process(pid)
                found += [root, *root.children(recursive=True)]
            except (psutil.Error, OSError):
                continue
        for proc in found:
            if proc.pid in self._tracked:
                continue
            try:
                name = proc.name()
                threads = _threads(proc)
            except (psutil.Error, OSError):
                continue
            self._tracked[proc.pid] = proc
            for tid, seconds in threads:
                self._thread_seconds[tid] = seconds
                self._note_runnable(proc.pid, tid)
                self._trace.worker_names[str(tid)] = name

    def _note_runnable(self, pid: int, tid: int) -> float | None:
        """Record the thread's runnable seconds; return how many passed since last time."""
        reader = self._schedstat if self._schedstat is not None else _schedstat_seconds
        now = reader(pid, tid)
        if now is None:
            return None
        before = self._thread_runnable.get(tid)
        self._thread_runnable[tid] = now
        return None if before is None else max(now - before, 0.0)

    def _worker_shares(self, wall: float) -> tuple[dict[str, float], dict[str, float]]:
        shares: dict[str, float] = {}
        runnable: dict[str, float] = {}
        assert self._trace is not None
        for pid, proc in list(self._tracked.items()):
            try:
                threads = _threads(proc)
                name = None
            except (psutil.Error, OSError):
                del self._tracked[pid]  # the worker exited
                continue
            for tid, used in threads:
                before = self._thread_seconds.get(tid)
                self._thread_seconds[tid] = used
                waited = self._note_runnable(pid, tid)
                if waited is not None and before is not None:
                    runnable[str(tid)] = round(min(waited / wall * 100, 100.0), 1)
                if before is None:  # a thread started since the last sample: next time
                    if name is None:
                        name = self._trace.worker_names.get(str(pid)) or _name(proc)
                    self._trace.worker_names[str(tid)] = name
                    continue
                shares[str(tid)] = round(max(used - before, 0.0) / wall * 100, 1)
        return shares, runnable


def _schedstat_seconds(pid: int, tid: int) -> float | None:
    """Seconds a thread has been runnable: on a CPU plus waiting in a run queue (Linux
    /proc/<pid>/task/<tid>/schedstat; None where the kernel does not keep it)."""
    try:
        with open(f"/proc/{pid}/task/{tid}/schedstat", "rb") as handle:
            on_cpu, waiting = handle.read().split()[:2]
        return (int(on_cpu) + int(waiting)) / 1e9
    except (OSError, ValueError):
        return None


def _threads(proc: Any) -> list[tuple[int, float]]:
    """(thread id, CPU seconds) for each thread of a process; the process as one thread where
    its threads cannot be read."""
    try:
        return [(t.id, t.user_time + t.system_time) for t in proc.threads()]
    except (AttributeError, psutil.AccessDenied):
        times = proc.cpu_times()
        return [(proc.pid, times.user + times.system)]


def _name(proc: Any) -> str:
    try:
        return str(proc.name())
    except (psutil.Error, OSError):
        return "?"


def _user_processes() -> dict[int, tuple[str, float]]:
    """pid -> (name, CPU seconds) of every process but kernel threads, from /proc/<pid>/stat."""
    found: dict[int, tuple[str, float]] = {}
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                text = handle.read().decode("utf-8", "replace")
        except OSError:
            continue
        # the name is in parentheses and may itself hold spaces or parentheses
        start, end = text.find("("), text.rfind(")")
        fields = text[end + 2 :].split()
        try:
            flags, utime, stime = int(fields[6]), int(fields[11]), int(fields[12])
        except (IndexError, ValueError):
            continue
        if flags & _PF_KTHREAD:
            continue
        found[int(entry)] = (text[start + 1 : end], (utime + stime) / _TICKS)
    return found
