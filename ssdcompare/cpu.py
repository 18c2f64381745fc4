"""CPU sampling while fio runs: per-CPU busy shares and the CPU use of each fio worker.

fio's own usr_cpu/sys_cpu covers only its job threads; interrupt and softirq work, kernel
workers (loop, zram, io_uring SQPOLL) and other processes are invisible to it. A background
thread samples /proc through psutil at >= 10 Hz so a CPU limit can be seen whatever its cause.

A "worker" is one thread of fio: a job is a process of its own by default and a thread of the
main fio process with thread=1; sampling threads judges both the same way (a process holding
four job threads at 50 % each is at 200 %, yet no job is CPU-bound on its own).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ssdcompare.errors import NewerFormatError, SsdcompareError

TRACE_FORMAT_VERSION = 2

# Per-CPU categories stored in each sample, in this order (percent of that CPU's time).
CATEGORIES = ("user", "nice", "system", "irq", "softirq", "iowait", "steal", "idle")
# Refresh the list of fio's processes every sample at first (workers fork at start-up), then
# only every Nth sample: scanning /proc is the sampler's largest cost.
_EARLY_REFRESH_S = 2.0
_LATE_REFRESH_EVERY = 10


class CpuSample(BaseModel):
    """One sampling interval."""

    model_config = ConfigDict(extra="forbid")

    t_s: float  # end of the interval, seconds since the sampler started
    cpus: list[list[float]]  # per CPU, CATEGORIES in order, percent of the interval
    # thread id -> percent of one core (format 1 traces: process id)
    workers: dict[str, float] = Field(default_factory=dict)
    # thread id -> percent of the interval it was runnable: on a CPU or waiting in the run
    # queue for one (/proc schedstat). A CPU-bound thread is runnable ~100 % even when other
    # processes leave it less than a full core; a thread waiting on the device is not.
    runnable: dict[str, float] = Field(default_factory=dict)


class CpuShare(BaseModel):
    """One CPU's mean shares over a summarised period."""

    index: int
    busy_pct: float
    user_pct: float
    nice_pct: float
    system_pct: float
    irq_pct: float
    softirq_pct: float
    iowait_pct: float
    steal_pct: float


class WorkerShare(BaseModel):
    pid: int  # the thread id (a process id in format 1 traces)
    name: str | None
    mean_pct: float
    max_pct: float
    samples: int
    runnable_pct: float | None = None  # mean share of time runnable (on or waiting for a CPU)


class CpuSummary(BaseModel):
    """What the CPU-bound judgement reads: means over the measured period."""

    samples: int
    duration_s: float
    cpu_count: int
    cpu_busy_pct: float | None  # mean over all CPUs
    cpu_max_busy_pct: float | None
    cpu_max_busy_index: int | None
    irq_softirq_max_pct: float | None
    irq_softirq_max_index: int | None
    fio_worker_max_pct: float | None  # the busiest fio thread, mean over its samples
    fio_worker_max_pid: int | None
    # the most runnable fio thread: on a CPU or waiting for one, mean share of the time
    fio_worker_max_runnable_pct: float | None = None
    fio_worker_max_runnable_pid: int | None = None
    fio_workers_total_cores: float | None  # all fio processes together, in cores
    per_cpu: list[CpuShare]
    workers: list[WorkerShare]


class CpuTrace(BaseModel):
    """All samples of one fio run; stored as cpu.json next to fio's output."""

    model_config = ConfigDict(extra="allow")

    format_version: int = TRACE_FORMAT_VERSION
    interval_s: float
    cpu_count: int
    categories: list[str] = Field(default_factory=lambda: list(CATEGORIES))
    samples: list[CpuSample] = Field(default_factory=list)
    worker_names: dict[str, str] = Field(default_factory=dict)
    sampler_cpu_pct: float | None = None  # the sampler thread's own CPU use, % of one core
    errors: int = 0  # samples that failed (recorded, never fatal)

    @field_validator("format_version")
    @classmethod
    def _known_version(cls, version: int) -> int:
        if version > TRACE_FORMAT_VERSION:
            raise ValueError(
                f"CPU samples in format {version}; this ssdcompare reads up to "
                f"{TRACE_FORMAT_VERSION}: upgrade ssdcompare"
            )
        return version

    def summary(self, skip_s: float = 0.0) -> CpuSummary | None:
        """Means over the samples after `skip_s` (fio start-up and ramp); None if none."""
        kept = [s for s in self.samples if s.t_s > skip_s]
        if not kept:
            return None
        index = {name: i for i, name in enumerate(self.categories)}
        shares = []
        for cpu in range(self.cpu_count):
            rows = [s.cpus[cpu] for s in kept if cpu < len(s.cpus)]
            if not rows:
                continue
            mean = {name: sum(r[i] for r in rows) / len(rows) for name, i in index.items()}
            busy = 100.0 - mean["idle"] - mean["iowait"]
            shares.append(
                CpuShare(index=cpu, busy_pct=round(busy, 1),
                         **{f"{k}_pct": round(v, 1) for k, v in mean.items() if k != "idle"})
            )  # fmt: skip
        workers: dict[str, list[float]] = {}
        runnable: dict[str, list[float]] = {}
        for sample in kept:
            for pid, pct in sample.workers.items():
                workers.setdefault(pid, []).append(pct)
            for pid, pct in sample.runnable.items():
                runnable.setdefault(pid, []).append(pct)
        worker_shares = [
            WorkerShare(
                pid=int(pid),
                name=self.worker_names.get(pid),
                samples=len(values),
                mean_pct=round(sum(values) / len(values), 1),
                max_pct=round(max(values), 1),
                runnable_pct=_mean(runnable.get(pid)),
            )  # fmt: skip
            for pid, values in workers.items()
        ]
        busiest_cpu = max(shares, key=lambda s: s.busy_pct, default=None)
        irq_cpu = max(shares, key=lambda s: s.irq_pct + s.softirq_pct, default=None)
        busiest_worker = max(worker_shares, key=lambda w: w.mean_pct, default=None)
        most_runnable = max(
            (w for w in worker_shares if w.runnable_pct is not None),
            key=lambda w: w.runnable_pct or 0.0, default=None,
        )  # fmt: skip
        total = sum(sum(s.workers.values()) for s in kept) / len(kept) / 100 if workers else None
        return CpuSummary(
            samples=len(kept),
            duration_s=round(kept[-1].t_s - (kept[0].t_s - self.interval_s), 2),
            cpu_count=self.cpu_count,
            cpu_busy_pct=round(sum(s.busy_pct for s in shares) / len(shares), 1)
            if shares else None,
            cpu_max_busy_pct=busiest_cpu.busy_pct if busiest_cpu else None,
            cpu_max_busy_index=busiest_cpu.index if busiest_cpu else None,
            irq_softirq_max_pct=round(irq_cpu.irq_pct + irq_cpu.softirq_pct, 1)
            if irq_cpu else None,
            irq_softirq_max_index=irq_cpu.index if irq_cpu else None,
            fio_worker_max_pct=busiest_worker.mean_pct if busiest_worker else None,
            fio_worker_max_pid=busiest_worker.pid if busiest_worker else None,
            fio_worker_max_runnable_pct=most_runnable.runnable_pct if most_runnable else None,
            fio_worker_max_runnable_pid=most_runnable.pid if most_runnable else None,
            fio_workers_total_cores=round(total, 2) if total is not None else None,
            per_cpu=shares,
            workers=sorted(worker_shares, key=lambda w: -w.mean_pct),
        )  # fmt: skip


def _mean(values: list[float] | None) -> float | None:
    return round(sum(values) / len(values), 1) if values else None


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
    ) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._cpu_times = cpu_times
        self._process = process
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._trace: CpuTrace | None = None
        self._root_pid: int | None = None
        self._tracked: dict[int, Any] = {}  # pid -> process
        self._thread_seconds: dict[int, float] = {}  # tid -> CPU seconds at the last sample
        self._thread_runnable: dict[int, float] = {}  # tid -> schedstat run + wait seconds
        self._schedstat = schedstat
        self._started = 0.0
        self._last = 0.0
        self._last_times: list[Any] = []
        self._count = 0

    def start(self, root_pid: int | None = None) -> None:
        """Begin sampling; `root_pid` is fio's main process (its children are the workers)."""
        self._root_pid = root_pid
        self._started = self._last = self._clock()
        self._last_times = self._cpu_times()
        self._trace = CpuTrace(interval_s=self.interval_s, cpu_count=len(self._last_times))
        self._refresh_workers()
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
        self._trace.samples.append(
            CpuSample(
                t_s=round(now - self._started, 3),
                cpus=_shares(self._last_times, times),
                workers=workers,
                runnable=runnable,
            )
        )
        self._last, self._last_times = now, times
        self._count += 1
        early = now - self._started < _EARLY_REFRESH_S
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

    def _refresh_workers(self) -> None:
        if self._root_pid is None or self._trace is None:
            return
        try:
            root = self._process(self._root_pid)
            found = [root, *root.children(recursive=True)]
        except (psutil.Error, OSError):
            return
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


def read_trace(path: Path) -> CpuTrace:
    """A stored cpu.json; SsdcompareError when it is damaged, NewerFormatError when a newer
    ssdcompare wrote it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise SsdcompareError(f"{path} cannot be read: {err}") from None
    version = data.get("format_version", 1) if isinstance(data, dict) else 1
    if isinstance(version, int) and version > TRACE_FORMAT_VERSION:
        raise NewerFormatError(
            f"{path} holds CPU samples in format {version}; this ssdcompare reads up to "
            f"{TRACE_FORMAT_VERSION}: upgrade ssdcompare (pip install -U ssdcompare)"
        )
    try:
        return CpuTrace.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        problem = first["msg"].removeprefix("Value error, ")
        where = f"{where}: " if where else ""
        raise SsdcompareError(f"{path} cannot be read: {where}{problem}") from None
