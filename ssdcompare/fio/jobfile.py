"""Rendering one fio jobfile per workload per target from templates/job.fio.j2.

The rendered text is exactly what fio runs and what is stored with the result, so it is written
for people to read: a header saying what and why, then plain fio options. Every rendered text
is read back as fio will read it (ssdcompare.fio.check) before it is accepted: whether it
writes, and what it opens, come from that reading.
"""

from __future__ import annotations

from collections.abc import Collection

from pydantic import BaseModel, ConfigDict

from ssdcompare.fio.binary import command_line
from ssdcompare.fio.check import (
    JobfileError,
    JobfileFacts,
    check_jobfile,
    check_sections,
    read_jobfile,
    workload_hash,
)
from ssdcompare.resources import templates
from ssdcompare.suite.options import TIMESERIES_PREFIX
from ssdcompare.suite.realism import jobfile_lines
from ssdcompare.suite.verifying import regions_problem, verified_read
from ssdcompare.suite.workload import RW_LABELS, Workload, fio_seconds
from ssdcompare.target.devices import Target, describe
from ssdcompare.target.file import fd_path, file_key
from ssdcompare.target.hosts import Host
from ssdcompare.units import format_bytes, parse_size, size_token
from ssdcompare.version import __version__

TEMPLATE = "job.fio.j2"


class RenderedJob(BaseModel):
    """A jobfile ready to run: the workload, the target and the exact text."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    workload: Workload
    target: Target
    ioengine: str
    text: str
    workload_hash: str  # identical for every target running the same workload
    writes: bool  # read from the rendered text: the job writes or trims

    @property
    def job_id(self) -> str:
        return self.workload.job_id

    @property
    def file_name(self) -> str:
        return f"{self.job_id}.fio"


def span(workload: Workload, target: Target) -> str | None:
    """The fio `size=` value: the workload's span, bounded by a file target's size.

    Block devices take percentages natively; files get bytes because fio may have to create
    them and cannot take a share of a file that does not exist yet.
    """
    if target.kind == "file":
        capacity = target.size_bytes
        assert capacity is not None  # file targets always know their size
        wanted = workload.size_bytes
        if workload.size_pct is not None:
            wanted = int(capacity * workload.size_pct / 100)
        if wanted is None or wanted > capacity:
            wanted = capacity
        # fio wants whole blocks; round down to the block size
        wanted -= wanted % workload.bs_bytes
        return size_token(max(wanted, workload.bs_bytes))
    if workload.size_pct is not None:
        return f"{workload.size_pct:g}%"
    if workload.size_bytes is not None:
        if target.size_bytes is not None and workload.size_bytes > target.size_bytes:
            return None  # the whole device is smaller than the span asked for
        return size_token(workload.size_bytes)
    return None


def span_bytes(workload: Workload, target: Target, size: str | None = "") -> int | None:
    """The bytes of the span a job runs over on a target (`size`: its rendered `size=`, ""
    to work it out; None: the whole target); None when only fio can tell."""
    if size == "":
        size = span(workload, target)
    if size is not None and size.endswith("%"):
        if target.size_bytes is None:
            return None
        return int(target.size_bytes * float(size[:-1]) / 100)
    return parse_size(size) if size is not None else target.size_bytes


def io_size_of(workload: Workload, target: Target, size: str | None) -> str | None:
    """The `io_size=` to render: the bytes asked for, or for `io_size: 4x` that many times the
    span that runs (`size`, None: the whole target) shared by the job's processes, in whole
    blocks."""
    if workload.io_size_bytes is not None:
        return size_token(workload.io_size_bytes)
    if workload.io_size_spans is None:
        return None
    spanned = span_bytes(workload, target, size)
    if spanned is None:
        return None  # a size fio alone knows: the job runs for its runtime
    # fio counts io_size per process: the spans are the job's, shared by its numjobs
    moved = int(spanned * workload.io_size_spans / workload.numjobs)
    return size_token(max(moved - moved % workload.bs_bytes, workload.bs_bytes))


def span_is_cut(workload: Workload, size: str | None) -> bool:
    """Whether a span asked for in bytes was cut to fit a smaller target (the rendered `size=`
    is less, or absent: the whole of a device smaller than the request)."""
    asked = workload.size_bytes
    if asked is None:
        return False  # a share or the whole target: the same request on any target
    if size is None:
        return True
    return parse_size(size) < max(asked - asked % workload.bs_bytes, workload.bs_bytes)


def hashed_span(workload: Workload, size: str | None) -> str:
    """The span that makes two results comparable: the one asked for ("20%", "10g", "all"),
    unless a byte span was cut to a smaller target: 10 GiB asked of a 1 GiB file runs over
    1 GiB, which is not the workload that ran over 10 GiB elsewhere."""
    if span_is_cut(workload, size):
        return f"{size or 'all'} (cut from {workload.span_request})"
    return workload.span_request


def span_words(workload: Workload, size: str | None) -> str:
    """The span that ran, for tables, from the rendered `size=`: "20 %", "64 MiB",
    "20 % (1.2 GiB)" for a share of a file, "whole target", and what was asked when cut."""
    if span_is_cut(workload, size):
        used = format_bytes(parse_size(size)) if size else "whole target"
        return f"{used} (cut from {workload.span_label}: the target is smaller)"
    if size is None:
        return "whole target"
    if size.endswith("%"):
        return workload.span_label
    used = format_bytes(parse_size(size))
    if workload.size_pct is not None:
        return f"{workload.span_label} ({used})"
    return used if workload.size_bytes is not None else f"whole target ({used})"


def rendered_size(facts: JobfileFacts) -> str | None:
    """The `size=` fio ends up with in a rendered jobfile (None: the whole target)."""
    return facts.jobs[0].get("size") if facts.jobs else None


def _outline(workload: Workload, size: str | None, target: Target) -> str:
    parts = [RW_LABELS[workload.rw]]
    if workload.rwmixread is not None:
        parts.append(f"{workload.rwmixread}% read / {100 - workload.rwmixread}% write")
    parts.append(f"{format_bytes(workload.bs_bytes)} blocks")
    parts.append(f"queue depth {workload.iodepth} x {workload.numjobs} job(s)")
    if workload.fsync:
        parts.append(f"fsync every {workload.fsync} write(s)")
    if size is None:
        parts.append("over the whole device")
    elif size.endswith("%"):
        parts.append(f"over {size} of the device")
    else:
        parts.append(f"over {format_bytes(parse_size(size))}")
    if target.kind == "file":
        parts.append("of a file")
    return ", ".join(parts)


def fio_path(path: str) -> str:
    """A path as a fio `filename` value: fio splits filename lists at ':', so escape it."""
    return path.replace(":", "\\:")


def render(
    workload: Workload,
    target: Target,
    suite: str,
    ioengine: str,
    allowed_options: Collection[str] = (),
    read_only: bool = False,
) -> RenderedJob:
    """Render the jobfile for one workload on one target, and check the text.

    `ioengine` is the engine to use when the workload does not name one (see
    fio.default_ioengine). `allowed_options` are the opt-in fio options accepted for this sweep
    (ssdcompare.suite.options.OPT_IN). Raises JobfileError when the text would open anything
    but the target, holds a refused option, or writes in a read-only sweep, and when the
    processes of a verified write would write over each other's blocks on this target
    (ssdcompare.suite.verifying.regions_problem).
    """
    if target.members:
        return _render_group(workload, target, suite, ioengine, allowed_options, read_only)
    problem = regions_problem(workload, span_bytes(workload, target), target.size_bytes)
    if problem:
        raise JobfileError(f"{workload.job_id} on {target.name}: {problem}")
    engine = workload.ioengine or ioengine
    size = span(workload, target)
    hashed = hashed_span(workload, size)
    size = _size_fio_takes(workload, target, engine, size)
    text = _jobfile_text(workload, target, suite, engine, size)
    facts = read_jobfile(text)
    check_jobfile(facts, target.path, workload.job_id, read_only, allowed_options)
    return RenderedJob(
        workload=workload,
        target=target,
        ioengine=engine,
        text=text,
        workload_hash=workload_hash(facts, hashed + hash_note(workload)),
        writes=facts.writes,
    )


def hash_note(workload: Workload) -> str:
    """What the workload hash adds to a jobfile's options: a pass on an empty drive is never
    the same measurement as one on a full drive; a curve point is its share of the maximum
    (its rate, set as it starts, follows from the device's maximum: see paced_text)."""
    note = f" in state {workload.state}" if workload.state else ""
    if workload.point is not None:
        base = workload.curve_base
        of = f"{base} IOPS" if isinstance(base, int) else f"the {base} maximum"
        note += f" paced at {workload.point:g}% of {of}"
    return note


def paced_text(text: str, rates: tuple[int, ...]) -> str:
    """A curve point's jobfile as it runs: `rate_iops` (per fio process, one per direction:
    reads, writes, trims) after every `rate_process=poisson` line, each section's pace."""
    line = "rate_iops=" + ",".join(str(max(int(rate), 1)) for rate in rates)
    return text.replace("\nrate_process=poisson\n", f"\nrate_process=poisson\n{line}\n")


def _size_fio_takes(
    workload: Workload, target: Target, engine: str, size: str | None
) -> str | None:
    """The `size=` to render: the span, or for a whole block device that fio cannot size
    itself, the device's size in bytes (the same span)."""
    if (
        size is None
        and target.kind == "block"
        and ("trim" in workload.directions or engine == "null")
    ):
        # fio cannot size a block device for a job that only trims, or on its null engine
        # ("you need to specify size="): give it the whole device in bytes, the same span
        size = size_token(target.size_bytes) if target.size_bytes else None
    return size


def _jobfile_text(
    workload: Workload, target: Target, suite: str, engine: str, size: str | None
) -> str:
    """The template rendered for one workload on one target, with the `size=` to run."""
    io_size = io_size_of(workload, target, size)
    return (
        templates()
        .get_template(TEMPLATE)
        .render(
            version=__version__,
            suite=suite,
            job=workload,
            target=target,
            filename=fio_path(target.path),
            size=size,
            ioengine=engine,
            bs=size_token(workload.bs_bytes),
            runtime=fio_seconds(workload.runtime_s),
            io_size=io_size,
            one_pass=verified_read(workload),
            iotime=fio_seconds(workload.thinktime_iotime_s or 0),
            extra=[
                (k, int(v) if isinstance(v, bool) else v)
                for k, v in sorted(workload.extra.items())
            ],
            outline=_outline(workload, size, target),
            realism=jobfile_lines(
                workload,
                workload.rw,
                "write" in workload.directions,
                io_size is None,
                workload.extra,
            ),
            run=" ".join(command_line("fio", "THIS_FILE", "RESULT.json")),
            timeseries=TIMESERIES_PREFIX,
        )
    )


def member_section(job_id: str, number: int) -> str:
    """The jobfile section of a group's `number`-th member (from 1): `[randread-4k-qd1.m1]`."""
    return f"{job_id}.m{number}"


def sections_of(
    job_id: str, target: Target, host: Host | None = None, opened: dict[str, int] | None = None
) -> list[tuple[str, str]]:
    """The (section, path) pairs a jobfile of `job_id` on `target` holds, in order: one
    section named after the job, or a group's one per member (only those on `host`, given).
    `opened` (path -> descriptor) names the files fio gets open, as /dev/fd/N."""
    names = {path: fd_path(fd) for path, fd in (opened or {}).items()}
    if not target.members:
        return [(job_id, names.get(target.path, target.path))]
    numbered = enumerate(target.members, start=1)
    return [(member_section(job_id, n), names.get(m.path, m.path)) for n, m in numbered
            if host is None or m.host == host]  # fmt: skip


def opened_text(text: str, opened: dict[str, int]) -> str:
    """A rendered jobfile as fio runs it when ssdcompare opened its files itself
    (ssdcompare.target.file; `opened`: path -> descriptor): each `filename=<path>` of an
    opened file becomes `filename=/dev/fd/N`, after a comment naming the file and what it is
    (device:inode)."""
    if not opened:
        return text
    lines = []
    for line in text.split("\n"):
        for path, fd in opened.items():
            if line == f"filename={fio_path(path)}":
                lines.append(f"; {path} (device:inode {file_key(fd)}), opened by ssdcompare "
                             "without following links, is given to fio as:")  # fmt: skip
                line = f"filename={fd_path(fd)}"
                break
        lines.append(line)
    return "\n".join(lines)


def _render_group(
    workload: Workload,
    group: Target,
    suite: str,
    ioengine: str,
    allowed_options: Collection[str],
    read_only: bool,
) -> RenderedJob:
    """A group's jobfile: each member's own jobfile (rendered and checked as for the device
    alone) turned into one section, its [global] options folded in, so that all members run
    the job at the same time in one fio run. group_reporting is left out: fio would add the
    members up into one entry, and each member's own figures are wanted too (numjobs clones
    of a member are added up by name when the output is read)."""
    alone = [render(workload, m, suite, ioengine, allowed_options, read_only)
             for m in group.members]  # fmt: skip
    lines = [
        f"; ssdcompare {__version__} | suite {suite} | job {workload.job_id} | group {group.name}",
        f"; {len(alone)} devices measured as one unit: each section below is one member, and",
        "; all of them run at the same time",
    ]
    for number, (member, job) in enumerate(zip(group.members, alone, strict=True), start=1):
        facts = read_jobfile(job.text)
        (section,) = facts.jobs
        lines += ["", f"; member {number}: {describe(member)}",
                  f"[{member_section(workload.job_id, number)}]"]  # fmt: skip
        for name, value in section.options:  # its [global] options included
            if name != "group_reporting":
                lines.append(name if value is None else f"{name}={value}")
    text = "\n".join(lines) + "\n"
    facts = read_jobfile(text)
    check_sections(facts, sections_of(workload.job_id, group), read_only, allowed_options)
    sized = hashed_span(workload, span(workload, group.members[0]))
    return RenderedJob(
        workload=workload, target=group, ioengine=alone[0].ioengine, text=text,
        workload_hash=workload_hash(facts, sized + hash_note(workload)),
        writes=facts.writes,
    )  # fmt: skip


def split_by_host(job: RenderedJob) -> list[tuple[Host, str]]:
    """A group's jobfile cut into one per fio server, each holding the sections of that
    server's members (for a group that spans hosts: fio's client sends each server its own)."""
    group = job.target
    facts = read_jobfile(job.text)
    found = []
    for host in group.hosts:
        lines = [f"; ssdcompare {__version__} | job {job.job_id} | group {group.name} | the "
                 f"members on host {host.name}"]  # fmt: skip
        for section, member in zip(facts.jobs, group.members, strict=True):
            if member.host == host:
                lines += ["", f"[{section.name}]"]
                lines += [n if v is None else f"{n}={v}" for n, v in section.options]
        found.append((host, "\n".join(lines) + "\n"))
    return found


FILL_TEMPLATE = "fill.fio.j2"
FILL_JOB = "precondition-fill"


def fill_span(jobs: list[RenderedJob]) -> str | None:
    """The `size=` that covers every job's span on one target (None: the whole device). A
    file target always gets its size: fio needs it to create the file."""
    target = jobs[0].target
    whole = size_token(target.size_bytes) if target.kind == "file" and target.size_bytes else None
    largest = 0
    for job in jobs:
        end = _extent(job)
        if end is None or target.size_bytes is None:
            return whole
        largest = max(largest, end)
        if largest >= target.size_bytes:
            return whole
    return size_token(largest) if largest else whole


def _extent(job: RenderedJob) -> int | None:
    """Where the region a job touches ends, in bytes from the target's start: its span, moved
    by fio's `offset` and `offset_increment` (per process) where a suite sets them. None when
    it cannot be told (a share of the target as offset): then the whole target counts."""
    used = span_bytes(job.workload, job.target)
    if used is None:
        return None
    moved = 0
    for option, times in (("offset", 1), ("offset_increment", job.workload.numjobs - 1)):
        value = job.workload.extra.get(option)
        if value is None or value is False or times == 0:
            continue
        try:
            moved += parse_size(value) * times  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None
    return used + moved


def render_fill(target: Target, size: str | None, suite: str, ioengine: str) -> str:
    """The fill jobfile for one target: sequential 128 KiB writes over `size` (None: all of
    it), twice. Checked like every jobfile: one job, this target only."""
    what = "the whole device" if size is None else format_bytes(parse_size(size))
    text = (
        templates().get_template(FILL_TEMPLATE).render(
            version=__version__, suite=suite, target=target, filename=fio_path(target.path),
            size=size, ioengine=ioengine, job_id=FILL_JOB, what=what,
            run=" ".join(command_line("fio", "THIS_FILE", "RESULT.json")),
        )
    )  # fmt: skip
    check_jobfile(read_jobfile(text), target.path, FILL_JOB)
    return text
