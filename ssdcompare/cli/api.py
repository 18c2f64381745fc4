"""Running a sweep from Python (a notebook, a script) as the command line does, without it.

    import ssdcompare
    run = ssdcompare.run_sweep(["/dev/nvme0n1", "/dev/nvme1n1"], suite="quick", repeat=3)
    run.frame()                       # the results as a pandas frame, as ssdcompare.load gives
    run.report                        # the HTML report written into the results folder

The same checks apply as on the command line: the safety guard, the locks, fio's own reading
of every jobfile. Errors are raised as SsdcompareError with the message the command prints.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Unpack

from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict  # pydantic validates it on Python 3.11

from ssdcompare.errors import SsdcompareError, validation_message
from ssdcompare.results.store import ResultsDir, default_report
from ssdcompare.run import sweep
from ssdcompare.run.ceiling import why_not as ceiling_problem
from ssdcompare.run.plan import PLANNED_CHOICES, Plan, PlanOptions, make_plan, steps_given
from ssdcompare.suite.options import option_names
from ssdcompare.target.guard import Finding
from ssdcompare.units import parse_size

if TYPE_CHECKING:
    import pandas as pd


@dataclass
class SweepRun:
    """A finished, interrupted or failed-in-part sweep: where its results are, and what ran."""

    path: Path
    outcome: sweep.SweepOutcome
    plan: Plan
    overwritten: list[Finding] = field(default_factory=list)  # what --destroy-data allowed
    report: Path | None = None

    @property
    def complete(self) -> bool:
        """Every planned run finished ok (none failed, skipped or left by an interruption);
        for a PTS test, as many rounds as steady state asked for, all ok."""
        if self.plan.suite.pts is not None:
            return not self.outcome.interrupted and all(
                s.status == "ok" for s in self.outcome.statuses)  # fmt: skip
        return self.outcome.count("ok") + self.outcome.skipped_existing == self.plan.runs

    def frame(self) -> pd.DataFrame:
        """The results frame (see ssdcompare.analysis.frame): one row per run and direction."""
        from ssdcompare.analysis.frame import load

        return load(self.path)


class SweepChoices(TypedDict, total=False):
    """What defines a sweep, as `ssdcompare sweep` takes it (all optional)."""

    out: str | Path  # results folder (default: results/<time>-<suite>)
    runtime_s: int  # seconds per job, replacing the suite's
    size: int | str  # span of each target and size of new file targets: "4g" or bytes
    repeat: int  # run the whole suite N times
    read_only: bool  # keep only jobs that neither write nor trim
    # allow writing over partitions and signatures: True for every device, or the devices
    # named ("a:nvme0n1,loop3"; a device on a remote host needs its name)
    destroy_data: bool | str | list[str]
    hosts: str  # fio servers by name, "a=10.0.0.5,b=10.0.0.6:8766" (devices: "a:nvme0n1")
    parallel_hosts: bool  # each job on one device of every host at the same time
    scale: float  # a PTS test's times and size caps multiplied by this, for a first look
    # how a PTS test purges the drives destroy_data offers: "discard" (the default),
    # "nvme-format", "nvme-sanitize" or "none"
    purge: str
    allow_options: str | list[str] | tuple[str, ...]  # opt-in fio options (OPT_IN): "a,b"
    resume: str | Path  # continue this results folder instead of starting one
    precondition: str | list[str] | tuple[str, ...]  # "fill", "workload" or "fill,workload"
    states: str | list[str] | tuple[str, ...]  # drive states, a pass each: "empty,full"
    ceiling: bool  # each job once on a RAM disk first: results near it measure the host


_CHOICES = TypeAdapter(SweepChoices)
_DEVICES = TypeAdapter(str | list[str] | tuple[str, ...] | None)
_SUITE = TypeAdapter(str | None)
_PLANNED = [name for name, _ in PLANNED_CHOICES if name != "suite"]  # suite: its own parameter


def prepare_sweep(
    devices: str | Sequence[str] | None,
    suite: str | None = None,
    command_line: list[str] | None = None,
    **choices: Unpack[SweepChoices],
) -> tuple[Plan, ResultsDir, list[Finding]]:
    """Plan a sweep (or reopen one to resume), pass the safety guard and create its results
    folder: everything before the first fio run. Returns what --destroy-data overrode."""
    _check_types(devices, suite, choices)
    wanted = devices.split(",") if isinstance(devices, str) else devices
    wanted = [d.strip() for d in wanted or [] if d.strip()]
    destroy_data = consent_given(choices.get("destroy_data", False))
    resume = choices.get("resume")
    if resume is not None:
        changed = [name for name in _PLANNED if name in choices] + ["suite"] * (suite is not None)
        if changed:
            raise SsdcompareError(
                f"resume continues a sweep exactly as it was planned; {', '.join(changed)} "
                "would change it. Drop them, or start a new sweep"
            )
        if devices is not None and not wanted:
            raise SsdcompareError("--devices names no device; leave it out to resume all")
        return sweep.reopen(Path(resume), destroy_data=destroy_data, devices=wanted or None)
    if not wanted:
        raise SsdcompareError("say which devices to test: --devices nvme0n1,nvme1n1")
    if choices.get("ceiling"):
        problem = ceiling_problem()
        if problem is not None:
            raise SsdcompareError(problem)
    options = plan_options(choices)
    plan = make_plan(suite or "quick", wanted, options, require_fio=True)
    out = choices.get("out")
    results, findings = sweep.start(
        plan, Path(out) if out is not None else None, destroy_data=destroy_data,
        command_line=command_line, read_only=options.read_only,
    )  # fmt: skip
    return plan, results, findings


def _check_types(
    devices: str | Sequence[str] | None, suite: str | None, choices: SweepChoices
) -> None:
    """Refuse a choice run_sweep does not know, and a value of the wrong type."""
    unknown = sorted(set(choices) - set(SweepChoices.__annotations__))
    if unknown:
        raise SsdcompareError(f"unknown sweep choice(s): {', '.join(unknown)}; known: "
                              f"{', '.join(SweepChoices.__annotations__)}")  # fmt: skip
    try:  # strictly: destroy_data="no" is a string, not consent
        _CHOICES.validate_python(choices, strict=True)
        _DEVICES.validate_python(devices, strict=True)
        _SUITE.validate_python(suite, strict=True)
    except ValidationError as err:
        raise SsdcompareError(f"run_sweep: {validation_message(err)}") from None


def plan_options(choices: SweepChoices) -> PlanOptions:
    """What a sweep is planned with, from the choices as a user gives them (to run_sweep, or
    on the command line to `sweep` and `plan`): a size as "4g" or bytes, fio options,
    preconditioning steps and drive states as "a,b" or a list."""
    size = choices.get("size")
    try:
        span = parse_size(size) if isinstance(size, str) else size
    except ValueError as err:
        raise SsdcompareError(f"size: {err}") from None
    return PlanOptions(
        runtime_s=choices.get("runtime_s"), size_bytes=span, repeat=choices.get("repeat", 1),
        read_only=choices.get("read_only", False),
        allowed_options=option_names(choices.get("allow_options", ())),
        precondition=steps_given(choices.get("precondition")),
        states=steps_given(choices.get("states")), ceiling=choices.get("ceiling", False),
        hosts=choices.get("hosts"), parallel_hosts=choices.get("parallel_hosts", False),
        scale=choices.get("scale"), purge=choices.get("purge"),
    )  # fmt: skip


def consent_given(value: bool | str | list[str]) -> bool | list[str]:
    """destroy_data as the sweep takes it: True/False, or the names given ("a:x,loop3")."""
    if isinstance(value, bool):
        return value
    names = value.split(",") if isinstance(value, str) else value
    names = [n.strip() for n in names if n.strip()]
    if not names:
        raise SsdcompareError("destroy_data names no device; give True, or device names")
    return names


def _seconds(value: object) -> bool:
    """Whether `value` is a time limit: a finite number of seconds, at least 1 (a bool or a
    string of digits is not)."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(value) and value >= 1)  # fmt: skip


def run_sweep(
    devices: str | Sequence[str] | None = None,
    suite: str | None = None,
    *,
    job_timeout_s: float | None = None,
    progress: Callable[[sweep.Progress], None] | None = None,
    report: bool = True,
    **choices: Unpack[SweepChoices],
) -> SweepRun:
    """Run `suite` (default "quick") on every device in turn, like `ssdcompare sweep`, and
    write the report.

    `devices` as on the command line ("nvme0n1,/dev/sdb" or a list); `choices` as in
    SweepChoices (`repeat=3`, `size="10g"`, `resume=path`, ...). With `resume`, the sweep
    continues as it was planned: only `devices` and `destroy_data` may be given besides.
    `job_timeout_s` replaces the time limit per job; `progress` is called before and after
    every run with a sweep.Progress. Ctrl-C stops the sweep cleanly: the returned run says
    `outcome.interrupted`, and `resume=run.path` continues it.
    """
    if job_timeout_s is not None and not _seconds(job_timeout_s):
        raise SsdcompareError(f"job_timeout_s {job_timeout_s!r} is not a time limit; give "
                              "seconds (at least 1), e.g. 600")  # fmt: skip
    if progress is not None and not callable(progress):
        raise SsdcompareError("progress must be a function taking a sweep.Progress")
    if not isinstance(report, bool):  # "no" would be true
        raise SsdcompareError(f"report must be True or False (got {report!r})")
    plan, results, findings = prepare_sweep(
        devices, suite, ["ssdcompare.run_sweep", str(devices)], **choices
    )
    outcome = sweep.run(plan, results, progress=progress, job_timeout_s=job_timeout_s)
    run = SweepRun(path=results.path, outcome=outcome, plan=plan, overwritten=findings)
    if report:
        from ssdcompare.report.build import write_report

        run.report = write_report([results.path], default_report(results.path))
    return run
