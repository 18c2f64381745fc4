"""The watchdog: fio never outlives the ssdcompare that started it, however that one ends.

fio is started with a parent-death signal (SIGTERM), but that is not enough on its own: fio
can deadlock in its own SIGTERM handler (malloc called while already inside malloc, seen on a
loaded machine, fio then waits for ever), and fio's workers are processes of their own, in
sessions of their own, that run on to the end of their job when their parent is gone.

So a process that runs fio has one watchdog: a small separate process, in a session of its own
(Ctrl-C and a closed terminal do not reach it), that reads a pipe whose other end only
ssdcompare holds. ssdcompare tells it each fio process it starts (`+PID`) and each it has
reaped (`-PID`). While a fio runs, the watchdog notes its descendants every half second (its
workers). When the pipe closes while a fio is still registered (ssdcompare was killed outright
or crashed; an orderly end unregisters every fio first), the watchdog kills that fio and every
descendant it knows of with SIGKILL, again until none is left, and ends. Processes are known
by pid and start time, so a pid the kernel gave to something else meanwhile is never touched.

This file runs as the watchdog itself (`python -I -S watchdog.py`) and so imports only the
standard library; `Watchdog` is the side ssdcompare uses.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import threading
import time

_LOOK_S = 0.5  # how often the watchdog notes a running fio's workers
_KILL_ROUNDS = 100  # rounds of SIGKILL, 50 ms apart, until no process of the run is left


def _start_time(pid: int) -> int | None:
    """The process's start time (clock ticks since boot), or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        return int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def _children(pid: int) -> list[int]:
    """The children of every thread of a process."""
    found = []
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, ValueError):
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as handle:
                    found += [int(child) for child in handle.read().split()]
    return found


def _note(known: dict[int, int], root: int) -> None:
    """Add the live descendants of `root` (and itself, while its start time holds) to
    `known` (pid -> start time)."""
    queue = [root]
    while queue:
        pid = queue.pop()
        for child in _children(pid):
            start = _start_time(child)
            if start is not None and child not in known:
                known[child] = start
                queue.append(child)


def _kill_all(known: dict[int, int]) -> None:
    """SIGKILL every process in `known` that is still the one noted, and their descendants,
    until none is left."""
    for _ in range(_KILL_ROUNDS):
        for pid in list(known):
            if _start_time(pid) == known[pid]:
                _note(known, pid)
        alive = [pid for pid, start in known.items() if _start_time(pid) == start]
        if not alive:
            return
        for pid in reversed(alive):  # the workers first, then their fio
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


def serve(fd: int) -> None:
    """The watchdog's life: read `+PID` / `-PID` lines from `fd` until it closes, then kill
    what is still registered."""
    runs: dict[int, dict[int, int]] = {}  # fio pid -> every process of its run noted
    pending = b""
    while True:
        ready, _, _ = select.select([fd], [], [], _LOOK_S)
        if not ready:
            for root, known in runs.items():
                if _start_time(root) == known.get(root):
                    _note(known, root)
            continue
        data = os.read(fd, 4096)
        if not data:
            break
        pending += data
        *lines, pending = pending.split(b"\n")
        for line in lines:
            sign, number = line[:1], line[1:]
            if not number.isdigit():
                continue
            pid = int(number)
            if sign == b"+":
                start = _start_time(pid)
                runs[pid] = {pid: start} if start is not None else {}
            elif sign == b"-":
                runs.pop(pid, None)
    for known in runs.values():
        _kill_all(known)


class Watchdog:
    """ssdcompare's end of one watchdog process (see the module's docstring)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        read, write = os.pipe()
        try:
            self._process = subprocess.Popen(
                [sys.executable, "-I", "-S", os.path.abspath(__file__), str(read)],
                pass_fds=(read,), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        finally:
            os.close(read)
        self._pipe = write  # inheritable by nothing: os.pipe gives close-on-exec ends

    def watch(self, pid: int) -> None:
        """A fio process just started: kill it and its workers if this process ends first."""
        self._say(f"+{pid}\n")

    def forget(self, pid: int) -> None:
        """A fio process was reaped: nothing of it is left to kill."""
        self._say(f"-{pid}\n")

    @property
    def alive(self) -> bool:
        return self._process.poll() is None

    def _say(self, line: str) -> None:
        with self._lock, contextlib.suppress(OSError):
            os.write(self._pipe, line.encode())


_WATCHDOG: Watchdog | None = None
_STARTING = threading.Lock()


def watchdog() -> Watchdog | None:
    """This process's watchdog, started when first asked for (again if it has died); None
    where it cannot be started (fio's parent-death signal is then all there is)."""
    global _WATCHDOG
    with _STARTING:
        if _WATCHDOG is None or not _WATCHDOG.alive:
            try:
                _WATCHDOG = Watchdog()
            except OSError:
                _WATCHDOG = None
        return _WATCHDOG


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    serve(int(sys.argv[1]))
