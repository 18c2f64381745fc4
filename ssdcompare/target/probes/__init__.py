"""Probes: what is read around each run besides fio and the CPU samples.

A probe reads a snapshot of something (numbers, in a JSON object) just before fio starts and
again just after it ends. The sweep stores both snapshots of every probe in the run's folder
(`probes.json`, written by ResultsDir), and the results frame turns each probe's pair into
columns (registered in ssdcompare.analysis.columns under "Probes"). A probe never fails or delays a
run: one that cannot read (no such counter on this target, a remote host) gives no snapshot
and its columns are NaN; one that raises is recorded with the error, and the run goes on.

A probe may also watch the run (`Probe.watch`, read every `Probe.every_s` seconds on a thread
of its own, ssdcompare.target.probes.watch): its readings are stored with its snapshots
(`during`) and handed to its `values`.

Adding a probe: a module in this package with a `PROBE` object (name, columns, read, values;
see `Probe`), and one line in PROBES below.
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator
from typing import Any

from ssdcompare.target.devices import Target
from ssdcompare.target.probes import diskstats, health
from ssdcompare.target.probes.probe import Probe, ProbeColumn, Sample, Snapshot
from ssdcompare.target.probes.watch import watching

__all__ = ["PROBES", "Probe", "ProbeColumn", "Readings", "around", "columns_of",
           "probe_columns", "record", "snapshot"]  # fmt: skip
FORMAT = 1


PROBES: tuple[Probe, ...] = (
    diskstats.PROBE,
    health.PROBE,
)  # fmt: skip


def snapshot(target: Target, before: bool = True) -> Snapshot:
    """Every probe's reading of `target` now, and when (a monotonic clock's seconds). The
    first of PROBES (the block layer's count, which must cover fio's I/O and no more) is
    read nearest to fio: last before it, first after it, and the time is taken beside it, so
    a slow probe (a drive's health tool) adds nothing to its window.

    A stop (Ctrl-C, SIGTERM) while the probes read is kept in the snapshot (`stop`) with
    what was read so far; the probes not read then are marked so."""
    readings: dict[str, Any] = {}
    stop: KeyboardInterrupt | None = None
    taken = None if before else time.monotonic()
    for probe in reversed(PROBES) if before else PROBES:
        if stop is not None:
            readings[probe.name] = {"error": "not read: the sweep was asked to stop"}
            continue
        try:
            readings[probe.name] = probe.read(target)
        except KeyboardInterrupt as err:
            stop = err
            readings[probe.name] = {"error": "not read: the sweep was asked to stop"}
        except Exception as err:  # noqa: BLE001 - a probe never fails a run
            readings[probe.name] = {"error": f"{type(err).__name__}: {err}"}
    return {"t_s": time.monotonic() if taken is None else taken, "readings": readings,
            "stop": stop}  # fmt: skip


def record(
    before: Snapshot, after: Snapshot, during: dict[str, list[Sample]] | None = None
) -> dict[str, Any]:
    """What is stored in a run's probes.json: each probe's snapshots before and after, the
    seconds between them, and a watching probe's readings while the run went on."""
    during = during or {}
    return {
        "format_version": FORMAT,
        "seconds": round(after["t_s"] - before["t_s"], 6),
        "probes": {
            probe.name: {"before": before["readings"].get(probe.name),
                         "after": after["readings"].get(probe.name),
                         **({"during": during.get(probe.name, [])} if probe.watch else {})}
            for probe in PROBES
        },
    }  # fmt: skip


class Readings(dict[str, Any]):
    """What the probes read around a run, to store (`record`), and a stop asked for while
    they read after it (`stop`, None without one): the run it follows is stored first."""

    stop: KeyboardInterrupt | None = None


@contextlib.contextmanager
def around(target: Target) -> Iterator[Readings]:
    """Every probe read around the block (a run of fio): a snapshot before, the watching
    probes' readings while it runs, a snapshot after. The Readings given are filled once the
    block has ended without an error. A stop while the probes read before the block is
    raised there (nothing was measured); one while they read after it is kept in `stop`."""
    found = Readings()
    before = snapshot(target, before=True)
    if before["stop"] is not None:
        raise before["stop"]
    with watching(target, PROBES, before["t_s"]) as during:
        yield found
    after = snapshot(target, before=False)
    found.update(record(before, after, during()))
    found.stop = after["stop"]


def columns_of(stored: Any) -> dict[str, Any]:
    """The frame's probe columns of one run from its stored probes.json (None: none stored).
    Anything missing, damaged or impossible is NaN; this never raises."""
    values: dict[str, Any] = {}
    probes = stored.get("probes") if isinstance(stored, dict) else None
    version = stored.get("format_version") if isinstance(stored, dict) else None
    if not (type(version) is int and 1 <= version <= FORMAT):  # a newer one, read wrongly
        probes = None
    seconds = stored.get("seconds") if isinstance(stored, dict) else None
    for probe in PROBES:
        pair = probes.get(probe.name) if isinstance(probes, dict) else None
        found: dict[str, Any] = {}
        if _usable(pair) and _number(seconds):
            during = pair.get("during") if isinstance(pair.get("during"), list) else []
            extra = (during,) if probe.watch else ()
            try:
                found = probe.values(pair["before"], pair["after"], float(seconds), *extra)
            except (KeyError, TypeError, ValueError, ArithmeticError, AttributeError):
                found = {}
        for column in probe.columns:
            value = found.get(column.name)
            values[column.name] = value if _fits(column, value) else None
    return values


def _usable(pair: Any) -> bool:
    return (isinstance(pair, dict) and isinstance(pair.get("before"), dict)
            and isinstance(pair.get("after"), dict)
            and "error" not in pair["before"] and "error" not in pair["after"])  # fmt: skip


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _fits(column: ProbeColumn, value: Any) -> bool:
    if column.type == "float":
        return _number(value) and value >= 0
    return isinstance(value, str) and len(value) <= 4096


def probe_columns() -> list[ProbeColumn]:
    """Every probe's columns, in PROBES' order."""
    return [column for probe in PROBES for column in probe.columns]
