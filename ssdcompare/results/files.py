"""A results folder's files: the one way they are read, and the one way files are written.

A results folder may come from someone else: `ResultsFiles` reads its files as regular files
below the folder only, never through a symbolic link, bounded in size per kind, with errors
that name the file and never quote it. `write_atomic` writes every file ssdcompare makes (the
results, reports, exports) under a temporary name and renames it into place, so a crash never
leaves a half-written file under a final name.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from ssdcompare.errors import NewerFormatError, SsdcompareError
from ssdcompare.fio.logs import LogError, Samples, read_log
from ssdcompare.fio.result.models import FioOutput
from ssdcompare.fio.result.reader import FIO_OUTPUT_LIMIT, parse_fio_bytes
from ssdcompare.regularfile import (
    RefusedFile,
    gunzip_chunks,
    nested_deeper,
    read_regular,
    regular_chunks,
)
from ssdcompare.results.models import FORMAT_VERSION
from ssdcompare.target.devices import in_device_tree

_UMASK = os.umask(0o022)
os.umask(_UMASK)


class WriteError(SsdcompareError):
    """A result or report could not be written (read-only or full filesystem, permissions)."""


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write a file under a temporary name in the same folder, then rename it into place.

    Raises WriteError naming the file and the reason (e.g. "No space left on device").
    Refuses to replace anything but a regular file (a device node, a folder) and to write in
    /dev, where a file would be kept in memory or shadow a device.
    """
    if in_device_tree(path):
        raise WriteError(f"refusing to write {path}: it is under /dev; give a path on a "
                         "filesystem")  # fmt: skip
    if os.path.lexists(path) and not path.is_file():
        raise WriteError(f"refusing to write {path}: it exists and is not a regular file "
                         "(a device, a folder, a link to one); give another path")  # fmt: skip
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as err:
        raise WriteError(f"cannot write {path}: {err.strerror or err}") from None
    try:
        # mkstemp makes the file private (0600); results and reports are meant to be shared
        os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode() if isinstance(data, str) else data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise WriteError(f"cannot write {path}: {err.strerror or err}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# The most bytes read of each kind of file: far above what a sweep writes, far below what
# would exhaust memory. A log's bound holds for its text, unpacked when it is a .gz: the
# largest a sweep writes is a log of every I/O of a bursty job, at most MAX_LOGGED_IOS lines
# of at most 40 bytes (about 22 MB per million I/Os as fio writes them).
LIMITS = {
    "manifest": 64 << 20, "status": 4 << 20, "record": 4 << 20, "jobfile": 1 << 20,
    "cpu": 256 << 20, "fio": FIO_OUTPUT_LIMIT, "log": 64 << 20, "cache": 1 << 30,
    "probes": 1 << 20,
    "signature": 1 << 10,
}  # fmt: skip
# JSON ssdcompare writes nests a few levels deep (cpu.json: samples, CPUs, shares)
MAX_DEPTH = 32
_LINK_ADVICE = ("a results folder is read only from the regular files in it, never through a "
                "link: put the file itself in the link's place")  # fmt: skip
_FOLDER_LINK_ADVICE = ("a results folder is read only from the folders and files in it, "
                       "never through a link: move the folder the link points to into its "
                       "place")  # fmt: skip


class StoredFileError(SsdcompareError):
    """A file of a results folder that is refused or cannot be read. The message names the
    file relative to the folder and the reason, never anything the file holds."""

    def __init__(
        self,
        relative: str,
        reason: str,
        missing: bool = False,
        folder: bool = False,
        results: Path | None = None,
    ) -> None:
        """`folder`: what is refused is a folder (the advice fits it); `results`: the results
        folder it is in, named when the refusal is one for that whole folder."""
        advice = None
        if "symbolic link" in reason:
            advice = _FOLDER_LINK_ADVICE if folder else _LINK_ADVICE
        where = f"results folder {results}: " if results is not None else ""
        super().__init__(f"{where}{relative} {reason}" + (f"; {advice}" if advice else ""))
        self.relative = relative
        self.reason = reason
        self.missing = missing


class _TooLarge(ValueError):
    """A whole number in stored JSON past what any field holds (it would not fit a float)."""


# the longest whole number a stored file holds: a 64-bit counter has 20 digits at most
_MAX_INT_DIGITS = 20


def _bounded_int(text: str) -> int:
    """A JSON whole number, refused past _MAX_INT_DIGITS digits (10**400 cannot become the
    float every figure is read as, and would crash whatever reads it)."""
    if len(text.lstrip("-")) > _MAX_INT_DIGITS:
        raise _TooLarge(text[:8])
    return int(text)


class ResultsFiles:
    """The one reader of a results folder's files (ResultsDir owns one): manifest, statuses,
    CPU samples, fio's outputs, jobfiles, per-second logs, preconditioning and ceiling
    records, the kept frame.

    A results folder may come from someone else. Every file is read as a regular file below
    the folder, of a bounded size per kind (LIMITS), and never through a symbolic link: not
    as the file itself (O_NOFOLLOW) nor as any folder on its way below the folder's root
    (looked at with lstat, once per folder per instance). A FIFO, a device or a link is
    refused before anything is read. Every refusal is a StoredFileError naming the file
    relative to the folder, never quoting what it holds. The folder itself may be a link:
    the user named it.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._folders: set[tuple[str, ...]] = set()  # folders below the root found real
        # paths are built from the root, so they begin with it as written (string work: a
        # pathlib relative_to per file costs more than reading a small file does)
        spelled = os.fspath(root)
        self._prefix = "" if spelled == "." else spelled.rstrip("/") + "/"

    def name(self, path: Path | str) -> str:
        """`path` as the messages name it: relative to the folder ("runs/x/j/r1/fio.json")."""
        spelled = os.fspath(path)
        if self._prefix and spelled.startswith(self._prefix):
            return spelled[len(self._prefix) :]
        if not self._prefix and not os.path.isabs(spelled):
            return spelled
        try:
            return Path(path).relative_to(self.root).as_posix()  # spelled another way
        except ValueError:
            return spelled

    def parts(self, path: Path | str) -> tuple[str, ...]:
        """`path` (under the root, as built from it) as names below the root."""
        relative = self.name(path)
        if relative == os.fspath(path) and self._prefix:
            raise StoredFileError(relative, f"is not inside the results folder {self.root}")
        parts = tuple(relative.split("/"))
        if any(p in ("", ".", "..") for p in parts):
            raise StoredFileError(relative or ".", "is no file name inside the folder")
        return parts

    def _check_folders(self, parts: tuple[str, ...]) -> None:
        """Every folder on the way to parts[-1] below the root is a real folder, not a link."""
        for depth in range(1, len(parts)):
            folder = parts[:depth]
            if folder in self._folders:
                continue
            relative = "/".join(folder)
            try:
                info = os.lstat(self._prefix + relative)
            except FileNotFoundError:
                raise StoredFileError(relative, "is missing", missing=True) from None
            except OSError as err:
                raise StoredFileError(
                    relative, f"cannot be read ({err.strerror or err})"
                ) from None
            if stat.S_ISLNK(info.st_mode):
                raise StoredFileError(relative, "is a symbolic link", folder=True,
                                      results=self.root)  # fmt: skip
            if not stat.S_ISDIR(info.st_mode):
                raise StoredFileError(relative, "is not a folder", missing=True)
            self._folders.add(folder)

    def check_way(self, path: Path) -> None:
        """Refuse (StoredFileError) a path to write at when a folder on its way below the
        root is a symbolic link or no folder: a write there would land outside the results
        folder. Folders not made yet are fine."""
        try:
            self._check_folders(self.parts(path))
        except StoredFileError as err:
            if not err.missing or os.path.lexists(self._prefix + err.relative):
                raise

    def read_bytes(self, path: Path, kind: str) -> bytes:
        """The bytes of a file of the folder (see the class); StoredFileError otherwise."""
        parts = self.parts(path)
        self._check_folders(parts)
        try:
            return read_regular(path, LIMITS[kind], follow_links=False)
        except RefusedFile as err:
            raise StoredFileError("/".join(parts), err.reason, err.missing) from None

    def is_file(self, path: Path) -> bool:
        """Whether a regular file (not a link) is at `path`, below real folders."""
        try:
            parts = self.parts(path)
            self._check_folders(parts)
            return stat.S_ISREG(os.lstat(path).st_mode)
        except (StoredFileError, OSError):
            return False

    def read_text(self, path: Path, kind: str) -> str:
        try:
            return self.read_bytes(path, kind).decode("utf-8")
        except UnicodeDecodeError:
            raise StoredFileError(self.name(path), "is not UTF-8 text: damaged") from None

    def read_json(self, path: Path, kind: str) -> Any:
        """A JSON file ssdcompare wrote, nested at most MAX_DEPTH levels deep."""
        data = self.read_bytes(path, kind)
        try:
            value = json.loads(data, parse_int=_bounded_int)
        except _TooLarge:
            raise StoredFileError(self.name(path), "holds a whole number larger than any a "
                                  "run records: damaged") from None  # fmt: skip
        except RecursionError:
            raise StoredFileError(self.name(path), "is nested too deeply: damaged") from None
        except ValueError as err:  # UnicodeDecodeError is one too
            where = f" (line {err.lineno})" if isinstance(err, json.JSONDecodeError) else ""
            raise StoredFileError(self.name(path), f"is not JSON{where}: damaged") from None
        if nested_deeper(value, MAX_DEPTH):
            raise StoredFileError(self.name(path), f"is nested more than {MAX_DEPTH} levels "
                                  "deep: ssdcompare never writes that, it is damaged")  # fmt: skip
        return value

    def read_object(self, path: Path, kind: str, what: str) -> dict[str, Any]:
        """A stored JSON file that must hold an object, checked for its format version."""
        data = self.read_json(path, kind)
        name = self.name(path)
        if not isinstance(data, dict):
            raise StoredFileError(name, f"is damaged: {what} is a JSON object, this file holds "
                                  f"a {type(data).__name__}")  # fmt: skip
        version = data.get("format_version", 1)
        if not isinstance(version, int) or isinstance(version, bool):
            raise StoredFileError(name, "is damaged: its format_version is not a number")
        if version > FORMAT_VERSION:
            raise NewerFormatError(
                f"{name} is in a newer format than this ssdcompare reads (formats up to "
                f"{FORMAT_VERSION}): upgrade ssdcompare (pip install -U ssdcompare) to read it"
            )
        return data

    def entries(self, path: Path | str) -> list[os.DirEntry[str]]:
        """The entries of a folder of the folder, by name; none when it is missing. The
        folder must be real (no link on its way); entries are not followed. A folder among
        them that is real is remembered as checked."""
        parts: tuple[str, ...] = ()
        if os.fspath(path) != os.fspath(self.root):
            parts = self.parts(path)
            try:
                self._check_folders((*parts, ""))
            except StoredFileError as err:
                if err.missing:
                    return []  # nothing there yet (no runs/, no preconditioning)
                raise
        try:
            with os.scandir(path) as found:
                listed = sorted(found, key=lambda entry: entry.name)
        except (FileNotFoundError, NotADirectoryError):
            return []
        except OSError as err:
            raise StoredFileError(
                self.name(path), f"cannot be read ({err.strerror or err})"
            ) from None
        for entry in listed:
            if entry.is_dir(follow_symlinks=False):
                self._folders.add((*parts, entry.name))
        return listed

    def log_samples(self, path: Path) -> Samples:
        """One fio log of a run (plain or .gz) as samples, read a line at a time as the file
        is read (and unpacked): its text is never held whole. LogError when it is refused,
        larger than its bound (LIMITS) or damaged, naming it relative to the folder."""
        name = self.name(path)
        try:
            self._check_folders(self.parts(path))
            with regular_chunks(path, LIMITS["log"], follow_links=False) as chunks:
                if path.suffix == ".gz":
                    chunks = gunzip_chunks(chunks, LIMITS["log"])
                return read_log(chunks, name)
        except StoredFileError as err:
            raise LogError(str(err)) from None
        except RefusedFile as err:
            raise LogError(str(StoredFileError(name, err.reason))) from None

    def fio_output(self, path: Path) -> FioOutput:
        """A fio output of the folder; FioOutputError (its `reason` quoting nothing the file
        holds) when it cannot be read as one, StoredFileError when it is refused."""
        return parse_fio_bytes(self.read_bytes(path, "fio"), self.name(path))
