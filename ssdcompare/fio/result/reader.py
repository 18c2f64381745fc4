"""fio's JSON output (json and json+) as typed results, read from what fio really prints.

The entry points: a file fio wrote, its bytes, or its text, read into a FioOutput, or refused
with a FioOutputError that says what is wrong, whatever the input. Files are read as UTF-8
(bytes that are not UTF-8 are replaced, never refused), or as UTF-16/UTF-32 when a byte-order
mark says so or the NUL bytes show UTF-16 without one (fio output saved by Windows tools).

A plain output of fio 3.18 or later is decoded against its layout first (`quick`), which gives
up on anything else; everything else is read the careful way, which names what it had to work
around: the JSON is found in what fio printed and its shape checked (`document`), each job
entry is read in whichever layout its fio wrote (`entry`), with its options and each server's
global options (`options`), and every number that could not be used is named (`values`).
Here the entries become the output's jobs.

Client/server output ("client_stats") gives one entry per job and host, with hostname and port;
two servers on one host differ only by port, so entries are told apart by both. fio adds an "All
clients" aggregate whenever the servers report more than one entry in all; it is kept out of
`jobs` (so per-host sums are not doubled) and exposed as `client_aggregates`. fio writes on it
the hostname and port of the server that reported last, not of all of them. Each job gets its
own server's global options. With --status-interval the client appends every report's entries
to the same list: only the last report of each job is kept, and the "All clients" entry, made
from the first report, is dropped.

Jobs without group_reporting and with numjobs > 1 appear as several entries with the same
jobname and options; they are merged into one JobResult (see `merge_jobs`). Entries that share a
jobname but not their options are different jobs (two sections with one name) and stay apart.
"""

from __future__ import annotations

import codecs
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ssdcompare.fio.result.document import _entries, _may_hold_non_finite, _split
from ssdcompare.fio.result.entry import _job
from ssdcompare.fio.result.merge import (
    _identity,
    _numjobs,
    _option_summary,
    _reporting,
    merge_jobs,
)
from ssdcompare.fio.result.models import ALL_CLIENTS, FioOutput, FioOutputError, JobResult
from ssdcompare.fio.result.options import _global_options, _port, _shared, _text
from ssdcompare.fio.result.quick import _quick
from ssdcompare.fio.result.values import _Issues, _note_non_finite, _Reader
from ssdcompare.pathwalk import ForeignLinkError, KernelViewError, walk
from ssdcompare.regularfile import RefusedFile, read_regular, read_unlinked
from ssdcompare.suite.options import UNMEASURED

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
    return output.ok_iops


def parse_fio_file(path: str | Path) -> FioOutput:
    """Parse the file fio wrote (--output=FILE, or its captured stdout).

    Returns a FioOutput or raises FioOutputError naming the file and what is wrong with it.
    The file must be a regular one of at most FIO_OUTPUT_LIMIT bytes (a FIFO or a device is
    refused, never waited on or read without end). The path is followed one step at a time
    (pathwalk.walk): a symbolic link of one's own or root's is followed, one someone else made
    is refused, as is any step into /proc or /sys.
    """
    data = read_unlinked(path, FIO_OUTPUT_LIMIT)  # nearly every file: opened once
    if data is not None:
        return parse_fio_bytes(data, os.fspath(path))
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
    if data[:1] == b"{" and data[1:2] != b"\0":  # UTF-8 JSON: the quick reading takes bytes
        with _unforeseen_as_damage(source):
            quick = _quick(data, source)
            if quick is not None:
                return _unmeasured_left_out(quick)
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
    with _unforeseen_as_damage(source):
        return _unmeasured_left_out(_parse(text, source))


@contextlib.contextmanager
def _unforeseen_as_damage(source: str) -> Iterator[None]:
    """Any error of the reading but FioOutputError turned into one naming `source`."""
    try:
        yield
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
