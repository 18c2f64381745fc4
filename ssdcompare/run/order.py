"""The order a sweep's runs go in: repeat > target > job (in a --states sweep each state's
pass outermost), the runs of it not finished yet, and the batches --parallel-hosts runs
together.

With several repeats, each round visits every device before the next round starts, so slow
drift (temperature, background activity, a drive's cache state) spreads over all devices
instead of favouring the one measured first.
"""

from __future__ import annotations

from ssdcompare.fio.jobfile import RenderedJob
from ssdcompare.results.store import ResultsDir
from ssdcompare.run.plan import Plan

Run = tuple[int, RenderedJob]  # (repeat, job)


def ordered(plan: Plan) -> list[Run]:
    """Repeats, then targets, then jobs; in a --states sweep each state's pass is outermost,
    so a drive is emptied and filled once per pass, not once per repeat."""
    passes: list[str | None] = list(plan.suite.states) if plan.suite.expanded else [None]
    runs = [
        (repeat, job)
        for state in passes
        for repeat in range(1, plan.repeat + 1)
        for target in plan.targets
        for job in plan.jobs_for(target)
        if job.workload.state == state
    ]
    # a curve paced at a share of the fastest device's maximum needs every device's maximum
    # first: within a pass and repeat, those unpaced runs go ahead (sorted is stable)
    return sorted(runs, key=lambda run: (*_round(passes, run), not _goes_first(run[1])))


def _round(passes: list[str | None], run: Run) -> tuple[int, int]:
    repeat, job = run
    return passes.index(job.workload.state), repeat


def _goes_first(job: RenderedJob) -> bool:
    """The unpaced run of a curve whose points are shares of the fastest device's maximum."""
    workload = job.workload
    return (
        workload.curve_base == "fastest"
        and workload.curve is not None
        and (workload.point is None)
    )


def pending(plan: Plan, results: ResultsDir) -> list[Run]:
    """The planned runs not finished (ok, with fio's output in place)."""
    found = []
    for repeat, job in ordered(plan):
        status = results.status(job.target.name, job.job_id, repeat)
        if status is None or not results.finished(status):
            found.append((repeat, job))
    return found


def batches(plan: Plan, runs: list[Run]) -> list[list[Run]]:
    """The runs in the order they go: one at a time; with --parallel-hosts, the same job of
    the same repeat on the n-th device of every host at once."""
    if not plan.parallel_hosts:
        return [[item] for item in runs]
    position: dict[str, int] = {}
    seen: dict[str, int] = {}
    for target in plan.targets:
        host = target.hosts[0].name
        position[target.name] = seen.get(host, 0)
        seen[host] = position[target.name] + 1
    found: dict[tuple[object, ...], list[Run]] = {}
    for repeat, job in runs:
        key = (job.workload.state, repeat, position[job.target.name], job.job_id)
        found.setdefault(key, []).append((repeat, job))
    return list(found.values())
