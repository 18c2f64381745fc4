"""Wrong arguments to the Python API and the command line are one clear SsdcompareError
(never a TypeError from deep inside); runtimes are bounded; `serve` listens where asked."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest
from fioservers import free_port, listening
from suitefiles import suite_file

import ssdcompare
from ssdcompare.analysis.export import export
from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.binary import FioInfo
from ssdcompare.report.build import write_report
from ssdcompare.suite.files import load_suite

EXAMPLE = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"
DEADLINE_S = 60.0
RunCli = Callable[..., Any]  # the run_cli fixture: returns exit_code, stdout, stderr


def test_run_sweep_checks_the_type_of_every_argument(tmp_path: Path) -> None:
    target = str(tmp_path / "t.img")
    for limit in ("10", True, [10]):
        with pytest.raises(SsdcompareError, match="job_timeout_s .* is not a time limit"):
            ssdcompare.run_sweep([target], size="1m", job_timeout_s=limit)  # type: ignore[arg-type]
    for flag in ("no", "yes", 0, None):
        with pytest.raises(SsdcompareError, match="report must be True or False"):
            ssdcompare.run_sweep([target], size="1m", report=flag)  # type: ignore[arg-type]
    assert not list(tmp_path.iterdir())  # nothing was started


@pytest.mark.parametrize(
    "call",
    [
        lambda out: ssdcompare.load(42),
        lambda out: ssdcompare.load([EXAMPLE, 7]),
        lambda out: ssdcompare.read_fio(123),
        lambda out: ssdcompare.read_fio([None]),
        lambda out: ssdcompare.bursts(None),
        lambda out: ssdcompare.timeseries(3.5),
        lambda out: export(42, out / "x.csv"),
        lambda out: write_report(b"results", out / "x.html"),
    ],
    ids=["load", "load-list", "read_fio", "read_fio-list", "bursts", "timeseries", "export",
         "write_report"],
)  # fmt: skip
def test_functions_taking_paths_say_what_is_not_a_path(
    call: Callable[[Path], object], tmp_path: Path
) -> None:
    with pytest.raises(SsdcompareError, match="is not a path: give a path"):
        call(tmp_path)
    assert not list(tmp_path.iterdir())


def test_functions_taking_frames_say_what_is_not_a_frame() -> None:
    for call, takes in (
        (lambda: ssdcompare.job_summary(42), "job_summary: int 42"),
        (lambda: ssdcompare.side_by_side("A"), "side_by_side: str 'A'"),
        (lambda: ssdcompare.headline(None), "headline: NoneType None"),
    ):
        with pytest.raises(SsdcompareError, match=f"{takes} is not a frame; give the frame"):
            call()
    # the results frame where the summary belongs: said, not a KeyError
    frame = ssdcompare.load(Path(__file__).parent.parent / "examples/results/ramdisk-vs-loop")
    with pytest.raises(
        SsdcompareError,
        match="headline: the frame given has no iops_value "
        "column; give the frame ssdcompare.job_summary",
    ):
        ssdcompare.headline(frame)


def test_runtimes_are_bounded_in_suites_on_the_command_line_and_in_python(
    tmp_path: Path, run_cli: RunCli
) -> None:
    week = re.escape("at most 7 days (604800 s)")
    for field in ("runtime", "ramp_time"):
        long = suite_file(tmp_path, f"long-{field}",
                          f"{{rw: randread, bs: 4k, {field}: 1000000000000}}")  # fmt: skip
        with pytest.raises(SsdcompareError, match=rf"{field}: .*{week}"):
            load_suite(long)
    ok = suite_file(tmp_path, "week", "{rw: randread, bs: 4k, runtime: 604800}")
    assert load_suite(ok).workloads[0].runtime_s == 604800
    target = str(tmp_path / "t.img")
    with pytest.raises(SsdcompareError, match=rf"--runtime 1000000000000: .*{week}"):
        ssdcompare.run_sweep([target], size="1m", runtime_s=10**12)
    for command in ("plan", "sweep"):
        done = run_cli(command, "--suite", "quick", "--devices", target, "--size", "1m",
                       "--runtime", str(10**12), "--out", str(tmp_path / command))  # fmt: skip
        assert done.exit_code == 2 and "at most 7 days (604800 s)" in done.stderr, done
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        ["long-runtime.yaml", "long-ramp_time.yaml", "week.yaml"])  # fmt: skip


@pytest.mark.parametrize("address", ["", "  "])
def test_serve_refuses_an_empty_address(address: str, run_cli: RunCli) -> None:
    done = run_cli("serve", "--address", address, "--port", "8799")
    assert done.exit_code == 2
    assert done.stderr.strip().splitlines() == [
        "error: --address is empty: give an address of this machine to listen on (127.0.0.1 "
        "is the default; 0.0.0.0 or :: for every interface)"
    ]


def serving(port: int) -> subprocess.Popen[str]:
    """`ssdcompare serve` on its default address, once its fio server listens there."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "ssdcompare", "serve", "--allow-root", "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )  # fmt: skip
    deadline = time.monotonic() + DEADLINE_S
    try:
        while not listening("127.0.0.1", port):
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.05)
    except BaseException:
        proc.kill()  # never left serving when it did not come up
        raise
    return proc


@pytest.mark.fio
def test_serve_listens_on_loopback_by_default(fio: FioInfo) -> None:
    port = free_port("127.0.0.1")
    proc = serving(port)
    try:
        # another address of this machine reaches a server bound to all of them, not this one
        assert not listening("127.0.0.2", port)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=DEADLINE_S)
    assert f"on 127.0.0.1:{port}" in stderr and "No authentication" in stderr


@pytest.mark.root  # the refusal is for root
def test_serve_as_root_needs_allow_root_and_says_why(run_cli: RunCli) -> None:
    done = run_cli("serve", "--port", "8799")
    assert done.exit_code == 2
    assert "refusing to serve as root" in done.stderr and "exec_prerun" in done.stderr
    assert "Every user of this machine can reach it on 127.0.0.1" in done.stderr


@pytest.mark.fio
def test_a_killed_serve_leaves_no_fio_server_behind(fio: FioInfo) -> None:
    """Killed outright (SIGKILL), serve cannot stop its fio server: the watchdog does."""
    port = free_port("127.0.0.1")
    proc = serving(port)
    server = [p for p in psutil.Process(proc.pid).children() if p.name() == "fio"]
    assert len(server) == 1
    proc.kill()
    proc.communicate(timeout=DEADLINE_S)
    psutil.wait_procs(server, timeout=DEADLINE_S)
    assert not server[0].is_running() and not listening("127.0.0.1", port)
