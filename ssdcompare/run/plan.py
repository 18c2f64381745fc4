"""A plan: the suite's jobs rendered for every target, with an estimate and fio's verdict."""

from __future__ import annotations

import tempfile
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from ssdcompare.errors import SsdcompareError
from ssdcompare.fio import binary as fio_mod
from ssdcompare.fio.jobfile import RenderedJob, fill_span, render, span, span_is_cut, span_words
from ssdcompare.judge.stats import MIN_REPEATS
from ssdcompare.judge.steady import FILL_RATE_WORST, MAX_ROUNDS
from ssdcompare.run.purge import planned_purge
from ssdcompare.run.support import job_problems
from ssdcompare.suite.files import load_suite
from ssdcompare.suite.options import OPT_IN, canonical, option_names
from ssdcompare.suite.pts import MIN_SCALE
from ssdcompare.suite.verifying import overwritten_problem
from ssdcompare.suite.workload import (
    DRIVE_STATES,
    MAX_REPEAT,
    MAX_RUNTIME_S,
    Suite,
    runtime_problem,
)
from ssdcompare.target.devices import Target, discards, resolve_targets
from ssdcompare.target.hosts import Host, parse_hosts
from ssdcompare.units import parse_size

# fio start-up, engine set-up and writing the JSON cost about a second per job on a quiet
# machine; laying out a new test file costs more and is not counted here.
JOB_OVERHEAD_S = 1.0
# A PTS round's jobs follow each other in one fio run, and fio's main loop (which polls every
# 100 ms) starts each job about 0.25-0.37 s after the one before ended: measured, a round of
# pts-iops at --scale 0.0001 took 30.1 s where its 56 jobs ran 9.3 s, one of pts-latency 5.0 s
# where its 9 jobs ran 1.6 s. Beside a job of a minute it is nothing; beside a scaled job of
# 0.1 s it is most of the round. The estimate takes the most measured, as it is an upper bound.
ROUND_JOB_PAUSE_S = 0.37
PRECONDITION_STEPS = ("fill", "workload")  # in the order they run (ssdcompare.run.precondition)


# What a sweep is planned with: --resume takes all of it from the manifest, and refuses it given
# again. Each as (name, flag): the name is run_sweep's choice and the command line's parameter.
PLANNED_CHOICES = (
    ("suite", "--suite"), ("runtime_s", "--runtime"), ("size", "--size"),
    ("repeat", "--repeat"), ("read_only", "--read-only"), ("out", "--out"),
    ("allow_options", "--allow-option"), ("precondition", "--precondition"),
    ("states", "--states"), ("ceiling", "--ceiling"), ("hosts", "--hosts"),
    ("parallel_hosts", "--parallel-hosts"), ("scale", "--scale"), ("purge", "--purge"),
)  # fmt: skip


@dataclass
class Plan:
    """Everything a sweep will run, in order: targets outermost, then workloads."""

    suite: Suite
    targets: list[Target]
    jobs: list[RenderedJob]
    repeat: int = 1
    fio: fio_mod.FioInfo | None = None
    warnings: list[str] = field(default_factory=list)
    default_ioengine: str = "io_uring"  # for workloads that do not name an engine
    allowed_options: list[str] = field(default_factory=list)  # accepted OPT_IN fio options
    read_only: bool = False
    precondition: list[str] = field(default_factory=list)  # PRECONDITION_STEPS chosen
    ceiling: bool = False  # each job once on a RAM disk first (ssdcompare.run.ceiling)
    parallel_hosts: bool = False  # each job on one device of every host at the same time
    purge: str | None = None  # how a PTS test purges its drives first (run.purge); None: no purge
    # the devices --destroy-data offers, by name (set as the sweep starts): those a PTS test purges
    offered: list[str] = field(default_factory=list)

    @property
    def states(self) -> list[str]:
        """The drive states the jobs run in, a pass each (empty: not a --states sweep)."""
        return list(self.suite.states) if self.suite.expanded else []

    @property
    def written_targets(self) -> list[Target]:
        """The targets some rendered jobfile writes to (read from the jobfiles themselves);
        every target when preconditioning or putting drives in states, which writes."""
        if self.precondition or self.states:
            return list(self.targets)
        return [t for t in self.targets if any(j.writes for j in self.jobs_for(t))]

    @property
    def modified_targets(self) -> list[Target]:
        """Targets fio may change: those written to, and new files fio creates. fio runs with
        --readonly on every other target."""
        written = self.written_targets
        new_files = [t for t in self.targets
                     if any(p.kind == "file" and not p.exists for p in t.parts)]  # fmt: skip
        return [t for t in self.targets if t in written or t in new_files]

    @property
    def runs(self) -> int:
        """How many fio runs the sweep measures: every job, every repeat."""
        return len(self.jobs) * self.repeat

    @property
    def estimated_s(self) -> float:
        """Measuring time, plus preconditioning at its worst (the most rounds, a slow fill)."""
        measuring = self.repeat * sum(j.workload.duration_s + JOB_OVERHEAD_S for j in self.jobs)
        if self.suite.pts is not None:
            measuring = self.rounds_s
        return measuring + self.precondition_s + self.ceiling_s

    @property
    def rounds_s(self) -> float:
        """A PTS test's rounds at their most, on every target: each round one fio run (its
        start, JOB_OVERHEAD_S) of the group's jobs, each followed by fio's pause before the
        next (ROUND_JOB_PAUSE_S); a group without a tracking variable runs once."""
        pts = self.suite.pts
        if pts is None:
            return 0.0
        seconds = 0.0
        for target in self.targets:
            jobs = self.jobs_for(target)
            for group in pts.groups:
                mine = [j for j in jobs if pts.group_of(j.job_id) is group]
                if mine:
                    one = JOB_OVERHEAD_S + sum(j.workload.duration_s + ROUND_JOB_PAUSE_S
                                               for j in mine)  # fmt: skip
                    seconds += group.most_rounds * one
        return seconds

    @property
    def ceiling_s(self) -> float:
        """Each job that only reads once on the RAM disk (--ceiling; see ceiling.has_ceiling)."""
        if not self.ceiling or not self.targets:
            return 0.0
        return sum(j.workload.duration_s + JOB_OVERHEAD_S for j in self.jobs_for(self.targets[0])
                   if not j.writes)  # fmt: skip

    @property
    def precondition_s(self) -> float:
        """The longest preconditioning can take."""
        steps = [*self.precondition, *(["fill"] if "full" in self.states else [])]
        return sum(worst_case_s(steps, self.jobs_for(t)) for t in self.targets)

    @property
    def devices(self) -> list[Target]:
        """Every device the sweep measures: the targets, a group's members in its place."""
        return [part for target in self.targets for part in target.parts]

    def jobs_for(self, target: Target) -> list[RenderedJob]:
        # by name: two hosts' /dev/sdb share a path, never a name
        return [j for j in self.jobs if j.target.name == target.name]


@dataclass(frozen=True)
class Rejection:
    """A rendered jobfile that the installed fio would not run, or this machine could not
    (`by_fio` False: ssdcompare.run.support)."""

    job: RenderedJob
    reason: str
    by_fio: bool = True

    @property
    def said(self) -> str:
        """Who rejects which jobfile, as a line's start: "fio rejects loop0/randread.fio"."""
        who = "fio rejects" if self.by_fio else "this machine cannot run"
        return f"{who} {self.job.target.name}/{self.job.file_name}"


@dataclass(frozen=True)
class PlanOptions:
    """How a suite is planned besides which suite on which devices: what `plan` and `sweep`
    take alike (PLANNED_CHOICES names them as users give them). Each default is what a sweep
    does when the option is not given."""

    runtime_s: int | None = None  # every workload's runtime, replacing the suite's
    size_bytes: int | None = None  # the span of each target; the size of files fio creates
    repeat: int = 1  # the whole suite this many times
    read_only: bool = False  # only the jobs that neither write nor trim
    allowed_options: Collection[str] = ()  # fio options that need accepting (OPT_IN)
    precondition: Collection[str] | None = None  # steps replacing the suite's; None: its own
    states: Collection[str] | None = None  # drive states replacing the suite's; None: its own
    ceiling: bool = False  # each job once on a RAM disk first (ssdcompare.run.ceiling)
    hosts: str | dict[str, Host] | None = None  # fio servers by name (target.hosts)
    parallel_hosts: bool = False  # each job on one device of every host at the same time
    scale: float | None = None  # a PTS test's times and caps multiplied by this (suite.pts)
    purge: str | None = None  # how a PTS test purges the drives offered (run.purge.PURGE_METHODS)


def make_plan(
    suite: str | Suite,
    devices: str | list[str] | list[Target],
    options: PlanOptions = PlanOptions(),
    fio_bin: str | None = None,
    require_fio: bool = False,
) -> Plan:
    """Load a suite, resolve the devices and render every jobfile.

    Of the `options`: `hosts` (`a=10.0.0.5,b=10.0.0.6:8766`, see ssdcompare.target.hosts)
    lets devices name a host (`a:nvme0n1`): their jobs run on that host's fio server.
    `parallel_hosts` runs each job on one device of every host at the same time (see
    check_parallel).

    `precondition` replaces the suite's own preconditioning steps (None keeps them, unless
    `read_only`); `states` likewise replaces the suite's drive states (each a pass over the
    jobs: "empty", "full"). `runtime_s` overrides every workload's runtime; `size_bytes` is
    the span of each target to use (and the size of file targets fio has to create). Without fio
    installed the plan is still made (with io_uring as the engine) unless `require_fio` is
    set. `allowed_options` accepts fio options that make results harder to read (see
    ssdcompare.suite.options.OPT_IN).
    """
    _check_counts(options)
    allowed = check_allowed_options(options.allowed_options)
    loaded = load_suite(suite) if isinstance(suite, str) else suite
    steps, chosen, replaced = _steps_and_states(loaded, options)
    loaded = _as_asked(loaded, options)
    targets = _targets(devices, options)
    loaded = _as_pts_runs(loaded, options, targets, steps, chosen)
    _check_hosted(targets, steps, chosen, options.ceiling)
    if options.parallel_hosts:
        check_parallel(targets)
    _check_files_for_reading(targets, options.read_only, options.size_bytes)
    _check_discards(targets, chosen)
    loaded = loaded.in_states(chosen)
    warnings: list[str] = []
    fio_info, engine = _fio_and_engine(fio_bin, require_fio, warnings)
    jobs = [
        render(workload, target, loaded.name, engine, allowed, options.read_only)
        for target in targets
        for workload in loaded.workloads
    ]
    warnings += replaced + _suite_warnings(loaded, targets, jobs, options.size_bytes, allowed)
    warnings += _repeat_warnings(len(targets), options.repeat)
    return Plan(
        suite=loaded, targets=targets, jobs=jobs, repeat=options.repeat, fio=fio_info,
        warnings=warnings, default_ioengine=engine, allowed_options=allowed,
        read_only=options.read_only, precondition=steps, ceiling=options.ceiling,
        parallel_hosts=options.parallel_hosts, purge=planned_purge(loaded, options.purge, targets),
    )  # fmt: skip


def _as_pts_runs(
    suite: Suite, options: PlanOptions, targets: list[Target], steps: list[str],
    states: list[str],
) -> Suite:  # fmt: skip
    """A PTS test scaled as asked (--scale), and refused where the sweep's other choices
    would break its structure: it runs round by round on one device at a time."""
    if suite.pts is None:
        if options.scale is not None:
            raise SsdcompareError("--scale shortens a PTS test (the pts-* suites); give other "
                                  "suites shorter jobs with --runtime")  # fmt: skip
        return suite
    clashes = [flag for flag, given in (
        ("--repeat", options.repeat > 1), ("--read-only", options.read_only),
        ("--states", bool(states)), ("--precondition workload", "workload" in steps),
        ("--precondition", options.precondition is not None and "workload" not in steps),
        ("--runtime", options.runtime_s is not None),
        ("--ceiling", options.ceiling), ("--parallel-hosts", options.parallel_hosts),
        ("a group of devices", any(t.members for t in targets))) if given]  # fmt: skip
    if clashes:
        # its times are the specification's, shortened only as a whole (and said so)
        shorter = (" (--scale shortens every time of the test, and the report says it did)"
                   if "--runtime" in clashes else "")  # fmt: skip
        raise SsdcompareError(
            f"{suite.name} is a PTS test: it runs its own rounds until steady, writing, on one "
            f"device at a time, prepared as the test prescribes; drop {' and '.join(clashes)}"
            + shorter
        )
    if options.scale is not None and not MIN_SCALE <= options.scale <= 1:
        raise SsdcompareError(f"--scale {options.scale:g}: give a factor from {MIN_SCALE:g} "
                              "(a ten-thousandth of every time) to 1 (the test as "
                              "written)")  # fmt: skip
    return suite.scaled(options.scale)


def _check_counts(options: PlanOptions) -> None:
    """Refuse a number of repeats or a runtime out of bounds."""
    repeat, runtime_s = options.repeat, options.runtime_s
    if not 1 <= repeat <= MAX_REPEAT:
        raise SsdcompareError(f"--repeat must be from 1 to {MAX_REPEAT}, got {repeat}")
    if runtime_s is not None and not 1 <= runtime_s <= MAX_RUNTIME_S:
        why = runtime_problem(runtime_s) if runtime_s > 1 else "a job runs at least 1 s"
        raise SsdcompareError(f"--runtime {runtime_s}: {why}")


def _steps_and_states(
    suite: Suite, options: PlanOptions
) -> tuple[list[str], list[str], list[str]]:
    """The preconditioning steps and the drive states the sweep uses, checked (also against
    the suite's verified reads, with the ceiling), and a warning for each of the suite's own
    that the other kind chosen replaces."""
    # the suite's own preconditioning and states apply unless the sweep only reads, or the
    # caller chose the other kind (both chosen is refused by check_states)
    read_only, precondition, states = options.read_only, options.precondition, options.states
    asked_states = [s for s in states or [] if s != "none"]
    if precondition is None:
        precondition = [] if read_only or asked_states else suite.precondition
    steps = check_steps(list(precondition), read_only)
    if states is None:
        states = [] if read_only or steps else suite.states
    chosen = check_states(list(states), read_only, steps)
    problem = overwritten_problem(suite.workloads, steps, chosen, options.ceiling)
    if problem:
        raise SsdcompareError(problem)
    replaced = []
    if steps and suite.states and not chosen:
        replaced.append(
            f"--precondition replaces the suite's own drive states "
            f"({', '.join(suite.states)}): one pass, no empty/full comparison"
        )
    if chosen and suite.precondition and not steps:
        replaced.append(
            f"--states replaces the suite's own preconditioning ({', '.join(suite.precondition)})"
        )
    return steps, chosen, replaced


def _as_asked(suite: Suite, options: PlanOptions) -> Suite:
    """The suite with only its reading jobs for a read-only sweep, and the runtime and size
    given in place of its own."""
    if options.read_only:
        suite = suite.read_only()
    overrides: dict[str, object] = {}
    if options.runtime_s is not None:
        overrides["runtime_s"] = options.runtime_s
    if options.size_bytes is not None:
        overrides["size"] = options.size_bytes
    return suite.with_overrides(**overrides)


def _targets(devices: str | list[str] | list[Target], options: PlanOptions) -> list[Target]:
    """The targets named (or given as they are), on the hosts named."""
    if devices and isinstance(devices, list) and isinstance(devices[0], Target):
        return list(devices)  # type: ignore[arg-type]
    hosts = options.hosts
    known = parse_hosts(hosts) if isinstance(hosts, str) or hosts is None else hosts
    return resolve_targets(devices, options.size_bytes, hosts=known)  # type: ignore[arg-type]


def _repeat_warnings(targets: int, repeat: int) -> list[str]:
    """Devices compared with too few repeats for a test of significance."""
    if targets < 2 or repeat >= MIN_REPEATS:
        return []
    return [
        f"comparing {targets} devices with {repeat} repeat(s): a difference is tested "
        f"for significance only with {MIN_REPEATS} or more repeats a device; add --repeat "
        f"{MIN_REPEATS} to know which differences are real"
    ]


def steps_given(value: str | Collection[str] | None) -> list[str] | None:
    """Preconditioning steps as a user gives them ("fill,workload"; "none" is none), or None
    when not given (the suite's own then apply)."""
    if value is None:
        return None
    return [step for step in option_names(value) if step != "none"]


def check_steps(steps: list[str], read_only: bool) -> list[str]:
    """The preconditioning steps asked for, in the order they run; refuses unknown ones and
    any with --read-only (preconditioning writes)."""
    unknown = [s for s in steps if s not in (*PRECONDITION_STEPS, "none")]
    if unknown:
        raise SsdcompareError(
            f"--precondition {','.join(unknown)}: not a step; use none, fill, workload or "
            "fill,workload"
        )
    chosen = [s for s in PRECONDITION_STEPS if s in steps]
    if chosen and read_only:
        raise SsdcompareError(
            "--read-only cannot be combined with --precondition: preconditioning writes to "
            "the devices"
        )
    return chosen


def check_states(states: list[str], read_only: bool, steps: list[str]) -> list[str]:
    """The drive states asked for, in the order their passes run (empty first: a fill can be
    undone only by a discard); refuses unknown ones, --read-only and --precondition besides."""
    unknown = [s for s in states if s not in (*DRIVE_STATES, "none")]
    if unknown:
        raise SsdcompareError(
            f"--states {','.join(unknown)}: not a drive state; use none, empty, full or empty,full"
        )
    chosen = [s for s in DRIVE_STATES if s in states]
    if chosen and read_only:
        raise SsdcompareError(
            "--read-only cannot be combined with --states: emptying (discarding) and filling "
            "a drive write to it"
        )
    if chosen and steps:
        raise SsdcompareError(
            f"--states {','.join(chosen)} and --precondition {','.join(steps)} cannot be "
            "combined: each state is its own preconditioning (a discard for empty, a fill for "
            "full); use one of them (--states none or --precondition none drops the suite's)"
        )
    return chosen


def _check_hosted(
    targets: list[Target], steps: list[str], states: list[str], ceiling: bool
) -> None:
    """Preconditioning, drive states and the ceiling run fio and the kernel here: not yet for
    devices reached through a fio server."""
    hosted = [t.name for t in targets if t.host is not None]
    grouped = [t.name for t in targets if t.members]
    asked = [what for what, on in (("--precondition", steps), ("--states", states),
                                   ("--ceiling", ceiling)) if on]  # fmt: skip
    # asked for by the user or by the suite (storagereview preconditions, anandtech states)
    off = " (turn the suite's own off with --precondition none or --states none)"
    if hosted and asked:
        raise SsdcompareError(
            f"{' and '.join(asked)} cannot be used with devices on hosts ({', '.join(hosted)}) "
            "yet: they discard, fill or make RAM disks through this machine's kernel. Leave "
            f"them out{off}, or run ssdcompare on that host itself"
        )
    if grouped and asked:
        raise SsdcompareError(
            f"{' and '.join(asked)} cannot be used with groups ({', '.join(grouped)}) yet: "
            f"leave them out{off}, or measure the members alone"
        )


def check_parallel(targets: list[Target]) -> None:
    """--parallel-hosts runs a fio client for each host's server at once: every device must
    be on a host, each on one host."""
    here = [t.name for t in targets if not t.hosts]
    if here:
        raise SsdcompareError(
            f"--parallel-hosts runs devices through their hosts' fio servers; {', '.join(here)} "
            "is on no host. Name this machine as one too (run `fio --server` here, add "
            "--hosts me=127.0.0.1 and write me:DEVICE), or leave --parallel-hosts out"
        )
    spanning = [t.name for t in targets if len(t.hosts) > 1]
    if spanning:
        raise SsdcompareError(f"--parallel-hosts cannot take a group across hosts "
                              f"({', '.join(spanning)}): it runs at once already")  # fmt: skip


def _check_discards(targets: list[Target], states: list[str]) -> None:
    """The empty state discards the span: refuse block devices that take no discards."""
    if "empty" not in states:
        return
    for target in targets:
        name = target.kernel_name
        if name is not None and discards(name) is False:
            raise SsdcompareError(
                f"{target.name} does not take discards (TRIM): its queue's discard_max_bytes "
                "is 0, so the empty state cannot be reached; drop it (--states full) or use "
                "a device that supports discard"
            )


def worst_case_s(steps: list[str], jobs: list[RenderedJob]) -> float:
    """The longest preconditioning can take for these jobs (one target's): the fill at a slow
    drive's speed, and every job's rounds to the limit."""
    seconds = 0.0
    if "fill" in steps and jobs:
        size = fill_span(jobs)
        span_bytes = jobs[0].target.size_bytes or 0
        if size is not None:
            span_bytes = parse_size(size)
        seconds += 2 * span_bytes / FILL_RATE_WORST
    if "workload" in steps:
        seconds += sum(MAX_ROUNDS * job.workload.duration_s for job in jobs)
    return seconds


def _fio_and_engine(
    fio_bin: str | None, require_fio: bool, warnings: list[str]
) -> tuple[fio_mod.FioInfo | None, str]:
    """The fio that will run the plan and the engine for workloads that name none; without
    fio a plan is still made (io_uring assumed) unless fio is required."""
    try:
        fio_info: fio_mod.FioInfo | None = fio_mod.find_fio(fio_bin)
    except SsdcompareError as err:
        if require_fio:
            raise
        fio_info = None
        warnings.append(f"{err}; jobfiles were not checked by fio")
    engine = fio_mod.default_ioengine(fio_info)
    if fio_info is not None and engine != "io_uring":
        warnings.append("io_uring does not work here (fio build or kernel); using libaio instead")
    return fio_info, engine


def _suite_warnings(
    suite: Suite,
    targets: list[Target],
    jobs: list[RenderedJob],
    size_bytes: int | None,
    allowed: Collection[str],
) -> list[str]:
    """What a reader of the results should know before the sweep runs."""
    warnings = []
    pct_jobs = [w.job_id for w in suite.workloads if w.size_pct is not None]
    for target in targets:
        if target.kind != "block" and pct_jobs and size_bytes is None:
            warnings.append(
                f"{target.name} is a file: its spans are shares of the file's "
                f"{target.size_bytes} bytes, not of a device"
            )
    cut: dict[tuple[str, str, str], list[str]] = {}  # (target, span, what runs) -> jobs
    for job in jobs:
        size = span(job.workload, job.target)
        if span_is_cut(job.workload, size):
            where = (job.target.name, job.workload.span_label, span_words(job.workload, size))
            cut.setdefault(where, []).append(job.job_id)
    for (name, asked, runs), ids in cut.items():
        which = f"of {ids[0]}" if len(ids) == 1 else f"of {len(ids)} jobs ({', '.join(ids)})"
        warnings.append(
            f"{name} is smaller than the {asked} span {which}: "
            f"{'it runs' if len(ids) == 1 else 'they run'} over {runs}, so "
            f"{'its' if len(ids) == 1 else 'their'} results are not compared with other "
            "targets' (a different workload)"
        )
    unsplit = [w.job_id for w in suite.workloads if w.bursty and not w.logs_each_io]
    if unsplit:
        warnings.append(
            "bursty jobs without a size cap of at most 1M I/Os (io_size) are not split into "
            "bursts: their IOPS count the idle gaps (" + ", ".join(unsplit) + ")"
        )
    sync_engines = {"psync", "sync", "pvsync", "pvsync2", "vsync"}
    deep_sync = [w.job_id for w in suite.workloads if w.ioengine in sync_engines and w.iodepth > 1]
    if deep_sync:
        warnings.append(
            "synchronous engines ignore iodepth > 1 (each job keeps one I/O in flight): "
            + ", ".join(deep_sync)
        )
    unused = sorted(set(allowed) - {k for w in suite.workloads for k in w.extra})
    if unused:
        warnings.append(f"--allow-option {', '.join(unused)}: no job of this suite uses it")
    return warnings


def _check_files_for_reading(
    targets: list[Target], read_only: bool, size_bytes: int | None
) -> None:
    """A read-only sweep reads what is there: it must not create a file, nor read past an
    existing file's end (fio would lay the file out anew, overwriting it)."""
    if not read_only:
        return
    for target in (part for unit in targets for part in unit.parts):
        if target.kind != "file" or target.remote:  # a remote file: its fio refuses (--readonly)
            continue
        if not target.exists:
            raise SsdcompareError(
                f"{target.path} does not exist, and --read-only reads only what is there; drop "
                "--read-only to let fio create it as a test file"
            )
        actual = Path(target.path).stat().st_size
        if size_bytes is not None and size_bytes > actual:
            raise SsdcompareError(
                f"{target.path} holds {actual} bytes; reading {size_bytes} would make fio lay "
                f"it out anew, overwriting it. Give --size {actual} or less (or leave it out)"
            )


def check_allowed_options(names: Collection[str]) -> list[str]:
    """The --allow-option names, checked: each must be an option that needs accepting."""
    allowed = []
    for name in names:
        option = canonical(name.strip())
        if option not in OPT_IN:
            listing = ", ".join(sorted(OPT_IN))
            raise SsdcompareError(
                f"--allow-option {name}: not an option that needs accepting; those are: "
                f"{listing}. Other options are either passed through as they are or refused "
                "whatever the flags"
            )
        allowed.append(option)
    return sorted(set(allowed))


def validate(plan: Plan) -> list[Rejection]:
    """Have the installed fio parse every distinct jobfile; return what it rejects.

    `fio --parse-only` does not load engines, so the engine is checked against
    `fio --enghelp` as well.
    """
    if plan.fio is None:
        raise SsdcompareError(f"cannot validate jobfiles: fio not found; {fio_mod.INSTALL_HINT}")
    available = fio_mod.engines(plan.fio)
    rejections = [
        Rejection(job, problem, by_fio=False) for job in plan.jobs
        if job.ioengine in available for problem in job_problems(job, plan.fio)
    ]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="ssdcompare-plan-") as scratch:
        written: list[tuple[RenderedJob, Path]] = []
        for index, job in enumerate(plan.jobs):
            if job.ioengine not in available:
                rejections.append(
                    Rejection(job, f"ioengine {job.ioengine} is not in this fio build")
                )
                continue
            path = Path(scratch) / f"{index}-{job.file_name}"
            path.write_text(job.text)
            written.append((job, path))
        # one fio start for all files keeps a 90-jobfile plan under a second; only when fio
        # objects is each file parsed alone, to say which ones it rejects
        if written and fio_mod.parse_only(plan.fio, [path for _, path in written]) is None:
            return rejections
        for job, path in written:
            complaint = fio_mod.parse_only(plan.fio, path)
            if complaint:
                rejections.append(Rejection(job, complaint))
    return rejections
