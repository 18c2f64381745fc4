"""Fixtures shared by the test modules: the installed fio and the CLI run in-process."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from ssdcompare.cli import main
from ssdcompare.fio import FioInfo, find_fio


@pytest.fixture(scope="session")
def fio() -> FioInfo:
    """The fio on PATH (CI installs it; a missing fio is a failure, not a skip)."""
    return find_fio()


@dataclass(frozen=True)
class CliResult:
    """What a user sees from one `ssdcompare ...` command."""

    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run `ssdcompare ARGS...` through the real entry point (error handling included)."""

    def run(*args: str) -> CliResult:
        code = 0
        capsys.readouterr()  # drop anything printed before the command
        try:
            main(list(args))
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        out, err = capsys.readouterr()
        return CliResult(exit_code=code, stdout=out, stderr=err)

    return run
