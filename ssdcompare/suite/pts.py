"""The structure of a test of SNIA's Solid State Storage Performance Test Specification (PTS)
in a suite file: its `pts:` block, and how `--scale` shortens it for a first look.

A PTS test runs its jobs in groups. Each group runs as rounds: every job of the group once,
back to back in one fio process (the PTS allows no idle time between them: an idle drive
cleans up and recovers, which is what some tests measure on purpose), and again, until the
tracking variable (one job's IOPS, bandwidth or mean latency) is steady by the PTS rule
(ssdcompare.judge.steady: a window of rounds within a range and a slope excursion) or the
rounds run out. A group without a tracking variable runs once: a sequence of jobs such as
the write saturation test's long run, or cross-stimulus recovery's three segments.

A scaled run (`--scale 0.01`) keeps the structure (the jobs, their order, the window, the
rules, the most rounds, the bytes of a size-capped job) and multiplies every time by the
factor: each job's runtime and ramp, the idle time of bursts. It is a first look at a drive,
not a PTS result: every result and the report say it was scaled, and by how much.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ssdcompare.judge.steady import MAX_ROUNDS, RANGE_PCT, SLOPE_PCT, WINDOW

PtsTest = Literal["iops", "throughput", "latency", "wsat", "hir", "xsr", "dirth"]
PTS_TESTS: tuple[str, ...] = PtsTest.__args__  # type: ignore[attr-defined]
# what decides steady state: a job's IOPS, bandwidth (reads and writes together) or mean latency
Metric = Literal["iops", "bw", "lat_mean"]
METRIC_WORDS = {"iops": "IOPS", "bw": "bandwidth", "lat_mean": "mean latency"}
# the smallest scale: a 24-hour test then runs under 9 s (each job at least 0.1 s)
MIN_SCALE = 0.0001
# the finest time series a scaled test logs (ms): finer would log more than it can show
SCALED_LOG_MS = 10


class RoundGroup(BaseModel):
    """Jobs that run as rounds (or once), with what decides when they are steady."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    # the jobs' ids, in the order they run; None: every job of the suite no other group names
    jobs: list[str] | None = None
    track: str | None = Field(None, description="The job whose metric decides steady state")
    metric: Metric = "iops"
    window: int = Field(WINDOW, ge=2, le=MAX_ROUNDS)
    range_pct: float = Field(RANGE_PCT, gt=0, le=100)
    slope_pct: float = Field(SLOPE_PCT, gt=0, le=100)
    max_rounds: int = Field(MAX_ROUNDS, ge=1, le=100)

    @property
    def rounds(self) -> bool:
        """True when the group runs in rounds until steady (it has a tracking variable)."""
        return self.track is not None

    @property
    def most_rounds(self) -> int:
        return self.max_rounds if self.rounds else 1


class PtsSpec(BaseModel):
    """A suite's `pts:` block: which PTS test it is and how its jobs run."""

    model_config = ConfigDict(extra="forbid")

    test: PtsTest
    groups: list[RoundGroup] = Field(min_length=1)
    # purge the drive first when the sweep was given --destroy-data for it
    purge: bool = True

    @field_validator("groups")
    @classmethod
    def _names_once(cls, groups: list[RoundGroup]) -> list[RoundGroup]:
        names = [g.name for g in groups]
        if len(set(names)) != len(names):
            raise ValueError("give each group its own name")
        if sum(g.jobs is None for g in groups) > 1:
            raise ValueError("at most one group takes the jobs no other group names")
        return groups

    def group_of(self, job_id: str) -> RoundGroup | None:
        """The group a job belongs to (by its id)."""
        named = next((g for g in self.groups if g.jobs is not None and job_id in g.jobs), None)
        return named or next((g for g in self.groups if g.jobs is None), None)

    def problems(self, ids: list[str]) -> list[str]:
        """What does not fit a suite with jobs `ids` (in order): a group naming a job the
        suite lacks, a job in two groups or in none, a tracking job outside its group."""
        found = []
        seen: dict[str, str] = {}
        for group in self.groups:
            for job in group.jobs or []:
                if job not in ids:
                    found.append(f"pts.groups {group.name!r}: no job {job!r} in the suite")
                elif job in seen:
                    found.append(f"pts.groups: job {job!r} is in {seen[job]!r} and "
                                 f"{group.name!r}")  # fmt: skip
                seen.setdefault(job, group.name)
        loose = [job for job in ids if self.group_of(job) is None]
        if loose:
            found.append(f"pts: jobs in no group: {', '.join(loose)} (name them in a group, or "
                         "leave one group's jobs out to take them)")  # fmt: skip
        for group in self.groups:
            if group.track is not None and group.track not in self.job_ids(group, ids):
                found.append(f"pts.groups {group.name!r}: the tracking job {group.track!r} is "
                             "not one of the group's jobs")  # fmt: skip
        return found

    def job_ids(self, group: RoundGroup, ids: list[str]) -> list[str]:
        """The ids of a group's jobs, in the order the suite has them."""
        return [job for job in ids if self.group_of(job) is group]


def scaled_fields(workload: Any, factor: float, shortest_s: float) -> dict[str, Any]:
    """A workload's times multiplied by `factor` (--scale), as field updates: runtime to whole
    milliseconds, at least `shortest_s`; ramp to whole seconds; idle time to whole
    microseconds and I/O time between idle times to whole milliseconds; and a time series as
    much finer (at least SCALED_LOG_MS). A size cap stays: what a test writes sets the drive's
    state (the write saturation test's four times its capacity), so a scaled test ends at its
    cap or its shortened runtime, whichever comes first."""
    update: dict[str, Any] = {
        "runtime_s": max(shortest_s, round(workload.runtime_s * factor, 3)),
        "ramp_s": int(workload.ramp_s * factor),
    }
    if workload.thinktime_us is not None:
        update["thinktime_us"] = max(1, round(workload.thinktime_us * factor))
    if workload.thinktime_iotime_s is not None:
        update["thinktime_iotime_s"] = max(0.001, round(workload.thinktime_iotime_s * factor, 3))
    if factor < 1:  # a finer time series, so that a scaled burst still shows
        update["log_ms"] = max(SCALED_LOG_MS, round(workload.log_ms * factor))
    return update


def scale_words(scale: float | None) -> str | None:
    """How a scaled run was shortened, in words; None when it was not."""
    if scale is None:
        return None
    return (f"scaled by {scale:g}: every runtime and idle time is {scale:g} of the test's "
            "(its size caps stay whole), a first look and not a PTS result")  # fmt: skip
