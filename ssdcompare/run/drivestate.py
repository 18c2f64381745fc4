"""A target put in the state a job of a sweep needs, before the job runs: a PTS test's purge
(before its first round), preconditioning as the plan says (a fill before the target's first
job, the job's rounds until steady before its first run) and the job's drive state
(`--states`: a discard for empty, a fill for full).

The target is held exclusively meanwhile, and before every write of it the target is looked
at again (ssdcompare.run.access.checked_access); a target that fails that gets no
preconditioning and no writes, only reads. The steps themselves are in
ssdcompare.run.precondition and ssdcompare.run.purge.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager

from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.jobfile import RenderedJob
from ssdcompare.results.models import PurgeRecord, now_iso
from ssdcompare.results.store import ResultsDir
from ssdcompare.run.access import Unusable, blocked, checked_access
from ssdcompare.run.plan import Plan
from ssdcompare.run.precondition import fill, put_in_state, state_needed, until_steady
from ssdcompare.run.purge import erase, intent
from ssdcompare.target.devices import Target
from ssdcompare.target.guard import claimed

# (target, drive state) -> why that state could not be reached: the rest of its pass skips
Unreachable = dict[tuple[str, str], str]


def settled(results: ResultsDir, target: str) -> bool:
    """Whether the purge before a PTS test on `target` is decided: done, or left undone on
    purpose (a record without an error). One that failed is not: a resume tries it again."""
    record = results.purge_record(target)
    return record is not None and record.error is None


def purged(
    plan: Plan, results: ResultsDir, target: Target, unusable: Unusable
) -> PurgeRecord | None:
    """The purge before a PTS test's first round on `target` (ssdcompare.run.purge), unless
    it was decided before (a resume): the target purged where --destroy-data offered it, or
    recorded as not purged. The new record, or None when there was nothing to decide. A
    purge that failed makes the target unusable, so the rest of its test is skipped: its
    results would pass for a purged drive's."""
    if plan.purge is None or settled(results, target.name):
        return None
    if target.name in plan.offered and plan.purge != "none":
        record = _purge(plan, results, target)
    else:
        record = PurgeRecord(target=target.name, purged=False, how="none",
                             detail=intent(plan.purge, target, plan.offered,
                                           results.manifest.created_files) or "")  # fmt: skip
    results.save_purge_record(record)
    if record.error is not None:
        unusable[target.name] = (f"not purged: {record.error}", False)
    return record


def _purge(plan: Plan, results: ResultsDir, target: Target) -> PurgeRecord:
    """Purge `target` as the plan says, held exclusively and looked at just before as before
    any write (still the device the sweep started on, nothing uses it, no signature made
    since); the record of how it went. One cut short is recorded before the stop goes on."""
    assert plan.purge is not None
    record = PurgeRecord(target=target.name, purged=False, how=plan.purge, detail="",
                         started_at=now_iso())  # fmt: skip
    started = time.monotonic()
    try:
        with claimed(target, True) as held:
            if not held:
                raise SsdcompareError(f"{target.name} is claimed by another user")
            with checked_access(plan, results, target)() as fds:
                record.detail = erase(plan.purge, target, fds.get(target.path))
        record.purged = True
    except KeyboardInterrupt:
        _purge_ended(record, started, "interrupted before it finished")
        results.save_purge_record(record)
        raise
    except SsdcompareError as err:
        record.error = str(err)
    except OSError as err:
        record.error = f"{plan.purge} failed: {err.strerror or err}"
    _purge_ended(record, started, record.error)
    return record


def _purge_ended(record: PurgeRecord, started: float, error: str | None) -> None:
    """A purge's record as it ended (`error`: why it did not purge, or None)."""
    record.seconds = round(time.monotonic() - started, 3)
    record.error = error
    if error is not None:
        record.purged, record.detail = False, f"not purged: {error}"


def preconditioned(
    plan: Plan, results: ResultsDir, job: RenderedJob, repeat: int, unusable: Unusable
) -> str | None:
    """Precondition before a job's first run, as the plan says; then why the job must not
    run after all (preconditioning can take hours), or None."""
    if not plan.precondition or repeat != 1:
        return None
    if not _precondition(plan, results, job, unusable):
        return None  # nothing done (done before): the look just before still holds
    return blocked(job, unusable, results)


def _precondition(plan: Plan, results: ResultsDir, job: RenderedJob, unusable: Unusable) -> bool:
    """Before a job's first run: fill its target (once), then run the job until steady, as
    the plan says. The device is held exclusively meanwhile, and before every fio run of it
    the target is checked again (its identity, and that nothing uses it), as before any
    write; a target that fails that gets no preconditioning and no writes, only reads.
    Whether it did anything (wrote, or found the target must not be written)."""
    assert plan.fio is not None
    target = job.target
    checked = checked_access(plan, results, target)
    writes: list[None] = []

    def check() -> AbstractContextManager[dict[str, int]]:
        writes.append(None)  # a write follows, or the look refuses it
        return checked()

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
        return True
    return bool(writes)


def in_state(
    plan: Plan,
    results: ResultsDir,
    job: RenderedJob,
    repeat: int,
    unusable: Unusable,
    unreachable: Unreachable,
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
                                  checked_access(plan, results, target),
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
