"""File targets: the paths that lead to them, and opening them so that nothing can redirect fio.

A path is followed one component at a time, as the kernel does, and a symbolic link on the
way that someone else made is refused: one owned neither by this user nor by root, wherever
it is (a sticky /tmp, a shared scratch folder, a folder of another user's). Such a link
(`/tmp/test.img -> /root/important.db`) would make a sweep run as root write the file it
points to. The kernel's own protection against this (fs.protected_symlinks) covers only
sticky folders anyone may write to, and only where a program opens the link itself.

A file target is never handed to fio by its path. ssdcompare opens it itself, walking from
the root folder with O_NOFOLLOW at every step, checks that it is the regular file the sweep
recorded (device and inode) and gives fio the open file as /dev/fd/N. A file swapped for a
link, renamed or replaced after the sweep began is then refused instead of measured, and fio
cannot be led elsewhere between the check and its own open. Because fio would unlink and
recreate a file too small for a job (its "layout"), ssdcompare lays files out itself, with
random data, through the same open file.
"""

from __future__ import annotations

import contextlib
import errno
import hmac
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from ssdcompare.errors import SsdcompareError
from ssdcompare.units import format_bytes
from ssdcompare.userkey import signature

_LAYOUT_CHUNK = 1 << 20
_random_bytes: Callable[[int], bytes] = os.urandom  # what a file is laid out with
# an extended attribute on each file a sweep made, renewed after every run that wrote it: this
# user's signature (ssdcompare.userkey) of the file's device, inode, size and modification
# time then. While they are unchanged the file holds nothing but what ssdcompare laid out and
# fio wrote, so writing it again needs no consent (ssdcompare.target.guard); a write by anything
# else, a copy (another inode) or a mark from someone else's key no longer matches
MARK = "user.ssdcompare"


class TargetFileError(SsdcompareError):
    """A target path that leads somewhere it must not, a file that is not the one recorded,
    or one that cannot be opened or laid out (`errno` then says why)."""

    def __init__(self, message: str, errno: int | None = None) -> None:
        super().__init__(message)
        self.errno = errno


def open_file(path: str, flags: int, mode: int = 0o644) -> int:
    """Open the regular file at `path` (absolute, as `walk` gives it) without following any
    symbolic link on the way: each folder is opened from the one before with O_NOFOLLOW.
    Raises TargetFileError for a link, a folder or anything but a regular file there."""
    parts = Path(path).parts
    if len(parts) < 2 or parts[0] != "/":
        raise TargetFileError(f"{path}: not an absolute path")
    walk_flags = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    folder = os.open("/", walk_flags)
    try:
        for part in parts[1:-1]:
            try:
                inner = os.open(part, walk_flags, dir_fd=folder)
            except OSError as err:
                raise _open_error(path, part, err) from None
            os.close(folder)
            folder = inner
        try:
            fd = os.open(parts[-1], flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode,
                         dir_fd=folder)  # fmt: skip
        except OSError as err:
            raise _open_error(path, parts[-1], err) from None
    finally:
        os.close(folder)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise TargetFileError(f"{path} is no longer a regular file")
    os.set_blocking(fd, True)
    return fd


def _open_error(path: str, part: str, err: OSError) -> TargetFileError:
    if err.errno in (errno.ELOOP, errno.ENOTDIR):
        return TargetFileError(f"{path}: {part} is a symbolic link now (or not the folder it "
                               "was): it is not followed")  # fmt: skip
    return TargetFileError(f"{path} cannot be opened: {err.strerror or err}", err.errno)


def file_key(fd: int) -> str:
    """What a file is, whatever its name: "device:inode" (as identity records it)."""
    info = os.fstat(fd)
    return f"{info.st_dev}:{info.st_ino}"


def create(path: str) -> str:
    """Create the empty file a sweep will lay out and measure (never one that exists, never
    through a link); its "device:inode"."""
    try:
        fd = open_file(path, os.O_RDWR | os.O_CREAT | os.O_EXCL)
    except TargetFileError as err:
        if os.path.lexists(path):
            raise TargetFileError(
                f"{path} appeared after the sweep was planned (it was to be "
                "a new file); check what it is, then start again"
            ) from None
        raise err from None
    try:
        written(fd)
        return file_key(fd)
    finally:
        os.close(fd)


def _mark_value(info: os.stat_result) -> bytes | None:
    facts = f"ssdcompare target {info.st_dev}:{info.st_ino}:{info.st_size}:{info.st_mtime_ns}"
    signed = signature(facts.encode())
    return signed.encode() if signed is not None else None


# every file this process wrote, as its last write left it: (device, inode) -> (size,
# modification and change times in ns), taken just after its mark (see changed_since_marked)
_as_left: dict[tuple[int, int], tuple[int, int, int]] = {}
# those of them that hold nothing but what this process wrote since it made them
# (see unchanged_since_written)
_only_ours: set[tuple[int, int]] = set()


def mark(fd: int) -> os.stat_result:
    """The sweep has just written the open file: marked as one ssdcompare made, as it is now
    (see MARK; nothing on a filesystem without user attributes, or without a key of this
    user's), and remembered as it is now, mark or not (changed_since_marked); its state
    then."""
    info = os.fstat(fd)
    value = _mark_value(info)
    if value is not None:
        with contextlib.suppress(OSError):
            os.setxattr(fd, MARK, value)
            info = os.fstat(fd)  # the attribute moved its change time on
    key = (info.st_dev, info.st_ino)
    _as_left[key] = (info.st_size, info.st_mtime_ns, info.st_ctime_ns)
    _only_ours.discard(key)
    return info


def _as_now(path: str) -> tuple[tuple[int, int], tuple[int, int, int]] | None:
    """A regular file's (device, inode) and (size, modification and change times in ns);
    None for anything else (a link is never followed)."""
    try:
        info = os.lstat(path)
    except OSError:
        return None
    if not stat.S_ISREG(info.st_mode):
        return None
    return (info.st_dev, info.st_ino), (info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def changed_since_marked(path: str) -> bool:
    """Whether the file at `path` is one this process wrote that is not as its last write
    left it: someone wrote to it, cut it, changed its attributes or links, or put a new file
    in its place since (one given the same inode number too: its change time is new). No one
    can set a change time back; a write in the same tick of the kernel's clock as the
    sweep's last one (a few milliseconds; a second where the filesystem keeps whole seconds)
    is not told."""
    now = _as_now(path)
    return now is not None and now[0] in _as_left and _as_left[now[0]] != now[1]


def still_as_marked(path: str) -> bool:
    """Whether the file at `path` is one this process wrote, as its last write left it."""
    now = _as_now(path)
    return now is not None and _as_left.get(now[0]) == now[1]


def written(fd: int) -> None:
    """The open file holds nothing but what this process wrote (made here, then laid out):
    marked (`mark`), and remembered as only the sweep's (unchanged_since_written). Never said
    of a file fio ran on: someone may have written there during the run."""
    info = mark(fd)
    if info.st_ctime_ns % 1_000_000_000:  # a filesystem of whole seconds (or FAT's two)
        # would not tell a write in the same second as this one: never taken as unchanged
        _only_ours.add((info.st_dev, info.st_ino))


def unchanged_since_written(path: str) -> bool:
    """Whether the file at `path` holds nothing but what this process wrote since it made it
    (`written`) and is as that write left it (still_as_marked). On a filesystem that keeps
    whole seconds only, no file is ever taken so."""
    now = _as_now(path)
    return now is not None and now[0] in _only_ours and _as_left.get(now[0]) == now[1]


def made_by_ssdcompare(path: str) -> bool:
    """Whether the file at `path` (not followed if a link) is one this user's sweeps made,
    unchanged since their last write (see MARK)."""
    try:
        info = os.lstat(path)
        found = os.getxattr(path, MARK, follow_symlinks=False)
    except OSError:
        return False
    expected = _mark_value(info) if stat.S_ISREG(info.st_mode) else None
    return expected is not None and hmac.compare_digest(found, expected)


@contextlib.contextmanager
def opened(path: str, recorded: str | None, write: bool) -> Iterator[int]:
    """The file target at `path`, open for fio (read and write, or read only), after checking
    it is the file the sweep recorded ("device:inode"; None: not recorded, by older sweeps).
    TargetFileError when it is a link now, or another file. Once the sweep has written
    through it, `written` says so."""
    fd = open_file(path, os.O_RDWR if write else os.O_RDONLY)
    try:
        now = file_key(fd)
        if recorded is not None and now != recorded:
            raise TargetFileError(
                f"{path} is no longer the file this sweep started with (device:inode "
                f"{recorded}, now {now}): it was replaced, so it is not written or measured"
            )
        yield fd
    finally:
        os.close(fd)


def lay_out(fd: int, size_bytes: int, said: Callable[[str], None] | None = None) -> int:
    """Extend the open file to `size_bytes` with random data (never a sparse hole: reading a
    hole never reaches storage and would flatter the drive); the bytes written. What was
    there before is kept."""
    start = os.fstat(fd).st_size
    if start >= size_bytes:
        return 0
    if said is not None:
        said(f"laying out {format_bytes(size_bytes - start)} of random data")
    position = start
    try:
        while position < size_bytes:
            chunk = _random_bytes(min(_LAYOUT_CHUNK, size_bytes - position))
            written = os.pwrite(fd, chunk, position)
            if written <= 0:
                raise OSError(errno.EIO, "a write of nothing")
            position += written
        os.fsync(fd)
    except OSError as err:
        raise TargetFileError(
            f"the file could not be laid out to {format_bytes(size_bytes)} "
            f"({err.strerror or err}, after {format_bytes(position)}); free space or choose "
            "a smaller --size"
        ) from None
    return position - start


def fd_path(fd: int) -> str:
    """How fio names an open file it inherits."""
    return f"/dev/fd/{fd}"
