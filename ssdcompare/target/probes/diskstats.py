"""The block layer's own count of a run's I/O: each device's `stat` file in sysfs (the
counters iostat reads), before and after the run.

What fio counts is what it asked for; this is what reached the device's queue: a filesystem's
journal and metadata writes under a file target, requests merged on the way, flushes, and the
queue depth the device really saw (`disk_mean_inflight`, iostat's aqu-sz) beside the iodepth
asked for. A file target is counted on the block device its filesystem lives on (with any
other I/O to that filesystem during the run); a target on another host, or a filesystem
without a block device of its own (tmpfs), gives none.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ssdcompare.target.devices import Target, device_reached, kernel_name_of
from ssdcompare.target.probes.probe import Probe, ProbeColumn

# the fields of /sys/class/block/<name>/stat, in order (the kernel's Documentation/block/stat)
FIELDS = ("read_ios", "read_merges", "read_sectors", "read_ticks", "write_ios", "write_merges",
          "write_sectors", "write_ticks", "in_flight", "io_ticks", "time_in_queue", "discard_ios",
          "discard_merges", "discard_sectors", "discard_ticks", "flush_ios",
          "flush_ticks")  # fmt: skip
SECTOR = 512  # the counters' sector is 512 bytes whatever the device's own
_BUSY_SLACK_PCT = 110.0  # io_ticks counts whole milliseconds: a busy device reads a little over


def _device_number(part: Target) -> int | None:
    """The block device a part's I/O reaches (devices.device_reached); None when there is
    none or it cannot be looked at."""
    try:
        number = device_reached(part)
    except OSError:
        return None
    return number if os.major(number) != 0 else None  # 0: no block device (tmpfs, overlay)


def read(target: Target, sys_root: Path = Path("/sys")) -> dict[str, Any] | None:
    """Each local block device's counters (FIELDS) now; None when the target has none."""
    devices: dict[str, list[int]] = {}
    for part in target.parts:
        number = _device_number(part) if part.host is None and not part.remote else None
        name = kernel_name_of(number, sys_root) if number is not None else None
        if name is None or name in devices:
            continue
        try:
            text = (sys_root / "class" / "block" / name / "stat").read_text()
        except OSError:
            continue
        devices[name] = [int(field) for field in text.split()]
    return {"devices": devices} if devices else None


def values(before: dict[str, Any], after: dict[str, Any], seconds: float) -> dict[str, Any]:
    """The run's counts, added over the devices (busy: the busiest device's share of the
    time); a device whose counters went back (reset, replaced) makes them unknown, and so
    does a counter an older kernel does not have (its `stat` line is shorter)."""
    sums = dict.fromkeys(FIELDS, 0)
    busy = 0.0
    names = sorted(set(before["devices"]) & set(after["devices"]))
    if not names or seconds <= 0:
        return {}
    present = set(FIELDS)
    for name in names:
        old, new = before["devices"][name], after["devices"][name]
        deltas = {field: new[i] - old[i] for i, field in enumerate(FIELDS)
                  if i < len(old) and i < len(new) and field != "in_flight"}  # fmt: skip
        if any(isinstance(v, bool) for v in (*old, *new)) or any(
            not isinstance(d, int) or d < 0 for d in deltas.values()
        ):
            return {}
        present &= set(deltas)
        for field, delta in deltas.items():
            sums[field] += delta
        busy = max(busy, deltas.get("io_ticks", 0) / (seconds * 1000) * 100)
    found: dict[str, Any] = {"disk_devices": "+".join(names)}
    for column, fields, scale in _COLUMNS:
        if set(fields) <= present:
            found[column] = sum(sums[f] for f in fields) * scale
    if "time_in_queue" in present:
        found["disk_mean_inflight"] = sums["time_in_queue"] / (seconds * 1000)
    if "io_ticks" in present and busy <= _BUSY_SLACK_PCT:
        found["disk_busy_pct"] = min(busy, 100.0)
    return found


# the columns that are a counter's change over the run: (column, its fields, a factor)
_COLUMNS = (
    ("disk_read_ios", ("read_ios",), 1), ("disk_write_ios", ("write_ios",), 1),
    ("disk_read_merges", ("read_merges",), 1), ("disk_write_merges", ("write_merges",), 1),
    ("disk_read_bytes", ("read_sectors",), SECTOR),
    ("disk_write_bytes", ("write_sectors",), SECTOR),
    ("disk_discard_ios", ("discard_ios",), 1), ("disk_flush_ios", ("flush_ios",), 1),
)  # fmt: skip


PROBE = Probe(
    name="diskstats",
    columns=(
        ProbeColumn(
            "disk_devices",
            "str",
            "",
            "the block devices counted (their kernel names, "
            "joined by `+`): the target's own, or the one its file's filesystem is on",
        ),
        ProbeColumn(
            "disk_read_ios",
            "float",
            "I/Os",
            "read requests the devices completed "
            "during the run (`stat` field 1, after − before), after merging",
        ),
        ProbeColumn("disk_write_ios", "float", "I/Os", "write requests completed (field 5)"),
        ProbeColumn(
            "disk_read_merges",
            "float",
            "I/Os",
            "read requests merged into others before they reached the device (field 2): each "
            "was one of fio's I/Os",
        ),
        ProbeColumn("disk_write_merges", "float", "I/Os", "write requests merged (field 6)"),
        ProbeColumn("disk_read_bytes", "float", "bytes", "sectors read (field 3) × 512"),
        ProbeColumn(
            "disk_write_bytes",
            "float",
            "bytes",
            "sectors written (field 7) × 512: "
            "more than fio's `io_bytes` where a filesystem adds its journal",
        ),
        ProbeColumn("disk_discard_ios", "float", "I/Os", "discard (trim) requests (field 12)"),
        ProbeColumn(
            "disk_flush_ios",
            "float",
            "I/Os",
            "flush requests (field 16): fsync and fdatasync reach the device as these",
        ),
        ProbeColumn(
            "disk_mean_inflight",
            "float",
            "I/Os",
            "the mean number of requests in "
            "the devices' queues over the run (time in queue, field 11, over the "
            "run's time; iostat's aqu-sz): the queue depth the device saw",
        ),
        ProbeColumn(
            "disk_busy_pct",
            "float",
            "%",
            "the share of the run's time the busiest "
            "device had requests in flight (field 10, io_ticks)",
        ),
    ),
    read=read,
    values=values,
)
