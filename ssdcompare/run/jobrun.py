"""One run of a job in a sweep, as a sequence of steps:

1. the target checked and opened as the sweep recorded it (its files handed to fio as
   /dev/fd/N, never reached through a link);
2. the jobfile rendered into the run's folder, read back from disk as fio will read it and
   checked once more;
3. the target claimed (a writing job's block devices held exclusively) and, for a writing
   job, looked at once more for a signature someone made since the sweep started;
4. the probes read (ssdcompare.target.probes), fio run while they watch, the probes read
   again;
5. everything stored: the probes' readings, large logs compressed, the status last.

The checks before a run (is the target still usable) are ssdcompare.run.access's; with
--parallel-hosts, `run_together` runs one job on a device of every host at once.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable
from pathlib import Path

from ssdcompare.fio.check import JobfileError, check_sections, read_jobfile
from ssdcompare.fio.jobfile import RenderedJob, opened_text, sections_of, split_by_host
from ssdcompare.fio.logs import compress_large
from ssdcompare.results.files import write_atomic
from ssdcompare.results.models import RunStatus, now_iso, status_of
from ssdcompare.results.store import JOBFILE, ResultsDir, host_jobfile
from ssdcompare.run.access import made_meanwhile, opened_for_fio, wrote
from ssdcompare.run.order import Run
from ssdcompare.run.plan import Plan
from ssdcompare.run.runner import (
    DEVICE_ERRNOS,
    ClientRun,
    RunOutcome,
    Sampler,
    run_fio,
    run_fio_together,
    timeout_for,
)
from ssdcompare.suite.options import TIMESERIES_PREFIX
from ssdcompare.target import probes
from ssdcompare.target.devices import Target
from ssdcompare.target.file import TargetFileError
from ssdcompare.target.guard import claimed_all
from ssdcompare.target.hosts import Host

SamplerFactory = Callable[[], Sampler]


def run_one(
    plan: Plan,
    results: ResultsDir,
    job: RenderedJob,
    repeat: int,
    sampler_factory: SamplerFactory | None,
    job_timeout_s: float | None,
    state_step: int | None = None,
) -> RunStatus:
    """One run of `job` on its target, step by step (see the module). A run whose target
    cannot be opened or claimed as it begins is recorded as skipped (or failed, as fio's own
    open would have failed); `state_step` is the drive-state step it follows."""
    with contextlib.ExitStack() as stack:
        try:  # 1. the target, opened as the sweep recorded it
            fds = stack.enter_context(opened_for_fio(plan, results, job.target, job.writes))
        except TargetFileError as err:
            # an immutable file, say, fails as fio's own open would; a swapped one is skipped
            failed = err.errno if err.errno in DEVICE_ERRNOS else None
            return skip(results, job, repeat, str(err), failed_with=failed)
        folder = prepare(plan, results, job, repeat, fds)  # 2. the jobfile, checked
        started_at = now_iso()
        run = _fio_run(plan, job, folder, fds, sampler_factory, job_timeout_s)
        with claimed_all(job.target.parts, job.writes) as held:  # 3. the claim
            if not held:
                # claimed between the last look and now: what claimed it must not be written
                return skip(results, job, repeat, _claimed_reason(job.target.name))
            made = made_meanwhile(results, job)  # nothing can make one from here on
            if made is not None:
                return skip(results, job, repeat, made)
            with probes.around(job.target) as readings:  # 4. read around the run
                try:
                    ran = run()
                finally:
                    if job.writes:  # what fio wrote, even cut short, is the sweep's own
                        wrote(fds)
        results.write_probes(folder, readings)  # 5. stored
    status = store_run(results, folder, job, repeat, ran, started_at, state_step)
    if readings.stop is not None:  # asked to stop while the probes read after the run
        raise StoppedAfterRun(status, readings.stop)
    return status


class StoppedAfterRun(KeyboardInterrupt):
    """A stop (Ctrl-C, SIGTERM) asked for while the probes read after a run that fio had
    finished: the run is stored (`status`), then the sweep stops as `stop` asked."""

    def __init__(self, status: RunStatus, stop: KeyboardInterrupt) -> None:
        super().__init__()
        self.status, self.stop = status, stop


def prepare(
    plan: Plan, results: ResultsDir, job: RenderedJob, repeat: int, fds: dict[str, int]
) -> Path:
    """The run's folder with its jobfile, read back from disk as fio will read it and
    checked once more (JobfileError when it breaks a rule). `fds` are the target's files
    opened for fio (see access.opened_for_fio): the jobfile names them /dev/fd/N."""
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


def sampler_and_readonly(
    plan: Plan, target: Target, sampler_factory: SamplerFactory | None
) -> tuple[Sampler | None, bool]:
    """For a fio run on `target`: the CPU sampler, and whether fio runs with --readonly."""
    # the sampler sees this machine only: a remote host's CPU is known from fio's figures
    sampler = sampler_factory() if sampler_factory and not target.remote else None
    # a target no planned jobfile writes (and not a new file) was never offered for
    # writing: fio itself refuses to write, create or extend anything there (--readonly)
    readonly = all(target.name != t.name for t in plan.modified_targets)
    return sampler, readonly


def _fio_run(
    plan: Plan,
    job: RenderedJob,
    folder: Path,
    fds: dict[str, int],
    sampler_factory: SamplerFactory | None,
    job_timeout_s: float | None,
) -> Callable[[], RunOutcome]:
    """fio's run of the job in `folder`, ready to start: its time limit, the CPU sampler,
    --readonly where the sweep never offered the target for writing, a group's jobfile cut
    per server, the job sections fio must report, and the target's open files."""
    target, fio = job.target, plan.fio
    assert fio is not None
    sampler, readonly = sampler_and_readonly(plan, target, sampler_factory)
    clients = _host_jobfiles(job, folder, plan) if len(target.hosts) > 1 else []
    # a group's member fio dropped, or a job a server refused (fio's client still exits
    # 0), must not pass for a result: every section must be in the output, with I/O
    expected = ([name for name, _ in sections_of(job.job_id, target)]
                if target.members or target.hosts else [])  # fmt: skip
    return functools.partial(
        run_fio, fio, folder / JOBFILE, folder, job_timeout_s or _timeout(job), sampler,
        readonly=readonly, host=target.host, clients=clients, expected_jobs=expected,
        pass_fds=list(fds.values()),
    )  # fmt: skip


def _host_jobfiles(job: RenderedJob, folder: Path, plan: Plan) -> list[tuple[Host, Path]]:
    """A group that spans hosts: its jobfile cut per server (jobfile.<host>.fio), each read
    back and checked like the whole."""
    found = []
    for host, text in split_by_host(job):
        path = host_jobfile(folder, host.name)
        write_atomic(path, text)
        facts = read_jobfile(path.read_text(encoding="utf-8"))
        check_sections(facts, sections_of(job.job_id, job.target, host), plan.read_only,
                       plan.allowed_options)  # fmt: skip
        found.append((host, path))
    return found


def _timeout(job: RenderedJob) -> float:
    layout = sum(p.size_bytes or 0 for p in job.target.parts if p.kind == "file" and not p.exists)
    return timeout_for(job.workload.duration_s, layout)


def _claimed_reason(target: str) -> str:
    return (f"{target} was claimed by another user (mounted, in a RAID or LVM, or opened "
            "exclusively) as the job began")  # fmt: skip


def run_together(
    plan: Plan,
    results: ResultsDir,
    batch: list[Run],
    sampler_factory: SamplerFactory | None,
    job_timeout_s: float | None,
) -> list[RunStatus]:
    """One job on several hosts at the same time (--parallel-hosts): one fio client per host,
    started together, each with its own device's jobfile, output, time limit and status. A
    host that hangs or goes away fails only its own device's run; the others are kept."""
    assert plan.fio is not None
    folders = [prepare(plan, results, job, repeat, {}) for repeat, job in batch]
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
            return [skip(results, job, repeat, reason) for repeat, job in batch]
        outcomes = run_fio_together(plan.fio, runs, sampler)
    return [
        store_run(results, folder, job, repeat, ran, started_at)
        for (repeat, job), folder, ran in zip(batch, folders, outcomes, strict=True)
    ]


def store_run(
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


def skip(
    results: ResultsDir,
    job: RenderedJob,
    repeat: int,
    reason: str,
    failed_with: int | None = None,
) -> RunStatus:
    """A run that did not measure: skipped for `reason`, or failed before fio started because
    its target could not be opened (`failed_with`, the errno: the device is then judged as
    when fio fails so, see access.after_run)."""
    folder = results.prepare_run(job.target.name, job.job_id, repeat)
    status = RunStatus(
        status="skipped" if failed_with is None else "failed", target=job.target.name,
        job=job.job_id, repeat=repeat, workload_hash=job.workload_hash, error=reason,
        fio_errno=failed_with, device_unusable=failed_with is not None,
    )  # fmt: skip
    results.write_status(folder, status)
    return status
