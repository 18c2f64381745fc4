"""The drive's own health log around each run: its temperature, its thermal management
(throttling), the bytes it wrote itself, and its temperature from hwmon while the run goes on.

An NVMe drive's log (nvme-cli) counts how often and how long the drive throttled itself to
cool down (thermal management temperatures T1 and T2) and the minutes it spent above its
warning and critical temperatures: a run during which one of these went up was measured on a
drive slowing itself down (the `throttled` verdict, ssdcompare.judge.verdict). The bytes the
drive wrote against the bytes the host sent it (the disk's own block-layer counters, read at
the same moments) give its write amplification over the run. SATA and SAS drives (smartctl)
give their temperature, SAS drives their bytes written too; neither says whether it throttled.

Which drive: a block target's own disk (a partition's whole disk); a file target's is the
drive its filesystem is on, as for diskstats: throttling there slows the file's I/O too, and
its counters count every other write to that drive during the run. A loop device, a RAM disk,
a virtual or device-mapper disk has no health log of its own, and a device on another host
(`--hosts`) cannot be asked from here: each is "not available", with why, and its columns NaN.

While the run goes on the drive's temperature is read from hwmon every HWMON_EVERY_S: each
reading sends the drive a SMART command, and reading once a second has heated drives by
about 20 °C.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

from ssdcompare.target.devices import Target, device_reached, kernel_name_of, whole_disk
from ssdcompare.target.metadata import transport_of
from ssdcompare.target.probes.drivelog import (
    KELVIN,
    PERCENT_USED_MAX,
    Unavailable,
    celsius,
    counter,
    failure_words,
    hwmon_celsius,
    hwmon_inputs,
    nvme_log,
    smartctl_log,
)
from ssdcompare.target.probes.probe import Probe, ProbeColumn, Sample, Snapshot, Watcher

HWMON_EVERY_S = 5.0  # never more often: every reading is a SMART command to the drive
DATA_UNIT = 512_000  # bytes in one of NVMe's data units (1,000 blocks of 512 bytes)
SECTOR = 512
# the least the host must write for a write amplification to be given: the drive counts in
# data units (rounded up), so below 100 of them the figure would be off by more than 1 %
WA_MIN_HOST_BYTES = 100 * DATA_UNIT
_NVME_TRANSPORTS = ("nvme", "pcie", "tcp", "rdma", "fc")  # an NVMe controller's transports
_SMARTCTL_TRANSPORTS = ("scsi", "sata", "ata", "sas")
_NO_LOG = {
    "loop": "a loop device has no health log (the drive under its backing file is not read: "
            "other I/O reaches it too)",
    "zram": "a RAM disk has no health log", "ramdisk": "a RAM disk has no health log",
    "pmem": "persistent memory has no health log ssdcompare reads",
    "virtio": "a virtual disk: the host machine's drive cannot be seen from a guest",
    "xen": "a virtual disk: the host machine's drive cannot be seen from a guest",
    "device-mapper": "a device-mapper device: the drives under it are not read",
    "md": "an md RAID: the drives under it are not read",
}  # fmt: skip
# (column, the log's counter, bytes per unit) of the counts worked out as after - before
_NVME_DELTAS = (
    ("throttle_t1_events", "thm_temp1_trans_count", 1),
    ("throttle_t1_s", "thm_temp1_total_time", 1),
    ("throttle_t2_events", "thm_temp2_trans_count", 1),
    ("throttle_t2_s", "thm_temp2_total_time", 1),
    ("warning_temp_min", "warning_temp_time", 1), ("critical_temp_min", "critical_comp_time", 1),
    ("device_bytes_written", "data_units_written", DATA_UNIT),
    ("device_bytes_read", "data_units_read", DATA_UNIT), ("media_errors", "media_errors", 1),
)  # fmt: skip
_SAS_DELTAS = (
    ("device_bytes_written", "bytes_written", 1), ("device_bytes_read", "bytes_read", 1),
)  # fmt: skip


def read(target: Target, sys_root: Path = Path("/sys")) -> Snapshot:
    """Each drive's health log now (`drives`, by kernel name), or why it is not available."""
    drives: dict[str, Any] = {}
    for part in target.parts:
        try:
            disk = disk_of(part, sys_root)
        except Unavailable as why:
            drives[part.name] = {"unavailable": str(why)}
            continue
        except Exception as err:  # noqa: BLE001 - one drive's log never fails the others
            drives[part.name] = {"unavailable": f"its drive could not be found: "
                                                f"{failure_words(err)}"}  # fmt: skip
            continue
        if disk not in drives:
            drives[disk] = _drive_reading(disk, sys_root)
    return {"drives": drives}


def _drive_reading(disk: str, sys_root: Path) -> dict[str, Any]:
    """One drive's reading, or why there is none: what its tool said, or what went wrong
    reading it (output no reading survives: digits int() refuses, JSON nested past what
    Python reads), so that the run's health columns say why rather than nothing."""
    try:
        return _read_drive(disk, sys_root)
    except Unavailable as why:
        return {"unavailable": str(why)}
    except Exception as err:  # noqa: BLE001 - one drive's log never fails the others
        return {"unavailable": f"the log could not be read: {failure_words(err)}"}


def disk_of(part: Target, sys_root: Path = Path("/sys")) -> str:
    """The whole disk (its kernel name) whose health a target's part is measured on: a block
    device's own (a partition's disk), a file's filesystem's. Unavailable: none here."""
    if part.remote:
        host = part.host.name if part.host is not None else "another host"
        raise Unavailable(f"on {host}: a drive on another host cannot be asked from here")
    try:
        number = device_reached(part)
    except OSError as err:
        raise Unavailable(f"{part.path} cannot be looked at: {err.strerror or err}") from None
    name = kernel_name_of(number, sys_root) if os.major(number) != 0 else None
    if name is None:
        raise Unavailable("the file's filesystem is on no block device (tmpfs, overlay)")
    return whole_disk(sys_root / "class" / "block" / name)


def _read_drive(disk: str, sys_root: Path) -> dict[str, Any]:
    """One drive's log through the tool for its transport, and the sectors the host had read
    and written on it at that moment (its block-layer counters)."""
    transport = transport_of(disk, sys_root)
    if disk.startswith("nvme") or transport in _NVME_TRANSPORTS:
        reading = nvme_log(f"/dev/{disk}")
    elif transport in _SMARTCTL_TRANSPORTS:
        reading = smartctl_log(f"/dev/{disk}")
    else:
        raise Unavailable(_NO_LOG.get(transport, f"a {transport} device has no health log "
                                                 "ssdcompare can read"))  # fmt: skip
    reading["transport"] = transport
    try:
        fields = (sys_root / "class" / "block" / disk / "stat").read_text().split()
    except OSError:
        return reading  # the write amplification is then unknown
    sectors = [counter(fields[i]) if len(fields) > 6 else None for i in (2, 6)]
    if None not in sectors:
        reading["host_sectors"] = {"read": sectors[0], "written": sectors[1]}
    return reading


def watch(target: Target, sys_root: Path = Path("/sys")) -> Watcher | None:
    """The drives' hwmon temperatures, to read while the run goes on (None: no drive of the
    target has one)."""
    inputs: dict[str, Path] = {}
    for part in target.parts:
        try:
            disk = disk_of(part, sys_root)
        except Unavailable:
            continue
        found = hwmon_inputs(disk, sys_root)
        if found:
            inputs[disk] = found[0]
    if not inputs:
        return None

    def reader() -> Snapshot | None:
        temperatures = {disk: hwmon_celsius(path) for disk, path in inputs.items()}
        known = {disk: t for disk, t in temperatures.items() if t is not None}
        return {"temperature_c": known} if known else None

    return reader


def values(
    before: Snapshot, after: Snapshot, seconds: float, samples: list[Sample]
) -> dict[str, Any]:
    """The run's columns from the drives' logs before and after it and the temperatures
    read during it; a group's counts added over its drives, its temperatures the hottest."""
    old, new = before["drives"], after["drives"]
    found: dict[str, Any] = {}
    missing = {name: reading["unavailable"] for name, reading in {**old, **new}.items()
               if "unavailable" in reading}  # fmt: skip
    if missing:
        found["health_unavailable"] = "; ".join(
            f"{name}: not available: {why}" for name, why in sorted(missing.items())
        )
    drives = sorted(name for name in set(old) & set(new) if name not in missing)
    if not drives:
        return found
    found["health_drives"] = "+".join(drives)
    found.update(_temperatures(old, new, drives, samples))
    found.update(_counts(old, new, drives))
    percent = [counter(_log_of(new[d]).get("percent_used"), PERCENT_USED_MAX) for d in drives]
    if all(p is not None for p in percent):
        found["percent_used"] = float(max(percent))  # type: ignore[type-var]
    found.update(_throttle_totals(found))
    found.update(_write_amplification(old, new, drives, found.get("device_bytes_written")))
    return found


def _log_of(reading: object) -> dict[str, Any]:
    """A stored reading's log ({} when it has none a figure can come from)."""
    log = reading.get("log") if isinstance(reading, dict) else None
    return log if isinstance(log, dict) else {}


def _celsius(reading: dict[str, Any]) -> float | None:
    """A stored reading's temperature in °C, checked again (a stored file may be older or
    damaged): None when it has none a drive reports."""
    log = _log_of(reading)
    if "temperature_c" in log:
        return celsius(log["temperature_c"])
    kelvin = counter(log.get("temperature"))
    # 0 K is what a drive without a sensor reports: no reading, not a temperature
    return celsius(round(kelvin - KELVIN, 2)) if kelvin else None


def _temperatures(
    old: dict[str, Any], new: dict[str, Any], drives: list[str], samples: list[Sample]
) -> dict[str, float]:
    """The hottest drive's temperature before and after, and the highest seen at all."""
    found: dict[str, float] = {}
    firsts = [_celsius(old[d]) for d in drives]
    lasts = [_celsius(new[d]) for d in drives]
    seen = [t for t in firsts + lasts if t is not None]
    for sample in samples:
        reading = sample.get("reading") if isinstance(sample, dict) else None
        during = reading.get("temperature_c") if isinstance(reading, dict) else None
        if isinstance(during, dict):
            seen += [t for t in (celsius(t) for d, t in during.items() if d in drives)
                     if t is not None]  # fmt: skip
    if all(t is not None for t in firsts):
        found["temp_before_c"] = max(firsts)  # type: ignore[type-var]
    if all(t is not None for t in lasts):
        found["temp_after_c"] = max(lasts)  # type: ignore[type-var]
    if seen and "temp_before_c" in found and "temp_after_c" in found:
        found["temp_max_c"] = max(seen)
    return {name: value for name, value in found.items() if math.isfinite(value) and value >= 0}


def _counts(old: dict[str, Any], new: dict[str, Any], drives: list[str]) -> dict[str, float]:
    """Each counter's increase over the run, added over the drives: unknown when a drive does
    not report it or it went back (a reset, another drive in its place)."""
    found: dict[str, float] = {}
    for column, key, unit in (*_NVME_DELTAS, *_SAS_DELTAS):
        deltas = []
        for drive in drives:
            first = counter(_log_of(old[drive]).get(key))
            last = counter(_log_of(new[drive]).get(key))
            if first is not None and last is not None and last >= first:
                deltas.append((last - first) * unit)
        if len(deltas) == len(drives) and column not in found:
            found[column] = float(sum(deltas))
    return found


def _throttle_totals(found: dict[str, Any]) -> dict[str, float]:
    totals = {}
    for total, parts in (("throttle_events", ("throttle_t1_events", "throttle_t2_events")),
                         ("throttle_s", ("throttle_t1_s", "throttle_t2_s"))):  # fmt: skip
        if all(part in found for part in parts):
            totals[total] = sum(found[part] for part in parts)
    return totals


def _write_amplification(
    old: dict[str, Any], new: dict[str, Any], drives: list[str], device_bytes: object
) -> dict[str, float]:
    """The bytes the drives wrote over those the host sent them (their block-layer counts read
    at the same moments), when the host wrote enough for the drive's units to tell: unknown
    when a drive's count is missing on either side or went back."""
    host = 0
    for drive in drives:
        first, last = _sectors_written(old[drive]), _sectors_written(new[drive])
        if first is None or last is None or last < first:
            return {}
        host += (last - first) * SECTOR
    if not isinstance(device_bytes, float) or host < WA_MIN_HOST_BYTES:
        return {}
    return {"write_amplification": device_bytes / host}


def _sectors_written(reading: dict[str, Any]) -> int | None:
    sectors = reading.get("host_sectors")
    return counter(sectors.get("written")) if isinstance(sectors, dict) else None


PROBE = Probe(
    name="health",
    columns=(
        ProbeColumn(
            "health_drives",
            "str",
            "",
            "the drives whose health log was read (kernel "
            "names joined by `+`): the target's own, or the one its file's filesystem "
            "is on; `health` in probes.json",
        ),
        ProbeColumn(
            "health_unavailable",
            "str",
            "",
            "why a drive's health log could not be "
            "read (`<drive>: not available: <why>`): no log (loop, RAM, virtual "
            "disks), nvme-cli or smartctl not installed, no permission, another host",
        ),
        ProbeColumn(
            "temp_before_c",
            "float",
            "°C",
            "the drive's temperature just before the "
            "run (NVMe: `temperature` − 273.15; smartctl: `temperature.current`); a "
            "group's hottest drive",
        ),
        ProbeColumn(
            "temp_max_c",
            "float",
            "°C",
            "the highest temperature read: before, "
            "after, and from hwmon (`temp1_input`) every 5 s while the run went on",
        ),
        ProbeColumn("temp_after_c", "float", "°C", "the drive's temperature just after the run"),
        ProbeColumn(
            "throttle_events",
            "float",
            "count",
            "thermal management transitions "
            "during the run (NVMe `thm_temp1_trans_count` + `thm_temp2_trans_count`, "
            "after − before); NaN for SATA/SAS drives, which do not count them",
        ),
        ProbeColumn(
            "throttle_s",
            "float",
            "s",
            "seconds the drive spent throttled during the "
            "run (`thm_temp1_total_time` + `thm_temp2_total_time`, after − before)",
        ),
        ProbeColumn(
            "throttle_t1_events",
            "float",
            "count",
            "transitions to thermal management "
            "temperature 1, light throttling (`thm_temp1_trans_count`)",
        ),
        ProbeColumn("throttle_t1_s", "float", "s", "seconds at T1 (`thm_temp1_total_time`)"),
        ProbeColumn(
            "throttle_t2_events",
            "float",
            "count",
            "transitions to thermal management "
            "temperature 2, heavy throttling (`thm_temp2_trans_count`)",
        ),
        ProbeColumn("throttle_t2_s", "float", "s", "seconds at T2 (`thm_temp2_total_time`)"),
        ProbeColumn(
            "warning_temp_min",
            "float",
            "min",
            "minutes above the drive's warning "
            "temperature during the run (`warning_temp_time`, after − before)",
        ),
        ProbeColumn(
            "critical_temp_min",
            "float",
            "min",
            "minutes above its critical temperature (`critical_comp_time`, after − before)",
        ),
        ProbeColumn(
            "device_bytes_written",
            "float",
            "bytes",
            "what the drive itself counts as "
            "written during the run: NVMe `data_units_written` (after − before) × "
            "512,000 (the drive counts whole units, rounded up); SAS: "
            "`scsi_error_counter_log.write.gigabytes_processed` × 10^9. The drive's "
            "count: every other write to it during the run is in it",
        ),
        ProbeColumn(
            "device_bytes_read",
            "float",
            "bytes",
            "what the drive counts as read "
            "(`data_units_read` × 512,000; SAS: `read.gigabytes_processed` × 10^9)",
        ),
        ProbeColumn(
            "write_amplification",
            "float",
            "×",
            "`device_bytes_written` over the "
            "sectors the host wrote to the whole disk (its `stat`, read with the log) "
            "× 512; given when the host wrote at least 100 data units (51.2 MB)",
        ),
        ProbeColumn(
            "percent_used",
            "float",
            "%",
            "the share of the drive's rated life used, "
            "after the run (`percent_used`; may pass 100)",
        ),
        ProbeColumn(
            "media_errors",
            "float",
            "count",
            "media errors the drive recorded during the run (`media_errors`, after − before)",
        ),
    ),
    read=read,
    values=values,
    watch=watch,
    every_s=HWMON_EVERY_S,
)
