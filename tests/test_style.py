"""The code keeps the house style: ruff's checks and ruff's format (line length 99), as
pyproject.toml sets them, on the package, the tests and the benchmarks."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
CODE = ["ssdcompare", "tests", "benchmarks"]


def ruff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ruff", *args, *CODE], cwd=REPO,
                          capture_output=True, text=True, check=False, timeout=120)  # fmt: skip


def test_ruff_finds_nothing() -> None:
    done = ruff("check", "--no-cache")
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_code_is_formatted() -> None:
    done = ruff("format", "--check", "--no-cache")
    assert done.returncode == 0, done.stdout + done.stderr
