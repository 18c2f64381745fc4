"""Expanding a suite file's matrices into the ordered workloads of a `Suite`.

A matrix is a product of axes (e.g. bs x iodepth) over fixed fields, with additions and
exclusions; every problem is reported with its place in the suite file.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from pydantic import ValidationError

from ssdcompare.errors import SsdcompareError, validation_problems
from ssdcompare.suite.realism import REALISM_KEYS, RealismKeys
from ssdcompare.suite.workload import (
    MAX_ID_LENGTH,
    RW_ALIASES,
    WORKLOAD_KEYS,
    MatrixSpec,
    Suite,
    SuiteSpec,
    Workload,
)
from ssdcompare.units import parse_size


def _normalise(key: str, value: Any) -> Any:
    """Compare exclude entries with workloads as values, not spellings ("4k" == 4096)."""
    if key in ("bs", "bs_bytes"):
        return parse_size(value)
    if key == "rw" and isinstance(value, str):
        return RW_ALIASES.get(value.lower(), value.lower())
    if key in REALISM_KEYS:  # read as the key reads it ("90/10" == "zoned:90/10:10/90")
        try:
            return getattr(RealismKeys.model_validate({key: value}), key)
        except ValidationError:
            return value
    return value


def _matches(raw: dict[str, Any], pattern: dict[str, Any]) -> bool:
    try:
        return all(
            k in raw and _normalise(k, raw[k]) == _normalise(k, v) for k, v in pattern.items()
        )
    except ValueError:
        return False


# A suite is tens of jobs, a big one a hundred or two; each job runs for a minute or more per
# device. Far more is a mistake (an axis too many), and expanding it would take minutes and
# gigabytes before saying so: the axes' sizes are checked before anything is expanded.
MAX_JOBS = 10_000
# A problem listing stops here: a suite with more is wrong in a few ways, said many times.
MAX_LISTED = 20


def _count(number: int) -> str:
    return f"{number:,}"


def _size_problems(spec: SuiteSpec) -> list[tuple[str, str]]:
    """Why a suite spec would expand to more than MAX_JOBS jobs, as (place, message), from
    its axes' sizes alone (nothing is expanded); empty when it would not."""
    sizes = [math.prod(len(values) for values in matrix.axes.values()) + len(matrix.include)
             for matrix in spec.matrices]  # fmt: skip
    total = len(spec.workloads) + sum(sizes)
    if total <= MAX_JOBS:
        return []
    advice = (f"a suite expands to at most {_count(MAX_JOBS)} jobs: give its axes fewer "
              "values, or split it into several suites")  # fmt: skip
    found = []
    for index, (matrix, size) in enumerate(zip(spec.matrices, sizes, strict=True)):
        if size > MAX_JOBS:
            name = f" ({matrix.name!r})" if matrix.name else ""
            product = " x ".join(f"{key} {len(values)}" for key, values in matrix.axes.items())
            include = f" + {len(matrix.include)} included" if matrix.include else ""
            found.append((f"matrices[{index}]{name}", f"its axes make {_count(size)} jobs "
                          f"({product}{include}); {advice}"))  # fmt: skip
    if not found:
        parts = [f"workloads {_count(len(spec.workloads))}"] if spec.workloads else []
        parts += [f"matrices[{i}] {_count(size)}" for i, size in enumerate(sizes)]
        found.append(("the suite", f"would expand to {_count(total)} jobs "
                      f"({', '.join(parts)}); {advice}"))  # fmt: skip
    return found


class _Expansion:
    """Collects the workloads of a suite spec in order, and every problem with its place.

    A problem that a combination of a matrix's axes causes (rather than one value of it) is
    said once per matrix with the first combination that has it and how many more do, not
    once per combination: a matrix can have thousands.
    """

    def __init__(self, spec: SuiteSpec) -> None:
        self.spec = spec
        # (place, message) -> (the first combination it was found in, how many); a problem
        # with a place of its own (an axis value, a base key) has no combination
        self.found: dict[tuple[str, str], list[Any]] = {}
        self.built: list[tuple[str, Workload]] = []
        self.defaults_origin = {k: f"defaults.{k}" for k in spec.defaults}

    def add(self, place: str, message: str, combination: str = "") -> None:
        """A problem at `place`; one of a matrix's combinations names it too."""
        entry = self.found.setdefault((place, message), [combination, 0])
        entry[1] += 1

    @property
    def problems(self) -> list[str]:
        """Every problem, each once, in the order found."""
        listed = []
        for (place, message), (combination, times) in self.found.items():
            if combination:
                more = f" and {_count(times - 1)} more" if times > 1 else ""
                more += " combinations" if times > 2 else " combination" if times == 2 else ""
                place = f"{place} {combination}{more}"
            listed.append(f"{place}: {message}")
        return listed

    def build(self, raw: dict[str, Any], origin: dict[str, str], where: str,
              combination: str = "") -> None:  # fmt: skip
        """Validate one workload; a problem is named by the suite-file key that caused it
        (`combination`: the matrix combination it is, `where` then the matrix)."""
        try:
            workload = Workload.model_validate(raw)
        except ValidationError as err:
            self.invalid(err, origin, where, combination)
            return
        if len(workload.job_id) > MAX_ID_LENGTH:
            if combination:
                self.add(where, f"the id made from its options is over {MAX_ID_LENGTH} "
                         f"characters long; at most {MAX_ID_LENGTH}, as it names files: shorten "
                         "its options", combination)  # fmt: skip
                return
            made = "" if "id" in raw else " (made from its options: shorten them, or give it one)"
            self.add(
                origin.get("id", where),
                f"id {workload.job_id[:40]!r}... is {len(workload.job_id)} characters long; at "
                f"most {MAX_ID_LENGTH}, as it names files{made}",
            )
            return
        self.built.append((f"{where} {combination}" if combination else where, workload))

    def invalid(self, err: ValidationError, origin: dict[str, str], where: str,
                combination: str) -> None:  # fmt: skip
        """The problems of a workload that failed validation, each at the key that caused it
        where one did (an axis value: once, whatever the combination)."""
        for parts, msg, item in validation_problems(err):
            key = str(parts[0]) if parts else ""
            if not key:  # a check of the whole workload may still name its key first
                named, _, rest = msg.partition(": ")
                if named in origin and rest:
                    key, msg = named, rest
            if key in origin:
                self.add(origin[key], msg)
            elif combination and item["type"] == "missing":
                self.add(where, f"{key}: {msg} (give it in defaults, in the matrix's base or "
                         "as an axis)")  # fmt: skip
            elif combination:
                self.add(where, msg if not key else f"{key}: {msg}", combination)
            else:
                self.add(where + (f".{key}" if key else ""), msg)

    def entry(self, base: dict[str, Any], base_origin: dict[str, str], entry: dict[str, Any],
              where: str) -> None:  # fmt: skip
        """A single workload (or a matrix's `include`) on top of its defaults."""
        unknown = sorted(set(entry) - WORKLOAD_KEYS)
        if unknown:
            self.add(where, f"unknown key {', '.join(map(repr, unknown))}")
            return
        origin = {**base_origin, **{k: f"{where}.{k}" for k in entry}}
        self.build({**base, **entry}, origin, where)

    def matrix(self, index: int, matrix: MatrixSpec) -> None:
        prefix = f"matrices[{index}]"
        base = {**self.spec.defaults, **matrix.base}
        if matrix.name and "group" not in base:
            base["group"] = matrix.name
        base_origin = {**self.defaults_origin, **{k: f"{prefix}.base.{k}" for k in matrix.base}}
        keys = list(matrix.axes)
        used_excludes = set()
        # a value given twice is said once, and its combinations made once
        kept = [self.distinct_values(prefix, key, matrix.axes[key]) for key in keys]
        for positions in itertools.product(*kept):
            combo = {key: matrix.axes[key][at] for key, at in zip(keys, positions, strict=True)}
            raw = {**base, **combo}
            hits = [i for i, pattern in enumerate(matrix.exclude) if _matches(raw, pattern)]
            if hits:
                used_excludes.update(hits)
                continue
            origin = dict(base_origin)
            for key, at in zip(keys, positions, strict=True):
                origin[key] = f"{prefix}.axes.{key}[{at}]"
            self.build(raw, origin, prefix, str(combo))
        for i_index, extra_entry in enumerate(matrix.include):
            self.entry(base, base_origin, extra_entry, f"{prefix}.include[{i_index}]")
        for e_index, pattern in enumerate(matrix.exclude):
            if e_index not in used_excludes:
                self.add(f"{prefix}.exclude[{e_index}]",
                         f"{pattern} matches no combination of the axes (a typo?)")  # fmt: skip

    def distinct_values(self, prefix: str, key: str, values: list[Any]) -> list[int]:
        """The positions of an axis's values but those given before already (4k and 4096 are
        one block size), each of which is a problem."""
        first: dict[str, int] = {}
        kept = []
        for at, value in enumerate(values):
            try:
                same = repr(_normalise(key, value))
            except ValueError:
                same = f"{at} not a value"  # building the workload says why
            if same in first:
                self.add(f"{prefix}.axes.{key}[{at}]", f"{value!r} is the same value as "
                         f"{key}[{first[same]}]: each combination would be made twice; give "
                         "each value once")  # fmt: skip
            else:
                first[same] = at
                kept.append(at)
        return kept

    def check_unique_ids(self) -> None:
        seen: dict[str, str] = {}
        for where, workload in self.built:
            if workload.job_id in seen:
                self.add(where, f"duplicate id {workload.job_id!r} (also "
                         f"{seen[workload.job_id]}); give one of them an explicit id")  # fmt: skip
            else:
                seen[workload.job_id] = where


def problems(spec: SuiteSpec) -> list[str]:
    """Every problem of a suite spec's workloads and matrices, with its place in the file,
    each once (a bad default or axis value fails every combination it is in), at most
    MAX_LISTED of them and a line saying how many more."""
    return listed(_expanded(spec).problems)


def listed(found: list[str]) -> list[str]:
    """At most MAX_LISTED of `found`, and a line saying how many more there are."""
    if len(found) <= MAX_LISTED:
        return found
    return [*found[:MAX_LISTED], f"... and {_count(len(found) - MAX_LISTED)} more problems"]


def _expanded(spec: SuiteSpec) -> _Expansion:
    expansion = _Expansion(spec)
    too_many = _size_problems(spec)
    if too_many:  # said before a single workload is built
        for place, message in too_many:
            expansion.add(place, message)
        return expansion
    for index, entry in enumerate(spec.workloads):
        expansion.entry(spec.defaults, expansion.defaults_origin, entry, f"workloads[{index}]")
    for index, matrix in enumerate(spec.matrices):
        expansion.matrix(index, matrix)
    expansion.check_unique_ids()
    return expansion


def expand(spec: SuiteSpec, path: str | None = None) -> Suite:
    """Expand a suite spec into its ordered workloads.

    Raises SsdcompareError listing every problem with its location in the suite file
    (e.g. ``matrices[0].axes.bs[2]: 4q is not a size``).
    """
    expansion = _expanded(spec)
    label = path or spec.name
    if expansion.found:
        listing = "\n".join(f"  {p}" for p in listed(expansion.problems))
        raise SsdcompareError(f"{label}: invalid suite:\n{listing}")
    suite = Suite(
        name=spec.name,
        description=spec.description,
        source=spec.source,
        path=path,
        precondition=list(spec.precondition),
        states=list(spec.states),
        # a curve runs as its unpaced run and one paced run per point
        workloads=[run for _, w in expansion.built for run in w.curve_runs()],
        pts=spec.pts,
    )
    if spec.pts is not None:
        _check_pts(suite, label)
    if spec.read_only and suite.writes:
        writers = [w.job_id for w in suite.workloads if w.writes]
        more = (
            f" and {_count(len(writers) - MAX_LISTED)} more" if len(writers) > MAX_LISTED else ""
        )
        raise SsdcompareError(f"{label}: read_only suite has writing jobs: "
                              f"{', '.join(writers[:MAX_LISTED])}{more}")  # fmt: skip
    return suite


def _check_pts(suite: Suite, label: str) -> None:
    """A PTS test's groups fit its jobs, and its jobs run as the test runs them: no curves
    (a curve paces its runs after the unpaced one, which rounds do not), no drive states
    (the test purges and fills the drive itself)."""
    assert suite.pts is not None
    problems = suite.pts.problems([w.job_id for w in suite.workloads])
    if any(w.curve is not None for w in suite.workloads):
        problems.append("a PTS test has no latency-vs-load curves: drop curve")
    if suite.states:
        problems.append("a PTS test puts the drive in its state itself: drop states")
    if problems:
        listing = "\n".join(f"  {p}" for p in listed(problems))
        raise SsdcompareError(f"{label}: invalid suite:\n{listing}")
