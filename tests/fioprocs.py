"""Watching the fio processes a test started: which are alive, and whether they have done I/O.

Tests wait for events (fio started, fio has read from the target), never for a fixed time:
this machine's speed varies too much for sleeps.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import psutil

DEADLINE_S = 60.0
READ_SOME_BYTES = 1 << 20  # more than fio reads of its own files while starting


def fio_processes(results: Path) -> list[psutil.Process]:
    """fio processes running a jobfile of this results folder (workers share the command)."""
    found = []
    for proc in psutil.process_iter(["name", "cmdline"]):
        cmdline = proc.info["cmdline"] or []
        if proc.info["name"] == "fio" and any(str(results) in arg for arg in cmdline):
            found.append(proc)
    return found


def fio_has_read(results: Path, where: str = "", at_least: int = READ_SOME_BYTES) -> bool:
    """Some fio process of this results folder (running a jobfile whose path contains `where`)
    has read at least `at_least` bytes (a MiB) from storage: the job is measuring."""
    for proc in fio_processes(results):
        try:
            if where and not any(where in arg for arg in proc.cmdline()):
                continue
            if proc.io_counters().read_bytes >= at_least:
                return True
        except psutil.Error:
            continue
    return False


def wait_for(condition: Callable[[], object], what: str, deadline_s: float = DEADLINE_S) -> None:
    """Poll until `condition()` holds; fail naming `what` after a generous deadline."""
    deadline = time.monotonic() + deadline_s
    while not condition():
        assert time.monotonic() < deadline, f"gave up waiting: {what}"
        time.sleep(0.05)
