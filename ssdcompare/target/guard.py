"""The safety guard: ssdcompare never destroys data the user did not explicitly offer.

Before a sweep with any writing job, every block-device target is inspected:
- refused whatever the flags: mounted (it or a partition), active swap, held by another
  device (LVM, dm-crypt, md RAID), the disk holding / or /boot, or opened exclusively;
- refused unless --destroy-data: partitions, or a filesystem / RAID / partition-table signature.
File targets are checked too: refused whatever the flags when the file backs a loop device
(mounted or not) or is active swap, or when another process has it open; refused unless
--destroy-data when it carries a filesystem or partition-table signature (a disk image).
Reads never change data, so read-only sweeps pass on any device.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import functools
import json
import os
import platform
import re
import shutil
import stat
import struct
import subprocess
import tempfile
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ssdcompare.errors import SsdcompareError
from ssdcompare.target.backupheaders import backup_signatures
from ssdcompare.target.devices import Target, kernel_name_of, read_value
from ssdcompare.target.file import made_by_ssdcompare
from ssdcompare.units import format_bytes

FindingKind = Literal[
    "mounted",
    "swap",
    "holders",
    "root",
    "busy",
    "readonly",
    "partitions",
    "signature",
    "loop-backing",
    "open",
    "remote",
    "link",
    "data",
]
# Signature magic numbers for when blkid is not installed: (offset, bytes, what). blkid knows
# many more; these are the common ones, and the leftovers a disk that looks blank may carry.
_MAGIC = [
    (512, b"EFI PART", "a GPT partition table"),
    (1024 + 56, b"\x53\xef", "an ext2/3/4 filesystem"),
    (0, b"XFSB", "an XFS filesystem"),
    (65536 + 64, b"_BHRfS_M", "a btrfs filesystem"),
    (0, b"LUKS\xba\xbe", "a LUKS encrypted volume"),
    (4096, b"\xfc\x4e\x2b\xa9", "an md RAID member"),
    (4096 - 10, b"SWAPSPACE2", "swap space"),
    (512 + 0, b"LABELONE", "an LVM physical volume"),
    (3, b"NTFS    ", "an NTFS filesystem"),
    (3, b"EXFAT   ", "an exFAT filesystem"),
    (54, b"FAT12", "a FAT filesystem"),
    (54, b"FAT16", "a FAT filesystem"),
    (82, b"FAT32", "a FAT filesystem"),
    (1024, b"\x10\x20\xf5\xf2", "an F2FS filesystem"),
    (0, b"hsqs", "a squashfs filesystem"),
    (32769, b"CD001", "an ISO 9660 (CD/DVD image) filesystem"),
    (1024, b"\xe2\xe1\xf5\xe0", "an EROFS filesystem"),
]
# a ZFS pool member: the uberblocks of its first label (from 128 KiB on, every 1 KiB at least)
_ZFS_UBERBLOCKS = ((0x00BAB10C).to_bytes(8, "little"), (0x00BAB10C).to_bytes(8, "big"))
_ZFS_RING = range(128 * 1024, 256 * 1024, 1024)
_PROBED_BYTES = 256 * 1024


class Finding(BaseModel):
    """Something on a device that writing would destroy or disturb."""

    model_config = ConfigDict(frozen=True)

    target: str
    device: str
    kind: FindingKind
    detail: str
    overridable: bool
    # overridden only by naming the target (--destroy-data a:nvme0n1), not by a bare
    # --destroy-data: a remote disk nobody here can look at
    named_only: bool = False


Probe = Callable[[str], list[str]]


def probe_signatures(path: str) -> list[str]:
    """Signatures on a device or file, in words ("an ext4 filesystem (UUID ..., label data)").

    Uses util-linux's `blkid -p` (low-level probe, ignores caches); without blkid, reads the
    first 256 KiB for common magic numbers. A probe that cannot tell is never taken for a
    blank device: blkid's "ambivalent" answer (two signatures, e.g. minix and squashfs) lists
    what it found (wipefs --no-act), and a probe that fails (the path cannot be read, blkid
    errs or hangs) is a finding of its own, so that writing needs consent either way.
    """
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC))
    except OSError as err:
        return [_unsure(f"it cannot be opened to look ({err.strerror or err})")]
    blkid = shutil.which("blkid") or ("/sbin/blkid" if Path("/sbin/blkid").exists() else None)
    if not blkid:
        return _magic_signatures(path)
    try:
        done = _blkid_probe(blkid, path)
    except (OSError, subprocess.TimeoutExpired) as err:
        return [_unsure(f"blkid -p did not answer ({err})")]
    said = " ".join(done.stderr.split())
    if done.returncode == 2 and not said:  # nothing blkid would name: leftovers it passes over
        return _shifted_signatures(blkid, path) + _magic_signatures(path, strong_only=True)
    if done.returncode == 0:
        return _describe_blkid(done.stdout)
    if done.returncode == 8:  # "ambivalent": more than one signature
        return [_ambivalent(path)]
    return [_unsure(f"blkid -p failed (status {done.returncode}: {said[:200] or 'no message'})")]


def _blkid_probe(blkid: str, path: str, offset: int = 0) -> subprocess.CompletedProcess[str]:
    """`blkid -p` (a low-level probe, no cache) of `path`, from `offset` bytes in; its output
    as KEY=value lines. OSError or TimeoutExpired when it cannot run or answer."""
    at = ["-O", str(offset)] if offset else []
    return subprocess.run(
        [blkid, "-p", *at, "-o", "export", path], capture_output=True, text=True,
        errors="replace", timeout=30, check=False, stdin=subprocess.DEVNULL,
    )  # fmt: skip


# where partitions usually start (tools align them to 1 MiB; a BIOS boot partition before
# the root one puts it at 2 MiB; older tools used sector 63 or 64): a partition table wiped
# (wipefs -a on the disk) leaves the filesystems in them whole, where blkid, reading the
# disk's start, does not look
# (not 8 MiB or beyond: an ext2/3/4 of 1 KiB blocks keeps a backup superblock at 8 MiB + 1 KiB,
# which blkid would take for a filesystem starting at 8 MiB)
_PARTITION_STARTS = (
    (1 << 20, "1 MiB"), (2 << 20, "2 MiB"), (4 << 20, "4 MiB"), (63 * 512, "sector 63"),
    (64 * 512, "sector 64"),
)  # fmt: skip


def _shifted_signatures(blkid: str, path: str) -> list[str]:
    """Signatures blkid finds where a partition usually starts, in words."""
    found: list[str] = []
    for offset, where in _PARTITION_STARTS:
        try:
            done = _blkid_probe(blkid, path, offset)
        except (OSError, subprocess.TimeoutExpired):
            continue  # the probe at the start answered; this one is a look further on
        if done.returncode == 0:
            found += [f"{what.removesuffix(' [blkid]')} at {where} (a partition whose table "
                      "was wiped?) [blkid]" for what in _describe_blkid(done.stdout)]  # fmt: skip
    return found


def _unsure(why: str) -> str:
    return f"data that could not be checked for signatures: {why} [unsure]"


def _ambivalent(path: str) -> str:
    """blkid's ambivalent answer in words, with what wipefs (listing only) finds there."""
    found: list[str] = []
    wipefs = shutil.which("wipefs") or ("/sbin/wipefs" if Path("/sbin/wipefs").exists() else None)
    if wipefs:
        with contextlib.suppress(OSError, subprocess.TimeoutExpired, ValueError, TypeError):
            done = subprocess.run(
                # a label need not be UTF-8: wipefs prints its bytes as they are
                [wipefs, "--no-act", "--json", path], capture_output=True, text=True,
                errors="replace", timeout=30, check=False, stdin=subprocess.DEVNULL,
            )  # fmt: skip
            listed = json.loads(done.stdout).get("signatures", []) if done.returncode == 0 else []
            found = [f"{item['type']} at offset {item['offset']}" for item in listed
                     if isinstance(item, dict) and item.get("type")]  # fmt: skip
    what = ", ".join(dict.fromkeys(found)) or "signatures blkid could not tell apart"
    return f"more than one signature ({what}): blkid's answer is ambivalent [blkid]"


def _describe_blkid(text: str) -> list[str]:
    values = dict(line.split("=", 1) for line in text.splitlines() if "=" in line)
    kind = values.get("TYPE") or values.get("PTTYPE")
    if not kind:
        return []  # only a partition's own entry (PART_ENTRY_*): nothing on it yet
    usage = values.get("USAGE", "")
    if "PTTYPE" in values and "TYPE" not in values:
        what = f"a {values['PTTYPE'].upper()} partition table"
    elif usage == "raid":
        what = f"a {kind} RAID/volume member"
    elif usage == "crypto":
        what = f"a {kind} encrypted volume"
    elif kind == "swap":
        what = "swap space"
    else:
        what = f"a{'n' if (kind or 'x')[0] in 'aeiou' else ''} {kind} filesystem"
    extras = [f"{key} {values[key]}" for key in ("UUID", "LABEL") if values.get(key)]
    return [what + (f" ({', '.join(extras)})" if extras else "") + " [blkid]"]


def _magic_signatures(path: str, strong_only: bool = False) -> list[str]:
    """Signatures found by their magic numbers in the first 256 KiB, and backup headers further
    on (a start wiped, the data still recoverable). `strong_only` looks for those of 4 bytes or
    more only (no 2-byte magic, which random data matches now and then): a check besides
    blkid, for leftovers too damaged for blkid to name."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(_PROBED_BYTES)
    except OSError as err:
        return [_unsure(f"it cannot be read to look for magic numbers ({err.strerror or err})")]
    found = []
    for offset, magic, what in _MAGIC:
        if strong_only and len(magic) < 4:
            continue
        if head[offset : offset + len(magic)] == magic and what not in found:
            found.append(what)
    if any(head[at : at + 8] in _ZFS_UBERBLOCKS for at in _ZFS_RING):
        found.append("a ZFS pool member")
    if not (found or strong_only) and len(head) >= 512 and head[510:512] == b"\x55\xaa":
        entries = head[446:510]
        if any(entries[i * 16 + 4] for i in range(4)):  # a partition type byte is set
            found.append("an MBR partition table")
    # a backup of what the start still shows says nothing more
    found += [b for b in backup_signatures(path) if not any(b.startswith(w) for w in found)]
    return [f"{what} [magic numbers]" for what in found]


def _members(name: str, sys_root: Path) -> list[str]:
    """The device and its partitions (what a mount, swap or holder could be on)."""
    base = os.path.join(sys_root, "class", "block", name)
    try:
        entries = sorted(e for e in os.listdir(base) if e.startswith(name))
    except OSError:
        entries = []
    parts = [e for e in entries if os.path.exists(os.path.join(base, e, "partition"))]
    return [name, *parts]


def _devnum(name: str, sys_root: Path) -> str | None:
    return read_value(sys_root / "class" / "block" / name / "dev")


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


def _disk_of(name: str, sys_root: Path) -> str:
    entry = sys_root / "class" / "block" / name
    if (entry / "partition").exists():
        return entry.resolve().parent.name
    return name


def _disks_under(name: str, sys_root: Path, seen: set[str] | None = None) -> set[str]:
    """The whole disks a device sits on (through partitions and dm/md slaves)."""
    seen = seen if seen is not None else set()
    if name in seen:
        return set()
    seen.add(name)
    disk = _disk_of(name, sys_root)
    slaves = sys_root / "class" / "block" / disk / "slaves"
    below = [s.name for s in slaves.iterdir()] if slaves.is_dir() else []
    if not below:
        return {disk}
    result: set[str] = set()
    for slave in below:
        result |= _disks_under(slave, sys_root, seen)
    return result


def _system_disks(sys_root: Path, look: _Look) -> dict[str, str]:
    """Disks holding /, /boot, /boot/efi or /usr -> which mount point."""
    by_devnum = {}
    block = sys_root / "class" / "block"
    if block.is_dir():
        for entry in block.iterdir():
            number = read_value(entry / "dev")
            if number:
                by_devnum[number] = entry.name
    result = {}
    for devnum, mountpoint, _source in look.mounts():
        if mountpoint in ("/", "/boot", "/boot/efi", "/usr") and devnum in by_devnum:
            for disk in _disks_under(by_devnum[devnum], sys_root):
                result.setdefault(disk, mountpoint)
    return result


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


def _block_keys(members: list[str], sys_root: Path) -> set[Key]:
    """The device numbers of a disk and its partitions, from sysfs."""
    keys = set()
    for member in members:
        number = _devnum(member, sys_root)
        if number and ":" in number:
            major, minor = number.split(":", 1)
            keys.add(("block", int(major), int(minor)))
    return keys


def loops_backed_by(
    keys: set[Key], sys_root: Path = Path("/sys"), besides: Collection[str] = ()
) -> list[str]:
    """The loop devices whose backing file or device is one of `keys` (by its numbers, under
    any name or none), other than those named in `besides`."""
    found = []
    try:
        loops = sorted(n for n in os.listdir(sys_root / "block") if n.startswith("loop"))
    except OSError:
        loops = []
    for loop in loops:
        if loop not in besides and loop_backing_key(loop, sys_root) in keys:
            found.append(loop)
    return found


LOOP_GET_STATUS64 = 0x4C05  # linux/loop.h; struct loop_info64 starts with three __u64:
_LOOP_INFO64_SIZE = 232  # lo_device, lo_inode, lo_rdevice (the backing file's st_dev, st_ino)


def loop_backing(name: str, sys_root: Path = Path("/sys")) -> str | None:
    """The path of what a loop device reads and writes, as sysfs shows it (for people: it may
    be deleted, renamed, or a path in another mount namespace), or None for other devices."""
    backing = read_value(sys_root / "class" / "block" / name / "loop" / "backing_file")
    return backing.removesuffix(" (deleted)") if backing else None


def loop_backing_key(
    name: str, sys_root: Path = Path("/sys"), dev_root: Path = Path("/dev")
) -> Key | None:
    """What a loop device reads and writes, by number: ("block", major, minor) for a device,
    ("file", st_dev, st_ino) for a file. Asked of the loop driver itself (LOOP_GET_STATUS64),
    since the path sysfs shows can mislead: a deleted or renamed file, a name with " (deleted)"
    or trailing blanks in it, a path seen from another mount namespace. The driver is reached
    through /dev/<name>, or, where that is missing or not the kernel's node, through a node of
    our own; without either (not root), the path's numbers. None for other devices."""
    backing = loop_backing(name, sys_root)
    if backing is None:
        return None
    number = read_value(sys_root / "class" / "block" / name / "dev") or ""
    major, _, minor = number.partition(":")
    if not (major.isdigit() and minor.isdigit()):
        return _key_of(backing)
    status = _loop_status(dev_root / name, os.makedev(int(major), int(minor)))
    if status is None:
        return _key_of(backing)
    device, inode, rdevice = struct.unpack_from("=QQQ", status)
    if rdevice and rdevice != device:  # a block device: its own number
        return ("block", os.major(rdevice), os.minor(rdevice))
    return ("file", os.makedev(os.major(device), os.minor(device)), inode)


def _loop_status(node: Path, number: int) -> bytes | None:
    """The loop driver's struct loop_info64 for the loop device `number`, through `node` if
    it is that device's node, else through a private node made for the purpose."""
    with contextlib.ExitStack() as cleanup:
        try:
            if not (node.is_block_device() and node.stat().st_rdev == number):
                folder = Path(tempfile.mkdtemp(prefix="ssdcompare-node."))
                cleanup.callback(shutil.rmtree, folder, ignore_errors=True)
                node = folder / "loop"
                os.mknod(node, stat.S_IFBLK | 0o600, number)
            fd = os.open(node, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return None
        try:
            status = bytearray(_LOOP_INFO64_SIZE)
            fcntl.ioctl(fd, LOOP_GET_STATUS64, status)
            return bytes(status)
        except OSError:
            return None
        finally:
            os.close(fd)
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


def _file_uses(
    label: str, key: Key, sys_root: Path, look: _Look, besides: Collection[str] = ()
) -> list[tuple[FindingKind, str]]:
    """(kind, detail) for each way a file's data is in use: a loop device over it (mounted or
    not), swap, a process holding it open or mapped. `besides` names loop devices over it
    that are the target itself (looked at from above)."""
    found: list[tuple[FindingKind, str]] = []
    for _, mountpoint, source in look.mounts():
        # a filesystem mounted straight from a file (erofs, and others, without a loop)
        if source.startswith("/") and _key_of(source.replace("\\040", " ")) == key:
            found.append(("mounted", f"{label} is mounted at {mountpoint}"))
    loops = loops_backed_by({key}, sys_root, besides)
    if loops:
        found.append(("loop-backing", f"{label} is the backing file of {', '.join(loops)} "
                      "(a loop device: its data lives in this file)"))  # fmt: skip
    swaps = read_value(look.root / "swaps") or ""
    for line in swaps.splitlines()[1:]:
        fields = line.split()
        if fields and _key_of(fields[0].replace("\\040", " ")) == key:
            found.append(("swap", f"{label} is in use as swap"))
    openers = _openers({key}, look)
    if openers:
        found.append(("open", f"{label} is open in process {', '.join(openers)}"))
    layer = _overlay_layer(label, key, look)
    if layer:
        found.append(("mounted", f"{label} is {layer}: the overlay's files are this data"))
    return found


def _inspect_file(target: Target, sys_root: Path, look: _Look, probe: Probe) -> list[Finding]:
    """A file target: fio may create and overwrite it, unless it is someone else's data."""
    try:
        info = os.lstat(target.path)
    except OSError:
        return []  # fio will create it: nothing there yet
    if not stat.S_ISREG(info.st_mode):
        # resolved to a regular file, now something else (a link planted since): never
        # followed, never written
        what = "a symbolic link" if stat.S_ISLNK(info.st_mode) else "no regular file"
        return [_finding(target, target.path, "link", f"{target.path} is now {what}")]
    findings = [
        _finding(target, target.path, kind, detail)
        for kind, detail in _file_uses(target.path, _key(info), sys_root, look)
    ]
    if info.st_size > 0:
        signatures = probe(target.path)
        for signature in signatures:
            detail = f"{target.path} carries {signature} (a disk image?)"
            findings.append(_finding(target, target.path, "signature", detail, True))
        held = None if signatures or made_by_ssdcompare(target.path) else _holds_data(target.path)
        if held is not None:
            detail = (
                f"{target.path} holds data ({held}) and is no file ssdcompare made: a write "
                "job overwrites it. To test on a file, name a new one: ssdcompare makes it "
                "and lays it out, and needs no consent to write it again"
            )
            findings.append(_finding(target, target.path, "data", detail, True))
    return findings


# how much of a file's data is read to see whether it holds any (a file of zeros, sparse or
# written, holds none): past it, what was not read counts as data
_DATA_LOOK_BYTES = 64 << 20


def _holds_data(path: str) -> str | None:
    """What data the file at `path` holds, in words; None when all of it is zeros (or a hole).
    Only the parts the filesystem has data for are read (SEEK_DATA), at most _DATA_LOOK_BYTES."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        return f"it cannot be read to tell: {err.strerror or err}"
    try:
        size = os.fstat(fd).st_size
        looked = position = 0
        while position < size:
            try:
                position = os.lseek(fd, position, os.SEEK_DATA)
            except OSError as err:
                if err.errno == errno.ENXIO:  # no data past here: a hole to the end
                    return None
                raise
            end = os.lseek(fd, position, os.SEEK_HOLE)
            while position < end:
                if looked >= _DATA_LOOK_BYTES:
                    return (
                        f"{format_bytes(size)}, of which the first {format_bytes(looked)} "
                        "of data were zeros and the rest was not read"
                    )
                chunk = os.pread(fd, min(1 << 20, end - position), position)
                if not chunk:
                    return None
                if chunk.count(0) != len(chunk):
                    return f"{format_bytes(size)}, not all zeros"
                position += len(chunk)
                looked += len(chunk)
        return None
    except OSError as err:
        return f"it cannot be read to tell: {err.strerror or err}"
    finally:
        os.close(fd)


def inspect_target(
    target: Target,
    sys_root: Path = Path("/sys"),
    proc_root: Path = Path("/proc"),
    probe: Probe = probe_signatures,
    check_exclusive: bool = True,
) -> list[Finding]:
    """Everything on a target that a writing job would destroy or disturb."""
    if target.host is not None:
        # a server opens what its own machine calls that path: even at an address of this
        # machine it may be another one (a tunnel, a container, another mount namespace),
        # so no look from here vouches for it; this machine's own checks apply on top
        if target.remote:
            why = (
                "whose disks cannot be inspected from here (mounts, partitions, filesystems, RAID)"
            )
        else:
            why = ("at an address of this machine, but what its server opens may not be what "
                   "this machine sees at that path (a tunnel, a container)")  # fmt: skip
        detail = (f"{target.name} is reached through the fio server of host "
                  f"{target.host.where}, {why}: writing to it needs it named, e.g. "
                  f"--destroy-data {target.name}")  # fmt: skip
        server = Finding(target=target.name, device=target.name, kind="remote", detail=detail,
                         overridable=True, named_only=True)  # fmt: skip
        if target.remote:
            return [server]
        here = target.model_copy(update={"host": None})
        return [server, *(f.model_copy(update={"target": target.name})
                          for f in inspect_target(here, sys_root, proc_root, probe,
                                                  check_exclusive))]  # fmt: skip
    if target.kind != "block":
        return _inspect_file(target, sys_root, _Look(proc_root), probe)
    return _inspect_block(target, sys_root, _Look(proc_root), probe, check_exclusive)


def _finding(
    target: Target, device: str, kind: FindingKind, detail: str, overridable: bool = False
) -> Finding:
    return Finding(
        target=target.name, device=device, kind=kind, detail=detail, overridable=overridable
    )


def _no_signatures(path: str) -> list[str]:
    return []


def _inspect_block(
    target: Target,
    sys_root: Path,
    look: _Look,
    probe: Probe,
    check_exclusive: bool,
    besides: Collection[str] = (),
    depth: int = 0,
) -> list[Finding]:
    """A block device, the disk a partition is on, and for a loop device whatever it writes
    through to. `besides` names loop devices over it that are the target itself."""
    name = target.kernel_name or Path(target.path).name
    members = _members(name, sys_root)
    keys = _block_keys(members, sys_root)
    uses = _uses(name, members, keys, sys_root, look, besides)
    disk = _disk_of(name, sys_root)
    if disk != name:  # a partition: whatever uses its whole disk writes over it too
        uses += [
            (kind, device, f"the disk {disk} that holds {name}: {detail}")
            for kind, device, detail in _uses(
                disk, [disk], _block_keys([disk], sys_root), sys_root, look, ()
            )
            if kind not in ("root", "readonly")  # judged for the partition itself already
        ]
    findings = [_finding(target, device, kind, detail) for kind, device, detail in uses]
    findings += _beneath(target, name, sys_root, look, depth)
    if disk != name:  # a partition of a loop device: what the loop writes to, too
        findings += [
            f.model_copy(update={"detail": f"the disk {disk} that holds {name}: {f.detail}"})
            for f in _beneath(target, disk, sys_root, look, depth)
        ]
    if check_exclusive and not findings and _claimed(target.path):
        detail = (f"{name} is claimed by another user (open exclusively: mounted, in a "
                  "RAID or LVM, or used by a program)")  # fmt: skip
        findings.append(_finding(target, name, "busy", detail))
    partitions = [m for m in members if m != name]
    if partitions:
        detail = f"{name} has partitions: {', '.join(partitions)}"
        findings.append(_finding(target, name, "partitions", detail, overridable=True))
    for signature in probe(target.path):
        detail = f"{name} carries {signature}"
        findings.append(_finding(target, name, "signature", detail, overridable=True))
    return findings


@contextlib.contextmanager
def claimed(target: Target, writes: bool) -> Iterator[bool]:
    """While a job writes to a block device, hold it exclusively: fio's own opens still
    work, but nothing can mount it or add it to a RAID or LVM meanwhile. Yields False when
    something else holds it already; True otherwise (also for files and reading jobs, which
    need no claim). A remote device is not this machine's to claim."""
    if not writes or target.kind != "block" or target.remote:
        yield True
        return
    try:
        fd = os.open(target.path, os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC)
    except OSError as err:
        if err.errno == errno.EBUSY:
            yield False
            return
        yield True  # cannot be opened at all: fio will say why
        return
    try:
        yield True
    finally:
        os.close(fd)


@contextlib.contextmanager
def claimed_all(targets: Sequence[Target], writes: bool) -> Iterator[bool]:
    """`claimed` for every target at once (a group's members): False when any is held
    elsewhere (the ones already claimed are let go again)."""
    with contextlib.ExitStack() as stack:
        for target in targets:
            if not stack.enter_context(claimed(target, writes)):
                yield False
                return
        yield True


def _claimed(path: str) -> bool:
    """Whether something holds the device exclusively (a mount in any namespace, md, dm)."""
    try:
        os.close(os.open(path, os.O_RDONLY | os.O_EXCL | os.O_CLOEXEC))
    except OSError as err:
        return err.errno == errno.EBUSY
    return False


def _uses(
    name: str,
    members: list[str],
    keys: set[Key],
    sys_root: Path,
    look: _Look,
    besides: Collection[str],
) -> list[tuple[FindingKind, str, str]]:
    """(kind, device, detail) for each way a device or one of its partitions is in use."""
    found: list[tuple[FindingKind, str, str]] = []
    numbers = {_devnum(m, sys_root): m for m in members}
    for devnum, mountpoint, _source in look.mounts():
        if devnum in numbers:
            found.append(
                ("mounted", numbers[devnum], f"{numbers[devnum]} is mounted at {mountpoint}")
            )
    swaps = read_value(look.root / "swaps") or ""
    for line in swaps.splitlines()[1:]:
        device = Path(line.split()[0]).name if line.split() else ""
        if device in members:
            found.append(("swap", device, f"{device} is in use as swap"))
    for member in members:
        holders = sys_root / "class" / "block" / member / "holders"
        held = sorted(h.name for h in holders.iterdir()) if holders.is_dir() else []
        if held:
            found.append(("holders", member, f"{member} is in use by {', '.join(held)} (LVM, "
                          "device-mapper or RAID)"))  # fmt: skip
    if read_value(sys_root / "class" / "block" / name / "ro") == "1":
        found.append(("readonly", name, f"{name} is read-only (the kernel's ro flag is set); "
                      "writes would fail"))  # fmt: skip
    system = _system_disks(sys_root, look)
    for disk in _disks_under(name, sys_root):
        if disk in system:
            found.append(("root", disk, f"{disk} holds the system's {system[disk]} filesystem"))
    for loop in loops_backed_by(keys, sys_root, besides):
        found.append(("loop-backing", name, f"{name} is the backing device of {loop} (a loop "
                      "device stacked on it; what is on it lives on this device)"))  # fmt: skip
    openers = _openers(keys, look)
    if openers:
        found.append(("open", name, f"{name} is open in process {', '.join(openers)}"))
    return found


_MAX_STACK = 8  # loop devices over loop devices: deeper than any real setup


def _beneath(target: Target, name: str, sys_root: Path, look: _Look, depth: int) -> list[Finding]:
    """A loop device writes through to its backing file or device: whatever uses that (a
    mount in any namespace, another loop device over the same data, a process) is in use
    through the loop. What it writes to is known by number, whatever its path says."""
    key = loop_backing_key(name, sys_root)
    if key is None:
        return []
    backing = loop_backing(name, sys_root) or "its backing file"
    if depth >= _MAX_STACK:
        detail = f"{name} sits on more than {_MAX_STACK} stacked loop devices"
        return [_finding(target, name, "loop-backing", detail)]
    if key[0] == "block":
        kernel = kernel_name_of(os.makedev(key[1], key[2]), sys_root)
        if kernel is None:
            detail = f"{name} writes to device {key[1]}:{key[2]}, which this machine cannot name"
            return [_finding(target, name, "loop-backing", detail)]
        below = Target(spec=kernel, name=target.name, path=f"/dev/{kernel}", kind="block",
                       size_bytes=None, kernel=kernel)  # fmt: skip
        lower = Path(below.path)
        exclusive = lower.is_block_device() and lower.stat().st_rdev == os.makedev(*key[1:])
        found = _inspect_block(below, sys_root, look, _no_signatures, exclusive, {name}, depth + 1)
        inner = [(f.kind, f.detail, f.overridable) for f in found]
    else:
        uses = _file_uses(backing, key, sys_root, look, {name})
        inner = [(kind, detail, False) for kind, detail in uses]
    return [
        _finding(target, name, kind, f"{name} writes through to {backing}: {detail}", soft)
        for kind, detail, soft in inner
    ]


def check_in_use(target: Target, exclusive: bool = True) -> None:
    """Refuse to write when a target has come into use since the sweep's safety check (a
    mount, a loop device stacked on it, a program opening it). Signatures are not looked at
    again: the sweep's own writes may have changed them. `exclusive` False leaves out the
    exclusive-claim probe, for a caller that holds the claim itself."""
    found = inspect_target(target, probe=_no_signatures, check_exclusive=exclusive)
    hard = [f for f in found if not f.overridable]
    if hard:
        raise SsdcompareError(
            f"refusing to write to {target.name}: it has come into use since the sweep "
            f"started ({'; '.join(f.detail for f in hard)})"
        )


def overrides(finding: Finding, destroy_data: bool | Collection[str]) -> bool:
    """Whether --destroy-data (True: bare; names: `--destroy-data a:nvme0n1,loop3`) allows
    writing over `finding`. Names cover only the targets named; a remote disk needs its name."""
    if not finding.overridable or not destroy_data:
        return False
    if destroy_data is True:
        return not finding.named_only
    return finding.target in set(destroy_data)  # type: ignore[arg-type]


def check_write_safety(
    targets: list[Target],
    writes: bool,
    destroy_data: bool | Collection[str],
    sys_root: Path = Path("/sys"),
    proc_root: Path = Path("/proc"),
    probe: Probe = probe_signatures,
) -> list[Finding]:
    """Refuse (SsdcompareError listing every problem on every target) or allow.

    Returns the findings that `destroy_data` overrode, so the caller can say what it will
    overwrite. Read-only work passes without inspection. Callers pass the targets that some
    rendered jobfile writes to, with `writes=True`. `destroy_data` is True (a bare
    --destroy-data) or the names of the targets it covers.
    """
    if not writes:
        return []
    findings = [f for t in targets for f in inspect_target(t, sys_root, proc_root, probe)]
    hard = [f for f in findings if not f.overridable]
    soft = [f for f in findings if f.overridable]
    kept = [f for f in soft if not overrides(f, destroy_data)]
    if hard or kept:
        lines = [
            "refusing to write: this sweep writes to the devices (its jobs or its "
            "preconditioning), and"
        ]
        lines += [f"  - {f.detail}" for f in hard or kept]
        if hard:
            lines.append(
                "Mounted or in-use devices and files are never written, whatever the flags "
                "(--destroy-data cannot change that). Unmount it, stop what uses it, or pick "
                "another target; to measure it as it is, use --read-only (reads only); or test "
                "a new file on a filesystem instead (--devices /mountpoint/test.img --size 4g)."
            )
            if kept:
                lines.append("Once it is free, writing to it also needs --destroy-data, since:")
                lines += [f"  - {f.detail}" for f in kept]
            raise SsdcompareError("\n".join(lines))
        local = [f for f in kept if not f.named_only]
        if local:
            lines.append(
                "Writing destroys what is on it. If you mean to, add --destroy-data (or name "
                "the devices: --destroy-data "
                + ",".join(dict.fromkeys(f.target for f in local))
                + "); to measure without writing, use --read-only."
            )
        if len(local) < len(kept):
            lines.append(
                "A device reached through a fio server is written only when named in "
                "--destroy-data; read-only suites (--read-only) run on any host."
            )
        raise SsdcompareError("\n".join(lines))
    return soft
