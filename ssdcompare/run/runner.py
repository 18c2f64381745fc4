"""Running one fio job: a subprocess in its own process group, with a timeout, while the CPU
is sampled; everything fio printed is kept in the run's folder.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Protocol

import psutil

from ssdcompare.errors import SsdcompareError, Stopped, stop_reason
from ssdcompare.fio.binary import FioInfo, clients_command_line, command_line
from ssdcompare.fio.client import collect_logs, host_problem, local_server_pids, server_answers
from ssdcompare.fio.result.models import JobResult
from ssdcompare.fio.result.reader import parse_fio_file
from ssdcompare.fio.verify import VerifyFailure, run_failure
from ssdcompare.results.files import write_atomic
from ssdcompare.results.models import RunState
from ssdcompare.results.store import CPU_JSON, FIO_JSON, JOBFILE, STDERR, STDOUT
from ssdcompare.run.watchdog import watchdog
from ssdcompare.target.hosts import Host

# fio errors that say the target itself cannot be used: the next job would fail the same way
DEVICE_ERRNOS = {
    errno.ENOENT, errno.ENXIO, errno.ENODEV, errno.EACCES, errno.EPERM, errno.EBUSY,
    errno.EROFS, errno.ENOSPC,
}  # fmt: skip
SIGINT_GRACE_S = 15.0  # fio writes its partial results on SIGINT; give it time to
TERM_GRACE_S = 10.0
# After SIGKILL a process stuck in the kernel on a dead device may never go away: stop waiting
REAP_WAIT_S = 10.0
PR_SET_PDEATHSIG = 1

try:  # resolved once here: the child between fork and exec only calls it
    _prctl = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux
    _prctl = None


class Trace(Protocol):
    """What a CPU sampler returns: a JSON-serialisable trace."""

    def model_dump_json(self) -> str: ...


class Sampler(Protocol):
    """Samples CPU use while fio runs (see ssdcompare.run.sampler.CpuSampler)."""

    def start(self, root_pid: int, *servers: int) -> None: ...

    def stop(self) -> Trace: ...


@dataclass
class RunOutcome:
    """What happened to one fio run."""

    state: RunState
    exit_code: int | None
    duration_s: float
    error: str | None = None
    stderr_tail: str | None = None
    fio_errno: int | None = None
    device_unusable: bool = False
    interrupted: bool = False
    sampler_cpu_pct: float | None = None
    fio_cpus: list[int] = field(default_factory=list)  # the CPUs fio's threads were seen on
    command: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    stopped_by: str | None = None  # "Ctrl-C", "SIGTERM", ... for an interrupted run
    host_lost: bool = False  # the fio server went away or could not be reached
    lost_hosts: list[str] = field(default_factory=list)  # the names of those servers
    verify_failure: VerifyFailure | None = None  # data that came back wrong, as fio said it


def raise_if_stopped(outcome: RunOutcome) -> None:
    """Raise the stop that interrupted a run (Ctrl-C as KeyboardInterrupt, SIGTERM/SIGHUP
    as errors.Stopped), so that a step around one fio run stops the sweep the same way."""
    if outcome.state == "interrupted":
        by = outcome.stopped_by or "Ctrl-C"
        raise Stopped(signal.Signals[by]) if by.startswith("SIG") else KeyboardInterrupt()


# setpriv (util-linux) sets the parent-death signal and execs a shell that checks the parent is
# still ours (else the signal was set too late: exit) and execs fio, all in the one process:
# this saves Python forking itself whole to run _die_with_parent (about 7 ms per run here)
_SETPRIV = shutil.which("setpriv")
_SHELL = "/bin/sh"
_CHECK_PARENT = '[ "$PPID" = "$0" ] || exit 1; exec "$@"'


def _launch(command: list[str], parent_pid: int) -> tuple[list[str], Callable[[], None] | None]:
    """The command line that starts `command` so that fio dies with `parent_pid`, and the
    function to run in the child first (None when the command line itself sees to it)."""
    if _SETPRIV is not None and os.access(_SHELL, os.X_OK) and os.access(command[0], os.X_OK):
        prefix = [_SETPRIV, "--pdeathsig", "TERM", "--", _SHELL, "-c", _CHECK_PARENT]
        return [*prefix, str(parent_pid), *command], None
    return command, _die_with_parent(parent_pid)


def _until_launched(pid: int, program: str, limit_s: float = 2.0) -> None:
    """Wait until the new process runs `program`, or anything but what it passes through on
    the way (a copy of this process, setpriv, the shell): samples taken before would name
    fio after one of them. A few ms; at most `limit_s`."""
    wanted = Path(program).name[:15]  # the kernel keeps 15 characters of a process's name
    passing = {_comm("self"), "setpriv", Path(_SHELL).name} - {wanted}
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        name = _comm(str(pid))
        if name is None and not os.path.exists(f"/proc/{pid}"):
            return  # it has ended already: nothing to wait for
        if name is not None and name not in passing:
            return
        time.sleep(0.001)


def _comm(pid: str) -> str | None:
    try:
        with open(f"/proc/{pid}/comm", encoding="utf-8", errors="replace") as handle:
            return handle.read().strip()
    except OSError:
        return None


def _die_with_parent(parent_pid: int) -> Callable[[], None]:
    """Runs in the child before fio starts: if this process dies, however it dies (SIGKILL,
    OOM), the kernel sends fio SIGTERM, and fio stops its workers instead of measuring on
    alone and disturbing whatever runs next on the device."""

    def setup() -> None:
        if _prctl is not None:
            _prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent_pid:  # the parent died before the line above took effect
            os._exit(1)

    return setup


def _start(
    command: list[str],
    folder: Path,
    out: IO[bytes] | None,
    err: IO[bytes] | None,
    pass_fds: Sequence[int] = (),
) -> subprocess.Popen:
    """Start fio in `folder`, in a session of its own (Ctrl-C reaches us, and we stop fio
    cleanly), dying with this process (its parent-death signal and the watchdog)."""
    launch, setup = _launch(command, os.getpid())
    proc = subprocess.Popen(
        launch, stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True,
        preexec_fn=setup, cwd=folder, pass_fds=tuple(pass_fds),
    )  # fmt: skip
    dog = watchdog()
    if dog is not None:
        dog.watch(proc.pid)
    return proc


def _reaped(proc: subprocess.Popen) -> None:
    """fio has ended and was waited for: the watchdog has nothing of it left to kill."""
    dog = watchdog()
    if dog is not None:
        dog.forget(proc.pid)


def start_server(command: list[str]) -> subprocess.Popen:
    """Start a long-running fio (`fio --server`) that dies with this process however it ends
    (its parent-death signal and the watchdog, as every fio run), its output on ours."""
    return _start(command, Path.cwd(), None, None)


def stop_server(proc: subprocess.Popen) -> int:
    """Stop what start_server started, and every process it forked (a connection's, a
    job's); its exit status."""
    code = _stop(proc, signal.SIGTERM, TERM_GRACE_S)
    if proc.poll() is not None:
        _kill_all(proc)  # the processes it forked, had any outlived it
    _reaped(proc)
    return code


def timeout_for(duration_s: float, layout_bytes: int = 0) -> float:
    """Generous wall-clock limit: twice the job's time plus start-up, plus laying out a new
    test file at a pessimistic 20 MB/s; a job past this is hung (e.g. a dead device)."""
    return 2 * duration_s + 120 + layout_bytes / 20e6


def _tail(path: Path, lines: int = 20) -> str | None:
    try:
        text = path.read_text(errors="replace").strip()
    except OSError:
        return None
    return "\n".join(text.splitlines()[-lines:]) or None


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _kill_all(proc: subprocess.Popen) -> int:
    """SIGKILL fio and its job processes. fio's workers call setsid(), so they are not in
    fio's process group and would keep doing I/O if only the group were killed."""
    try:
        workers = psutil.Process(proc.pid).children(recursive=True)
    except psutil.Error:
        workers = []
    _signal_group(proc, signal.SIGKILL)
    for worker in workers:
        with contextlib.suppress(psutil.Error):
            worker.kill()
    psutil.wait_procs(workers, timeout=5)
    try:
        return proc.wait(timeout=REAP_WAIT_S)
    except subprocess.TimeoutExpired:
        # in uninterruptible I/O on a device that does not answer: it goes when the I/O does
        return -signal.SIGKILL


def _stop(proc: subprocess.Popen, first: int, grace_s: float) -> int:
    """Send `first` to fio (which stops its workers and writes what it measured), wait,
    then kill everything; return the exit code."""
    _signal_group(proc, first)
    try:
        return proc.wait(timeout=grace_s)
    except subprocess.TimeoutExpired:
        return _kill_all(proc)
    except KeyboardInterrupt:
        # a second Ctrl-C: stop waiting for fio's partial results
        return _kill_all(proc)


def run_fio(
    fio: FioInfo,
    jobfile: Path,
    folder: Path,
    timeout_s: float,
    sampler: Sampler | None = None,
    clock: Callable[[], float] = time.monotonic,
    readonly: bool = False,
    host: Host | None = None,
    clients: Sequence[tuple[Host, Path]] = (),
    expected_jobs: Sequence[str] = (),
    pass_fds: Sequence[int] = (),
) -> RunOutcome:
    """Run fio on `jobfile`, storing fio.json, fio.stdout/stderr.txt and cpu.json in `folder`.

    fio runs inside `folder`, so any file it makes of its own (e.g. verify state) lands there.
    `readonly` runs fio with --readonly (see fio.command_line). `host` runs the job on that
    host's fio server (ssdcompare.fio.client); a server that cannot be reached or goes away
    fails the run with `host_lost` set. `clients` runs on several servers at once, each with
    its own jobfile (a group that spans hosts; `jobfile` is then the whole group's, kept for
    the record). `expected_jobs` are the job sections fio must report: one it dropped (a
    server refused it) fails the run rather than leave a group's sum short. `pass_fds` are
    open files fio inherits under the same numbers (its jobfile names them /dev/fd/N: file
    targets ssdcompare opened itself, see ssdcompare.target.file).

    Ctrl-C (KeyboardInterrupt) is forwarded to fio as SIGINT so it writes what it measured;
    the outcome is then "interrupted" and the caller decides whether to stop the sweep.
    """
    hosts = [h for h, _ in clients] or ([host] if host is not None else [])
    command = _fio_command(fio, jobfile, folder / f"{FIO_JSON}.partial", readonly, host, clients)
    started = clock()
    with open(folder / STDOUT, "wb") as out, open(folder / STDERR, "wb") as err:
        try:
            proc = _start(command, folder, out, err, pass_fds)
        except OSError as exc:
            return RunOutcome(
                "failed", None, 0.0, error=f"cannot start fio: {exc}", command=command
            )
        servers = [p for h in hosts for p in local_server_pids(h)] if sampler is not None else []
        watch = _watch(proc, timeout_s, sampler, folder, servers, command[0])
        _reaped(proc)
    return _conclude(watch, folder, command, hosts, timeout_s, expected_jobs,
                     round(clock() - started, 3))  # fmt: skip


def _fio_command(
    fio: FioInfo,
    jobfile: Path,
    partial: Path,
    readonly: bool,
    host: Host | None,
    clients: Sequence[tuple[Host, Path]],
) -> list[str]:
    """fio's command line for the run: one jobfile here or on a host's server, or a client
    for each server at once, its output into `partial`."""
    if clients:
        return clients_command_line(
            fio.path, [(h.client, path.resolve()) for h, path in clients], partial.resolve(),
            readonly,
        )  # fmt: skip
    return command_line(fio.path, jobfile.resolve(), partial.resolve(), readonly,
                        host.client if host is not None else None)  # fmt: skip


def _conclude(
    watch: _Watch,
    folder: Path,
    command: list[str],
    hosts: Sequence[Host],
    timeout_s: float,
    expected_jobs: Sequence[str],
    duration_s: float,
) -> RunOutcome:
    """What a finished fio run (watched to its end) comes to: its output in place, a
    server's logs named as a local run's, ok or failed and why."""
    partial = folder / f"{FIO_JSON}.partial"
    if partial.exists():
        os.replace(partial, folder / FIO_JSON)
    if hosts:
        collect_logs(folder, hosts)
    outcome = RunOutcome(
        state="ok",
        exit_code=watch.exit_code,
        duration_s=duration_s,
        stderr_tail=_tail(folder / STDERR),
        interrupted=watch.interrupted is not None,
        sampler_cpu_pct=getattr(watch.trace, "sampler_cpu_pct", None),
        fio_cpus=list(getattr(watch.trace, "worker_cpus", None) or []),
        command=command,
    )
    if watch.interrupted is not None:
        outcome.state = "interrupted"
        outcome.stopped_by = stop_reason(watch.interrupted)
        outcome.error = (
            f"interrupted by {outcome.stopped_by}; fio's partial output is kept in fio.json"
        )
        return outcome
    if watch.timed_out:
        _timed_out(outcome, timeout_s, hosts)
        return outcome
    settled = _settle(outcome, folder)
    if expected_jobs and settled.state == "ok":
        _check_reported(settled, folder, expected_jobs)
    if hosts and settled.state == "failed":
        for one in hosts:
            _blame_host(settled, folder, one, alone=len(hosts) == 1)
    return settled


def _timed_out(outcome: RunOutcome, timeout_s: float, hosts: Sequence[Host]) -> None:
    """Fail a run stopped at its time limit: the device is taken for unusable, and a lone
    server for lost."""
    outcome.state = "failed"
    outcome.error = (
        f"fio did not finish within {timeout_s:.0f} s and was stopped: the device may have "
        "stopped answering"
    )
    outcome.device_unusable = True
    if hosts:  # or its server did
        names = ", ".join(h.where for h in hosts)
        outcome.error += f", or the fio server of host {names} did"
        if len(hosts) == 1:  # the rest of that host's jobs would wait as long
            outcome.host_lost, outcome.lost_hosts = True, [hosts[0].name]


def _check_reported(outcome: RunOutcome, folder: Path, expected: Sequence[str]) -> None:
    """Fail a run whose output lacks a job it had to run, or shows it without any I/O: a
    server that refuses a job (a mounted disk, a bad option) drops it or reports it with
    zeros, says why only in its messages, and fio's client still exits 0."""
    try:
        jobs = parse_fio_file(folder / FIO_JSON).jobs
    except Exception:  # _settle read it already; anything else is its to say
        return
    moved = {job.name for job in jobs if job.moved}
    missing = [name for name in expected if name not in moved]
    if missing:
        outcome.state = "failed"
        said = "; ".join(_said_before_output(folder)[-3:]) or "see its messages"
        outcome.error = (f"fio reported no result for {', '.join(missing)}: the job did not "
                         f"run or moved no data ({said})")  # fmt: skip


def _said_before_output(folder: Path) -> list[str]:
    """What fio (and, in client mode, its servers: "<host> ...") wrote before the JSON."""
    try:
        with open(folder / FIO_JSON, errors="replace") as handle:
            head = handle.read(8192)
    except OSError:
        return []
    lines = []
    for line in head.splitlines():
        if line.startswith("{"):
            break
        if line.strip():
            lines.append(line.strip())
    return lines


def _blame_host(outcome: RunOutcome, folder: Path, host: Host, alone: bool = True) -> None:
    """A failed client run whose server could not be reached or went away: say so, and
    mark it, so the sweep skips the rest of that host's jobs instead of failing each."""
    # fio's client writes what it says of the server before the JSON, into fio.json
    head = "\n".join(_said_before_output(folder))
    said = "\n".join([head, *(_tail(folder / name, 20) or "" for name in (STDOUT, STDERR))])
    problem = host_problem(said, host, alone=alone)
    if problem is None and not server_answers(host):
        # lost before fio could say so (killed while the client connected): ask the port
        problem = f"host {host.where} went away: its fio server no longer answers"
    if problem is not None:
        outcome.error = problem if not outcome.host_lost else f"{outcome.error}; {problem}"
        outcome.host_lost = True
        outcome.lost_hosts.append(host.name)


@dataclass
class _Watch:
    """How a fio process ended, as seen by the one waiting for it."""

    exit_code: int | None = None
    interrupted: KeyboardInterrupt | None = None
    timed_out: bool = False
    trace: Trace | None = None
    ended: float | None = None  # when it was seen to end (time.monotonic), of several at once


def _watch(
    proc: subprocess.Popen,
    timeout_s: float,
    sampler: Sampler | None,
    folder: Path,
    servers: Sequence[int] = (),
    program: str = "fio",
) -> _Watch:
    """Wait for fio while the sampler runs; stop it on a timeout or Ctrl-C; store the CPU
    samples. fio never outlives this call."""
    watch = _Watch()
    try:
        try:
            if sampler is not None:  # inside: a stop while it starts still stops fio
                _until_launched(proc.pid, program)
                sampler.start(proc.pid, *servers)
            watch.exit_code = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            watch.timed_out = True
            watch.exit_code = _stop(proc, signal.SIGTERM, TERM_GRACE_S)
        except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM/SIGHUP (errors.Stopped)
            watch.interrupted = stop
            watch.exit_code = _stop(proc, signal.SIGINT, SIGINT_GRACE_S)
    finally:
        if proc.poll() is None:  # anything unexpected: never leave fio running
            _kill_all(proc)
        if sampler is not None:
            watch.trace = sampler.stop()
            write_atomic(folder / CPU_JSON, watch.trace.model_dump_json())
    return watch


@dataclass(frozen=True)
class ClientRun:
    """One of several fio client runs started together (run_fio_together): a jobfile for one
    host's server, with its own folder, time limit and expected job sections (see run_fio)."""

    host: Host
    jobfile: Path
    folder: Path
    timeout_s: float
    readonly: bool = False
    expected_jobs: Sequence[str] = ()


def run_fio_together(
    fio: FioInfo,
    runs: Sequence[ClientRun],
    sampler: Sampler | None = None,
) -> list[RunOutcome]:
    """Run one fio client per host at the same time (--parallel-hosts), each as run_fio runs
    one: its output, messages and logs in its own folder, its own time limit, its own
    outcome. A server that hangs or goes away fails only its own run (`host_lost`); the
    others are measured and kept. Ctrl-C stops them all (the runs it cut short are
    "interrupted"). The sampler watches every client and this machine's servers; each folder
    gets its samples."""
    commands = [command_line(fio.path, r.jobfile.resolve(),
                             (r.folder / f"{FIO_JSON}.partial").resolve(), r.readonly,
                             r.host.client) for r in runs]  # fmt: skip
    started = time.monotonic()
    procs: list[subprocess.Popen | None] = []
    failures: dict[int, str] = {}
    with contextlib.ExitStack() as files:
        try:
            for number, (run, command) in enumerate(zip(runs, commands, strict=True)):
                out = files.enter_context(open(run.folder / STDOUT, "wb"))
                err = files.enter_context(open(run.folder / STDERR, "wb"))
                try:
                    procs.append(_start(command, run.folder, out, err))
                except OSError as exc:
                    procs.append(None)
                    failures[number] = f"cannot start fio: {exc}"
        except BaseException:  # stopped while starting them: none of them runs on alone
            for proc in procs:
                if proc is not None:
                    _kill_all(proc)
            raise
        servers = ([p for r in runs for p in local_server_pids(r.host)]
                   if sampler is not None else [])  # fmt: skip
        watches = _watch_together(procs, [started + r.timeout_s for r in runs], sampler,
                                  [r.folder for r in runs], servers, commands[0][0])  # fmt: skip
        for proc in procs:
            if proc is not None:
                _reaped(proc)
    ended = time.monotonic()
    outcomes = []
    for number, (run, command, watch) in enumerate(zip(runs, commands, watches, strict=True)):
        if number in failures:
            outcomes.append(RunOutcome("failed", None, 0.0, error=failures[number],
                                       command=command))  # fmt: skip
            continue
        duration_s = round((watch.ended or ended) - started, 3)
        outcomes.append(_conclude(watch, run.folder, command, [run.host], run.timeout_s,
                                  run.expected_jobs, duration_s))  # fmt: skip
    return outcomes


def _watch_together(
    procs: Sequence[subprocess.Popen | None],
    deadlines: Sequence[float],
    sampler: Sampler | None,
    folders: Sequence[Path],
    servers: Sequence[int],
    program: str,
) -> list[_Watch]:
    """_watch for several fio processes at once: each stopped at its own deadline
    (time.monotonic), all of them on Ctrl-C; none outlives this call."""
    watches = [_Watch() for _ in procs]
    live = [p for p in procs if p is not None]
    pending = {n for n, p in enumerate(procs) if p is not None}
    try:
        try:
            if sampler is not None and live:
                for proc in live:
                    _until_launched(proc.pid, program)
                sampler.start(live[0].pid, *(p.pid for p in live[1:]), *servers)
            _wait_together(procs, deadlines, watches, pending)
        except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM/SIGHUP (errors.Stopped)
            for number in pending:
                watches[number].interrupted = stop
            _stop_together(procs, watches, pending)
    finally:
        for proc in live:
            if proc.poll() is None:  # anything unexpected: never leave fio running
                _kill_all(proc)
        if sampler is not None:
            trace = sampler.stop()
            for folder, watch in zip(folders, watches, strict=True):
                watch.trace = trace
                write_atomic(folder / CPU_JSON, trace.model_dump_json())
    return watches


def _wait_together(
    procs: Sequence[subprocess.Popen | None],
    deadlines: Sequence[float],
    watches: list[_Watch],
    pending: set[int],
) -> None:
    """Wait until every process in `pending` has ended (taking each out as it does); one
    past its deadline gets SIGTERM, and SIGKILL if it is still there after the grace."""
    kill_at: dict[int, float] = {}
    while pending:
        now = time.monotonic()
        for number in sorted(pending):
            proc = procs[number]
            assert proc is not None
            code = proc.poll()
            if code is None and number in kill_at and now >= kill_at[number]:
                code = _kill_all(proc)
            elif code is None and number not in kill_at and now >= deadlines[number]:
                watches[number].timed_out = True
                _signal_group(proc, signal.SIGTERM)
                kill_at[number] = now + TERM_GRACE_S
            if code is not None:
                watches[number].exit_code, watches[number].ended = code, time.monotonic()
                pending.discard(number)
        if pending:
            time.sleep(0.05)  # as Popen.wait polls with a time limit


def _stop_together(
    procs: Sequence[subprocess.Popen | None], watches: list[_Watch], pending: set[int]
) -> None:
    """SIGINT to every process still running (fio writes what it measured), a grace for
    all of them together, then SIGKILL to what is left; a second Ctrl-C kills at once."""
    for number in pending:
        proc = procs[number]
        assert proc is not None
        _signal_group(proc, signal.SIGINT)
    deadline = time.monotonic() + SIGINT_GRACE_S
    try:
        for number in sorted(pending):
            proc = procs[number]
            assert proc is not None
            try:
                watches[number].exit_code = proc.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                watches[number].exit_code = _kill_all(proc)
    except KeyboardInterrupt:
        for number in pending:
            proc = procs[number]
            assert proc is not None
            if proc.poll() is None:
                watches[number].exit_code = _kill_all(proc)
            else:
                watches[number].exit_code = proc.returncode


def _settle(outcome: RunOutcome, folder: Path) -> RunOutcome:
    """Decide ok/failed from the exit code and what fio wrote."""
    try:
        result = parse_fio_file(folder / FIO_JSON)
    except Exception as exc:  # whatever fio wrote, the sweep goes on and says why
        exc_text = str(exc) if isinstance(exc, (OSError, SsdcompareError)) else repr(exc)
        outcome.state = "failed"
        notes = _tail(folder / FIO_JSON, 5) or outcome.stderr_tail or ""
        outcome.error = f"fio exited with status {outcome.exit_code} and no usable results"
        if outcome.exit_code == 0:
            outcome.error = f"fio output unreadable: {exc_text}"
        outcome.stderr_tail = "\n".join(t for t in (outcome.stderr_tail, notes) if t) or None
        outcome.device_unusable = _device_problem(outcome.stderr_tail or "")
        # fio's messages of blocks that failed their checks can garble its JSON: say them
        _name_data_wrong(outcome, folder, [], [])
        return outcome
    outcome.notes = list(result.warnings)
    failed = [job for job in result.jobs if job.error]
    if failed or outcome.exit_code:
        outcome.state = "failed"
        if failed:
            code = failed[0].error
            outcome.fio_errno = code
            outcome.error = f"fio job error {code} ({os.strerror(code)})"
            outcome.device_unusable = code in DEVICE_ERRNOS
        else:
            outcome.error = f"fio exited with status {outcome.exit_code}"
        if result.notes:
            notes = "\n".join(result.notes[-10:])
            outcome.stderr_tail = "\n".join(t for t in (outcome.stderr_tail, notes) if t)
        _name_data_wrong(outcome, folder, result.notes, failed)
        if not outcome.device_unusable:
            outcome.device_unusable = _device_problem(outcome.stderr_tail or "")
    return outcome


def _name_data_wrong(
    outcome: RunOutcome, folder: Path, notes: list[str], failed: list[JobResult]
) -> None:
    """A failed run in which fio's checks of the data failed: its error says what fio found
    in fio's words (errno 84's strerror alone would speak of multibyte characters), and
    `verify_failure` keeps what and where (ssdcompare.fio.verify.run_failure: data that came
    back wrong, or a read that found no verified data). fio's messages stay in
    fio.stderr.txt as they are."""
    found = run_failure(folder / STDERR, folder / FIO_JSON, folder / JOBFILE, notes, failed)
    if found is not None:
        outcome.verify_failure = found
        outcome.error = found.error


def _device_problem(text: str) -> bool:
    """fio's messages for a target that cannot be opened or used with O_DIRECT."""
    lowered = text.lower()
    return any(
        marker in lowered
        for marker in (
            "no such file or directory", "permission denied", "device or resource busy",
            "read-only file system", "o_direct", "no space left",
        )
    )  # fmt: skip
