"""The safety guard: ssdcompare never destroys data the user did not explicitly offer.

Before a sweep with any writing job, every block-device target is inspected:
- refused whatever the flags: mounted (it or a partition), active swap, held by another
  device (LVM, dm-crypt, md RAID), the disk holding / or /boot, or opened exclusively;
- refused unless --destroy-data: partitions, or a filesystem / RAID / partition-table signature.
File targets are checked too: refused whatever the flags when the file backs a loop device
(mounted or not) or is active swap, or when another process has it open; refused unless
--destroy-data when it carries a filesystem or partition-table signature (a disk image).
Reads never change data, so read-only sweeps pass on any device.

What is looked at comes from `signatures` (blkid, wipefs, magic numbers), `inuse` (mounts in
every namespace, processes holding data open) and `loops` (what a loop device writes to);
here it becomes findings, and the decision.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections.abc import Collection, Iterator, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict

from ssdcompare.errors import SsdcompareError
from ssdcompare.target.devices import Target, kernel_name_of, read_value
from ssdcompare.target.file import made_by_ssdcompare
from ssdcompare.target.inuse import Key, _key, _key_of, _Look, _openers, _overlay_layer
from ssdcompare.target.loops import loop_backing, loop_backing_key, loops_backed_by
from ssdcompare.target.signatures import Probe, probe_signatures
from ssdcompare.units import format_bytes
from ssdcompare.userkey import signature as user_signature

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


def _block_keys(members: list[str], sys_root: Path) -> set[Key]:
    """The device numbers of a disk and its partitions, from sysfs."""
    keys = set()
    for member in members:
        number = _devnum(member, sys_root)
        if number and ":" in number:
            major, minor = number.split(":", 1)
            keys.add(("block", int(major), int(minor)))
    return keys


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
    # what the file holds is looked at only by a caller that asks for its signatures: the
    # look again before each writing run (check_in_use) wants only what cannot be overridden
    if info.st_size > 0 and probe is not _no_signatures:
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
                + ("" if user_signature(b"") is not None else
                   " once it can mark its files (it has no key of yours: give it a home or "
                   "cache folder it can write to)")
            )  # fmt: skip
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
        raise SsdcompareError(_refusal(hard, kept))
    return soft


def _refusal(hard: list[Finding], kept: list[Finding]) -> str:
    """Why writing is refused, and what to do: `hard` are findings no flag overrides, `kept`
    those --destroy-data could but did not."""
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
        return "\n".join(lines)
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
    return "\n".join(lines)
