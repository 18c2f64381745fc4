"""A results folder's frame, kept beside its results so that reading it again costs about
what reading its JSON costs, however many runs it holds.

The cache is derived data only: `frame.load` builds the frame from the raw files as always
and stores a copy in `<results>/.cache/frame.json` (the seconds of `persecond.timeseries` in
`timeseries.json`). The copy is used only while it is known
to be the same frame: its key covers every file of the folder (path, size, inode, change and
modification times), where the folder is, the judgement's thresholds and the code that built
it (a digest of the package's source). Any change to any of these makes a new frame from the
raw files. A folder that cannot be written to is read without a cache. Deleting `.cache/` is
always safe.

JSON, not pickle: a results folder shared by someone else must never be able to run code.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import stat
from collections.abc import Callable
from functools import cache
from pathlib import Path, PurePath
from typing import Any

import pandas as pd

from ssdcompare.store import WriteError, write_atomic

FOLDER = ".cache"
FORMAT = 1


@cache
def _code_digest() -> str:
    """The package's source, hashed: a frame built by other code is another frame."""
    digest = hashlib.sha1()
    package = Path(__file__).parent
    for path in sorted(package.glob("*.py")):
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()


def key(folder: Path, extra: str) -> str | None:
    """What the frame of `folder` depends on, as one digest: every file but the cache's own
    (relative path, size, inode, ctime and mtime in ns), the folder's own path, `extra` (e.g.
    the thresholds) and the code. None when the folder holds a symbolic link: what it points
    to can change without any of this changing, so such a folder is always read anew."""
    digest = hashlib.sha1()
    digest.update(f"{FORMAT}\0{folder.resolve()}\0{extra}\0{_code_digest()}\0".encode())
    stack = [""]
    lines: list[str] = []
    while stack:
        relative = stack.pop()
        try:
            entries = list(os.scandir(os.path.join(folder, relative) if relative else folder))
        except OSError:
            lines.append(f"{relative}\0unreadable")
            continue
        for entry in entries:
            name = f"{relative}/{entry.name}" if relative else entry.name
            if name == FOLDER:
                continue
            if entry.is_symlink():
                return None
            if entry.is_dir(follow_symlinks=False):
                stack.append(name)
                continue
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                lines.append(f"{name}\0gone")
                continue
            lines.append(
                f"{name}\0{info.st_size}\0{info.st_ino}\0{info.st_ctime_ns}\0{info.st_mtime_ns}"
            )
    lines.sort()
    digest.update("\n".join(lines).encode())
    return digest.hexdigest()


def cached(
    folder: Path,
    name: str,
    extra: str,
    build: Callable[[], pd.DataFrame],
    keep: Callable[[], bool] = lambda: True,
) -> pd.DataFrame:
    """The frame `name` of `folder` ("frame", "timeseries"): the kept copy while its key
    still holds, else `build()`, kept for next time unless `keep()` (asked after the build)
    says it must not be, e.g. because it left out a damaged part that must be said again."""
    wanted = key(folder, extra)
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
    """The cached frame `name` of `folder` if its key is `wanted`; None otherwise. Paths in
    it (the sweep column, each row's fio_json) are written as `folder` is now, however the
    folder was named when the frame was kept."""
    if wanted is None or not _own_folder(folder):
        return None
    try:
        data = json.loads((folder / FOLDER / f"{name}.json").read_bytes())
    except (OSError, ValueError):
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
        (folder / FOLDER).mkdir(exist_ok=True)
        # a .cache that is a link (a shared folder's, made so on purpose) is never written
        # through: the write would land wherever it points
        if _own_folder(folder):
            text = json.dumps(data, separators=(",", ":"))
            write_atomic(folder / FOLDER / f"{name}.json", text)
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
