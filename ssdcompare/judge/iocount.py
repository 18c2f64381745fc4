"""fio's count of a run's I/O against the block layer's own: did the device see what fio says
it did?

fio counts what it asked for and got back; the kernel counts, per block device, the requests
that reached the device's queue (`/sys/class/block/<name>/stat`, read before and after each
run by the diskstats probe). With direct I/O on a block device the two agree: every byte fio
read or wrote went through the device, and every I/O fio completed is a request the device
completed, or one merged into another (the kernel counts merges apart). Where they disagree
beyond that, the number does not describe the device alone, and the check says how:

- SHARED: the device moved more bytes than fio asked for: another process used the device
  during the run;
- CACHED: fewer bytes than fio counted, with I/O through the page cache (`direct=0`, or an
  engine that maps the file, which ignores `direct`): the cache served reads or held writes,
  and the figure measured the host's memory;
- UNWRITTEN: fewer bytes read than fio counted from a file with direct I/O: its blocks were
  never written (a sparse or preallocated file), so the filesystem returned zeros without
  reading the device, and the figure measured the filesystem;
- ELSEWHERE: fewer bytes or requests than fio counted otherwise: fio's output is not this
  device's, or its I/O went elsewhere.

What cannot be known is not compared:
- a file target is counted on the device under its filesystem, which also carries the
  filesystem's journal and metadata and every other file's I/O: only a shortfall is told;
- through the page cache the kernel adds I/O of its own (read-ahead past what fio reads, a
  page read before part of it is written, earlier writes written back): only a shortfall is
  told;
- a run with a ramp time counts the ramp on the device but not in fio's figures, and so
  does a search for a latency target that settled (fio starts its figures anew for the last
  window): in the directions the job does, only a shortfall is told (a reading job's device
  that was written to is still told);
- a merged "mixed" direction (unified_rw_reporting) is compared as reads and writes added.

Shortfalls are looked for before excesses: they say what the figure measured. The tolerance
is BYTES_TOLERANCE of fio's count plus SLACK_BYTES (reads the kernel or udev makes when a
device is opened and closed: a partition-table scan, blkid's look after a write) and, for
requests, IOS_TOLERANCE plus SLACK_IOS. Trims and flushes are not compared.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ssdcompare.units import format_bytes

BYTES_TOLERANCE = 0.02  # a share of fio's bytes: the counts agree within it, or they do not
SLACK_BYTES = 4 << 20  # what the kernel and udev read around a run besides fio
IOS_TOLERANCE = 0.02
SLACK_IOS = 256

OK, SHARED, CACHED, UNWRITTEN, ELSEWHERE = "ok", "shared", "cached", "unwritten", "elsewhere"
RESULTS = (OK, SHARED, CACHED, UNWRITTEN, ELSEWHERE)
# fio's engines that reach a file through the page cache whatever `direct` says
PAGE_CACHE_ENGINES = frozenset({"mmap"})


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
    result: str  # one of RESULTS
    reason: str | None  # None when OK


@dataclass(frozen=True)
class Run:
    """How a run reached its device: what decides which comparisons mean something."""

    direct: bool  # the workload's `direct`
    whole_device: bool  # the target is the block device itself, not a file on a filesystem
    # fio's figures leave out part of the run's I/O, which the device counts: a ramp time, or
    # the windows of a search for a latency target before the last (fio starts its figures
    # anew when the search settles)
    partly_counted: bool = False
    merged_directions: bool = False  # fio's "mixed" section: reads and writes added
    engine: str | None = None  # fio's ioengine

    @property
    def cached(self) -> bool:
        """Whether the I/O went through the page cache."""
        return not self.direct or self.engine in PAGE_CACHE_ENGINES


def check_io(fio: Counts, device: Counts, run: Run) -> IoCheck:
    """fio's counts of a run against the device's, or how they disagree (module docstring).
    With `run.merged_directions`, `fio.read_*` holds reads and writes and `fio.write_*` 0."""
    values = [*vars(fio).values(), *vars(device).values()]
    if any(not math.isfinite(v) or v < 0 for v in values):
        raise ValueError("counts are non-negative numbers")
    if run.merged_directions:
        device = Counts(device.read_bytes + device.write_bytes, 0.0,
                        device.read_ios + device.write_ios, 0.0,
                        device.read_merges + device.write_merges, 0.0)  # fmt: skip
    sides = (("read", "reads", fio.read_bytes, device.read_bytes),
             ("wrote", "writes", fio.write_bytes, device.write_bytes))  # fmt: skip
    for verb, noun, asked, seen in sides:
        if seen < asked - _slack(asked):
            return _shortfall(verb, noun, asked, seen, run)
    for verb, _, asked, seen in sides:
        told = run.whole_device and not run.cached and not (run.partly_counted and asked > 0)
        if told and seen > asked + _slack(asked):
            return IoCheck(SHARED, (
                f"the device {verb} {format_bytes(seen)} where fio counted "
                f"{format_bytes(asked)}: {format_bytes(seen - asked)} more than the job asked "
                "for, so another process used the device during the run"))  # fmt: skip
    if run.whole_device and not run.cached and not run.merged_directions:
        for noun, completed, requests, merges in (
            ("reads", fio.read_ios, device.read_ios, device.read_merges),
            ("writes", fio.write_ios, device.write_ios, device.write_merges),
        ):
            if requests + merges < completed * (1 - IOS_TOLERANCE) - SLACK_IOS:
                return IoCheck(ELSEWHERE, (
                    f"fio completed {completed:,.0f} {noun} with direct I/O but the device "
                    f"completed {requests + merges:,.0f} (merges counted): fio's output is "
                    "not this device's, or its I/O went elsewhere"))  # fmt: skip
    return IoCheck(OK, None)


def _slack(asked: float) -> float:
    return asked * BYTES_TOLERANCE + SLACK_BYTES


def _shortfall(verb: str, noun: str, asked: float, seen: float, run: Run) -> IoCheck:
    said = (f"fio counted {format_bytes(asked)} of {noun} but the device {verb} only "
            f"{format_bytes(seen)}")  # fmt: skip
    if run.cached:
        where = "served from" if noun == "reads" else "still held in"
        how = ("the mmap engine goes through it whatever direct says" if run.direct
               else "buffered I/O, direct=0")  # fmt: skip
        return IoCheck(CACHED, f"{said}: the rest was {where} the page cache ({how}), so the "
                               "figure measures the host's memory, not the drive")  # fmt: skip
    if noun == "reads" and not run.whole_device:
        return IoCheck(UNWRITTEN, (
            f"{said}: the file's blocks were never written (a sparse or preallocated file), so "
            "the filesystem returned zeros without reading the device, and the figure "
            "measures the filesystem, not the drive"))  # fmt: skip
    return IoCheck(ELSEWHERE, f"{said}: fio's output is not this device's, or its I/O went "
                              "elsewhere")  # fmt: skip
