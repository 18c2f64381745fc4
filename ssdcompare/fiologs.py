"""fio's per-interval logs (write_iops_log, write_bw_log, write_lat_log) as typed samples.

Each line is `time, value, direction, block size, offset[, priority]`: time in ms since the
job started, the value averaged over the interval (`log_avg_msec`), direction 0 read,
1 write, 2 trim. Values: IOPS in I/Os per second, bandwidth in KiB/s, latency in ns (fio 3.x).
With `log_avg_msec=0` fio logs every I/O instead: its completion time, its latency and its
size. Each fio process writes its own file (`<prefix>_iops.<n>.log`); a file may be gzip-compressed
(`.log.gz`). A line fio cut short (a stopped run) is left out; anything else that is not a
log line is an error naming the file and line (never what the line holds).
"""

from __future__ import annotations

import gzip
import os
from dataclasses import dataclass
from pathlib import Path

from ssdcompare.errors import SsdcompareError

DIRECTIONS = {0: "read", 1: "write", 2: "trim"}
KINDS = ("iops", "bw", "lat")  # what write_iops_log, write_bw_log and write_lat_log give


class LogError(SsdcompareError):
    """A log file that is not what fio writes."""


@dataclass(frozen=True)
class Sample:
    """One interval of one fio process in one direction."""

    time_ms: int
    value: float
    direction: str
    size: int = 0  # bytes: the block size (of the I/O itself in a log of every I/O)


def parse_log(text: str, name: str) -> list[Sample]:
    """The samples of one fio log's text (ssdcompare.store reads the file, and unpacks a
    .gz); `name` names it in errors, which give the line's number, never what it holds."""
    samples = []
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        fields = [f.strip() for f in line.split(",")]
        try:
            time_ms, value, direction = int(fields[0]), float(fields[1]), int(fields[2])
        except (ValueError, IndexError):
            if number >= len(lines) - 1:
                continue  # the last line of a run that was stopped while fio wrote it
            raise LogError(f"{name} line {number} is not a fio log line") from None
        if direction in DIRECTIONS and time_ms >= 0:
            size = int(fields[3]) if len(fields) > 3 and fields[3].isdigit() else 0
            samples.append(Sample(time_ms, value, DIRECTIONS[direction], size))
    return samples


def log_files(folder: Path, prefix: str, kind: str, names: list[str] | None = None) -> list[Path]:
    """One run's log files of one kind, one per fio process, in process order
    ("<prefix>_<kind>.<n>.log", or .log.gz); `names`: the folder's, when already listed."""
    start = f"{prefix}_{kind}."
    try:
        names = os.listdir(folder) if names is None else names  # not a glob per pattern
    except OSError:
        return []
    found = []
    for name in names:
        if not name.startswith(start):
            continue
        middle = name[len(start) :].removesuffix(".gz")
        if not middle.endswith(".log"):
            continue
        number = middle.removesuffix(".log")
        found.append((int(number) if number.isdigit() else 0, folder / name))
    return [path for _, path in sorted(found)]


COMPRESS_ABOVE = 1 << 20  # bytes: a log of every I/O grows about 22 MB per million I/Os


def compress_large(folder: Path, prefix: str) -> list[Path]:
    """gzip a run's fio logs larger than COMPRESS_ABOVE in place (`.log` -> `.log.gz`, read
    back as they are); the compressed files."""
    done = []
    for path in sorted(folder.glob(f"{prefix}_*.log")):
        try:
            if path.stat().st_size <= COMPRESS_ABOVE:
                continue
            target = path.with_name(path.name + ".gz")
            with path.open("rb") as source, gzip.open(target, "wb", compresslevel=6) as out:
                while chunk := source.read(1 << 20):
                    out.write(chunk)
            path.unlink()
        except OSError:
            continue  # a log that cannot be compressed stays as fio wrote it
        done.append(target)
    return done
