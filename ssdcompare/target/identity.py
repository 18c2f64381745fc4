"""Is this still the device (or file) the sweep started on?

A resumed sweep writes to whatever answers at the recorded path. Loop devices, USB disks and
hot-swapped drives can change behind a path between two runs, so each target's identity is
recorded when a sweep starts (size, model, serial/WWID, a loop device's backing file, a file's
inode, and the signatures and partitions found on it) and compared before resuming. Any
difference refuses that target; a signature that appeared since the start (someone made a
filesystem there) refuses it whatever the flags.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from ssdcompare.target.backupheaders import left_behind
from ssdcompare.target.devices import Target, read_value, whole_disk
from ssdcompare.target.loops import loop_backing_key
from ssdcompare.target.signatures import Probe, probe_signatures


class TargetIdentity(BaseModel):
    """What a target was when the sweep started."""

    model_config = ConfigDict(extra="allow")

    kind: str
    path: str
    size_bytes: int | None = None
    model: str | None = None
    serial: str | None = None
    wwid: str | None = None
    backing_file: str | None = None  # loop devices
    backing_inode: str | None = None  # "device:inode" of the backing file
    file_inode: str | None = None  # file targets that existed
    # file targets: the filesystem (device number) their folder is on; a resume after an
    # unmount would otherwise write into the mount point's folder on the disk below
    folder_device: str | None = None
    signatures: list[str] = Field(default_factory=list)
    partitions: list[str] = Field(default_factory=list)


def new_signatures(recorded: list[str], current: list[str]) -> list[str]:
    """Signatures found now that were not there at the start. The backup of a primary found
    then is none: the sweep's own writes over the start uncover it (blkid named the primary
    only)."""
    return [s for s in current if s not in recorded and not left_behind(s, recorded)]


def noun(target: Target | TargetIdentity) -> str:
    """What messages call a target: a "file" for a file target, else a "device"."""
    return "file" if target.kind == "file" else "device"


def _inode(path: str) -> str | None:
    """A file target's "device:inode", or "a symbolic link" when one has taken its place
    (never followed: what it points to is not the target)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if stat.S_ISLNK(info.st_mode):
        return "a symbolic link"
    return f"{info.st_dev}:{info.st_ino}"


def _device_of(path: str) -> str | None:
    try:
        number = os.stat(path).st_dev
    except OSError:
        return None
    return f"{os.major(number)}:{os.minor(number)}"


def _backing(name: str, sys_root: Path) -> str | None:
    """A loop device's backing by the numbers its driver reports: "device:inode" of a file,
    "block major:minor" of a device (whatever the path in sysfs says)."""
    key = loop_backing_key(name, sys_root)
    if key is None:
        return None
    return f"block {key[1]}:{key[2]}" if key[0] == "block" else f"{key[1]}:{key[2]}"


def changed_since(recorded: TargetIdentity, target: Target) -> list[str]:
    """How a target differs now from its identity at the sweep's start, leaving out the
    signatures its own writes may have changed: a loop device pointed at another file, a
    disk swapped behind the same name."""
    return differences(recorded, identify(target, probe=lambda path: []))


def identify(
    target: Target, sys_root: Path = Path("/sys"), probe: Probe = probe_signatures
) -> TargetIdentity:
    """Read a target's identity now (what can be read; nothing is guessed). Of a device on a
    remote host nothing can be read from here but its name."""
    if target.remote:
        return TargetIdentity(kind=target.kind, path=target.path)
    if target.kind != "block":
        inode = _inode(target.path)
        return TargetIdentity(
            kind=target.kind,
            path=target.path,
            file_inode=inode,
            folder_device=_device_of(os.path.dirname(target.path)),
            signatures=_file_signatures(target.path, inode, probe),
        )
    name = target.kernel_name or Path(target.path).name
    entry = sys_root / "class" / "block" / name
    device = entry / "device"
    backing = read_value(entry / "loop" / "backing_file")
    sectors = read_value(entry / "size")
    partitions = sorted(p.name for p in entry.glob(f"{name}*") if (p / "partition").exists())
    return TargetIdentity(
        kind="block",
        path=target.path,
        size_bytes=int(sectors) * 512 if sectors and sectors.isdigit() else None,
        model=read_value(device / "model"),
        serial=read_value(device / "serial") or read_value(entry / "serial"),
        wwid=read_value(entry / "wwid") or read_value(device / "wwid"),
        backing_file=backing,
        # a partition of a loop device lives in what the loop device writes to
        backing_inode=_backing(name, sys_root) or _backing(whole_disk(entry), sys_root),
        signatures=probe(target.path),
        partitions=partitions,
    )


def signatures_now(target: Target, probe: Probe = probe_signatures) -> list[str]:
    """The signatures on a target now, as `identify` records them (none on a remote one)."""
    if target.remote:
        return []
    if target.kind != "block":
        return _file_signatures(target.path, _inode(target.path), probe)
    return probe(target.path)


def _file_signatures(path: str, inode: str | None, probe: Probe) -> list[str]:
    """What a file's contents carry; none while it is empty, missing or not a regular file
    (a link that took its place is never followed)."""
    regular = inode is not None and ":" in inode
    return probe(path) if regular and os.path.getsize(path) else []


def differences(recorded: TargetIdentity, current: TargetIdentity) -> list[str]:
    """How `current` differs from what was recorded, in words; empty when it is the same."""
    found = []
    for field, label in (
        ("kind", "kind"), ("size_bytes", "size"), ("model", "model"), ("serial", "serial"),
        ("wwid", "WWID"), ("backing_file", "backing file"), ("backing_inode", "backing file"),
        ("file_inode", "file (inode)"), ("folder_device", "filesystem of its folder (device)"),
    ):  # fmt: skip
        before, now = getattr(recorded, field), getattr(current, field)
        if before is not None and before != now and label not in " ".join(found):
            found.append(f"{label} was {before}, now {now}")
    new = new_signatures(recorded.signatures, current.signatures)
    if new:
        found.append(f"now carries {', '.join(new)}, which was not there when the sweep started")
    new_partitions = [p for p in current.partitions if p not in recorded.partitions]
    if new_partitions:
        found.append(f"now has partitions {', '.join(new_partitions)}")
    return found
