"""Preconditioning: putting a drive into a known state before it is measured.

Two steps, as SNIA's PTS and StorageReview do them, chosen with `sweep --precondition`:

- `fill`: before a target's first job, sequential 128 KiB writes over the span the suite's
  jobs use (the whole device unless every job uses less), twice. Every block the jobs touch
  has then been written: no read hits an unwritten block, and the SLC cache and spare area
  are in the state of a full drive.
- `workload`: before each job's first run, the job itself in rounds (each round the job as
  planned, its runtime and ramp) until its IOPS are steady by the PTS rule
  (ssdcompare.judge.steady: a window of 5 rounds within 20 % range and 10 % slope
  excursion), at most 25 rounds.

A `--states` sweep measures the drive in named states instead, one pass over the jobs each
(AnandTech runs every test on an empty and on a full drive):

- `empty`: just before every run of a job of the empty pass, the span is discarded (TRIM on
  a block device, BLKDISCARD; holes punched in a file target). The drive then has no data
  there: reads are answered without touching flash, writes land in a clean drive.
- `full`: before the first job of the full pass (and again whenever a discard came since),
  the span is filled as above. Each step is recorded (precondition/<target>/states/) and
  every run names the step it followed, so the frame says which state each result is from.

Everything preconditioning runs is kept under `precondition/<target>/` in the results folder:
the fill's jobfile and fio output, each round's, what the probes read around each of them
(`probes.json`, as a run's: the drive's temperature and throttling while it was being put in
its state), and `steady.json` per job (the rounds' IOPS,
whether and when steady state was attained, the window's figures). fio's own steady-state
detection (`ss=`) judges per-second samples inside one run against one criterion and stops
the job there; the PTS judges whole rounds against two, so ssdcompare runs the rounds itself
and decides with the PTS rule.
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import os
import struct
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

from ssdcompare.errors import SsdcompareError, Stopped
from ssdcompare.fio.binary import FioInfo
from ssdcompare.fio.jobfile import RenderedJob, fill_span, opened_text, render_fill
from ssdcompare.fio.logs import compress_large
from ssdcompare.fio.result.reader import file_iops, parse_fio_file
from ssdcompare.judge.steady import MAX_ROUNDS, WINDOW, first_steady, judge_window
from ssdcompare.results.files import write_atomic
from ssdcompare.results.models import FillRecord, StateRecord, SteadyRecord, now_iso
from ssdcompare.results.store import FIO_JSON, JOBFILE, ResultsDir
from ssdcompare.run.runner import raise_if_stopped, run_fio, timeout_for
from ssdcompare.suite.options import TIMESERIES_PREFIX
from ssdcompare.target import probes
from ssdcompare.units import format_bytes, parse_size

BLKDISCARD = 0x1277  # _IO(0x12, 119): discard a byte range of a block device
_PUNCH_HOLE = 0x02 | 0x01  # FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE
_DISCARD_ALIGN = 4096  # a range every logical block size divides

# Before every write preconditioning makes: the target is checked (still the device the sweep
# started on, nothing uses it; SsdcompareError when it must not be written now), and its
# files are opened for fio (path -> descriptor, see ssdcompare.target.file) while it runs.
Access = Callable[[], AbstractContextManager[dict[str, int]]]


def fill(
    fio: FioInfo,
    results: ResultsDir,
    jobs: list[RenderedJob],
    suite: str,
    ioengine: str,
    access: Access,
) -> FillRecord:
    """Fill one target (the target of `jobs`) unless an earlier attempt did it. `access`
    checks the target just before fio (SsdcompareError: it must not be written now) and
    opens its files for fio."""
    target = jobs[0].target
    done = results.fill_record(target.name)
    if done is not None and done.ok:
        return done
    started = now_iso()
    size = fill_span(jobs)
    ok, error, io_bytes = _run_fill(
        fio, results, results.fill_dir(target.name), jobs, suite, ioengine, access
    )
    record = FillRecord(
        target=target.name, ok=ok, size=size, started_at=started, finished_at=now_iso(),
        error=error, io_bytes=io_bytes,
    )  # fmt: skip
    results.save_fill_record(record)
    return record


def _run_fill(
    fio: FioInfo,
    results: ResultsDir,
    folder: Path,
    jobs: list[RenderedJob],
    suite: str,
    ioengine: str,
    access: Access,
) -> tuple[bool, str | None, int | None]:
    """Run the fill jobfile of one target in `folder`, the probes read around it: (ok, error,
    bytes written)."""
    target = jobs[0].target
    folder.mkdir(parents=True, exist_ok=True)
    text = render_fill(target, fill_span(jobs), suite, ioengine)
    span_bytes = target.size_bytes or 0
    with access() as fds:
        write_atomic(folder / JOBFILE, opened_text(text, fds))
        with probes.around(target) as readings:
            outcome = run_fio(fio, folder / JOBFILE, folder, timeout_for(2 * span_bytes / 20e6),
                              pass_fds=list(fds.values()))  # fmt: skip
    results.write_probes(folder, readings)
    raise_if_stopped(outcome)
    if readings.stop is not None:  # asked to stop while the probes read after the fill
        raise readings.stop
    if outcome.state != "ok":
        return False, outcome.error, None
    output = parse_fio_file(folder / FIO_JSON)
    return True, None, sum(d.io_bytes or 0 for j in output.jobs for d in j.directions.values())


def state_span(jobs: list[RenderedJob]) -> int:
    """The bytes from offset 0 that a target's jobs use (the span a state step covers)."""
    size = fill_span(jobs)
    return parse_size(size) if size is not None else jobs[0].target.size_bytes or 0


def state_needed(results: ResultsDir, job: RenderedJob) -> bool:
    """Whether a state step must run before this run of `job`: always for the empty pass
    (every run starts from a discarded span), for the full pass when the target's last step
    was not a fill that worked."""
    state = job.workload.state
    if state is None:
        return False
    if state == "empty":
        return True
    steps = results.state_records(job.target.name)
    return not steps or steps[-1].state != "full" or not steps[-1].ok


def put_in_state(
    fio: FioInfo,
    results: ResultsDir,
    jobs: list[RenderedJob],
    job: RenderedJob,
    repeat: int,
    access: Access,
    ioengine: str,
) -> StateRecord:
    """Put the target of `job` (whose jobs are `jobs`) in the job's drive state, and record
    the step. `access` checks the target first (and before fio) and raises SsdcompareError
    when it must not be written now: the record keeps the reason and the error goes on to
    the caller.
    A step that fails otherwise (a device without discard) is recorded as not ok. `ioengine`
    is the engine the fill uses (the sweep's, never a job's own: it may be fio's null engine)."""
    target, state = job.target, job.workload.state
    assert state is not None
    steps = results.state_records(target.name)
    number = steps[-1].number + 1 if steps else 1
    folder = results.state_dir(target.name, number, state)  # refused before any write
    record = StateRecord(
        target=target.name, state=state, number=number, how="", job=job.job_id, repeat=repeat,
        ok=False, started_at=now_iso(), finished_at="", span_bytes=state_span(jobs),
    )  # fmt: skip
    try:
        _take_state_step(fio, results, jobs, record, folder, access, ioengine)
    except (KeyboardInterrupt, Stopped):
        # a step cut short is recorded as one: the next attempt gets a folder of its own
        _save_state_step(results, record, "interrupted")
        raise
    except SsdcompareError as err:
        _save_state_step(results, record, str(err))
        raise
    except OSError as err:
        record.error = f"{record.how or 'discard'} failed: {err.strerror or err}"
    _save_state_step(results, record, record.error)
    return record


def _take_state_step(
    fio: FioInfo,
    results: ResultsDir,
    jobs: list[RenderedJob],
    record: StateRecord,
    folder: Path,
    access: Access,
    ioengine: str,
) -> None:
    """The step itself: a discard of the span (empty) or a fill of it (full, run in
    `folder`), said in `record` (how, ok, error). OSError when the device or filesystem
    cannot discard."""
    target, span_bytes = jobs[0].target, record.span_bytes or 0
    if record.state == "empty":
        with access() as fds:
            record.how = discard(target.path, target.kind == "block", span_bytes,
                                 fds.get(target.path))  # fmt: skip
        record.ok = True
        return
    what = f"the first {format_bytes(span_bytes)}"
    record.how = f"{what} written twice, sequential 128 KiB writes (fio, fill.fio)"
    record.ok, record.error, _ = _run_fill(
        fio, results, folder, jobs, results.manifest.suite.name, ioengine, access
    )


def _save_state_step(results: ResultsDir, record: StateRecord, error: str | None) -> None:
    """Store a state step's record as it ended (`error`: why it did not work, or None)."""
    record.error = error
    record.finished_at = now_iso()
    results.save_state_record(record)


def note_trimmed(results: ResultsDir, job: RenderedJob, repeat: int) -> None:
    """A job of a full pass that trims empties (part of) the span: record it as a step to the
    empty state, so that the next job of the pass fills the drive again."""
    steps = results.state_records(job.target.name)
    now = now_iso()
    results.save_state_record(StateRecord(
        target=job.target.name, state="empty", number=steps[-1].number + 1 if steps else 1,
        how=f"trimmed by the job {job.job_id} itself", job=job.job_id, repeat=repeat,
        ok=True, started_at=now, finished_at=now,
    ))  # fmt: skip


def discard(path: str, block: bool, length: int, fd: int | None = None) -> str:
    """Discard the first `length` bytes of a block device (BLKDISCARD) or punch them out of
    a file (through `fd`, the file opened by ssdcompare.target.file, or opened here without
    following a link, and created, empty, when missing); what was done, in words. Raises
    OSError when the device or filesystem cannot (EOPNOTSUPP)."""
    length -= length % _DISCARD_ALIGN
    if block:
        device = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
        try:
            fcntl.ioctl(device, BLKDISCARD, struct.pack("QQ", 0, length))
        finally:
            os.close(device)
        return f"discarded the first {format_bytes(length)} (BLKDISCARD)"
    with contextlib.ExitStack() as stack:
        if fd is None:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
            stack.callback(os.close, fd)
        if os.fstat(fd).st_size < length:
            os.ftruncate(fd, length)  # a new file: sparse, nothing written
        libc = ctypes.CDLL(None, use_errno=True)
        libc.fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
        if libc.fallocate(fd, _PUNCH_HOLE, 0, length) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code) if code else "fallocate failed")
    return f"punched the first {format_bytes(length)} out of the file (fallocate)"


def until_steady(
    fio: FioInfo, results: ResultsDir, job: RenderedJob, access: Access
) -> SteadyRecord:
    """Run `job` in rounds until steady (or MAX_ROUNDS), unless an earlier attempt finished.
    `access` checks the target before every round (SsdcompareError when it must not be
    written now: the rounds so far are kept, with the reason) and opens its files for fio."""
    done = results.steady_record(job.target.name, job.job_id)
    if done is not None and (done.attained or len(done.rounds_iops) >= MAX_ROUNDS):
        return done
    record = SteadyRecord(target=job.target.name, job=job.job_id)
    for number in range(1, MAX_ROUNDS + 1):
        folder = results.round_dir(job.target.name, job.job_id, number)
        folder.mkdir(parents=True, exist_ok=True)
        with contextlib.ExitStack() as stack:
            try:
                fds = stack.enter_context(access())
            except SsdcompareError as err:
                record.error = f"stopped before round {number}: {err}"
                results.save_steady_record(record)
                raise
            write_atomic(folder / JOBFILE, opened_text(job.text, fds))
            with probes.around(job.target) as readings:
                outcome = run_fio(fio, folder / JOBFILE, folder,
                                  timeout_for(job.workload.duration_s),
                                  pass_fds=list(fds.values()))  # fmt: skip
        results.write_probes(folder, readings)
        compress_large(folder, TIMESERIES_PREFIX)
        raise_if_stopped(outcome)
        if readings.stop is not None:  # asked to stop while the probes read after the round
            raise readings.stop
        iops = file_iops(folder / FIO_JSON) if outcome.state == "ok" else None
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
