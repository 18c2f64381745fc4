"""Reading a file that must be a regular file of bounded size, and bounds on what it holds.

Results folders and fio outputs come from other people. A name in them can be a FIFO (a read
would wait forever), a device such as /dev/zero (a read would never end), a file far larger
than any result, a symbolic link to a file the sender could not read themselves, or a file
under /proc or /sys (a process's environment, its open files). Each is refused here before
anything is read, and the reason never quotes what a file holds. So is a
gzip file that unpacks to more than its bound, and JSON nested deeper than any file of ours.
"""

from __future__ import annotations

import errno
import os
import stat
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ssdcompare.errors import SsdcompareError
from ssdcompare.pathwalk import as_written, kernel_view, opened_as_named
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


def _in_kernel_view(path: Path | str, fd: int | None = None) -> RefusedFile | None:
    """Refusal of a file in /proc or /sys: by its name, or (`fd`) by where the open file is,
    however the path led there."""
    try:
        where = os.readlink(f"/proc/self/fd/{fd}") if fd is not None else path
        root = kernel_view(os.path.abspath(where))  # normalised, as the kernel reads it
    except (OSError, ValueError):
        return None  # no /proc to ask, so no file of it was opened either
    if root is None or not os.fspath(where).startswith("/"):  # "pipe:[N]" and such
        return None
    return RefusedFile(f"is in {root}, the kernel's view of itself, not a file on storage")


def _open_regular(path: Path | str, limit: int, follow_links: bool) -> tuple[int, int]:
    """A descriptor of `path` once it is known to be a regular file of at most `limit`
    bytes outside /proc and /sys, looked at before it is opened and again once open, and its
    size then; RefusedFile otherwise."""
    refused = _in_kernel_view(path)
    if refused is not None:
        raise refused
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
        opened = os.fstat(fd)
        refused = _refused(opened, limit) or _in_kernel_view(path, fd)
    except OSError as err:
        refused = _unreadable(err)
    if refused is not None:
        os.close(fd)
        raise refused
    return fd, opened.st_size


def _chunks(fd: int, limit: int, first: int) -> Iterator[bytes]:
    """The bytes of an open file, `first` bytes at first, then at most 1 MiB at a time,
    until a read returns nothing (a file still growing; a read cut short: Linux gives at most
    2 GiB at once); RefusedFile once there are more than `limit`."""
    total = 0
    size = first
    while True:
        try:
            chunk = os.read(fd, size)
        except OSError as err:
            raise _unreadable(err) from None
        if not chunk:
            return
        total += len(chunk)
        if total > limit:
            raise RefusedFile(f"is larger than {format_bytes(limit)}, more than such a file holds")
        yield chunk
        size = min(1 << 20, limit + 1 - total)


def read_unlinked(path: Path | str, limit: int) -> bytes | None:
    """The bytes of `path`, opened once, when that is all it takes to know they are safe to
    read: the kernel reached a regular file of at most `limit` bytes outside /proc and /sys
    through no symbolic link (where the open file is, as /proc/self/fd tells, is the path as
    given). None whenever that cannot be told so (a link on the way, "..", "~", no regular
    file, too large, unreadable): the careful way (pathwalk.walk, then read_regular) then
    reads it or says why not."""
    wanted = as_written(os.fspath(path))
    if wanted is None:
        return None
    try:
        looked = os.lstat(wanted)  # a device node is never opened, a FIFO never waited on
        if not stat.S_ISREG(looked.st_mode) or looked.st_size > limit:
            return None
        fd = os.open(wanted, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOFOLLOW)
    except (OSError, ValueError):
        return None
    try:
        opened = os.fstat(fd)
        same = (opened.st_dev, opened.st_ino) == (looked.st_dev, looked.st_ino)
        if not same or opened.st_size > limit or not opened_as_named(fd, wanted):
            return None
        data = os.read(fd, opened.st_size + 1)
        # all of it and no more in one read, as a file at rest gives; a file that grows or
        # reads short meanwhile is read the careful way
        return data if len(data) == opened.st_size else None
    except OSError:
        return None
    finally:
        os.close(fd)


def read_regular(path: Path | str, limit: int, follow_links: bool = True) -> bytes:
    """The bytes of `path`, a regular file of at most `limit` bytes; RefusedFile otherwise.

    The file is looked at before it is opened (a device node is never opened, a FIFO never
    waited on) and again once open, with O_NONBLOCK so that a FIFO put in its place in
    between cannot stop the read. Without `follow_links` a symbolic link as the last part of
    the path is refused, not followed (O_NOFOLLOW). A file that grows past `limit` while it is
    read is refused too.
    """
    fd, size = _open_regular(path, limit, follow_links)
    try:
        # the whole file in one read, and one more byte to see that it ends there
        return b"".join(_chunks(fd, limit, size + 1))
    finally:
        os.close(fd)


@contextmanager
def regular_chunks(
    path: Path | str, limit: int, follow_links: bool = True
) -> Iterator[Iterator[bytes]]:
    """`path` as read_regular checks it, read a piece (at most 1 MiB) at a time: for files
    read as they are parsed, never held whole. The file is closed when the block ends."""
    fd, _ = _open_regular(path, limit, follow_links)
    try:
        yield _chunks(fd, limit, 1 << 20)
    finally:
        os.close(fd)


def gunzip_chunks(chunks: Iterable[bytes], limit: int) -> Iterator[bytes]:
    """What gzip data unpacks to (every member), a piece at a time as `chunks` come;
    RefusedFile when that is more than `limit` bytes (a small file can unpack to gigabytes),
    or when it is cut off or no gzip at all."""
    size = 0
    unpacker = zlib.decompressobj(wbits=31)
    started = False  # the member being unpacked has begun
    try:
        for data in chunks:
            while data:
                if not started:
                    data = data.lstrip(b"\0")  # gzip pads with NUL bytes at times
                    if not data:
                        break
                    started = True
                out = unpacker.decompress(data, limit + 1 - size)
                size += len(out)
                if size > limit:
                    raise RefusedFile(
                        f"is too large: it unpacks to more than "
                        f"{format_bytes(limit)}, more than such a file holds"
                    )
                if out:
                    yield out
                if unpacker.eof:  # another member may follow
                    data = unpacker.unused_data
                    unpacker = zlib.decompressobj(wbits=31)
                    started = False
                else:
                    data = unpacker.unconsumed_tail
    except zlib.error:
        raise RefusedFile("is not gzip data: damaged") from None
    if started:
        raise RefusedFile("is cut off (gzip): damaged")


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
