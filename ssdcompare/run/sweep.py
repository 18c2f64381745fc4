"""A sweep: every planned job on every target, one at a time, results kept as they finish.

Order: repeat > target > job (ssdcompare.run.order). With one repeat this is device by
device, each running the suite's jobs in the same order. With several repeats, each round
visits every device before the next round starts, so slow drift (temperature, background
activity, a drive's cache state) spreads over all devices instead of favouring the one
measured first.

Safety: the guard judges the targets that the rendered jobfiles write to (preflight); each
target's identity is recorded at the start and compared before a resume (resume) and before
every run (access); a lock per target and per results folder keeps a second sweep out while
one runs; every jobfile is read back and checked again just before fio runs it (jobrun).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ssdcompare.errors import SsdcompareError, stop_reason
from ssdcompare.fio.binary import find_fio
from ssdcompare.fio.client import check_hosts
from ssdcompare.fio.jobfile import RenderedJob
from ssdcompare.results.models import Manifest, RunStatus, now_iso
from ssdcompare.results.store import ResultsDir, check_own_folder, own_writes
from ssdcompare.run.access import Unusable, after_run, blocked
from ssdcompare.run.ceiling import measure as measure_ceiling
from ssdcompare.run.curve import paced
from ssdcompare.run.drivestate import Unreachable, in_state, preconditioned, purged, settled
from ssdcompare.run.jobrun import SamplerFactory, StoppedAfterRun, run_one, run_together, skip
from ssdcompare.run.order import Run, batches, pending
from ssdcompare.run.plan import JOB_OVERHEAD_S, Plan
from ssdcompare.run.precondition import note_trimmed
from ssdcompare.run.preflight import (
    check_fio_accepts,
    check_free,
    consent_names,
    offered_names,
    preflight,
)
from ssdcompare.run.purge import check_purges
from ssdcompare.run.ramdisk import remove_leftovers
from ssdcompare.run.resume import (
    check_consent_again,
    check_identity,
    replan,
    resumed_targets,
    unsigned,
)
from ssdcompare.run.rounds import (
    Round,
    all_rounds,
    needed,
    records_for_resume,
    rounds_pending,
    run_round,
)
from ssdcompare.run.runner import Sampler
from ssdcompare.run.sampler import CpuSampler
from ssdcompare.target.devices import Target
from ssdcompare.target.file import TargetFileError, create
from ssdcompare.target.guard import Finding, check_write_safety
from ssdcompare.target.identity import identify
from ssdcompare.target.locks import holding
from ssdcompare.target.metadata import device_info, host_info


@dataclass(frozen=True)
class Progress:
    """Sent before each run starts (state "start") and after it ends (its final state)."""

    state: str
    index: int  # 1-based position in the whole sweep
    total: int
    target: str
    job: str
    repeat: int
    elapsed_s: float
    eta_s: float | None
    error: str | None = None
    detail: str | None = None  # for state "purge": what the purge before a PTS test did


@dataclass
class SweepOutcome:
    """What a sweep (or a resumed one) did."""

    results: ResultsDir
    statuses: list[RunStatus] = field(default_factory=list)
    interrupted: bool = False
    stop_reason: str | None = None  # "Ctrl-C", "SIGTERM", ... when interrupted
    skipped_existing: int = 0
    guard_overrides: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. a dead sweep's RAM disk removed

    def count(self, state: str) -> int:
        return sum(1 for s in self.statuses if s.status == state)


def default_results_dir(suite: str, base: Path = Path("results")) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return base / f"{stamp}-{suite}"


def _sampler() -> Sampler:
    return CpuSampler(interval_s=0.1)


def start(
    plan: Plan,
    out_dir: Path | None = None,
    destroy_data: bool | Sequence[str] = False,
    command_line: list[str] | None = None,
    read_only: bool = False,
) -> tuple[ResultsDir, list[Finding]]:
    """Check safety for every target, then create the results folder with its manifest.

    The guard runs for all targets before anything is written, so a sweep never half-runs
    and then refuses. It judges the targets the rendered jobfiles write to.
    """
    if plan.fio is None:
        plan.fio = find_fio()
    check_fio_accepts(plan)
    consent, findings = preflight(plan, destroy_data)
    plan.offered = offered_names(consent, plan.devices)  # the drives a PTS test purges
    created = _create_files(plan)
    try:
        with own_writes():
            results = _new_results(plan, out_dir, consent, findings, command_line, read_only,
                                   created)  # fmt: skip
    except BaseException:
        _remove_created(created)
        raise
    return results, findings


def _create_files(plan: Plan) -> dict[str, str]:
    """Create the new file targets (empty, never through a link, never over a file that
    appeared since they were planned), so that the sweep records what it made and fio is
    given these files and no other (ssdcompare.target.file); path -> device:inode."""
    made: dict[str, str] = {}
    for part in (p for t in plan.modified_targets for p in t.parts):
        if part.kind == "file" and not part.exists and part.host is None:
            try:
                made[part.path] = create(part.path)
            except TargetFileError:
                _remove_created(made)
                raise
    return made


def _remove_created(made: dict[str, str]) -> None:
    """Remove files this sweep created and never used (still empty, still the same file)."""
    for path, key in made.items():
        with contextlib.suppress(OSError):
            info = os.lstat(path)
            if f"{info.st_dev}:{info.st_ino}" == key and info.st_size == 0:
                os.unlink(path)


def _new_results(
    plan: Plan,
    out_dir: Path | None,
    consent: bool | list[str],
    findings: list[Finding],
    command_line: list[str] | None,
    read_only: bool,
    created: dict[str, str],
) -> ResultsDir:
    """The results folder of a new sweep, with its manifest (`created`: the files it made)."""
    assert plan.fio is not None
    manifest = Manifest(
        created_at=now_iso(),
        command_line=command_line if command_line is not None else list(sys.argv),
        suite=plan.suite,
        targets=plan.targets,
        devices=[device_info(t) for t in plan.devices],
        host=host_info(plan.fio.version, plan.fio.path),
        repeat=plan.repeat,
        ioengine=plan.default_ioengine,
        read_only=read_only or plan.read_only,
        destroy_data=bool(consent),
        guard_overrides=[f"{f.device}: {f.detail}" for f in findings],
        override_targets=list(dict.fromkeys(f.target for f in findings)),
        allowed_options=plan.allowed_options,
        precondition=plan.precondition,
        states=plan.states,
        ceiling=plan.ceiling,
        parallel_hosts=plan.parallel_hosts,
        purge=plan.purge,
        identities={t.name: identify(t) for t in plan.devices},
        created_files=created,
        planned={
            t.name: {j.job_id: j.workload_hash for j in plan.jobs_for(t)} for t in plan.targets
        },
    )
    return ResultsDir.create(out_dir or default_results_dir(plan.suite.name), manifest)


def reopen(
    path: Path,
    destroy_data: bool | Sequence[str] = False,
    fio_bin: str | None = None,
    devices: Sequence[str] | None = None,
) -> tuple[Plan, ResultsDir, list[Finding]]:
    """Rebuild the plan of an earlier sweep from its manifest, for --resume.

    Refuses a target that is no longer the device the sweep started on, and jobfiles that
    would differ from the planned ones. `destroy_data` is not inherited from the first run:
    writing over signatures needs it again, and so does a PTS test's purge not done yet (one
    that failed). `devices` resumes only those targets.
    """
    results = ResultsDir.open(path)
    check_own_folder(path, "--resume")
    manifest = results.manifest
    signed = results.signed()
    if not signed and not devices:
        raise SsdcompareError(unsigned(path, manifest))
    targets = resumed_targets(manifest, devices, trusted=signed)
    fio = find_fio(fio_bin)
    plan = replan(manifest, targets, fio)
    left = {job.target.name for _, job in pending(plan, results)}
    waiting = [part for t in targets if t.name in left for part in t.parts]
    check_identity(manifest, waiting)
    check_free(plan.devices)
    written = [part for t in plan.written_targets if t.name in left for part in t.parts]
    consent = consent_names(destroy_data, plan.devices)
    check_consent_again(manifest, written, consent)
    check_hosts(fio, waiting)
    findings = check_write_safety(written, True, consent)
    plan.offered = offered_names(consent, plan.devices)
    unsettled = [t for t in plan.targets if t.name in left and not settled(results, t.name)]
    check_purges(unsettled, plan.purge, plan.offered, resuming=True)  # a failed one: again
    if plan.suite.pts is not None:
        records_for_resume(results, plan)  # a failed round runs again, a bad record is redone
    manifest.resumed_at.append(now_iso())
    results.save_manifest()
    return plan, results, findings


@dataclass
class _Clock:
    """Elapsed time and a remaining-time estimate scaled by how long runs really took."""

    planned_left: float
    clock: Callable[[], float]
    started: float = 0.0
    planned_done: float = 0.0
    actual_done: float = 0.0

    def elapsed(self) -> float:
        return self.clock() - self.started

    def eta(self) -> float:
        scale = self.actual_done / self.planned_done if self.planned_done else 1.0
        return (self.planned_left - self.planned_done) * scale

    def done(self, planned: float, actual: float) -> None:
        self.planned_done += planned
        self.actual_done += actual


def run(
    plan: Plan,
    results: ResultsDir,
    progress: Callable[[Progress], None] | None = None,
    sampler_factory: SamplerFactory | None = _sampler,
    clock: Callable[[], float] = time.monotonic,
    job_timeout_s: float | None = None,
) -> SweepOutcome:
    """Run every planned fio job not yet finished in `results`.

    Finished runs (status ok) are skipped, so the same call resumes an interrupted sweep.
    Ctrl-C (or SIGTERM/SIGHUP raised as errors.Stopped) stops fio cleanly, records the run
    as interrupted and returns with `interrupted=True`; nothing finished before is touched.
    Holds the results folder and every target locked while it runs. `job_timeout_s` replaces
    the default limit per job (twice its time plus two minutes); after a job times out, the
    rest of that target's jobs are skipped. First removes the RAM disks of --ceiling sweeps
    that were killed before they could (ssdcompare.run.ramdisk); the outcome's notes say so.
    """
    if plan.fio is None:
        plan.fio = find_fio()
    notes = remove_leftovers()  # RAM disks of --ceiling sweeps killed before removing them
    with holding(plan.devices, results.path, f"results {results.path}"), own_writes():
        sweep = _Sweep(plan, results, progress, sampler_factory, clock, job_timeout_s)
        outcome = _run_locked(sweep)
    outcome.notes[:0] = notes
    return outcome


def _run_locked(sweep: _Sweep) -> SweepOutcome:
    """The sweep's runs, its locks held: the ceiling first (--ceiling), then batch by batch
    each run readied (skipped when it must not run) and run, until the last or a stop."""
    if sweep.plan.ceiling and not sweep.measure_ceiling():
        return sweep.outcome
    if sweep.plan.suite.pts is not None:  # a PTS test: round by round (run.rounds)
        for one in all_rounds(sweep.plan):
            if needed(sweep.results, one) and not sweep.run_round(one):
                break
        return sweep.outcome
    for batch in batches(sweep.plan, sweep.pending):
        started = sweep.clock()
        runnable = sweep.ready(batch)
        if sweep.outcome.interrupted:
            break
        if runnable and not sweep.run(runnable, started):
            break
    return sweep.outcome


class _Sweep:
    """One sweep's way through its pending runs: what it found on the way (targets that
    must not be used, drive states that could not be reached) and what it did."""

    def __init__(
        self,
        plan: Plan,
        results: ResultsDir,
        progress: Callable[[Progress], None] | None,
        sampler_factory: SamplerFactory | None,
        clock: Callable[[], float],
        job_timeout_s: float | None,
    ) -> None:
        assert plan.fio is not None
        self.plan, self.results, self.progress = plan, results, progress
        self.sampler_factory, self.job_timeout_s = sampler_factory, job_timeout_s
        self.clock = clock
        self.outcome = SweepOutcome(results=results)
        self.pending = (pending(plan, results) if plan.suite.pts is None
                        else rounds_pending(plan, results))  # fmt: skip
        self.total = (len(plan.jobs) * plan.repeat if plan.suite.pts is None
                      else len(self.pending))  # fmt: skip
        self.outcome.skipped_existing = self.total - len(self.pending)
        self.number = self.outcome.skipped_existing  # the position of the last run readied
        planned = sum(j.workload.duration_s + JOB_OVERHEAD_S for _, j in self.pending)
        self.timing = _Clock(planned, clock)
        self.timing.started = clock()
        self.unusable: Unusable = {}
        self.unreachable: Unreachable = {}
        self.state_step: int | None = None  # the drive-state step the batch's runs follow

    def report(self, state: str, repeat: int, job: RenderedJob, error: str | None) -> None:
        if self.progress:
            self.progress(Progress(state, self.number, self.total, job.target.name, job.job_id,
                                   repeat, self.timing.elapsed(), self.timing.eta(),
                                   error))  # fmt: skip

    def stopped(self, reason: str | None) -> None:
        self.outcome.interrupted, self.outcome.stop_reason = True, reason

    def measure_ceiling(self) -> bool:
        """Each job on a RAM disk first, only what is missing (also on a resume of a finished
        sweep); False when a stop cut it short."""
        assert self.plan.fio is not None
        try:
            measure_ceiling(self.plan.fio, self.results, self.plan.jobs_for(self.plan.targets[0]),
                            self.plan.suite.name, self._say_ceiling,
                            self.plan.allowed_options)  # fmt: skip
        except KeyboardInterrupt as stop:
            self.stopped(stop_reason(stop))
            return False
        return True

    def _say_ceiling(self, job: str, error: str | None) -> None:
        if self.progress is not None:
            self.progress(Progress("ceiling", 0, self.total, "RAM disk", job, 1, 0.0, 0.0, error))

    def ready(self, batch: list[Run]) -> list[Run]:
        """The runs of a batch that may run now, each target put in the state its job needs
        first; the others recorded as skipped. A stop meanwhile ends the sweep (the run it
        cut short is neither run nor recorded)."""
        runnable: list[Run] = []
        self.state_step = None
        for repeat, job in batch:
            self.number += 1
            reason = blocked(job, self.unusable, self.results)
            if reason is None:  # a curve point paced at its share of the maximum
                job, reason = paced(self.results, job, repeat)
            if reason is None:
                self.report("start", repeat, job, None)
                try:
                    reason = self._readied(job, repeat)
                except KeyboardInterrupt as stop:
                    self.stopped(stop_reason(stop))
                    break
            if reason is not None:
                self.outcome.statuses.append(skip(self.results, job, repeat, reason))
                planned = job.workload.duration_s + JOB_OVERHEAD_S
                self.timing.done(planned, planned)
                self.report("skipped", repeat, job, reason)
                continue
            runnable.append((repeat, job))
        return runnable

    def run_round(self, one: Round) -> bool:
        """One round of a PTS test (ssdcompare.run.rounds), its target purged and filled
        first where the suite asks; False when the sweep stops here."""
        started = self.clock()
        first = one.jobs[0]
        try:
            reason = (blocked(first, self.unusable, self.results) or self._purged(one.target)
                      or preconditioned(self.plan, self.results, first, one.number,
                                        self.unusable))  # fmt: skip
            if reason is None:
                for job in one.jobs:
                    self.number += 1
                    self.report("start", one.number, job, None)
                statuses = run_round(self.plan, self.results, one, self.sampler_factory,
                                     self.job_timeout_s)  # fmt: skip
            else:
                self.number += len(one.jobs)
                statuses = [skip(self.results, job, one.number, reason) for job in one.jobs]
        except StoppedAfterRun as stop:
            self._took([(one.number, one.jobs[-1])], [stop.status], started)
            self.stopped(stop_reason(stop.stop))
            return False
        except KeyboardInterrupt as stop:
            self.stopped(stop_reason(stop))
            return False
        self._took([(one.number, job) for job in one.jobs], statuses, started)
        interrupted = [s for s in statuses if s.status == "interrupted"]
        if interrupted:
            self.stopped(interrupted[0].stopped_by)
            return False
        return True

    def _purged(self, target: Target) -> str | None:
        """The purge before a PTS test's first round on `target` (drivestate.purged), said as
        it is decided; why the target's runs are skipped (a purge that failed), or None."""
        record = purged(self.plan, self.results, target, self.unusable)
        if record is None:
            return None
        if self.progress is not None:
            timed = f", in {record.seconds:.3g} s" if record.purged and record.seconds else ""
            self.progress(Progress("purge", self.number, self.total, target.name, "", 0,
                                   self.timing.elapsed(), self.timing.eta(), record.error,
                                   record.detail + timed))  # fmt: skip
        return None if record.error is None else f"not purged: {record.error}"

    def _readied(self, job: RenderedJob, repeat: int) -> str | None:
        """Preconditioning and the job's drive state, as the plan says: why the run must be
        skipped after all, or None."""
        reason = preconditioned(self.plan, self.results, job, repeat, self.unusable)
        if reason is None:
            reason, self.state_step = in_state(self.plan, self.results, job, repeat,
                                               self.unusable, self.unreachable)  # fmt: skip
        return reason

    def run(self, runnable: list[Run], started: float) -> bool:
        """Run a batch's runnable runs (several hosts at once with --parallel-hosts) and take
        in their statuses; False when the sweep stops here. `started`: when the batch began."""
        try:
            if len(runnable) == 1:
                repeat, job = runnable[0]
                statuses = [run_one(self.plan, self.results, job, repeat, self.sampler_factory,
                                    self.job_timeout_s, self.state_step)]  # fmt: skip
            else:
                statuses = run_together(self.plan, self.results, runnable, self.sampler_factory,
                                        self.job_timeout_s)  # fmt: skip
        except StoppedAfterRun as stop:  # the run measured and stored, then a stop
            self._took(runnable, [stop.status], started)
            self.stopped(stop_reason(stop.stop))
            return False
        except KeyboardInterrupt as stop:
            # a stop outside fio (e.g. while preparing): nothing of this run was measured
            self.stopped(stop_reason(stop))
            return False
        self._took(runnable, statuses, started)
        interrupted = [s for s in statuses if s.status == "interrupted"]
        if interrupted:
            self.stopped(interrupted[0].stopped_by)
            return False
        return True

    def _took(self, runnable: list[Run], statuses: list[RunStatus], started: float) -> None:
        """The statuses of a batch's runs: kept, said, and what each means for the runs after
        it (a trimming job of the full pass, a device found unusable, a host gone)."""
        longest = max(job.workload.duration_s for _, job in runnable) + JOB_OVERHEAD_S
        for (repeat, job), status in zip(runnable, statuses, strict=True):
            self.outcome.statuses.append(status)
            if job.workload.state == "full" and "trim" in job.workload.directions:
                note_trimmed(self.results, job, repeat)
            planned = job.workload.duration_s + JOB_OVERHEAD_S
            taken = (self.clock() - started) * planned / longest / len(runnable)
            self.timing.done(planned, taken)
            self.report(status.status, repeat, job, status.error)
            after_run(self.plan, job, status, self.unusable)
