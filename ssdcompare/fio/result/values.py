"""Reading fio's values carefully: numbers, counts and objects from one part of the document,
and every value that could not be used named in plain words.

Numbers fio could not compute come out as missing, never as 0: fio prints floats with %f, so a
NaN or an infinity appears as a bare nan/-nan/inf (fio 2.x does this for empty directions), and
a value that is not a number at all (a damaged or edited file) is no better. Such values are read
as NaN (floats) or None (counts), and `FioOutput.warnings` names every field affected.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ssdcompare.fio.result.models import ALL_CLIENTS

# fio's counters are 64-bit; anything outside is not a count fio wrote (and would overflow floats)
_COUNT_MIN, _COUNT_MAX = -(2**63), 2**64
_LISTED = 8  # fields named per warning before "and N more"


class _Issues:
    """Values read as missing, gathered per entry, and said in plain words at the end."""

    def __init__(self) -> None:
        # label -> what fio printed ("nan", "inf", "-inf") -> fields
        self.non_finite: dict[str, dict[str, list[str]]] = {}
        # label -> "field (what it is)" for values that are not numbers at all
        self.not_numbers: dict[str, list[str]] = {}
        self.other: list[str] = []

    def bad(self, label: str, path: str, value: Any) -> None:
        fields = self.not_numbers.setdefault(label, [])
        text = f"{path} ({_kind(value)})"
        if text not in fields:
            fields.append(text)

    def warnings(self) -> list[str]:
        out = []
        for label, kinds in self.non_finite.items():
            said = " and ".join(
                f"{kind} for {_listed(fields)}" for kind, fields in kinds.items() if fields
            )
            out.append(f"{label}: fio printed {said}: read as missing")
        for label, fields in self.not_numbers.items():
            out.append(
                f"{label}: not a number where fio writes one: {_listed(fields)}; read as missing"
            )
        return out + self.other


def _listed(fields: Sequence[str]) -> str:
    if len(fields) <= _LISTED:
        return ", ".join(fields)
    return f"{', '.join(fields[:_LISTED])} and {len(fields) - _LISTED} more"


def _kind(value: Any) -> str:
    """What a JSON value is, in words, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, float):
        return f"a number ({value:.6g})"
    if isinstance(value, int):
        # a number of thousands of digits would not even convert to text
        return f"a number ({value})" if abs(value) < 10**24 else "a number of 25 digits or more"
    if isinstance(value, str):
        return f"a string ({value[:30]!r})"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _label(entry: dict[str, Any], client_server: bool) -> str:
    name = entry.get("jobname")
    if client_server and name == ALL_CLIENTS:
        return repr(ALL_CLIENTS)
    label = f"job {name!r}"
    host, port = entry.get("hostname"), entry.get("port")
    if client_server and isinstance(host, str):
        label += f" on {host}:{port}" if isinstance(port, int) else f" on {host}"
    return label


def _note_non_finite(
    doc: dict[str, Any], entries: list[dict[str, Any]], client_server: bool, issues: _Issues
) -> None:
    """Name every nan/inf in the final document, by entry and path (read.clat_ns.mean)."""
    key = "client_stats" if client_server else "jobs"
    parts: list[tuple[str, Any, str]] = [
        ("fio's output", value, name) for name, value in doc.items() if name != key
    ]
    parts += [(_label(entry, client_server), entry, "") for entry in entries]
    for label, value, path in parts:
        stack: list[tuple[str, Any]] = [(path, value)]
        while stack:  # a loop, not recursion: nesting depth is whatever the file holds
            where, item = stack.pop()
            if isinstance(item, float) and not math.isfinite(item):
                kind = "nan" if math.isnan(item) else ("inf" if item > 0 else "-inf")
                fields = issues.non_finite.setdefault(label, {}).setdefault(kind, [])
                if where not in fields:
                    fields.append(where)
            elif isinstance(item, dict):
                for name, inner in reversed(item.items()):
                    stack.append((f"{where}.{name}" if where else str(name), inner))
            elif isinstance(item, list):
                for index in range(len(item) - 1, -1, -1):
                    stack.append((f"{where}[{index}]", item[index]))


class _Reader:
    """Reads numbers from one part of the document; what it cannot use comes out missing.

    Values of the wrong type are named here, by their path; so are non-finite ones the walk
    over the document (`_note_non_finite`, for outputs holding the words nan or inf) did not
    name already, such as 1e999.
    """

    def __init__(self, issues: _Issues, label: str) -> None:
        self.issues = issues
        self.label = label

    def number(self, raw: dict[str, Any], key: str, path: str) -> float | None:
        """A finite float, or None when absent or unusable."""
        if key not in raw:
            return None
        value = raw[key]
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            self.issues.bad(self.label, path, value)
            return None
        if isinstance(value, float):
            if math.isfinite(value):
                return value
            kind = "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
            named = self.issues.non_finite.setdefault(self.label, {}).setdefault(kind, [])
            if path not in named:
                named.append(path)
            return None
        try:
            number = float(value)
        except (ValueError, OverflowError):
            self.issues.bad(self.label, path, value)
            return None
        if not math.isfinite(number):
            self.issues.bad(self.label, path, value)
            return None
        return number

    def count(self, raw: dict[str, Any], key: str, path: str) -> int | None:
        """An integer in the range of fio's counters, or None when absent or unusable."""
        if key not in raw:
            return None
        value = raw[key]
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            as_float = self.number(raw, key, path)
            if as_float is None:
                return None
            number = int(as_float)
        if not _COUNT_MIN <= number < _COUNT_MAX:
            self.issues.bad(self.label, path, value)
            return None
        return number

    def section(self, raw: dict[str, Any], key: str, path: str) -> dict[str, Any] | None:
        """An object, or None when absent (or null); anything else is noted."""
        value = raw.get(key)
        if value is None or isinstance(value, dict):
            return value
        self.issues.other.append(
            f"{self.label}: {path} is {_kind(value)}, where fio writes an object: left out"
        )
        return None
