"""The judgement: was a result limited by the CPU rather than the device?

The rule (also in the README), applied per run from the CPU samples and fio's own figures:

1. one fio worker busy >= `worker_pct` (90 %) of one core — the single-thread case: at 4K
   QD128 one fio thread saturates a core and every fast drive "scores" the same. A worker that
   is runnable (on a CPU, or waiting in the run queue for one) >= 90 % of the time counts too:
   it never waits for the device, whatever share of a core other processes left it;
2. all CPUs together >= `machine_pct` (90 %) busy — numjobs >= cores, or other load;
3. one CPU >= `irq_pct` (90 %) in irq + softirq — completion handling is the bottleneck.

Any rule that fires marks the result CPU-bound; the reason says which, in words. Without CPU
samples, rule 1 uses fio's own usr+sys figure (percent of one core per job process), and rules 2
and 3 cannot be judged: then the result is "unknown" (None), never silently "not CPU-bound".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

_WORDS = {1: "the CPU", 2: "both CPUs"}


@dataclass(frozen=True)
class Thresholds:
    """Percentages at which each rule fires."""

    worker_pct: float = 90.0
    machine_pct: float = 90.0
    irq_pct: float = 90.0


@dataclass(frozen=True)
class Verdict:
    """The judgement for one run: cpu_bound is None when there was nothing to judge on."""

    cpu_bound: bool | None
    reason: str | None


def judge(
    cpu: Any | None,
    fio_usr_pct: float | None = None,
    fio_sys_pct: float | None = None,
    cpu_count: int | None = None,
    thresholds: Thresholds = Thresholds(),
) -> Verdict:
    """Apply the rule to one run.

    `cpu` is a CpuSummary (ssdcompare.cpu) of the samples taken while fio ran, ramp excluded,
    or None when no samples exist (e.g. a raw fio file read with read_fio).
    """
    reasons = []
    fio_pct = None
    if fio_usr_pct is not None and fio_sys_pct is not None:
        fio_pct = fio_usr_pct + fio_sys_pct
    # the busiest worker by either account: the samples or fio's own figure
    known = [v for v in (getattr(cpu, "fio_worker_max_pct", None), fio_pct) if v is not None]
    worker = max(known) if known else None
    # a worker that never waits for the device is CPU-bound even when other processes (or
    # the hypervisor) leave it less than a full core: it is runnable all the time
    runnable = getattr(cpu, "fio_worker_max_runnable_pct", None)
    if worker is not None and worker >= thresholds.worker_pct:
        reasons.append(f"fio worker at {min(worker, 100):.0f} % of one core")
    elif runnable is not None and runnable >= thresholds.worker_pct:
        on_cpu = f"on a CPU {worker:.0f} % of the time, " if worker is not None else ""
        reasons.append(
            f"fio worker never waits for the device: {on_cpu}runnable {min(runnable, 100):.0f} %"
            " (it shares the CPU with other work)"
        )
        worker = runnable
    if cpu is not None:
        busy = cpu.cpu_busy_pct
        count = cpu_count or getattr(cpu, "cpu_count", None)
        if busy is not None and busy >= thresholds.machine_pct:
            who = _WORDS.get(count or 0, f"all {count} CPUs" if count else "all CPUs")
            reasons.append(f"{who} {busy:.0f} % busy")
        irq = cpu.irq_softirq_max_pct
        if irq is not None and irq >= thresholds.irq_pct:
            reasons.append(f"CPU{cpu.irq_softirq_max_index} {irq:.0f} % in irq+softirq")
    if reasons:
        return Verdict(True, "; ".join(reasons))
    if cpu is None:
        return Verdict(None, None) if worker is None else Verdict(None, "no CPU samples")
    return Verdict(False, None)
