"""Whether a sweep may use a target now, and its files opened for fio.

Before every run the target must still be the device (or file) the sweep started on. Before
a writing job the guard looks again: nothing uses the target (a mount, a loop device stacked
on it, a process) and it carries no signature someone made since the start; a target found
so is written no more (its reads may still run). Before every other write a sweep makes
(preconditioning, drive-state steps) `checked_access` looks the same way, just before it: a
job that only reads needs no look of its own, whatever is done to its target before it. What
a failed run means for the jobs after it (an unusable device, a host that went away) is
decided here too.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator

from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.jobfile import RenderedJob
from ssdcompare.results.models import RunStatus
from ssdcompare.results.store import ResultsDir
from ssdcompare.run.plan import Plan
from ssdcompare.run.precondition import Access
from ssdcompare.target.devices import Target
from ssdcompare.target.file import (
    changed_since_marked,
    lay_out,
    mark,
    opened,
    still_as_marked,
    unchanged_since_written,
    written,
)
from ssdcompare.target.guard import check_in_use
from ssdcompare.target.identity import changed_since, new_signatures, noun, signatures_now

WRITE_REFUSED_ERRNOS = {errno.EROFS, errno.EPERM, errno.EACCES}

# target -> (why it must not be used, whether reads may still run)
Unusable = dict[str, tuple[str, bool]]


def blocked(job: RenderedJob, unusable: Unusable, results: ResultsDir) -> str | None:
    """Why this job must not run on its target (the reason it is skipped), or None."""
    found = unusable.get(job.target.name)
    for part in job.target.parts:  # a group: every member
        changed = _not_as_started(results, part) if found is None else None
        if changed is not None:
            found = unusable[job.target.name] = (changed, False)
    if found is None and job.writes:
        found = _in_use(job, results)
        if found is not None:
            unusable[job.target.name] = found
    if found is not None and (not found[1] or job.writes):
        return found[0]
    return None


def _not_as_started(results: ResultsDir, target: Target) -> str | None:
    """Why `target` is no longer the device (or file) the sweep recorded at its start, or
    None (also when the sweep recorded nothing of it)."""
    recorded = results.manifest.identities.get(target.name)
    changed = changed_since(recorded, target) if recorded is not None else []
    if not changed:
        return None
    return (f"{target.name} is no longer the {noun(target)} the sweep started on: "
            f"{'; '.join(changed)}")  # fmt: skip


def _in_use(job: RenderedJob, results: ResultsDir) -> tuple[str, bool] | None:
    """The guard again, just before a writing job: a device can come into use mid-sweep (a
    mount, a loop device stacked on it). Its writing jobs are then skipped; reads may run.
    (Signatures someone made meanwhile are looked for once the run holds its claim on the
    target: `made_meanwhile`.)"""
    try:
        for part in job.target.parts:
            check_in_use(part)
    except SsdcompareError as err:
        return str(err), True
    return None


def made_meanwhile(results: ResultsDir, job: RenderedJob) -> str | None:
    """Why a writing job must not run after all: a signature on its target (a filesystem, a
    partition table) that was not there when the sweep started. Looked for once the run holds
    its exclusive claim on the target, so that nothing can make one between this look and
    fio's writes."""
    if not job.writes:
        return None
    try:
        for part in job.target.parts:
            check_new_signatures(results, part)
    except SsdcompareError as err:
        return str(err)
    return None


def check_new_signatures(results: ResultsDir, target: Target) -> None:
    """Refuse a target that carries a signature (a filesystem, a partition table) it did not
    carry when the sweep started: someone made it meanwhile. Signatures the sweep's own writes
    erased are no reason. A file the sweep made and only laid out since (nothing else wrote
    it: target.file.unchanged_since_written) needs no look: random data can pass for a
    signature (blkid has taken it for a jbd journal), and none can be anyone's there."""
    recorded = results.manifest.identities.get(target.name)
    if recorded is None:
        return
    local_file = target.kind == "file" and not target.remote
    changed = local_file and changed_since_marked(target.path)
    if local_file and not changed and unchanged_since_written(target.path):
        return
    new = new_signatures(recorded.signatures, signatures_now(target))
    if changed and not new:
        raise SsdcompareError(
            f"{target.name} was changed by someone else since the sweep last wrote it (its "
            "size, modification or change time moved, or it is another file now): it is not "
            "written any more"
        )
    if new:
        raise SsdcompareError(
            f"{target.name} now carries {', '.join(new)}, which was not there when the sweep "
            "started: someone made it since (or, very rarely, random data the sweep wrote "
            "passes for one); it is not written any more. See what it is with blkid -p "
            f"{target.path}; if it is only data the sweep wrote, a new sweep with "
            "--destroy-data may write over it"
        )


def after_run(plan: Plan, job: RenderedJob, status: RunStatus, unusable: Unusable) -> None:
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


def _unusable(job: RenderedJob, status: RunStatus) -> tuple[str, bool]:
    """Why the rest of a target's jobs are skipped, and whether reads may still run."""
    # refused writes (read-only device, no write permission) still allow reads
    writes_only = job.workload.writes and status.fio_errno in WRITE_REFUSED_ERRNOS
    what = "cannot be written" if writes_only else "is unusable"
    return (
        f"{job.target.name} {what} ({job.job_id} failed: {status.error})",
        writes_only,
    )


def checked_access(plan: Plan, results: ResultsDir, target: Target) -> Access:
    """Before every write a sweep makes besides its jobs (preconditioning, state steps): the
    target is still the device the sweep started on and nothing uses it; then its files are
    opened for fio (opened_for_fio) while the step runs."""

    @contextlib.contextmanager
    def access() -> Iterator[dict[str, int]]:
        changed = _not_as_started(results, target)
        if changed is not None:
            raise SsdcompareError(changed)
        check_in_use(target, exclusive=False)  # the claim is ours: held by the caller
        check_new_signatures(results, target)
        with opened_for_fio(plan, results, target, True) as fds:
            try:
                yield fds
            finally:  # written, even cut short
                wrote(fds)

    return access


def wrote(fds: dict[str, int]) -> None:
    """fio has just written to these open files (opened_for_fio), even cut short: each is
    marked as one ssdcompare made (target.file.mark). Someone may have written there too
    meanwhile, so the next writing run looks at it again."""
    for fd in fds.values():
        mark(fd)


@contextlib.contextmanager
def opened_for_fio(
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
                ours = unchanged_since_written(part.path)  # made here, nothing written since
                held = still_as_marked(part.path)  # no one changed it since the sweep wrote it
                if not write:
                    fd = stack.enter_context(opened(part.path, key, True))
                lay_out(fd, part.size_bytes)
                if ours:
                    written(fd)  # still nothing but the sweep's own data
                elif held:
                    mark(fd)  # its mark holds on: what changed since is the sweep's lay-out
            fds[part.path] = fd
        yield fds
