"""Following a path the way the kernel does, one component at a time, without trusting a
symbolic link someone else made.

A link owned neither by this user nor by root can be pointed anywhere, at any time, by its
owner: `/tmp/test.img -> /root/important.db` would make a sweep run as root write the file it
points to, and a suite file read through such a link would quote another user's file in its
errors. The kernel's own protection (fs.protected_symlinks) covers only sticky folders anyone
may write to, and only where a program opens the link itself; resolving a path first (as
realpath does) bypasses it. So every path a user gives (a target, a suite file) is followed
here, and such a link is refused, saying where it points.

Nor does a path lead into /proc or /sys, at any step: they are the kernel's view of itself,
not storage. A name there such as /proc/self/fd/0 (and the root-owned links that lead to it,
/dev/stdin, /dev/fd/N) stands for whatever a process has open, and its link text names a file
the walk would otherwise take as the one meant.
"""

from __future__ import annotations

import os
import pwd
import stat
from pathlib import Path

from ssdcompare.errors import SsdcompareError

_MAX_LINKS = 40  # as the kernel's path walk allows
KERNEL_VIEWS = (Path("/proc"), Path("/sys"))


class ForeignLinkError(SsdcompareError):
    """A path leads through a symbolic link someone else made."""


class KernelViewError(SsdcompareError):
    """A path leads into /proc or /sys."""


def kernel_view(path: Path | str) -> Path | None:
    """The kernel view (/proc or /sys) an absolute path lies in, or None."""
    # by its text, as is_relative_to compares (it is asked at every step of every path read)
    text = os.fspath(path)
    return next((root for root, name, inside in _VIEW_TEXTS
                 if text == name or text.startswith(inside)), None)  # fmt: skip


_VIEW_TEXTS = [(root, str(root), f"{root}/") for root in KERNEL_VIEWS]
_VIEW_STARTS = tuple(str(root) for root in KERNEL_VIEWS)


def _refuse_kernel_view(given: str | Path, here: Path | str, route: list[str]) -> None:
    root = kernel_view(here)
    if root is None:
        return
    through = f" (through {', then '.join(route)})" if route else ""
    why = ""
    if root == Path("/proc"):
        why = (
            ": a name there such as /proc/self/fd/N (where /dev/stdin and /dev/fd/N lead) "
            "stands for whatever a process has open, not for a file or device of its own"
        )
    raise KernelViewError(
        f"refusing {given}: it leads into {root}{through}, the kernel's view of itself, not "
        f"storage{why}. Give the file's or device's own path"
    )


def _owner(uid: int) -> str:
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def _shared_folder(info: os.stat_result) -> str | None:
    """Why others could have put a link in a folder: it is sticky or writable by anyone."""
    if info.st_mode & stat.S_ISVTX:
        return "a sticky folder anyone may add files to"
    if info.st_mode & stat.S_IWOTH:
        return "a folder anyone may write to"
    return None


def _check_link(link: Path, folder: Path, dest: str) -> None:
    """Refuse a symbolic link someone else made: whoever owns it can point it anywhere, at
    any time."""
    info = os.lstat(link)
    if info.st_uid in (os.geteuid(), 0):
        return
    shared = _shared_folder(os.stat(folder))
    where = f"{folder}, {shared}" if shared else str(folder)
    raise ForeignLinkError(
        f"refusing {link}: it is a symbolic link to {dest}, owned by {_owner(info.st_uid)}, in "
        f"{where}. Someone else may have planted it to make ssdcompare (running as "
        f"{_owner(os.geteuid())}) use what it points to, so it is not followed. Check where it "
        "leads; to use that place, give its own path"
    )


def walk(path: str | Path) -> Path:
    """The real path `path` leads to, followed component by component; ForeignLinkError at a
    symbolic link someone else made, KernelViewError at any step into /proc or /sys.
    Components that do not exist (a file to create) are kept as they are: the path then ends
    where the existing part ends."""
    text = os.fspath(path)
    unlinked = _reached_without_links(text)
    if unlinked is not None:
        return unlinked
    text = str(Path(text).expanduser()) if text.startswith("~") else text
    # the names still to follow, the next one last (as text: a walk is taken for every file
    # read); empty names (a//b) and "." are passed over
    pending = (text if text.startswith("/") else f"{os.getcwd()}/{text}").split("/")[::-1]
    here = "/"  # the real path so far
    route: list[str] = []  # the links followed, "link -> where it points"
    while pending:
        part = pending.pop()
        if part in ("", "."):
            continue
        if part == "..":
            here = os.path.dirname(here)
            continue
        step = f"{here}{part}" if here == "/" else f"{here}/{part}"
        if step.startswith(_VIEW_STARTS):  # told apart from a name such as /procedures there
            _refuse_kernel_view(path, step, route)
        try:
            info = os.lstat(step)
        except OSError:
            return Path(os.path.join(step, *pending[::-1]))  # the rest does not exist (yet)
        if not stat.S_ISLNK(info.st_mode):
            here = step
            continue
        if len(route) >= _MAX_LINKS:
            raise ForeignLinkError(f"{path}: too many symbolic links on the way (a loop?)")
        dest = os.readlink(step)
        _check_link(Path(step), Path(here), dest)
        route.append(f"{step} -> {dest}")
        if dest.startswith("/"):
            here = "/"
        pending += dest.split("/")[::-1]
    return Path(here)


def _reached_without_links(text: str) -> Path | None:
    """The path itself (absolute) when the kernel reaches it through no symbolic link and
    outside /proc and /sys, which is what walking it would find: told by opening it once
    (O_PATH: nothing of it is read or run) and asking where the open file is
    (opened_as_named). None when that cannot tell (a link, "..", "~", a missing part): then
    the path is walked name by name."""
    wanted = as_written(text)
    if wanted is None:
        return None
    try:
        found = os.open(wanted, os.O_PATH | os.O_CLOEXEC)
    except (OSError, ValueError):
        return None
    try:
        return Path(wanted) if opened_as_named(found, wanted) else None
    finally:
        os.close(found)


def as_written(text: str) -> str | None:
    """A path made absolute where the kernel reads it as written, for opened_as_named; None
    with "~" or "..", where only a walk tells where it leads."""
    if text.startswith("~") or ".." in text.split("/"):
        return None
    return os.path.abspath(text)


def opened_as_named(fd: int, wanted: str) -> bool:
    """Whether the open file `fd` is where `wanted` (as_written) names, outside /proc and
    /sys: where the open file is, as /proc/self/fd tells, is the path as given only if no
    symbolic link was on the way. False when that cannot be asked."""
    try:
        real = os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        return False
    return real == wanted and kernel_view(real) is None


def untrusted_ancestor(path: Path) -> str | None:
    """Why someone else could swap `path` (a real path, as walk gives it) for a link while
    ssdcompare writes under it, or None: a folder on the way belongs to another user (not
    root), or others may write to it and it is not sticky (in a sticky folder such as /tmp
    only the owner of an entry may rename it)."""
    for folder in (path, *path.parents):
        try:
            info = os.stat(folder)
        except OSError:
            continue  # not made yet: it will be this user's
        if info.st_uid not in (os.geteuid(), 0):
            return f"{folder} belongs to {_owner(info.st_uid)}"
        if info.st_mode & 0o022 and not info.st_mode & stat.S_ISVTX:
            return (
                f"{folder} can be written by other users (its group or anyone) and is not sticky"
            )
    return None


def where_others_control(path: Path) -> str | None:
    """Why someone else could swap what is written at `path` (a folder, or where one is to be
    made) for a link to their choice of place, or None: it (or the nearest folder of it that
    exists) or a folder above it belongs to another user (not root), or others may write to
    it without a sticky bit. Such a place is never written to: whoever controls it can
    exchange it for a link between any check and the write."""
    real = walk(path)
    existing = next((p for p in (real, *real.parents) if os.path.lexists(p)), Path("/"))
    return untrusted_ancestor(existing)
