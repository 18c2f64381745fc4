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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import msgspec

from ssdcompare.fio.result.merge import (
    _identity,
    _numjobs,
    _option_summary,
    _reporting,
    merge_jobs,
)
from ssdcompare.fio.result.models import (
    _EMPTY,
    _ERRNO_MAX,
    ALL_CLIENTS,
    DIRECTIONS,
    Direction,
    DirectionResult,
    FioOutput,
    FioOutputError,
    JobResult,
    LatencyStats,
    _bucket_value,
    _percent,
    _sync_direction,
)
from ssdcompare.fio.result.quick import (
    _decode_naturals,
    _Natural,
    _quick,
)
from ssdcompare.pathwalk import ForeignLinkError, KernelViewError, walk
from ssdcompare.regularfile import RefusedFile, read_regular
from ssdcompare.suite.options import UNMEASURED

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


# --- client/server reports and merging numjobs clones -------------------------------------


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
