"""fio's per-interval logs (write_iops_log, write_bw_log, write_lat_log) as typed samples.

Each line is `time, value, direction, block size, offset[, priority]`: time in ms since the
job started, the value averaged over the interval (`log_avg_msec`), direction 0 read,
1 write, 2 trim. Values: IOPS in I/Os per second, bandwidth in KiB/s, latency in ns (fio 3.x).
With `log_avg_msec=0` fio logs every I/O instead: its completion time, its latency and its
size. Each fio process writes its own file (`<prefix>_iops.<n>.log`); a file may be gzip-compressed
(`.log.gz`). A line fio cut short (a stopped run) is left out; anything else that is not a
log line is an error naming the file and line (never what the line holds). A log is read a
line at a time into compact columns (`Samples`): a log of every I/O holds millions of lines.
"""

from __future__ import annotations

import gzip
import os
from array import array
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from ssdcompare.errors import SsdcompareError
from ssdcompare.suite.workload import MAX_RUNTIME_S

DIRECTIONS = {0: "read", 1: "write", 2: "trim"}
# A job runs for at most its ramp and its runtime, a week each: a log line later than that
# is no line of fio's (and would stand for billions of idle seconds in between)
MAX_TIME_MS = 2 * MAX_RUNTIME_S * 1000
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


_DIRECTION_CODES = {name: code for code, name in DIRECTIONS.items()}


class Samples:
    """A log's samples in order, kept column by column in arrays (25 bytes a sample, where a
    Sample object costs over 100): a log of every I/O holds millions. `time_ms`, `value`,
    `direction_code` (DIRECTIONS' keys) and `size` are arrays.array, read by numpy without a
    copy (numpy.frombuffer); iterating gives Sample objects one at a time."""

    __slots__ = ("time_ms", "value", "direction_code", "size")

    def __init__(self, samples: Iterable[Sample] = ()) -> None:
        self.time_ms = array("q")
        self.value = array("d")
        self.direction_code = array("b")
        self.size = array("q")
        for sample in samples:
            self.append(sample.time_ms, sample.value, _DIRECTION_CODES[sample.direction],
                        sample.size)  # fmt: skip

    def append(self, time_ms: int, value: float, direction_code: int, size: int) -> None:
        """One more sample; OverflowError when a number does not fit its column (no log of
        fio's holds such a number)."""
        self.time_ms.append(time_ms)
        try:
            self.size.append(size)
        except OverflowError:
            self.time_ms.pop()
            raise
        self.value.append(value)
        self.direction_code.append(direction_code)

    def __len__(self) -> int:
        return len(self.time_ms)

    def __iter__(self) -> Iterator[Sample]:
        for time_ms, value, code, size in zip(
            self.time_ms, self.value, self.direction_code, self.size, strict=True
        ):
            yield Sample(time_ms, value, DIRECTIONS[code], size)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Samples):
            return NotImplemented
        return all(getattr(self, column) == getattr(other, column) for column in self.__slots__)

    def __repr__(self) -> str:
        return f"Samples({len(self)} samples)"


def _lines(chunks: Iterable[bytes]) -> Iterator[tuple[bytes, bool]]:
    """The lines of a text given in pieces, without their line ends, each with whether it is
    the last (what follows the last line end, possibly nothing)."""
    rest = b""
    for chunk in chunks:
        lines = (rest + chunk).split(b"\n")
        rest = lines.pop()
        for line in lines:
            yield line, False
    yield rest, True


def read_log(chunks: Iterable[bytes], name: str) -> Samples:
    """The samples of one fio log, read line by line as its bytes come in `chunks` (the
    whole text is never held: ssdcompare.results.store reads the file, unpacking a .gz as it goes);
    `name` names it in errors, which give the line's number, never what it holds."""
    samples = Samples()
    bad = 0  # a line that is no log line: fine only as the last (fio stopped writing it)
    for number, (line, last) in enumerate(_lines(chunks), start=1):
        if bad and (line or not last):
            raise LogError(f"{name} line {bad} is not a fio log line")
        if not line.strip():
            continue
        fields = line.split(b",")
        try:
            time_ms, value, direction = int(fields[0]), float(fields[1]), int(fields[2])
            if time_ms > MAX_TIME_MS:
                raise ValueError("later than any job runs")
            if direction in DIRECTIONS and time_ms >= 0:
                size = int(fields[3]) if len(fields) > 3 and fields[3].strip().isdigit() else 0
                samples.append(time_ms, value, direction, size)
        except (ValueError, IndexError, OverflowError):
            bad = number
    return samples


def parse_log(text: str, name: str) -> Samples:
    """The samples of one fio log's text (see read_log)."""
    return read_log([text.encode("utf-8", errors="replace")], name)


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
