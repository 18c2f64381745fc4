"""CPU use while fio ran, and the judgement: was a result limited by the CPU, not the device?

The models: `CpuSample` (one sampling interval), `CpuTrace` (all samples of one run, stored
as cpu.json) and `CpuStats` (means over the measured period). ssdcompare.run.sampler takes the
samples; this module only reads and judges them.

A "worker" is one thread of fio: a job is a process of its own by default and a thread of the
main fio process with thread=1; both are judged the same way (a process holding four job
threads at 50 % each is at 200 %, yet no job is CPU-bound on its own).

The CPU-bound rule, applied per run from the samples and fio's own figures:

1. one fio worker busy >= `worker_pct` (90 %) of one core: the single-thread case; at 4K
   QD128 one fio thread saturates a core and every fast drive "scores" the same. A worker that
   is runnable (on a CPU, or waiting in the run queue for one) >= 90 % of the time counts too:
   it never waits for the device, whatever share of a core other processes left it;
2. all CPUs together >= `machine_pct` (90 %) busy: numjobs >= cores, or other load. When
   the workload chose fio's CPUs (`cpus_allowed`, or a NUMA node's CPUs with
   `numa_cpu_nodes`: `ChosenCpus`), the chosen CPUs together, from their own per-CPU samples:
   two jobs pinned to one CPU of two leave the machine half idle with no CPU left for fio;
3. one CPU >= `irq_pct` (90 %) in irq + softirq: completion handling is the bottleneck. It
   stays machine-wide: completions land on whichever CPU the interrupt is routed to.

Any rule that fires marks the result CPU-bound; the reason says which, in words. Without CPU
samples, rule 1 uses fio's own usr+sys figure (percent of one core per job process), and rules 2
and 3 cannot be judged: then the result is "unknown" (None), never silently "not CPU-bound".
The same holds when the chosen CPUs are not known or none of them was sampled.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ssdcompare.errors import NewerFormatError, SsdcompareError, stored_validation_message

TRACE_FORMAT_VERSION = 4

# Per-CPU categories stored in each sample, in this order (percent of that CPU's time).
CATEGORIES = ("user", "nice", "system", "irq", "softirq", "iowait", "steal", "idle")


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
    # every few samples (format 3): CPU used since the last look by processes that are not
    # fio's or ssdcompare's (kernel threads left out), % of one core, and the busiest of them
    others_pct: float | None = None
    others_top: str | None = None


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


class CpuStats(BaseModel):
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
    steal_pct: float | None = None  # mean over all CPUs: time the hypervisor gave elsewhere
    iowait_pct: float | None = None  # mean over all CPUs: idle with I/O outstanding
    others_pct: float | None = None  # other processes, mean % of one core (format 3 traces)
    others_top: str | None = None  # the busiest of them at its busiest look
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
    # the CPUs fio's threads were seen on (looked at every few samples); compared with the
    # device's NUMA node. Empty in older traces and where it could not be read.
    worker_cpus: list[int] = Field(default_factory=list)
    # the number of the CPU each row of a sample's `cpus` belongs to (format 4: /proc/stat
    # leaves offline CPUs out, so row 2 may be CPU 3). Empty in older traces and where the
    # sampler was given its CPU times: then row i is CPU i.
    cpu_numbers: list[int] = Field(default_factory=list)
    # pid -> [first, last] sample time at which each of fio's job processes was seen: a run
    # of several sections one after the other (a PTS round) is cut by them. Empty in older
    # traces and where the sampler was given its processes.
    worker_spans: dict[str, list[float]] = Field(default_factory=dict)

    @field_validator("format_version")
    @classmethod
    def _known_version(cls, version: int) -> int:
        if version > TRACE_FORMAT_VERSION:
            raise ValueError(
                f"CPU samples in a newer format; this ssdcompare reads up to "
                f"{TRACE_FORMAT_VERSION}: upgrade ssdcompare"
            )
        return version

    def stats(self, skip_s: float = 0.0) -> CpuStats | None:
        """Means over the samples after `skip_s` (fio start-up and ramp); None if none."""
        kept = [s for s in self.samples if s.t_s > skip_s]
        if not kept:
            return None
        shares = _cpu_shares(kept, self.categories, self.cpu_count, self.cpu_numbers)
        workers = _worker_shares(kept, self.worker_names)
        busiest_cpu = max(shares, key=lambda s: s.busy_pct, default=None)
        irq_cpu = max(shares, key=lambda s: s.irq_pct + s.softirq_pct, default=None)
        busiest = max(workers, key=lambda w: w.mean_pct, default=None)
        most_runnable = max(
            (w for w in workers if w.runnable_pct is not None),
            key=lambda w: w.runnable_pct or 0.0, default=None,
        )  # fmt: skip
        total = sum(sum(s.workers.values()) for s in kept) / len(kept) / 100 if workers else None
        return CpuStats(
            samples=len(kept),
            duration_s=round(kept[-1].t_s - (kept[0].t_s - self.interval_s), 2),
            cpu_count=self.cpu_count,
            cpu_busy_pct=_mean([s.busy_pct for s in shares]),
            cpu_max_busy_pct=busiest_cpu.busy_pct if busiest_cpu else None,
            cpu_max_busy_index=busiest_cpu.index if busiest_cpu else None,
            irq_softirq_max_pct=round(irq_cpu.irq_pct + irq_cpu.softirq_pct, 1)
            if irq_cpu else None,
            irq_softirq_max_index=irq_cpu.index if irq_cpu else None,
            fio_worker_max_pct=busiest.mean_pct if busiest else None,
            fio_worker_max_pid=busiest.pid if busiest else None,
            fio_worker_max_runnable_pct=most_runnable.runnable_pct if most_runnable else None,
            fio_worker_max_runnable_pid=most_runnable.pid if most_runnable else None,
            fio_workers_total_cores=round(total, 2) if total is not None else None,
            steal_pct=_mean([s.steal_pct for s in shares]),
            iowait_pct=_mean([s.iowait_pct for s in shares]),
            others_pct=_mean([s.others_pct for s in kept if s.others_pct is not None]),
            others_top=_busiest_other(kept),
            per_cpu=shares,
            workers=sorted(workers, key=lambda w: -w.mean_pct),
        )  # fmt: skip


def _cpu_shares(
    kept: list[CpuSample], categories: list[str], cpu_count: int, numbers: list[int]
) -> list[CpuShare]:
    """Each CPU's mean share per category over the kept samples, named by its number (the
    trace's `cpu_numbers` where it holds one for every row)."""
    index = {name: i for i, name in enumerate(categories)}
    if len(numbers) != cpu_count:
        numbers = list(range(cpu_count))
    shares = []
    for cpu in range(cpu_count):
        rows = [s.cpus[cpu] for s in kept if cpu < len(s.cpus)]
        if not rows:
            continue
        mean = {name: sum(r[i] for r in rows) / len(rows) for name, i in index.items()}
        busy = 100.0 - mean["idle"] - mean["iowait"]
        shares.append(
            CpuShare(index=numbers[cpu], busy_pct=round(busy, 1),
                     **{f"{k}_pct": round(v, 1) for k, v in mean.items() if k != "idle"})
        )  # fmt: skip
    return shares


def _worker_shares(kept: list[CpuSample], names: dict[str, str]) -> list[WorkerShare]:
    """Each fio worker's mean and peak share of a core, and its mean runnable share."""
    busy: dict[str, list[float]] = {}
    runnable: dict[str, list[float]] = {}
    for sample in kept:
        for pid, pct in sample.workers.items():
            busy.setdefault(pid, []).append(pct)
        for pid, pct in sample.runnable.items():
            runnable.setdefault(pid, []).append(pct)
    return [
        WorkerShare(
            pid=int(pid),
            name=names.get(pid),
            samples=len(values),
            mean_pct=_mean(values) or 0.0,
            max_pct=round(max(values), 1),
            runnable_pct=_mean(runnable.get(pid)),
        )  # fmt: skip
        for pid, values in busy.items()
    ]


def _busiest_other(kept: list[CpuSample]) -> str | None:
    """The busiest other process at the look where others used the most CPU."""
    looked = [s for s in kept if s.others_pct is not None and s.others_top]
    return max(looked, key=lambda s: s.others_pct or 0.0).others_top if looked else None


def _mean(values: list[float] | None) -> float | None:
    return round(sum(values) / len(values), 1) if values else None


def trace_from(data: Any) -> CpuTrace:
    """The CPU samples of a stored cpu.json's JSON (ssdcompare.results.store reads the file);
    SsdcompareError when it is damaged, NewerFormatError when a newer ssdcompare wrote it.
    The messages never quote what the file holds."""
    version = data.get("format_version", 1) if isinstance(data, dict) else 1
    if isinstance(version, int) and version > TRACE_FORMAT_VERSION:
        raise NewerFormatError(
            f"holds CPU samples in a newer format than this ssdcompare reads (up to "
            f"{TRACE_FORMAT_VERSION}): upgrade ssdcompare (pip install -U ssdcompare)"
        )
    try:
        return CpuTrace.model_validate(data)
    except ValidationError as err:
        raise SsdcompareError(f"is damaged ({stored_validation_message(err, CpuTrace)})") from None


# --- the judgement ---------------------------------------------------------------------

_WORDS = {1: "the CPU", 2: "both CPUs"}


@dataclass(frozen=True)
class Thresholds:
    """Percentages at which each rule fires."""

    worker_pct: float = 90.0
    machine_pct: float = 90.0
    irq_pct: float = 90.0


@dataclass(frozen=True)
class CpuJudgement:
    """The judgement for one run: cpu_bound is None when there was nothing to judge on."""

    cpu_bound: bool | None
    reason: str | None


@dataclass(frozen=True)
class ChosenCpus:
    """The CPUs a workload gave fio's jobs, and how it chose them in words for a reason
    ("cpus_allowed", "numa_cpu_nodes=0"). `cpus` is None when they are not known (a NUMA
    node whose CPUs the manifest does not record)."""

    cpus: frozenset[int] | None
    how: str


def cpu_list(cpus: Iterable[int]) -> str:
    """CPU numbers as the kernel lists them: [0, 1, 2, 5] as "0-2,5"."""
    parts: list[str] = []
    numbers = sorted(set(cpus))
    while numbers:
        first = last = numbers.pop(0)
        while numbers and numbers[0] == last + 1:
            last = numbers.pop(0)
        parts.append(f"{first}-{last}" if last > first else f"{first}")
    return ",".join(parts)


def judge(
    cpu: CpuStats | None,
    fio_usr_pct: float | None = None,
    fio_sys_pct: float | None = None,
    cpu_count: int | None = None,
    thresholds: Thresholds = Thresholds(),
    chosen: ChosenCpus | None = None,
) -> CpuJudgement:
    """Apply the rule to one run.

    `cpu` is the CpuStats of the samples taken while fio ran, ramp excluded,
    or None when no samples exist (e.g. a raw fio file read with read_fio). `chosen` holds
    the CPUs the workload gave fio, when it chose them: rule 2 then judges those alone.
    """
    reasons = []
    fio_pct = None
    if fio_usr_pct is not None and fio_sys_pct is not None:
        fio_pct = fio_usr_pct + fio_sys_pct
    worker_reason, worker = _worker_rule(cpu, fio_pct, thresholds)
    if worker_reason is not None:
        reasons.append(worker_reason)
    unjudged = None
    if cpu is not None:
        busy_reason, unjudged = _busy_rule(cpu, cpu_count, chosen, thresholds)
        irq = cpu.irq_softirq_max_pct
        if busy_reason is not None:
            reasons.append(busy_reason)
        if irq is not None and irq >= thresholds.irq_pct:
            reasons.append(f"CPU{cpu.irq_softirq_max_index} {irq:.0f} % in irq+softirq")
    if reasons:
        return CpuJudgement(True, "; ".join(reasons))
    if cpu is None:
        return CpuJudgement(None, None) if worker is None else CpuJudgement(None, "no CPU samples")
    return CpuJudgement(None, unjudged) if unjudged is not None else CpuJudgement(False, None)


def _worker_rule(
    cpu: CpuStats | None, fio_pct: float | None, thresholds: Thresholds
) -> tuple[str | None, float | None]:
    """Rule 1: its reason when it fires, and the busiest worker's share (None: unknown)."""
    # the busiest worker by either account: the samples or fio's own figure
    known = [v for v in (cpu.fio_worker_max_pct if cpu else None, fio_pct) if v is not None]
    worker = max(known) if known else None
    # a worker that never waits for the device is CPU-bound even when other processes (or
    # the hypervisor) leave it less than a full core: it is runnable all the time
    runnable = cpu.fio_worker_max_runnable_pct if cpu else None
    if worker is not None and worker >= thresholds.worker_pct:
        return f"fio worker at {min(worker, 100):.0f} % of one core", worker
    if runnable is not None and runnable >= thresholds.worker_pct:
        on_cpu = f"on a CPU {worker:.0f} % of the time, " if worker is not None else ""
        return (
            f"fio worker never waits for the device: {on_cpu}runnable {min(runnable, 100):.0f} %"
            " (it shares the CPU with other work)"
        ), runnable
    return None, worker


def _busy_rule(
    cpu: CpuStats, cpu_count: int | None, chosen: ChosenCpus | None, thresholds: Thresholds
) -> tuple[str | None, str | None]:
    """Rule 2: its reason when it fires, and why it cannot be judged (or None). Without
    chosen CPUs it reads the mean over all CPUs; with them, their own per-CPU means (a
    chosen CPU that was not sampled, being offline, is one fio could not run on)."""
    if chosen is None:
        busy = cpu.cpu_busy_pct
        if busy is None or busy < thresholds.machine_pct:
            return None, None
        count = cpu_count or cpu.cpu_count
        who = _WORDS.get(count or 0, f"all {count} CPUs" if count else "all CPUs")
        return f"{who} {busy:.0f} % busy", None
    if chosen.cpus is None:
        return None, f"the CPUs chosen with {chosen.how} are not recorded"
    shares = sorted((s for s in cpu.per_cpu if s.index in chosen.cpus), key=lambda s: s.index)
    if not shares:
        return None, f"no CPU samples of the CPUs chosen with {chosen.how}"
    busy = _mean([s.busy_pct for s in shares])
    if busy is None or busy < thresholds.machine_pct:
        return None, None
    if len(shares) == 1:
        return f"CPU {shares[0].index} ({chosen.how}) {busy:.0f} % busy", None
    who = cpu_list(s.index for s in shares)
    return f"CPUs {who} chosen with {chosen.how} {busy:.0f} % busy", None
