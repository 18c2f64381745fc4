"""A sweep: every planned job on every target, one at a time, results kept as they finish.

Order: repeat > target > job. With one repeat this is device by device, each running the
suite's jobs in the same order. With several repeats, each round visits every device before
the next round starts, so slow drift (temperature, background activity, a drive's cache
state) spreads over all devices instead of favouring the one measured first.
"""

from __future__ import annotations

import errno
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ssdcompare.cpu import CpuSampler
from ssdcompare.devices import Target, resolve_target
from ssdcompare.errors import SsdcompareError
from ssdcompare.fio import FioInfo, find_fio
from ssdcompare.guard import Finding, check_write_safety
from ssdcompare.jobfile import RenderedJob, render
from ssdcompare.metadata import device_info, host_info
from ssdcompare.plan import JOB_OVERHEAD_S, Plan
from ssdcompare.runner import Sampler, run_fio, timeout_for
from ssdcompare.store import Manifest, ResultsDir, RunStatus, now_iso, write_atomic

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
    skipped_existing: int = 0
    guard_overrides: list[Finding] = field(default_factory=list)

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
    destroy_data: bool = False,
    command_line: list[str] | None = None,
    read_only: bool = False,
) -> tuple[ResultsDir, list[Finding]]:
    """Check safety for every target, then create the results folder with its manifest.

    The guard runs for all targets before anything is written, so a sweep never half-runs
    and then refuses.
    """
    if plan.fio is None:
        plan.fio = find_fio()
    findings = check_write_safety(plan.targets, plan.suite.writes, destroy_data)
    manifest = Manifest(
        created_at=now_iso(),
        command_line=command_line if command_line is not None else list(sys.argv),
        suite=plan.suite,
        targets=plan.targets,
        devices=[device_info(t) for t in plan.targets],
        host=host_info(plan.fio.version, plan.fio.path),
        repeat=plan.repeat,
        ioengine=plan.jobs[0].ioengine if plan.jobs else "io_uring",
        read_only=read_only,
        destroy_data=destroy_data,
        guard_overrides=[f"{f.device}: {f.detail}" for f in findings],
    )
    results = ResultsDir.create(out_dir or default_results_dir(plan.suite.name), manifest)
    return results, findings


def reopen(path: Path, destroy_data: bool = False, fio_bin: str | None = None) -> tuple[
    Plan, ResultsDir, list[Finding]
]:
    """Rebuild the plan of an earlier sweep from its manifest, for --resume."""
    results = ResultsDir.open(path)
    manifest = results.manifest
    targets = []
    for recorded in manifest.targets:
        current = resolve_target(recorded.spec, recorded.size_bytes if recorded.kind == "file"
                                 else None)  # fmt: skip
        if current.path != recorded.path:
            raise SsdcompareError(
                f"{recorded.spec} now resolves to {current.path}, not {recorded.path} as when "
                "the sweep started; results would not be comparable"
            )
        targets.append(recorded)
    fio = find_fio(fio_bin)
    if manifest.host.fio_version and fio.version != manifest.host.fio_version:
        raise SsdcompareError(
            f"the sweep started with {manifest.host.fio_version}, this fio is {fio.version}; "
            "resume with the same fio so the results stay comparable"
        )
    jobs = [
        render(workload, target, manifest.suite.name, manifest.ioengine)
        for target in targets
        for workload in manifest.suite.workloads
    ]
    plan = Plan(suite=manifest.suite, targets=targets, jobs=jobs, repeat=manifest.repeat, fio=fio)
    findings = check_write_safety(
        targets, manifest.suite.writes, destroy_data or manifest.destroy_data
    )
    manifest.resumed_at.append(now_iso())
    results.save_manifest()
    return plan, results, findings


def _ordered(plan: Plan) -> list[tuple[int, RenderedJob]]:
    return [
        (repeat, job)
        for repeat in range(1, plan.repeat + 1)
        for target in plan.targets
        for job in plan.jobs_for(target)
    ]


def run(
    plan: Plan,
    results: ResultsDir,
    progress: Callable[[Progress], None] | None = None,
    sampler_factory: Callable[[], Sampler] | None = _sampler,
    clock: Callable[[], float] = time.monotonic,
) -> SweepOutcome:
    """Run every planned fio job not yet finished in `results`.

    Finished runs (status ok) are skipped, so the same call resumes an interrupted sweep.
    Ctrl-C stops fio cleanly, records the run as interrupted and returns with
    `interrupted=True`; nothing finished before is touched.
    """
    if plan.fio is None:
        plan.fio = find_fio()
    outcome = SweepOutcome(results=results)
    order = _ordered(plan)
    pending = []
    for repeat, job in order:
        status = results.status(job.target.name, job.job_id, repeat)
        if status is not None and status.status == "ok":
            outcome.skipped_existing += 1
        else:
            pending.append((repeat, job))
    total = len(order)
    planned_left = sum(j.workload.duration_s + JOB_OVERHEAD_S for _, j in pending)
    planned_done = actual_done = 0.0
    started = clock()
    unusable: dict[str, tuple[str, bool]] = {}  # target -> (reason, only writes blocked)

    def eta() -> float:
        scale = actual_done / planned_done if planned_done else 1.0
        return (planned_left - planned_done) * scale

    for number, (repeat, job) in enumerate(pending, start=outcome.skipped_existing + 1):
        target = job.target
        planned = job.workload.duration_s + JOB_OVERHEAD_S
        blocked = unusable.get(target.name)
        if blocked is not None and (not blocked[1] or job.workload.writes):
            folder = results.prepare_run(target.name, job.job_id, repeat)
            status = RunStatus(
                status="skipped", target=target.name, job=job.job_id, repeat=repeat,
                workload_hash=job.workload_hash, error=blocked[0],
            )  # fmt: skip
            results.write_status(folder, status)
            outcome.statuses.append(status)
            planned_done += planned
            actual_done += planned
            continue
        if progress:
            progress(Progress("start", number, total, target.name, job.job_id, repeat,
                              clock() - started, eta()))  # fmt: skip
        run_started = clock()
        try:
            status = _run_one(plan.fio, results, job, repeat, sampler_factory)
        except KeyboardInterrupt:
            # Ctrl-C outside fio (e.g. while preparing): nothing of this run was measured
            outcome.interrupted = True
            break
        outcome.statuses.append(status)
        planned_done += planned
        actual_done += clock() - run_started
        if progress:
            progress(Progress(status.status, number, total, target.name, job.job_id, repeat,
                              clock() - started, eta(), status.error))  # fmt: skip
        if status.status == "interrupted":
            outcome.interrupted = True
            break
        if status.status == "failed" and getattr(status, "device_unusable", False):
            # refused writes (read-only device, no write permission) still allow reads
            writes_only = job.workload.writes and status.fio_errno in WRITE_REFUSED_ERRNOS
            what = "cannot be written" if writes_only else "is unusable"
            unusable[target.name] = (
                f"skipped: {target.name} {what} ({job.job_id} failed: {status.error})",
                writes_only,
            )
    return outcome


def _run_one(
    fio: FioInfo,
    results: ResultsDir,
    job: RenderedJob,
    repeat: int,
    sampler_factory: Callable[[], Sampler] | None,
) -> RunStatus:
    target: Target = job.target
    folder = results.prepare_run(target.name, job.job_id, repeat)
    jobfile = folder / "jobfile.fio"
    write_atomic(jobfile, job.text)
    layout = (target.size_bytes or 0) if target.kind == "file" and not target.exists else 0
    timeout = timeout_for(job.workload.duration_s, layout)
    started_at = now_iso()
    sampler = sampler_factory() if sampler_factory else None
    ran = run_fio(fio, jobfile, folder, timeout, sampler)
    status = RunStatus(
        status=ran.state,
        target=target.name,
        job=job.job_id,
        repeat=repeat,
        workload_hash=job.workload_hash,
        started_at=started_at,
        finished_at=now_iso(),
        duration_s=ran.duration_s,
        exit_code=ran.exit_code,
        fio_errno=ran.fio_errno,
        error=ran.error,
        stderr_tail=ran.stderr_tail,
        command=[fio.path, "--output-format=json+", "--output=fio.json", "jobfile.fio"],
        sampler_cpu_pct=ran.sampler_cpu_pct,
        device_unusable=ran.device_unusable,
    )
    results.write_status(folder, status)
    return status
