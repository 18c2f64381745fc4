"""Turning what users type after --devices into targets fio can open.

"nvme0n1" means /dev/nvme0n1; "/dev/disk/by-id/..." is followed to its kernel name; a path to a
regular file (existing, or to be created by fio with a size) is a file target. Everything about
resolution and its errors lives here; the runner and the safety guard build on `Target`.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ssdcompare.errors import SsdcompareError
from ssdcompare.pathwalk import walk
from ssdcompare.target.hosts import Host, split_device
from ssdcompare.units import format_bytes

TargetKind = Literal["block", "file", "group"]


class Target(BaseModel):
    """A device or file that jobs run against."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    spec: str  # as the user typed it
    name: str  # short name for tables and file names: "nvme0n1", "scratch.img"
    path: str  # what fio opens
    kind: TargetKind
    size_bytes: int | None  # block: capacity; file: the file's size (existing or to create)
    exists: bool = True  # False for a file fio will create
    # block: the kernel's name for the device (from its device number), when the path's own
    # name is not it (a node made with mknod under another name)
    kernel: str | None = None
    # the fio server that runs its jobs (`--devices a:nvme0n1`); None: fio runs here
    host: Host | None = None
    # a group (`--devices nvme0n1+nvme1n1`): devices measured as one unit, each running the
    # same job at the same time in one fio run; empty for a single device
    members: tuple[Target, ...] = ()

    @property
    def parts(self) -> list[Target]:
        """The devices this target is: its members for a group, else itself."""
        return list(self.members) or [self]

    @property
    def remote(self) -> bool:
        """On another machine: nothing of it can be inspected from here (ssdcompare.target.hosts).
        A group is remote when any member is."""
        if self.members:
            return any(m.remote for m in self.members)
        return self.host is not None and not self.host.local

    @property
    def hosts(self) -> list[Host]:
        """The fio servers its jobs run on, in order (a group's may span several)."""
        return list(dict.fromkeys(p.host for p in self.parts if p.host is not None))

    @property
    def device(self) -> str:
        """The name without its host: "nvme0n1" for "a:nvme0n1" ("x+y" for "a:x+a:y")."""
        if self.members:
            if len(self.hosts) > 1:
                return self.name
            return "+".join(m.device for m in self.members)
        prefix = f"{self.host.name}:" if self.host is not None else ""
        return self.name.removeprefix(prefix)

    @property
    def kernel_name(self) -> str | None:
        """The name under /sys/class/block for block targets."""
        if self.kind != "block":
            return None
        return self.kernel or Path(self.path).name


def kernel_name_of(rdev: int, sys_root: Path = Path("/sys")) -> str | None:
    """The kernel's name for a block device number ("loop3" for 7:3), from
    /sys/dev/block/MAJ:MIN: what a device node is, whatever its file is called."""
    entry = sys_root / "dev" / "block" / f"{os.major(rdev)}:{os.minor(rdev)}"
    try:
        return entry.resolve(strict=True).name
    except OSError:
        return None


def read_value(path: Path) -> str | None:
    """A sysfs or procfs value, stripped; None when it cannot be read or is empty. Odd bytes
    (a mount point not in UTF-8) are replaced, never an error."""
    try:
        return path.read_text(errors="replace").strip() or None
    except OSError:
        return None


def read_int(path: Path) -> int | None:
    """A sysfs or procfs value that is a whole number; None when it cannot be read or is
    none."""
    text = read_value(path)
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def whole_disk(entry: Path) -> str:
    """The whole disk a block device's sysfs entry (/sys/class/block/<name>) is on: the
    disk of a partition, else the device itself."""
    return entry.resolve().parent.name if (entry / "partition").exists() else entry.name


def device_reached(part: Target) -> int:
    """The number of the block device a part's I/O reaches: the device itself, or the one
    holding a file's filesystem (the file, or the folder it is to be made in); its major is
    0 when there is none (tmpfs, overlay). OSError when it cannot be looked at."""
    if part.kind == "block":
        return os.stat(part.path).st_rdev
    path = part.path if os.path.exists(part.path) else os.path.dirname(part.path) or "."
    return os.stat(path).st_dev


def available_block_devices(sys_root: Path = Path("/sys")) -> list[str]:
    """Names of the block devices with a non-zero size (what a user could mean)."""
    block = sys_root / "block"
    names = []
    try:
        entries = sorted(block.iterdir())
    except OSError:
        return []
    for entry in entries:
        try:
            if int((entry / "size").read_text().strip()) > 0:
                names.append(entry.name)
        except (OSError, ValueError):
            continue
    return names


def block_size_bytes(kernel_name: str, sys_root: Path = Path("/sys")) -> int | None:
    """Capacity from sysfs (the size file counts 512-byte sectors whatever the block size)."""
    try:
        sectors = int((sys_root / "class" / "block" / kernel_name / "size").read_text().strip())
    except (OSError, ValueError):
        return None
    return sectors * 512


def discards(kernel_name: str, sys_root: Path = Path("/sys")) -> bool | None:
    """Whether a block device takes discards (TRIM/deallocate): its queue's
    discard_max_bytes is not 0 (a partition's queue is its disk's). None when unknown."""
    entry = sys_root / "class" / "block" / kernel_name
    try:
        entry = entry.resolve(strict=True)
    except OSError:
        return None
    queue = entry / "queue" if (entry / "queue").is_dir() else entry.parent / "queue"
    value = read_value(queue / "discard_max_bytes")
    return None if value is None or not value.isdigit() else int(value) > 0


def _unknown_device(spec: str, sys_root: Path) -> SsdcompareError:
    known = available_block_devices(sys_root)
    listing = ", ".join(known) if known else "none found"
    name = Path(spec).name
    # "scratch.img" typed without ./ is most likely a file: suggest ./scratch.img, not .img.img
    example = f"./{name}" if Path(name).suffix else f"./{name}.img"
    return SsdcompareError(
        f"unknown device {spec!r}: no such block device. Block devices on this machine: "
        f"{listing}. To test a file instead, give a path such as {example} with --size"
    )


# What fio does to these in a jobfile value: cuts the line (';', '#'), expands a variable ('$'),
# treats as an escape ('\\'); a path holding one would make fio open another file.
_FIO_UNSAFE = {";": "fio cuts a jobfile line there", "#": "fio cuts a jobfile line there",
               "$": "fio expands it as a variable", "\\": "fio reads it as an escape"}  # fmt: skip


def check_path_characters(path: str) -> None:
    """Refuse a target path that fio could not be told exactly (it would open another file)."""
    for char in path:
        if ord(char) < 32 or ord(char) == 127:
            raise SsdcompareError(
                f"{path!r} contains a control character; rename the file or use a path without"
                " it (fio's jobfiles are line-based)"
            )
        if char in _FIO_UNSAFE:
            raise SsdcompareError(
                f"{path!r} contains {char!r}, which fio cannot take in a file name "
                f"({_FIO_UNSAFE[char]}); rename it or use another path"
            )
    if path != path.strip():
        raise SsdcompareError(f"{path!r} starts or ends with blanks, which fio would drop")


def resolve_target(
    spec: str,
    size_bytes: int | None = None,
    dev_root: Path = Path("/dev"),
    sys_root: Path = Path("/sys"),
) -> Target:
    """Resolve one --devices entry.

    `size_bytes` is the size for a file target (required when the file does not exist yet or
    is empty). Raises SsdcompareError naming what was wrong and what would work.
    """
    text = spec.strip()
    if not text:
        raise SsdcompareError("empty device name in --devices (check for a stray comma)")
    target = _resolve(text, size_bytes, dev_root, sys_root)
    check_path_characters(target.path)
    return target


def _refuse_kernel_views(path: Path) -> None:
    """/proc and /sys are views of the kernel, not storage. A path through /proc/PID/root
    would also be resolved to the same path on this host's filesystem, not the other
    namespace's file it names."""
    absolute = Path(os.path.normpath(path.absolute()))
    for root in (Path("/proc"), Path("/sys")):
        if absolute.is_relative_to(root) or Path(os.path.realpath(path)).is_relative_to(root):
            raise SsdcompareError(
                f"{path} is under {root}, the kernel's view of itself, not storage; give a "
                "block device or a file on a filesystem"
            )


def _resolve(text: str, size_bytes: int | None, dev_root: Path, sys_root: Path) -> Target:
    is_path = "/" in text or text.startswith(".")
    path = Path(text).expanduser() if is_path else dev_root / text
    if not is_path and not path.exists():
        raise _unknown_device(text, sys_root)
    _refuse_kernel_views(path)
    # followed step by step: a link someone else planted on the way is refused, not followed
    real = walk(path) if is_path else path
    try:
        info = real.stat()
    except FileNotFoundError:
        if in_device_tree(path, dev_root):
            raise _unknown_device(text, sys_root) from None
        return _new_file_target(text, real, size_bytes)
    except PermissionError:
        raise SsdcompareError(f"cannot inspect {path}: permission denied (run as root?)") from None

    if stat.S_ISBLK(info.st_mode):
        _refuse_block_through_link(text, path, real, dev_root)
        return _block_target(text, path, info, dev_root, sys_root)
    if stat.S_ISREG(info.st_mode):
        size = size_bytes or info.st_size or None
        if size is None:
            raise SsdcompareError(
                f"file target {path} is empty: give its size with --size (e.g. --size 4g)"
            )
        return _file_target(text, real, size, exists=True)
    if stat.S_ISDIR(info.st_mode):
        raise SsdcompareError(
            f"{path} is a directory; give a file inside it for fio to create, e.g. "
            f"{path / 'ssdcompare.scratch'} with --size 4g"
        )
    raise SsdcompareError(f"{path} is neither a block device nor a regular file")


def _refuse_block_through_link(text: str, path: Path, real: Path, dev_root: Path) -> None:
    """A path outside /dev that leads to a block device through a symbolic link looks like a
    file but is a device: never let it become one silently. (A device node made outside /dev
    with mknod is a device by itself, and is taken as one.)"""
    lexical = Path(os.path.normpath(path.absolute()))
    if lexical.is_relative_to(dev_root) and not lexical.is_relative_to(dev_root / "shm"):
        return  # /dev/shm holds ordinary files
    with contextlib.suppress(OSError):
        if stat.S_ISBLK(os.lstat(path).st_mode):
            return
    raise SsdcompareError(
        f"{text} leads to the block device {real} through a symbolic link: a path that looks "
        f"like a file must not turn into a device. To measure the device, give it by its own "
        f"name (--devices {real})"
    )


def in_device_tree(path: Path, dev_root: Path = Path("/dev")) -> bool:
    """Whether a path lies in /dev (also through a symlink): a file created there is a file
    in RAM (devtmpfs), never the device its name suggests, and one renamed there replaces a
    device node. /dev/shm is an ordinary place for files."""
    for place in (Path(os.path.normpath(path.absolute())), Path(os.path.realpath(path))):
        if place.is_relative_to(dev_root) and not place.is_relative_to(dev_root / "shm"):
            return True
    return False


def _block_target(
    text: str, path: Path, info: os.stat_result, dev_root: Path, sys_root: Path
) -> Target:
    """A block device is what its device number says, whatever its node is called: a node
    made with mknod under another name is the kernel's device of that number."""
    real = Path(os.path.realpath(path))
    kernel = kernel_name_of(info.st_rdev, sys_root)
    if kernel is None and (sys_root / "dev" / "block").is_dir():
        raise SsdcompareError(
            f"{path} is a block device node ({os.major(info.st_rdev)}:"
            f"{os.minor(info.st_rdev)}) that no device on this machine answers to"
        )
    kernel = kernel or real.name
    canonical = dev_root / kernel
    with contextlib.suppress(OSError):
        if canonical.stat().st_rdev == info.st_rdev:
            real = canonical  # the kernel's own node: one name for one device everywhere
    capacity = block_size_bytes(kernel, sys_root)
    if capacity == 0:
        raise SsdcompareError(
            f"{real} has no capacity (size 0): an unconfigured RAM disk or a detached loop "
            "device? Set it up first"
        )
    return Target(spec=text, name=kernel, path=str(real), kind="block", size_bytes=capacity,
                  kernel=kernel if kernel != real.name else None)  # fmt: skip


def _new_file_target(spec: str, path: Path, size_bytes: int | None) -> Target:
    parent = path.parent
    if not parent.is_dir():
        raise SsdcompareError(
            f"{path} does not exist and neither does its folder {parent}; give an existing "
            "block device or a file path in an existing folder"
        )
    if not size_bytes:
        raise SsdcompareError(
            f"{path} does not exist: fio can create it as a test file, but needs a size "
            "(e.g. --size 4g)"
        )
    return _file_target(spec, path, size_bytes, exists=False)


def _file_target(spec: str, path: Path, size_bytes: int, exists: bool) -> Target:
    """`path` is the real path (`pathwalk.walk`): no symbolic link left in it."""
    return Target(spec=spec, name=path.name, path=str(path), kind="file",
                  size_bytes=size_bytes, exists=exists)  # fmt: skip


def resolve_on_host(
    spec: str,
    hosts: dict[str, Host],
    size_bytes: int | None = None,
    dev_root: Path = Path("/dev"),
    sys_root: Path = Path("/sys"),
) -> Target:
    """One --devices entry that may name a host (`a:nvme0n1`). A device on a host that is
    this machine is resolved here like any local one; on a remote host it is taken as named
    (a path, or a name under /dev): only the host's fio can tell whether it exists."""
    host, device = split_device(spec.strip(), hosts)
    if host is None:
        return resolve_target(spec, size_bytes, dev_root, sys_root)
    if host.local:
        here = resolve_target(device, size_bytes, dev_root, sys_root)
        return here.model_copy(update={"spec": spec.strip(), "host": host,
                                       "name": f"{host.name}:{here.name}"})  # fmt: skip
    path = device if device.startswith("/") else f"/dev/{device}"
    if not os.path.isabs(path) or "/../" in f"{path}/":
        raise SsdcompareError(f"{spec!r}: a device on a remote host is a name under /dev "
                              "(nvme0n1) or an absolute path")  # fmt: skip
    check_path_characters(path)
    kind: TargetKind = "block" if path.startswith("/dev/") else "file"
    return Target(spec=spec.strip(), name=f"{host.name}:{Path(path).name}", path=path,
                  kind=kind, size_bytes=size_bytes, host=host)  # fmt: skip


def _resolve_unit(
    item: str, hosts: dict[str, Host], size_bytes: int | None, dev_root: Path, sys_root: Path
) -> Target:
    """One --devices entry: a device, or a group of them joined by '+'."""
    if "+" not in item:
        return resolve_on_host(item, hosts, size_bytes, dev_root, sys_root)
    names = [name.strip() for name in item.split("+")]
    if len(names) < 2 or not all(names):
        raise SsdcompareError(f"{item!r}: a group joins two or more devices with '+' "
                              "(nvme0n1+nvme1n1)")  # fmt: skip
    members = [resolve_on_host(name, hosts, size_bytes, dev_root, sys_root) for name in names]
    where = list(dict.fromkeys(m.host for m in members))
    if len(where) > 1 and None in where:
        raise SsdcompareError(
            f"{item!r}: a group that spans hosts runs through their fio servers, all members "
            "alike; name this machine as a host too (run `fio --server` here and add "
            "--hosts me=127.0.0.1, then me:DEVICE)"
        )
    addresses = [h.address for h in where if h is not None]
    if len(set(addresses)) < len(addresses):
        raise SsdcompareError(
            f"{item!r}: two of its hosts are servers on one address; fio's client names the "
            "logs it gets back by address only, so theirs would mix. Put the members on "
            "servers with different addresses (e.g. 127.0.0.1 and 127.0.0.2)"
        )
    # on one host: "a:nvme0n1+nvme1n1", as the frame labels it; across hosts each its own
    one = where[0] if len(where) == 1 else None
    name = (f"{one.name}:" + "+".join(m.device for m in members) if one is not None
            else "+".join(m.name for m in members))  # fmt: skip
    return Target(spec=item.strip(), name=name,
                  path="+".join(m.path for m in members), kind="group", size_bytes=None,
                  host=where[0] if len(where) == 1 else None,
                  members=tuple(members))  # fmt: skip


def resolve_targets(
    specs: str | list[str],
    size_bytes: int | None = None,
    dev_root: Path = Path("/dev"),
    sys_root: Path = Path("/sys"),
    hosts: dict[str, Host] | None = None,
) -> list[Target]:
    """Resolve a comma-separated --devices value (or a list); names must be distinct.
    `hosts` (from --hosts) lets an entry name a device on a host: `a:nvme0n1`."""
    items = specs.split(",") if isinstance(specs, str) else list(specs)
    if not [i for i in items if i.strip()]:
        raise SsdcompareError("no devices given: use --devices nvme0n1,nvme1n1 (or file paths)")
    targets = [_resolve_unit(item, hosts or {}, size_bytes, dev_root, sys_root) for item in items]
    by_path: dict[tuple[str, str], Target] = {}
    for target in (part for unit in targets for part in unit.parts):
        # a remote host's /dev/sdb is not this machine's, nor another remote host's
        where = (target.host.client if target.remote and target.host else "", target.path)
        if where in by_path:
            raise SsdcompareError(
                f"{target.spec!r} and {by_path[where].spec!r} are the same target "
                f"({target.path}); list each device once"
            )
        by_path[where] = target
    names = [t.name for t in targets]
    if any(t.members for t in targets) and len(set(names)) != len(names):
        raise SsdcompareError("a group or device is listed twice in --devices")
    if len(set(names)) != len(names):
        # two files with the same base name in different folders: use full paths as names
        targets = [
            t.model_copy(
                update={
                    "name": (f"{t.host.name}:" if t.host else "")
                    + t.path.strip("/").replace("/", "_")
                }
            )  # fmt: skip
            if names.count(t.name) > 1
            else t
            for t in targets
        ]
    return targets


def describe(target: Target) -> str:
    """One line for people: "nvme0n1 (block device /dev/nvme0n1, 932 GiB)"."""
    kind = "block device" if target.kind == "block" else "file"
    size = format_bytes(target.size_bytes) if target.size_bytes else "size unknown"
    if target.remote:
        size = "size known to its host only"
    new = ", to be created" if not target.exists else ""
    if target.members:
        return f"{target.name} (a group: {'; '.join(describe(m) for m in target.members)})"
    where = f" on host {target.host.where}" if target.host is not None else ""
    return f"{target.name} ({kind} {target.path}{where}, {size}{new})"
