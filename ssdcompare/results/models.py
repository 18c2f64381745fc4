"""The records a results folder stores, as pydantic models with their format version, and
the migration of older ones.

Every JSON file ssdcompare writes carries `format_version`; files of an older format are read
through the migration functions below, files of a newer one are refused with the fix named
(ssdcompare.results.files).

Format history: 1 (ssdcompare 0.1): only the manifest was versioned; `ioengine` was the first
job's engine; the workload hash covered the jobfile text. 2: every file versioned; `ioengine` is
the engine for workloads that name none; the hash covers fio's options as fio reads them;
target identities and planned hashes are recorded for resuming.
"""

from __future__ import annotations

import dataclasses
import math
from datetime import datetime, timezone
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.check import JobfileError, read_jobfile, workload_hash
from ssdcompare.fio.jobfile import hashed_span, rendered_size
from ssdcompare.fio.verify import VerifyFailure
from ssdcompare.judge.steady import judge_rounds
from ssdcompare.suite.options import OPT_IN
from ssdcompare.suite.pts import RoundGroup
from ssdcompare.suite.workload import MAX_REPEAT, Suite
from ssdcompare.target.devices import Target
from ssdcompare.target.identity import TargetIdentity
from ssdcompare.target.metadata import DeviceInfo, HostInfo

FORMAT_VERSION = 2

# "damaged" is never written: it is how a run whose stored files cannot be used (damaged,
# refused, impossible, not of this sweep) is read, so that it is named, never taken as measured
RunState = Literal["ok", "failed", "interrupted", "skipped", "damaged"]


def now_iso() -> str:
    """The current time as an ISO 8601 string in UTC."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


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
    # the CPUs fio's threads were seen on (the sampler's worker_cpus); empty in older results
    fio_cpus: list[int] = Field(default_factory=list)
    device_unusable: bool = False  # the failure means the next job on this target fails too
    # its fio server could not be reached or went away (ssdcompare.fio.client)
    host_lost: bool = False
    lost_hosts: list[str] = Field(default_factory=list)  # the --hosts names of those servers
    notes: list[str] = Field(default_factory=list)  # what reading fio's output had to work around
    stopped_by: str | None = None  # for an interrupted run: "Ctrl-C", "SIGTERM", ...
    state_step: int | None = None  # the drive-state step (StateRecord.number) before the run
    # data that came back wrong (a failed run): what fio found, where, in its words
    verify_failure: VerifyFailure | None = None


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


def failed_status(
    target: str, job: str, repeat: int, error: str, state: RunState = "damaged"
) -> RunStatus:
    """A run known only by its folder, as a damaged (or failed) run saying why."""
    return RunStatus(status=state, target=target, job=job, repeat=repeat, workload_hash="",
                     error=error)  # fmt: skip


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


class PurgeRecord(BaseModel):
    """How a drive was purged before a PTS test, or why it was not (suite.pts.purge). One
    with an error is a purge that failed: the test did not run, and a resume tries again."""

    model_config = ConfigDict(extra="allow")

    target: str
    purged: bool
    how: str  # "discard", "nvme-format", "nvme-sanitize", or "none"
    detail: str  # in words: what was done ("BLKDISCARD of all 64 GiB"), or why nothing was
    started_at: str | None = None
    seconds: float | None = None
    error: str | None = None


class RoundsRecord(BaseModel):
    """A group of a PTS test on one target (ssdcompare.suite.pts): the tracking variable of
    each round it ran, and whether and where its window was steady."""

    model_config = ConfigDict(extra="allow")

    target: str
    group: str
    track: str | None = None  # the job whose figure decides steady state; None: runs once
    metric: str = "iops"
    rounds: list[float | None] = Field(default_factory=list)  # the tracked figure per round
    attained: bool = False
    steady_after: int | None = None  # rounds run when the window first passed
    window: list[int] = Field(default_factory=list)  # the window's rounds (the last ones run)
    window_mean: float | None = None
    window_range_pct: float | None = None
    window_slope_pct: float | None = None
    slope: float | None = None  # the least-squares line through the window: per round
    intercept: float | None = None  # its value at the window's first round
    done: bool = False  # no more rounds: steady, out of rounds, or a round failed
    error: str | None = None
    # the round that failed and ended the group (its figure None); run again on --resume
    failed_round: int | None = None


def rounds_problem(
    record: RoundsRecord, group: RoundGroup, target: str | None = None
) -> str | None:
    """What makes a group's rounds.json untrustworthy (None: nothing): a figure no round
    gives, more rounds than the group runs, another target, group or tracking job, or a
    judgement (window, its mean, steady or not, done) that the PTS rule does not give from its
    own rounds. The
    rounds before a round without a figure (one that failed) are judged as the record
    judged them then."""
    figures = record.rounds
    if record.group != group.name or target is not None and record.target != target:
        return f"it is the record of {record.target} {record.group}"
    if record.track != group.track or record.metric != group.metric:
        return (f"it tracks {record.track} {record.metric}, and the suite {group.track} "
                f"{group.metric}")  # fmt: skip
    if len(figures) > group.most_rounds:
        return f"it holds {len(figures)} rounds, and the group runs at most {group.most_rounds}"
    if any(f is not None and not (math.isfinite(f) and f >= 0) for f in figures):
        return "it holds a round's figure no round gives (negative, or not a number)"
    missing = next((i for i, f in enumerate(figures) if f is None), len(figures))
    if record.failed_round is not None and (
        record.failed_round != missing + 1 or missing == len(figures)
    ):
        return f"its failed round {record.failed_round} is not its round without a figure"
    if not group.rounds:
        return None
    values = [float(f) for f in figures[:missing] if f is not None]
    verdict = judge_rounds(values, group.window, group.range_pct, group.slope_pct,
                           group.max_rounds)  # fmt: skip
    ended = missing < len(figures)
    said = (record.window, record.attained, record.done)
    rule = (verdict.window if values else [], verdict.attained and not ended,
            (verdict.done if values else False) or ended)  # fmt: skip
    if said != rule:
        return (f"it says window {_rounds_words(said[0])}, steady {said[1]}, done {said[2]}, "
                f"and its rounds give window {_rounds_words(rule[0])}, steady {rule[1]}, "
                f"done {rule[2]} by the PTS rule")  # fmt: skip
    mean = record.window_mean
    if values and (mean is None or not math.isclose(mean, verdict.judged.mean, rel_tol=1e-6)):
        return f"its window's mean {mean} is not the mean of its window's rounds"
    return None


def _rounds_words(numbers: list[int]) -> str:
    return f"{numbers[0]}-{numbers[-1]}" if numbers else "none"


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
    # how a PTS test purges the drives --destroy-data offers (--purge); None: no purge planned
    purge: str | None = None

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


def current_status(data: dict[str, Any]) -> bool:
    """Whether a stored status is in the current format (needs no migrate_status)."""
    return data.get("format_version", 1) == FORMAT_VERSION


def migrate_status(data: dict[str, Any], suite: Suite, jobfile: str | None) -> dict[str, Any]:
    """Bring a format 1 status to format 2: its workload hash is recomputed from the stored
    jobfile (`jobfile`, its text; None when it has none that can be read) the way format 2
    computes it, so old and new results compare as they should."""
    if current_status(data):
        return data
    data = dict(data, format_version=FORMAT_VERSION)
    workload = next((w for w in suite.workloads if w.job_id == data.get("job")), None)
    if jobfile is None:
        return data  # no readable jobfile: keep the recorded hash
    try:
        facts = read_jobfile(jobfile)
    except JobfileError:
        return data
    if workload is not None:
        data["workload_hash"] = workload_hash(facts, hashed_span(workload, rendered_size(facts)))
    return data
