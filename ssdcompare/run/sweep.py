"""A sweep: every planned job on every target, one at a time, results kept as they finish.

Order: repeat > target > job. With one repeat this is device by device, each running the
suite's jobs in the same order. With several repeats, each round visits every device before
the next round starts, so slow drift (temperature, background activity, a drive's cache
state) spreads over all devices instead of favouring the one measured first.

Safety: the guard judges the targets that the rendered jobfiles write to; each target's
identity is recorded at the start and compared before a resume; a lock per target and per
results folder keeps a second sweep out while one runs; every jobfile is read back and checked
again just before fio runs it.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ssdcompare.errors import SsdcompareError, stop_reason
from ssdcompare.fio.binary import default_ioengine, find_fio
from ssdcompare.fio.check import JobfileError, check_sections, read_jobfile
from ssdcompare.fio.client import check_hosts
from ssdcompare.fio.jobfile import RenderedJob, opened_text, render, sections_of, split_by_host
from ssdcompare.fio.logs import compress_large
from ssdcompare.results.store import (
    JOBFILE,
    Manifest,
    ResultsDir,
    RunStatus,
    check_own_folder,
    now_iso,
    own_writes,
    status_of,
    write_atomic,
)
from ssdcompare.run.ceiling import measure as measure_ceiling
from ssdcompare.run.plan import JOB_OVERHEAD_S, Plan, validate
from ssdcompare.run.precondition import (
    Access,
    fill,
    note_trimmed,
    put_in_state,
    state_needed,
    until_steady,
)
from ssdcompare.run.ramdisk import remove_leftovers
from ssdcompare.run.runner import (
    DEVICE_ERRNOS,
    ClientRun,
    RunOutcome,
    Sampler,
    run_fio,
    run_fio_together,
    timeout_for,
)
from ssdcompare.run.sampler import CpuSampler
from ssdcompare.suite.options import TIMESERIES_PREFIX
from ssdcompare.target import probes
from ssdcompare.target.devices import Target, resolve_on_host
from ssdcompare.target.file import TargetFileError, create, lay_out, opened
from ssdcompare.target.guard import (
    Finding,
    check_in_use,
    check_write_safety,
    claimed,
    claimed_all,
)
from ssdcompare.target.hosts import Host
from ssdcompare.target.identity import changed_since, differences, identify, new_signatures, noun
from ssdcompare.target.locks import Lock, holding, lock_paths
from ssdcompare.target.metadata import device_info, host_info

WRITE_REFUSED_ERRNOS = {errno.EROFS, errno.EPERM, errno.EACCES}


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


def _check_free(targets: Sequence[Target]) -> None:
    """Fail early, before a results folder exists, when two targets of this sweep are the
    same data (a disk and its partition, a loop device and its backing file) or another
    sweep holds one."""
    owner: dict[Path, Target] = {}
    for target in targets:
        for path in lock_paths(target):
            other = owner.setdefault(path, target)
            if other is not target:
                raise SsdcompareError(
                    f"{other.name} and {target.name} share data (one holds or backs the "
                    "other: a disk and its partition, a loop device and its backing file); "
                    "measuring both at once measures neither: list one of them"
                )
            Lock(path, target.path, "checking").release()


def _check_fio_accepts(plan: Plan) -> None:
    """fio parses every jobfile before the first one runs: a bad option ends the sweep now,
    not hours later job by job."""
    rejections = validate(plan)
    if rejections:
        listing = "\n".join(
            f"  {r.job.target.name}/{r.job.file_name}: {r.reason.splitlines()[0]}"
            for r in rejections
        )
        raise SsdcompareError(
            f"fio rejects {len(rejections)} jobfile(s):\n{listing}\n"
            "Fix the suite (`ssdcompare plan` shows each jobfile), then start again."
        )


def consent_names(
    destroy_data: bool | Sequence[str], targets: Sequence[Target]
) -> bool | list[str]:
    """--destroy-data as the guard takes it: True (bare) or the names of the targets it
    covers. A name that is no target of the sweep is an error: a typo must not pass for
    consent, nor hide that the device meant was not named."""
    if isinstance(destroy_data, bool):
        return destroy_data
    # a path names a device of this machine only: one reached through a server needs its name
    names = {key: t.name for t in targets for key in (t.name, t.spec, t.path) if not t.host}
    names.update({key: t.name for t in targets for key in (t.name, t.spec)})
    unknown = [n for n in destroy_data if n not in names]
    if unknown:
        raise SsdcompareError(
            f"--destroy-data {','.join(unknown)}: not a device of this sweep; its devices: "
            f"{', '.join(t.name for t in targets)}"
        )
    return [names[n] for n in destroy_data]


def preflight(
    plan: Plan, destroy_data: bool | Sequence[str] = False
) -> tuple[bool | list[str], list[Finding]]:
    """The checks a sweep passes before it writes anything, for `sweep` and `plan` alike:
    --destroy-data names devices of the sweep, no two targets share data and no other sweep
    holds one, every fio server answers, and the guard allows every write. Raises
    SsdcompareError saying what would be refused and why; returns the consent as the guard
    takes it and what --destroy-data overrides."""
    consent = consent_names(destroy_data, plan.devices)
    _check_free(plan.devices)
    if plan.fio is not None:
        check_hosts(plan.fio, plan.devices)
    written = [part for target in plan.written_targets for part in target.parts]
    return consent, check_write_safety(written, True, consent)


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
    _check_fio_accepts(plan)
    consent, findings = preflight(plan, destroy_data)
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
    writing over signatures needs it again. `devices` resumes only those targets.
    """
    results = ResultsDir.open(path)
    check_own_folder(path, "--resume")
    manifest = results.manifest
    if not results.signed() and not devices:
        raise SsdcompareError(_unsigned(path, manifest))
    targets = _resumed_targets(manifest, devices, trusted=results.signed())
    fio = find_fio(fio_bin)
    if manifest.host.fio_version and fio.version != manifest.host.fio_version:
        raise SsdcompareError(
            f"the sweep started with {manifest.host.fio_version}, this fio is {fio.version}; "
            "resume with the same fio so the results stay comparable"
        )
    engine = manifest.ioengine or default_ioengine(fio)
    jobs = [
        render(
            workload,
            target,
            manifest.suite.name,
            engine,
            manifest.allowed_options,
            manifest.read_only,
        )  # fmt: skip
        for target in targets
        for workload in manifest.suite.workloads
    ]
    _check_planned(manifest, jobs)
    plan = Plan(
        suite=manifest.suite, targets=targets, jobs=jobs, repeat=manifest.repeat, fio=fio,
        default_ioengine=engine, allowed_options=manifest.allowed_options,
        read_only=manifest.read_only, precondition=manifest.precondition,
        ceiling=manifest.ceiling, parallel_hosts=manifest.parallel_hosts,
    )  # fmt: skip
    pending = {job.target.name for _, job in _pending(plan, results)}
    waiting = [part for t in targets if t.name in pending for part in t.parts]
    _check_identity(manifest, waiting)
    _check_free(plan.devices)
    written = [part for t in plan.written_targets if t.name in pending for part in t.parts]
    consent = consent_names(destroy_data, plan.devices)
    if manifest.guard_overrides and written and not consent:
        # what it overwrote may be gone by now (wiped by the sweep itself): the consent is not
        raise SsdcompareError(
            "this sweep was started with --destroy-data, overwriting: "
            + "; ".join(manifest.guard_overrides)
            + ". Give --destroy-data again to resume it"
        )
    if isinstance(consent, list):
        # names cover only the devices named: each one overwritten before needs naming again
        again = [t for t in manifest.override_targets
                 if t in {p.name for p in written} and t not in consent]  # fmt: skip
        if again:
            raise SsdcompareError(
                f"this sweep was started with --destroy-data overwriting {', '.join(again)}; "
                f"name {'it' if len(again) == 1 else 'them'} again to resume it: "
                f"--destroy-data {','.join([*consent, *again])}"
            )
    check_hosts(fio, waiting)
    findings = check_write_safety(written, True, consent)
    manifest.resumed_at.append(now_iso())
    results.save_manifest()
    return plan, results, findings


def _unsigned(path: Path, manifest: Manifest) -> str:
    """Why a folder whose manifest this user's ssdcompare did not sign is not resumed as it
    is, and how to resume it: resuming writes to the devices its manifest names."""
    named = ", ".join(f"{t.spec} ({t.path})" for t in manifest.targets)
    return (
        f"{path}/manifest.json is not signed by your ssdcompare (the sweep was started by "
        "someone else, on another machine, by an older ssdcompare, or the file was edited): "
        f"a resume writes to the devices it names, which are {named}. If they are yours to "
        "write, name the ones to resume yourself: --devices "
        + ",".join(t.spec for t in manifest.targets)
    )


def _resumed_targets(
    manifest: Manifest, devices: Sequence[str] | None, trusted: bool = True
) -> list[Target]:
    """The targets to resume: all, or those `devices` names. A manifest this user's
    ssdcompare did not sign (`trusted` False) may pair any label with any path, so there a
    target is named by its device or path only, never by its label."""
    recorded = manifest.targets
    if devices:
        wanted = [d.strip() for d in devices if d.strip()]
        keys = (lambda t: (t.name, t.spec, t.path)) if trusted else (lambda t: (t.spec, t.path))
        known = {key: t for t in recorded for key in keys(t)}
        unknown = [d for d in wanted if d not in known]
        if unknown:
            listed = ", ".join(t.name if trusted else t.spec for t in recorded)
            raise SsdcompareError(
                f"--devices {', '.join(unknown)}: not a target of this sweep; its targets: "
                f"{listed}"
                + (
                    ""
                    if trusted
                    else " (its manifest is not signed by your ssdcompare: name "
                    "each by its device or path, as the manifest gives it, not by a label)"
                )
            )
        names = {known[d].name for d in wanted}
        recorded = [t for t in recorded if t.name in names]
    for target in (part for unit in recorded for part in unit.parts):
        hosts = {target.host.name: target.host} if target.host is not None else {}
        current = resolve_on_host(target.spec, hosts, target.size_bytes if target.kind == "file"
                                  else None)  # fmt: skip
        if current.path != target.path:
            raise SsdcompareError(
                f"{target.spec} now resolves to {current.path}, not {target.path} as when "
                "the sweep started; results would not be comparable"
            )
    return list(recorded)


def _check_planned(manifest: Manifest, jobs: list[RenderedJob]) -> None:
    """Every re-rendered jobfile must be the one planned (same fio options, same engine)."""
    for job in jobs:
        planned = manifest.planned.get(job.target.name, {}).get(job.job_id)
        if planned is not None and planned != job.workload_hash:
            raise SsdcompareError(
                f"resuming would run {job.job_id} on {job.target.name} with a different "
                f"jobfile than planned (workload hash {job.workload_hash}, planned {planned}); "
                "resume with the ssdcompare version that started the sweep, or start a new one"
            )


def _check_identity(manifest: Manifest, targets: list[Target]) -> None:
    problems = []
    nouns: set[str] = set()
    for target in targets:
        recorded = manifest.identities.get(target.name)
        if recorded is None:
            continue  # results from before identities were recorded
        found = differences(recorded, identify(target))
        if found:
            problems.append(f"  - {target.name} ({target.path}): {'; '.join(found)}")
            nouns.add(noun(target))
    if problems:
        what = " or ".join(f"{n}(s)" for n in sorted(nouns))
        raise SsdcompareError(
            f"refusing to resume: not the same {what} as when the sweep started:\n"
            + "\n".join(problems)
            + f"\nIf the {what.replace('(s)', '')} was replaced on purpose, start a new sweep "
            "on it; to resume the others only, give --devices with the unchanged ones."
        )


def _ordered(plan: Plan) -> list[tuple[int, RenderedJob]]:
    """Repeats, then targets, then jobs; in a --states sweep each state's pass is outermost,
    so a drive is emptied and filled once per pass, not once per repeat."""
    passes: list[str | None] = list(plan.suite.states) if plan.suite.expanded else [None]
    return [
        (repeat, job)
        for state in passes
        for repeat in range(1, plan.repeat + 1)
        for target in plan.targets
        for job in plan.jobs_for(target)
        if job.workload.state == state
    ]


def _pending(plan: Plan, results: ResultsDir) -> list[tuple[int, RenderedJob]]:
    """The planned runs not finished (ok, with fio's output in place)."""
    pending = []
    for repeat, job in _ordered(plan):
        status = results.status(job.target.name, job.job_id, repeat)
        if status is None or not results.finished(status):
            pending.append((repeat, job))
    return pending


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
    sampler_factory: Callable[[], Sampler] | None = _sampler,
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
        outcome = _run_locked(plan, results, progress, sampler_factory, clock, job_timeout_s)
    outcome.notes[:0] = notes
    return outcome


def _run_locked(
    plan: Plan,
    results: ResultsDir,
    progress: Callable[[Progress], None] | None,
    sampler_factory: Callable[[], Sampler] | None,
    clock: Callable[[], float],
    job_timeout_s: float | None,
) -> SweepOutcome:
    assert plan.fio is not None
    outcome = SweepOutcome(results=results)
    pending = _pending(plan, results)
    total = len(plan.jobs) * plan.repeat
    outcome.skipped_existing = total - len(pending)
    timing = _Clock(sum(j.workload.duration_s + JOB_OVERHEAD_S for _, j in pending), clock)
    timing.started = clock()
    unusable: dict[str, tuple[str, bool]] = {}  # target -> (reason, only writes blocked)
    unreachable: dict[tuple[str, str], str] = {}  # (target, drive state) -> why not reached

    def report(state: str, number: int, repeat: int, job: RenderedJob, error: str | None) -> None:
        if progress:
            progress(Progress(state, number, total, job.target.name, job.job_id, repeat,
                              timing.elapsed(), timing.eta(), error))  # fmt: skip

    if plan.ceiling:  # measures only what is missing: also a resume of a finished sweep
        try:
            measure_ceiling(plan.fio, results, plan.jobs_for(plan.targets[0]), plan.suite.name,
                            lambda job, error: _say_ceiling(progress, job, total, error),
                            plan.allowed_options)  # fmt: skip
        except KeyboardInterrupt as stop:
            outcome.interrupted, outcome.stop_reason = True, stop_reason(stop)
            return outcome
    number = outcome.skipped_existing
    for batch in _batches(plan, pending):
        runnable: list[tuple[int, RenderedJob]] = []
        state_step: int | None = None
        run_started = clock()
        for repeat, job in batch:
            number += 1
            planned = job.workload.duration_s + JOB_OVERHEAD_S
            blocked = _blocked(job, unusable, results)
            if blocked is None:
                report("start", number, repeat, job, None)
                try:
                    blocked = _preconditioned(plan, results, job, repeat, unusable)
                    if blocked is None:
                        blocked, state_step = _in_state(plan, results, job, repeat, unusable,
                                                        unreachable)  # fmt: skip
                except KeyboardInterrupt as stop:
                    outcome.interrupted, outcome.stop_reason = True, stop_reason(stop)
                    break
            if blocked is not None:
                outcome.statuses.append(_skip(results, job, repeat, blocked))
                timing.done(planned, planned)
                report("skipped", number, repeat, job, blocked)
                continue
            runnable.append((repeat, job))
        if outcome.interrupted:
            break
        if not runnable:
            continue
        try:
            if len(runnable) == 1:
                repeat, job = runnable[0]
                statuses = [_run_one(plan, results, job, repeat, sampler_factory,
                                     job_timeout_s, state_step)]  # fmt: skip
            else:
                statuses = _run_together(plan, results, runnable, sampler_factory,
                                         job_timeout_s)  # fmt: skip
        except KeyboardInterrupt as stop:
            # a stop outside fio (e.g. while preparing): nothing of this run was measured
            outcome.interrupted, outcome.stop_reason = True, stop_reason(stop)
            break
        longest = max(job.workload.duration_s for _, job in runnable) + JOB_OVERHEAD_S
        for (repeat, job), status in zip(runnable, statuses, strict=True):
            outcome.statuses.append(status)
            if job.workload.state == "full" and "trim" in job.workload.directions:
                note_trimmed(results, job, repeat)
            timing.done(job.workload.duration_s + JOB_OVERHEAD_S,
                        (clock() - run_started) * (job.workload.duration_s + JOB_OVERHEAD_S)
                        / longest / len(runnable))  # fmt: skip
            report(status.status, number, repeat, job, status.error)
            _after(plan, job, status, unusable)
        if any(s.status == "interrupted" for s in statuses):
            stopped = next(s for s in statuses if s.status == "interrupted")
            outcome.interrupted, outcome.stop_reason = True, stopped.stopped_by
            break
    return outcome


def _batches(
    plan: Plan, pending: list[tuple[int, RenderedJob]]
) -> list[list[tuple[int, RenderedJob]]]:
    """The runs in the order they go: one at a time; with --parallel-hosts, the same job of
    the same repeat on the n-th device of every host at once."""
    if not plan.parallel_hosts:
        return [[item] for item in pending]
    position: dict[str, int] = {}
    seen: dict[str, int] = {}
    for target in plan.targets:
        host = target.hosts[0].name
        position[target.name] = seen.get(host, 0)
        seen[host] = position[target.name] + 1
    batches: dict[tuple[object, ...], list[tuple[int, RenderedJob]]] = {}
    for repeat, job in pending:
        key = (job.workload.state, repeat, position[job.target.name], job.job_id)
        batches.setdefault(key, []).append((repeat, job))
    return list(batches.values())


def _after(
    plan: Plan, job: RenderedJob, status: RunStatus, unusable: dict[str, tuple[str, bool]]
) -> None:
    """What a failed run means for the jobs after it: a host that went away skips the rest
    of its jobs (the other hosts go on, a resume runs them); an unusable device, its own."""
    if status.status != "failed":
        return
    if status.host_lost:
        lost = set(status.lost_hosts)
        for target in plan.targets:
            if any(h.name in lost for h in target.hosts):
                unusable[target.name] = (f"{status.error} (while {job.job_id} ran on "
                                         f"{job.target.name})", False)  # fmt: skip
    elif status.device_unusable:
        unusable[job.target.name] = _unusable(job, status)


def _say_ceiling(
    progress: Callable[[Progress], None] | None, job: str, total: int, error: str | None
) -> None:
    if progress is not None:
        progress(Progress("ceiling", 0, total, "RAM disk", job, 1, 0.0, 0.0, error))


def _preconditioned(
    plan: Plan,
    results: ResultsDir,
    job: RenderedJob,
    repeat: int,
    unusable: dict[str, tuple[str, bool]],
) -> str | None:
    """Precondition before a job's first run, as the plan says; then why the job must not
    run after all (preconditioning can take hours), or None."""
    if not plan.precondition or repeat != 1:
        return None
    _precondition(plan, results, job, unusable)
    return _blocked(job, unusable, results)


def _in_state(
    plan: Plan,
    results: ResultsDir,
    job: RenderedJob,
    repeat: int,
    unusable: dict[str, tuple[str, bool]],
    unreachable: dict[tuple[str, str], str],
) -> tuple[str | None, int | None]:
    """Put the target in the job's drive state when the job has one (see
    ssdcompare.run.precondition): why the run must be skipped (None: it may run), and the number
    of the state step it follows. A state that could not be reached skips the rest of its
    pass on that target; a target that must not be written any more gets only reads."""
    state = job.workload.state
    if state is None:
        return None, None
    target = job.target
    if (target.name, state) in unreachable:
        return unreachable[(target.name, state)], None
    if not state_needed(results, job):
        return None, results.state_records(target.name)[-1].number
    assert plan.fio is not None
    try:
        with claimed(target, True) as held:
            if not held:
                raise SsdcompareError(f"{target.name} is claimed by another user")
            record = put_in_state(plan.fio, results, plan.jobs_for(target), job, repeat,
                                  _access(plan, results, target),
                                  plan.default_ioengine)  # fmt: skip
    except SsdcompareError as err:
        unusable[target.name] = (f"not put in the {state} state: {err}", True)
        record = None
        reason = f"not put in the {state} state: {err}"
    else:
        reason = f"not put in the {state} state: {record.error}"
    if record is None or not record.ok:
        unreachable[(target.name, state)] = reason
        return reason, None
    return None, record.number


def _access(plan: Plan, results: ResultsDir, target: Target) -> Access:
    """Before every write a sweep makes besides its jobs (preconditioning, state steps): the
    target is still the device the sweep started on and nothing uses it; then its files are
    opened for fio (_opened) while the step runs."""

    @contextlib.contextmanager
    def access() -> Iterator[dict[str, int]]:
        recorded = results.manifest.identities.get(target.name)
        changed = changed_since(recorded, target) if recorded is not None else []
        if changed:
            raise SsdcompareError(f"{target.name} is no longer the {noun(target)} the sweep "
                                  f"started on: {'; '.join(changed)}")  # fmt: skip
        check_in_use(target, exclusive=False)  # the claim is ours: held by the caller
        _check_new_signatures(results, target)
        with _opened(plan, results, target, True) as fds:
            yield fds

    return access


def _precondition(
    plan: Plan, results: ResultsDir, job: RenderedJob, unusable: dict[str, tuple[str, bool]]
) -> None:
    """Before a job's first run: fill its target (once), then run the job until steady, as
    the plan says. The device is held exclusively meanwhile, and before every fio run of it
    the target is checked again (its identity, and that nothing uses it), as before any
    write; a target that fails that gets no preconditioning and no writes, only reads."""
    assert plan.fio is not None
    target = job.target
    check = _access(plan, results, target)
    try:
        with claimed(target, True) as held:
            if not held:
                raise SsdcompareError(f"{target.name} is claimed by another user")
            if "fill" in plan.precondition:
                jobs = plan.jobs_for(target)
                # the sweep's engine, never a job's own: a job may name fio's null engine
                fill(plan.fio, results, jobs, plan.suite.name, plan.default_ioengine, check)
            if "workload" in plan.precondition:
                until_steady(plan.fio, results, job, check)
    except SsdcompareError as err:
        unusable[target.name] = (f"not preconditioned: {err}", True)


def _blocked(
    job: RenderedJob, unusable: dict[str, tuple[str, bool]], results: ResultsDir
) -> str | None:
    """Why this job must not run on its target (the reason it is skipped), or None."""
    blocked = unusable.get(job.target.name)
    for part in job.target.parts:  # a group: every member
        recorded = results.manifest.identities.get(part.name)
        changed = changed_since(recorded, part) if blocked is None and recorded else []
        if changed:
            blocked = unusable[job.target.name] = (
                f"{part.name} is no longer the {noun(part)} the sweep started on: "
                f"{'; '.join(changed)}", False)  # fmt: skip
    if blocked is None and (
        job.writes or results.manifest.precondition or job.workload.state is not None
    ):
        blocked = _in_use(job, results)
        if blocked is not None:
            unusable[job.target.name] = blocked
    if blocked is not None and (not blocked[1] or job.writes):
        return blocked[0]
    return None


def _in_use(job: RenderedJob, results: ResultsDir) -> tuple[str, bool] | None:
    """The guard again, just before a writing job: a device can come into use mid-sweep (a
    mount, a loop device stacked on it) or get a filesystem someone just made. Its writing
    jobs are then skipped; reads may run."""
    try:
        for part in job.target.parts:
            check_in_use(part)
            _check_new_signatures(results, part)
    except SsdcompareError as err:
        return str(err), True
    return None


def _check_new_signatures(results: ResultsDir, target: Target) -> None:
    """Refuse a target that carries a signature (a filesystem, a partition table) it did not
    carry when the sweep started: someone made it meanwhile. Signatures the sweep's own writes
    erased are no reason."""
    recorded = results.manifest.identities.get(target.name)
    if recorded is None:
        return
    new = new_signatures(recorded.signatures, identify(target).signatures)
    if new:
        raise SsdcompareError(
            f"{target.name} now carries {', '.join(new)}, which was not there when the sweep "
            "started: someone made it since; it is not written any more"
        )


def _unusable(job: RenderedJob, status: RunStatus) -> tuple[str, bool]:
    """Why the rest of a target's jobs are skipped, and whether reads may still run."""
    # refused writes (read-only device, no write permission) still allow reads
    writes_only = job.workload.writes and status.fio_errno in WRITE_REFUSED_ERRNOS
    what = "cannot be written" if writes_only else "is unusable"
    return (
        f"{job.target.name} {what} ({job.job_id} failed: {status.error})",
        writes_only,
    )


def _skip(
    results: ResultsDir,
    job: RenderedJob,
    repeat: int,
    reason: str,
    failed_with: int | None = None,
) -> RunStatus:
    """A run that did not measure: skipped for `reason`, or failed before fio started because
    its target could not be opened (`failed_with`, the errno: the device is then judged as
    when fio fails so, see _unusable)."""
    folder = results.prepare_run(job.target.name, job.job_id, repeat)
    status = RunStatus(
        status="skipped" if failed_with is None else "failed", target=job.target.name,
        job=job.job_id, repeat=repeat, workload_hash=job.workload_hash, error=reason,
        fio_errno=failed_with, device_unusable=failed_with is not None,
    )  # fmt: skip
    results.write_status(folder, status)
    return status


def _host_jobfiles(job: RenderedJob, folder: Path, plan: Plan) -> list[tuple[Host, Path]]:
    """A group that spans hosts: its jobfile cut per server (jobfile.<host>.fio), each read
    back and checked like the whole."""
    found = []
    for host, text in split_by_host(job):
        path = folder / f"jobfile.{host.name}.fio"
        write_atomic(path, text)
        facts = read_jobfile(path.read_text(encoding="utf-8"))
        check_sections(facts, sections_of(job.job_id, job.target, host), plan.read_only,
                       plan.allowed_options)  # fmt: skip
        found.append((host, path))
    return found


def _prepare(
    plan: Plan, results: ResultsDir, job: RenderedJob, repeat: int, fds: dict[str, int]
) -> Path:
    """The run's folder with its jobfile, read back from disk as fio will read it and
    checked once more (JobfileError when it breaks a rule). `fds` are the target's files
    opened for fio (see _opened): the jobfile names them /dev/fd/N."""
    target = job.target
    folder = results.prepare_run(target.name, job.job_id, repeat)
    jobfile = folder / JOBFILE
    write_atomic(jobfile, opened_text(job.text, fds))
    # the last look before fio runs: the file on disk, read as fio will read it
    facts = read_jobfile(jobfile.read_text(encoding="utf-8"))
    check_sections(facts, sections_of(job.job_id, target, opened=fds), plan.read_only,
                   plan.allowed_options)  # fmt: skip
    if facts.writes and not job.writes:
        # the guard judged this target from the planned jobfiles, which did not write
        raise JobfileError(
            f"{jobfile} writes to {target.path}, but its plan did not: the safety guard never "
            "checked this target for writing; refusing to run it"
        )
    return folder


@contextlib.contextmanager
def _opened(
    plan: Plan, results: ResultsDir, target: Target, write: bool
) -> Iterator[dict[str, int]]:
    """The target's file members on this machine, opened for fio (ssdcompare.target.file),
    for writing or for reading only: each the very file the sweep recorded, reached without
    following a link, and laid out to its size first where the sweep may change it. Yields
    path -> descriptor; TargetFileError when one is a link now, another file, or cannot be
    opened so."""
    changes = target.name in {t.name for t in plan.modified_targets}
    with contextlib.ExitStack() as stack:
        fds: dict[str, int] = {}
        for part in target.parts:
            if part.kind != "file" or part.host is not None:
                continue  # a device, or a file a fio server opens on its own machine
            recorded = results.manifest.identities.get(part.name)
            key = results.manifest.created_files.get(part.path) or (
                recorded.file_inode if recorded is not None else None)  # fmt: skip
            fd = stack.enter_context(opened(part.path, key, write))
            if changes and part.size_bytes and os.fstat(fd).st_size < part.size_bytes:
                if not write:
                    fd = stack.enter_context(opened(part.path, key, True))
                lay_out(fd, part.size_bytes)
            fds[part.path] = fd
        yield fds


def _timeout(job: RenderedJob) -> float:
    layout = sum(p.size_bytes or 0 for p in job.target.parts if p.kind == "file" and not p.exists)
    return timeout_for(job.workload.duration_s, layout)


def _run_together(
    plan: Plan,
    results: ResultsDir,
    batch: list[tuple[int, RenderedJob]],
    sampler_factory: Callable[[], Sampler] | None,
    job_timeout_s: float | None,
) -> list[RunStatus]:
    """One job on several hosts at the same time (--parallel-hosts): one fio client per host,
    started together, each with its own device's jobfile, output, time limit and status. A
    host that hangs or goes away fails only its own device's run; the others are kept."""
    assert plan.fio is not None
    folders = [_prepare(plan, results, job, repeat, {}) for repeat, job in batch]
    modified = {t.name for t in plan.modified_targets}
    runs = [
        ClientRun(job.target.hosts[0], folder / JOBFILE, folder,
                  job_timeout_s or _timeout(job), readonly=job.target.name not in modified,
                  expected_jobs=[name for name, _ in sections_of(job.job_id, job.target)])
        for (_, job), folder in zip(batch, folders, strict=True)
    ]  # fmt: skip
    remote = any(job.target.remote for _, job in batch)
    sampler = sampler_factory() if sampler_factory and not remote else None
    writes = any(job.writes for _, job in batch)
    parts = [part for _, job in batch for part in job.target.parts]
    started_at = now_iso()
    with claimed_all(parts, writes) as held:
        if not held:
            reason = ("a device of this run was claimed by another user (mounted, in a RAID "
                      "or LVM, or opened exclusively) as the job began")  # fmt: skip
            return [_skip(results, job, repeat, reason) for repeat, job in batch]
        outcomes = run_fio_together(plan.fio, runs, sampler)
    return [
        _record(results, folder, job, repeat, ran, started_at)
        for (repeat, job), folder, ran in zip(batch, folders, outcomes, strict=True)
    ]


def _run_one(
    plan: Plan,
    results: ResultsDir,
    job: RenderedJob,
    repeat: int,
    sampler_factory: Callable[[], Sampler] | None,
    job_timeout_s: float | None,
    state_step: int | None = None,
) -> RunStatus:
    target, fio = job.target, plan.fio
    assert fio is not None
    with contextlib.ExitStack() as stack:
        try:
            fds = stack.enter_context(_opened(plan, results, target, job.writes))
        except TargetFileError as err:
            # an immutable file, say, fails as fio's own open would; a swapped one is skipped
            failed = err.errno if err.errno in DEVICE_ERRNOS else None
            return _skip(results, job, repeat, str(err), failed_with=failed)
        folder = _prepare(plan, results, job, repeat, fds)
        timeout = job_timeout_s or _timeout(job)
        started_at = now_iso()
        # the sampler sees this machine only: a remote host's CPU is known from fio's figures
        sampler = sampler_factory() if sampler_factory and not target.remote else None
        # a target no planned jobfile writes (and not a new file) was never offered for
        # writing: fio itself refuses to write, create or extend anything there (--readonly)
        readonly = all(target.name != t.name for t in plan.modified_targets)
        clients = _host_jobfiles(job, folder, plan) if len(target.hosts) > 1 else []
        # a group's member fio dropped, or a job a server refused (fio's client still exits
        # 0), must not pass for a result: every section must be in the output, with I/O
        expected = ([name for name, _ in sections_of(job.job_id, target)]
                    if target.members or target.hosts else [])  # fmt: skip
        with claimed_all(target.parts, job.writes) as held:
            if not held:
                # claimed between the last look and now: what claimed it must not be written
                reason = (f"{target.name} was claimed by another user (mounted, in a RAID or "
                          "LVM, or opened exclusively) as the job began")  # fmt: skip
                return _skip(results, job, repeat, reason)
            before = probes.snapshot(target)  # read around the run, never failing it
            ran = run_fio(fio, folder / JOBFILE, folder, timeout, sampler, readonly=readonly,
                          host=target.host, clients=clients, expected_jobs=expected,
                          pass_fds=list(fds.values()))  # fmt: skip
            results.write_probes(folder, probes.record(before, probes.snapshot(target)))
    return _record(results, folder, job, repeat, ran, started_at, state_step)


def _record(
    results: ResultsDir,
    folder: Path,
    job: RenderedJob,
    repeat: int,
    ran: RunOutcome,
    started_at: str,
    state_step: int | None = None,
) -> RunStatus:
    """A finished fio run written down: its large logs compressed, its status stored."""
    compress_large(folder, TIMESERIES_PREFIX)
    status = status_of(ran, target=job.target.name, job=job.job_id, repeat=repeat,
                       workload_hash=job.workload_hash, started_at=started_at,
                       state_step=state_step)  # fmt: skip
    results.write_status(folder, status)
    return status
