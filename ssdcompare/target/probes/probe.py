"""What a probe is (see ssdcompare.target.probes)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ssdcompare.target.devices import Target

Snapshot = dict[str, Any]


@dataclass(frozen=True)
class ProbeColumn:
    """A frame column a probe gives (as ssdcompare.analysis.columns.Column, in the "Probes"
    part)."""

    name: str
    type: str  # "float" or "str"
    unit: str
    source: str


@dataclass(frozen=True)
class Probe:
    """Something read before and after each run. `read(target)` gives a snapshot (a JSON
    object) or None when there is nothing to read for that target; `values(before, after,
    seconds)` turns two stored snapshots and the seconds between them into column values
    (what cannot be worked out is left out, and reads as NaN)."""

    name: str
    columns: tuple[ProbeColumn, ...]
    read: Callable[[Target], Snapshot | None]
    values: Callable[[Snapshot, Snapshot, float], dict[str, Any]]
