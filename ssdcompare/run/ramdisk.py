"""The RAM disk `sweep --ceiling` measures on: a zram device made for the sweep, recorded,
and removed after it; and the removal of one a killed sweep left behind.

A sweep killed outright (SIGKILL, the OOM killer, a power cut of the terminal's session)
cannot remove its RAM disk, and nothing else would: up to 1 GiB of the machine's memory
stays promised to it. So every RAM disk is recorded as soon as it exists, in a folder only
this user can write to (the lock folder, ssdcompare.target.locks: nobody else can plant a record
there to have a device removed) and in the results folder. The record names the device so
that a later device of the same name cannot pass for it: the inode of its sysfs folder
(/sys/devices/virtual/block/zramN, new for every device made) and its size; and it names its
maker, a process that holds a lock on the record for as long as the device lives. (A sweep
killed in the instant between making the device and recording it leaves it unrecorded; it
has no size yet, so it holds no memory.)

Every sweep starts by removing what such records name, and only that: a device whose maker
is gone (its lock is free and its pid is not that process any more), that is still the
device recorded, that holds no data (the ceiling only reads, so anything stored there was
written by someone else since), and that nothing uses (mounted, swap, held, open).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import psutil
from pydantic import BaseModel, ValidationError

from ssdcompare.errors import SsdcompareError
from ssdcompare.results.files import write_atomic
from ssdcompare.results.store import CEILING_RAM_DISK
from ssdcompare.target.devices import resolve_target
from ssdcompare.target.guard import inspect_target
from ssdcompare.target.locks import own_folder

ZRAM_CONTROL = Path("/sys/class/zram-control")
DEVICES = Path("/sys/devices/virtual/block")
RECORD_PREFIX = "ceiling-zram-"


class RamDiskRecord(BaseModel):
    """What a sweep made for its ceiling, and whether it was removed."""

    format_version: int = 1
    name: str  # zram3
    index: int  # what zram-control's hot_add gave, and hot_remove takes
    sysfs_inode: int  # of /sys/devices/virtual/block/<name>: a new device gets another
    disksize: int  # bytes
    maker_pid: int
    maker_started: float  # the maker's start time (psutil): a reused pid is another process
    results: str | None = None  # the results folder of the sweep that made it
    removed: bool = False
    removed_by: str | None = None  # "its sweep", or the sweep that found it left behind


def _sysfs_inode(name: str) -> int | None:
    try:
        return os.stat(DEVICES / name).st_ino
    except OSError:
        return None


def _disksize(name: str) -> int | None:
    try:
        return int((DEVICES / name / "disksize").read_text())
    except (OSError, ValueError):
        return None


def _stored_bytes(name: str) -> int | None:
    """What the zram device holds (mm_stat's first field, orig_data_size), or None."""
    try:
        return int((DEVICES / name / "mm_stat").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _remove(name: str, index: int) -> bool:
    """Reset and remove a zram device; the kernel refuses while it is open or mounted.
    Whether it is gone."""
    with contextlib.suppress(OSError):
        (DEVICES / name / "reset").write_text("1")
    with contextlib.suppress(OSError):
        (ZRAM_CONTROL / "hot_remove").write_text(str(index))
    return not (DEVICES / name).exists()


class _Record:
    """A RAM disk's record in the lock folder (held locked by its maker) and in the results
    folder."""

    def __init__(self, record: RamDiskRecord, results: Path | None) -> None:
        self.record = record
        self.path = own_folder() / f"{RECORD_PREFIX}{record.index}-{record.sysfs_inode}.json"
        self.copy = results / CEILING_RAM_DISK if results is not None else None
        # written under a temporary name and locked before it is renamed into place: a
        # sweep starting meanwhile never finds a record whose maker does not hold it
        temporary = self.path.with_name(f".{self.path.name}.{os.getpid()}")
        flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        self.fd = os.open(temporary, flags, 0o600)
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            os.write(self.fd, record.model_dump_json(indent=2).encode() + b"\n")
            os.fsync(self.fd)
            os.replace(temporary, self.path)
        except BaseException:
            temporary.unlink(missing_ok=True)
            os.close(self.fd)
            raise
        self._copy()

    def _copy(self) -> None:
        if self.copy is not None:
            with contextlib.suppress(SsdcompareError):  # the record in the lock folder counts
                write_atomic(self.copy, self.record.model_dump_json(indent=2) + "\n")

    def close(self, removed: bool) -> None:
        """The device is gone (the record goes too) or could not be removed (the record
        stays, for the next sweep to remove it once nothing uses it); the lock goes."""
        if removed:
            self.record.removed, self.record.removed_by = True, "its sweep"
            self._copy()
            with contextlib.suppress(OSError):
                self.path.unlink()
        os.close(self.fd)


@contextlib.contextmanager
def ram_disk(size_bytes: int, results: Path | None = None) -> Iterator[str]:
    """A new zram RAM disk of `size_bytes` for as long as the block runs, recorded (see the
    module) with `results`, the sweep's results folder; yields its path."""
    try:
        index = (ZRAM_CONTROL / "hot_add").read_text().strip()
    except OSError as err:
        raise SsdcompareError(f"cannot make a RAM disk for --ceiling: {err.strerror}") from None
    name = f"zram{index}"
    record: _Record | None = None
    try:
        inode = _sysfs_inode(name)
        if inode is None:
            raise SsdcompareError(f"the RAM disk {name} vanished as it was made")
        me = psutil.Process()
        try:
            record = _Record(RamDiskRecord(
                name=name, index=int(index), sysfs_inode=inode, disksize=size_bytes,
                maker_pid=me.pid, maker_started=me.create_time(),
                results=str(results.absolute()) if results is not None else None,
            ), results)  # fmt: skip
            (DEVICES / name / "disksize").write_text(str(size_bytes))
        except OSError as err:
            raise SsdcompareError(f"cannot set up the RAM disk {name} ({err.filename}: "
                                  f"{err.strerror})") from None  # fmt: skip
        yield f"/dev/{name}"
    finally:
        removed = _remove(name, int(index))
        if record is not None:
            record.close(removed)


def remove_leftovers() -> list[str]:
    """Remove the RAM disks of ceiling sweeps that died before they could (see the module);
    one line for each device removed or left in place, and why."""
    if os.geteuid() != 0 or not ZRAM_CONTROL.is_dir():
        return []  # only root makes them, and only root's lock folder holds their records
    folder = own_folder()
    said = []
    for path in sorted(folder.glob(f"{RECORD_PREFIX}*.json")):
        with contextlib.suppress(OSError):
            line = _settle(path)
            if line is not None:
                said.append(line)
    return said


def _settle(path: Path) -> str | None:
    """Act on one record: None when its maker still runs (or another sweep is at it)."""
    fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_nlink != 1:
            return None  # not a record this user wrote
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return None  # its maker holds it: the sweep runs
        try:
            record = RamDiskRecord.model_validate_json(os.pread(fd, 65536, 0))
        except ValidationError:
            return None  # names nothing that could be checked: leave it to a person
        if _alive(record):
            return None
        keep, why = _judge(record)
        if keep:
            if why is None:  # no longer that device: the record names nothing of ours
                path.unlink()
            return why
        if not _remove(record.name, record.index):
            return (f"could not remove the RAM disk {record.name} left by a --ceiling sweep "
                    f"(pid {record.maker_pid}) that died; a later sweep tries again")  # fmt: skip
        _mark_removed(record)
        path.unlink()
        return (f"removed the RAM disk {record.name} that a --ceiling sweep (pid "
                f"{record.maker_pid}) made and could not remove, having died")  # fmt: skip
    finally:
        os.close(fd)


def _alive(record: RamDiskRecord) -> bool:
    try:
        return abs(psutil.Process(record.maker_pid).create_time() - record.maker_started) < 1
    except psutil.Error:
        return False


def _judge(record: RamDiskRecord) -> tuple[bool, str | None]:
    """Whether to keep the device a dead sweep's record names, and why (None: it is not
    that device any more, and the record can go)."""
    name = record.name
    if _sysfs_inode(name) != record.sysfs_inode:
        return True, None  # gone, or another device by that name now: not ours
    if _disksize(name) not in (record.disksize, 0):  # 0: killed before it was sized
        return True, None  # reset and sized again since: someone else's now
    left = (f"the RAM disk {name} that a --ceiling sweep (pid {record.maker_pid}) made is "
            "left in place although that sweep died")  # fmt: skip
    stored = _stored_bytes(name)
    if stored != 0:
        return True, (f"{left}: it holds {stored} bytes of data, which the ceiling (it only "
                      "reads) did not write; if no one needs them, remove it: echo 1 > "
                      f"/sys/block/{name}/reset; echo {record.index} > "
                      f"{ZRAM_CONTROL}/hot_remove")  # fmt: skip
    try:
        found = inspect_target(resolve_target(f"/dev/{name}"), probe=lambda path: [])
    except SsdcompareError as err:
        return True, f"{left}: {err}"
    uses = [f.detail for f in found if not f.overridable]
    if uses:
        return True, (f"{left}: it is in use ({'; '.join(uses)}); a later sweep removes it "
                      "once nothing uses it")  # fmt: skip
    return False, None


def _mark_removed(record: RamDiskRecord) -> None:
    """Say so in the results folder's copy of the record, when it is that device's."""
    if record.results is None:
        return
    copy = Path(record.results) / CEILING_RAM_DISK
    with contextlib.suppress(OSError, ValidationError, SsdcompareError):
        there = RamDiskRecord.model_validate_json(copy.read_text())
        if (there.name, there.sysfs_inode) == (record.name, record.sysfs_inode):
            there.removed, there.removed_by = True, f"a later sweep (pid {os.getpid()})"
            write_atomic(copy, there.model_dump_json(indent=2) + "\n")
