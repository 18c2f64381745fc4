"""Expanding a suite file's matrices into the ordered workloads of a `Suite`.

A matrix is a product of axes (e.g. bs x iodepth) over fixed fields, with additions and
exclusions; every problem is reported with its place in the suite file.
"""

from __future__ import annotations

import itertools
from typing import Any

from pydantic import ValidationError

from ssdcompare.errors import SsdcompareError, validation_problems
from ssdcompare.units import parse_size
from ssdcompare.workload import (
    MAX_ID_LENGTH,
    RW_ALIASES,
    WORKLOAD_KEYS,
    MatrixSpec,
    Suite,
    SuiteSpec,
    Workload,
)


def _normalise(key: str, value: Any) -> Any:
    """Compare exclude entries with workloads as values, not spellings ("4k" == 4096)."""
    if key in ("bs", "bs_bytes"):
        return parse_size(value)
    if key == "rw" and isinstance(value, str):
        return RW_ALIASES.get(value.lower(), value.lower())
    return value


def _matches(raw: dict[str, Any], pattern: dict[str, Any]) -> bool:
    try:
        return all(
            k in raw and _normalise(k, raw[k]) == _normalise(k, v) for k, v in pattern.items()
        )
    except ValueError:
        return False


class _Expansion:
    """Collects the workloads of a suite spec in order, and every problem with its place."""

    def __init__(self, spec: SuiteSpec) -> None:
        self.spec = spec
        self.problems: list[str] = []
        self.built: list[tuple[str, Workload]] = []
        self.defaults_origin = {k: f"defaults.{k}" for k in spec.defaults}

    def build(self, raw: dict[str, Any], origin: dict[str, str], where: str) -> None:
        """Validate one workload; a problem is named by the suite-file key that caused it."""
        try:
            workload = Workload.model_validate(raw)
        except ValidationError as err:
            for parts, msg, _ in validation_problems(err):
                key = str(parts[0]) if parts else ""
                self.problems.append(
                    f"{origin.get(key, where + (f'.{key}' if key else ''))}: {msg}"
                )
            return
        if len(workload.job_id) > MAX_ID_LENGTH:
            made = "" if "id" in raw else " (made from its options: shorten them, or give it one)"
            self.problems.append(
                f"{origin.get('id', where)}: id {workload.job_id[:40]!r}... is "
                f"{len(workload.job_id)} characters long; at most {MAX_ID_LENGTH}, as it names "
                f"files{made}"
            )
            return
        self.built.append((where, workload))

    def entry(self, base: dict[str, Any], base_origin: dict[str, str], entry: dict[str, Any],
              where: str) -> None:  # fmt: skip
        """A single workload (or a matrix's `include`) on top of its defaults."""
        unknown = sorted(set(entry) - WORKLOAD_KEYS)
        if unknown:
            self.problems.append(f"{where}: unknown key {', '.join(map(repr, unknown))}")
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
        for values in itertools.product(*(matrix.axes[k] for k in keys)):
            combo = dict(zip(keys, values, strict=True))
            raw = {**base, **combo}
            hits = [i for i, pattern in enumerate(matrix.exclude) if _matches(raw, pattern)]
            if hits:
                used_excludes.update(hits)
                continue
            origin = dict(base_origin)
            for key, value in combo.items():
                origin[key] = f"{prefix}.axes.{key}[{matrix.axes[key].index(value)}]"
            self.build(raw, origin, f"{prefix} {combo}")
        for i_index, extra_entry in enumerate(matrix.include):
            self.entry(base, base_origin, extra_entry, f"{prefix}.include[{i_index}]")
        for e_index, pattern in enumerate(matrix.exclude):
            if e_index not in used_excludes:
                self.problems.append(
                    f"{prefix}.exclude[{e_index}]: {pattern} matches no combination of the axes"
                    " (a typo?)"
                )

    def check_unique_ids(self) -> None:
        seen: dict[str, str] = {}
        for where, workload in self.built:
            if workload.job_id in seen:
                self.problems.append(
                    f"{where}: duplicate id {workload.job_id!r} (also {seen[workload.job_id]}); "
                    "give one of them an explicit id"
                )
            else:
                seen[workload.job_id] = where


def problems(spec: SuiteSpec) -> list[str]:
    """Every problem of a suite spec's workloads and matrices, with its place in the file,
    each once (a bad default or axis value fails every combination it is in)."""
    return list(dict.fromkeys(_expanded(spec).problems))


def _expanded(spec: SuiteSpec) -> _Expansion:
    expansion = _Expansion(spec)
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
    if expansion.problems:
        listing = "\n".join(f"  {p}" for p in dict.fromkeys(expansion.problems))
        raise SsdcompareError(f"{label}: invalid suite:\n{listing}")
    suite = Suite(
        name=spec.name,
        description=spec.description,
        source=spec.source,
        path=path,
        precondition=list(spec.precondition),
        states=list(spec.states),
        workloads=[w for _, w in expansion.built],
    )
    if spec.read_only and suite.writes:
        writers = ", ".join(w.job_id for w in suite.workloads if w.writes)
        raise SsdcompareError(f"{label}: read_only suite has writing jobs: {writers}")
    return suite
