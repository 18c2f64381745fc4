"""Backup copies of a disk's headers: what is left to recover when its start was wiped.

An ext2/3/4 filesystem keeps copies of its superblock in later block groups (`e2fsck -b 32768`
reads one), and a GPT keeps a copy of its header in the disk's last sector. Zeroing the first
MiB leaves both intact and the data recoverable, yet blkid, which reads only the primary ones,
names nothing. Each copy is trusted only when more than its magic number agrees (the fields
that say where it is, or a checksum), so random data does not pass for one.
"""

from __future__ import annotations

import os
import struct
import zlib
from collections.abc import Sequence

# The first backup superblock (in block group 1) for each block size mke2fs uses, in blocks
# of that size: a group holds 8 blocks per byte of a block, and a 1 KiB filesystem starts
# at block 1 (the places e2fsck's manual gives: 8193, 16384, 32768).
_EXT_BACKUPS = ((1024, 8193), (2048, 16384), (4096, 32768))
_EXT_MAGIC = 0xEF53
_GPT_SECTORS = (512, 4096)  # logical sector sizes: the last LBA is one of these from the end
_GPT_HEADER_MIN = 92


# each backup, as its words begin, and what blkid or the magic numbers call its primary
_PRIMARIES = {
    "an ext2/3/4 filesystem's backup superblock": (
        "an ext2 filesystem", "an ext3 filesystem", "an ext4 filesystem",
        "an ext2/3/4 filesystem",
    ),
    "a GPT partition table's backup header": ("a GPT partition table",),
}  # fmt: skip


def left_behind(signature: str, before: Sequence[str]) -> bool:
    """Whether `signature` is the backup of a primary `before` names: what writing over the
    start of a device leaves, nothing someone made since."""
    for backup, primaries in _PRIMARIES.items():
        if signature.startswith(backup):
            return any(seen.startswith(primaries) for seen in before)
    return False


def backup_signatures(path: str) -> list[str]:
    """Backup headers found on a device or file, in words; [] when none (or it cannot be
    read: the caller's own probe says so)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return []
    try:
        size = os.lseek(fd, 0, os.SEEK_END)
        found = [_ext_backup(fd, size), _gpt_backup(fd, size)]
    except OSError:
        return []
    finally:
        os.close(fd)
    return [what for what in found if what]


def _read(fd: int, offset: int, length: int, size: int) -> bytes:
    if offset < 0 or offset + length > size:
        return b""
    return os.pread(fd, length, offset)


def _ext_backup(fd: int, size: int) -> str | None:
    for block_size, block in _EXT_BACKUPS:
        sb = _read(fd, block * block_size, 1024, size)
        if len(sb) < 1024 or struct.unpack_from("<H", sb, 56)[0] != _EXT_MAGIC:
            continue
        first_data_block, log_block_size, _, blocks_per_group = struct.unpack_from("<4I", sb, 20)
        blocks = struct.unpack_from("<I", sb, 4)[0] | struct.unpack_from("<I", sb, 0x150)[0] << 32
        if (
            1024 << log_block_size == block_size
            and blocks_per_group == 8 * block_size
            and first_data_block == (1 if block_size == 1024 else 0)
            and blocks > block
        ):
            return (
                f"an ext2/3/4 filesystem's backup superblock (block {block} of {block_size} "
                f"bytes: e2fsck -b {block} -B {block_size} reads it)"
            )
    return None


def _gpt_backup(fd: int, size: int) -> str | None:
    for sector in _GPT_SECTORS:
        if size % sector or size < 2 * sector:
            continue
        header = _read(fd, size - sector, sector, size)
        if header[:8] != b"EFI PART":
            continue
        length, crc = struct.unpack_from("<2I", header, 12)
        my_lba, alternate_lba = struct.unpack_from("<2Q", header, 24)
        if not _GPT_HEADER_MIN <= length <= sector or my_lba != size // sector - 1:
            continue
        if alternate_lba == 1 and zlib.crc32(header[:16] + bytes(4) + header[20:length]) == crc:
            return f"a GPT partition table's backup header (in the last {sector}-byte sector)"
    return None
