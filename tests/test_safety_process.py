"""Signals, concurrency and hung runs: a real sweep on a real device, stopped or crowded in every
way a server sees, never leaves fio running, never runs two sweeps on one device, and always
says how to continue."""

from __future__ import annotations

import ast
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from blockdevs import loop_device
from fioprocs import DEADLINE_S, fio_has_read, fio_processes, wait_for

import ssdcompare
from ssdcompare.fio.result.reader import parse_fio_file
from ssdcompare.run import sweep
from ssdcompare.run.plan import PlanOptions, make_plan

SUITES = Path(__file__).parent / "suites"


def start_sweep(devices: str, out: Path, suite: str = "long-read.yaml") -> subprocess.Popen:
    """A sweep in the background; the default suite runs until the test stops it."""
    return subprocess.Popen(
        [sys.executable, "-m", "ssdcompare", "sweep", "--devices", devices, "--size", "16m",
         "--suite", str(SUITES / suite), "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip


def second_sweep(
    devices: str, out: str, *extra: str, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """A sweep started while another one runs (to be refused by its locks)."""
    return subprocess.run(
        [sys.executable, "-m", "ssdcompare", "sweep", "--devices", devices,
         "--suite", str(SUITES / "slow-reads.yaml"), "--out", out, *extra],
        capture_output=True, text=True, timeout=DEADLINE_S, check=False, cwd=cwd,
    )  # fmt: skip


def statuses(results: Path) -> dict[str, dict]:
    return {
        f"{p.parent.parent.name}/{p.parent.name}": json.loads(p.read_text())
        for p in (results / "runs").glob("*/*/r*/status.json")
        if p.parent.name[1:].isdigit()  # not the attempts kept aside
    }


@pytest.fixture
def loop(tmp_path: Path) -> Iterator[str]:
    with loop_device(tmp_path / "loop.img", 64 << 20) as device:
        yield device


@pytest.mark.root
@pytest.mark.fio
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_stop_signal_stops_fio_keeps_results_and_says_how_to_resume(
    tmp_path: Path, loop: str, sig: signal.Signals
) -> None:
    out = tmp_path / "results"
    proc = start_sweep(loop, out)
    wait_for(lambda: fio_has_read(out), "fio to read from the device")
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 128 + sig, stderr
    assert f"--resume {out}" in stderr and "Traceback" not in stderr
    name = "Ctrl-C" if sig == signal.SIGINT else sig.name
    (interrupted,) = [s for s in statuses(out).values() if s["status"] == "interrupted"]
    assert interrupted["stopped_by"] == name and name in interrupted["error"]
    assert fio_processes(out) == []  # nothing left measuring
    # fio's partial results of the stopped run are kept
    run = out / "runs" / Path(loop).name / "randread-4k-qd1" / "r1"
    assert parse_fio_file(run / "fio.json").jobs[0].directions["read"].total_ios > 0


@pytest.mark.slow  # one of the longest: started early (tests/conftest.py)
@pytest.mark.root
@pytest.mark.fio
def test_fio_dies_with_a_killed_sweep(tmp_path: Path, loop: str) -> None:
    """SIGKILL leaves no chance to clean up: the kernel tells fio (parent-death signal)."""
    out = tmp_path / "results"
    proc = start_sweep(loop, out, "one-slow-read.yaml")  # 5 s: short enough to resume
    wait_for(lambda: len(fio_processes(out)) >= 2, "fio and its worker to start")
    proc.kill()
    proc.communicate(timeout=DEADLINE_S)
    wait_for(lambda: fio_processes(out) == [], "fio to stop after its parent was killed")
    resumed = subprocess.run(
        [sys.executable, "-m", "ssdcompare", "sweep", "--resume", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert resumed.returncode == 0, resumed.stderr
    assert [s["status"] for s in statuses(out).values()] == ["ok"]
    assert list((out / "runs").glob("*/*/r1.attempt-1"))  # the killed attempt is kept aside


@contextmanager
def cpu_hogs(count: int = 2) -> Iterator[None]:
    """Busy loops on every CPU: the load under which fio once deadlocked in its SIGTERM
    handler when its parent was killed."""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(count)]
    try:
        yield
    finally:
        for hog in hogs:
            hog.kill()
            hog.wait()


@pytest.mark.root
@pytest.mark.fio
@pytest.mark.serial  # busy loops on every CPU would slow the tests beside it
@pytest.mark.parametrize("attempt", [1, 2, 3])
def test_fio_never_outlives_a_killed_sweep_even_when_it_cannot_act_on_sigterm(
    tmp_path: Path, loop: str, attempt: int
) -> None:
    """fio once deadlocked in its own SIGTERM handler under load, and its workers ran on alone.
    Here fio's main process is frozen (SIGSTOP) so that its parent-death signal can do
    nothing, just as then; the sweep is killed outright beside CPU hogs. The watchdog must
    end fio and its workers (the job would run ten minutes)."""
    out = tmp_path / "results"
    with cpu_hogs():
        proc = start_sweep(loop, out)  # long-read: one ten-minute job
        try:
            wait_for(lambda: fio_has_read(out), "fio to read from the device")
            (main,) = [p for p in fio_processes(out) if p.ppid() == proc.pid]
            assert len(fio_processes(out)) >= 2  # the main process and its worker
            main.suspend()
            proc.kill()
            proc.communicate(timeout=DEADLINE_S)
            wait_for(lambda: fio_processes(out) == [], "fio and its workers to be killed")
        finally:
            for left in fio_processes(out):
                left.kill()


@pytest.mark.slow  # one of the longest: started early (tests/conftest.py)
@pytest.mark.root
@pytest.mark.fio
def test_a_second_sweep_on_the_same_device_or_folder_is_refused(tmp_path: Path, loop: str) -> None:
    out = tmp_path / "results"
    first = start_sweep(loop, out)
    try:
        wait_for(lambda: fio_processes(out), "the first sweep's fio to start")
        name = Path(loop).name  # the same device spelled differently
        second = second_sweep(name, str(tmp_path / "second"), "--size", "16m")
        assert second.returncode == 2, second.stderr
        assert f"in use by another ssdcompare sweep (pid {first.pid}" in second.stderr
        assert not (tmp_path / "second").exists()
        resume = subprocess.run([sys.executable, "-m", "ssdcompare", "sweep", "--resume",
                                 str(out)], capture_output=True, text=True,
                                timeout=DEADLINE_S, check=False)  # fmt: skip
        assert resume.returncode == 2
        assert f"pid {first.pid}" in resume.stderr
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=DEADLINE_S)
    assert fio_processes(out) == []


@pytest.mark.slow  # one of the longest: started early (tests/conftest.py)
@pytest.mark.fio
def test_a_file_target_is_locked_whatever_its_spelling(tmp_path: Path) -> None:
    out = tmp_path / "results"
    first = start_sweep(str(tmp_path / "t.img"), out)
    try:
        wait_for(lambda: fio_processes(out), "the first sweep's fio to start")
        second = second_sweep("./t.img", "second", cwd=tmp_path)
        assert second.returncode == 2 and f"pid {first.pid}" in second.stderr
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=DEADLINE_S)


@pytest.mark.slow  # a time limit that must pass, whatever runs beside it: it only takes longer
@pytest.mark.fio
def test_a_hung_fio_costs_one_timeout_then_the_device_is_skipped(tmp_path: Path) -> None:
    """fio that neither finishes nor answers SIGTERM (stopped, as on a dead device): after one
    timeout the device's remaining jobs are skipped, and the stuck fio is killed."""
    plan = make_plan(str(SUITES / "slow-reads.yaml"), str(tmp_path / "t.img"),
                     PlanOptions(size_bytes=16 << 20), require_fio=True)  # fmt: skip
    results, _ = sweep.start(plan, tmp_path / "results", command_line=["test"])
    stopped: set[int] = set()
    done = threading.Event()

    def freeze_fio() -> None:
        while not done.is_set():
            for proc in fio_processes(results.path):
                if proc.pid not in stopped:
                    proc.send_signal(signal.SIGSTOP)
                    stopped.add(proc.pid)
            time.sleep(0.02)

    freezer = threading.Thread(target=freeze_fio, daemon=True)
    freezer.start()
    try:
        outcome = sweep.run(plan, results, job_timeout_s=2)
    finally:
        done.set()
        freezer.join()
    assert [s.status for s in outcome.statuses] == ["failed", "skipped", "skipped"]
    assert "did not finish within 2 s" in (outcome.statuses[0].error or "")
    assert all("is unusable" in (s.error or "") for s in outcome.statuses[1:])
    runs = (results.path / "runs").glob("*/*/r1")
    ran_fio = [run for run in runs if (run / "fio.stdout.txt").exists()]
    assert len(ran_fio) == 1
    assert fio_processes(results.path) == []


@pytest.mark.parametrize("value", ["nan", "inf", "-1", "0"])
def test_a_job_timeout_that_is_no_time_limit_is_refused(
    run_cli: Callable[..., Any], tmp_path: Path, value: str
) -> None:
    out = tmp_path / "results"
    result = run_cli("sweep", "--devices", str(tmp_path / "t.img"), "--size", "16m",
                     "--suite", str(SUITES / "tiny.yaml"), f"--job-timeout={value}",
                     "--out", str(out))  # fmt: skip
    assert result.exit_code == 2
    assert "Invalid value for '--job-timeout'" in result.stderr
    assert "Traceback" not in result.stderr
    assert not out.exists() and not (tmp_path / "t.img").exists()


@pytest.mark.fio
def test_failures_reach_stderr_when_it_is_not_a_terminal(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ssdcompare", "sweep", "--devices", str(tmp_path / "t.img"),
         "--size", "16m", "--suite", str(SUITES / "trim-in-middle.yaml"),
         "--out", str(tmp_path / "results")],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert any(re.search(r"\[2/3\] t\.img: randtrim-4k-qd1 \(repeat 1\) FAILED: fio job error 25",
                         line) for line in lines), done.stderr  # fmt: skip
    assert any("[1/3] t.img: randread-4k-qd1 (repeat 1) ok" in line for line in lines)


def traceback_of_ours(stderr: str) -> bool:
    """A traceback through code of ours that had a chance to act. Excluded: Python's own
    start-up, and the first statement of the package (nothing of ours can act before its
    own first line runs); an interrupt there shows as a bare KeyboardInterrupt on it."""
    frames = re.findall(r'File "([^"]*/ssdcompare/[^"]+)", line (\d+), in (\S+)', stderr)
    if not frames:
        return False
    first_line = {Path(ssdcompare.__file__): _first_statement(Path(ssdcompare.__file__))}
    only_the_first = all(
        Path(path).resolve() in first_line and int(line) == first_line[Path(path).resolve()]
        and where == "<module>" for path, line, where in frames
    )  # fmt: skip
    return not (only_the_first and stderr.rstrip().endswith("KeyboardInterrupt"))


def _first_statement(module: Path) -> int:
    return ast.parse(module.read_text()).body[1].lineno  # body[0] is the docstring


@pytest.mark.slow  # seconds of its own: left out of the unprivileged rerun (test_markers)
@pytest.mark.parametrize("command", [["-m", "ssdcompare", "suites"]])
def test_ctrl_c_while_starting_never_shows_a_traceback_of_ours(command: list[str]) -> None:
    """SIGINT at many points of start-up never shows a traceback through our code: Ctrl-C is
    held back while the program loads (an interrupt inside a library's import can come out
    as another error of that library's), and turned into one line."""
    codes = set()
    for step in range(40):
        proc = subprocess.Popen([sys.executable, *command], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True)  # fmt: skip
        time.sleep(step * 0.008)
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=DEADLINE_S)
        assert not traceback_of_ours(stderr), stderr
        codes.add(proc.returncode)
    assert 130 in codes or codes <= {0, 1, -2}  # interrupted cleanly whenever it was ours


def test_the_traceback_filter_tells_ours_from_before_us() -> None:
    first = _first_statement(Path(ssdcompare.__file__))
    package = Path(ssdcompare.__file__)
    before_us = f'  File "{package}", line {first}, in <module>\n    x\nKeyboardInterrupt\n'
    assert not traceback_of_ours(before_us)
    assert not traceback_of_ours('  File "<frozen site>", line 1\nKeyboardInterrupt\n')
    later = f'  File "{package.parent / "cli.py"}", line 3, in <module>\nKeyboardInterrupt\n'
    assert traceback_of_ours(later)
    wrapped = f'  File "{package}", line {first}, in <module>\nRuntimeError: x\n'
    assert traceback_of_ours(wrapped)


def test_an_unexpected_error_is_one_line_with_the_details_in_a_file(tmp_path: Path) -> None:
    """A bug must not print a traceback either: one line, and where the details are."""
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    # make the suites command fail inside ssdcompare with an error nobody expected
    (tmp_path / "sitecustomize.py").write_text(
        "import ssdcompare.suite.files as s\n"
        "def broken(*a, **k):\n    raise ZeroDivisionError('simulated bug')\n"
        "s.list_suites = broken\n"
    )
    done = subprocess.run([sys.executable, "-m", "ssdcompare", "suites"], capture_output=True,
                          text=True, timeout=60, check=False, env=env)  # fmt: skip
    assert done.returncode == 3
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert "internal error (a bug in ssdcompare): ZeroDivisionError: simulated bug" in line
    report = Path(line.rsplit("details in ", 1)[1])
    assert "ZeroDivisionError" in report.read_text()
    report.unlink()


@pytest.mark.fio
def test_a_hard_link_does_not_dodge_the_lock(tmp_path: Path) -> None:
    (tmp_path / "f.img").write_bytes(bytes(16 << 20))
    os.link(tmp_path / "f.img", tmp_path / "g.img")
    out = tmp_path / "results"
    first = start_sweep(str(tmp_path / "f.img"), out)
    try:
        wait_for(lambda: fio_processes(out), "the first sweep's fio to start")
        second = second_sweep(str(tmp_path / "g.img"), str(tmp_path / "second"))
        assert second.returncode == 2 and f"pid {first.pid}" in second.stderr
    finally:
        first.send_signal(signal.SIGINT)
        first.communicate(timeout=DEADLINE_S)


@pytest.mark.fio
def test_a_sweep_under_nohup_ignores_sighup(tmp_path: Path) -> None:
    out = tmp_path / "results"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ssdcompare", "sweep", "--devices", str(tmp_path / "t.img"),
         "--size", "16m", "--suite", str(SUITES / "long-read.yaml"), "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN),  # what nohup does
    )  # fmt: skip
    try:
        wait_for(lambda: fio_has_read(out), "fio to read")
        # the job's worker: the fio process that reads from the target
        worker = max(fio_processes(out), key=lambda p: p.io_counters().read_bytes)
        read_before = worker.io_counters().read_bytes
        proc.send_signal(signal.SIGHUP)
        # still measuring after the hang-up: its fio goes on reading
        wait_for(lambda: worker.io_counters().read_bytes > read_before + (8 << 20),
                 "fio to keep reading after SIGHUP")  # fmt: skip
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 130


@pytest.mark.fio
@pytest.mark.parametrize("closed", ["stdout", "stderr"])
def test_a_closed_output_stream_costs_no_result_and_no_report(tmp_path: Path, closed: str) -> None:
    out = tmp_path / "results"
    streams = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    proc = subprocess.Popen(
        [sys.executable, "-m", "ssdcompare", "sweep", "--devices", str(tmp_path / "t.img"),
         "--size", "8m", "--suite", str(SUITES / "tiny.yaml"), "--runtime", "1",
         "--out", str(out)], text=True, **streams,
    )  # fmt: skip
    getattr(proc, closed).close()  # the reader goes away at once (a broken pipe)
    other = proc.stderr if closed == "stdout" else proc.stdout
    assert other is not None
    other.read()
    proc.wait(timeout=300)
    assert proc.returncode == 0
    assert (out / "report.html").is_file()
    assert len(list(out.glob("runs/*/*/r1/fio.json"))) == 3


@pytest.mark.fio
def test_a_sweep_started_without_stderr_runs_to_the_end(tmp_path: Path) -> None:
    """`ssdcompare sweep ... 2>&-`: Python then has no sys.stderr at all."""
    out = tmp_path / "results"
    done = subprocess.run(
        [sys.executable, "-m", "ssdcompare", "sweep", "--devices", str(tmp_path / "t.img"),
         "--size", "8m", "--suite", str(SUITES / "tiny.yaml"), "--runtime", "1",
         "--out", str(out)],
        stdout=subprocess.PIPE, text=True, timeout=300, check=False,
        preexec_fn=lambda: os.close(2),
    )  # fmt: skip
    assert done.returncode == 0
    assert "3/3 runs ok" in done.stdout and (out / "report.html").is_file()


def test_the_launcher_runs_fio_only_while_its_parent_is_the_sweep(tmp_path: Path) -> None:
    """fio is started by setpriv (parent-death signal) and a shell that execs it only if the
    sweep is still its parent: a sweep that died before the signal was set starts nothing."""
    from ssdcompare.run.runner import _launch

    marker = tmp_path / "ran"
    command = ["/usr/bin/touch", str(marker)]
    launch, setup = _launch(command, os.getpid())
    assert setup is None and launch[-2:] == command  # no fork of the whole interpreter
    assert subprocess.run(launch, check=False).returncode == 0 and marker.exists()
    marker.unlink()
    # as if the sweep had died and the child had been handed to another parent
    orphan, _ = _launch(command, os.getpid() + 1_000_000)
    assert subprocess.run(orphan, check=False).returncode == 1 and not marker.exists()
    # without an executable to start, the child falls back to the preexec check (and Popen
    # then says it cannot start it)
    missing, setup = _launch([str(tmp_path / "no-fio")], os.getpid())
    assert setup is not None and missing == [str(tmp_path / "no-fio")]
