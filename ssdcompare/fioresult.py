"""fio's JSON output (json and json+) as typed results, read from what fio really prints.

Text before the JSON (notes, "fio: pid=..., err=..." lines, "fio: terminating on signal 2") is kept
as `notes`; the JSON starts at the first "{" at the start of a line. With --status-interval fio
prints several cumulative reports back to back: the last one is the result. Text after the JSON
(the normal report of --output-format=json+,normal) is kept as `trailing_text`.

Layouts understood:
- fio 3.18 and later: slat_ns/clat_ns/lat_ns with N; percentiles where enabled; json+ "bins"
  keyed by latency in ns.
- fio 3.0-3.17: the same *_ns objects without N; percentiles (and bins) for clat only; before
  3.2 no bw_bytes (bw is KiB/s).
- fio 2.x: slat/clat/lat in microseconds; io_bytes is in KiB despite its name; no bw_bytes; the
  percentile list padded with "0.00": 0 entries; json+ bins keyed by bucket index with the
  FIO_IO_U_PLAT_* constants.
All latencies come out in microseconds and byte counts in bytes, whatever the layout.

Client/server output ("client_stats") gives one entry per host, with hostname and port. fio adds
an "All clients" aggregate whenever there is more than one entry; it is kept out of `jobs` (so
per-host sums are not doubled) and exposed as `client_aggregates`.

Jobs without group_reporting and with numjobs > 1 appear as several entries with the same
jobname; they are merged into one JobResult (see `merge_jobs`). A job with a non-zero error has
no directions: the zeros fio prints for it are not measurements.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from ssdcompare.errors import SsdcompareError

Direction = Literal["read", "write", "trim", "sync", "mixed"]
# "mixed" appears instead of (or, with unified_rw_reporting=both, besides) read/write/trim
DIRECTIONS: tuple[Direction, ...] = ("read", "write", "trim", "sync", "mixed")
ALL_CLIENTS = "All clients"

_JSON_START = re.compile(r"^\{", re.MULTILINE)
# fio formats floats with %f, so a NaN or infinity would come out as a bare nan/-nan/inf
_NON_NUMBER = re.compile(r"(?<=[:,\[])(\s*)(-?)(nan|inf(?:inity)?)(?=\s*[,}\]])", re.IGNORECASE)


class FioOutputError(SsdcompareError):
    """A file or text that holds no usable fio JSON; the message names the file and the fix."""


class LatencyStats(BaseModel):
    """One of fio's latency objects (slat, clat, lat or sync lat), in microseconds."""

    n: int | None = None  # samples; None where fio did not print N (before 3.18)
    min_us: float
    max_us: float
    mean_us: float
    stddev_us: float  # sample standard deviation, as fio computes it (divides by n - 1)
    percentiles_us: dict[str, float] = Field(default_factory=dict)  # keys as fio prints them
    bins: dict[int, int] | None = None  # json+ histogram {latency in ns: count}
    # True when fio printed percentiles but they could not be kept: entries merged without bins
    percentiles_lost: bool = False

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
    runtime_ms are 0, and iops and bw_bytes are NaN (fio gives no rate for them).
    """

    direction: Direction
    io_bytes: int
    bw_bytes: float  # bytes per second
    iops: float
    runtime_ms: int
    total_ios: int
    short_ios: int
    drop_ios: int
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
    port: int | None = None
    job_runtime_ms: int | None = None  # summed over processes, as fio's group_reporting does
    usr_cpu_pct: float
    sys_cpu_pct: float
    ctx: int | None = None
    # fio processes this result covers: merged entries are counted; for a group_reporting entry
    # fio prints no member count, so numjobs is taken from the options (1 when not set)
    processes: int = 1
    group_reporting: bool | None = None  # None when the output cannot tell
    job_options: dict[str, str] = Field(default_factory=dict)
    directions: dict[str, DirectionResult] = Field(default_factory=dict)
    steadystate: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        """fio reported no error for this job."""
        return self.error == 0


class FioOutput(BaseModel):
    """One fio output file: its jobs (or hosts) and what fio printed around the JSON."""

    fio_version: str | None = None
    timestamp: int | None = None
    jobs: list[JobResult] = Field(default_factory=list)
    global_options: dict[str, str] = Field(default_factory=dict)
    disk_util: list[dict[str, Any]] = Field(default_factory=list)
    client_server: bool = False
    client_aggregates: list[JobResult] = Field(default_factory=list)  # "All clients" entries
    notes: list[str] = Field(default_factory=list)  # fio's text before the JSON
    trailing_text: str = ""  # fio's text after the JSON (e.g. the normal report)
    interim_reports: int = 0  # earlier --status-interval reports, superseded by the last
    warnings: list[str] = Field(default_factory=list)  # what the parser had to work around
    source: str = "<text>"


def parse_fio_file(path: str | Path) -> FioOutput:
    """Parse the file fio wrote (--output=FILE, or its captured stdout)."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise FioOutputError(f"{path}: cannot read fio's output ({err.strerror})") from None
    # fio copies file names and messages byte for byte: never fail on them
    return parse_fio_text(data.decode("utf-8", errors="replace"), source=str(path))


def parse_fio_text(text: str, source: str = "<text>") -> FioOutput:
    """Parse fio's output text; `source` names it in error messages."""
    notes, documents, trailing, warnings = _split(text, source)
    doc = documents[-1]
    entries = doc.get("client_stats") if "client_stats" in doc else doc.get("jobs")
    if not isinstance(entries, list) or not all(
        isinstance(e, dict) and "jobname" in e for e in entries
    ):
        keys = ", ".join(list(doc)[:6]) or "none"
        raise FioOutputError(
            f"{source}: JSON, but not fio output (top-level keys: {keys}; fio writes"
            " 'fio version' and 'jobs' or 'client_stats'); give the file fio wrote with"
            " --output-format=json+"
        )
    client_server = "client_stats" in doc
    global_options = _options(doc.get("global options"))
    parsed = [_job(entry, client_server) for entry in entries]
    aggregates = [job for job in parsed if client_server and job.name == ALL_CLIENTS]
    per_job = [job for job in parsed if not (client_server and job.name == ALL_CLIENTS)]
    disk_util = doc.get("disk_util")
    timestamp = doc.get("timestamp")
    return FioOutput(
        fio_version=_str_or_none(doc.get("fio version")),
        timestamp=int(timestamp) if isinstance(timestamp, (int, float)) else None,
        jobs=_combine(per_job, global_options),
        global_options=global_options,
        disk_util=[d for d in disk_util if isinstance(d, dict)]
        if isinstance(disk_util, list)
        else [],
        client_server=client_server,
        client_aggregates=aggregates,
        notes=notes,
        trailing_text=trailing,
        interim_reports=len(documents) - 1,
        warnings=warnings,
        source=source,
    )


# --- finding the JSON in what fio printed ---------------------------------------------------


def _split(text: str, source: str) -> tuple[list[str], list[dict[str, Any]], str, list[str]]:
    if not text.strip():
        raise FioOutputError(
            f"{source}: empty, fio wrote no results (was it killed before it finished, e.g. by"
            " SIGKILL or the OOM killer?); rerun the job"
        )
    start = _JSON_START.search(text)
    if start is None:
        first = text.strip().splitlines()[0][:80]
        raise FioOutputError(
            f"{source}: no JSON in it (no line starts with '{{'; it begins {first!r}); run fio"
            " with --output-format=json+ and read the file it writes"
        )
    notes = [line.rstrip() for line in text[: start.start()].splitlines() if line.strip()]
    warnings: list[str] = []
    decoder = json.JSONDecoder()
    documents: list[dict[str, Any]] = []
    pos = start.start()
    while True:
        try:
            doc, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as err:
            repaired = text[:pos] + _NON_NUMBER.sub(_number_token, text[pos:])
            try:
                doc, end = decoder.raw_decode(repaired, pos)
            except json.JSONDecodeError:
                raise _damaged(source, err, documents) from None
            text = repaired
            warnings.append("fio printed nan/inf where a number belongs; read as NaN/Infinity")
        if not isinstance(doc, dict):
            raise FioOutputError(
                f"{source}: JSON, but not fio output (a {type(doc).__name__}, not an object);"
                " give the file fio wrote with --output-format=json+"
            )
        documents.append(doc)
        # another report follows (--status-interval), possibly after a normal-format report
        following = _JSON_START.search(text, end)
        if following is None:
            return notes, documents, text[end:].strip(), warnings
        pos = following.start()


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
        " stopped before fio finished writing (killed, disk full). Rerun the job"
    )


# --- one entry --------------------------------------------------------------------------------


def _job(raw: dict[str, Any], client_server: bool) -> JobResult:
    error = _int(raw.get("error"))
    directions: dict[str, DirectionResult] = {}
    if error == 0:  # a failed job's zeros are not measurements
        for name in DIRECTIONS:
            result = _direction(name, raw.get(name))
            if result is not None:
                directions[name] = result
    runtime = raw.get("job_runtime")
    ctx = raw.get("ctx")
    steadystate = raw.get("steadystate")
    port = raw.get("port")
    return JobResult(
        name=str(raw.get("jobname")),
        groupid=_int(raw.get("groupid")),
        error=error,
        hostname=_str_or_none(raw.get("hostname")) if client_server else None,
        port=int(port) if client_server and isinstance(port, (int, float)) else None,
        job_runtime_ms=int(runtime) if isinstance(runtime, (int, float)) else None,
        usr_cpu_pct=_float(raw.get("usr_cpu")),
        sys_cpu_pct=_float(raw.get("sys_cpu")),
        ctx=int(ctx) if isinstance(ctx, (int, float)) else None,
        job_options=_options(raw.get("job options")),
        directions=directions,
        steadystate=steadystate if isinstance(steadystate, dict) else None,
    )


def _direction(name: Direction, raw: Any) -> DirectionResult | None:
    if not isinstance(raw, dict):
        return None
    in_ns = any(key in raw for key in ("slat_ns", "clat_ns", "lat_ns"))
    suffix = "_ns" if in_ns else ""
    slat = _latency(raw.get("slat" + suffix), in_ns)
    clat = _latency(raw.get("clat" + suffix), in_ns)
    lat = _latency(raw.get("lat" + suffix), in_ns)
    total_ios = _int(raw.get("total_ios"))
    if name == "sync":
        if lat is None:
            return None
        # fdatasync counts can show total_ios 0 while the latency has N samples: trust N
        return DirectionResult(
            direction=name, io_bytes=0, bw_bytes=math.nan, iops=math.nan, runtime_ms=0,
            total_ios=max(total_ios, lat.n or 0), short_ios=0, drop_ios=0, lat=lat,
        )  # fmt: skip
    io_bytes = _int(raw.get("io_bytes"))
    if not in_ns and "io_kbytes" not in raw:
        io_bytes *= 1024  # fio 2.x wrote KiB under the name io_bytes
    iops = _float(raw.get("iops"))
    runtime_ms = _int(raw.get("runtime"))
    if "total_ios" not in raw:  # fio before 2.2 did not print it
        total_ios = round(iops * runtime_ms / 1000)
    if io_bytes == 0 and total_ios == 0:
        return None
    bw_bytes = raw.get("bw_bytes")
    return DirectionResult(
        direction=name,
        io_bytes=io_bytes,
        bw_bytes=_float(bw_bytes) if bw_bytes is not None else _float(raw.get("bw")) * 1024,
        iops=iops,
        runtime_ms=runtime_ms,
        total_ios=total_ios,
        short_ios=_int(raw.get("short_ios")),
        drop_ios=_int(raw.get("drop_ios")),
        clat=clat,
        slat=slat,
        lat=lat,
    )


def _latency(raw: Any, in_ns: bool) -> LatencyStats | None:
    if not isinstance(raw, dict):
        return None
    n = raw.get("N")
    n = int(n) if isinstance(n, (int, float)) and not isinstance(n, bool) else None
    low, high, mean = _float(raw.get("min")), _float(raw.get("max")), _float(raw.get("mean"))
    if n == 0 or (n is None and not (low or high or mean)):
        return None  # not measured (e.g. slat of a synchronous engine) or no samples
    divisor = 1000.0 if in_ns else 1.0
    percentiles: dict[str, float] = {}
    raw_percentiles = raw.get("percentile")
    if isinstance(raw_percentiles, dict):
        for key, value in raw_percentiles.items():
            try:
                wanted = float(key)
            except ValueError:
                continue
            if wanted > 0:  # fio 2.x padded the list with "0.00": 0
                percentiles[key] = _float(value) / divisor
    return LatencyStats(
        n=n,
        min_us=low / divisor,
        max_us=high / divisor,
        mean_us=mean / divisor,
        stddev_us=_float(raw.get("stddev")) / divisor,
        percentiles_us=percentiles,
        bins=_bins(raw.get("bins"), in_ns),
    )


def _bins(raw: Any, in_ns: bool) -> dict[int, int] | None:
    if not isinstance(raw, dict) or not raw:
        return None
    bins: dict[int, int] = {}
    if "FIO_IO_U_PLAT_BITS" in raw:  # fio 2.x json+: counts by bucket index, latencies in µs
        bits, per_group = int(raw["FIO_IO_U_PLAT_BITS"]), int(raw["FIO_IO_U_PLAT_VAL"])
        for key, count in raw.items():
            if key.startswith("FIO_IO_U_PLAT") or not count:
                continue
            value_ns = _bucket_value(int(key), bits, per_group) * 1000
            bins[value_ns] = bins.get(value_ns, 0) + int(count)
        return bins
    scale = 1 if in_ns else 1000
    for key, count in raw.items():
        if count:
            bins[int(key) * scale] = bins.get(int(key) * scale, 0) + int(count)
    return bins


def _bucket_value(index: int, bits: int, per_group: int) -> int:
    """The latency a histogram bucket stands for: fio's log-linear buckets, midpoint value."""
    if index < per_group * 2:
        return index  # the first groups are exact
    shift = (index >> bits) - 1
    base = 1 << (shift + bits)
    return int(base + ((index % per_group) + 0.5) * (1 << shift))


def percentiles_from_bins(bins: dict[int, int], keys: Iterable[str]) -> dict[str, float]:
    """Percentiles in µs from a json+ histogram {ns: count}, for keys like "99.900000".

    fio's rule (stat.c): the p-th percentile is the first bucket, in increasing latency, at
    which the running count reaches p/100 of all samples; its value is the bucket's midpoint,
    which is what the histogram keys already are.
    """
    ordered = sorted(bins.items())
    total = sum(count for _, count in ordered)
    result: dict[str, float] = {}
    if total == 0:
        return result
    for key in sorted(keys, key=float):
        # the double fio holds for e.g. 99.9, exactly: ties then fall the same way as in fio
        threshold = Fraction(float(key)) * total / 100
        running = 0
        for value_ns, count in ordered:
            running += count
            if running >= threshold:
                result[key] = value_ns / 1000
                break
    return result


# --- merging numjobs clones ---------------------------------------------------------------


def _combine(jobs: list[JobResult], global_options: dict[str, str]) -> list[JobResult]:
    """Merge entries sharing host, group and jobname; settle group_reporting and processes."""
    groups: dict[tuple[str | None, int | None, int, str], list[JobResult]] = {}
    for job in jobs:
        groups.setdefault((job.hostname, job.port, job.groupid, job.name), []).append(job)
    combined = []
    for entries in groups.values():
        if len(entries) > 1:
            combined.append(merge_jobs(entries))
            continue
        job = entries[0]
        options = {**global_options, **job.job_options}
        numjobs = _int(options.get("numjobs"), default=1)
        setting = options.get("group_reporting")
        if setting is not None:
            grouped: bool | None = setting.strip().lower() not in ("0", "false", "no")
        else:
            # several clones, one entry: fio reported them together
            grouped = True if numjobs > 1 else None
        processes = max(numjobs, 1) if grouped else 1
        combined.append(
            job.model_copy(update={"group_reporting": grouped, "processes": processes})
        )
    return combined


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
    The first non-zero error wins; a merged result with an error has no directions.
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
    if error == 0:
        for name in DIRECTIONS:
            parts = [job.directions[name] for job in entries if name in job.directions]
            if parts:
                directions[name] = _merge_direction(parts)
    ctxs = [job.ctx for job in entries]
    return JobResult(
        name=first.name,
        groupid=first.groupid,
        error=error,
        hostname=first.hostname,
        port=first.port,
        job_runtime_ms=sum(r for r in runtimes if r is not None) if None not in runtimes else None,
        usr_cpu_pct=usr,
        sys_cpu_pct=sys_,
        ctx=sum(c for c in ctxs if c is not None) if None not in ctxs else None,
        processes=sum(job.processes for job in entries),
        group_reporting=False,
        job_options=first.job_options,
        directions=directions,
        steadystate=first.steadystate,
    )


def _merge_direction(parts: Sequence[DirectionResult]) -> DirectionResult:
    if len(parts) == 1:
        return parts[0]
    weights = [part.total_ios for part in parts]
    return DirectionResult(
        direction=parts[0].direction,
        io_bytes=sum(p.io_bytes for p in parts),
        bw_bytes=sum(p.bw_bytes for p in parts),
        iops=sum(p.iops for p in parts),
        runtime_ms=max(p.runtime_ms for p in parts),
        total_ios=sum(p.total_ios for p in parts),
        short_ios=sum(p.short_ios for p in parts),
        drop_ios=sum(p.drop_ios for p in parts),
        clat=merge_latency([p.clat for p in parts], weights),
        slat=merge_latency([p.slat for p in parts], weights),
        lat=merge_latency([p.lat for p in parts], weights),
    )


def merge_latency(
    stats: Sequence[LatencyStats | None], fallback_weights: Sequence[int]
) -> LatencyStats | None:
    """Pool latency stats of several entries (see `merge_jobs`); None entries are skipped.

    `fallback_weights` (one per entry, e.g. total_ios) stand in for N where fio printed none.
    """
    present = [(s, w) for s, w in zip(stats, fallback_weights, strict=True) if s is not None]
    if not present:
        return None
    if len(present) == 1:
        return present[0][0]
    known_n = all(s.n is not None for s, _ in present)
    weights = [float(s.n if known_n and s.n is not None else w) for s, w in present]
    total = sum(weights)
    if total <= 0:
        weights, total = [1.0] * len(present), float(len(present))
    mean = sum(w * s.mean_us for (s, _), w in zip(present, weights, strict=True)) / total
    # pooled sum of squares: each entry's own (n - 1) * var plus its mean's offset
    squares = sum(
        max(w - 1, 0) * s.stddev_us**2 + w * (s.mean_us - mean) ** 2
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
        min_us=min(s.min_us for s, _ in present),
        max_us=max(s.max_us for s, _ in present),
        mean_us=mean,
        stddev_us=stddev,
        percentiles_us=percentiles,
        bins=bins,
        percentiles_lost=had_percentiles and not percentiles,
    )


# --- small readers for fio's loosely typed values -----------------------------------------


def _options(raw: Any) -> dict[str, str]:
    if not isinstance(raw, dict):
        return {}
    return {str(key): str(value) for key, value in raw.items()}


def _str_or_none(value: Any) -> str | None:
    return str(value) if value is not None else None


def _float(value: Any) -> float:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return math.nan
    return 0.0 if value is None else math.nan


def _int(value: Any, default: int = 0) -> int:
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return default
    return default
