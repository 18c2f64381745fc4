"""Signatures on a device or file, in words: what a write would destroy that the device itself
carries (a filesystem, a partition table, a RAID or LVM member, swap, an encrypted volume).

util-linux's blkid looks at the start and, where it finds nothing, where partitions usually
start (a partition table wiped leaves the filesystems in them whole); wipefs names what blkid
finds ambivalent; without blkid, magic numbers and backup headers are looked for here. A probe
that cannot tell is a finding of its own, never taken for a blank device.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from ssdcompare.target.backupheaders import backup_signatures

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


_BLKID_TIMEOUT_S = 30


def _blkid_command(blkid: str, path: str, offset: int = 0) -> list[str]:
    """`blkid -p` (a low-level probe, no cache) of `path`, from `offset` bytes in, its output
    as KEY=value lines."""
    at = ["-O", str(offset)] if offset else []
    return [blkid, "-p", *at, "-o", "export", path]


def _blkid_probe(blkid: str, path: str) -> subprocess.CompletedProcess[str]:
    """blkid's probe of `path` from its start, run. OSError or TimeoutExpired when it cannot
    run or answer."""
    return subprocess.run(
        _blkid_command(blkid, path), capture_output=True, text=True, errors="replace",
        timeout=_BLKID_TIMEOUT_S, check=False, stdin=subprocess.DEVNULL,
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
    """Signatures blkid finds where a partition usually starts, in words. The looks run at
    once (a blkid each), as they are independent: a sweep looks before every writing run."""
    found: list[str] = []
    with contextlib.ExitStack() as stack:
        looks = []
        for offset, where in _PARTITION_STARTS:
            try:
                looks.append((where, stack.enter_context(_blkid_started(blkid, path, offset))))
            except OSError:
                continue  # the probe at the start answered; this one is a look further on
        for where, look in looks:
            try:
                stdout, _ = look.communicate(timeout=_BLKID_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                look.kill()
                continue
            if look.returncode == 0:
                found += [f"{what.removesuffix(' [blkid]')} at {where} (a partition whose "
                          "table was wiped?) [blkid]"
                          for what in _describe_blkid(stdout)]  # fmt: skip
    return found


def _blkid_started(blkid: str, path: str, offset: int) -> subprocess.Popen[str]:
    """blkid's probe of `path` from `offset` bytes in, started."""
    return subprocess.Popen(
        _blkid_command(blkid, path, offset), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        stdin=subprocess.DEVNULL, text=True, errors="replace",
    )  # fmt: skip


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
