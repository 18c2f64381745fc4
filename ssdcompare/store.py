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

import json
import os
import tempfile
from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ssdcompare.devices import Target, in_device_tree
from ssdcompare.errors import NewerFormatError, SsdcompareError, validation_message
from ssdcompare.fiologs import log_files
from ssdcompare.fiooptions import OPT_IN, TIMESERIES_PREFIX
from ssdcompare.identity import TargetIdentity
from ssdcompare.jobcheck import JobfileError, read_jobfile, workload_hash
from ssdcompare.jobfile import hashed_span, rendered_size
from ssdcompare.metadata import DeviceInfo, HostInfo
from ssdcompare.plan import MAX_REPEAT
from ssdcompare.workload import Suite

FORMAT_VERSION = 2
MANIFEST = "manifest.json"
STATUS = "status.json"
JOBFILE = "jobfile.fio"
FIO_JSON = "fio.json"
CPU_JSON = "cpu.json"
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


RunState = Literal["ok", "failed", "interrupted", "skipped"]


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


def read_json_object(path: Path, what: str) -> dict[str, Any]:
    """A stored JSON file that must hold an object, checked for its format version."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise SsdcompareError(f"{path} cannot be read: {err}") from None
    if not isinstance(data, dict):
        raise SsdcompareError(
            f"{path} is damaged: {what} is a JSON object, this file holds a {type(data).__name__}"
        )
    version = data.get("format_version", 1)
    if not isinstance(version, int) or isinstance(version, bool):
        raise SsdcompareError(f"{path}: format_version {version!r} is not a number")
    if version > FORMAT_VERSION:
        raise NewerFormatError(
            f"{path} is in format {version}, this ssdcompare reads formats up to "
            f"{FORMAT_VERSION}: upgrade ssdcompare (pip install -U ssdcompare) to read it"
        )
    return data


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
    """Bring an older manifest to the current format (read_json_object refuses newer ones)."""
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


def migrate_status(data: dict[str, Any], folder: Path, suite: Suite) -> dict[str, Any]:
    """Bring a format 1 status to format 2: its workload hash is recomputed from the stored
    jobfile the way format 2 computes it, so old and new results compare as they should."""
    if data.get("format_version", 1) == FORMAT_VERSION:
        return data
    data = dict(data, format_version=FORMAT_VERSION)
    workload = next((w for w in suite.workloads if w.job_id == data.get("job")), None)
    try:
        text = (folder / JOBFILE).read_text(encoding="utf-8")
        facts = read_jobfile(text)
    except (OSError, UnicodeDecodeError, JobfileError):
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


class ResultsDir:
    """A sweep's results folder: the one place that knows its layout."""

    def __init__(self, path: Path, manifest: Manifest) -> None:
        self.path = path
        self.manifest = manifest

    @classmethod
    def create(cls, path: Path, manifest: Manifest) -> ResultsDir:
        """Start a new results folder; refuses one that already holds results."""
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
        results = cls(path, manifest)
        results.save_manifest()
        return results

    @classmethod
    def open(cls, path: Path) -> ResultsDir:
        """Open an existing results folder (for resuming or loading)."""
        manifest_path = path / MANIFEST
        if not manifest_path.is_file():
            raise SsdcompareError(
                f"{path} is not an ssdcompare results folder (no {MANIFEST} in it)"
            )
        data = read_json_object(manifest_path, "a manifest")
        try:
            manifest = Manifest.model_validate(migrate_manifest(data))
        except ValidationError as err:
            raise SsdcompareError(
                f"{manifest_path} is damaged: {validation_message(err)}"
            ) from None
        return cls(path, manifest)

    def save_manifest(self) -> None:
        write_atomic(self.path / MANIFEST, self.manifest.model_dump_json(indent=2) + "\n")

    def run_dir(self, target: str, job: str, repeat: int) -> Path:
        return self.path / "runs" / target / job / f"r{repeat}"

    def _read_status(self, path: Path) -> RunStatus:
        """One status file; a damaged one is reported as a failed run, never dropped."""
        folder = path.parent
        try:
            data = read_json_object(path, "a run status")
            return RunStatus.model_validate(migrate_status(data, folder, self.manifest.suite))
        except NewerFormatError:
            raise
        except (SsdcompareError, ValidationError) as err:
            problem = validation_message(err) if isinstance(err, ValidationError) else str(err)
            return RunStatus(
                status="failed", target=folder.parent.parent.name, job=folder.parent.name,
                repeat=int(folder.name.removeprefix("r")), workload_hash="",
                error=f"status.json is damaged ({problem}); rerun with --resume",
            )  # fmt: skip

    def status(self, target: str, job: str, repeat: int) -> RunStatus | None:
        """The recorded outcome of a run, or None if it never finished writing one."""
        path = self.run_dir(target, job, repeat) / STATUS
        if not path.is_file():
            return None
        return self._read_status(path)

    def prepare_run(self, target: str, job: str, repeat: int) -> Path:
        """An empty folder for a run; an earlier unfinished attempt is kept aside, not deleted.

        Raises if the run already finished ok: finished results are never overwritten.
        """
        folder = self.run_dir(target, job, repeat)
        previous = self.status(target, job, repeat)
        if previous is not None and self.finished(previous):
            raise SsdcompareError(f"{folder} already holds a finished result")
        try:
            if folder.exists():
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

    def statuses(self) -> list[RunStatus]:
        """Every recorded run outcome (damaged files as failed runs), in path order."""
        found = []
        for path in sorted((self.path / "runs").glob(f"*/*/r*/{STATUS}")):
            if ".attempt-" in path.parent.name or not path.parent.name[1:].isdigit():
                continue
            found.append(self._read_status(path))
        return found

    def finished(self, status: RunStatus) -> bool:
        """A run that is done for good: ok, with fio's output in place."""
        return status.status == "ok" and self.fio_json(status).is_file()

    def fio_json(self, status: RunStatus) -> Path:
        """Where a run's raw fio output is (it may not exist for failed runs)."""
        return self.run_dir(status.target, status.job, status.repeat) / FIO_JSON

    def jobfile(self, status: RunStatus) -> Path:
        """The jobfile a run's fio read (written before fio starts)."""
        return self.run_dir(status.target, status.job, status.repeat) / JOBFILE

    def timeseries_logs(self, status: RunStatus, kind: str) -> list[Path]:
        """A run's per-second fio logs of one kind ("iops", "bw", "lat"), one per process."""
        folder = self.run_dir(status.target, status.job, status.repeat)
        return log_files(folder, TIMESERIES_PREFIX, kind)

    def precondition_dir(self, target: str, name: str) -> Path:
        """Where preconditioning keeps what it ran: `fill`, or a job's rounds."""
        return self.path / "precondition" / target / name

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
        found = [self._record(path / STATE_RECORD, StateRecord) for path in
                 sorted(folder.glob("[0-9]*-*")) if path.is_dir()]  # fmt: skip
        return sorted((r for r in found if r is not None), key=lambda r: r.number)

    def save_state_record(self, record: StateRecord) -> None:
        path = self.state_dir(record.target, record.number, record.state) / STATE_RECORD
        write_atomic(path, record.model_dump_json(indent=2) + "\n")

    def _record(self, path: Path, model: type[_Record]) -> _Record | None:
        """A stored preconditioning record; None when there is none or it is damaged (then
        preconditioning runs again)."""
        if not path.is_file():
            return None
        try:
            return model.model_validate(read_json_object(path, "a preconditioning record"))
        except (SsdcompareError, ValidationError):
            return None

    def cpu_json(self, status: RunStatus) -> Path:
        """Where a run's CPU samples are (see cpu.read_trace)."""
        return self.run_dir(status.target, status.job, status.repeat) / CPU_JSON
