"""fio's JSON output (json and json+) as typed results, read from what fio really prints.

Text before the JSON (notes, "fio: pid=..., err=..." lines, "fio: terminating on signal 2") is kept
as `notes`; the JSON starts at the first line that opens a JSON object ("{" then a key, or
nothing, on that line). With --status-interval fio prints several cumulative reports back to
back: the last one is the result. Text after the JSON (the normal report of
--output-format=json+,normal) is kept as `trailing_text`. Files are read as UTF-8 (bytes that are
not UTF-8 are replaced, never refused), or as UTF-16/UTF-32 when a byte-order mark says so or
the NUL bytes show UTF-16 without one (fio output saved by Windows tools).

Layouts understood:
- fio 3.18 and later: slat_ns/clat_ns/lat_ns with N; percentiles where enabled; json+ "bins"
  keyed by latency in ns.
- fio 3.0-3.17: the same *_ns objects without N; percentiles (and bins) for clat only; before
  3.2 no bw_bytes (bw is KiB/s).
- fio 2.x: slat/clat/lat in microseconds; io_bytes is in KiB despite its name; no bw_bytes; the
  percentile list padded with "0.00": 0 entries; json+ bins keyed by bucket index with the
  FIO_IO_U_PLAT_* constants.
All latencies come out in microseconds and byte counts in bytes, whatever the layout.

Numbers fio could not compute come out as missing, never as 0: fio prints floats with %f, so a
NaN or an infinity appears as a bare nan/-nan/inf (fio 2.x does this for empty directions), and
a value that is not a number at all (a damaged or edited file) is no better. Such values are read
as NaN (floats) or None (counts), and `FioOutput.warnings` names every field affected. The
parser returns a FioOutput or raises FioOutputError, whatever the input.

Client/server output ("client_stats") gives one entry per job and host, with hostname and port;
two servers on one host differ only by port, so entries are told apart by both. fio adds an "All
clients" aggregate whenever the servers report more than one entry in all; it is kept out of
`jobs` (so per-host sums are not doubled) and exposed as `client_aggregates`. fio writes on it
the hostname and port of the server that reported last, not of all of them. "global options" is
one object with one server (and, before fio added per-server lists, with several: every
server's global options then land in that one object, repeated keys and all); with several
servers newer fio (3.43 does) writes a list, one object per server holding its "hostname" and
"port" and then its options. Each job gets its own server's global options. With
--status-interval the client appends every report's entries to the same list: only the last
report of each job is kept, and the "All clients" entry, made from the first report, is dropped.

Jobs without group_reporting and with numjobs > 1 appear as several entries with the same
jobname and options; they are merged into one JobResult (see `merge_jobs`). Entries that share a
jobname but not their options are different jobs (two sections with one name) and stay apart. A
job with a non-zero error has no directions: the zeros fio prints for it are not measurements.
"""

from __future__ import annotations

import codecs
import json
import math
import re
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from fractions import Fraction
from itertools import accumulate, repeat
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import msgspec
from pydantic import BaseModel, Field

from ssdcompare.errors import SsdcompareError
from ssdcompare.fiooptions import UNMEASURED
from ssdcompare.pathwalk import ForeignLinkError, KernelViewError, walk
from ssdcompare.regularfile import RefusedFile, read_regular

Direction = Literal["read", "write", "trim", "sync", "mixed"]
# "mixed" appears instead of (or, with unified_rw_reporting=both, besides) read/write/trim
DIRECTIONS: tuple[Direction, ...] = ("read", "write", "trim", "sync", "mixed")
ALL_CLIENTS = "All clients"

# a line opening a JSON object: "{" followed by a key, the end of the object or the end of the
# line; a line such as "{x}: (groupid=0, ...)" (a job called "{x}" in a normal report) is text
_JSON_START = re.compile(r'^\{(?=[ \t\r]*(?:"|\}|\n|\Z))', re.MULTILINE)
_NOT_TEXT = "\ufffd\x7f"  # a byte that is no UTF-8 (replaced when decoded), DEL
# fio formats floats with %f, so a NaN or infinity would come out as a bare nan/-nan/inf
# every way a nan or inf can be written (fio's %f, or JSON's NaN / Infinity), as a word
_MAYBE_NON_FINITE = re.compile(r"(?<![A-Za-z])(nan|inf(inity)?)(?![A-Za-z])", re.IGNORECASE)
_NON_NUMBER = re.compile(r"(?<=[:,\[])(\s*)(-?)(nan|inf(?:inity)?)(?=\s*[,}\]])", re.IGNORECASE)

# fio's counters are 64-bit; anything outside is not a count fio wrote (and would overflow floats)
_COUNT_MIN, _COUNT_MAX = -(2**63), 2**64
_ERRNO_MAX = 2**31  # fio keeps a job's error in a C int
_LISTED = 8  # fields named per warning before "and N more"
# the largest fio output read: a json+ output with every bin of many jobs is a few MiB
FIO_OUTPUT_LIMIT = 256 << 20

_BOMS = (
    # UTF-32 first: its little-endian mark begins with UTF-16's
    (codecs.BOM_UTF32_LE, "utf-32-le", "UTF-32 LE"),
    (codecs.BOM_UTF32_BE, "utf-32-be", "UTF-32 BE"),
    (codecs.BOM_UTF8, "utf-8", "UTF-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le", "UTF-16 LE"),
    (codecs.BOM_UTF16_BE, "utf-16-be", "UTF-16 BE"),
)


class FioOutputError(SsdcompareError):
    """A file or text that holds no usable fio JSON; the message names the file and the fix.

    `reason` says the same without quoting anything the file holds (no job name, no value,
    no line of it), for files that came with someone else's results folder.
    """

    def __init__(
        self, message: str, reason: str = "is not fio output ssdcompare can read"
    ) -> None:
        super().__init__(message)
        self.reason = reason


class LatencyStats(BaseModel):
    """One of fio's latency objects (slat, clat, lat or sync lat), in microseconds.

    A value fio printed as nan/inf (or not as a number) is NaN.
    """

    n: int | None = None  # samples; None where fio did not print N (before 3.18)
    min_us: float
    max_us: float
    mean_us: float
    stddev_us: float  # sample standard deviation, as fio computes it (divides by n - 1)
    percentiles_us: dict[str, float] = Field(default_factory=dict)  # keys as fio prints them
    bins: dict[int, int] | None = None  # json+ histogram {latency in ns: count}
    # True when fio printed percentiles but they could not be kept: entries merged without bins
    percentiles_lost: bool = False

    def distribution_us(self) -> tuple[float, ...] | None:
        """The latency (µs) at each of DISTRIBUTION_PERCENTILES: from the json+ bins when fio
        wrote them (by fio's rule, see percentiles_from_bins), else from the percentiles fio
        printed (NaN where it printed none); None with neither."""
        if self.bins:
            return _distribution_from_bins(self.bins)
        if not self.percentiles_us:
            return None
        found = tuple(
            math.nan if (v := self.percentile_us(p)) is None else v
            for p in DISTRIBUTION_PERCENTILES
        )
        return None if all(math.isnan(v) for v in found) else found

    def percentile_us(self, p: float) -> float | None:
        """The p-th percentile (e.g. 99.9) in µs, or None when fio did not report it."""
        value = self.percentiles_us.get(f"{p:f}")
        if value is not None:
            return value
        for key, value in self.percentiles_us.items():
            try:
                if math.isclose(float(key), p, abs_tol=1e-9):
                    return value
            except ValueError:
                continue
        return None


class DirectionResult(BaseModel):
    """What one job did in one direction.

    For "sync" (fsync/fdatasync calls) fio reports only a count and a latency: io_bytes and
    runtime_ms are 0, and iops and bw_bytes are NaN (fio gives no rate for them). Elsewhere a
    rate fio printed as nan/inf (or not as a number) is NaN and such a count is None: unknown,
    not zero.
    """

    direction: Direction
    io_bytes: int | None
    bw_bytes: float  # bytes per second
    iops: float
    runtime_ms: int | None
    total_ios: int | None
    short_ios: int | None
    drop_ios: int | None
    clat: LatencyStats | None = None
    slat: LatencyStats | None = None
    lat: LatencyStats | None = None

    @property
    def latency(self) -> LatencyStats | None:
        """The latency to report: total latency (lat) when it has percentiles, else clat.

        fio computes percentiles for clat by default and for lat only with lat_percentiles=1.
        Mean, spread and percentiles are taken from one object so they describe the same
        thing; lat is preferred when it is complete because it is what the application waits
        for (submission + completion). Sync calls only have lat.
        """
        source = self.latency_source
        if source is None:
            return None
        return self.lat if source == "lat" else self.clat

    @property
    def latency_source(self) -> Literal["lat", "clat"] | None:
        """Which of fio's objects `latency` is: "lat" or "clat" (None when there is none)."""
        lat, clat = self.lat, self.clat
        if lat is not None and (lat.percentiles_us or lat.percentiles_lost or clat is None):
            return "lat"
        return "clat" if clat is not None else None


class JobResult(BaseModel):
    """One fio job (or group, or host) as reported, numjobs clones merged into one result.

    usr_cpu_pct and sys_cpu_pct are percent of ONE CPU per job process, averaged over the job's
    wall time (fio's getrusage figures). With group_reporting fio sums CPU time and runtime, so
    the figure stays a per-process average; merged entries are combined the same way. Cores
    busy with this job's threads ~ (usr + sys) / 100 x processes.
    """

    name: str
    groupid: int
    error: int  # errno of the first error, 0 = ok
    hostname: str | None = None  # client/server output only
    port: int | None = None  # client/server output only: tells two servers on one host apart
    job_runtime_ms: int | None = None  # summed over processes, as fio's group_reporting does
    usr_cpu_pct: float
    sys_cpu_pct: float
    ctx: int | None = None
    # fio processes this result covers: merged entries are counted; for a group_reporting entry
    # fio prints no member count, so numjobs is taken from the options (1 when not set)
    processes: int = 1
    group_reporting: bool | None = None  # None when the output cannot tell
    job_options: dict[str, str] = Field(default_factory=dict)  # the job's own, as fio printed
    # the global options in force for this job: its own server's in client/server output
    global_options: dict[str, str] = Field(default_factory=dict)
    directions: dict[str, DirectionResult] = Field(default_factory=dict)
    # directions fio printed with no I/O at all (zeros): a true zero, where a direction in
    # neither list is unknown (fio printed nothing usable for it)
    empty_directions: list[str] = Field(default_factory=list)
    steadystate: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """fio reported no error for this job."""
        return self.error == 0

    @property
    def moved(self) -> bool:
        """fio counted some I/O for this job (a server that refused a job reports zeros)."""
        return any((d.total_ios or 0) > 0 for d in self.directions.values())

    @property
    def total_iops(self) -> float:
        """IOPS of all directions added (sync has no rate and adds nothing)."""
        return sum(d.iops for d in self.directions.values() if d.iops and not math.isnan(d.iops))

    @property
    def options(self) -> dict[str, str]:
        """Every option fio printed for this job: its global options, then its own on top."""
        return {**self.global_options, **self.job_options}


class FioOutput(BaseModel):
    """One fio output file: its jobs (or hosts) and what fio printed around the JSON."""

    fio_version: str | None = None
    timestamp: int | None = None
    jobs: list[JobResult] = Field(default_factory=list)
    # the file's global options; with one list per server, those every server shares
    global_options: dict[str, str] = Field(default_factory=dict)
    disk_util: list[dict[str, Any]] = Field(default_factory=list)
    client_server: bool = False
    client_aggregates: list[JobResult] = Field(default_factory=list)  # "All clients" entries
    notes: list[str] = Field(default_factory=list)  # fio's text before the JSON
    trailing_text: str = ""  # fio's text after the JSON (e.g. the normal report)
    interim_reports: int = 0  # earlier --status-interval reports, superseded by the last
    warnings: list[str] = Field(default_factory=list)  # what the parser had to work around
    source: str = "<text>"


def file_iops(path: Path) -> float | None:
    """The IOPS of every job without an error in one fio output file, all directions added;
    None when the file is missing or unreadable, or no I/O was done."""
    if not path.is_file():
        return None
    try:
        output = parse_fio_file(path)
    except FioOutputError:
        return None
    return sum(j.total_iops for j in output.jobs if j.ok) or None


def parse_fio_file(path: str | Path) -> FioOutput:
    """Parse the file fio wrote (--output=FILE, or its captured stdout).

    Returns a FioOutput or raises FioOutputError naming the file and what is wrong with it.
    The file must be a regular one of at most FIO_OUTPUT_LIMIT bytes (a FIFO or a device is
    refused, never waited on or read without end). The path is followed one step at a time
    (pathwalk.walk): a symbolic link of one's own or root's is followed, one someone else made
    is refused, as is any step into /proc or /sys.
    """
    path = path if isinstance(path, Path) else Path(path)
    try:
        real = walk(path)
    except (ForeignLinkError, KernelViewError) as err:
        raise FioOutputError(
            str(err), "is reached through a link or place never followed"
        ) from None
    except ValueError:  # a NUL byte in the name: read_regular names it below
        real = path
    try:
        data = read_regular(real, FIO_OUTPUT_LIMIT, follow_links=False)
    except RefusedFile as err:
        if err.missing and "NUL" in err.reason:
            raise FioOutputError(
                f"{str(path)!r}: no such file (a file name has no NUL byte)", err.reason
            ) from None
        raise FioOutputError(f"{path}: cannot read fio's output: it {err.reason}",
                             err.reason) from None  # fmt: skip
    return parse_fio_bytes(data, str(path))


def parse_fio_bytes(data: bytes, source: str) -> FioOutput:
    """Parse what a fio output file holds; `source` names it in error messages."""
    text, encoding = decode_fio_bytes(data)
    output = parse_fio_text(text, source=source)
    if encoding is not None:
        output.warnings.insert(0, f"the file is {encoding}; read as such")
    return output


def decode_fio_bytes(data: bytes) -> tuple[str, str | None]:
    """The text of a saved fio output, and how it was encoded when that was not plain UTF-8.

    A byte-order mark decides (UTF-8, UTF-16 or UTF-32, either byte order). Without one, text
    in which every other byte is NUL is UTF-16 (fio's output is nearly all ASCII, and UTF-8
    text has no NUL bytes). Anything else is UTF-8, with bytes that are not UTF-8 replaced:
    fio copies file names and messages byte for byte, which must never make a result unreadable.
    """
    if data[:1] == b"{" and data[1:2] != b"\0":
        return data.decode("utf-8", errors="replace"), None  # JSON from its first byte
    for bom, codec, name in _BOMS:
        if data.startswith(bom):
            text = data[len(bom) :].decode(codec, errors="replace")
            return text, f"{name} with a byte-order mark"
    codec = _utf16_without_bom(data)
    if codec is not None:
        name = "UTF-16 LE" if codec == "utf-16-le" else "UTF-16 BE"
        return data.decode(codec, errors="replace"), f"{name} without a byte-order mark"
    return data.decode("utf-8", errors="replace"), None


def _utf16_without_bom(data: bytes) -> str | None:
    sample = data[:4096]
    pairs = len(sample) // 2
    if pairs < 4:
        return None
    even_nul, odd_nul = sample[0 : pairs * 2 : 2].count(0), sample[1 : pairs * 2 : 2].count(0)
    # ASCII in UTF-16: one byte of every pair is NUL and the other is not; a run of NUL bytes
    # (a file cut short by a crash) has both NUL and is not taken for UTF-16
    if odd_nul >= 0.75 * pairs and even_nul <= 0.05 * pairs:
        return "utf-16-le"
    if even_nul >= 0.75 * pairs and odd_nul <= 0.05 * pairs:
        return "utf-16-be"
    return None


def parse_fio_text(text: str, source: str = "<text>") -> FioOutput:
    """Parse fio's output text; `source` names it in error messages.

    Returns a FioOutput or raises FioOutputError; no other exception escapes, whatever the
    text holds.
    """
    try:
        return _unmeasured_left_out(_parse(text, source))
    except FioOutputError:
        raise
    except (
        ValueError, TypeError, LookupError, ArithmeticError, AttributeError, RecursionError
    ) as err:  # fmt: skip
        # every value is checked before use; this is the last line behind those checks, so
        # that a file nobody foresaw still ends a sweep's reading with a message, not a crash
        raise FioOutputError(
            f"{source}: fio's JSON holds something the parser cannot read"
            f" ({type(err).__name__}: {err}); give the file fio wrote with"
            " --output-format=json+",
            "holds something in fio's JSON the parser cannot read (fio never writes it)",
        ) from err


# --- the quick reading of a plain, modern output ------------------------------------------
#
# Most outputs are one JSON document written by fio 3.18 or later, alone in its file, for jobs
# run on this machine. Such an output is decoded here by msgspec against the layout below: the
# decoder checks each field the reading uses as it reads it (in C) and skips the many others.
# Anything the careful reader would read otherwise or have something to say about (text
# around the JSON, nan/inf, client/server, older layouts, a value of another type or out of
# range, a job name or an option twice, a histogram with a 0 ns bucket, which the decoder
# would also take "-0" for) returns None and is read the careful way. One difference is left:
# a number beyond any float (1e999) in a field nobody reads is named by the careful reading
# only when the text also holds the word nan or inf; fio writes neither such a number nor
# such a word in a plain output. Tests read every recorded output both ways, and edited
# ones, and compare.

_QUICK_VERSION = re.compile(r"fio-3\.(\d+)")
_PAIR = re.compile(rb'"[ \t\n\r]*:[ \t\n\r]*"')  # between an option's name and its value

# fio's counters as the quick reading takes them: an integer of 64 bits (the careful reading
# also takes unsigned ones above 2**63, which fio never prints for these fields)
_Count = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]
_Natural = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]
_Errno = Annotated[int, msgspec.Meta(ge=-_ERRNO_MAX, lt=_ERRNO_MAX)]
_UNSET = msgspec.UNSET
# a direction fio printed with zeros: it moved nothing (a true zero, not an unknown)
_EMPTY = object()


class _QuickLatency(msgspec.Struct):
    """One of fio's latency objects (ns) as the quick reading decodes it. Absent figures are
    NaN and absent lists empty; a null, a text or a float where a count belongs is no plain
    output, and the careful reading takes it."""

    N: _Count  # noqa: N815 (fio's name); printed by every fio from 3.18
    min: float = math.nan
    max: float = math.nan
    mean: float = math.nan
    stddev: float = math.nan
    percentile: dict[str, float] = {}
    # json+ histogram {latency in ns: count}; "01", " 1" or "-1" are no such key
    bins: dict[_Natural, _Natural] = {}


class _QuickDirection(msgspec.Struct):
    io_bytes: _Count | msgspec.UnsetType = _UNSET
    bw_bytes: float | msgspec.UnsetType = _UNSET
    iops: float = math.nan
    runtime: _Count | msgspec.UnsetType = _UNSET
    total_ios: _Count | msgspec.UnsetType = _UNSET
    short_ios: _Count | msgspec.UnsetType = _UNSET
    drop_ios: _Count | msgspec.UnsetType = _UNSET
    slat_ns: _QuickLatency | msgspec.UnsetType = _UNSET
    clat_ns: _QuickLatency | msgspec.UnsetType = _UNSET
    lat_ns: _QuickLatency | msgspec.UnsetType = _UNSET


class _QuickJob(msgspec.Struct):
    jobname: str
    error: _Errno
    groupid: _Count = 0
    # options objects are kept as their text, to be decoded and checked by _quick_options
    job_options: msgspec.Raw | msgspec.UnsetType = msgspec.field(
        name="job options", default=_UNSET
    )
    read: _QuickDirection | msgspec.UnsetType = _UNSET
    write: _QuickDirection | msgspec.UnsetType = _UNSET
    trim: _QuickDirection | msgspec.UnsetType = _UNSET
    sync: _QuickDirection | msgspec.UnsetType = _UNSET
    mixed: _QuickDirection | msgspec.UnsetType = _UNSET  # unified_rw_reporting
    usr_cpu: float = math.nan
    sys_cpu: float = math.nan
    ctx: _Count | msgspec.UnsetType = _UNSET
    job_runtime: _Count | msgspec.UnsetType = _UNSET
    steadystate: Any = None
    hostname: Any = _UNSET  # client/server output: the careful reading's


class _QuickOutput(msgspec.Struct):
    version: str = msgspec.field(name="fio version")
    jobs: list[_QuickJob]
    timestamp: _Count | msgspec.UnsetType = _UNSET
    global_options: msgspec.Raw | msgspec.UnsetType = msgspec.field(
        name="global options", default=_UNSET
    )
    disk_util: list[Any] = []
    client_stats: Any = _UNSET  # client/server output: the careful reading's


_decode_quick = msgspec.json.Decoder(_QuickOutput).decode
_decode_naturals = msgspec.json.Decoder(list[_Natural]).decode
_decode_options = msgspec.json.Decoder(dict[str, str]).decode


def _known(value: Any) -> Any:
    """None for a field the output left out."""
    return None if value is _UNSET else value


_Model = TypeVar("_Model", bound=BaseModel)
_set = object.__setattr__


def _built(cls: type[_Model], values: dict[str, Any]) -> _Model:
    """cls.model_construct(**values) for values that name every field: what model_construct
    sets on an instance, without its pass over the fields for defaults. A test compares the
    two for every model."""
    model = cls.__new__(cls)
    _set(model, "__dict__", values)
    _set(model, "__pydantic_fields_set__", set(values))
    _set(model, "__pydantic_extra__", None)
    _set(model, "__pydantic_private__", None)
    return model


class _NotQuick(Exception):
    """The output is not one the quick reading can take."""


def _quick(text: str, source: str) -> FioOutput | None:
    if not text.startswith("{"):
        return None
    try:
        # typed decoding: every field the reading uses is checked as it is decoded, and the
        # many it does not use are skipped; nan and inf (unquoted, as fio writes them) fail
        doc = _decode_quick(text)
    except (msgspec.MsgspecError, RecursionError, UnicodeError):
        return None  # (UnicodeError: a str holding a lone surrogate, which no file gives)
    found = _QUICK_VERSION.match(doc.version)
    if found is None or int(found.group(1)) < 18 or not doc.jobs or doc.client_stats is not _UNSET:
        return None
    try:
        common = _quick_options(doc.global_options)
        jobs = [_quick_job(entry, common) for entry in doc.jobs]
    except _NotQuick:
        return None
    if len({(job.groupid, job.name) for job in jobs}) != len(jobs):
        return None  # numjobs clones or a name twice: the careful reading merges or says
    return _built(FioOutput, dict(
        fio_version=doc.version, timestamp=_known(doc.timestamp), jobs=jobs, global_options=common,
        disk_util=[d for d in doc.disk_util if isinstance(d, dict)], client_server=False,
        client_aggregates=[], notes=[], trailing_text="", interim_reports=0, warnings=[],
        source=source,
    ))  # fmt: skip


def _quick_options(raw: msgspec.Raw | msgspec.UnsetType) -> dict[str, str]:
    """An options object (the last of its name, as the careful reading takes it too), when
    no option is written twice in it: the decoder would keep the last, where the careful
    reading joins every filename and says so. Its "name": "value" pairs are counted in its
    text, which holds no other '" : "' when no name or value holds a quote."""
    if raw is _UNSET:
        return {}
    try:
        options = _decode_options(raw)
    except msgspec.MsgspecError:
        raise _NotQuick from None
    if any('"' in item for item in (*options, *options.values())):
        raise _NotQuick
    if len(_PAIR.findall(bytes(raw))) != len(options):
        raise _NotQuick
    return options


def _quick_job(raw: _QuickJob, common: dict[str, str]) -> JobResult:
    if raw.hostname is not _UNSET:
        raise _NotQuick
    directions: dict[str, DirectionResult] = {}
    empty: list[str] = []
    if raw.error == 0:
        for name in DIRECTIONS:
            section = getattr(raw, name)
            if section is not _UNSET:
                result = _quick_direction(name, section)
                if result is _EMPTY:
                    empty.append(name)
                elif isinstance(result, DirectionResult):
                    directions[name] = result
    steadystate = raw.steadystate
    own = _quick_options(raw.job_options)
    grouped, processes = _reporting({**common, **own})
    return _built(JobResult, dict(
        name=raw.jobname, groupid=raw.groupid, error=raw.error, hostname=None, port=None,
        job_runtime_ms=_known(raw.job_runtime), usr_cpu_pct=raw.usr_cpu,
        sys_cpu_pct=raw.sys_cpu, ctx=_known(raw.ctx), processes=processes,
        group_reporting=grouped, job_options=own, global_options=common,
        directions=directions, empty_directions=empty,
        steadystate=steadystate if isinstance(steadystate, dict) else None,
    ))  # fmt: skip


def _quick_direction(name: str, raw: _QuickDirection) -> DirectionResult | object | None:
    if raw.slat_ns is _UNSET and raw.clat_ns is _UNSET and raw.lat_ns is _UNSET:
        raise _NotQuick  # a layout before fio 3.x: the careful reading knows them
    total_ios = _known(raw.total_ios)
    lat = _quick_latency(raw.lat_ns)
    if name == "sync":
        return _sync_direction(lat, total_ios)
    if total_ios is None or raw.bw_bytes is _UNSET:
        raise _NotQuick
    io_bytes = _known(raw.io_bytes)
    if not total_ios and not io_bytes:
        return _EMPTY  # fio prints empty directions with zeros: nothing was done
    return _built(DirectionResult, dict(
        direction=name, io_bytes=io_bytes, bw_bytes=raw.bw_bytes, iops=raw.iops,
        runtime_ms=_known(raw.runtime), total_ios=total_ios, short_ios=_known(raw.short_ios),
        drop_ios=_known(raw.drop_ios), clat=_quick_latency(raw.clat_ns),
        slat=_quick_latency(raw.slat_ns), lat=lat,
    ))  # fmt: skip


def _quick_latency(raw: _QuickLatency | msgspec.UnsetType) -> LatencyStats | None:
    if raw is _UNSET or raw.N == 0:
        return None
    bins: dict[int, int] | None = raw.bins or None  # {}: no histogram, as the careful one
    if bins is not None and 0 in bins:
        # the decoder reads "-0" as 0 too: beside "0" it would replace that bucket's count,
        # where the careful reading adds them (a 0 ns bucket is rare: it can take them all)
        raise _NotQuick
    if bins is not None and 0 in bins.values():
        bins = {value: count for value, count in bins.items() if count}
    return _built(LatencyStats, dict(
        n=raw.N, min_us=raw.min / 1000.0, max_us=raw.max / 1000.0, mean_us=raw.mean / 1000.0,
        stddev_us=raw.stddev / 1000.0,
        percentiles_us={k: v / 1000.0 for k, v in raw.percentile.items() if _is_percent(k)},
        bins=bins, percentiles_lost=False,
    ))  # fmt: skip


def _unmeasured_left_out(output: FioOutput) -> FioOutput:
    """The output with the latencies its jobs' options left unmeasured (disable_lat, ...) made
    unknown: fio prints zeros for them, or for slat under disable_lat a figure counted from a
    start it never took."""
    for job in (*output.jobs, *output.client_aggregates):
        options = job.options
        off = {kind for option, kinds in UNMEASURED.items()
               if _switched_on(options.get(option)) for kind in kinds}  # fmt: skip
        if off:
            for name, direction in list(job.directions.items()):
                job.directions[name] = direction.model_copy(update=dict.fromkeys(off))
    return output


def _switched_on(value: str | None) -> bool:
    """A boolean fio option as fio reads it: set bare ("") or to anything but 0/false/no/off."""
    if value is None:
        return False
    return value.strip().lower() not in ("0", "false", "no", "off")


def _parse(text: str, source: str) -> FioOutput:
    # a byte-order mark left in by whoever decoded the file
    text = text.removeprefix("\ufeff")
    quick = _quick(text, source)
    if quick is not None:
        return quick
    notes, documents, trailing = _split(text, source)
    doc = documents[-1]
    issues = _Issues()
    entries, client_server = _entries(doc, source)
    if _may_hold_non_finite(text):  # no such word: skip the walk (_Reader names the rest)
        _note_non_finite(doc, entries, client_server, issues)
    top = _Reader(issues, "fio's output")
    servers = {
        (_text(entry.get("hostname")), _port(entry.get("port")))
        for entry in entries
        if client_server and entry["jobname"] != ALL_CLIENTS
    }
    common, per_host = _global_options(doc.get("global options"), len(servers), top, issues)
    parsed = [
        _job(entry, index, client_server, source, issues) for index, entry in enumerate(entries)
    ]
    jobs, totals, common = _arrange(parsed, client_server, per_host, common, issues)
    disk_util = doc.get("disk_util")
    fio_version = doc.get("fio version")
    return FioOutput(
        fio_version=fio_version if isinstance(fio_version, str) else None,
        timestamp=top.count(doc, "timestamp", "timestamp"),
        jobs=_combine(jobs, issues),
        global_options=common,
        disk_util=[d for d in disk_util if isinstance(d, dict)]
        if isinstance(disk_util, list)
        else [],
        client_server=client_server,
        client_aggregates=totals,
        notes=notes,
        trailing_text=trailing,
        interim_reports=len(documents) - 1,
        warnings=issues.warnings(),
        source=source,
    )


def _arrange(
    parsed: list[JobResult],
    client_server: bool,
    per_host: dict[tuple[str | None, int | None], dict[str, str]] | None,
    common: dict[str, str],
    issues: _Issues,
) -> tuple[list[JobResult], list[JobResult], dict[str, str]]:
    """The jobs, the client/server totals ("All clients") and the file-wide options, each job
    with the global options of its own server."""
    aggregates = [(i, job) for i, job in enumerate(parsed) if client_server and _is_total(job)]
    per_job = [(i, job) for i, job in enumerate(parsed) if not (client_server and _is_total(job))]
    hosts = list(dict.fromkeys((job.hostname, job.port) for _, job in per_job))
    if per_host is not None:
        # with a list per server, the file-wide options are those every server has alike
        lists = [per_host.get(host, {}) for host in hosts] or list(per_host.values())
        common = _shared(lists)
    jobs = [
        job.model_copy(
            update={"global_options": per_host.get((job.hostname, job.port), {})}
            if per_host is not None
            else {"global_options": common}
        )
        for _, job in per_job
    ]
    totals = [job.model_copy(update={"global_options": common}) for _, job in aggregates]
    if client_server:
        first_total = aggregates[0][0] if aggregates else None
        positions = [i for i, _ in per_job]
        jobs, repeated = _last_client_reports(jobs, positions, first_total, issues)
        if repeated and totals:
            issues.other.append(
                f"the {ALL_CLIENTS!r} entry adds up the first --status-interval report only,"
                " not the final results: left out"
            )
            totals = []
    return jobs, totals, common


def _is_total(job: JobResult) -> bool:
    return job.name == ALL_CLIENTS


# --- finding the JSON in what fio printed ---------------------------------------------------


class _Repeated(dict):  # type: ignore[type-arg]
    """A JSON object in which some key appears more than once; `pairs` keeps every one.

    fio writes such objects: older clients put every server's global options into one object,
    and a client with --status-interval repeats each job's options once per report.
    """

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.pairs = pairs


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    return obj if len(obj) == len(pairs) else _Repeated(pairs)


def _json_int(digits: str) -> int | float:
    """A JSON integer as the careful reading decodes it: one of more digits than Python
    makes an int of (4300) is read as the float it is near (inf, then named and read as
    missing where it is used), not as a reason to refuse the whole output."""
    try:
        return int(digits)
    except ValueError:
        return float(digits)


def _split(text: str, source: str) -> tuple[list[str], list[dict[str, Any]], str]:
    if not text.strip():
        raise FioOutputError(
            f"{source}: empty, fio wrote no results (was it killed before it finished, e.g. by"
            " SIGKILL or the OOM killer?); rerun the job",
            "is empty: fio wrote no results (killed before it finished?)",
        )
    start = _JSON_START.search(text)
    if start is None:
        # what the file is, never what it holds: it may be anyone's file (a key, a config)
        raise FioOutputError(
            f"{source}: not JSON: {_what_it_begins_with(text)}; run fio with"
            " --output-format=json+ and read the file it writes",
            "holds no JSON (no line starts with '{'): it is not fio's JSON output",
        )
    decoder = json.JSONDecoder(object_pairs_hook=_object, parse_int=_json_int)
    documents: list[dict[str, Any]] = []
    notes_end = pos = start.start()
    while True:
        try:
            doc, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as err:
            repaired = text[:pos] + _NON_NUMBER.sub(_number_token, text[pos:])
            try:
                doc, end = decoder.raw_decode(repaired, pos)
            except json.JSONDecodeError:
                # a text line that merely looks like JSON's start when another follows; else
                # the report itself is cut off, and an earlier one is no final result
                following = _JSON_START.search(text, pos + 1)
                if following is None:
                    raise _damaged(source, err, documents) from None
                pos = following.start()
                continue
            except (ValueError, RecursionError) as other:
                raise _unreadable(source, other) from None
            text = repaired
        except (ValueError, RecursionError) as err:
            raise _unreadable(source, err) from None
        if not documents:
            notes_end = pos
        documents.append(doc)
        # another report follows (--status-interval), possibly after a normal-format report
        following = _JSON_START.search(text, end)
        if following is None:
            notes = [line.rstrip() for line in text[:notes_end].splitlines() if line.strip()]
            return notes, documents, text[end:].strip()
        pos = following.start()


def _counted(count: int, what: str) -> str:
    return f"{count} {what}{'' if count == 1 else 's'}"


def _what_it_begins_with(text: str) -> str:
    """What kind of content a text without JSON is, in words that quote none of it."""
    counted = f"{_counted(len(text.splitlines()), 'line')}, none starting with '{{'"
    head = text.lstrip()[:4096]
    if any(char in _NOT_TEXT or ord(char) < 32 and char not in "\t\n\r" for char in head):
        return f"it begins with binary data, not '{{' ({counted})"
    return f"it begins with text, not '{{' ({counted})"


def _may_hold_non_finite(text: str) -> bool:
    """Whether `text` can hold a nan or inf (as fio's %f or JSON's NaN / Infinity write them):
    a look for the letters first, as most outputs hold neither, then the word itself."""
    lowered = text.lower().replace('"minf"', "")  # fio's minor faults: every job has them
    if "nan" not in lowered and "inf" not in lowered:
        return False
    return _MAYBE_NON_FINITE.search(text) is not None


def _number_token(match: re.Match[str]) -> str:
    space, sign, word = match.groups()
    if word.lower().startswith("nan"):
        return f"{space}NaN"
    return f"{space}{sign}Infinity"


def _damaged(
    source: str, err: json.JSONDecodeError, documents: Sequence[dict[str, Any]]
) -> FioOutputError:
    where = f"line {err.lineno}, column {err.colno}: {err.msg}"
    after = f" after {len(documents)} complete status report(s)" if documents else ""
    return FioOutputError(
        f"{source}: fio's JSON is cut off or damaged ({where}){after}; the run probably"
        " stopped before fio finished writing (killed, disk full). Rerun the job",
        f"holds fio's JSON cut off or damaged ({where}){after}",
    )


def _unreadable(source: str, err: BaseException) -> FioOutputError:
    # Python refuses integers of thousands of digits and nesting deeper than its stack
    what = "nested too deeply" if isinstance(err, RecursionError) else str(err)
    return FioOutputError(
        f"{source}: fio's JSON cannot be read ({what}); fio never writes that, so the file is"
        " damaged: rerun the job",
        "holds JSON nested too deeply or a number too long to read: fio never writes that"
        if isinstance(err, RecursionError) or "digits" in what
        else "holds JSON that cannot be read: fio never writes that",
    )


# --- the shape of the document ------------------------------------------------------------


def _entries(doc: dict[str, Any], source: str) -> tuple[list[dict[str, Any]], bool]:
    """The job entries, checked: every one an object with a jobname and an errno."""
    client_server = "client_stats" in doc
    key = "client_stats" if client_server else "jobs"
    is_fio = "fio version" in doc
    what = "fio's JSON is not usable" if is_fio else "JSON, but not fio output"
    if key not in doc:
        keys = ", ".join(list(doc)[:6]) or "none"
        if is_fio:
            raise FioOutputError(
                f"{source}: {what}: it has no 'jobs' (or 'client_stats') list of results"
                f" (top-level keys: {keys}); rerun the job",
                "holds fio's JSON without a 'jobs' (or 'client_stats') list of results",
            )
        # anyone's JSON (a config, a token store): its keys are not quoted, only counted
        raise FioOutputError(
            f"{source}: {what} ({_counted(len(doc), 'top-level key')}; fio writes 'fio version'"
            " and 'jobs' or 'client_stats'); give the file fio wrote with --output-format=json+",
            "holds JSON, but not fio output (no 'fio version' and 'jobs')",
        )
    entries = doc[key]
    if not isinstance(entries, list):
        raise FioOutputError(
            f"{source}: {what}: '{key}' is {_kind(entries)}, where fio writes a list of job"
            " entries",
            f"holds a '{key}' that is no list of job entries",
        )
    for index, entry in enumerate(entries):
        place = f"{key}[{index}]"
        if not isinstance(entry, dict):
            raise FioOutputError(
                f"{source}: {what}: {place} is {_kind(entry)}, where fio writes a job entry"
                " (an object with 'jobname', 'groupid', 'error' and the results)",
                f"holds {place}, which is no job entry",
            )
        if "jobname" not in entry:
            keys = ", ".join(list(entry)[:6]) or "none"
            keys = f"its keys: {keys}" if is_fio else _counted(len(entry), "key")
            raise FioOutputError(
                f"{source}: {what}: {place} has no 'jobname' ({keys}); fio names"
                " every entry, so this one is damaged or was not written by fio",
                f"holds {place} without a 'jobname': damaged or not written by fio",
            )
        name = entry["jobname"]
        if not isinstance(name, str):
            raise FioOutputError(
                f"{source}: {what}: the 'jobname' of {place} is {_kind(name)}, not a name",
                f"holds {place} whose 'jobname' is not a name",
            )
        if "error" not in entry:
            named = f" ({name!r})" if is_fio else ""
            raise FioOutputError(
                f"{source}: {what}: {place}{named} has no 'error': whether the job failed"
                " is unknown",
                f"holds {place} without an 'error': whether the job failed is unknown",
            )
    return entries, client_server


# --- noting values that are not numbers --------------------------------------------------


class _Issues:
    """Values read as missing, gathered per entry, and said in plain words at the end."""

    def __init__(self) -> None:
        # label -> what fio printed ("nan", "inf", "-inf") -> fields
        self.non_finite: dict[str, dict[str, list[str]]] = {}
        # label -> "field (what it is)" for values that are not numbers at all
        self.not_numbers: dict[str, list[str]] = {}
        self.other: list[str] = []

    def bad(self, label: str, path: str, value: Any) -> None:
        fields = self.not_numbers.setdefault(label, [])
        text = f"{path} ({_kind(value)})"
        if text not in fields:
            fields.append(text)

    def warnings(self) -> list[str]:
        out = []
        for label, kinds in self.non_finite.items():
            said = " and ".join(
                f"{kind} for {_listed(fields)}" for kind, fields in kinds.items() if fields
            )
            out.append(f"{label}: fio printed {said}: read as missing")
        for label, fields in self.not_numbers.items():
            out.append(
                f"{label}: not a number where fio writes one: {_listed(fields)}; read as missing"
            )
        return out + self.other


def _listed(fields: Sequence[str]) -> str:
    if len(fields) <= _LISTED:
        return ", ".join(fields)
    return f"{', '.join(fields[:_LISTED])} and {len(fields) - _LISTED} more"


def _kind(value: Any) -> str:
    """What a JSON value is, in words, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, float):
        return f"a number ({value:.6g})"
    if isinstance(value, int):
        # a number of thousands of digits would not even convert to text
        return f"a number ({value})" if abs(value) < 10**24 else "a number of 25 digits or more"
    if isinstance(value, str):
        return f"a string ({value[:30]!r})"
    if isinstance(value, list):
        return "a list"
    return "an object"


def _label(entry: dict[str, Any], client_server: bool) -> str:
    name = entry.get("jobname")
    if client_server and name == ALL_CLIENTS:
        return repr(ALL_CLIENTS)
    label = f"job {name!r}"
    host, port = entry.get("hostname"), entry.get("port")
    if client_server and isinstance(host, str):
        label += f" on {host}:{port}" if isinstance(port, int) else f" on {host}"
    return label


def _note_non_finite(
    doc: dict[str, Any], entries: list[dict[str, Any]], client_server: bool, issues: _Issues
) -> None:
    """Name every nan/inf in the final document, by entry and path (read.clat_ns.mean)."""
    key = "client_stats" if client_server else "jobs"
    parts: list[tuple[str, Any, str]] = [
        ("fio's output", value, name) for name, value in doc.items() if name != key
    ]
    parts += [(_label(entry, client_server), entry, "") for entry in entries]
    for label, value, path in parts:
        stack: list[tuple[str, Any]] = [(path, value)]
        while stack:  # a loop, not recursion: nesting depth is whatever the file holds
            where, item = stack.pop()
            if isinstance(item, float) and not math.isfinite(item):
                kind = "nan" if math.isnan(item) else ("inf" if item > 0 else "-inf")
                fields = issues.non_finite.setdefault(label, {}).setdefault(kind, [])
                if where not in fields:
                    fields.append(where)
            elif isinstance(item, dict):
                for name, inner in reversed(item.items()):
                    stack.append((f"{where}.{name}" if where else str(name), inner))
            elif isinstance(item, list):
                for index in range(len(item) - 1, -1, -1):
                    stack.append((f"{where}[{index}]", item[index]))


class _Reader:
    """Reads numbers from one part of the document; what it cannot use comes out missing.

    Values of the wrong type are named here, by their path; so are non-finite ones the walk
    over the document (`_note_non_finite`, for outputs holding the words nan or inf) did not
    name already, such as 1e999.
    """

    def __init__(self, issues: _Issues, label: str) -> None:
        self.issues = issues
        self.label = label

    def number(self, raw: dict[str, Any], key: str, path: str) -> float | None:
        """A finite float, or None when absent or unusable."""
        if key not in raw:
            return None
        value = raw[key]
        if isinstance(value, bool) or not isinstance(value, (int, float, str)):
            self.issues.bad(self.label, path, value)
            return None
        if isinstance(value, float):
            if math.isfinite(value):
                return value
            kind = "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
            named = self.issues.non_finite.setdefault(self.label, {}).setdefault(kind, [])
            if path not in named:
                named.append(path)
            return None
        try:
            number = float(value)
        except (ValueError, OverflowError):
            self.issues.bad(self.label, path, value)
            return None
        if not math.isfinite(number):
            self.issues.bad(self.label, path, value)
            return None
        return number

    def count(self, raw: dict[str, Any], key: str, path: str) -> int | None:
        """An integer in the range of fio's counters, or None when absent or unusable."""
        if key not in raw:
            return None
        value = raw[key]
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        else:
            as_float = self.number(raw, key, path)
            if as_float is None:
                return None
            number = int(as_float)
        if not _COUNT_MIN <= number < _COUNT_MAX:
            self.issues.bad(self.label, path, value)
            return None
        return number

    def section(self, raw: dict[str, Any], key: str, path: str) -> dict[str, Any] | None:
        """An object, or None when absent (or null); anything else is noted."""
        value = raw.get(key)
        if value is None or isinstance(value, dict):
            return value
        self.issues.other.append(
            f"{self.label}: {path} is {_kind(value)}, where fio writes an object: left out"
        )
        return None


# --- options ------------------------------------------------------------------------------


def _options(raw: Any, reader: _Reader, path: str) -> dict[str, str]:
    """fio's options as strings, from an object in which a key may appear more than once.

    Repeats with one value are plain repetition (a client's --status-interval reports). Of
    different values the last is used, as an assignment later in a jobfile wins in fio, except
    for filename: fio opens every file given, so they are joined with ":", fio's own separator.
    """
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        reader.issues.other.append(
            f"{reader.label}: {path} is {_kind(raw)}, where fio writes an object: left out"
        )
        return {}
    pairs = raw.pairs if isinstance(raw, _Repeated) else list(raw.items())
    options: dict[str, str] = {}
    clashes: dict[str, list[str]] = {}
    for key, value in pairs:
        text = _option_text(value)
        if text is None:
            reader.issues.other.append(
                f"{reader.label}: {path}.{key} is {_kind(value)}, not an option value: left out"
            )
            continue
        if key in options and options[key] != text:
            clashes.setdefault(key, [options[key]]).append(text)
        options[key] = text
    for key, values in clashes.items():
        if key == "filename":
            names = dict.fromkeys(value.replace(":", "\\:") for value in values)
            options[key] = ":".join(names)
            outcome = f"fio uses every one: read as {options[key]}"
        else:
            outcome = "the last is used"
        reader.issues.other.append(
            f"{reader.label}: {path} sets {key} more than once ({', '.join(values)}): {outcome}"
        )
    return options


def _option_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return str(value)
    return None


def _global_options(
    raw: Any, servers: int, reader: _Reader, issues: _Issues
) -> tuple[dict[str, str], dict[tuple[str | None, int | None], dict[str, str]] | None]:
    """The file's global options, and per server (hostname, port) when fio wrote a list.

    `servers` is how many servers the client/server entries come from (0 for plain output).
    """
    if isinstance(raw, list):
        per_host: dict[tuple[str | None, int | None], dict[str, str]] = {}
        for index, item in enumerate(raw):
            if not isinstance(item, dict):
                issues.other.append(
                    f"global options[{index}] is {_kind(item)}, where fio writes one server's"
                    " options: left out"
                )
                continue
            host, port, rest = _server_identity(item)
            if host is None and port is None:
                issues.other.append(
                    f"global options[{index}] does not say which server it belongs to (no"
                    " 'hostname' and 'port'): not used"
                )
                continue
            per_host[(host, port)] = _options(_Repeated(rest), reader, f"global options[{index}]")
        return {}, per_host
    if servers < 2 or not isinstance(raw, dict):
        return _options(raw, reader, "global options"), None
    return _mixed_global_options(raw, servers, issues), None


def _mixed_global_options(raw: dict[str, Any], servers: int, issues: _Issues) -> dict[str, str]:
    """What can be known from one "global options" object that several servers wrote into.

    fio before per-server lists adds every server's global options to one object, one server
    (and, with --status-interval, one report) after the other, without saying whose they are.
    A new block starts where a key comes again; an option is known only when every block has
    it with one value. With fewer blocks than servers, some server's options cannot be told
    apart (no key in common, or none sent), and nothing is known.
    """
    pairs = raw.pairs if isinstance(raw, _Repeated) else list(raw.items())
    blocks: list[dict[str, str]] = [{}]
    for key, value in pairs:
        text = _option_text(value)
        if text is None:
            issues.other.append(
                f"global options.{key} is {_kind(value)}, not an option value: left out"
            )
            continue
        if key in blocks[-1]:
            blocks.append({})
        blocks[-1][key] = text
    keys = list(dict.fromkeys(key for block in blocks for key in block))
    known: dict[str, str] = {}
    unknown = []
    for key in keys:
        values = sorted({block[key] for block in blocks if key in block})
        if len(blocks) >= servers and len(values) == 1 and all(key in b for b in blocks):
            known[key] = values[0]
        else:
            unknown.append(f"{key} ({', '.join(values)})")
    if unknown:
        issues.other.append(
            f"global options: {_listed(unknown)} differ between the {servers} servers or are"
            " not set on all of them, and fio wrote every server's global options into one"
            " object without saying whose are whose: left unknown"
        )
    return known


def _server_identity(item: dict[str, Any]) -> tuple[str | None, int | None, list[tuple[str, Any]]]:
    """A per-server "global options" object split into hostname, port and the options.

    fio writes the server's hostname and port first and then its options; an option may itself
    be called hostname or port (the net engine's), so the first of each names the server.
    """
    pairs = item.pairs if isinstance(item, _Repeated) else list(item.items())
    host: str | None = None
    port: int | None = None
    seen_host = seen_port = False
    rest = []
    for key, value in pairs:
        if key == "hostname" and not seen_host:
            seen_host = True
            host = value if isinstance(value, str) else None
        elif key == "port" and not seen_port:
            seen_port = True
            port = _port(value)
        else:
            rest.append((key, value))
    return host, port, rest


def _port(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value < 2**32 else None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return _port(int(value))
    if isinstance(value, str) and value.strip().isdigit():
        return _port(int(value.strip()))
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _shared(option_sets: Sequence[dict[str, str]]) -> dict[str, str]:
    """The options with one value in every set."""
    if not option_sets:
        return {}
    first, *others = option_sets
    return {k: v for k, v in first.items() if all(o.get(k) == v for o in others)}


# --- one entry --------------------------------------------------------------------------------


def _job(
    raw: dict[str, Any], index: int, client_server: bool, source: str, issues: _Issues
) -> JobResult:
    reader = _Reader(issues, _label(raw, client_server))
    key = "client_stats" if client_server else "jobs"
    error = _errno(raw.get("error"))
    if error is None:
        raise FioOutputError(
            f"{source}: fio's JSON is not usable: the 'error' of {key}[{index}]"
            f" ({raw['jobname']!r}) is {_kind(raw.get('error'))}, not an errno: whether the"
            " job failed is unknown",
            f"holds an 'error' of {key}[{index}] that is no errno: whether the job failed is"
            " unknown",
        )
    directions: dict[str, DirectionResult] = {}
    empty: list[str] = []
    if error == 0:  # a failed job's zeros are not measurements
        for name in DIRECTIONS:
            section = reader.section(raw, name, name)
            result = _direction(name, section, reader) if section is not None else None
            if result is _EMPTY:
                empty.append(name)
            elif isinstance(result, DirectionResult):
                directions[name] = result
    steadystate = raw.get("steadystate")
    hostname = raw.get("hostname")
    port = raw.get("port")
    if client_server and port is not None and _port(port) is None:
        issues.bad(reader.label, "port", port)
    groupid = reader.count(raw, "groupid", "groupid")
    usr = reader.number(raw, "usr_cpu", "usr_cpu")
    sys_ = reader.number(raw, "sys_cpu", "sys_cpu")
    return JobResult(
        name=raw["jobname"],
        groupid=groupid if groupid is not None else 0,
        error=error,
        hostname=_text(hostname) if client_server else None,
        port=_port(port) if client_server else None,
        job_runtime_ms=reader.count(raw, "job_runtime", "job_runtime"),
        usr_cpu_pct=usr if usr is not None else math.nan,
        sys_cpu_pct=sys_ if sys_ is not None else math.nan,
        ctx=reader.count(raw, "ctx", "ctx"),
        job_options=_options(raw.get("job options"), reader, "job options"),
        directions=directions,
        empty_directions=empty,
        steadystate=steadystate if isinstance(steadystate, dict) else None,
    )


def _errno(value: Any) -> int | None:
    """fio's "error": an errno in a C int; None when the value cannot be one."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        value = int(value)
    if isinstance(value, int) and -_ERRNO_MAX <= value < _ERRNO_MAX:
        return value
    return None


def _direction(
    name: Direction, raw: dict[str, Any], reader: _Reader
) -> DirectionResult | object | None:
    """One direction of a job; _EMPTY when fio printed it with no I/O at all, None when
    nothing in it can be used (the fields are named in the warnings)."""
    in_ns = any(key in raw for key in ("slat_ns", "clat_ns", "lat_ns"))
    suffix = "_ns" if in_ns else ""

    def stats(kind: str) -> LatencyStats | None:
        path = f"{name}.{kind}{suffix}"
        return _latency(reader.section(raw, kind + suffix, path), in_ns, reader, path)

    slat, clat, lat = stats("slat"), stats("clat"), stats("lat")
    total_ios = reader.count(raw, "total_ios", f"{name}.total_ios")
    if name == "sync":
        return _sync_direction(lat, total_ios)
    io_bytes = reader.count(raw, "io_bytes", f"{name}.io_bytes")
    if io_bytes is not None and not in_ns and "io_kbytes" not in raw:
        io_bytes *= 1024  # fio 2.x wrote KiB under the name io_bytes
    iops = reader.number(raw, "iops", f"{name}.iops")
    runtime_ms = reader.count(raw, "runtime", f"{name}.runtime")
    if "total_ios" not in raw and iops is not None and runtime_ms is not None:
        # fio before 2.2 did not print it
        estimate = iops * runtime_ms / 1000
        total_ios = round(estimate) if math.isfinite(estimate) else None
    moved = [value for value in (io_bytes, total_ios) if value is not None]
    if moved and not any(moved):
        return _EMPTY  # fio prints empty directions with zeros: nothing was done
    if not moved and not (iops is not None and iops > 0):
        return None  # nothing usable at all; the fields are named in the warnings
    bw_bytes = _bandwidth(name, raw, reader)
    return DirectionResult(
        direction=name,
        io_bytes=io_bytes,
        bw_bytes=bw_bytes if bw_bytes is not None else math.nan,
        iops=iops if iops is not None else math.nan,
        runtime_ms=runtime_ms,
        total_ios=total_ios,
        short_ios=reader.count(raw, "short_ios", f"{name}.short_ios"),
        drop_ios=reader.count(raw, "drop_ios", f"{name}.drop_ios"),
        clat=clat,
        slat=slat,
        lat=lat,
    )


def _sync_direction(lat: LatencyStats | None, total_ios: int | None) -> DirectionResult | None:
    """fsync/fdatasync calls: a count and their latency, no bytes or rate."""
    if lat is None:
        return None
    # fdatasync counts can show total_ios 0 while the latency has N samples: trust N
    known = [value for value in (total_ios, lat.n) if value is not None]
    return DirectionResult(
        direction="sync", io_bytes=0, bw_bytes=math.nan, iops=math.nan, runtime_ms=0,
        total_ios=max(known) if known else None, short_ios=0, drop_ios=0, lat=lat,
    )  # fmt: skip


def _bandwidth(name: Direction, raw: dict[str, Any], reader: _Reader) -> float | None:
    """Bytes per second: bw_bytes, or before fio 3.2 bw in KiB/s."""
    if "bw_bytes" in raw:
        return reader.number(raw, "bw_bytes", f"{name}.bw_bytes")
    bw_kib = reader.number(raw, "bw", f"{name}.bw")
    return bw_kib * 1024 if bw_kib is not None else None


def _latency(
    raw: dict[str, Any] | None, in_ns: bool, reader: _Reader, path: str
) -> LatencyStats | None:
    if raw is None:
        return None
    n = reader.count(raw, "N", f"{path}.N")
    low = reader.number(raw, "min", f"{path}.min")
    high = reader.number(raw, "max", f"{path}.max")
    mean = reader.number(raw, "mean", f"{path}.mean")
    if n == 0 or (n is None and not (low or high or mean)):
        # not measured (e.g. slat of a synchronous engine), no samples, or nothing usable
        return None
    divisor = 1000.0 if in_ns else 1.0
    percentiles: dict[str, float] = {}
    listed = reader.section(raw, "percentile", f"{path}.percentile") or {}
    for key in listed:
        if _percent(key) is None:  # fio 2.x padded the list with "0.00": 0
            continue
        value = reader.number(listed, key, f"{path}.percentile.{key}")
        if value is not None:
            percentiles[key] = value / divisor
    stddev = reader.number(raw, "stddev", f"{path}.stddev")
    return LatencyStats(
        n=n,
        min_us=low / divisor if low is not None else math.nan,
        max_us=high / divisor if high is not None else math.nan,
        mean_us=mean / divisor if mean is not None else math.nan,
        stddev_us=stddev / divisor if stddev is not None else math.nan,
        percentiles_us=percentiles,
        bins=_bins(raw.get("bins"), in_ns, reader, f"{path}.bins"),
    )


def _percent(key: str) -> float | None:
    """A percentile key ("99.900000") as a number in (0, 100], else None."""
    try:
        value = float(key)
    except ValueError:
        return None
    return value if 0 < value <= 100 else None


_PERCENT_KEYS: dict[str, bool] = {}


def _is_percent(key: str) -> bool:
    """_percent(key) is not None, remembered for the keys fio writes in every output."""
    known = _PERCENT_KEYS.get(key)
    if known is None:
        known = _percent(key) is not None
        if len(_PERCENT_KEYS) < 1000:
            _PERCENT_KEYS[key] = known
    return known


def _bins(raw: Any, in_ns: bool, reader: _Reader, path: str) -> dict[int, int] | None:
    """A json+ histogram as {latency in ns: count}; None when absent or not wholly readable.

    A histogram with an unreadable bucket is dropped whole: percentiles recomputed from what
    is left would be wrong.
    """
    if raw is None:
        return None
    if not isinstance(raw, dict):
        reader.issues.bad(reader.label, path, raw)
        return None
    if not raw:
        return None
    if in_ns:
        quick = _plain_bins(raw)
        if quick is not None:
            return quick
    counts: list[tuple[int, int]] = []
    for key in raw:
        if str(key).startswith("FIO_IO_U_PLAT"):
            continue
        bucket, count = _int_key(key), reader.count(raw, key, f"{path}.{key}")
        if count is None:
            return None  # named already: nan, or not a number
        if bucket is None or bucket < 0 or count < 0:
            reader.issues.other.append(
                f"{reader.label}: {path} has a bucket {str(key)[:30]!r} with {count} samples,"
                " which is no histogram bucket: histogram left out"
            )
            return None
        counts.append((bucket, count))
    bins: dict[int, int] = {}
    if "FIO_IO_U_PLAT_BITS" in raw:  # fio 2.x json+: counts by bucket index, latencies in µs
        bits = reader.count(raw, "FIO_IO_U_PLAT_BITS", f"{path}.FIO_IO_U_PLAT_BITS")
        per_group = reader.count(raw, "FIO_IO_U_PLAT_VAL", f"{path}.FIO_IO_U_PLAT_VAL")
        # fio's buckets: 2**bits of them per group, and bits is small (6 in every fio)
        if bits is None or per_group is None or not 0 < bits <= 16 or per_group != 1 << bits:
            reader.issues.other.append(
                f"{reader.label}: {path} has FIO_IO_U_PLAT_BITS {bits} and _VAL {per_group},"
                " which fio never used: histogram left out"
            )
            return None
        for index, count in counts:
            if count and index >= 64 * per_group:
                reader.issues.other.append(
                    f"{reader.label}: {path} has a bucket {index} beyond fio's last:"
                    " histogram left out"
                )
                return None
            if count:
                value_ns = _bucket_value(index, bits, per_group) * 1000
                bins[value_ns] = bins.get(value_ns, 0) + count
        return bins
    scale = 1 if in_ns else 1000
    for value, count in counts:
        if count:
            bins[value * scale] = bins.get(value * scale, 0) + count
    return bins


def _plain_bins(raw: dict[str, Any]) -> dict[int, int] | None:
    """The common json+ histogram read in one pass: every key a latency in ns written in
    plain digits, every count a non-negative integer, no two keys the same number. None for
    anything else, which _bins reads (and names) the careful way.

    A histogram has hundreds of buckets: the keys are read as numbers by the JSON decoder in
    one call, and the counts checked as a list."""
    try:
        keys = ",".join(raw)
        values = _decode_naturals("[" + keys + "]")  # "01", " 1", "-1" or "1.0" fail
        counts = msgspec.convert(list(raw.values()), list[_Natural])
    except (TypeError, msgspec.MsgspecError):
        return None
    if len(values) != len(counts):
        return None  # a key holding a comma
    bins = {value: count for value, count in zip(values, counts, strict=True) if count}
    if len(bins) != len(counts) - counts.count(0):
        return None  # one bucket written twice: the careful reading sums them
    return bins


def _int_key(key: Any) -> int | None:
    try:
        value = int(str(key).strip())
    except ValueError:
        return None
    return value if _COUNT_MIN <= value < _COUNT_MAX else None


def _bucket_value(index: int, bits: int, per_group: int) -> int:
    """The latency a histogram bucket stands for: fio's log-linear buckets, midpoint value."""
    if index < per_group * 2:
        return index  # the first groups are exact
    shift = (index >> bits) - 1
    base = 1 << (shift + bits)
    return int(base + ((index % per_group) + 0.5) * (1 << shift))


# the percentiles a latency distribution is drawn at: fio's default list, then finer tails
DISTRIBUTION_PERCENTILES = (1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0,
                            95.0, 99.0, 99.5, 99.9, 99.95, 99.99, 99.999, 99.9999)  # fmt: skip


def _distribution_from_bins(bins: dict[int, int]) -> tuple[float, ...] | None:
    """DISTRIBUTION_PERCENTILES from a json+ histogram (fio's rule: the first bucket whose
    running count reaches p % of all), by a search in the running counts."""
    values = list(bins)
    if values == sorted(values):  # as fio writes them
        return _distribution_at(values, list(accumulate(bins.values())))
    values.sort()
    return _distribution_at(values, list(accumulate(bins[value] for value in values)))


def _distribution_at(values: list[int], running: list[int]) -> tuple[float, ...] | None:
    """DISTRIBUTION_PERCENTILES in µs from the buckets' values (ns, rising) and the running
    counts up to each; None without samples."""
    total = running[-1] if running else 0
    if total <= 0:
        return None
    last = len(values) - 1
    found = map(bisect_left, repeat(running), [p * total / 100 for p in DISTRIBUTION_PERCENTILES])
    return tuple([values[min(index, last)] / 1000 for index in found])


def percentiles_from_bins(bins: dict[int, int], keys: Iterable[str]) -> dict[str, float]:
    """Percentiles in µs from a json+ histogram {ns: count}, for keys like "99.900000".

    fio's rule (stat.c): the p-th percentile is the first bucket, in increasing latency, at
    which the running count reaches p/100 of all samples; its value is the bucket's midpoint,
    which is what the histogram keys already are. Keys that are not percentages are skipped.
    """
    ordered = sorted(bins.items())
    total = sum(count for _, count in ordered)
    result: dict[str, float] = {}
    if total <= 0:
        return result
    wanted = [(key, _percent(key)) for key in keys]
    for key, percent in sorted(
        ((k, p) for k, p in wanted if p is not None), key=lambda pair: pair[1]
    ):
        # the double fio holds for e.g. 99.9, exactly: ties then fall the same way as in fio
        threshold = Fraction(percent) * total / 100
        running = 0
        for value_ns, count in ordered:
            running += count
            if running >= threshold:
                result[key] = value_ns / 1000
                break
    return result


# --- client/server reports and merging numjobs clones -------------------------------------


def _identity(job: JobResult) -> tuple[Any, ...]:
    """What tells one job's entries from another's: host, port, group, name and options."""
    return (job.hostname, job.port, job.groupid, job.name, tuple(sorted(job.job_options.items())))


def _last_client_reports(
    jobs: list[JobResult], positions: list[int], first_total: int | None, issues: _Issues
) -> tuple[list[JobResult], bool]:
    """Keep the last --status-interval report of each job in client/server output.

    The client appends every report's entries to one list. One report holds as many entries
    of a job as it has clones; fio prints "All clients" once, after the first full report, so
    the entries before it show how many that is. Without it, fio reported a single entry per
    report (it adds the aggregate as soon as there are two).
    """
    groups: dict[tuple[Any, ...], list[int]] = {}
    for i, job in enumerate(jobs):
        groups.setdefault(_identity(job), []).append(i)
    keep = set(range(len(jobs)))
    repeated = False
    for members in groups.values():
        if first_total is not None:
            per_report = sum(1 for i in members if positions[i] < first_total)
        else:
            per_report = 1 if len(groups) == 1 else len(members)
        if per_report == 0:  # the job's first report came in after fio's aggregate
            job = jobs[members[0]]
            per_report = _numjobs(job.options)
        if len(members) <= per_report:
            continue
        repeated = True
        job = jobs[members[0]]
        where = f" on {job.hostname}:{job.port}" if job.hostname is not None else ""
        reports = len(members) / per_report
        count = f"{reports:g}" if reports.is_integer() else f"about {reports:.1f}"
        issues.other.append(
            f"job {job.name!r}{where} is reported {count} times (--status-interval; the"
            " reports are cumulative): the last report is used"
        )
        keep -= set(members[:-per_report])
    return [job for i, job in enumerate(jobs) if i in keep], repeated


def _numjobs(options: dict[str, str]) -> int:
    try:
        return max(int(options.get("numjobs", "1").strip()), 1)
    except ValueError:
        return 1


def _reporting(options: dict[str, str]) -> tuple[bool | None, int]:
    """Whether one entry's clones were reported together (None: the output cannot tell), and
    how many fio processes the entry covers."""
    numjobs = _numjobs(options)
    setting = options.get("group_reporting")
    if setting is not None:
        grouped: bool | None = setting.strip().lower() not in ("0", "false", "no")
    else:
        # several clones, one entry: fio reported them together
        grouped = True if numjobs > 1 else None
    return grouped, numjobs if grouped else 1


def _combine(jobs: list[JobResult], issues: _Issues) -> list[JobResult]:
    """Merge entries of one job (host, port, group, name and options); settle processes."""
    groups: dict[tuple[Any, ...], list[JobResult]] = {}
    for job in jobs:
        groups.setdefault(_identity(job), []).append(job)
    names: dict[tuple[Any, ...], list[dict[str, str]]] = {}
    for key, entries in groups.items():
        names.setdefault(key[:4], []).append(entries[0].job_options)
    for (host, port, groupid, name), option_sets in names.items():
        if len(option_sets) > 1:
            where = f" on {host}:{port}" if host is not None else ""
            differ = " / ".join(_option_summary(o, option_sets) for o in option_sets)
            issues.other.append(
                f"{len(option_sets)} jobs are named {name!r} in group {groupid}{where} with"
                f" different options ({differ}): kept apart, not merged as numjobs clones"
            )
    combined = []
    for entries in groups.values():
        if len(entries) > 1:
            combined.append(merge_jobs(entries))
            continue
        job = entries[0]
        grouped, processes = _reporting(job.options)
        combined.append(
            job.model_copy(update={"group_reporting": grouped, "processes": processes})
        )
    return combined


def _option_summary(options: dict[str, str], all_sets: Sequence[dict[str, str]]) -> str:
    """The options that tell this set from the others, as "rw=randread, bs=4k"."""
    keys = sorted(
        {k for o in all_sets for k in o if any(o2.get(k) != o.get(k) for o2 in all_sets)}
    )
    return ", ".join(f"{k}={options.get(k, '(unset)')}" for k in keys) or "same options"


def merge_jobs(entries: Sequence[JobResult]) -> JobResult:
    """One result from entries of the same job (numjobs clones without group_reporting).

    Sums: io_bytes, bw_bytes, iops, total/short/drop ios, ctx, job_runtime_ms, processes.
    runtime_ms: the longest. CPU: total CPU time over total runtime (fio's own group_reporting
    arithmetic), so still percent of one CPU per process; a plain mean if a runtime is missing.
    Latency: n summed, min of mins, max of maxes, n-weighted mean, and the standard deviation
    of the pooled samples (within-entry spread plus spread of the means). Where fio printed no N
    (before 3.18) each entry is weighted by its direction's total_ios and n stays None.
    Percentiles cannot be merged as such: with json+ bins in every entry they are recomputed
    from the summed bins by fio's rule; without bins they are left empty (percentiles_lost).
    A value unknown (None or NaN) in any entry makes its sum unknown too.
    The first non-zero error wins; a merged result with an error has no directions. Host,
    port and options are the first entry's (entries of one job share them).
    """
    first = entries[0]
    error = next((job.error for job in entries if job.error), 0)
    runtimes = [job.job_runtime_ms for job in entries]
    if all(runtimes):
        total_runtime = sum(r for r in runtimes if r)
        usr = sum(j.usr_cpu_pct * (j.job_runtime_ms or 0) for j in entries) / total_runtime
        sys_ = sum(j.sys_cpu_pct * (j.job_runtime_ms or 0) for j in entries) / total_runtime
    else:
        usr = sum(j.usr_cpu_pct for j in entries) / len(entries)
        sys_ = sum(j.sys_cpu_pct for j in entries) / len(entries)
    directions: dict[str, DirectionResult] = {}
    empty: list[str] = []
    if error == 0:
        for name in DIRECTIONS:
            parts = [job.directions[name] for job in entries if name in job.directions]
            if parts:
                directions[name] = _merge_direction(parts)
            elif all(name in job.empty_directions for job in entries):
                empty.append(name)  # no entry moved anything: a true zero
    return JobResult(
        name=first.name,
        groupid=first.groupid,
        error=error,
        hostname=first.hostname,
        port=first.port,
        job_runtime_ms=_sum(runtimes),
        usr_cpu_pct=usr,
        sys_cpu_pct=sys_,
        ctx=_sum([job.ctx for job in entries]),
        processes=sum(job.processes for job in entries),
        group_reporting=False,
        job_options=first.job_options,
        global_options=first.global_options,
        directions=directions,
        empty_directions=empty,
        steadystate=first.steadystate,
    )


def _sum(values: Sequence[int | None]) -> int | None:
    """The sum, or None when any value is unknown."""
    if any(value is None for value in values):
        return None
    return sum(value for value in values if value is not None)


def _merge_direction(parts: Sequence[DirectionResult]) -> DirectionResult:
    if len(parts) == 1:
        return parts[0]
    weights = [part.total_ios for part in parts]
    runtimes = [p.runtime_ms for p in parts]
    return DirectionResult(
        direction=parts[0].direction,
        io_bytes=_sum([p.io_bytes for p in parts]),
        bw_bytes=sum(p.bw_bytes for p in parts),
        iops=sum(p.iops for p in parts),
        runtime_ms=None if None in runtimes else max(r for r in runtimes if r is not None),
        total_ios=_sum(weights),
        short_ios=_sum([p.short_ios for p in parts]),
        drop_ios=_sum([p.drop_ios for p in parts]),
        clat=merge_latency([p.clat for p in parts], weights),
        slat=merge_latency([p.slat for p in parts], weights),
        lat=merge_latency([p.lat for p in parts], weights),
    )


def merge_latency(
    stats: Sequence[LatencyStats | None], fallback_weights: Sequence[int | None]
) -> LatencyStats | None:
    """Pool latency stats of several entries (see `merge_jobs`); None entries are skipped.

    `fallback_weights` (one per entry, e.g. total_ios) stand in for N where fio printed none;
    when a needed weight is unknown too, the pooled mean and spread are NaN (unknown).
    """
    present = [(s, w) for s, w in zip(stats, fallback_weights, strict=True) if s is not None]
    if not present:
        return None
    if len(present) == 1:
        return present[0][0]
    known_n = all(s.n is not None for s, _ in present)
    chosen = [s.n if known_n else w for s, w in present]
    if any(w is None for w in chosen):
        mean = stddev = math.nan  # an entry's weight is unknown, so is the pooled mean
    else:
        weights = [float(w) for w in chosen if w is not None]
        total = sum(weights)
        if total <= 0:
            weights, total = [1.0] * len(present), float(len(present))
        mean = sum(w * s.mean_us for (s, _), w in zip(present, weights, strict=True)) / total
        # pooled sum of squares: each entry's own (n - 1) * var plus its mean's offset
        # (products, not powers: a power of a huge float raises where a product becomes inf)
        squares = sum(
            max(w - 1, 0) * s.stddev_us * s.stddev_us + w * (s.mean_us - mean) * (s.mean_us - mean)
            for (s, _), w in zip(present, weights, strict=True)
        )
        stddev = math.sqrt(squares / (total - 1)) if total > 1 else 0.0
    bins: dict[int, int] | None = None
    percentiles: dict[str, float] = {}
    had_percentiles = any(s.percentiles_us or s.percentiles_lost for s, _ in present)
    if all(s.bins for s, _ in present):
        bins = {}
        for s, _ in present:
            for value, count in (s.bins or {}).items():
                bins[value] = bins.get(value, 0) + count
        bins = dict(sorted(bins.items()))
        keys = {key for s, _ in present for key in s.percentiles_us}
        percentiles = percentiles_from_bins(bins, keys)
    return LatencyStats(
        n=sum(s.n or 0 for s, _ in present) if known_n else None,
        min_us=_extreme(min, [s.min_us for s, _ in present]),
        max_us=_extreme(max, [s.max_us for s, _ in present]),
        mean_us=mean,
        stddev_us=stddev,
        percentiles_us=percentiles,
        bins=bins,
        percentiles_lost=had_percentiles and not percentiles,
    )


def _extreme(pick: Any, values: Sequence[float]) -> float:
    """min or max of values; NaN when one is unknown (NaN): it might have been the extreme."""
    if any(math.isnan(value) for value in values):
        return math.nan
    return float(pick(values))
