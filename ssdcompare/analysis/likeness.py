"""Like for like: do the compared devices differ in anything besides the drive?

A drive on a PCIe 3.0 x2 link, on the NUMA node far from the CPUs fio ran on, with another
scheduler, queue depth limit, write cache setting or firmware, or measured under another
kernel, CPU governor, fio version or I/O engine, loses to its twin for reasons that are not
the drive. This module gathers what the sweeps recorded of each compared device (its
manifest's device and host facts, the CPUs its runs' fio threads were seen on) and says
where they differ, in words.

Every physical device measured is compared: a lone device, and each member of a group (a
slow member may sit on a narrower link). The same device in two results folders is two
devices here (`loop0 @A`, `loop0 @B`), so a change between the sweeps shows.

Devices of different kinds (a RAM disk and a loop device, an NVMe drive and a file) differ
in block size, scheduler and the like because of what they are: those differences are told
as information, apart from the ones that matter between devices of one kind. Unknown
values (older results, a device on another host) are never a difference.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ssdcompare.errors import SsdcompareError
from ssdcompare.results.models import Manifest
from ssdcompare.results.store import ResultsDir
from ssdcompare.target.metadata import DeviceInfo, HostInfo
from ssdcompare.target.topology import cpulist, parse_cpulist


@dataclass
class Unit:
    """One physical device measured, and what was recorded of where and how it ran."""

    label: str
    kind: str | None  # the transport: nvme, scsi, loop, zram, file, ...
    device: DeviceInfo | None  # None: not recorded (a raw fio output)
    host: HostInfo | None  # None: another machine, or not recorded
    ioengines: tuple[str, ...] = ()
    fio_version: str | None = None
    fio_cpus: tuple[int, ...] = ()  # the CPUs its runs' fio threads were seen on


@dataclass(frozen=True)
class Difference:
    """One fact in which compared devices differ: each device's value, in words."""

    fact: str  # "PCIe link", "firmware", ...
    values: dict[str, str]  # label -> value in words
    expected: bool = False  # only between devices of different kinds: information

    def said(self) -> str:
        """Each value once, with its devices: "1.0 on nvme0; 2.0 on nvme1"."""
        by_value: dict[str, list[str]] = {}
        for label, value in self.values.items():
            by_value.setdefault(value, []).append(label)
        return "; ".join(f"{value} on {', '.join(labels)}" for value, labels in by_value.items())

    def words(self) -> str:
        """The fact and its values: "firmware: 1.0 on nvme0; 2.0 on nvme1"."""
        return f"{self.fact}: {self.said()}"


@dataclass
class Likeness:
    """What the compared devices differ in besides the drive."""

    units: list[Unit]
    differences: list[Difference] = field(default_factory=list)  # that matter
    kind_differences: list[Difference] = field(default_factory=list)  # from their kinds
    notes: list[str] = field(default_factory=list)  # how to read the facts (a VM's links)

    def lines(self) -> list[str]:
        """The findings in words, one line each: what differs that matters first, then what
        differs because the devices are of different kinds, then the notes."""
        kinds = self.kind_line()
        return [d.words() for d in self.differences] + ([kinds] if kinds else []) + self.notes

    def kind_line(self) -> str | None:
        """What the devices differ in because they are of different kinds, in one line."""
        if not self.kind_differences:
            return None
        kinds: dict[str, list[str]] = {}
        for unit in self.units:
            kinds.setdefault(unit.kind or "unknown", []).append(unit.label)
        named = ", ".join(f"{kind} ({', '.join(labels)})" for kind, labels in kinds.items())
        differ = ", ".join(f"{d.fact} ({d.said()})" for d in self.kind_differences)
        return (f"Different kinds of device, {named}: as such devices do, they also differ "
                f"in {differ}.")  # fmt: skip

    def headline(self) -> str | None:
        """One sentence for the top of a report ("Not like for like: PCIe link ..."); None
        when nothing that matters differs."""
        if not self.differences:
            return None
        return "Not like for like: " + ", ".join(d.words() for d in self.differences) + "."


# A fact: its name in words, whether it follows from the kind of device, and its value per
# device (None: unknown, never a difference).
_Fact = tuple[str, bool, Callable[[Unit], str | None]]


def link_words(unit: Unit) -> str | None:
    """The unit's device's PCIe link in words (pcie_words); None without one."""
    return pcie_words(unit.device)


def pcie_words(info: DeviceInfo | None) -> str | None:
    """A device's PCIe link: "8 GT/s x4", "8 GT/s x4 (of 16 GT/s x4)" when it runs below
    its maximum; None without one."""
    if info is None or (info.pcie_link_speed is None and info.pcie_link_width is None):
        return None
    now = _speed_width(info.pcie_link_speed, info.pcie_link_width)
    most = _speed_width(info.pcie_max_link_speed, info.pcie_max_link_width)
    return now if most in (now, "?") else f"{now} (of {most})"


def _speed_width(speed: str | None, width: int | None) -> str:
    """A link in short: "8 GT/s x4" from the kernel's "8.0 GT/s PCIe" and 4 lanes."""
    if speed is None and width is None:
        return "?"
    words = (speed or "?").replace(" PCIe", "").replace(".0 GT/s", " GT/s")
    return f"{words} x{width}" if width is not None else words


def _device_fact(name: str) -> Callable[[Unit], str | None]:
    def value(unit: Unit) -> str | None:
        found = getattr(unit.device, name, None) if unit.device is not None else None
        return None if found is None else str(found)

    return value


def _rotational(unit: Unit) -> str | None:
    flag = unit.device.rotational if unit.device is not None else None
    return None if flag is None else "yes" if flag else "no"


def _block_sizes(unit: Unit) -> str | None:
    info = unit.device
    if info is None or info.logical_block_bytes is None:
        return None
    physical = info.physical_block_bytes
    if physical in (None, info.logical_block_bytes):
        return f"{info.logical_block_bytes} B"
    return f"{info.logical_block_bytes}/{physical} B (logical/physical)"


def _host_fact(read: Callable[[HostInfo], object]) -> Callable[[Unit], str | None]:
    def value(unit: Unit) -> str | None:
        found = read(unit.host) if unit.host is not None else None
        return None if found in (None, "", []) else str(found)

    return value


def _governors(host: HostInfo) -> str | None:
    return ", ".join(host.cpu_governors) or None


def _machine(host: HostInfo) -> str | None:
    if host.virtual_machine is None:
        return None
    return "a virtual machine" if host.virtual_machine else "a physical machine"


def _fio_version(unit: Unit) -> str | None:
    return unit.fio_version or (unit.host.fio_version if unit.host is not None else None)


def _ioengines(unit: Unit) -> str | None:
    return ", ".join(unit.ioengines) or None


def placement(unit: Unit) -> str | None:
    """Where fio ran against where the device hangs off, on a host of several NUMA nodes:
    "fio on its node (1)" or "device on node 1, fio on CPUs 0-7 (node 0)"; None on a host
    of one node, or where the device's node or fio's CPUs are not known."""
    host, info = unit.host, unit.device
    if host is None or info is None or not _several_nodes(unit) or not unit.fio_cpus:
        return None
    if info.numa_node is None or info.numa_node < 0:  # the kernel's -1: no node
        return None
    # nodes as the kernel names them (a number each): anything else is no node
    nodes = {node for node, cpus in host.numa_nodes.items()
             if node.isdigit() and parse_cpulist(cpus) & set(unit.fio_cpus)}  # fmt: skip
    if nodes == {str(info.numa_node)}:
        return f"fio on the device's node ({info.numa_node})"
    where = ", ".join(sorted(nodes, key=int)) or "?"
    return (f"device on node {info.numa_node}, fio on CPUs {cpulist(set(unit.fio_cpus))} "
            f"(node {where})")  # fmt: skip


FACTS: list[_Fact] = [
    ("PCIe link", True, link_words),
    ("NUMA placement", False, placement),
    ("firmware", True, _device_fact("firmware")),
    ("scheduler", True, _device_fact("scheduler")),
    ("nr_requests", True, _device_fact("nr_requests")),
    ("write cache", True, _device_fact("write_cache")),
    ("max_sectors_kb", True, _device_fact("max_sectors_kb")),
    ("rotational", True, _rotational),
    ("block size", True, _block_sizes),
    ("CPU governor", False, _host_fact(_governors)),
    ("kernel", False, _host_fact(lambda h: h.kernel)),
    ("host", False, _host_fact(_machine)),
    ("fio", False, _fio_version),
    ("ioengine", False, _ioengines),
]


def compare_units(units: list[Unit]) -> Likeness:
    """The differences between `units` (see the module's docstring)."""
    found = Likeness(units=units)
    if len(units) < 2:
        return found
    for name, by_kind, read in FACTS:
        values = {u.label: v for u in units if (v := read(u)) is not None}
        if len(set(values.values())) < 2:
            continue
        if not by_kind:
            found.differences.append(Difference(name, values))
            continue
        within = _within_kinds(units, values)
        if within:
            found.differences.append(Difference(name, within))
        else:
            found.kind_differences.append(Difference(name, values, expected=True))
    found.notes = _notes(units)
    return found


def _within_kinds(units: list[Unit], values: dict[str, str]) -> dict[str, str]:
    """The values of the devices whose kind holds devices that differ in them."""
    kinds: dict[str | None, dict[str, str]] = {}
    for unit in units:
        if unit.label in values:
            kinds.setdefault(unit.kind, {})[unit.label] = values[unit.label]
    return {label: value for same in kinds.values() if len(set(same.values())) > 1
            for label, value in same.items()}  # fmt: skip


def _notes(units: list[Unit]) -> list[str]:
    """How to read the facts: a virtual machine's PCIe links are the ones it emulates."""
    virtual = sorted({u.host.hostname for u in units if u.host is not None
                      and u.host.virtual_machine and link_words(u) is not None})  # fmt: skip
    if not virtual:
        return []
    return [f"{', '.join(virtual)} is a virtual machine: its PCIe links are the ones the "
            "hypervisor emulates, recorded as they are, not the drives' own."]  # fmt: skip


def like_for_like(frame: pd.DataFrame, sweeps: Iterable[ResultsDir] = ()) -> Likeness:
    """What the devices of a frame (from `ssdcompare.load`, one or several results folders)
    differ in besides the drive. Each sweep's facts are read from its manifest (`sweeps`
    already opened, else opened by the frame's `sweep` column); a frame of raw fio outputs
    compares only what fio's output tells (its version and engine)."""
    opened = {str(s.path): s for s in sweeps}
    return compare_units(units_of(frame, opened))


def units_of(frame: pd.DataFrame, opened: dict[str, ResultsDir] | None = None) -> list[Unit]:
    """Each physical device of the frame (lone devices and group members, not a group's
    total), in the frame's order, with what its sweep recorded of it."""
    opened = dict(opened or {})
    if frame.empty or "label" not in frame.columns:
        return []
    # a frame written by an older version (read back from CSV) may lack some columns
    missing = [c for c in _USED if c not in frame.columns]
    frame = frame.assign(**dict.fromkeys(missing)) if missing else frame
    devices = frame[~(frame["group"].notna() & frame["member"].isna())]
    units = []
    seen_on: dict[str, dict[str, set[int]]] = {}  # per sweep: its targets' fio CPUs
    for label, rows in devices.groupby("label", sort=False):
        first = rows.iloc[0]
        results = _sweep(first["sweep"], opened)
        unit = _unit(str(label), first, results.manifest if results is not None else None)
        unit.ioengines = tuple(sorted({str(e) for e in rows["ioengine"].dropna()}))
        versions = rows["fio_version"].dropna()
        unit.fio_version = str(versions.iloc[0]) if len(versions) else None
        if results is not None and _placed(unit):
            if str(results.path) not in seen_on:
                seen_on[str(results.path)] = _fio_cpus(results)
            unit.fio_cpus = _cpus_of(seen_on[str(results.path)], rows)
        units.append(unit)
    return units


_USED = ("sweep", "host", "device", "group", "member", "remote", "ioengine", "fio_version")


def _sweep(path: object, opened: dict[str, ResultsDir]) -> ResultsDir | None:
    """The results folder a frame's row came from; None for a raw fio output or a folder
    that is gone or cannot be read (its facts are then unknown)."""
    if not isinstance(path, str):
        return None
    if path not in opened:
        try:
            opened[path] = ResultsDir.open(Path(path))
        except (SsdcompareError, OSError):
            return None
    return opened[path]


def _unit(label: str, row: pd.Series, manifest: Manifest | None) -> Unit:
    """A device as its sweep's manifest describes it (a device on another host: its own
    facts only, since the manifest's host is this machine)."""
    if manifest is None:
        return Unit(label=label, kind=None, device=None, host=None)
    remote = bool(row.get("remote")) if pd.notna(row.get("remote")) else False
    info = _device_info(manifest, str(row["device"]), row.get("host"))
    kind = info.transport if info is not None else None
    return Unit(label=label, kind=kind, device=None if remote else info,
                host=None if remote else manifest.host)  # fmt: skip


def _device_info(manifest: Manifest, device: str, host: object) -> DeviceInfo | None:
    """The manifest's record of a device by the frame's name for it: on its host where
    several hosts have a device of that name, else the one of that name."""
    named: dict[tuple[object, str], str] = {}
    for part in (p for t in manifest.targets for p in t.parts):
        named[(part.host.name if part.host is not None else None, part.device)] = part.name
        named.setdefault((None, part.device), part.name)
    wanted = named.get((host, device)) or named.get((None, device), device)
    return next((info for info in manifest.devices if info.name == wanted), None)


def _several_nodes(unit: Unit) -> bool:
    return unit.host is not None and len(unit.host.numa_nodes) > 1


def _placed(unit: Unit) -> bool:
    """Whether where fio ran can matter: a host of several nodes and a device on one."""
    node = unit.device.numa_node if unit.device is not None else None
    return _several_nodes(unit) and node is not None and node >= 0


def _fio_cpus(results: ResultsDir) -> dict[str, set[int]]:
    """The CPUs fio's threads were seen on, per target, over a sweep's stored statuses
    (read once per sweep)."""
    cpus: dict[str, set[int]] = {}
    for status in results.statuses():
        cpus.setdefault(status.target, set()).update(status.fio_cpus)
    return cpus


def _cpus_of(seen: dict[str, set[int]], rows: pd.DataFrame) -> tuple[int, ...]:
    """The CPUs fio ran on for a device's runs (a group member: its group's)."""
    targets = set(rows["group"].dropna()) | set(rows.loc[rows["group"].isna(), "device"])
    return tuple(sorted(set().union(*(seen.get(target, set()) for target in targets))))
