"""A PTS test's rounds (ssdcompare.suite.pts): each round of a group runs its jobs back to
back in one fio run on one target, is cut into each job's own run, and adds the tracking
variable's figure to the group's record until the window is steady or the rounds run out.

A round goes through a single run's steps (ssdcompare.run.jobrun): the target opened as the
sweep recorded it, the jobfile written and read back as fio will read it and checked section
by section, the target claimed and looked at once more, the probes read around fio. Then
each job's part is stored as a run of its own under runs/<target>/<job>/r<round>/ (the round
number is the run's repeat): its jobfile as it would run alone, its part of fio's output, its
logs, the CPU samples taken while it ran and the round's probe readings. The round's whole
output stays in rounds/<target>/<group>/r<round>/.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.check import check_sections, read_jobfile
from ssdcompare.fio.jobfile import RenderedJob, opened_text, sections_of
from ssdcompare.fio.logs import compress_large
from ssdcompare.fio.result.models import FioOutputError
from ssdcompare.fio.result.reader import parse_fio_file
from ssdcompare.fio.rounds import (
    job_output,
    lived_spans_s,
    process_numbers,
    round_text,
    section_spans_s,
    tracked_figure,
)
from ssdcompare.judge.cpu import CpuTrace, trace_from
from ssdcompare.judge.steady import judge_rounds
from ssdcompare.results.files import write_atomic
from ssdcompare.results.models import RoundsRecord, RunStatus, now_iso, rounds_problem, status_of
from ssdcompare.results.store import CPU_JSON, FIO_JSON, JOBFILE, STDERR, ResultsDir
from ssdcompare.run.access import made_meanwhile, opened_for_fio, wrote
from ssdcompare.run.jobrun import SamplerFactory, StoppedAfterRun, sampler_and_readonly, skip
from ssdcompare.run.plan import Plan
from ssdcompare.run.runner import RunOutcome, run_fio, timeout_for
from ssdcompare.suite.options import TIMESERIES_PREFIX
from ssdcompare.suite.pts import RoundGroup
from ssdcompare.target import probes
from ssdcompare.target.devices import Target
from ssdcompare.target.guard import claimed_all
from ssdcompare.target.probes.diskstats import PROBE as DISKSTATS


@dataclass(frozen=True)
class Round:
    """One round of a group on a target: its jobs, in order, and its number (from 1)."""

    target: Target
    group: RoundGroup
    number: int
    jobs: list[RenderedJob]

    @property
    def writes(self) -> bool:
        return any(job.writes for job in self.jobs)

    @property
    def duration_s(self) -> float:
        return sum(job.workload.duration_s for job in self.jobs)


def all_rounds(plan: Plan) -> list[Round]:
    """Every round the plan may run, in order: target by target, group by group, round by
    round (a group's later rounds are not run once its record says it is done)."""
    pts = plan.suite.pts
    assert pts is not None
    found = []
    for target in plan.targets:
        jobs = plan.jobs_for(target)
        ids = [job.job_id for job in jobs]
        for group in pts.groups:
            members = set(pts.job_ids(group, ids))
            mine = [job for job in jobs if job.job_id in members]
            found += [Round(target, group, number, mine)
                      for number in range(1, group.most_rounds + 1)]  # fmt: skip
    return found


def needed(results: ResultsDir, one: Round) -> bool:
    """Whether a round is still to run: its group is not done and this round is not in its
    record yet."""
    record = group_record(results, one.target.name, one.group)
    if record is None:
        return True
    return not record.done and len(record.rounds) < one.number


def group_record(results: ResultsDir, target: str, group: RoundGroup) -> RoundsRecord | None:
    """A group's record as the rounds go on from it: None when there is none, or it is one a
    reader would not take (results.models.rounds_problem: another target's, at odds with
    itself): the rounds are then recorded again, from their stored runs where they have them."""
    record = results.rounds_record(target, group.name)
    if record is None or rounds_problem(record, group, target) is not None:
        return None
    return record


def records_for_resume(results: ResultsDir, plan: Plan) -> None:
    """Each group's record made ready for --resume. One a reader would not take (another
    target's, at odds with itself or with its rounds' fio outputs) is kept aside, and the
    rounds are recorded again from their stored runs. A group that a failed round ended is
    opened again: that round runs again (its runs and folder kept aside as earlier attempts),
    and the rounds before it are judged as they were."""
    pts = plan.suite.pts
    assert pts is not None
    for target in plan.targets:
        for group in pts.groups:
            record = results.rounds_record(target.name, group.name)
            if record is not None and results.rounds_record_problem(target.name, group, record):
                results.set_aside_rounds_record(target.name, group.name)
                continue
            if record is None or record.failed_round is None:
                continue
            number = record.failed_round
            record.rounds = record.rounds[: number - 1]
            record.failed_round, record.error, record.done = None, None, False
            if record.rounds:
                _judge(record, group)
            else:
                record.window, record.window_mean, record.attained = [], None, False
            results.save_rounds_record(record)


def run_round(
    plan: Plan,
    results: ResultsDir,
    one: Round,
    sampler_factory: SamplerFactory | None,
    timeout_s: float | None,
) -> list[RunStatus]:
    """Run one round (see the module) and store each job's run and the group's record; the
    jobs' statuses, in order. A target that cannot be claimed as the round begins skips it.
    A round whose runs were all stored before the sweep stopped, short of its record, is
    recorded from what it stored, not run again."""
    stored = _stored(results, one)
    if stored is not None:
        record_round(results, one, results.round_folder(one.target.name, one.group.name,
                                                        one.number))  # fmt: skip
        return stored
    with contextlib.ExitStack() as stack:
        fds = stack.enter_context(opened_for_fio(plan, results, one.target, one.writes))
        folder = _prepare(plan, results, one, fds)
        texts = [opened_text(job.text, fds) for job in one.jobs]
        started_at = now_iso()
        with claimed_all(one.target.parts, one.writes) as held:
            made = made_meanwhile(results, one.jobs[0]) if held else None
            if not held or made is not None:
                reason = (
                    made or f"{one.target.name} was claimed by another user as the round began"
                )
                return [skip(results, job, one.number, reason) for job in one.jobs]
            with probes.around(one.target) as readings:
                try:
                    ran = _run(plan, one, folder, fds, sampler_factory, timeout_s)
                finally:
                    if one.writes:
                        wrote(fds)
        results.write_probes(folder, readings)
    cut = _Cut(folder, _round_output(folder), _round_trace(folder), _own_readings(readings))
    statuses = [_store_part(results, one, index, cut, text, ran, started_at)
                for index, text in enumerate(texts)]  # fmt: skip
    failed = [s for s in statuses if s.status == "failed"]
    if failed:  # the round's figures are not whole: the group ends here (rerun on resume)
        record_round(results, one, folder, f"{failed[0].job}: {failed[0].error}")
    elif ran.state in ("ok", "failed"):  # a failure fio put on no job of the round
        record_round(results, one, folder)
    if readings.stop is not None:
        raise StoppedAfterRun(statuses[-1], readings.stop)
    return statuses


def _stored(results: ResultsDir, one: Round) -> list[RunStatus] | None:
    """The statuses of the round's runs when every one of them finished ok, else None."""
    found = [results.status(one.target.name, job.job_id, one.number) for job in one.jobs]
    if all(s is not None and results.finished(s) for s in found):
        return [s for s in found if s is not None]
    return None


def _prepare(plan: Plan, results: ResultsDir, one: Round, fds: dict[str, int]) -> Path:
    """The round's folder with its jobfile, read back as fio will read it and checked
    section by section: each job's section may open its target only."""
    folder = results.prepare_round(one.target.name, one.group.name, one.number)
    title = (f"suite {plan.suite.name} | group {one.group.name} | round {one.number} | "
             f"target {one.target.name}")  # fmt: skip
    text = round_text([(job.job_id, opened_text(job.text, fds)) for job in one.jobs], title)
    write_atomic(folder / JOBFILE, text)
    facts = read_jobfile((folder / JOBFILE).read_text(encoding="utf-8"))
    expected = [pair for job in one.jobs for pair in sections_of(job.job_id, job.target,
                                                                 opened=fds)]  # fmt: skip
    check_sections(facts, expected, plan.read_only, plan.allowed_options)
    return folder


def _run(
    plan: Plan,
    one: Round,
    folder: Path,
    fds: dict[str, int],
    sampler_factory: SamplerFactory | None,
    timeout_s: float | None,
) -> RunOutcome:
    assert plan.fio is not None
    sampler, readonly = sampler_and_readonly(plan, one.target, sampler_factory)
    return run_fio(plan.fio, folder / JOBFILE, folder, timeout_s or timeout_for(one.duration_s),
                   sampler, readonly=readonly, host=one.target.host,
                   expected_jobs=[job.job_id for job in one.jobs],
                   pass_fds=list(fds.values()))  # fmt: skip


@dataclass(frozen=True)
class _Cut:
    """A finished round, read once, for cutting into its jobs' runs."""

    folder: Path
    output: dict[str, Any] | None  # fio's whole output, parsed
    trace: CpuTrace | None  # the CPU samples of the whole round
    readings: dict[str, Any]  # what each job's run keeps of the round's probe readings


def _own_readings(readings: dict[str, Any]) -> dict[str, Any]:
    """The round's probe readings as each of its jobs keeps them: the block layer's counts
    left out, since they cover every job of the round (a job's own count is then unknown,
    never another's)."""
    kept = dict(readings)
    if isinstance(kept.get("probes"), dict):
        kept["probes"] = {k: v for k, v in kept["probes"].items() if k != DISKSTATS.name}
    return kept


def _round_trace(folder: Path) -> CpuTrace | None:
    try:
        return trace_from(json.loads((folder / CPU_JSON).read_text(encoding="utf-8")))
    except (OSError, ValueError, SsdcompareError):  # none, or unreadable: none for the parts
        return None


def _store_part(
    results: ResultsDir,
    one: Round,
    index: int,
    cut: _Cut,
    text: str,
    ran: RunOutcome,
    started_at: str,
) -> RunStatus:
    """Job `index`'s part of the round stored as its own run (see the module)."""
    job, folder = one.jobs[index], cut.folder
    run_folder = results.prepare_run(one.target.name, job.job_id, one.number, again=True)
    write_atomic(run_folder / JOBFILE, text)
    part = job_output(cut.output, job.job_id) if cut.output is not None else None
    if part is not None:
        write_atomic(run_folder / FIO_JSON, json.dumps(part, indent=1) + "\n")
    _link_logs(folder, run_folder, process_numbers([j.workload.numjobs for j in one.jobs])[index])
    if cut.trace is not None:
        _cut_samples(cut.trace, run_folder, cut.output, one, index)
    results.write_probes(run_folder, cut.readings)
    compress_large(run_folder, TIMESERIES_PREFIX)
    outcome = _part_outcome(ran, cut.output, folder, job.job_id)
    outcome.notes = [*outcome.notes, f"cut from {folder.relative_to(results.path)}/"
                     f"{FIO_JSON}: round {one.number} of group {one.group.name}"]  # fmt: skip
    status = status_of(outcome, target=one.target.name, job=job.job_id, repeat=one.number,
                       workload_hash=job.workload_hash, started_at=started_at)  # fmt: skip
    results.write_status(run_folder, status)
    return status


def _round_output(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / FIO_JSON).read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _part_outcome(
    ran: RunOutcome, output: dict[str, Any] | None, folder: Path, job: str
) -> RunOutcome:
    """A job's outcome within the round's: the round's, unless fio reported an error for
    this job (failed, with fio's words) or no entry at all while the round was fine; a job
    whose own entry has no error is ok when the round failed for another job's error."""
    part = job_output(output, job) if output is not None else None
    others_failed = any(isinstance(e, dict) and e.get("jobname") != job and e.get("error")
                        for e in (output or {}).get("jobs") or [])  # fmt: skip
    outcome = replace(ran, notes=list(ran.notes))
    if part is None:
        if ran.state == "ok":
            outcome.state, outcome.error = "failed", f"fio reported no result for {job}"
        return outcome
    errno = part["jobs"][0].get("error")
    if isinstance(errno, int) and errno != 0:
        outcome.state, outcome.fio_errno = "failed", errno
        outcome.error = f"fio error {errno} in {job}: {_said(folder)}"
    elif ran.state == "failed" and (ran.fio_errno is None or others_failed):
        outcome.state, outcome.error = "ok", None  # the round's failure was another job's
        outcome.fio_errno = None
    return outcome


def _said(folder: Path) -> str:
    try:
        lines = (folder / STDERR).read_text(errors="replace").splitlines()
    except OSError:
        return "see the round's fio.stderr.txt"
    said = [line.strip() for line in lines if line.strip()]
    return " / ".join(said[:3]) or "see the round's fio.stderr.txt"


def _link_logs(folder: Path, run_folder: Path, numbers: range) -> None:
    """The per-second logs of a job's processes, numbered from 1 as a run's are: linked,
    not copied (the round keeps fio's own names)."""
    for entry in os.listdir(folder):
        if not entry.startswith(f"{TIMESERIES_PREFIX}_"):
            continue
        stem, _, rest = entry.partition(".")
        number, _, suffix = rest.partition(".")
        if not number.isdigit() or int(number) not in numbers:
            continue
        name = f"{stem}.{int(number) - numbers.start + 1}.{suffix}"
        try:
            os.link(folder / entry, run_folder / name)
        except OSError:
            shutil.copyfile(folder / entry, run_folder / name)


def _cut_samples(
    trace: CpuTrace, run_folder: Path, output: dict[str, Any] | None, one: Round, index: int
) -> None:
    """The CPU samples taken while job `index` ran, their times from its start: while its
    processes lived, or by fio's account where the sampler could not tell them apart."""
    numjobs = [j.workload.numjobs for j in one.jobs]
    spans = lived_spans_s(trace.worker_spans, numjobs, trace.interval_s)
    if spans is None:
        spans = section_spans_s(output or {}, [j.job_id for j in one.jobs],
                                [j.workload.ramp_s for j in one.jobs], numjobs)  # fmt: skip
    start, end = spans[index]
    last = end + trace.interval_s / 2
    kept = [sample.model_copy(update={"t_s": round(sample.t_s - start, 3)})
            for sample in trace.samples if start < sample.t_s <= last]  # fmt: skip
    own = {pid: [round(first - start, 3), round(seen - start, 3)]
           for pid, (first, seen) in trace.worker_spans.items()
           if start <= first <= end}  # fmt: skip
    write_atomic(run_folder / CPU_JSON, trace.model_copy(
        update={"samples": kept, "worker_spans": own}).model_dump_json())  # fmt: skip


def record_round(
    results: ResultsDir, one: Round, folder: Path, failure: str | None = None
) -> RoundsRecord:
    """The group's record with this round's tracked figure added, judged by the PTS rule:
    done once steady, out of rounds, or (for a group without a tracking variable) run."""
    group = one.group
    record = group_record(results, one.target.name, group) or RoundsRecord(
        target=one.target.name, group=group.name, track=group.track, metric=group.metric
    )
    figure = _tracked(folder, group) if group.track and failure is None else None
    record.rounds = [*record.rounds[: one.number - 1], figure]
    if failure is not None:
        record.done, record.failed_round = True, one.number
        record.error = f"round {one.number} failed: {failure}"
    else:
        _judge(record, group)
    results.save_rounds_record(record)
    return record


def _tracked(folder: Path, group: RoundGroup) -> float | None:
    """The tracking job's figure in the round's output (fio.rounds.tracked_figure)."""
    try:
        return tracked_figure(parse_fio_file(folder / FIO_JSON), group)
    except FioOutputError:
        return None


def _judge(record: RoundsRecord, group: RoundGroup) -> None:
    """Steady state by the PTS rule over the rounds so far (a missing figure ends the group:
    its window can never be judged)."""
    if not group.rounds:
        record.done = True
        return
    figures: Sequence[float | None] = record.rounds
    if any(f is None for f in figures):
        record.done, record.error = True, f"round {figures.index(None) + 1} has no figure"
        return
    values = [float(f) for f in figures if f is not None]
    verdict = judge_rounds(values, group.window, group.range_pct, group.slope_pct,
                           group.max_rounds)  # fmt: skip
    judged = verdict.judged
    record.window = verdict.window
    record.window_mean, record.slope, record.intercept = (
        judged.mean,
        judged.slope,
        judged.intercept,
    )
    record.window_range_pct = judged.range_pct if math.isfinite(judged.range_pct) else None
    record.window_slope_pct = judged.slope_pct if math.isfinite(judged.slope_pct) else None
    record.steady_after = verdict.steady_after
    record.attained, record.done = verdict.attained, verdict.done


def rounds_pending(plan: Plan, results: ResultsDir) -> list[tuple[int, RenderedJob]]:
    """The runs of every round still to run, at most: (round, job) in order."""
    return [(one.number, job) for one in all_rounds(plan) if needed(results, one)
            for job in one.jobs]  # fmt: skip
