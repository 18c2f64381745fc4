"""One verdict per result: what limited the number, so that only drive-limited numbers are
compared as drives.

- `host`: the job reached HOST_PCT of the host's ceiling for the same job (the job measured
  on a RAM disk, `sweep --ceiling`): a device at the ceiling measures the host, whatever the
  CPU percentages say; or the block layer's count shows the device never saw what fio
  counted, the page cache or the filesystem having answered instead
  (ssdcompare.judge.iocount: `cached`, `unwritten`). It comes first: it is the most direct
  evidence. A run above
  SUSPECT_CEILING_PCT of its ceiling shows that the ceiling run itself was disturbed (a RAM
  disk is not slower than a device); that ceiling is then not used, and the reason says so.
- `cpu`: the CPU-bound rule of ssdcompare.judge.cpu fired (a fio worker saturated, all CPUs busy
  or all those the workload gave fio, or one CPU in interrupt handling).
- `throttled`: the drive's own health log says it throttled itself to cool down while the
  job ran: a thermal management transition count or time (T1, T2) went up, or the minutes
  above its warning or critical temperature did (ssdcompare.target.probes.health). The number
  is the drive's, but of a drive slowing itself, not of the drive at work: it is not compared
  as one. It comes after `host` and `cpu`, which say the number did not measure the drive at
  all (a CPU-bound run that also throttled is `cpu`, the throttling added to its reason), and
  before `disturbed`: the drive's own count is more direct evidence than a busy host, whose
  disturbances are added to its reason.
- `disturbed`: something besides the workload perturbed the measurement: CPU steal (the
  hypervisor ran other guests) of STEAL_PCT or more of the CPUs' time, other processes using
  OTHERS_PCT or more of a core, fio reporting an error or a run much shorter than planned,
  the block layer's count disagreeing with fio's (another process used the device, or the
  output is not this device's: `shared`, `elsewhere`), or (over repeats) a run-to-run
  spread of SPREAD_CV_PCT or more.
- `unknown`: nothing to judge on (no CPU samples: a raw fio file).
- `drive`: none of the above; the number says something about the device.

Where several apply, the first in that order wins (a CPU-bound result on a noisy host is
`cpu`, with the steal and the other processes added to its reason; at the ceiling it is
`host`, with the CPU's reason added). Every verdict but `drive`
comes with its reason in words, figures included. The thresholds live here and nowhere
else; docs/methodology.md explains them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

VERDICTS = ("host", "cpu", "throttled", "disturbed", "unknown", "drive")  # the first applies
# what limited a result, in a word for tables and summary lines (none for the drive)
LIMIT_WORDS = {"host": "host-bound", "cpu": "CPU-bound", "throttled": "throttled",
               "disturbed": "disturbed"}  # fmt: skip


def limit_word(verdict: object, cpu_bound: bool = False) -> str:
    """What limited one result in a word ("CPU-bound"), "" for the drive or an unjudged run:
    its verdict, a CPU-bound judgement (`cpu_bound`, known to be set) counting as `cpu`
    where the verdict names nothing that comes before it."""
    if verdict == "host":
        return LIMIT_WORDS["host"]
    if verdict == "cpu" or cpu_bound:
        return LIMIT_WORDS["cpu"]
    return LIMIT_WORDS.get(verdict, "") if isinstance(verdict, str) else ""


STEAL_PCT = 5.0  # % of the CPUs' time given to other guests while the job ran
OTHERS_PCT = 10.0  # % of one core used by processes that are neither fio nor ssdcompare
SPREAD_CV_PCT = 10.0  # coefficient of variation of IOPS over repeats
SHORT_RUN = 0.9  # a time-based run that lasted less than this share of its planned runtime
HOST_PCT = 80.0  # % of the host's ceiling for the same job
# above this % of its ceiling a run shows the ceiling itself went wrong (a RAM disk is not
# slower than a device): one run measured on a disturbed host. The ceiling is then not used
SUSPECT_CEILING_PCT = 120.0


@dataclass(frozen=True)
class Verdict:
    verdict: str
    reason: str | None  # None for "drive", unless a ceiling was not used (and why)


@dataclass(frozen=True)
class RunFacts:
    """What one run's verdict is judged on (NA figures as None)."""

    cpu_bound: bool | None
    cpu_reason: str | None
    steal_pct: float | None = None
    others_pct: float | None = None
    others_top: str | None = None
    fio_error: str | None = None  # fio's own error for the job, in words
    runtime_s: float | None = None  # what fio measured
    planned_s: float | None = None  # what a time-based job was to measure (None: size-capped)
    ceiling_pct: float | None = None  # IOPS as % of the host's ceiling for the job
    # the highest ceiling_pct any run of the same job got: one run far above the ceiling
    # discredits it for every run (None: this run's own)
    ceiling_worst_pct: float | None = None
    unsampled: str | None = None  # why there are no CPU samples, when known (a remote host)
    throttling: Throttling | None = None  # the drive's thermal counters over the run
    io_check: str | None = None  # the block layer's count against fio's (judge.iocount)
    io_reason: str | None = None


@dataclass(frozen=True)
class Throttling:
    """What a drive's health log counted over one run (None: not known)."""

    t1_events: float | None = None  # thermal management transitions to T1
    t1_s: float | None = None  # seconds at T1
    t2_events: float | None = None
    t2_s: float | None = None
    warning_min: float | None = None  # minutes above the warning temperature
    critical_min: float | None = None  # minutes above the critical temperature
    temp_after_c: float | None = None  # the drive's temperature at the end


def throttled_reason(counts: Throttling | None) -> str | None:
    """The drive's throttling over a run in words, figures included ("thermal throttling 2
    times, 41 s at T1; 71 °C at the end"); None when no counter went up."""
    if counts is None:
        return None
    levels = [
        _level(events, seconds, name)
        for events, seconds, name in (
            (counts.t1_events, counts.t1_s, "T1"),
            (counts.t2_events, counts.t2_s, "T2"),
        )
    ]
    said = [level for level in levels if level]
    found = [f"thermal throttling {' and '.join(said)}"] if said else []
    for minutes, what in ((counts.warning_min, "warning"), (counts.critical_min, "critical")):
        if minutes:
            found.append(f"{minutes:.0f} min above its {what} temperature")
    if not found:
        return None
    if counts.temp_after_c is not None:
        found.append(f"{counts.temp_after_c:.0f} °C at the end")
    return "; ".join(found)


def _level(events: float | None, seconds: float | None, name: str) -> str | None:
    """One thermal management level's part of the reason ("2 times, 41 s at T1")."""
    if not events and not seconds:
        return None
    words = []
    if events:
        words.append(f"{events:.0f} time{'s' if round(events) != 1 else ''}")
    if seconds:
        words.append(f"{seconds:.0f} s")
    return f"{', '.join(words)} at {name}"


def judge_run(facts: RunFacts) -> Verdict:
    """The verdict of one run."""
    # judged on the whole percentages the reasons quote, so a reason never contradicts them
    ceiling = None if facts.ceiling_pct is None else round(facts.ceiling_pct)
    worst = ceiling if facts.ceiling_worst_pct is None else round(facts.ceiling_worst_pct)
    note = None
    if ceiling is not None and worst is not None and worst > SUSPECT_CEILING_PCT:
        got = f"this run got {ceiling} %"
        if worst != ceiling:
            got = f"a run of the job got {worst} % of it (this one {ceiling} %)"
        note = (f"the host's ceiling for the job is not used: {got}, so the ceiling run (on a "
                "RAM disk) was itself disturbed")  # fmt: skip
    elif ceiling is not None and ceiling >= HOST_PCT:
        return _host(facts, f"at {ceiling} % of this host's ceiling for the job (its IOPS on a "
                            "RAM disk): the host is the limit")  # fmt: skip
    if facts.io_check in _HOST_ANSWERED and facts.io_reason:
        return _host(facts, facts.io_reason)
    found = _judge_without_ceiling(facts)
    if note is None:
        return found
    return Verdict(found.verdict, f"{found.reason}; {note}" if found.reason else note)


# the block layer's count showing that the host answered instead of the device
_HOST_ANSWERED = ("cached", "unwritten")
_DEVICE_SHARED = ("shared", "elsewhere")  # ... that more than the job's I/O was counted


def _host(facts: RunFacts, why: str) -> Verdict:
    """The `host` verdict: `why`, and what else was seen (the CPU's reason, throttling,
    disturbances)."""
    also = [facts.cpu_reason] if facts.cpu_bound and facts.cpu_reason else []
    throttled = throttled_reason(facts.throttling)
    also += [throttled] if throttled else []
    return Verdict("host", "; ".join([why, *also, *_disturbances(facts)]))


def _disturbances(facts: RunFacts) -> list[str]:
    """What besides the workload perturbed the run, in words (empty: nothing seen)."""
    found = []
    if facts.steal_pct is not None and round(facts.steal_pct) >= STEAL_PCT:
        found.append(f"CPU steal {facts.steal_pct:.0f} % (the hypervisor ran other guests)")
    if facts.others_pct is not None and round(facts.others_pct) >= OTHERS_PCT:
        # the share is a mean over the run; the busiest process is named at its peak
        top = f"; the busiest at its peak: {facts.others_top}" if facts.others_top else ""
        found.append(f"other processes used {facts.others_pct:.0f} % of a core on average{top}")
    if facts.io_check in _DEVICE_SHARED and facts.io_reason:
        found.append(facts.io_reason)
    return found


def _judge_without_ceiling(facts: RunFacts) -> Verdict:
    disturbed = _disturbances(facts)
    throttled = throttled_reason(facts.throttling)
    if facts.cpu_bound:
        # the CPU was the limit; what else used it (or a throttling drive) is part of why
        also = [throttled] if throttled else []
        return Verdict("cpu", "; ".join([facts.cpu_reason or "CPU-bound", *also, *disturbed]))
    if facts.fio_error:
        disturbed.append(f"fio reported an error: {facts.fio_error}")
    if (
        facts.planned_s
        and facts.runtime_s is not None
        and facts.runtime_s < SHORT_RUN * facts.planned_s
    ):
        disturbed.append(f"ran {facts.runtime_s:.1f} s of the {facts.planned_s:.0f} s planned")
    if throttled:
        return Verdict("throttled", "; ".join([throttled, *disturbed]))
    if disturbed:
        return Verdict("disturbed", "; ".join(disturbed))
    if facts.cpu_bound is None:
        # the judgement's own reason where it gave one (no samples of the CPUs fio was given)
        why = facts.unsampled or facts.cpu_reason or "no CPU samples"
        return Verdict("unknown", f"{why}: whether the CPU was the limit is not known")
    return Verdict("drive", None)


def judge_repeats(
    runs: Iterable[Verdict], cv_pct: float | None, repeats: int, rounds: bool = False
) -> Verdict:
    """The verdict of a job's repeats on one device: the first verdict (in VERDICTS order)
    any repeat got, or `disturbed` when the repeats disagree by SPREAD_CV_PCT or more.
    `rounds`: the repeats are the rounds of a PTS test's measurement window."""
    found = list(runs)
    if not found:
        return Verdict("unknown", "no successful run")
    worst = min(found, key=lambda v: VERDICTS.index(v.verdict))
    if VERDICTS.index(worst.verdict) < VERDICTS.index("disturbed"):
        return worst
    known = cv_pct is not None and cv_pct == cv_pct  # NaN: no spread to speak of
    if repeats >= 2 and known and round(cv_pct) >= SPREAD_CV_PCT:  # type: ignore[arg-type]
        what = "rounds of the window" if rounds else "repeats"
        spread = f"the {repeats} {what} differ by {cv_pct:.0f} % (coefficient of variation)"
        # what the runs said stays said (a disturbance, or a ceiling not used)
        said = worst.reason if isinstance(worst.reason, str) else None
        return Verdict("disturbed", f"{spread}; {said}" if said else spread)
    return worst
