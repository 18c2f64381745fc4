"""The jobfiles a report quotes, so that a reader can check what fio was asked to do: each
job's jobfile as its run stored it (jobfile.fio, exactly what fio read), read through the
results folder's one reader (ssdcompare.results.files.ResultsFiles) and never any other way.

Devices that ran a job from the same workload (equal workload hashes: the same options as fio
reads them, the target aside) share one quoted jobfile; the lines in which another device's
jobfile differs (its target) are listed under it, or once for the whole report where they are
the same for every job. A report of more than QUOTED_UP_TO jobs gives a job's jobfile as its
difference from the one quoted before it where that is shorter (a unified diff: exact, and a
fraction of the size). A jobfile that cannot be read (missing, refused, damaged) is said so
with the reason, never quoted.
"""

from __future__ import annotations

import difflib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ssdcompare.report.table import records
from ssdcompare.results.files import StoredFileError
from ssdcompare.results.store import JOBFILE, ResultsDir

QUOTE_LIMIT = 64 << 10  # characters; ssdcompare's jobfiles are about 1 KiB
QUOTED_UP_TO = 200  # jobs; a larger report gives jobfiles as differences where shorter


@dataclass
class Difference:
    """How one device's jobfile differs from the one quoted: its own lines that differ (fio
    options and sections) and how many comment lines differ besides."""

    label: str
    lines: list[str] = field(default_factory=list)
    comments: int = 0
    missing: int = 0  # lines of the quoted jobfile that this one does not have

    @property
    def key(self) -> tuple[object, ...]:
        return (self.label, tuple(self.lines), self.comments, self.missing)


@dataclass
class Variant:
    """One workload of a job (one workload hash) and the devices that ran it."""

    workload_hash: str
    labels: list[str]
    quoted_from: str = ""  # the device whose jobfile is quoted
    text: str | None = None  # None: no device's jobfile could be quoted (see `problems`)
    # in a large report, the text as a unified diff from the jobfile of job `against`
    against: str = ""
    diff: str = ""
    differences: list[Difference] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # jobfiles that could not be read


@dataclass
class QuotedJob:
    job: str
    variants: list[Variant]


@dataclass
class Jobfiles:
    """Every job's jobfile(s), and how a device's differ from the quoted one wherever that
    is the same for every job (`shared`: said once rather than under each job)."""

    jobs: list[QuotedJob] = field(default_factory=list)
    shared: list[Difference] = field(default_factory=list)
    as_differences: bool = False  # jobfiles given as differences from one quoted before


@dataclass
class _Run:
    label: str
    results: ResultsDir
    target: str
    repeat: int
    workload_hash: str
    ok: bool


def quoted_jobfiles(
    frame: pd.DataFrame, sweeps: list[ResultsDir], order: list[str], labels: list[str]
) -> Jobfiles:
    """Every job's jobfile(s) in `order` (the table's), the devices in `labels` order."""
    by_path = {str(results.path): results for results in sweeps}
    runs: dict[str, dict[str, list[_Run]]] = {}  # job -> label -> its runs
    columns = ["sweep", "host", "device", "group", "member", "label", "job", "repeat",
               "status", "workload_hash"]  # fmt: skip
    rows = frame[columns].drop_duplicates(["sweep", "label", "job", "repeat"])
    targets = {path: _target_names(results) for path, results in by_path.items()}
    for row in records(rows):
        results = by_path.get(row["sweep"])
        target = _target(row, targets.get(row["sweep"], {}))
        if results is None or target is None or not isinstance(row["workload_hash"], str):
            continue
        run = _Run(str(row["label"]), results, target, int(row["repeat"]),
                   row["workload_hash"], row["status"] == "ok")  # fmt: skip
        runs.setdefault(row["job"], {}).setdefault(run.label, []).append(run)
    found = []
    for job in order:
        mine = runs.get(job, {})
        variants: dict[str, Variant] = {}
        for label in [lb for lb in labels if lb in mine]:
            run, text, problem = _device_jobfile(mine[label], job)
            variant = variants.setdefault(run.workload_hash, Variant(run.workload_hash, []))
            variant.labels.append(label)
            _add(variant, run.label, text, problem)
        found.append(QuotedJob(job, list(variants.values())))
    quoted = Jobfiles(found, _shared(found))
    if len(order) > QUOTED_UP_TO:
        quoted.as_differences = True
        _as_differences(found)
    return quoted


def _shared(jobs: list[QuotedJob]) -> list[Difference]:
    """The devices whose jobfile differs from the quoted one in the same lines for every job
    (its target, as a rule): taken out of each job, to be said once."""
    variants = [v for job in jobs for v in job.variants]
    keys: dict[str, set[tuple[object, ...]]] = {}
    differing: Counter[str] = Counter()  # variants in which a device's jobfile differs
    ran: Counter[str] = Counter()  # variants a device ran
    for variant in variants:
        ran.update(variant.labels)
        for difference in variant.differences:
            keys.setdefault(difference.label, set()).add(difference.key)
            differing[difference.label] += 1
    shared = {label for label, found in keys.items()
              if len(found) == 1 and differing[label] == ran[label]}  # fmt: skip
    found: dict[str, Difference] = {}
    for variant in variants:
        kept = []
        for difference in variant.differences:
            if difference.label in shared:
                found.setdefault(difference.label, difference)
            else:
                kept.append(difference)
        variant.differences = kept
    return list(found.values())


def _as_differences(jobs: list[QuotedJob]) -> None:
    """Each jobfile as a unified diff from the last one quoted in full, where the diff
    changes at most a third of its lines; the others are quoted in full (and diffed from)."""
    reference: tuple[str, list[str]] | None = None  # the job quoted last, its lines
    for quoted in jobs:
        for variant in quoted.variants:
            if variant.text is None:
                continue
            lines = variant.text.splitlines()
            if reference is not None:
                diff = list(difflib.unified_diff(reference[1], lines, reference[0], quoted.job,
                                                 n=0, lineterm=""))  # fmt: skip
                changed = sum(1 for line in diff[2:] if line[:1] in "+-")
                if changed <= len(lines) / 3:
                    variant.against, variant.diff = reference[0], "\n".join(diff)
                    continue
            reference = (quoted.job, lines)


def _target_names(results: ResultsDir) -> dict[tuple[object, object], str]:
    """A sweep's run folder names (targets) by the frame's (host, device) of their rows."""
    names: dict[tuple[object, object], str] = {}
    for target in results.manifest.targets:
        names[(None, target.name)] = target.name
        if target.host is not None:  # a device on a fio server: the frame names its host
            names[(target.host.name, target.device)] = target.name
    return names


def _target(row: dict[str, Any], names: dict[tuple[object, object], str]) -> str | None:
    """The target (run folder) a frame row's run is in: a group's members share its one."""
    if isinstance(row["group"], str):
        return names.get((None, row["group"]))
    return names.get((row["host"], row["device"])) or names.get((None, row["device"]))


def _device_jobfile(runs: list[_Run], job: str) -> tuple[_Run, str | None, str]:
    """A device's jobfile of a job: its first finished run's (its repeats ran the same one),
    else that of another of its runs of the same workload that can be read, else none and
    why the first cannot be read."""
    tried = sorted(runs, key=lambda r: (not r.ok, r.repeat))
    first = tried[0]
    text, problem = _read(first, job)
    if text is None:
        for run in tried[1:]:
            if run.workload_hash == first.workload_hash:
                other, _ = _read(run, job)
                if other is not None:
                    return run, other, ""
    return first, text, problem


def _add(variant: Variant, label: str, text: str | None, problem: str) -> None:
    """One device's jobfile into its variant: quoted if it is the first to be read, else
    compared with the one quoted; one that could not be read is said so."""
    if text is None:
        variant.problems.append(f"{label}: {problem}")
        return
    if variant.text is None:
        variant.text, variant.quoted_from = text, label
        return
    if text != variant.text:
        variant.differences.append(_difference(label, variant.text, text))


def _read(run: _Run, job: str) -> tuple[str | None, str]:
    """A run's stored jobfile, or None and why it is not quoted (the reason names the file,
    never what it holds)."""
    path = run.results.run_dir(run.target, job, run.repeat) / JOBFILE
    files = run.results.files
    try:
        text = files.read_text(path, "jobfile")
    except StoredFileError as err:
        return None, f"{err} (in {run.results.path})"
    if len(text) > QUOTE_LIMIT:
        return None, (f"{files.name(path)} is {len(text) >> 10} KiB, far longer than a jobfile "
                      f"ssdcompare writes: not quoted (it is in {run.results.path})")  # fmt: skip
    return text, ""


def _difference(label: str, quoted: str, other: str) -> Difference:
    """The lines of `other` that differ from `quoted`: options quoted, comments counted."""
    found = Difference(label)
    mine, theirs = quoted.splitlines(), other.splitlines()
    if len(mine) == len(theirs):  # the usual case: the target's lines, in the same places
        pairs = [(a, b) for a, b in zip(mine, theirs, strict=True) if a != b]
        changed, removed = [b for _, b in pairs], 0
    else:
        changed, removed = [], 0
        matcher = difflib.SequenceMatcher(None, mine, theirs, autojunk=False)
        for kind, low, high, start, end in matcher.get_opcodes():
            if kind in ("replace", "insert"):
                changed += theirs[start:end]
            if kind in ("replace", "delete"):
                removed += max(0, (high - low) - (end - start))
    for line in changed:
        if line.lstrip().startswith((";", "#")):
            found.comments += 1
        else:
            found.lines.append(line)
    found.missing = removed
    return found
