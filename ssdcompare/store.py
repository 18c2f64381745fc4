"""The results directory of a sweep: a manifest, then one folder per fio run.

Layout (format_version 1)::

    manifest.json                       what, where, on what, how (written at start)
    runs/<target>/<job id>/r<repeat>/
        jobfile.fio                     the exact jobfile fio ran
        fio.json                        fio's --output, verbatim (json+)
        fio.stdout.txt, fio.stderr.txt  what fio printed besides
        cpu.json                        the CPU samples taken while it ran
        status.json                     written last: ok / failed / interrupted / skipped
    runs/<target>/<job id>/r<repeat>.attempt-<n>/   earlier unfinished attempts, kept

Every file is written to a temporary name and renamed into place, so a crash never leaves a
half-written file under a final name; a run whose status is "ok" is never overwritten.
"""

from __future__ import annotations

import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ssdcompare.devices import Target
from ssdcompare.errors import SsdcompareError
from ssdcompare.matrix import Suite
from ssdcompare.metadata import DeviceInfo, HostInfo

FORMAT_VERSION = 1
MANIFEST = "manifest.json"
STATUS = "status.json"

_UMASK = os.umask(0o022)
os.umask(_UMASK)

RunState = Literal["ok", "failed", "interrupted", "skipped"]


def now_iso() -> str:
    """The current time as an ISO 8601 string in UTC."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def write_atomic(path: Path, data: str | bytes) -> None:
    """Write a file under a temporary name in the same folder, then rename it into place."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        # mkstemp makes the file private (0600); results and reports are meant to be shared
        os.fchmod(fd, 0o666 & ~_UMASK)
        with os.fdopen(fd, "wb") as handle:
            handle.write(data.encode() if isinstance(data, str) else data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class RunStatus(BaseModel):
    """The outcome of one fio run (one job, one target, one repeat)."""

    model_config = ConfigDict(extra="allow")

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
    repeat: int
    ioengine: str
    order: str = "repeat > target > job"
    read_only: bool = False
    destroy_data: bool = False
    guard_overrides: list[str] = Field(default_factory=list)
    resumed_at: list[str] = Field(default_factory=list)


def migrate_manifest(data: dict) -> dict:
    """Bring an older manifest to the current format, or say why it cannot be read."""
    version = data.get("format_version")
    if version == FORMAT_VERSION:
        return data
    if not isinstance(version, int):
        raise SsdcompareError("manifest.json has no format_version: not an ssdcompare result")
    raise SsdcompareError(
        f"results are in format {version}, this ssdcompare reads format {FORMAT_VERSION}: "
        "use the ssdcompare version that wrote them"
    )


class ResultsDir:
    """A sweep's results folder."""

    def __init__(self, path: Path, manifest: Manifest) -> None:
        self.path = path
        self.manifest = manifest

    @classmethod
    def create(cls, path: Path, manifest: Manifest) -> ResultsDir:
        """Start a new results folder; refuses one that already holds results."""
        if path.exists() and any(path.iterdir()):
            raise SsdcompareError(
                f"{path} already holds files; choose another --out, or continue that sweep "
                f"with --resume {path}"
            )
        path.mkdir(parents=True, exist_ok=True)
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
        try:
            data = json.loads(manifest_path.read_text())
        except (OSError, ValueError) as err:
            raise SsdcompareError(f"{manifest_path} cannot be read: {err}") from None
        try:
            manifest = Manifest.model_validate(migrate_manifest(data))
        except ValidationError as err:
            problem = err.errors()[0]["msg"]
            raise SsdcompareError(f"{manifest_path} is damaged: {problem}") from None
        return cls(path, manifest)

    def save_manifest(self) -> None:
        write_atomic(self.path / MANIFEST, self.manifest.model_dump_json(indent=2) + "\n")

    def run_dir(self, target: str, job: str, repeat: int) -> Path:
        return self.path / "runs" / target / job / f"r{repeat}"

    def status(self, target: str, job: str, repeat: int) -> RunStatus | None:
        """The recorded outcome of a run, or None if it never finished writing one."""
        path = self.run_dir(target, job, repeat) / STATUS
        try:
            return RunStatus.model_validate_json(path.read_text())
        except (OSError, ValidationError, ValueError):
            return None

    def prepare_run(self, target: str, job: str, repeat: int) -> Path:
        """An empty folder for a run; an earlier unfinished attempt is kept aside, not deleted.

        Raises if the run already finished ok: finished results are never overwritten.
        """
        folder = self.run_dir(target, job, repeat)
        previous = self.status(target, job, repeat)
        if previous is not None and previous.status == "ok":
            raise SsdcompareError(f"{folder} already holds a finished result")
        if folder.exists():
            attempt = 1
            while folder.with_name(f"{folder.name}.attempt-{attempt}").exists():
                attempt += 1
            folder.rename(folder.with_name(f"{folder.name}.attempt-{attempt}"))
        folder.mkdir(parents=True)
        return folder

    def write_status(self, folder: Path, status: RunStatus) -> None:
        write_atomic(folder / STATUS, status.model_dump_json(indent=2) + "\n")

    def statuses(self) -> list[RunStatus]:
        """Every recorded run outcome, in plan order where known."""
        found = []
        for path in sorted((self.path / "runs").glob(f"*/*/r*/{STATUS}")):
            if ".attempt-" in path.parent.name:
                continue
            try:
                found.append(RunStatus.model_validate_json(path.read_text()))
            except (OSError, ValidationError, ValueError):
                continue
        return found
