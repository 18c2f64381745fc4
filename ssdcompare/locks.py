"""Locks that keep two sweeps off one device and one results folder at the same time.

Two sweeps measuring one device at once both report "ok" and both measure garbage; two
processes writing one results folder can overwrite each other's runs. Each sweep takes an
exclusive lock (flock) per target and on its results folder for as long as it runs. The kernel
drops a lock when its process dies, however it dies, so a lock is never left behind.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import stat
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from ssdcompare.errors import SsdcompareError

LOCK_DIRS = (Path("/run/lock"), Path(tempfile.gettempdir()))


class LockError(SsdcompareError):
    """The device or folder is in use by another sweep; the message names its process."""


def _lock_dir() -> Path:
    for base in LOCK_DIRS:
        folder = base / "ssdcompare"
        try:
            folder.mkdir(mode=0o1777, exist_ok=True)
            if os.access(folder, os.W_OK):
                return folder
        except OSError:
            continue
    raise SsdcompareError("no writable folder for lock files (/run/lock or the temp folder)")


def target_lock_path(path: str) -> Path:
    """The lock file for a target: block devices by device number (so /dev/disk/by-id/x and
    /dev/sdb are one lock), files by their real path."""
    try:
        info = os.stat(path)
    except OSError:
        info = None
    if info is not None and stat.S_ISBLK(info.st_mode):
        key = f"block-{os.major(info.st_rdev)}-{os.minor(info.st_rdev)}"
    else:
        digest = hashlib.sha256(os.path.realpath(path).encode()).hexdigest()[:16]
        key = f"file-{digest}"
    return _lock_dir() / f"{key}.lock"


class Lock:
    """One held flock; `release()` (or process exit) lets go."""

    def __init__(self, path: Path, what: str, holder: str) -> None:
        self.path = path
        self.what = what
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            held_by = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise LockError(
                f"{what} is in use by another ssdcompare sweep ({held_by}); wait for it to "
                "finish or stop it, then try again"
            ) from None
        except OSError:
            os.close(fd)
            raise
        os.ftruncate(fd, 0)
        os.pwrite(fd, holder.encode(), 0)
        self._fd: int | None = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


@contextlib.contextmanager
def holding(targets: Sequence[str], results: Path, purpose: str) -> Iterator[list[Lock]]:
    """Lock the results folder and every target for the duration of the block.

    `purpose` says what the holder does ("results/x"), for the error the next sweep sees.
    Raises LockError naming the holder's pid when any of them is taken.
    """
    holder = f"pid {os.getpid()}, {purpose}"
    held: list[Lock] = []
    try:
        held.append(Lock(results / ".lock", f"results folder {results}", holder))
        for target in targets:
            held.append(Lock(target_lock_path(target), target, holder))
        yield held
    finally:
        for lock in reversed(held):
            lock.release()
