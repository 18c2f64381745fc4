"""The results directory of a sweep: a manifest, then one folder per fio run.

Layout (format_version 2)::

    manifest.json                       what, where, on what, how (written at start)
    .lock                               held by the sweep writing here (see locks.py)
    runs/<target>/<job id>/r<repeat>/
        jobfile.fio                     the exact jobfile fio ran
        fio.json                        fio's --output, verbatim (json+)
        fio.stdout.txt, fio.stderr.txt  what fio printed besides
        cpu.json                        the CPU samples taken while it ran
        status.json                     written last: ok / failed / interrupted / skipped
    runs/<target>/<job id>/r<repeat>.attempt-<n>/   earlier unfinished attempts, kept

Every JSON file ssdcompare writes carries `format_version`; files of an older format are read
through the migration functions below, files of a newer one are refused with the fix named.
Every file is written to a temporary name and renamed into place, so a crash never leaves a
half-written file under a final name; a run whose status is "ok" is never overwritten.

Format history: 1 (ssdcompare 0.1): only the manifest was versioned; `ioengine` was the first
job's engine; the workload hash covered the jobfile text. 2: every file versioned; `ioengine` is
the engine for workloads that name none; the hash covers fio's options as fio reads them;
target identities and planned hashes are recorded for resuming.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import stat
import tempfile
from collections.abc import Iterable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ssdcompare.errors import NewerFormatError, SsdcompareError, stored_validation_message
from ssdcompare.fio.check import JobfileError, read_jobfile, workload_hash
from ssdcompare.fio.jobfile import hashed_span, rendered_size
from ssdcompare.fio.logs import LogError, Samples, log_files, read_log
from ssdcompare.fio.result.models import FioOutput
from ssdcompare.fio.result.plausibility import job_problem
from ssdcompare.fio.result.reader import FIO_OUTPUT_LIMIT, parse_fio_bytes
from ssdcompare.judge.cpu import CpuTrace, trace_from
from ssdcompare.pathwalk import untrusted_ancestor, walk, where_others_control
from ssdcompare.regularfile import (
    RefusedFile,
    gunzip_chunks,
    nested_deeper,
    read_regular,
    regular_chunks,
)
from ssdcompare.suite.options import OPT_IN, TIMESERIES_PREFIX
from ssdcompare.suite.workload import MAX_REPEAT, Suite
from ssdcompare.target.devices import Target, in_device_tree
from ssdcompare.target.identity import TargetIdentity
from ssdcompare.target.metadata import DeviceInfo, HostInfo
from ssdcompare.userkey import signature, signed_by_me

FORMAT_VERSION = 2
MANIFEST = "manifest.json"
SIGNATURE = "manifest.sig"  # the manifest signed with the key of the user who ran the sweep
STATUS = "status.json"
JOBFILE = "jobfile.fio"
FIO_JSON = "fio.json"
CPU_JSON = "cpu.json"
CEILING = "ceiling"  # the jobs' runs on a RAM disk (sweep --ceiling)
PROBES_JSON = (
    "probes.json"  # what the probes read before and after the run (ssdcompare.target.probes)
)
STDOUT = "fio.stdout.txt"
STDERR = "fio.stderr.txt"
LOCK = ".lock"
FILL_RECORD = "fill.json"
STATE_RECORD = "state.json"
STEADY_RECORD = "steady.json"

_UMASK = os.umask(0o022)
os.umask(_UMASK)


class WriteError(SsdcompareError):
    """A result or report could not be written (read-only or full filesystem, permissions)."""


# "damaged" is never written: it is how a run whose stored files cannot be used (damaged,
# refused, impossible, not of this sweep) is read, so that it is named, never taken as measured
RunState = Literal["ok", "failed", "interrupted", "skipped", "damaged"]


def now_iso() -> str:
    """The current time as an ISO 8601 string in UTC."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


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


class RunStatus(BaseModel):
    """The outcome of one fio run (one job, one target, one repeat)."""

    model_config = ConfigDict(extra="allow")

    format_version: int = FORMAT_VERSION
    status: RunState
    target: str
    job: str
    repeat: int
    workload_hash: str
    started_at: str | None = None
    finished_at: str | None = None
    duration_s: float | None = None
    exit_code: int | None = None
    fio_errno: int | None = None
    error: str | None = None  # one line for people
    stderr_tail: str | None = None
    command: list[str] = Field(default_factory=list)
    sampler_cpu_pct: float | None = None
    device_unusable: bool = False  # the failure means the next job on this target fails too
    host_lost: bool = False  # its fio server could not be reached or went away (fioclient)
    lost_hosts: list[str] = Field(default_factory=list)  # the --hosts names of those servers
    notes: list[str] = Field(default_factory=list)  # what reading fio's output had to work around
    stopped_by: str | None = None  # for an interrupted run: "Ctrl-C", "SIGTERM", ...
    state_step: int | None = None  # the drive-state step (StateRecord.number) before the run


def status_of(
    outcome: Any,
    *,
    target: str,
    job: str,
    repeat: int,
    workload_hash: str,
    started_at: str,
    state_step: int | None = None,
) -> RunStatus:
    """A finished fio run's status, as stored, from its outcome (runner.RunOutcome, a
    dataclass of the same fields, whose `state` is the status): the one conversion, for a
    sweep's runs and its ceiling runs alike."""
    fields = dataclasses.asdict(outcome)
    fields["status"] = fields.pop("state")
    fields.pop("interrupted", None)  # the status says so
    return RunStatus(
        target=target, job=job, repeat=repeat, workload_hash=workload_hash,
        started_at=started_at, finished_at=now_iso(), state_step=state_step, **fields,
    )  # fmt: skip


class FillRecord(BaseModel):
    """How a target's fill went."""

    model_config = ConfigDict(extra="allow")

    target: str
    ok: bool
    size: str | None  # the fio size= it covered twice; None: the whole target
    started_at: str
    finished_at: str
    io_bytes: int | None = None
    error: str | None = None


class SteadyRecord(BaseModel):
    """A job's rounds until steady state, or until MAX_ROUNDS without."""

    model_config = ConfigDict(extra="allow")

    target: str
    job: str
    rounds_iops: list[float] = Field(default_factory=list)
    attained: bool = False
    steady_after: int | None = None  # rounds run when the window first passed
    window_mean_iops: float | None = None
    window_range_pct: float | None = None
    window_slope_pct: float | None = None
    error: str | None = None


class StateRecord(BaseModel):
    """One step that put a target in a drive state (`sweep --states`): a discard of the span
    before a run in the empty state, or a fill before the full pass."""

    model_config = ConfigDict(extra="allow")

    target: str
    state: str  # "empty" or "full"
    number: int  # the target's state steps are numbered in the order they ran
    how: str  # what was done, in words ("discarded 0-1 GiB (BLKDISCARD)")
    job: str  # the job it was done for
    repeat: int
    ok: bool
    started_at: str
    finished_at: str
    span_bytes: int | None = None
    error: str | None = None


_Record = TypeVar("_Record", "FillRecord", "SteadyRecord", "StateRecord")


class Manifest(BaseModel):
    """Everything needed to understand, compare and resume a sweep."""

    model_config = ConfigDict(extra="allow")

    format_version: int = FORMAT_VERSION
    created_at: str
    command_line: list[str]
    suite: Suite
    targets: list[Target]
    devices: list[DeviceInfo]
    host: HostInfo
    repeat: int = Field(ge=1, le=MAX_REPEAT)
    # the engine for workloads that name none; None (older results) = decide on resume
    ioengine: str | None
    order: str = "repeat > target > job"
    read_only: bool = False
    destroy_data: bool = False  # as given when the sweep started; a resume must give it again
    guard_overrides: list[str] = Field(default_factory=list)
    override_targets: list[str] = Field(default_factory=list)  # the devices it overwrote
    allowed_options: list[str] = Field(default_factory=list)  # accepted with --allow-option
    identities: dict[str, TargetIdentity] = Field(default_factory=dict)  # target -> at start
    # file targets the sweep created (path -> device:inode): it lays them out and measures
    # only these files (ssdcompare.target.file)
    created_files: dict[str, str] = Field(default_factory=dict)
    planned: dict[str, dict[str, str]] = Field(default_factory=dict)  # target -> job -> hash
    resumed_at: list[str] = Field(default_factory=list)
    precondition: list[str] = Field(default_factory=list)  # "fill", "workload", in that order
    states: list[str] = Field(default_factory=list)  # the drive states, a pass each (--states)
    ceiling: bool = False  # each job measured once on a RAM disk first (--ceiling)
    parallel_hosts: bool = False  # each job on one device of every host at once

    @field_validator("allowed_options")
    @classmethod
    def _known_options(cls, names: list[str]) -> list[str]:
        unknown = [name for name in names if name not in OPT_IN]
        if unknown:
            raise ValueError(f"{', '.join(unknown)} cannot be accepted with --allow-option")
        return names


def migrate_manifest(data: dict[str, Any]) -> dict[str, Any]:
    """Bring an older manifest to the current format (read_object refuses newer ones)."""
    version = data.get("format_version")
    if version == FORMAT_VERSION:
        return data
    if version != 1:
        raise SsdcompareError(
            "manifest.json has no known format_version: not an ssdcompare result"
        )
    data = dict(data, format_version=FORMAT_VERSION)
    workloads = (data.get("suite") or {}).get("workloads") or []
    if workloads and isinstance(workloads[0], dict) and workloads[0].get("ioengine"):
        # format 1 recorded the first job's own engine, not the default for the others
        data["ioengine"] = None
    return data


def migrate_status(
    data: dict[str, Any], folder: Path, suite: Suite, files: ResultsFiles
) -> dict[str, Any]:
    """Bring a format 1 status to format 2: its workload hash is recomputed from the stored
    jobfile the way format 2 computes it, so old and new results compare as they should."""
    if data.get("format_version", 1) == FORMAT_VERSION:
        return data
    data = dict(data, format_version=FORMAT_VERSION)
    workload = next((w for w in suite.workloads if w.job_id == data.get("job")), None)
    try:
        facts = read_jobfile(files.read_text(folder / JOBFILE, "jobfile"))
    except (StoredFileError, JobfileError):
        return data  # no readable jobfile: keep the recorded hash
    if workload is not None:
        data["workload_hash"] = workload_hash(facts, hashed_span(workload, rendered_size(facts)))
    return data


def given_paths(paths: object, what: str = "results folders") -> list[Path]:
    """Paths as a caller gives them (one path, a str or an os.PathLike, or an iterable of
    them) as a list; anything else raises SsdcompareError saying what was given."""
    if isinstance(paths, (str, os.PathLike)):
        return [Path(paths)]
    items = (list(paths) if isinstance(paths, Iterable) and not isinstance(paths, bytes)
             else [paths])  # fmt: skip
    for item in items:
        if not isinstance(item, (str, os.PathLike)):
            raise SsdcompareError(f"{what}: {item!r} is not a path: give a path (a str or a "
                                  "pathlib.Path) or a list of them")  # fmt: skip
    return [Path(item) for item in items]


def unique_folders(paths: object) -> list[Path]:
    """The results folders given (see given_paths), each once, in the order first given.

    Two spellings name the same folder when they resolve to the same real path (a trailing
    slash, ./, a symlink, relative against absolute): reading it twice would count every
    result twice.
    """
    seen: set[Path] = set()
    folders = []
    for path in given_paths(paths):
        real = path.resolve()
        if real not in seen:
            seen.add(real)
            folders.append(path)
    return folders


def _failed_status(
    target: str, job: str, repeat: int, error: str, state: RunState = "damaged"
) -> RunStatus:
    """A run known only by its folder, as a damaged (or failed) run saying why."""
    return RunStatus(status=state, target=target, job=job, repeat=repeat, workload_hash="",
                     error=error)  # fmt: skip


def _folder_name(name: str) -> bool:
    """Whether `name` is one folder's name (as a target's runs/<target> is)."""
    return name not in ("", ".", "..") and "/" not in name and "\0" not in name


def check_own_folder(path: Path, what: str) -> None:
    """A results folder a sweep writes in is this user's, and no one else can write in it,
    nor rename it away (its own folder is not writable by others, or is sticky as /tmp is):
    someone who could would swap what is in it for links while the sweep writes there.
    SsdcompareError naming the folder, who owns it and what to do (`what`: the option that
    named it)."""
    real = walk(path)  # never through a link someone else made
    try:
        info = os.lstat(real)
    except OSError as err:
        raise SsdcompareError(f"cannot look at {path}: {err.strerror or err}") from None
    problem = None
    if info.st_uid != os.geteuid():
        problem = f"belongs to user id {info.st_uid}, not to you"
    elif info.st_mode & 0o022:
        problem = "can be written by other users (its group or anyone)"
    else:
        above = untrusted_ancestor(real.parent)
        if above is not None:
            problem = f"is inside a folder someone else controls ({above})"
    if problem is not None:
        raise SsdcompareError(
            f"{path} {problem}: someone else could swap what the sweep writes there for links "
            f"to their choice of files. Give {what} a folder of your own that only you can "
            "write to (a new one is made so)"
        )


@contextlib.contextmanager
def own_writes() -> Iterator[None]:
    """While a sweep writes its results: folders and files it makes are writable by this
    user only (the umask keeps group and others from writing), whatever the umask was."""
    previous = os.umask(0o022)
    os.umask(previous | 0o022)
    try:
        yield
    finally:
        os.umask(previous)


class ResultsDir:
    """A sweep's results folder: the one place that knows its layout."""

    def __init__(self, path: Path, manifest: Manifest, files: ResultsFiles | None = None) -> None:
        self.path = path
        self.manifest = manifest
        self.files = files or ResultsFiles(path)  # every file of the folder is read by it
        self._plan: tuple[set[str], set[str]] | None = None  # target and job names planned
        self._listed: tuple[Path, list[str]] | None = None  # the run folder listed last

    def run_place(self, target: str) -> tuple[str | None, str]:
        """Where runs of `target` ran, as every table of results names them: (host, device).
        A device on a fio server is named by that server's host and its name there, a group
        across hosts by no host and the group's name, anything else by this folder's host and
        the target's name. The frame, the time series and the bursts all key runs by it."""
        for unit in self.manifest.targets:
            if unit.name != target:
                continue
            if unit.host is not None:
                return unit.host.name, unit.device
            if len(unit.hosts) > 1:
                return None, unit.name
        return self.manifest.host.hostname, target

    @classmethod
    def create(cls, path: Path, manifest: Manifest) -> ResultsDir:
        """Start a new results folder; refuses one that already holds results, and one
        reached through a link someone else made (nothing is made there)."""
        problem = where_others_control(path)  # nothing is made where someone else could
        if problem is not None:  # swap it for a link (nor through their links)
            raise SsdcompareError(
                f"{path} is inside a folder someone else controls ({problem}): they could swap "
                "what the sweep writes there for links. Give --out a folder of your own"
            )
        if path.exists() and not path.is_dir():
            raise SsdcompareError(f"{path} is a file; give --out a folder to create")
        if in_device_tree(path):
            raise SsdcompareError(
                f"{path} is under /dev, where files are kept in memory and vanish at reboot; "
                "give --out a folder on a filesystem"
            )
        if path.exists() and any(path.iterdir()):
            raise SsdcompareError(
                f"{path} already holds files; choose another --out, or continue that sweep "
                f"with --resume {path}"
            )
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise WriteError(
                f"cannot create the results folder {path}: {err.strerror or err}; choose "
                "another place with --out"
            ) from None
        check_own_folder(path, "--out")
        results = cls(path, manifest)
        results.save_manifest()
        return results

    @classmethod
    def open(cls, path: Path) -> ResultsDir:
        """Open an existing results folder (for resuming or loading)."""
        files = ResultsFiles(path)
        try:
            data = files.read_object(path / MANIFEST, "manifest", "a manifest")
        except StoredFileError as err:
            if err.missing:
                raise SsdcompareError(
                    f"{path} is not an ssdcompare results folder (no {MANIFEST} in it)"
                ) from None
            raise StoredFileError(
                f"{path}: {MANIFEST}",
                f"{err.reason}; the folder cannot be read without it: get an undamaged copy",
            ) from None
        try:
            manifest = Manifest.model_validate(migrate_manifest(data))
        except ValidationError as err:
            problem = stored_validation_message(err, Manifest)
            raise SsdcompareError(f"{path / MANIFEST} is damaged: {problem}") from None
        for index, target in enumerate(manifest.targets):
            if not _folder_name(target.name):
                # its runs would be looked for (and a resume would write them) outside runs/
                raise SsdcompareError(
                    f"{path / MANIFEST} is damaged: the name of targets[{index}] is no folder "
                    "name (it holds '/' or is '.', '..' or empty), which ssdcompare never "
                    "writes, so its runs cannot be found below runs/; the manifest was edited: "
                    "get an undamaged copy of the results folder"
                )
        return cls(path, manifest, files)

    def save_manifest(self) -> None:
        """Write the manifest, signed with this user's key (ssdcompare.userkey): a resume
        writes to the devices a manifest names, so it trusts only a manifest its own user's
        ssdcompare wrote (see signed)."""
        text = (self.manifest.model_dump_json(indent=2) + "\n").encode()
        write_atomic(self.path / MANIFEST, text)
        mark = signature(text)
        if mark is not None:
            write_atomic(self.path / SIGNATURE, mark + "\n")

    def signed(self) -> bool:
        """Whether the manifest is as this user's ssdcompare wrote it (its signature holds):
        not made by someone else, not edited since."""
        try:
            text = self.files.read_bytes(self.path / MANIFEST, "manifest")
            mark = self.files.read_bytes(self.path / SIGNATURE, "signature")
        except StoredFileError:
            return False
        return signed_by_me(text, mark.decode("ascii", "replace").strip())

    def run_dir(self, target: str, job: str, repeat: int) -> Path:
        return self.path / "runs" / target / job / f"r{repeat}"

    def status(
        self, target: str, job: str, repeat: int, folder: Path | None = None
    ) -> RunStatus | None:
        """The recorded outcome of the run in runs/<target>/<job>/r<repeat> (`folder`, when
        given, is that folder); None when it never finished writing one. A damaged one, or
        one that names another run than its folder, is a damaged run."""
        folder = folder or self.run_dir(target, job, repeat)

        def failed(error: str) -> RunStatus:
            return _failed_status(target, job, repeat, error)

        try:
            data = self.files.read_object(folder / STATUS, "status", "a run status")
            status = RunStatus.model_validate(
                migrate_status(data, folder, self.manifest.suite, self.files)
            )
        except NewerFormatError:
            raise
        except StoredFileError as err:
            if err.missing:
                return None
            return failed(f"{STATUS} {err.reason}; rerun with --resume")
        except ValidationError as err:
            problem = stored_validation_message(err, RunStatus)
            return failed(f"{STATUS} is damaged ({problem}); rerun with --resume")
        if (status.target, status.job, status.repeat) != (target, job, repeat):
            # the folder decides which run it is: files are never looked for where a status
            # says, and a status copied from another run is no result of this one
            return failed(
                f"{STATUS} is damaged: it names another run than the folder it is in (its "
                "target, job or repeat differ); rerun with --resume"
            )
        return status

    def prepare_run(self, target: str, job: str, repeat: int) -> Path:
        """An empty folder for a run; an earlier unfinished attempt is kept aside, not deleted.

        Raises if the run already finished ok: finished results are never overwritten.
        """
        folder = self.run_dir(target, job, repeat)
        previous = self.status(target, job, repeat)
        if previous is not None and self.finished(previous):
            raise SsdcompareError(f"{folder} already holds a finished result")
        self.files.check_way(folder)  # never written through a link to another place
        try:
            if os.path.lexists(folder):  # a link in its place is moved aside, not followed
                attempt = 1
                while folder.with_name(f"{folder.name}.attempt-{attempt}").exists():
                    attempt += 1
                folder.rename(folder.with_name(f"{folder.name}.attempt-{attempt}"))
            folder.mkdir(parents=True)
        except OSError as err:
            raise WriteError(f"cannot prepare {folder}: {err.strerror or err}") from None
        return folder

    def write_status(self, folder: Path, status: RunStatus) -> None:
        write_atomic(folder / STATUS, status.model_dump_json(indent=2) + "\n")

    def write_probes(self, folder: Path, readings: dict[str, Any]) -> None:
        """What the probes read around a run (ssdcompare.target.probes.record), in its folder."""
        write_atomic(folder / PROBES_JSON, json.dumps(readings, indent=1) + "\n")

    def probes(self, status: RunStatus) -> Any:
        """A run's stored probe readings; None when it has none or they cannot be used (a
        probe's columns are then unknown: they never make a run damaged)."""
        path = self.run_dir(status.target, status.job, status.repeat) / PROBES_JSON
        try:
            return self.files.read_json(path, "probes")
        except StoredFileError:
            return None

    def statuses(self) -> list[RunStatus]:
        """Every run folder's outcome, in path order. A run folder with a damaged status, that
        is a symbolic link or that is no part of the sweep's plan (copied in from another
        sweep) is a damaged run saying so, one without a status a failed run, never a missing
        one. Where a target's or job's folder is a symbolic link or no folder, every run the
        plan has there is a damaged run naming it: one such place never makes the whole
        folder unreadable."""
        found = []
        for target, job, repeat, entry in self._run_folders():
            relative = f"runs/{target}/{job}/r{repeat}"
            if isinstance(entry, str):
                found.append(_failed_status(target, job, repeat, entry))
            elif entry.is_symlink():
                error = str(StoredFileError(relative, "is a symbolic link", folder=True))
                found.append(_failed_status(target, job, repeat, error))
            elif not self.planned(target, job, repeat):
                found.append(_failed_status(target, job, repeat, (
                    f"{relative} is not part of this sweep's plan: {MANIFEST} names no such "
                    "target, job or repeat, so it was not made by this sweep (copied in from "
                    "another?); left out of the figures"
                )))  # fmt: skip
            else:
                status = self.status(target, job, repeat, Path(entry.path))
                found.append(status or _failed_status(target, job, repeat, (
                    f"{STATUS} is missing: the run did not finish (or a sweep is running it "
                    "now); sweep --resume runs it again"
                ), "failed"))  # fmt: skip
        return found

    def planned(self, target: str, job: str, repeat: int) -> bool:
        """Whether the sweep's plan (its manifest) has this run: a known target and job, and
        a repeat it asked for."""
        if self._plan is None:
            self._plan = ({t.name for t in self.manifest.targets},
                          {w.job_id for w in self.manifest.suite.workloads})  # fmt: skip
        targets, jobs = self._plan
        return target in targets and job in jobs and 1 <= repeat <= self.manifest.repeat

    def _run_folders(self) -> Iterable[tuple[str, str, int, os.DirEntry[str] | str]]:
        """(target, job, repeat, entry) of every runs/<target>/<job>/r<N> folder (earlier
        attempts and other names left out), without following a link. Where runs/<target>
        or runs/<target>/<job> is a symbolic link or no folder, (target, job, repeat, why)
        for each run the plan has there instead."""
        for target in self.files.entries(self.path / "runs"):
            if not target.is_dir(follow_symlinks=False):
                yield from self._runs_out_of_reach(target, target.name, None)
                continue
            for job in self.files.entries(target.path):
                if not job.is_dir(follow_symlinks=False):
                    yield from self._runs_out_of_reach(job, target.name, job.name)
                    continue
                for run in self.files.entries(job.path):
                    name = run.name
                    canonical = name[1:].isdigit() and name == f"r{int(name[1:])}" != "r0"
                    if canonical and (run.is_symlink() or run.is_dir(follow_symlinks=False)):
                        yield target.name, job.name, int(name[1:]), run

    def _runs_out_of_reach(
        self, entry: os.DirEntry[str], target: str, job: str | None
    ) -> Iterator[tuple[str, str, int, str]]:
        """(target, job, repeat, why) of each planned run below `entry`, a target's (`job`
        None) or a job's place in runs/ that holds no folder of its own (a link, a file)."""
        relative = self.files.name(entry.path)
        what = "a symbolic link" if entry.is_symlink() else "not a folder"
        why = StoredFileError(relative, f"is {what}, so none of the runs in it can be read")
        jobs = [job] if job is not None else [w.job_id for w in self.manifest.suite.workloads]
        for name in jobs:
            for repeat in range(1, self.manifest.repeat + 1):
                if self.planned(target, name, repeat):
                    yield target, name, repeat, str(why)

    def finished(self, status: RunStatus) -> bool:
        """A run that is done for good: ok, with fio's output in place."""
        return status.status == "ok" and self.files.is_file(self.fio_json(status))

    def fio_json(self, status: RunStatus) -> Path:
        """Where a run's raw fio output is (it may not exist for failed runs)."""
        return self.run_dir(status.target, status.job, status.repeat) / FIO_JSON

    def jobfile(self, status: RunStatus) -> Path:
        """The jobfile a run's fio read (written before fio starts)."""
        return self.run_dir(status.target, status.job, status.repeat) / JOBFILE

    def timeseries_logs(self, status: RunStatus, kind: str) -> list[Path]:
        """A run's per-second fio logs of one kind ("iops", "bw", "lat"), one per process.
        The folder's listing is kept for the next kind asked of the same run (reading a run
        asks for each kind several times)."""
        folder = self.run_dir(status.target, status.job, status.repeat)
        if self._listed is None or self._listed[0] != folder:
            try:
                self._listed = (folder, os.listdir(folder))
            except OSError:
                self._listed = (folder, [])
        return log_files(folder, TIMESERIES_PREFIX, kind, self._listed[1])

    def precondition_dir(self, target: str, name: str) -> Path:
        """Where preconditioning keeps what it ran: `fill`, or a job's rounds (refused when a
        folder on its way is a link: what is written there would land elsewhere)."""
        folder = self.path / "precondition" / target / name
        self.files.check_way(folder / STATE_RECORD)
        return folder

    def fill_record(self, target: str) -> FillRecord | None:
        return self._record(self.precondition_dir(target, "fill") / FILL_RECORD, FillRecord)

    def steady_record(self, target: str, job: str) -> SteadyRecord | None:
        return self._record(self.precondition_dir(target, job) / STEADY_RECORD, SteadyRecord)

    def save_fill_record(self, record: FillRecord) -> None:
        path = self.precondition_dir(record.target, "fill") / FILL_RECORD
        write_atomic(path, record.model_dump_json(indent=2) + "\n")

    def save_steady_record(self, record: SteadyRecord) -> None:
        path = self.precondition_dir(record.target, record.job) / STEADY_RECORD
        write_atomic(path, record.model_dump_json(indent=2) + "\n")

    def state_dir(self, target: str, number: int, state: str) -> Path:
        """Where one drive-state step keeps its record (and the fill its jobfile and output)."""
        return self.precondition_dir(target, "states") / f"{number:04d}-{state}"

    def state_records(self, target: str) -> list[StateRecord]:
        """A target's drive-state steps, in the order they ran (damaged records left out)."""
        folder = self.precondition_dir(target, "states")
        found = [self._record(Path(entry.path) / STATE_RECORD, StateRecord)
                 for entry in self.files.entries(folder)
                 if entry.name[:1].isdigit() and "-" in entry.name
                 and entry.is_dir(follow_symlinks=False)]  # fmt: skip
        return sorted((r for r in found if r is not None), key=lambda r: r.number)

    def save_state_record(self, record: StateRecord) -> None:
        path = self.state_dir(record.target, record.number, record.state) / STATE_RECORD
        write_atomic(path, record.model_dump_json(indent=2) + "\n")

    def _record(self, path: Path, model: type[_Record]) -> _Record | None:
        """A stored preconditioning record; None when there is none or it is damaged (then
        preconditioning runs again)."""
        try:
            data = self.files.read_object(path, "record", "a preconditioning record")
            return model.model_validate(data)
        except (StoredFileError, ValidationError):
            return None

    def cpu_json(self, status: RunStatus) -> Path:
        """Where a run's CPU samples are (see cpu_trace)."""
        return self.run_dir(status.target, status.job, status.repeat) / CPU_JSON

    def cpu_trace(self, status: RunStatus) -> CpuTrace | None:
        """A run's CPU samples; None when it has none. StoredFileError when cpu.json is
        refused or damaged, NewerFormatError when a newer ssdcompare wrote it."""
        path = self.cpu_json(status)
        try:
            data = self.files.read_json(path, "cpu")
            return trace_from(data)
        except StoredFileError as err:
            if err.missing:
                return None
            raise
        except NewerFormatError as err:
            raise NewerFormatError(f"{self.files.name(path)} {err}") from None
        except SsdcompareError as err:
            raise StoredFileError(self.files.name(path), str(err)) from None

    def jobfile_text(self, status: RunStatus) -> str | None:
        """The jobfile a run's fio read; None when it has none or it cannot be read."""
        try:
            return self.files.read_text(self.jobfile(status), "jobfile")
        except StoredFileError:
            return None

    def fio_output(self, status: RunStatus) -> FioOutput:
        """A run's fio output (see ResultsFiles.fio_output)."""
        return self.files.fio_output(self.fio_json(status))

    def ceiling_dir(self, job: str) -> Path:
        """Where the job's run on the RAM disk (`sweep --ceiling`) is kept: ceiling/<job>/,
        made when missing; its files are named as a run's."""
        folder = self.path / CEILING / job
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def ceiling_iops(self, job: str) -> float | None:
        """The IOPS (all directions) the job got on the RAM disk (`sweep --ceiling`, kept in
        ceiling/<job>/), or None when not measured: also when that run failed or was
        interrupted (a partial run is no ceiling) or its files cannot be read."""
        folder = self.path / CEILING / job
        try:
            data = self.files.read_object(folder / STATUS, "status", "a run status")
            if RunStatus.model_validate(data).status != "ok":
                return None
            output = self.files.fio_output(folder / FIO_JSON)
        except (SsdcompareError, ValidationError):  # refused, damaged, newer, not fio's
            return None
        if any(job_problem(job) is not None for job in output.jobs):
            return None  # impossible figures are no ceiling either
        return sum(j.total_iops for j in output.jobs if j.ok) or None
