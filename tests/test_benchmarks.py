"""The performance benchmark works: its quick mode measures every figure and prints each next
to its target (what the figures are on a shared machine decides nothing here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from ssdcompare.fio.binary import FioInfo

REPO = Path(__file__).resolve().parents[1]


def test_the_benchmark_prints_every_figure_with_its_target(fio: FioInfo) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "run.py"), "--quick"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.splitlines()
    for figure in ("report, 40 jobs x 2 devices: time", "ssdcompare.load / json.loads",
                   "read_fio of the list / json.loads", "CPU sampler at 10 Hz",
                   "sweep orchestration per job", "IOPS via ssdcompare / bare fio"):  # fmt: skip
        (line,) = [x for x in lines if x.startswith(figure)]
        assert " target " in line and line.rstrip().endswith(("met", "MISSED")), line


def test_the_benchmark_measures_only_the_figures_asked_for(fio: FioInfo) -> None:
    done = subprocess.run(
        [sys.executable, str(REPO / "benchmarks" / "run.py"), "--quick", "--only", "sampler"],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (line,) = done.stdout.splitlines()
    assert line.startswith("CPU sampler at 10 Hz") and " target " in line
