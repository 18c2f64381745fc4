"""Locks that keep two sweeps off one device and one results folder at the same time.

Two sweeps measuring one device at once both report "ok" and both measure garbage; two
processes writing one results folder can overwrite each other's runs. Each sweep takes an
exclusive lock (flock) per target and on its results folder for as long as it runs. The kernel
drops a lock when its process dies, however it dies, so a lock is never left behind. Its file
is, when the sweep is killed outright: the next sweep removes such files, the ones nobody holds.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import re
import stat
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from ssdcompare.errors import SsdcompareError
from ssdcompare.target.devices import Target, kernel_name_of, read_value
from ssdcompare.target.loops import loop_backing_key

# Tried in order. /run takes only root's folders (nobody else can create one there first);
# other users get theirs in /run/lock or the temp folder.
LOCK_DIRS = (Path("/run"), Path("/run/lock"), Path(tempfile.gettempdir()))
# the names of target lock files (_keys, lock_paths), and nothing else in the lock folder
_LOCK_FILE = re.compile(r"(?:file|inode|block|remote)-[0-9a-f-]+\.lock")


class LockError(SsdcompareError):
    """The device or folder is in use by another sweep; the message names its process."""


def lock_dir_name() -> str:
    """Root's lock folder is shared by every root sweep; anyone else cannot create files in it,
    so they get one of their own."""
    euid = os.geteuid()
    return "ssdcompare" if euid == 0 else f"ssdcompare-{euid}"


def _lock_dir() -> Path:
    """The folder of target lock files, which only we can write to.

    In a folder others could write to, any local user could create a target's lock file and
    hold it (every sweep on that target is then refused), or plant a link in its place. A
    folder of ours that others can write to (e.g. left by an older version) is closed, and
    whatever others put in it is removed; a folder owned by anyone else is not used.
    """
    refused = []
    for base in LOCK_DIRS:
        folder = base / lock_dir_name()
        try:
            folder.mkdir(mode=0o755, exist_ok=True)
            fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except OSError:
            continue  # e.g. no /run/lock here, or a link in the folder's place
        try:
            info = os.fstat(fd)
            if info.st_uid != os.geteuid():
                refused.append(f"{folder} belongs to user id {info.st_uid}")
                continue
            if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
                os.fchmod(fd, 0o755)
                _remove_foreign(fd)
            if os.access(folder, os.W_OK):
                return folder
        except OSError:
            continue
        finally:
            os.close(fd)
    hint = f" ({'; '.join(refused)}: remove it)" if refused else ""
    raise SsdcompareError(
        f"no safe folder for lock files: {lock_dir_name()} in /run/lock or in the temp folder "
        f"must be a folder only you can write to{hint}"
    )


def own_folder() -> Path:
    """The lock folder, which only this user can write to: also for records that nobody else
    may plant (ssdcompare.run.ramdisk's, which name devices to remove)."""
    return _lock_dir()


def _remove_foreign(folder_fd: int) -> None:
    """Remove what other users put in a lock folder while they could write to it."""
    for entry in os.scandir(folder_fd):
        if entry.stat(follow_symlinks=False).st_uid != os.geteuid():
            os.unlink(entry.name, dir_fd=folder_fd)


def remove_unheld() -> list[str]:
    """Remove the target lock files in this user's lock folder that no process holds (left by
    sweeps killed outright, which had no chance to remove theirs); the names removed.

    Only files named as target lock files are touched, each taken first (a non-blocking
    flock, so a live sweep's lock is never disturbed) and removed while held, and only while
    its name still leads to the file taken: a sweep that opened it meanwhile sees it gone and
    takes a new one (Lock)."""
    removed = []
    folder = os.open(_lock_dir(), os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        for name in sorted(os.listdir(folder)):
            if _LOCK_FILE.fullmatch(name) and _remove_if_unheld(folder, name):
                removed.append(name)
    finally:
        os.close(folder)
    return removed


def _remove_if_unheld(folder: int, name: str) -> bool:
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=folder)  # fmt: skip
    except OSError:
        return False  # gone already, or a link: not a lock file of ours
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            return False
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        now = os.stat(name, dir_fd=folder, follow_symlinks=False)
        if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
            return False  # replaced meanwhile: that one is someone else's to judge
        os.unlink(name, dir_fd=folder)  # while held: no sweep can be inside it
        return True
    except OSError:  # held by a live sweep (BlockingIOError), or gone
        return False
    finally:
        os.close(fd)  # drops the flock


def _keys(path: str) -> list[str]:
    """What a target's data is, as lock names: a block device by its number (so
    /dev/disk/by-id/x and /dev/sdb are one lock) and, for a loop device, its backing file too;
    a file by its path, and once it exists by its inode too (any hard link is the same data)."""
    by_path = f"file-{hashlib.sha256(os.path.realpath(path).encode()).hexdigest()[:16]}"
    try:
        info = os.stat(path)
    except OSError:
        return [by_path]  # fio will create it: a sweep of it still running holds this name
    if not stat.S_ISBLK(info.st_mode):
        return [by_path, f"inode-{info.st_dev}-{info.st_ino}"]
    return _block_keys(info.st_rdev)


def _block_keys(number: int, depth: int = 0) -> list[str]:
    """A block device's lock names: its number; for a partition its whole disk too (a sweep
    on the disk and one on its partition must not run at once); for a loop device what it
    writes to (by the numbers its driver reports), down the stack."""
    keys = [f"block-{os.major(number)}-{os.minor(number)}"]
    name = kernel_name_of(number)
    entry = Path("/sys/class/block") / (name or "-")
    disk_number = (
        read_value(entry.resolve().parent / "dev") if (entry / "partition").exists() else None
    )
    if disk_number and depth < 8:
        major, _, minor = disk_number.partition(":")
        return keys + _block_keys(os.makedev(int(major), int(minor)), depth + 1)
    backing = loop_backing_key(name) if name and depth < 8 else None
    if backing is not None and backing[0] == "file":
        keys.append(f"inode-{backing[1]}-{backing[2]}")  # as a file target of it is locked
    elif backing is not None:
        keys += _block_keys(os.makedev(backing[1], backing[2]), depth + 1)
    return keys


def target_lock_paths(path: str) -> list[Path]:
    """The lock files a sweep on the target at `path` (on this machine) holds."""
    folder = _lock_dir()
    return [folder / f"{key}.lock" for key in _keys(path)]


def lock_paths(target: Target) -> list[Path]:
    """The lock files a sweep on `target` holds. A device on a remote host is locked by its
    server and path: this machine's sweeps do not run two at once on it (other machines'
    sweeps cannot be seen from here)."""
    if not target.remote:
        return target_lock_paths(target.path)
    assert target.host is not None
    where = f"{target.host.address},{target.host.port}:{target.path}"
    return [_lock_dir() / f"remote-{hashlib.sha256(where.encode()).hexdigest()[:16]}.lock"]


class Lock:
    """One held flock; `release()` (or process exit) lets go. A lock file lives only while
    its lock is held: it is removed on release, so none pile up."""

    def __init__(self, path: Path, what: str, holder: str) -> None:
        self.path = path
        self.what = what
        for _ in range(5):
            fd, info = self._take(path, what)
            try:
                now = os.stat(path, follow_symlinks=False)
            except OSError:
                now = None
            if now is not None and (now.st_dev, now.st_ino) == (info.st_dev, info.st_ino):
                break
            os.close(fd)  # removed by its last holder between our open and our lock: again
        else:
            raise LockError(f"cannot take the lock {path} for {what}: it keeps changing")
        if info.st_uid == os.geteuid():  # say who holds it, in our own file only
            os.fchmod(fd, 0o600)  # one made readable to all by an older version
            os.ftruncate(fd, 0)
            os.pwrite(fd, holder.encode(), 0)
        self._fd: int | None = fd
        self._inode = (info.st_dev, info.st_ino)

    @staticmethod
    def _take(path: Path, what: str) -> tuple[int, os.stat_result]:
        try:
            # only we can open it: flock needs no more than a file opened for reading
            fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        except OSError as err:
            raise LockError(f"cannot take the lock {path} for {what}: {err.strerror}") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or info.st_nlink != 1:
                raise LockError(f"{path} is not a plain lock file; remove it and try again")
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            held_by = os.pread(fd, 4096, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise LockError(
                f"{what} is in use by another ssdcompare sweep ({held_by}); wait for it to "
                "finish or stop it, then try again"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        return fd, info

    def release(self) -> None:
        if self._fd is not None:
            try:
                now = os.stat(self.path, follow_symlinks=False)
                if (now.st_dev, now.st_ino) == self._inode:
                    os.unlink(self.path)  # while still held: no one can be inside it
            except OSError:
                pass  # gone already, or not ours to remove: the lock goes either way
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None


@contextlib.contextmanager
def holding(targets: Sequence[Target], results: Path, purpose: str) -> Iterator[list[Lock]]:
    """Lock the results folder and every target for the duration of the block.

    `purpose` says what the holder does ("results/x"), for the error the next sweep sees.
    Raises LockError naming the holder's pid when any of them is taken.
    """
    holder = f"pid {os.getpid()}, {purpose}"
    held: list[Lock] = []
    remove_unheld()  # lock files sweeps killed outright left behind
    try:
        held.append(Lock(results / ".lock", f"results folder {results}", holder))
        for target in targets:
            held += [Lock(path, target.name, holder) for path in lock_paths(target)]
        yield held
    finally:
        for lock in reversed(held):
            lock.release()
