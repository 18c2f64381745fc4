"""Preconditioning: putting a drive into a known state before it is measured.

Two steps, as SNIA's PTS and StorageReview do them, chosen with `sweep --precondition`:

- `fill`: before a target's first job, sequential 128 KiB writes over the span the suite's
  jobs use (the whole device unless every job uses less), twice. Every block the jobs touch
  has then been written: no read hits an unwritten block, and the SLC cache and spare area
  are in the state of a full drive.
- `workload`: before each job's first run, the job itself in rounds (each round the job as
  planned, its runtime and ramp) until its IOPS are steady by the PTS rule (ssdcompare.steady:
  a window of 5 rounds within 20 % range and 10 % slope excursion), at most 25 rounds.

Everything preconditioning runs is kept under `precondition/<target>/` in the results folder:
the fill's jobfile and fio output, each round's, and `steady.json` per job (the rounds' IOPS,
whether and when steady state was attained, the window's figures). fio's own steady-state
detection (`ss=`) judges per-second samples inside one run against one criterion and stops
the job there; the PTS judges whole rounds against two, so ssdcompare runs the rounds itself
and decides with the PTS rule.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

from ssdcompare.errors import SsdcompareError, Stopped
from ssdcompare.fio import FioInfo
from ssdcompare.fioresult import FioOutputError, parse_fio_file
from ssdcompare.jobfile import RenderedJob, fill_span, render_fill
from ssdcompare.runner import RunOutcome, run_fio, timeout_for
from ssdcompare.steady import MAX_ROUNDS, WINDOW, first_steady, judge_window
from ssdcompare.store import (
    FIO_JSON,
    JOBFILE,
    FillRecord,
    ResultsDir,
    SteadyRecord,
    now_iso,
    write_atomic,
)


def _raise_if_stopped(outcome: RunOutcome) -> None:
    if outcome.state == "interrupted":
        by = outcome.stopped_by or "Ctrl-C"
        raise Stopped(signal.Signals[by]) if by.startswith("SIG") else KeyboardInterrupt()


def fill(
    fio: FioInfo,
    results: ResultsDir,
    jobs: list[RenderedJob],
    suite: str,
    ioengine: str,
    check: Callable[[], None],
) -> FillRecord:
    """Fill one target (the target of `jobs`) unless an earlier attempt did it. `check` runs
    just before fio and raises SsdcompareError when the target must not be written now."""
    target = jobs[0].target
    folder = results.precondition_dir(target.name, "fill")
    done = results.fill_record(target.name)
    if done is not None and done.ok:
        return done
    folder.mkdir(parents=True, exist_ok=True)
    size = fill_span(jobs)
    write_atomic(folder / JOBFILE, render_fill(target, size, suite, ioengine))
    started = now_iso()
    span_bytes = target.size_bytes or 0
    check()
    outcome = run_fio(fio, folder / JOBFILE, folder, timeout_for(2 * span_bytes / 20e6))
    _raise_if_stopped(outcome)
    record = FillRecord(
        target=target.name, ok=outcome.state == "ok", size=size, started_at=started,
        finished_at=now_iso(), error=outcome.error,
    )  # fmt: skip
    if record.ok:
        output = parse_fio_file(folder / FIO_JSON)
        record.io_bytes = sum(d.io_bytes or 0 for j in output.jobs for d in j.directions.values())
    results.save_fill_record(record)
    return record


def until_steady(
    fio: FioInfo, results: ResultsDir, job: RenderedJob, check: Callable[[], None]
) -> SteadyRecord:
    """Run `job` in rounds until steady (or MAX_ROUNDS), unless an earlier attempt finished.
    `check` runs before every round and raises SsdcompareError when the target must not be
    written now; the rounds so far are kept, with the reason."""
    done = results.steady_record(job.target.name, job.job_id)
    if done is not None and (done.attained or len(done.rounds_iops) >= MAX_ROUNDS):
        return done
    record = SteadyRecord(target=job.target.name, job=job.job_id)
    for number in range(1, MAX_ROUNDS + 1):
        folder = results.precondition_dir(job.target.name, job.job_id) / f"round-{number}"
        folder.mkdir(parents=True, exist_ok=True)
        write_atomic(folder / JOBFILE, job.text)
        try:
            check()
        except SsdcompareError as err:
            record.error = f"stopped before round {number}: {err}"
            results.save_steady_record(record)
            raise
        outcome = run_fio(fio, folder / JOBFILE, folder, timeout_for(job.workload.duration_s))
        _raise_if_stopped(outcome)
        iops = _round_iops(folder / FIO_JSON) if outcome.state == "ok" else None
        if iops is None:
            record.error = f"round {number}: {outcome.error or 'no IOPS in fio output'}"
            break
        record.rounds_iops.append(iops)
        after = first_steady(record.rounds_iops)
        if after is not None:
            record.attained, record.steady_after = True, after
            break
    if len(record.rounds_iops) >= WINDOW:
        window = judge_window(record.rounds_iops[-WINDOW:])
        record.window_mean_iops = window.mean
        record.window_range_pct, record.window_slope_pct = window.range_pct, window.slope_pct
    results.save_steady_record(record)
    return record


def _round_iops(path: Path) -> float | None:
    """A round's IOPS, all directions added."""
    try:
        output = parse_fio_file(path)
    except FioOutputError:
        return None
    total = sum(d.iops for j in output.jobs if j.ok for d in j.directions.values() if d.iops)
    return total or None
