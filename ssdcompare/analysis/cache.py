"""A results folder's frame, kept beside its results so that reading it again costs about
what reading its JSON costs, however many runs it holds.

The cache is derived data only: `frame.load` builds the frame from the raw files as always
and stores a copy in `<results>/.cache/frame.json` (the seconds of `persecond.timeseries` in
`timeseries.json`). The copy is used only while it is known to be the same frame: its key
covers every file the frame is built from (manifest.json and everything under runs/,
ceiling/ and precondition/: path, size, inode, change and modification times; not
report.html or an export beside them), where the folder is, the judgement's thresholds and
the code that built it (a digest of the package's source). Any change to any of these makes
a new frame from the raw files. A folder that cannot be written to is read without a cache.
Deleting `.cache/` is always safe.

A copy is used only when this user's ssdcompare wrote it: it is signed with a key of the
user's own (HMAC-SHA256; the key is kept in `$XDG_CACHE_HOME/ssdcompare/` or
`~/.cache/ssdcompare/`, made 0600 on first use). A copy edited in place, or one that came
with a folder from someone else, fails the check and the frame is built from the raw files.
Without a usable key (no home folder, one someone else can write to) there is no cache.

JSON, not pickle: a results folder shared by someone else must never be able to run code.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import stat
from collections.abc import Callable
from functools import cache
from pathlib import Path, PurePath
from typing import Any

import pandas as pd

from ssdcompare.pathwalk import where_others_control
from ssdcompare.results.files import ResultsFiles, StoredFileError, WriteError, write_atomic
from ssdcompare.results.store import CEILING, MANIFEST, PRECONDITION, ROUNDS, RUNS
from ssdcompare.userkey import signature

FOLDER = ".cache"
FORMAT = 2
# what a frame is built from: the manifest, the runs, the ceiling and preconditioning records,
# and a PTS test's records (its rounds' windows and the purge: rounds/)
INPUTS = (MANIFEST, RUNS, CEILING, PRECONDITION, ROUNDS)


@cache
def _code_digest() -> str:
    """The package's source, hashed: a frame built by other code is another frame."""
    digest = hashlib.sha1()
    package = Path(__file__).parent.parent
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def key(folder: Path, extra: str) -> str | None:
    """What the frame of `folder` depends on, as one digest: every file it is built from
    (INPUTS: relative path, size, inode, ctime and mtime in ns), the folder's own path,
    `extra` (e.g. the thresholds) and the code. None when those files include a symbolic
    link: a frame of such a folder is always built anew."""
    digest = hashlib.sha1()
    digest.update(f"{FORMAT}\0{folder.resolve()}\0{extra}\0{_code_digest()}\0".encode())
    lines: list[str] = []
    for name in INPUTS:
        try:
            info = os.lstat(folder / name)
        except OSError:
            lines.append(f"{name}\0none")
            continue
        if stat.S_ISLNK(info.st_mode):
            return None
        if not stat.S_ISDIR(info.st_mode):
            lines.append(_line(name, info))
        elif not _walk(folder, name, lines):
            return None
    lines.sort()
    digest.update("\n".join(lines).encode())
    return digest.hexdigest()


def _line(name: str, info: os.stat_result) -> str:
    return f"{name}\0{info.st_size}\0{info.st_ino}\0{info.st_ctime_ns}\0{info.st_mtime_ns}"


def _walk(folder: Path, top: str, lines: list[str]) -> bool:
    """Add a line per file below `top`; False when a symbolic link is among them."""
    stack = [top]
    while stack:
        relative = stack.pop()
        try:
            entries = list(os.scandir(os.path.join(folder, relative)))
        except OSError:
            lines.append(f"{relative}\0unreadable")
            continue
        for entry in entries:
            name = f"{relative}/{entry.name}"
            if entry.is_symlink():
                return False
            if entry.is_dir(follow_symlinks=False):
                stack.append(name)
                continue
            try:
                lines.append(_line(name, entry.stat(follow_symlinks=False)))
            except OSError:
                lines.append(f"{name}\0gone")
    return True


def cached(
    folder: Path,
    name: str,
    extra: str,
    build: Callable[[], pd.DataFrame],
    keep: Callable[[], bool] = lambda: True,
) -> pd.DataFrame:
    """The frame `name` of `folder` ("frame", "timeseries"): the kept copy while its key
    still holds and its signature is this user's, else `build()`, kept for next time unless
    `keep()` (asked after the build) says it must not be, e.g. because it left out a damaged
    part that must be said again."""
    wanted = key(folder, extra) if signature(b"") is not None else None
    if wanted is None:
        return build()
    found = read(folder, wanted, name)
    if found is not None:
        return found
    frame = build()
    if keep():
        write(folder, wanted, frame, name)
    return frame


def read(folder: Path, wanted: str | None, name: str = "frame") -> pd.DataFrame | None:
    """The cached frame `name` of `folder` if its key is `wanted` and this user signed it;
    None otherwise. Paths in it (the sweep column, each row's fio_json) are written as
    `folder` is now, however the folder was named when the frame was kept."""
    if wanted is None or not _own_folder(folder):
        return None
    try:
        stored = ResultsFiles(folder).read_bytes(folder / FOLDER / f"{name}.json", "cache")
    except StoredFileError:
        return None
    mark, _, text = stored.partition(b"\n")
    mine = signature(text)
    if mine is None or not hmac.compare_digest(mark, mine.encode()):
        return None  # edited, planted, or signed by someone else: no cache of ours
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or data.get("key") != wanted or data.get("format") != FORMAT:
        return None
    try:
        frame = _frame(data["columns"], data["dtypes"], int(data["rows"]))
        return _respelled(frame, str(data["folder"]), str(folder))
    except (KeyError, TypeError, ValueError):
        return None  # a damaged cache is no cache


_PATH_COLUMNS = ("sweep", "fio_json")


def _respelled(frame: pd.DataFrame, kept: str, now: str) -> pd.DataFrame:
    """`frame` with paths under the folder written as the folder is named `now` (as a frame
    built now would write them), where they were written under its name `kept`."""
    if kept == now:
        return frame
    old, new = PurePath(kept), PurePath(now)
    for column in _PATH_COLUMNS:
        if column not in frame.columns:
            continue
        values = []
        for value in frame[column]:
            if isinstance(value, str):
                try:
                    inside = PurePath(value).relative_to(old)
                except ValueError:
                    pass  # not under the folder: left as it is
                else:
                    value = str(new / inside) if inside.parts else now
            values.append(value)
        frame[column] = pd.array(values, dtype="object")
    return frame


def _own_folder(folder: Path) -> bool:
    """Whether `folder`/.cache is absent or a real folder (never a link that would carry
    what is written or read to another place)."""
    try:
        info = os.lstat(folder / FOLDER)
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode)


def write(folder: Path, made: str, frame: pd.DataFrame, name: str = "frame") -> None:
    """Keep `frame` as the frame of `folder` under key `made`; a folder that cannot be
    written to (read-only, full) keeps none, silently: the cache only saves time."""
    columns: dict[str, Any] = {}
    for column in frame.columns:
        values = [_plain(v) for v in frame[column].tolist()]
        # a column of one value (the suite, the sweep's path, a device's model) is stored once
        same = bool(values) and all(v == values[0] for v in values)
        columns[column] = {"all": values[0]} if same else values
    data = {
        "format": FORMAT,
        "key": made,
        "folder": str(folder),
        "rows": len(frame),
        "dtypes": {column: str(dtype) for column, dtype in frame.dtypes.items()},
        "columns": columns,
    }
    try:
        if where_others_control(folder) is not None:
            return  # someone else's folder: a write there could be led anywhere
        (folder / FOLDER).mkdir(exist_ok=True)
        # a .cache that is a link (a shared folder's, made so on purpose) is never written
        # through: the write would land wherever it points
        text = json.dumps(data, separators=(",", ":")).encode()
        mine = signature(text)
        if _own_folder(folder) and mine is not None:
            write_atomic(folder / FOLDER / f"{name}.json", mine.encode() + b"\n" + text)
    except (OSError, WriteError):
        pass


def _plain(value: Any) -> Any:
    """A frame value as JSON holds it: NA and None as null, NaN as NaN, tuples as lists."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and math.isnan(value):
        return math.nan
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if hasattr(value, "item"):  # a numpy scalar
        return value.item()
    return value


_RESTORE: dict[str, Callable[[list[Any]], Any]] = {
    "float64": lambda v: pd.array([math.nan if x is None else x for x in v], dtype="float64"),
    "Int64": lambda v: pd.array(v, dtype="Int64"),
    "boolean": lambda v: pd.array(v, dtype="boolean"),
}


def _frame(columns: dict[str, Any], dtypes: dict[str, str], rows: int) -> pd.DataFrame:
    data = {}
    for name, stored in columns.items():
        values = [stored["all"]] * rows if isinstance(stored, dict) else stored
        if len(values) != rows:
            raise ValueError(f"column {name} has {len(values)} values, not {rows}")
        restore = _RESTORE.get(dtypes[name])
        if restore is not None:
            data[name] = restore(values)
        else:  # object columns: sequences were tuples (lat_dist_us)
            data[name] = pd.array(
                [tuple(v) if isinstance(v, list) else v for v in values], dtype="object"
            )
    return pd.DataFrame(data)
