"""A target put in the state a job of a sweep needs, before the job runs: preconditioning as
the plan says (a fill before the target's first job, the job's rounds until steady before its
first run) and the job's drive state (`--states`: a discard for empty, a fill for full).

The target is held exclusively meanwhile, and before every write of it the target is looked
at again (ssdcompare.run.access.checked_access); a target that fails that gets no
preconditioning and no writes, only reads. The steps themselves are in
ssdcompare.run.precondition.
"""

from __future__ import annotations

from contextlib import AbstractContextManager

from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.jobfile import RenderedJob
from ssdcompare.results.store import ResultsDir
from ssdcompare.run.access import Unusable, blocked, checked_access
from ssdcompare.run.plan import Plan
from ssdcompare.run.precondition import fill, put_in_state, state_needed, until_steady
from ssdcompare.target.guard import claimed

# (target, drive state) -> why that state could not be reached: the rest of its pass skips
Unreachable = dict[tuple[str, str], str]


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
