"""This user's own secret key, and what it signs: what this user's ssdcompare made (a results
folder's manifest, a kept frame) is told apart from what came from someone else, or was edited.

The key is 32 random bytes in `$XDG_CACHE_HOME/ssdcompare/cache-key` (an absolute path only,
as the XDG rules say), else `~/.cache/ssdcompare/cache-key`, made 0600 on first use in a
folder only this user can write to. A signature is an HMAC-SHA256 of the bytes signed. Without
a usable key (no home folder, one someone else can write to) nothing is signed, and what
needs a signature is not trusted.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from functools import cache
from pathlib import Path

KEY_FILE = "cache-key"
KEY_BYTES = 32


def _key_folder() -> Path | None:
    """Where this user's cache key is kept: $XDG_CACHE_HOME/ssdcompare (an absolute path
    only, as the XDG rules say), else ~/.cache/ssdcompare; None without a home."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    if not os.path.isabs(base):
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            return None
        base = os.path.join(home, ".cache")
    return Path(base) / "ssdcompare"


def _private(info: os.stat_result) -> bool:
    """This user's own, and no one else can write to it."""
    return info.st_uid == os.geteuid() and not info.st_mode & 0o022


@cache
def _user_key(folder: Path | None) -> bytes | None:
    """This user's secret key for signing cached frames, made on first use; None when none
    can be had safely (then nothing is cached)."""
    if folder is None:
        return None
    try:
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        info = os.lstat(folder)
        if not stat.S_ISDIR(info.st_mode) or not _private(info):
            return None  # a link, or a folder another user could put a key of theirs in
        path = folder / KEY_FILE
        if not os.path.lexists(path):
            _make_key(path)
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or not _private(info) or info.st_mode & 0o044:
                return None
            found = os.read(fd, KEY_BYTES + 1)
        finally:
            os.close(fd)
    except OSError:
        return None
    return found if len(found) == KEY_BYTES else None


def _make_key(path: Path) -> None:
    """A new key at `path`, whole or not at all: written under a name of its own (0600,
    O_EXCL|O_NOFOLLOW), then linked into place, which fails if another process was first."""
    spare = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(spare, flags, 0o600)
    try:
        os.write(fd, secrets.token_bytes(KEY_BYTES))
        os.fsync(fd)
        os.close(fd)
        try:
            os.link(spare, path)
        except FileExistsError:
            pass  # another process made the key first: its key is the one
    finally:
        spare.unlink(missing_ok=True)


def signature(data: bytes) -> str | None:
    """`data` signed with this user's key (HMAC-SHA256, hex); None without a key."""
    found = _user_key(_key_folder())
    return hmac.new(found, data, hashlib.sha256).hexdigest() if found is not None else None


def signed_by_me(data: bytes, claimed: str | None) -> bool:
    """Whether `claimed` is this user's signature of `data` (False without a key)."""
    mine = signature(data)
    return mine is not None and claimed is not None and hmac.compare_digest(mine, claimed)
