"""One job entry of fio's JSON read the careful way: its directions, their latencies and
json+ histograms, in whichever layout the fio that wrote it used.

Layouts understood:
- fio 3.18 and later: slat_ns/clat_ns/lat_ns with N; percentiles where enabled; json+ "bins"
  keyed by latency in ns.
- fio 3.0-3.17: the same *_ns objects without N; percentiles (and bins) for clat only; before
  3.2 no bw_bytes (bw is KiB/s).
- fio 2.x: slat/clat/lat in microseconds; io_bytes is in KiB despite its name; no bw_bytes; the
  percentile list padded with "0.00": 0 entries; json+ bins keyed by bucket index with the
  FIO_IO_U_PLAT_* constants.
All latencies come out in microseconds and byte counts in bytes, whatever the layout. A job with
a non-zero error has no directions: the zeros fio prints for it are not measurements.
"""

from __future__ import annotations

import math
from typing import Any

import msgspec

from ssdcompare.fio.result.models import (
    _EMPTY,
    _ERRNO_MAX,
    DIRECTIONS,
    Direction,
    DirectionResult,
    FioOutputError,
    JobResult,
    LatencySearch,
    LatencyStats,
    _bucket_value,
    _percent,
    _sync_direction,
    latency_search,
)
from ssdcompare.fio.result.options import _options, _port, _text
from ssdcompare.fio.result.quick import _decode_naturals, _Natural
from ssdcompare.fio.result.values import _COUNT_MAX, _COUNT_MIN, _Issues, _kind, _label, _Reader


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
        latency_search=_search(raw, reader),
    )


def _search(raw: dict[str, Any], reader: _Reader) -> LatencySearch | None:
    """fio's search for a latency target, None for a job without one. fio writes the target
    in ns, but fio 2.x (latencies without _ns) in µs, and the window in µs; newer fio writes
    them again as latency_target_ns and latency_window_us, read where the others are not."""
    old_layout = any(
        isinstance(raw.get(name), dict) and "clat" in raw[name] for name in DIRECTIONS
    )
    target = "latency_target" if "latency_target" in raw else "latency_target_ns"
    window = "latency_window" if "latency_window" in raw else "latency_window_us"
    return latency_search(
        reader.count(raw, "latency_depth", "latency_depth"),
        reader.count(raw, target, target),
        reader.number(raw, "latency_percentile", "latency_percentile"),
        reader.count(raw, window, window),
        target_in_ns=not old_layout,
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
    counts = _bucket_counts(raw, reader, path)
    if counts is None:
        return None
    if "FIO_IO_U_PLAT_BITS" in raw:  # fio 2.x json+: counts by bucket index, latencies in µs
        return _indexed_bins(raw, counts, reader, path)
    bins: dict[int, int] = {}
    scale = 1 if in_ns else 1000
    for value, count in counts:
        if count:
            bins[value * scale] = bins.get(value * scale, 0) + count
    return bins


def _bucket_counts(
    raw: dict[str, Any], reader: _Reader, path: str
) -> list[tuple[int, int]] | None:
    """Every bucket of a histogram as (its key as a number, its count), fio 2.x's constants
    left out; None when one cannot be read (named in the warnings)."""
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
    return counts


def _indexed_bins(
    raw: dict[str, Any], counts: list[tuple[int, int]], reader: _Reader, path: str
) -> dict[int, int] | None:
    """fio 2.x's json+ histogram, whose counts are by bucket index (FIO_IO_U_PLAT_BITS and
    _VAL say which latency in µs each index stands for), as {latency in ns: count}."""
    bits = reader.count(raw, "FIO_IO_U_PLAT_BITS", f"{path}.FIO_IO_U_PLAT_BITS")
    per_group = reader.count(raw, "FIO_IO_U_PLAT_VAL", f"{path}.FIO_IO_U_PLAT_VAL")
    # fio's buckets: 2**bits of them per group, and bits is small (6 in every fio)
    if bits is None or per_group is None or not 0 < bits <= 16 or per_group != 1 << bits:
        reader.issues.other.append(
            f"{reader.label}: {path} has FIO_IO_U_PLAT_BITS {bits} and _VAL {per_group},"
            " which fio never used: histogram left out"
        )
        return None
    bins: dict[int, int] = {}
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
