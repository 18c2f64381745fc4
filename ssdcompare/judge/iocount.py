"""fio's count of a run's I/O against the block layer's own: did the device see what fio says
it did?

fio counts what it asked for and got back; the kernel counts, per block device, the requests
that reached the device's queue (`/sys/class/block/<name>/stat`, read before and after each
run by the diskstats probe). With direct I/O on a block device the two agree: every byte fio
read or wrote went through the device, and every I/O fio completed is a request the device
completed, or one merged into another (the kernel counts merges apart). Where they disagree
beyond that, the number does not describe the device alone:

- the device moved more bytes than fio asked for: another process used the device during
  the run (or the run's figures are not this device's);
- fewer bytes than fio counted, with buffered I/O (`direct=0`): the page cache served reads
  or held writes, and the figure measured memory;
- fewer bytes or requests than fio counted, with direct I/O: fio's output is not this
  device's, or its I/O went elsewhere.

Which comparisons are made depends on what can be known:
- a file target is counted on the device under its filesystem, which also carries the
  filesystem's journal and metadata and any other file's I/O: only a shortfall is told;
- a run with a ramp time counts the ramp on the device but not in fio's figures: in the
  directions the job does, only a shortfall is told (a reading job's device that was
  written to is still told);
- a merged "mixed" direction (unified_rw_reporting) is compared as reads and writes added.

The tolerance is BYTES_TOLERANCE of fio's count plus SLACK_BYTES (reads the kernel or udev
makes when a device is opened and closed: a partition-table scan, blkid's look after a write)
and, for requests, IOS_TOLERANCE plus SLACK_IOS. Trims and flushes are not compared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ssdcompare.units import format_bytes

BYTES_TOLERANCE = 0.02  # a share of fio's bytes: the counts agree within it, or they do not
SLACK_BYTES = 4 << 20  # what the kernel and udev read around a run besides fio
IOS_TOLERANCE = 0.02
SLACK_IOS = 256

OK, MISMATCH = "ok", "mismatch"


@dataclass(frozen=True)
class Counts:
    """One run's bytes and requests, read and written: fio's (io_bytes, total_ios) or the
    device's (sectors × 512, requests completed, requests merged)."""

    read_bytes: float
    write_bytes: float
    read_ios: float
    write_ios: float
    read_merges: float = 0.0
    write_merges: float = 0.0


@dataclass(frozen=True)
class IoCheck:
    result: str  # OK or MISMATCH
    reason: str | None  # None when OK


def check_io(fio: Counts, device: Counts, *, direct: bool, whole_device: bool,
             ramped: bool, merged_directions: bool = False) -> IoCheck:  # fmt: skip
    """fio's counts of a run against the device's, or why they disagree (module docstring).
    `whole_device`: the target is the block device itself (not a file on a filesystem);
    `ramped`: the run had a ramp time, which the device counts and fio does not;
    `merged_directions`: fio reported reads and writes added up (its "mixed" section), so
    `fio.read_*` holds both and `fio.write_*` is 0."""
    values = [*vars(fio).values(), *vars(device).values()]
    if any(not math.isfinite(v) or v < 0 for v in values):
        raise ValueError("counts are non-negative numbers")
    if merged_directions:
        device = Counts(device.read_bytes + device.write_bytes, 0.0,
                        device.read_ios + device.write_ios, 0.0,
                        device.read_merges + device.write_merges, 0.0)  # fmt: skip
    sides = (("read", "reads", fio.read_bytes, device.read_bytes),
             ("wrote", "writes", fio.write_bytes, device.write_bytes))  # fmt: skip
    for verb, noun, asked, seen in sides:
        slack = asked * BYTES_TOLERANCE + SLACK_BYTES
        if seen < asked - slack:
            return IoCheck(MISMATCH, _shortfall(verb, noun, asked, seen, direct))
        excess_told = whole_device and not (ramped and asked > 0)
        if excess_told and seen > asked + slack:
            return IoCheck(MISMATCH, (
                f"the device {verb} {format_bytes(seen)} where fio counted "
                f"{format_bytes(asked)}: {format_bytes(seen - asked)} more than the job asked "
                "for, so another process used the device during the run (or fio's output is "
                "not this device's)"))  # fmt: skip
    if direct and whole_device and not merged_directions:
        for noun, completed, requests, merges in (
            ("reads", fio.read_ios, device.read_ios, device.read_merges),
            ("writes", fio.write_ios, device.write_ios, device.write_merges),
        ):
            if requests + merges < completed * (1 - IOS_TOLERANCE) - SLACK_IOS:
                return IoCheck(MISMATCH, (
                    f"fio completed {completed:,.0f} {noun} with direct I/O but the device "
                    f"completed {requests + merges:,.0f} (merges counted): fio's output is "
                    "not this device's, or its I/O went elsewhere"))  # fmt: skip
    return IoCheck(OK, None)


def _shortfall(verb: str, noun: str, asked: float, seen: float, direct: bool) -> str:
    said = (f"fio counted {format_bytes(asked)} of {noun} but the device {verb} only "
            f"{format_bytes(seen)}")  # fmt: skip
    if not direct:
        where = "served from" if noun == "reads" else "still held in"
        return (
            f"{said}: the rest was {where} the page cache (buffered I/O, direct=0), so "
            "the figure measures memory, not the drive"
        )
    return f"{said}: fio's output is not this device's, or its I/O went elsewhere"
