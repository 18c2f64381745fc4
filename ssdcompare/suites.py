"""Loading suites: bundled ones from jobs/ by name, or a user's own YAML file by path."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ValidationError

from ssdcompare.errors import SsdcompareError, location, validation_problems
from ssdcompare.matrix import expand
from ssdcompare.resources import jobs_dir
from ssdcompare.workload import Suite, SuiteSpec

SUITE_SUFFIXES = (".yaml", ".yml")


class _SuiteLoader(yaml.SafeLoader):
    """YAML as usual, except that the word `null` stays a string: in a suite it names fio's
    null I/O engine (`ioengine: null`), which plain YAML would turn into "no value"."""


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


def bundled_suite_paths() -> dict[str, Path]:
    """Bundled suites by name (file stem), in name order."""
    paths = sorted(p for p in jobs_dir().iterdir() if p.suffix in SUITE_SUFFIXES)
    return {p.stem: p for p in paths}


def load_suite(name_or_path: str | Path) -> Suite:
    """Load a bundled suite by name (e.g. "optane-vs-nand") or a suite file by path."""
    text = str(name_or_path)
    path = Path(text).expanduser()
    looks_like_path = "/" in text or path.suffix in SUITE_SUFFIXES
    if path.is_file():
        return load_suite_file(path)
    if looks_like_path:
        raise SsdcompareError(f"suite file {text} does not exist")
    bundled = bundled_suite_paths()
    if text not in bundled:
        raise SsdcompareError(
            f"unknown suite {text!r}; bundled suites: {', '.join(bundled)} "
            "(or give the path of your own .yaml suite file; `ssdcompare suites` lists them)"
        )
    return load_suite_file(bundled[text])


def load_suite_file(path: Path) -> Suite:
    """Parse, validate and expand one suite file; errors name the file and the field."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise SsdcompareError(f"cannot read suite file {path}: {err.strerror}") from None
    except UnicodeDecodeError:
        raise SsdcompareError(f"{path}: not a text (UTF-8) file") from None
    try:
        data = yaml.load(text, Loader=_SuiteLoader)  # noqa: S506 - a SafeLoader subclass
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
        raise SsdcompareError(f"{path}: invalid suite:\n{_format_errors(err)}") from None
    return expand(spec, path=str(path))


def _format_errors(err: ValidationError) -> str:
    lines = []
    for parts, msg, item in validation_problems(err):
        loc = location(parts)
        if item["type"] == "string_type" and isinstance(item.get("input"), bool):
            msg += "; YAML reads yes/no/on/off/true/false as true or false: put it in quotes"
        if item["type"] == "extra_forbidden":
            msg = "unknown key; allowed: " + ", ".join(SuiteSpec.model_fields)
        lines.append(f"  {loc or '(top level)'}: {msg}")
    return "\n".join(lines)


def list_suites() -> list[SuiteInfo]:
    """Every bundled suite with its job count and measuring time per target."""
    infos = []
    for name, path in bundled_suite_paths().items():
        suite = load_suite_file(path)
        infos.append(
            SuiteInfo(
                name=name,
                description=suite.description,
                jobs=len(suite.workloads),
                duration_s=suite.duration_s,
                writes=suite.writes,
                source=suite.source,
                path=path,
            )
        )
    return infos
