"""The results folder of a sweep: every name in it, and ResultsDir, the one owner of them.

Layout (format_version 2)::

    manifest.json                       what, where, on what, how (written at start)
    manifest.sig                        the manifest signed with its user's key (userkey)
    .lock                               held by the sweep writing here (see target.locks)
    report.html                         the report a sweep writes at its end
    ceiling-ram-disk.json               the RAM disk made for --ceiling (run.ramdisk)
    runs/<target>/<job id>/r<repeat>/
        jobfile.fio                     the exact jobfile fio ran
        jobfile.<host>.fio              a group across hosts: its part for each server
        fio.json                        fio's --output, verbatim (json+)
        fio.stdout.txt, fio.stderr.txt  what fio printed besides
        cpu.json                        the CPU samples taken while it ran
        probes.json                     what the probes read before and after it
        status.json                     written last: ok / failed / interrupted / skipped
    runs/<target>/<job id>/r<repeat>.attempt-<n>/   earlier unfinished attempts, kept
    precondition/<target>/fill/, <job>/round-<k>/, states/<NNNN>-<state>/
                                        each with its jobfile, fio's output and probes.json
    ceiling/<job>/                      a job's run on a RAM disk, its files named as a run's
    rounds/<target>/purge.json          how the drive was purged before a PTS test, or why not
    rounds/<target>/<group>/            a PTS test's group (suite.pts): rounds.json, and
        r<NNNN>/                        each round's jobfile and fio's whole output, from
                                        which each job's run under runs/ was cut

Every file is read through `ResultsFiles` and written through `write_atomic`
(ssdcompare.results.files); the records are the models of ssdcompare.results.models. A run
whose status is "ok" is never overwritten.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from ssdcompare.errors import NewerFormatError, SsdcompareError, stored_validation_message
from ssdcompare.fio.logs import log_files
from ssdcompare.fio.result.models import FioOutput, FioOutputError
from ssdcompare.fio.result.plausibility import output_problem
from ssdcompare.fio.rounds import tracked_figure
from ssdcompare.judge.cpu import CpuTrace, trace_from
from ssdcompare.pathwalk import untrusted_ancestor, walk, where_others_control
from ssdcompare.results.files import ResultsFiles, StoredFileError, WriteError, write_atomic
from ssdcompare.results.models import (
    FillRecord,
    Manifest,
    PurgeRecord,
    RoundsRecord,
    RunStatus,
    StateRecord,
    SteadyRecord,
    current_status,
    failed_status,
    migrate_manifest,
    migrate_status,
    rounds_problem,
)
from ssdcompare.suite.options import TIMESERIES_PREFIX
from ssdcompare.suite.pts import RoundGroup
from ssdcompare.target.devices import in_device_tree
from ssdcompare.userkey import signature, signed_by_me

MANIFEST = "manifest.json"
SIGNATURE = "manifest.sig"  # the manifest signed with the key of the user who ran the sweep
REPORT = "report.html"  # the report a sweep writes at its end, and `report` by default
STATUS = "status.json"
JOBFILE = "jobfile.fio"
FIO_JSON = "fio.json"
CPU_JSON = "cpu.json"
RUNS = "runs"  # runs/<target>/<job>/r<repeat>/
PRECONDITION = "precondition"  # precondition/<target>/: what put each drive in its state
CEILING = "ceiling"  # the jobs' runs on a RAM disk (sweep --ceiling)
CEILING_RAM_DISK = "ceiling-ram-disk.json"  # the RAM disk made for them (ssdcompare.run.ramdisk)
PROBES_JSON = (
    "probes.json"  # what the probes read before and after the run (ssdcompare.target.probes)
)
STDOUT = "fio.stdout.txt"
STDERR = "fio.stderr.txt"
# held by the sweep writing in the folder; ssdcompare.target.locks (an earlier stage, which
# cannot import this) names it so too
LOCK = ".lock"
FILL = "fill"  # precondition/<target>/fill/: the fill's jobfile, output and record
STATES = "states"  # precondition/<target>/states/<NNNN>-<state>/: the drive-state steps
FILL_RECORD = "fill.json"
STATE_RECORD = "state.json"
STEADY_RECORD = "steady.json"
ROUNDS = "rounds"  # rounds/<target>/<group>/: a PTS test's rounds (ssdcompare.run.rounds)
ROUNDS_RECORD = "rounds.json"
PURGE_RECORD = "purge.json"  # rounds/<target>/purge.json: the purge before a PTS test

_Record = TypeVar("_Record", FillRecord, SteadyRecord, StateRecord, RoundsRecord, PurgeRecord)


def default_report(folder: Path) -> Path:
    """Where a results folder's report goes unless told otherwise (a sweep's at its end too)."""
    return folder / REPORT


def host_jobfile(folder: Path, host: str) -> Path:
    """Where a run of a group that spans hosts keeps the part of its jobfile for `host`."""
    return folder / f"jobfile.{host}.fio"


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
    return [item if isinstance(item, Path) else Path(item) for item in items]


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
        return self.path / RUNS / target / job / f"r{repeat}"

    def status(
        self, target: str, job: str, repeat: int, folder: Path | None = None
    ) -> RunStatus | None:
        """The recorded outcome of the run in runs/<target>/<job>/r<repeat> (`folder`, when
        given, is that folder); None when it never finished writing one. A damaged one, or
        one that names another run than its folder, is a damaged run."""
        folder = folder or self.run_dir(target, job, repeat)

        def failed(error: str) -> RunStatus:
            return failed_status(target, job, repeat, error)

        try:
            data = self.files.read_object(folder / STATUS, "status", "a run status")
            status = RunStatus.model_validate(self._migrated(data, folder))
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

    def _migrated(self, data: dict[str, Any], folder: Path) -> dict[str, Any]:
        """A stored status in the current format (see migrate_status): the run's jobfile is
        read only for a status of an older one."""
        if current_status(data):
            return data
        try:
            jobfile: str | None = self.files.read_text(folder / JOBFILE, "jobfile")
        except StoredFileError:
            jobfile = None  # none that can be read: the recorded hash is kept
        return migrate_status(data, self.manifest.suite, jobfile)

    def prepare_run(self, target: str, job: str, repeat: int, again: bool = False) -> Path:
        """An empty folder for a run; an earlier unfinished attempt is kept aside, not deleted.

        Raises if the run already finished ok: finished results are never overwritten. With
        `again` (a job's part of a PTS round run again: the round's record never took it in)
        a finished one is kept aside as an earlier attempt too.
        """
        folder = self.run_dir(target, job, repeat)
        previous = self.status(target, job, repeat)
        if previous is not None and self.finished(previous) and not again:
            raise SsdcompareError(f"{folder} already holds a finished result")
        return self._fresh(folder)

    def prepare_round(self, target: str, group: str, number: int) -> Path:
        """An empty folder for round `number` of a PTS group (round_folder); an earlier
        attempt cut short is kept aside, as a run's is."""
        return self._fresh(self.round_folder(target, group, number))

    def _fresh(self, folder: Path) -> Path:
        """`folder` made empty: whatever stands there (an earlier attempt, or a link in its
        place) moved aside to `<name>.attempt-<n>`, never followed or deleted."""
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
        """What the probes read around a run, a fill or a round (ssdcompare.target.probes
        .record), in its folder."""
        write_atomic(folder / PROBES_JSON, json.dumps(readings, separators=(",", ":")) + "\n")

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
                found.append(failed_status(target, job, repeat, entry))
            elif entry.is_symlink():
                error = str(StoredFileError(relative, "is a symbolic link", folder=True))
                found.append(failed_status(target, job, repeat, error))
            elif not self.planned(target, job, repeat):
                found.append(failed_status(target, job, repeat, (
                    f"{relative} is not part of this sweep's plan: {MANIFEST} names no such "
                    "target, job or repeat, so it was not made by this sweep (copied in from "
                    "another?); left out of the figures"
                )))  # fmt: skip
            else:
                status = self.status(target, job, repeat, Path(entry.path))
                found.append(status or failed_status(target, job, repeat, (
                    f"{STATUS} is missing: the run did not finish (or a sweep is running it "
                    "now); sweep --resume runs it again"
                ), "failed"))  # fmt: skip
        return found

    def planned(self, target: str, job: str, repeat: int) -> bool:
        """Whether the sweep's plan (its manifest) has this run: a known target and job, and
        a repeat it asked for (a round, for a PTS test)."""
        if self._plan is None:
            self._plan = ({t.name for t in self.manifest.targets},
                          {w.job_id for w in self.manifest.suite.workloads})  # fmt: skip
        targets, jobs = self._plan
        return target in targets and job in jobs and 1 <= repeat <= self._repeats(job)

    def _repeats(self, job: str) -> int:
        """The repeats a job may have: the sweep's, or for a PTS test its group's rounds."""
        pts = self.manifest.suite.pts
        group = pts.group_of(job) if pts is not None else None
        return group.most_rounds if group is not None else self.manifest.repeat

    def _run_folders(self) -> Iterable[tuple[str, str, int, os.DirEntry[str] | str]]:
        """(target, job, repeat, entry) of every runs/<target>/<job>/r<N> folder (earlier
        attempts and other names left out), without following a link. Where runs/<target>
        or runs/<target>/<job> is a symbolic link or no folder, (target, job, repeat, why)
        for each run the plan has there instead."""
        for target in self.files.entries(self.path / RUNS):
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
        folder = self.path / PRECONDITION / target / name
        self.files.check_way(folder / STATE_RECORD)
        return folder

    def fill_dir(self, target: str) -> Path:
        """Where a target's fill keeps its jobfile, fio's output and its record."""
        return self.precondition_dir(target, FILL)

    def round_dir(self, target: str, job: str, number: int) -> Path:
        """Where round `number` of a job's rounds until steady (--precondition workload)
        keeps its jobfile and fio's output."""
        return self.precondition_dir(target, job) / f"round-{number}"

    def fill_record(self, target: str) -> FillRecord | None:
        return self._record(self.fill_dir(target) / FILL_RECORD, FillRecord)

    def steady_record(self, target: str, job: str) -> SteadyRecord | None:
        return self._record(self.precondition_dir(target, job) / STEADY_RECORD, SteadyRecord)

    def save_fill_record(self, record: FillRecord) -> None:
        path = self.fill_dir(record.target) / FILL_RECORD
        write_atomic(path, record.model_dump_json(indent=2) + "\n")

    def save_steady_record(self, record: SteadyRecord) -> None:
        path = self.precondition_dir(record.target, record.job) / STEADY_RECORD
        write_atomic(path, record.model_dump_json(indent=2) + "\n")

    def rounds_dir(self, target: str, group: str) -> Path:
        """Where a PTS test's group keeps its record and rounds (refused when a folder on
        its way is a link)."""
        folder = self.path / ROUNDS / target / group
        self.files.check_way(folder / ROUNDS_RECORD)
        return folder

    def purge_record(self, target: str) -> PurgeRecord | None:
        """How the target was purged before a PTS test (None: not yet decided, or its
        record cannot be read: purge_reading says why)."""
        return self.purge_reading(target)[0]

    def purge_reading(self, target: str) -> tuple[PurgeRecord | None, str | None]:
        """The target's purge record, and why it cannot be read when one is there but is
        refused or damaged (a link, not a regular file, too large, not JSON, not a purge
        record); (None, None) when there is none."""
        path = self.path / ROUNDS / target / PURGE_RECORD
        self.files.check_way(path)
        return self._reading(path, PurgeRecord, "a purge record")

    def save_purge_record(self, record: PurgeRecord) -> None:
        path = self.path / ROUNDS / record.target / PURGE_RECORD
        self.files.check_way(path)
        write_atomic(path, record.model_dump_json(indent=2) + "\n")

    def round_folder(self, target: str, group: str, number: int) -> Path:
        """Where round `number` of a group keeps its jobfile and fio's whole output."""
        return self.rounds_dir(target, group) / f"r{number:04d}"

    def rounds_record(self, target: str, group: str) -> RoundsRecord | None:
        return self._record(self.rounds_dir(target, group) / ROUNDS_RECORD, RoundsRecord)

    def read_rounds_record(
        self, target: str, group: str
    ) -> tuple[RoundsRecord | None, str | None]:
        """A group's record as a reader takes it: (the record, None); (None, None) when there
        is none; (None, why) when it is refused or damaged, naming the file."""
        try:
            path = self.rounds_dir(target, group) / ROUNDS_RECORD
        except StoredFileError as err:  # a link on its way
            return None, str(err)
        return self._reading(path, RoundsRecord, "a PTS group's record")

    def rounds_record_problem(
        self, target: str, group: RoundGroup, record: RoundsRecord
    ) -> str | None:
        """Why a reader would not take a group's record (None: it would): at odds with the
        group or with itself (results.models.rounds_problem), or a figure that is not the
        tracking job's in its round's fio output."""
        problem = rounds_problem(record, group, target)
        if problem is not None:
            return problem
        for number, figure in enumerate(record.rounds, 1):
            if figure is None:
                continue
            try:
                path = self.round_folder(target, group.name, number) / FIO_JSON
                found = tracked_figure(self.files.fio_output(path), group)
            except (StoredFileError, FioOutputError) as err:
                return f"round {number}'s fio output cannot be read ({err})"
            if found is None or not math.isclose(found, figure, rel_tol=1e-6):
                return f"round {number}'s figure {figure:g} is not its fio output's ({found})"
        return None

    def set_aside_rounds_record(self, target: str, group: str) -> None:
        """A group's record that cannot be trusted, kept aside as rounds.json.damaged-<n>:
        the rounds are recorded again from their stored runs."""
        path = self.rounds_dir(target, group) / ROUNDS_RECORD
        number = 1
        while os.path.lexists(path.with_name(f"{ROUNDS_RECORD}.damaged-{number}")):
            number += 1
        try:
            path.rename(path.with_name(f"{ROUNDS_RECORD}.damaged-{number}"))
        except OSError as err:
            raise WriteError(f"cannot set {path} aside: {err.strerror or err}") from None

    def save_rounds_record(self, record: RoundsRecord) -> None:
        path = self.rounds_dir(record.target, record.group) / ROUNDS_RECORD
        write_atomic(path, record.model_dump_json(indent=2) + "\n")

    def state_dir(self, target: str, number: int, state: str) -> Path:
        """Where one drive-state step keeps its record (and the fill its jobfile and output)."""
        return self.precondition_dir(target, STATES) / f"{number:04d}-{state}"

    def state_records(self, target: str) -> list[StateRecord]:
        """A target's drive-state steps, in the order they ran (damaged records left out)."""
        folder = self.precondition_dir(target, STATES)
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
        return self._reading(path, model, "a preconditioning record")[0]

    def _reading(
        self, path: Path, model: type[_Record], what: str
    ) -> tuple[_Record | None, str | None]:
        """A stored record: (it, None); (None, None) when there is none; (None, why) when it
        is refused (a link, not a regular file, too large), not JSON or not `what`."""
        try:
            return model.model_validate(self.files.read_object(path, "record", what)), None
        except StoredFileError as err:
            return None, None if err.missing else str(err)
        except ValidationError as err:
            problem = stored_validation_message(err, model)
            return None, f"{self.files.name(path)} is not {what} ({problem})"

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
        if output_problem(output) is not None:
            return None  # impossible figures are no ceiling either
        return output.ok_iops
