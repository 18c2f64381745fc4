"""Who uses data on this machine: the mounts of every mount namespace and the layers of its
overlays, and the processes holding a file or device open or mapped into memory, each known by
number (a device's, a file's inode), under any name or none.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import platform
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ssdcompare.target.devices import read_value

Key = tuple[str, int, int]  # ("block", major, minor) or ("file", st_dev, st_ino)


def _key(info: os.stat_result) -> Key:
    """What makes two names the same data: a block device's number, a file's inode."""
    if stat.S_ISBLK(info.st_mode):
        return ("block", os.major(info.st_rdev), os.minor(info.st_rdev))
    return ("file", info.st_dev, info.st_ino)


def _key_of(path: str) -> Key | None:
    try:
        return _key(os.stat(path))
    except OSError:
        return None


@dataclass(frozen=True)
class _Mount:
    devnum: str  # major:minor of the filesystem
    mountpoint: str  # with " (in another mount namespace, ...)" when not ours
    fstype: str
    source: str
    options: str  # the filesystem's own options (an overlay's lowerdir=, upperdir=, ...)


def _mount_table(proc_root: Path) -> list[_Mount]:
    """The mounts of every mount namespace on the machine (a container's or `unshare -m`'s
    are not in ours); mount points of another namespace say so."""
    found = []
    own = _mount_namespace(proc_root / "self")
    seen: set[str] = set()
    listed: set[tuple[str, str]] = set()  # (device number, mount point)
    for place in [proc_root / "self", *(proc_root / pid for pid in sorted(_pids(proc_root)))]:
        space = _mount_namespace(place)
        if space in seen:
            continue
        text = read_value(place / "mountinfo")
        if text is None:
            continue
        seen.add(space or str(place))
        where = "" if space == own else f" (in another mount namespace, process {place.name})"
        for line in text.splitlines():
            fields = line.split()
            tail = line.split(" - ", 1)[1].split() if " - " in line else []
            # a mount that namespaces share (the same device at the same place) is said once
            if len(fields) >= 5 and (fields[2], fields[4]) not in listed:
                listed.add((fields[2], fields[4]))
                found.append(_Mount(fields[2], fields[4] + where, *(tail + ["", "", ""])[:3]))
    return found


def _pids(proc_root: Path) -> list[str]:
    """The process ids /proc lists, in its own order."""
    try:
        return [name for name in os.listdir(proc_root) if name.isdigit()]
    except OSError:
        return []


class _Look:
    """One inspection's view of /proc. Looking at a loop device means looking at the device,
    its disk and what it writes to, each asking for the mount table and for other processes'
    open files: both are read once per inspection, not once per question."""

    def __init__(self, proc_root: Path) -> None:
        self.root = proc_root
        self._mount_table: list[_Mount] | None = None
        self._processes: list[tuple[str, set[Key]]] | None = None

    def mount_table(self) -> list[_Mount]:
        if self._mount_table is None:
            self._mount_table = _mount_table(self.root)
        return self._mount_table

    def mounts(self) -> list[tuple[str, str, str]]:
        """(major:minor, mount point, source) of every mount in every namespace."""
        return [(m.devnum, m.mountpoint, m.source) for m in self.mount_table()]

    def processes(self) -> list[tuple[str, set[Key]]]:
        """(pid, what it holds open) for every other process."""
        if self._processes is None:
            self._processes = _open_files(self.root)
        return self._processes


def _overlay_layer(path: str, key: Key, look: _Look) -> str | None:
    """The overlay filesystem whose upper, lower or work folder holds the file, in words: its
    files are seen (and written) through the overlay under other device and inode numbers.
    A file with other names (hard links) on the filesystem of a layer counts too: one of
    them may be in the layer."""
    real = Path(os.path.realpath(path))
    layers = []  # (layer folder, which option, the overlay's mount point)
    for mount in look.mount_table():
        if mount.fstype == "overlay":
            for option in mount.options.split(","):
                name, _, value = option.partition("=")
                if name in ("lowerdir", "upperdir", "workdir", "datadir"):
                    layers += [(os.path.realpath(v.replace("\\040", " ")), name,
                                mount.mountpoint) for v in value.split(":") if v]  # fmt: skip
    for layer, name, mountpoint in layers:
        if real.is_relative_to(layer):
            return f"in a layer ({name}) of the overlay mounted at {mountpoint}"
    try:
        linked = key[0] == "file" and os.stat(path).st_nlink > 1
    except OSError:
        linked = False
    for layer, name, mountpoint in layers if linked else []:
        with contextlib.suppress(OSError):
            if os.stat(layer).st_dev == key[1]:
                return (f"a hard link on the filesystem of a layer ({name}) of the overlay "
                        f"mounted at {mountpoint}")  # fmt: skip
    return None


def _mount_namespace(process: Path) -> str | None:
    try:
        return os.readlink(process / "ns" / "mnt")
    except OSError:
        return None


def _openers(keys: set[Key], look: _Look) -> list[str]:
    """Other processes holding one of `keys` open ("1234 (postgres)"), under any name or
    none, or (files) mapped into memory after closing it."""
    mapped = {(os.major(k[1]), os.minor(k[1]), k[2]) for k in keys if k[0] == "file"}
    found = []
    for pid, held in look.processes():
        if not held.isdisjoint(keys) or _maps(os.path.join(look.root, pid), mapped):
            found.append(f"{pid} ({read_value(look.root / pid / 'comm') or '?'})")
    return found


def _open_files(proc_root: Path) -> list[tuple[str, set[Key]]]:
    """(pid, the numbers of every file and device it has open) for every other process."""
    me = str(os.getpid())
    kcmp = _kcmp() if _same_pids(proc_root) else None
    root = str(proc_root)
    found = []
    for pid in _pids(proc_root):
        if pid == me:
            continue
        held: set[Key] = set()
        # every thread: one whose main thread has ended, or that unshared its file table,
        # holds files the process's own fd folder does not list. Threads sharing a table
        # (nearly all) are read once: the kernel says which share (kcmp); where it cannot
        # (not built in, not allowed), every thread is read
        read: list[str] = []  # threads whose table was read
        tasks = os.path.join(root, pid, "task")
        for tid in _threads(tasks, pid):
            if kcmp and any(kcmp(int(t), int(tid)) for t in read):
                continue
            if _fds(os.path.join(tasks, tid, "fd"), held):
                read.append(tid)
        found.append((pid, held))
    return found


def _threads(folder: str, pid: str) -> list[str]:
    """A process's thread ids from its task folder, the main thread's (`pid`) first. The
    kernel counts a process's threads in that folder's links (2 + threads): a process of one
    thread, nearly every one, needs no listing."""
    try:
        if os.stat(folder).st_nlink == 3:
            return [pid]
        names = os.listdir(folder)
    except OSError:
        return [pid]
    return [pid, *sorted(name for name in names if name.isdigit() and name != pid)]


def _fds(folder: str, held: set[Key]) -> bool:
    """Adds the numbers of what a process or thread has open (its fd folder) to `held`;
    False when the folder cannot be read (gone, or not ours to look at)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    for name in names:
        path = os.path.join(folder, name)
        try:
            if not os.readlink(path).startswith("/"):
                continue  # a pipe, socket or anonymous inode
        except OSError as err:
            if err.errno in (errno.EACCES, errno.EPERM):
                return False  # listed but not ours to look at: no use trying each one
            continue  # closed meanwhile
        key = _key_of(path)
        if key is not None:
            held.add(key)
    return True


def _text(path: str) -> str:
    """A procfs file's text, "" when it cannot be read (read_value without making a Path:
    this runs for every process)."""
    try:
        with open(path, errors="replace") as handle:
            return handle.read()
    except OSError:
        return ""


# kcmp's call number on the 64-bit machines where it is certain; elsewhere every thread's
# table is read. A wrong number would make another call, so 32-bit programs (another
# table on the same machine name) are left out too
_KCMP = {"x86_64": 312, "aarch64": 272, "riscv64": 272}
_KCMP_FILES = 2  # linux/kcmp.h


@functools.cache
def _kcmp() -> Callable[[int, int], bool] | None:
    """The kernel's kcmp(2) asking whether two threads share one file table, or None where
    this machine's call number is not known here."""
    number = _KCMP.get(platform.machine()) if ctypes.sizeof(ctypes.c_void_p) == 8 else None
    try:
        syscall = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    if number is None:
        return None

    def shares_files(one: int, other: int) -> bool:
        """Whether two threads share one file table (False too when the kernel cannot say)."""
        return syscall(number, one, other, _KCMP_FILES, 0, 0) == 0

    return shares_files


def _same_pids(proc_root: Path) -> bool:
    """Whether `proc_root` numbers processes as this process does (kcmp takes our numbers)."""
    try:
        return os.readlink(proc_root / "self") == str(os.getpid())
    except OSError:
        return False


def _maps(process: str, files: set[tuple[int, int, int]]) -> bool:
    """Whether a process has one of `files` (major, minor, inode) mapped into memory. Its
    threads share one memory map: the first that shows one (a main thread that has ended
    shows none) stands for all."""
    if not files:
        return False
    text = _text(os.path.join(process, "maps"))
    tasks = os.path.join(process, "task")
    for tid in [] if text else _threads(tasks, os.path.basename(process))[1:]:
        text = _text(os.path.join(tasks, tid, "maps"))
        if text:
            break
    # lines are read only when an inode number of `files` appears in the inode column's way
    inodes = "|".join(sorted({str(inode) for _major, _minor, inode in files}))
    if not re.search(rf" (?:{inodes})(?: |$)", text, re.MULTILINE):
        return False
    for line in text.splitlines():
        fields = line.split(maxsplit=5)
        if len(fields) >= 5 and ":" in fields[3] and fields[4].isdigit():
            major, minor = (int(part, 16) for part in fields[3].split(":", 1))
            if (major, minor, int(fields[4])) in files:
                return True
    return False
