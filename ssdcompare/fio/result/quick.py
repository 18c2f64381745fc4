"""The quick reading of a plain, modern fio output (fio 3.18 and later, json or json+, no
client/server): msgspec decodes it against its layout, checking every field it reads while
decoding. Anything it does not expect makes it give up (None), and ssdcompare.fio.result.reader's
careful reading takes over; a test compares the two on every recorded output."""

from __future__ import annotations

import math
import re
from typing import Annotated, Any, TypeVar

import msgspec
from pydantic import BaseModel

from ssdcompare.fio.result.merge import (
    _reporting,
)
from ssdcompare.fio.result.models import (
    _EMPTY,
    _ERRNO_MAX,
    DIRECTIONS,
    DirectionResult,
    FioOutput,
    JobResult,
    LatencySearch,
    LatencyStats,
    _is_percent,
    _sync_direction,
    latency_search,
)

_QUICK_VERSION = re.compile(r"fio-3\.(\d+)")

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


# fio's counters as the quick reading takes them: an integer of 64 bits (the careful reading
# also takes unsigned ones above 2**63, which fio never prints for these fields)
_Count = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]

_Natural = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)]


_Errno = Annotated[int, msgspec.Meta(ge=-_ERRNO_MAX, lt=_ERRNO_MAX)]

_UNSET = msgspec.UNSET


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
    # fio's search for a latency target (ssdcompare.fio.result.entry._search says the units);
    # newer fio writes the target and the window twice, under a second name too
    latency_depth: _Count | msgspec.UnsetType = _UNSET
    latency_target: _Count | msgspec.UnsetType = _UNSET
    latency_target_ns: _Count | msgspec.UnsetType = _UNSET
    latency_percentile: float | msgspec.UnsetType = _UNSET
    latency_window: _Count | msgspec.UnsetType = _UNSET
    latency_window_us: _Count | msgspec.UnsetType = _UNSET


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


def _quick(text: str | bytes, source: str) -> FioOutput | None:
    """The output read the quick way, from its text or its UTF-8 bytes (text that is no
    UTF-8 is left to the careful reading, which replaces what it cannot decode); None when
    it is no output the quick way takes."""
    if text[:1] not in ("{", b"{"):
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
    text by their quotes, four each, when no name or value holds a quote."""
    if raw is _UNSET:
        return {}
    try:
        options = _decode_options(raw)
    except (msgspec.MsgspecError, UnicodeError):  # bytes that are no UTF-8: the careful way
        raise _NotQuick from None
    if '"' in "".join((*options, *options.values())):
        raise _NotQuick
    if bytes(raw).count(b'"') != 4 * len(options):
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
        latency_search=_quick_search(raw),
    ))  # fmt: skip


def _quick_search(raw: _QuickJob) -> LatencySearch | None:
    """The job's search for a latency target, read as the careful reading reads it."""
    target = raw.latency_target if raw.latency_target is not _UNSET else raw.latency_target_ns
    window = raw.latency_window if raw.latency_window is not _UNSET else raw.latency_window_us
    return latency_search(_known(raw.latency_depth), _known(target),
                          _known(raw.latency_percentile), _known(window))  # fmt: skip


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
        percentiles_us=_percentiles_us(raw.percentile),
        bins=bins, percentiles_lost=False,
    ))  # fmt: skip


_KNOWN_PERCENTS: set[str] = set()  # keys known to be percentages ("99.900000")


def _percentiles_us(printed: dict[str, float]) -> dict[str, float]:
    """fio's percentiles (ns) in µs, of the keys that are percentages: the keys fio writes in
    every output alike are told to be once."""
    if not printed.keys() <= _KNOWN_PERCENTS:
        good = [key for key in printed if _is_percent(key)]
        if len(_KNOWN_PERCENTS) < 1000:
            _KNOWN_PERCENTS.update(good)
        if len(good) < len(printed):
            return {key: value / 1000.0 for key, value in printed.items() if _is_percent(key)}
    return {key: value / 1000.0 for key, value in printed.items()}
