"""Running a sweep from Python (a notebook, a script) as the command line does, without it.

    import ssdcompare
    run = ssdcompare.run_sweep(["/dev/nvme0n1", "/dev/nvme1n1"], suite="quick", repeat=3)
    run.frame()                       # the results as a pandas frame, as ssdcompare.load gives
    run.report                        # the HTML report written into the results folder

The same checks apply as on the command line: the safety guard, the locks, fio's own reading
of every jobfile. Errors are raised as SsdcompareError with the message the command prints.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ssdcompare import sweep
from ssdcompare.errors import SsdcompareError
from ssdcompare.guard import Finding
from ssdcompare.plan import Plan, make_plan
from ssdcompare.store import ResultsDir
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
        """Every planned run finished ok (none failed, skipped or left by an interruption)."""
        runs = len(self.plan.jobs) * self.plan.repeat
        return self.outcome.count("ok") + self.outcome.skipped_existing == runs

    def frame(self) -> pd.DataFrame:
        """The results frame (see ssdcompare.frame): one row per run and direction."""
        from ssdcompare.frame import load

        return load(self.path)


def prepare_sweep(
    devices: str | Sequence[str] | None,
    suite: str = "quick",
    *,
    out: str | Path | None = None,
    runtime_s: int | None = None,
    size: int | str | None = None,
    repeat: int = 1,
    read_only: bool = False,
    destroy_data: bool = False,
    allow_options: Collection[str] = (),
    resume: str | Path | None = None,
    command_line: list[str] | None = None,
) -> tuple[Plan, ResultsDir, list[Finding]]:
    """Plan a sweep (or reopen one to resume), pass the safety guard and create its results
    folder: everything before the first fio run. Returns what --destroy-data overrode."""
    wanted = devices.split(",") if isinstance(devices, str) else devices
    wanted = [d.strip() for d in wanted or [] if d.strip()]
    if resume is not None:
        planned = {"out": out, "runtime_s": runtime_s, "size": size, "repeat": repeat != 1,
                   "suite": suite != "quick", "read_only": read_only,
                   "allow_options": allow_options}  # fmt: skip
        changed = [name for name, value in planned.items() if value]
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
    try:
        span = parse_size(size) if isinstance(size, str) else size
    except ValueError as err:
        raise SsdcompareError(f"size: {err}") from None
    plan = make_plan(
        suite, wanted, runtime_s=runtime_s, size_bytes=span, repeat=repeat,
        read_only=read_only, require_fio=True, allowed_options=allow_options,
    )  # fmt: skip
    results, findings = sweep.start(
        plan, Path(out) if out is not None else None, destroy_data=destroy_data,
        command_line=command_line, read_only=read_only,
    )  # fmt: skip
    return plan, results, findings


def run_sweep(
    devices: str | Sequence[str] | None = None,
    suite: str = "quick",
    *,
    out: str | Path | None = None,
    runtime_s: int | None = None,
    size: int | str | None = None,
    repeat: int = 1,
    read_only: bool = False,
    destroy_data: bool = False,
    allow_options: Collection[str] = (),
    job_timeout_s: float | None = None,
    resume: str | Path | None = None,
    progress: Callable[[sweep.Progress], None] | None = None,
    report: bool = True,
) -> SweepRun:
    """Run `suite` on every device in turn, like `ssdcompare sweep`, and write the report.

    `devices` as on the command line ("nvme0n1,/dev/sdb" or a list). `size` is the span of
    each target and the size of new file targets ("4g" or bytes). `resume` continues an
    earlier results folder instead of starting one (then only `devices`, `destroy_data`,
    `job_timeout_s`, `progress` and `report` apply). `progress` is called before and after
    every run with a sweep.Progress. Ctrl-C stops the sweep cleanly: the returned run says
    `outcome.interrupted`, and `resume=run.path` continues it.
    """
    plan, results, findings = prepare_sweep(
        devices, suite, out=out, runtime_s=runtime_s, size=size, repeat=repeat,
        read_only=read_only, destroy_data=destroy_data, allow_options=allow_options,
        resume=resume, command_line=["ssdcompare.run_sweep", str(devices)],
    )  # fmt: skip
    outcome = sweep.run(plan, results, progress=progress, job_timeout_s=job_timeout_s)
    run = SweepRun(path=results.path, outcome=outcome, plan=plan, overwritten=findings)
    if report:
        from ssdcompare.report import write_report

        run.report = write_report([results.path], results.path / "report.html")
    return run
