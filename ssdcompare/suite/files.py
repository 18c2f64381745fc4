"""Loading suites: bundled ones from jobs/ by name, or a user's own YAML file by path."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from ssdcompare.errors import SsdcompareError, location, validation_problems
from ssdcompare.judge.steady import MAX_ROUNDS
from ssdcompare.pathwalk import walk
from ssdcompare.regularfile import RefusedFile, read_regular
from ssdcompare.resources import jobs_dir
from ssdcompare.suite.matrix import expand, listed, problems
from ssdcompare.suite.workload import Suite, SuiteSpec

SUITE_SUFFIXES = (".yaml", ".yml")
# A suite is a handful of levels deep (matrices, a matrix, its axes, an axis's values); the
# YAML reader recurses once per level, so a deeper file would exhaust Python's stack.
MAX_DEPTH = 50


# Aliases (*name) repeat a value without writing it again: a few lines can stand for
# billions of values ("a billion laughs"). A suite has hundreds; reading stops at the first
# value past this many.
MAX_VALUES = 100_000
# A suite file is a few KB (the biggest bundled one is under 10); reading YAML costs about
# 10 µs and 400 bytes of memory a byte, so a file far larger is refused before it is parsed.
MAX_SUITE_BYTES = 1 << 20


class _TooDeep(yaml.MarkedYAMLError):
    """Raised by the reader at the first value nested deeper than MAX_DEPTH."""


class _TooBig(yaml.YAMLError):
    """Raised when the document, aliases expanded, holds more than MAX_VALUES values."""


def _values(node: yaml.Node, memo: dict[int, int]) -> int:
    """How many values a node stands for once its aliases are expanded (counted once per
    node object: an alias is the same object again). A value that contains itself (`a: &a
    [*a]`) would expand for ever: it counts as too many."""
    if memo.get(id(node)) == -1:
        raise _TooBig("a value contains itself (an alias inside its own anchor)")
    if id(node) not in memo:
        memo[id(node)] = -1  # being counted
        count = 1
        if isinstance(node, yaml.MappingNode):
            count += sum(_values(k, memo) + _values(v, memo) for k, v in node.value)
        elif isinstance(node, yaml.SequenceNode):
            count += sum(_values(item, memo) for item in node.value)
        memo[id(node)] = count
    return memo[id(node)]


class _SuiteLoader(yaml.SafeLoader):
    """YAML as usual, except that:

    - the word `null` stays a string: in a suite it names fio's null I/O engine
      (`ioengine: null`), which plain YAML would turn into "no value";
    - a key given twice in one mapping is an error: plain YAML keeps the last silently, so a
      doubled `rw:` would quietly measure something else than the first line says;
    - nesting deeper than MAX_DEPTH is an error before it can exhaust the stack;
    - a document that holds more than MAX_VALUES values, aliases expanded, is an error at
      the first value past the bound, before the rest is read.
    """

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self._depth = 0
        self._values = 0  # so far, aliases expanded
        self._memo: dict[int, int] = {}  # values a node stands for, by node (see _values)
        self._open: set[str] = set()  # anchors of the values being read

    def _count(self, values: int) -> None:
        self._values += values
        if self._values > MAX_VALUES:
            raise _TooBig(f"more than {MAX_VALUES} values once its aliases are expanded")

    def compose_node(self, parent: yaml.Node | None, index: object) -> yaml.Node:
        self._depth += 1
        try:
            event = self.peek_event()
            if self._depth > MAX_DEPTH:
                raise _TooDeep(problem=f"nested more than {MAX_DEPTH} levels",
                               problem_mark=event.start_mark)  # fmt: skip
            anchor = getattr(event, "anchor", None)
            if isinstance(event, yaml.AliasEvent):
                if anchor in self._open:
                    raise _TooBig("a value contains itself (an alias inside its own anchor)")
                if anchor in self.anchors:  # else the base class says it is undefined
                    self._count(_values(self.anchors[anchor], self._memo))
                return super().compose_node(parent, index)
            self._count(1)
            if anchor is not None:
                self._open.add(anchor)
            try:
                return super().compose_node(parent, index)
            finally:
                self._open.discard(anchor or "")
        finally:
            self._depth -= 1

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: dict[object, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue  # `<<: *defaults` then a key of its own is an override, not a repeat
            key = self.construct_object(key_node, deep=deep)
            try:
                first = seen.get(key)
            except TypeError:
                continue  # an unhashable key: the base class says what is wrong with it
            if first is not None:
                raise yaml.constructor.ConstructorError(
                    problem=f"duplicate key {key!r} (first given on line {first + 1})",
                    problem_mark=key_node.start_mark,
                )
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep)


_SuiteLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:null"]
    if first in ("n", "N")
    else list(resolvers)
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


@dataclass(frozen=True)
class SuiteInfo:
    """One line of `ssdcompare suites`."""

    name: str
    description: str
    jobs: int
    duration_s: int
    writes: bool
    source: str | None
    path: Path
    precondition: tuple[str, ...] = ()  # the suite's own preconditioning steps
    states: tuple[str, ...] = ()  # the drive states it runs its jobs in, a pass each
    rounds_s: int = 0  # the most its rounds until steady state can take (precondition workload)
    fills: int = 0  # the fills it makes of each device (precondition fill, a full pass)


def bundled_suite_paths() -> dict[str, Path]:
    """Bundled suites by name (file stem), in name order."""
    paths = sorted(p for p in jobs_dir().iterdir() if p.suffix in SUITE_SUFFIXES)
    return {p.stem: p for p in paths}


def load_suite(name_or_path: str | Path) -> Suite:
    """Load a bundled suite by name (e.g. "optane-vs-nand") or a suite file by path.

    A bare name (no "/", no .yaml/.yml suffix, not a pathlib.Path) is only ever a bundled
    suite: a file of that name in the current folder, which anyone may have put there, never
    replaces it. A file is read when the text looks like a path ("./quick", "quick.yaml").
    """
    text = str(name_or_path)
    bundled = bundled_suite_paths()
    looks_like_path = (
        isinstance(name_or_path, Path) or "/" in text or Path(text).suffix in SUITE_SUFFIXES
    )
    if not looks_like_path:
        if text in bundled:
            return load_suite_file(bundled[text])
        raise _unknown_suite(text, bundled)
    path = Path(text).expanduser()
    if os.path.lexists(path):
        path = walk(path)  # never through a link someone else made
    if path.is_file():
        return load_suite_file(path)
    if path.is_dir():
        raise SsdcompareError(
            f"{text} is a directory; a suite is a suite file (.yaml) or the name of a bundled "
            "suite (`ssdcompare suites` lists them)"
        )
    if path.exists():
        raise SsdcompareError(
            f"{text} is not a regular file (a device, a pipe?); a suite is a .yaml file"
        )
    raise SsdcompareError(f"suite file {text} does not exist")


def _unknown_suite(text: str, bundled: dict[str, Path]) -> SsdcompareError:
    here = ""
    if os.path.lexists(text):
        here = f"; to use the file {text} in this folder, give its path: ./{text}"
    return SsdcompareError(
        f"unknown suite {text!r}; bundled suites: {', '.join(bundled)} "
        f"(or give the path of your own .yaml suite file; `ssdcompare suites` lists them){here}"
    )


def load_suite_file(path: Path) -> Suite:
    """Parse, validate and expand one suite file; errors name the file and the field."""
    try:
        text = read_regular(path, MAX_SUITE_BYTES).decode("utf-8")
    except RefusedFile as err:
        if "larger than" in err.reason:
            raise SsdcompareError(
                f"{path}: not a suite file: it {err.reason} (a suite is a few KB)"
            ) from None
        raise SsdcompareError(f"cannot read suite file {path}: it {err.reason}") from None
    except UnicodeDecodeError:
        raise SsdcompareError(f"{path}: not a text (UTF-8) file") from None
    try:
        data = yaml.load(text, Loader=_SuiteLoader)  # noqa: S506 - a SafeLoader subclass
    except _TooDeep as err:
        assert err.problem_mark is not None  # always set where it is raised
        raise SsdcompareError(
            f"{path}: not a suite file: nested more than {MAX_DEPTH} levels deep (at line "
            f"{err.problem_mark.line + 1}); a suite is a mapping only a few levels deep"
        ) from None
    except _TooBig as err:
        raise SsdcompareError(f"{path}: not a suite file: {err}") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(err, "problem", None) or str(err)
        raise SsdcompareError(f"{path}: not valid YAML{where}: {problem}") from None
    if not isinstance(data, dict):
        raise SsdcompareError(
            f"{path}: a suite file is a YAML mapping with name, description and workloads "
            "and/or matrices (see jobs/ for examples)"
        )
    try:
        spec = SuiteSpec.model_validate(data)
    except ValidationError as err:
        listing = "\n".join(
            f"  {line}" for line in listed([*_format_errors(err), *_later_problems(data, err)])
        )
        raise SsdcompareError(f"{path}: invalid suite:\n{listing}") from None
    return expand(spec, path=str(path))


# stand-ins for top-level fields that failed, so that the workloads can still be checked
_STAND_INS = {"name": "suite", "description": "", "source": None, "precondition": [],
              "states": [], "read_only": False}  # fmt: skip


def _later_problems(data: dict[str, Any], err: ValidationError) -> list[str]:
    """The problems of a suite's workloads and matrices when its top level has some too, so
    that every problem of the file is said at once. Not judged when the defaults themselves
    are wrong: every workload would then fail for their sake."""
    failed = {str(item["loc"][0]) for item in err.errors() if item["loc"]}
    if "defaults" in failed:
        return []
    partial = {key: value for key, value in data.items() if key not in failed}
    for key in failed & set(_STAND_INS):
        partial[key] = _STAND_INS[key]
    for key in ("name", "description"):
        partial.setdefault(key, _STAND_INS[key])
    try:
        spec = SuiteSpec.model_validate(partial)
    except ValidationError:
        return []  # nothing more can be told
    return problems(spec)


def _format_errors(err: ValidationError) -> list[str]:
    lines = []
    for parts, msg, item in validation_problems(err):
        loc = location(parts)
        if item["type"] == "string_type" and isinstance(item.get("input"), bool):
            msg += "; YAML reads yes/no/on/off/true/false as true or false: put it in quotes"
        if item["type"] == "extra_forbidden":
            msg = "unknown key; allowed: " + ", ".join(SuiteSpec.model_fields)
        lines.append(f"{loc or '(top level)'}: {msg}")
    return lines


def list_suites() -> list[SuiteInfo]:
    """Every bundled suite with its job count and measuring time per target."""
    infos = []
    for name, path in bundled_suite_paths().items():
        suite = load_suite_file(path)
        infos.append(
            SuiteInfo(
                name=name,
                description=suite.description,
                jobs=len(suite.workloads) * max(len(suite.states), 1),
                duration_s=suite.duration_s * max(len(suite.states), 1),
                writes=suite.writes,
                source=suite.source,
                path=path,
                precondition=tuple(suite.precondition),
                states=tuple(suite.states),
                rounds_s=MAX_ROUNDS * suite.duration_s if "workload" in suite.precondition else 0,
                fills=int("fill" in suite.precondition) + int("full" in suite.states),
            )
        )
    return infos
