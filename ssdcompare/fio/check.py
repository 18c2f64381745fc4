"""A rendered jobfile read the way fio will read it, and the checks every jobfile must pass.

What a sweep writes to, and whether it writes at all, is decided here from the final jobfile
text, never from the suite model: whatever a template or a suite value puts into the text, the
safety guard and `--read-only` judge what fio will actually do.

fio's grammar, as far as it matters here (fio 3.x, init.c): a line is cut at the first ';' or '#'
and stripped; `[name]` starts a section, and any section whose name starts with "global" sets
defaults for the sections after it; any line starting with `include` pulls in another file;
`key=value` or a bare `key` sets an option; option names are case-sensitive; `${VAR}` and
`$keyword` in a value are expanded; the last setting wins;
`filename` lists files separated by ':' (`\\:` is a literal colon). Anything this reader cannot
predict exactly (an include, a `$`, an odd section header, an option outside a section) is
refused rather than guessed.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from ssdcompare.errors import SsdcompareError
from ssdcompare.suite.options import (
    OPT_IN,
    RECORDING_ONLY,
    REFUSED,
    TIMESERIES_LOGS,
    TIMESERIES_PREFIX,
    WRITE_IMPLYING,
    WRITING_RW,
    canonical,
)

_SECTION_RE = re.compile(r"^\[([A-Za-z0-9][A-Za-z0-9._+@-]*)\]$")
_OPTION_RE = re.compile(r"^([A-Za-z0-9_-]+)\s*(?:=\s*(.*))?$")


class JobfileError(SsdcompareError):
    """A jobfile that fio would read differently from what ssdcompare checked, or that breaks
    a safety rule; the message names the line or option."""


@dataclass(frozen=True)
class JobSection:
    """One job as fio will run it: its own options after the [global] defaults before it."""

    name: str
    options: tuple[tuple[str, str | None], ...]  # (canonical name, value) in the order fio sees

    def get(self, option: str) -> str | None:
        """The value fio ends up with (the last setting wins); None if unset or bare."""
        value = None
        for name, setting in self.options:
            if name == option:
                value = setting
        return value

    def has(self, option: str) -> bool:
        return any(name == option for name, _ in self.options)

    @property
    def rw(self) -> str:
        """The I/O pattern without fio's ":<n>" suffix; fio's default is read."""
        value = self.get("rw")
        return (value or "read").split(":", 1)[0].strip().lower()

    @property
    def writes(self) -> bool:
        """True when the job writes or trims. An rw fio might accept but this reader does not
        know counts as writing: when unsure, the guard must look."""
        known_reads = {"read", "randread"}
        implied = any(self.has(option) for option in WRITE_IMPLYING)
        return self.rw in WRITING_RW or self.rw not in known_reads or implied

    @property
    def files(self) -> tuple[str, ...]:
        """The files the job opens: its `filename` list, or fio's default (the job's name, in
        the working folder) when there is none."""
        value = self.get("filename")
        if not value:
            return (f"./{self.name}",)
        return tuple(part.replace("\\:", ":") for part in re.split(r"(?<!\\):", value) if part)


@dataclass(frozen=True)
class JobfileFacts:
    """What a jobfile makes fio do, read from its text."""

    jobs: tuple[JobSection, ...]
    global_options: tuple[tuple[str, str | None], ...] = field(default=())

    @property
    def writes(self) -> bool:
        return any(job.writes for job in self.jobs)

    @property
    def files(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(f for job in self.jobs for f in job.files))

    def option_names(self) -> set[str]:
        names = {name for name, _ in self.global_options}
        return names | {name for job in self.jobs for name, _ in job.options}


def read_jobfile(text: str) -> JobfileFacts:
    """Read jobfile text as fio will; raise JobfileError where fio's reading is not certain."""
    defaults: list[tuple[str, str | None]] = []
    jobs: list[tuple[str, list[tuple[str, str | None]]]] = []
    current: list[tuple[str, str | None]] | None = None
    for number, raw in enumerate(text.split("\n"), start=1):
        if any(ord(char) < 32 and char != "\t" for char in raw):
            raise JobfileError(f"jobfile line {number} holds a control character")
        line = re.split(r"[;#]", raw, maxsplit=1)[0].strip()
        if not line:
            continue
        if line.startswith("["):
            match = _SECTION_RE.match(line)
            if not match:
                raise JobfileError(f"jobfile line {number}: unusual section header {line!r}")
            # fio compares only the first six letters: [global-x] is a [global] section too
            if match.group(1).startswith("global"):
                current = defaults
            else:
                # a job starts from the defaults so far; a later [global] does not reach back
                current = list(defaults)
                jobs.append((match.group(1), current))
            continue
        if line.startswith("include"):
            # fio takes any line starting with "include" as one, whatever follows the word
            raise JobfileError(f"jobfile line {number}: {line!r} pulls in another file")
        if "$" in line:
            raise JobfileError(f"jobfile line {number}: '$' would be expanded by fio: {line!r}")
        match = _OPTION_RE.match(line)
        if not match:
            raise JobfileError(f"jobfile line {number}: not an option line: {line!r}")
        if current is None:
            raise JobfileError(f"jobfile line {number}: option outside a [section]: {line!r}")
        value = match.group(2)
        current.append((canonical(match.group(1)), value.strip() if value is not None else None))
    return JobfileFacts(
        jobs=tuple(JobSection(name, tuple(options)) for name, options in jobs),
        global_options=tuple(defaults),
    )


def check_jobfile(
    facts: JobfileFacts,
    target_path: str,
    job_id: str,
    read_only: bool = False,
    allowed_options: Collection[str] = (),
) -> None:
    """The rules every jobfile obeys before fio may run it; JobfileError says which it breaks.

    Exactly one job, named `job_id`; it opens `target_path` and nothing else; no refused option
    anywhere; opt-in options only when accepted; and no writes when the sweep is read-only.
    """
    check_sections(facts, [(job_id, target_path)], read_only, allowed_options)


def check_sections(
    facts: JobfileFacts,
    expected: Sequence[tuple[str, str]],
    read_only: bool = False,
    allowed_options: Collection[str] = (),
) -> None:
    """check_jobfile for a jobfile of several sections (a group: one per member): exactly the
    `expected` (section, path) pairs in that order, each section opening its own path only."""
    where = f"jobfile for {expected[0][0]} on {', '.join(path for _, path in expected)}"
    names = [job.name for job in facts.jobs]
    if names != [name for name, _ in expected]:
        wanted = ", ".join(f"[{name}]" for name, _ in expected)
        count = "one job section" if len(expected) == 1 else f"{len(expected)} job sections"
        raise JobfileError(f"{where}: expected {count} {wanted}, found: "
                           f"{', '.join(names) or 'none'}")  # fmt: skip
    for job, (_, path) in zip(facts.jobs, expected, strict=True):
        if job.files != (path,):
            raise JobfileError(
                f"{where}: job [{job.name}] would open {', '.join(job.files)}, not only the target"
            )
    for option in sorted(facts.option_names()):
        if option in TIMESERIES_LOGS and _values(facts, option) == {TIMESERIES_PREFIX}:
            continue  # the per-second logs of the template, into the run's own folder
        if option in REFUSED:
            raise JobfileError(f"{where}: option {option!r} is refused: it {REFUSED[option]}")
        if option in OPT_IN and option not in allowed_options:
            raise JobfileError(
                f"{where}: option {option!r} needs --allow-option {option}: {OPT_IN[option]}"
            )
    if read_only and facts.writes:
        writers = ", ".join(f"[{job.name}] rw={job.rw}" for job in facts.jobs if job.writes)
        raise JobfileError(f"{where}: this sweep is read-only, but the jobfile writes: {writers}")


def _values(facts: JobfileFacts, option: str) -> set[str | None]:
    """Every value a jobfile gives `option`, in [global] and in its jobs."""
    settings = [*facts.global_options, *(o for job in facts.jobs for o in job.options)]
    return {value for name, value in settings if name == option}


def workload_hash(facts: JobfileFacts, span: str) -> str:
    """What makes two results comparable: every option fio ends up with, except which target it
    ran on (filename) and the target-bound size, plus the span the workload asked for.

    Comments, blank lines and option order do not change it; any option that changes what fio
    does does.
    """
    parts = []
    for job in facts.jobs:
        # a dict keeps the last setting of each option, as fio does
        options = {
            name: value for name, value in job.options
            if name not in ("filename", "size") and name not in RECORDING_ONLY
        }  # fmt: skip
        parts.append(f"[{job.name}]")
        parts += [name if value is None else f"{name}={value}" for name, value in
                  sorted(options.items())]  # fmt: skip
    parts.append(f"span={span}")
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
