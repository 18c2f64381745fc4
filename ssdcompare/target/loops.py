"""Loop devices: what one reads and writes (asked of the loop driver, by number), and which
loop devices sit on given data.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import stat
import struct
import tempfile
from collections.abc import Collection
from pathlib import Path

from ssdcompare.target.devices import read_value
from ssdcompare.target.inuse import Key, _key_of


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
