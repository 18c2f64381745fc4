"""fio's results as typed models: a job, its directions, their latencies, and the whole output
(ssdcompare.fio.result.reader reads fio's JSON into them), with what both of its readers share."""

from __future__ import annotations

import math
from bisect import bisect_left
from collections.abc import Iterable
from fractions import Fraction
from itertools import accumulate, repeat
from typing import Any, Literal

from pydantic import BaseModel, Field

from ssdcompare.errors import SsdcompareError

Direction = Literal["read", "write", "trim", "sync", "mixed"]

# "mixed" appears instead of (or, with unified_rw_reporting=both, besides) read/write/trim
DIRECTIONS: tuple[Direction, ...] = ("read", "write", "trim", "sync", "mixed")

ALL_CLIENTS = "All clients"


_ERRNO_MAX = 2**31  # fio keeps a job's error in a C int


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
        printed = self.percentiles_us
        found = [math.nan if key is None else printed[key] for key in _distribution_keys(printed)]
        return None if all(map(math.isnan, found)) else tuple(found)

    def percentile_us(self, p: float) -> float | None:
        """The p-th percentile (e.g. 99.9) in µs, or None when fio did not report it."""
        exact = _KEY_OF.get(p)
        if exact is None:
            exact = f"{p:f}"
            if len(_KEY_OF) < 1000:
                _KEY_OF[p] = exact
        value = self.percentiles_us.get(exact)
        if value is not None:
            return value
        key = _percentile_key(tuple(self.percentiles_us), p)
        return None if key is None else self.percentiles_us[key]


_KEY_OF: dict[float, str] = {}  # a percentile as fio writes its key: 99.9 -> "99.900000"


def _percentile_key(keys: tuple[str, ...], p: float) -> str | None:
    """The key of the p-th percentile among `keys`: as fio writes it ("99.900000"), else the
    first that is p but for rounding ("99.9"); None without one."""
    exact = f"{p:f}"
    if exact in keys:
        return exact
    for key in keys:
        try:
            if math.isclose(float(key), p, abs_tol=1e-9):
                return key
        except ValueError:
            continue
    return None


_PLANS: dict[tuple[str, ...], list[str | None]] = {}


def _distribution_keys(printed: dict[str, float]) -> list[str | None]:
    """The key of each of DISTRIBUTION_PERCENTILES among the `printed` ones (None where fio
    printed none), found once for the keys fio writes in every output alike."""
    keys = tuple(printed)
    plan = _PLANS.get(keys)
    if plan is None:
        plan = [_percentile_key(keys, p) for p in DISTRIBUTION_PERCENTILES]
        if len(_PLANS) < 100:
            _PLANS[keys] = plan
    return plan


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


class LatencySearch(BaseModel):
    """fio's search for the deepest queue that meets a latency target (the job options
    latency_target, latency_window, latency_percentile), as fio reports it for the job.

    fio starts at QD 1 and, after each window, raises the depth while the share of I/Os
    within the target stays at the percentile or more, and lowers it when not; once the depth
    stops changing it runs one more window at it, with its statistics started anew, and ends
    the job. A value fio did not print, or printed unusable, is None.
    """

    depth: int | None  # latency_depth: the queue depth fio ended at
    target_us: float  # latency_target: ns in fio's JSON (µs before fio 3.0)
    percentile: float | None  # latency_percentile: the share of I/Os to be within the target
    window_us: float | None  # latency_window: µs in fio's JSON


def latency_search(
    depth: int | None,
    target: int | None,
    percentile: float | None,
    window_us: int | None,
    target_in_ns: bool = True,
) -> LatencySearch | None:
    """The search of a job from what fio printed for it (either reader's values, None where
    absent or unusable); None for a job without a target: fio 3.x prints the keys for every
    job, with a target of 0 and its iodepth as the depth."""
    if target is None or target <= 0:
        return None
    return LatencySearch(
        depth=depth,
        target_us=target / 1000 if target_in_ns else float(target),
        percentile=percentile,
        window_us=float(window_us) if window_us is not None else None,
    )


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
    latency_search: LatencySearch | None = None  # None: the job had no latency target

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

    @property
    def ok_iops(self) -> float | None:
        """The IOPS of every job without an error, all directions added; None when they did
        no I/O."""
        return sum(j.total_iops for j in self.jobs if j.ok) or None


# a direction fio printed with zeros: it moved nothing (a true zero, not an unknown)
_EMPTY = object()


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
    # a whole count reaches p % of all when it reaches the next whole number: whole numbers
    # are compared quicker, and the first bucket found is the same
    wanted = [math.ceil(p * total / 100) for p in DISTRIBUTION_PERCENTILES]
    found = map(bisect_left, repeat(running), wanted)
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
