"""Reading a file that must be a regular file of bounded size, and bounds on what it holds.

Results folders and fio outputs come from other people. A name in them can be a FIFO (a read
would wait forever), a device such as /dev/zero (a read would never end), a file far larger
than any result, or a symbolic link to a file the sender could not read themselves. Each is
refused here before anything is read, and the reason never quotes what a file holds. So is a
gzip file that unpacks to more than its bound, and JSON nested deeper than any file of ours.
"""

from __future__ import annotations

import errno
import os
import stat
import zlib
from pathlib import Path
from typing import Any

from ssdcompare.errors import SsdcompareError
from ssdcompare.units import format_bytes


class RefusedFile(SsdcompareError):
    """A file that was not read, and why ("is a symbolic link"), in words that name no part
    of what it holds; callers put the file's name before it."""

    def __init__(self, reason: str, missing: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.missing = missing  # there is no file of that name (or no folder on its way)


def _kind(mode: int) -> str:
    """What a file that is no regular file is, in words."""
    for test, words in (
        (stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    ):  # fmt: skip
        if test(mode):
            return words
    return "not a regular file"


def _refused(info: os.stat_result, limit: int) -> RefusedFile | None:
    if not stat.S_ISREG(info.st_mode):
        kind = _kind(info.st_mode)
        if kind == "a symbolic link":
            return RefusedFile("is a symbolic link")
        return RefusedFile(f"is {kind}, not a regular file")
    if info.st_size > limit:
        return RefusedFile(f"is larger than {format_bytes(limit)}, more than such a file holds")
    return None


def _unreadable(err: OSError) -> RefusedFile:
    if err.errno in (errno.ENOENT, errno.ENOTDIR):
        return RefusedFile("is missing", missing=True)
    if err.errno == errno.ELOOP:
        return RefusedFile("is a symbolic link")
    return RefusedFile(f"cannot be read ({err.strerror or err})")


def read_regular(path: Path | str, limit: int, follow_links: bool = True) -> bytes:
    """The bytes of `path`, a regular file of at most `limit` bytes; RefusedFile otherwise.

    The file is looked at before it is opened (a device node is never opened, a FIFO never
    waited on) and again once open, with O_NONBLOCK so that a FIFO put in its place in
    between cannot stop the read. Without `follow_links` a symbolic link as the last part of
    the path is refused, not followed (O_NOFOLLOW). A file that grows past `limit` while it is
    read is refused too.
    """
    try:
        looked = os.stat(path) if follow_links else os.lstat(path)
        refused = _refused(looked, limit)
        if refused is not None:
            raise refused
        flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC
        fd = os.open(path, flags if follow_links else flags | os.O_NOFOLLOW)
    except OSError as err:
        raise _unreadable(err) from None
    except ValueError:  # a NUL byte in the name, which no file name can hold
        raise RefusedFile("is missing (a file name has no NUL byte)", missing=True) from None
    try:
        info = os.fstat(fd)
        refused = _refused(info, limit)
        if refused is not None:
            raise refused
        # one read of the size and one more byte, then reads until one returns nothing (a
        # file still growing; a read cut short: Linux gives at most 2 GiB at once)
        chunks = [os.read(fd, info.st_size + 1)]
        total = len(chunks[0])
        while chunks[-1]:
            if total > limit:
                raise RefusedFile(f"is larger than {format_bytes(limit)}, more than such a file "
                                  "holds")  # fmt: skip
            chunks.append(os.read(fd, min(1 << 20, limit + 1 - total)))
            total += len(chunks[-1])
    except OSError as err:
        raise _unreadable(err) from None
    finally:
        os.close(fd)
    return b"".join(chunks)


def gunzip(data: bytes, limit: int) -> bytes:
    """What gzip `data` unpacks to (every member); RefusedFile when that is more than `limit`
    bytes (a small file can unpack to gigabytes), or when it is cut off or no gzip at all."""
    out: list[bytes] = []
    size = 0
    try:
        while data:
            unpacker = zlib.decompressobj(wbits=31)
            while data:
                out.append(unpacker.decompress(data, limit + 1 - size))
                size += len(out[-1])
                if size > limit:
                    raise RefusedFile(f"unpacks to more than {format_bytes(limit)}: more than "
                                      "such a file holds")  # fmt: skip
                data = unpacker.unconsumed_tail
            if not unpacker.eof:
                raise RefusedFile("is cut off (gzip): damaged")
            data = unpacker.unused_data.lstrip(b"\0")  # gzip pads with NUL bytes at times
    except zlib.error:
        raise RefusedFile("is not gzip data: damaged") from None
    return b"".join(out)


def nested_deeper(value: Any, limit: int) -> bool:
    """Whether JSON data nests more than `limit` lists and objects deep (a level at a time:
    no recursion, whatever the depth)."""
    level = [value] if isinstance(value, (dict, list)) else []
    for _ in range(limit):
        nested: list[Any] = []
        for item in level:
            children = item.values() if isinstance(item, dict) else item
            nested += [child for child in children if isinstance(child, (dict, list))]
        if not nested:
            return False
        level = nested
    return True
