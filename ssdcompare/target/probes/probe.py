"""What a probe is (see ssdcompare.target.probes)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ssdcompare.target.devices import Target

Snapshot = dict[str, Any]
# a reading taken while a run goes on: its seconds since the snapshot before the run, and what
# the probe's watch read then ({"t_s": 5.0, "reading": {...}})
Sample = dict[str, Any]
# a probe's watch made for one target: what to read at each turn (None: nothing to watch)
Watcher = Callable[[], Snapshot | None]


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
    (what cannot be worked out is left out, and reads as NaN).

    A probe may also watch the run (`watch`): `watch(target)` is called once as the run starts
    (on the watch's own thread, never in the run's way) and gives the reader to call every
    `every_s` seconds until the run ends, or None when there is nothing to watch on that
    target. A watching probe's `values` gets the readings as a fourth argument, `samples`
    (`Sample`s, in the order taken). `every_s` is the probe's own: a reading that costs the
    device something (a drive's temperature is a SMART command) is taken seldom."""

    name: str
    columns: tuple[ProbeColumn, ...]
    read: Callable[[Target], Snapshot | None]
    values: Callable[..., dict[str, Any]]
    watch: Callable[[Target], Watcher | None] | None = None
    every_s: float = 5.0
