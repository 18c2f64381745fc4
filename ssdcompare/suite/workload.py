"""The models of what is measured: a `Workload` (one fio job), a `MatrixSpec` and a `SuiteSpec`
(a suite file as written) and a `Suite` (the flat, ordered workloads every target runs).

ssdcompare.suite.files reads suite files into a SuiteSpec; ssdcompare.suite.matrix expands it
into a Suite.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from ssdcompare.errors import SsdcompareError, validation_message
from ssdcompare.suite.longrun import LongRunKeys
from ssdcompare.suite.options import (
    canonical,
    control_character,
    extra_option_problem,
    value_problem,
)
from ssdcompare.suite.pts import PtsSpec, scaled_fields
from ssdcompare.suite.realism import RealismKeys
from ssdcompare.suite.verifying import verify_problem
from ssdcompare.units import format_bytes, parse_latency_us, parse_size, size_token

RwPattern = Literal["read", "write", "randread", "randwrite", "rw", "randrw", "trim", "randtrim"]
RW_PATTERNS: tuple[str, ...] = RwPattern.__args__  # type: ignore[attr-defined]
RW_ALIASES = {"readwrite": "rw", "randreadwrite": "randrw"}
MIXED_PATTERNS = frozenset({"rw", "randrw"})
READING_PATTERNS = frozenset({"read", "randread", "rw", "randrw"})
WRITING_PATTERNS = frozenset({"write", "randwrite", "rw", "randrw"})
TRIM_PATTERNS = frozenset({"trim", "randtrim"})
# What each pattern is called in words, in the order reports list them.
RW_LABELS = {
    "randread": "random read", "randwrite": "random write", "randrw": "random read/write mix",
    "read": "sequential read", "write": "sequential write", "rw": "sequential read/write mix",
    "randtrim": "random trim", "trim": "sequential trim",
}  # fmt: skip

# fio's I/O engines that make sense for a storage comparison and do their I/O on the target
# (network engines such as nbd or rdma send it elsewhere); fio --enghelp lists what a given
# build has, and `plan` checks the rendered choice against the installed fio.
IOENGINES = (
    "io_uring", "io_uring_cmd", "libaio", "psync", "pvsync", "pvsync2", "sync", "vsync",
    "posixaio", "mmap", "sg", "splice", "null", "windowsaio", "solarisaio",
)  # fmt: skip

# Bursts (thinktime after every thinktime_blocks I/Os) are split apart from fio's log of every
# I/O, whose timestamps are whole milliseconds: shorter idle gaps cannot be told from jitter.
BURST_MIN_IDLE_US = 10_000
MAX_LOGGED_IOS = 1_000_000  # per job; about 22 MB of log per million I/Os before compression
# A job's runtime (and ramp) is seconds to hours; more than a week is a mistake (milliseconds
# meant, a digit too many), and would hold the device and the sweep for ever
MAX_RUNTIME_S = 7 * 24 * 3600
# fio measures in milliseconds; under a tenth of a second a job is mostly its start and end
MIN_RUNTIME_S = 0.1
MAX_REPEAT = 1000  # repeats of each job a sweep may ask for

# \Z, not $: "$" also matches before a final newline, which would end a jobfile line
# a curve's runs add "@max" or "@70pct" (then a drive state's ".empty") to their job's id
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*(@(max|\d+(\.\d+)?pct)(\.[a-z]+)?)?\Z")
# An id names a jobfile and a folder of results: filesystems refuse names past 255 bytes, and
# a name that long is no use in a table either. Suites are held to it when they are loaded
# (ssdcompare.suite.matrix), so results stored with a longer id by an older version still load.
MAX_ID_LENGTH = 100
_PCT_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")

ExtraValue = str | int | float | bool | None

# The states a suite can measure a drive in, one pass over its jobs each (`sweep --states`):
# empty = the span discarded (TRIM) before every run; full = the span filled before the pass.
DriveState = Literal["empty", "full"]
DRIVE_STATES: tuple[str, ...] = DriveState.__args__  # type: ignore[attr-defined]

# A latency-vs-load curve (`curve`): shares of the job's maximum IOPS, one paced run each.
# vdbench's default list, and a good one: coarse at light load, fine near saturation.
DEFAULT_CURVE = (10, 50, 70, 80, 90, 100)
MAX_CURVE_POINTS = 20
# What a curve's points are shares of: each device's own maximum, the highest maximum of the
# sweep's devices (every device is offered the same loads), or a given rate in IOPS (the
# same loads in every sweep: a datasheet's figure, or last year's drive)
CurveBase = Literal["own", "fastest"] | int
# fio options a curve sets itself on its paced runs: a suite giving them would pace twice
CURVE_OWNED = ("rate", "rate_iops", "rate_process", "rate_min", "rate_iops_min", "rate_cycle",
               "rate_ignore_thinktime", "rate_poisson")  # fmt: skip
MAX_RUN = "max"  # the job id suffix of a curve's unpaced run: randread-4k-qd32@max
# fio paces Poisson arrivals in whole microseconds: above some 200,000 IOPS a process cannot
# be offered every load to within 10 % (ssdcompare.fio.pacing)
MAX_PACED_IOPS = 200_000


def runtime_problem(seconds: float) -> str:
    """Why `seconds` is no runtime for a job (more than MAX_RUNTIME_S)."""
    return (f"{seconds:g} s is too long: a job runs at most 7 days ({MAX_RUNTIME_S} s); give "
            "its time in seconds")  # fmt: skip


def fio_seconds(seconds: float) -> str:
    """A time as a fio option's value: whole seconds as they are ("60"), a fraction of one
    in milliseconds ("250ms"), which fio reads with its unit."""
    if seconds == int(seconds):
        return str(int(seconds))
    return f"{round(seconds * 1000)}ms"


def _alias(*names: str) -> AliasChoices:
    return AliasChoices(*names)


class Workload(RealismKeys, LongRunKeys):
    """One fio job as it runs against one target: the unit of measurement and comparison.
    The keys that make it like production's (distribution, data, verify, engine options,
    placement) are RealismKeys' (ssdcompare.suite.realism); those of long runs shaped in time
    (io_size in spans, thinktime_iotime, the log interval) LongRunKeys' (suite.longrun)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    id: str | None = Field(None, description="Stable readable id; generated when omitted")
    rw: RwPattern
    bs_bytes: int = Field(validation_alias=_alias("bs", "bs_bytes"))
    iodepth: int = Field(1, ge=1, le=65536)
    numjobs: int = Field(1, ge=1, le=4096)
    rwmixread: int | None = Field(None, ge=0, le=100)
    fsync: int = Field(0, ge=0, description="Flush after every N writes; 0 = never")
    # seconds, whole or not: a scaled run (--scale) of a long test can last a fraction of one
    runtime_s: float = Field(60, validation_alias=_alias("runtime", "runtime_s"))
    ramp_s: int = Field(0, ge=0, validation_alias=_alias("ramp_time", "ramp", "ramp_s"))
    size_bytes: int | None = Field(None, gt=0)
    size_pct: float | None = Field(None, gt=0, le=100)
    ioengine: str | None = Field(None, description="None = io_uring where fio supports it")
    direct: bool = True
    thinktime_us: int | None = Field(
        None, ge=0, validation_alias=_alias("thinktime", "thinktime_us")
    )
    thinktime_blocks: int | None = Field(None, ge=1)
    # size-capped: the job ends after this many bytes or its runtime, whichever comes first
    io_size_bytes: int | None = Field(
        None, gt=0, validation_alias=_alias("io_size", "io_size_bytes")
    )
    extra: dict[str, ExtraValue] = Field(default_factory=dict)
    group: str | None = Field(None, description="Name of the matrix this workload came from")
    description: str | None = None
    # set by Suite.in_states, not by suite authors: the pass of a --states sweep it belongs to
    state: DriveState | None = None
    # a latency-vs-load curve: an unpaced run, then one paced at each share of its maximum
    curve: list[float] | None = None
    curve_base: CurveBase = Field("own", description="own, fastest, or a rate in IOPS")
    stop_p99_us: float | None = Field(
        None, validation_alias=_alias("stop_p99", "stop_p99_us"),
        description="Skip a curve's higher points once a point's p99 latency passes this",
    )  # fmt: skip
    # set by curve_runs, not by suite authors: the share of the maximum this run is paced at
    # (None for the curve's unpaced run, and for every job that is no curve's)
    point: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _split_size(cls, data: Any) -> Any:
        """`size` accepts "10g", 4096 or "20%"; it lands in size_bytes or size_pct."""
        if isinstance(data, dict) and "size" in data:
            data = dict(data)
            value = data.pop("size")
            if value is None:
                return data
            pct = _PCT_RE.match(value) if isinstance(value, str) else None
            if pct:
                data["size_pct"] = float(pct.group(1))
            else:
                try:
                    data["size_bytes"] = parse_size(value)
                except ValueError as err:
                    raise ValueError(f"size: {err}; or a share of the device like 20%") from None
        return data

    @field_validator("runtime_s", "ramp_s")
    @classmethod
    def _at_most_a_week(cls, value: float, info: ValidationInfo) -> float:
        if value > MAX_RUNTIME_S:
            raise ValueError(runtime_problem(value))
        if info.field_name == "runtime_s" and not (
            value >= MIN_RUNTIME_S and round(value, 3) == value
        ):
            raise ValueError(f"runtime {value:g} s: a job runs at least {MIN_RUNTIME_S:g} s, in "
                             "whole milliseconds (fio's finest step)")  # fmt: skip
        return value

    @field_validator("rw", mode="before")
    @classmethod
    def _rw_alias(cls, value: Any) -> Any:
        if isinstance(value, str):
            return RW_ALIASES.get(value.strip().lower(), value.strip().lower())
        return value

    @field_validator("bs_bytes", "io_size_bytes", mode="before")
    @classmethod
    def _parse_bs(cls, value: Any, info: ValidationInfo) -> int | None:
        if value is None:
            return None
        if not isinstance(value, (int, str)) or isinstance(value, bool):
            what = "block size" if info.field_name == "bs_bytes" else "io_size"
            raise ValueError(f"{what} must be bytes or a string like 4k, got {value!r}")
        return parse_size(value)

    @field_validator("ioengine")
    @classmethod
    def _known_engine(cls, value: str | None) -> str | None:
        if value is not None and value not in IOENGINES:
            raise ValueError(f"unknown ioengine {value!r}; allowed: {', '.join(IOENGINES)}")
        return value

    @field_validator("id")
    @classmethod
    def _valid_id(cls, value: str | None) -> str | None:
        if value is not None and not _ID_RE.match(value):
            raise ValueError(
                f"id {value!r} must start with a letter or digit and use only letters, digits "
                "and . _ + - (it names files and fio job sections)"
            )
        if value is not None and value.startswith("global"):
            # fio reads any section whose name starts with "global" as [global]
            raise ValueError(f"id {value!r} cannot start with 'global': fio reserves it")
        return value

    @field_validator("extra")
    @classmethod
    def _valid_extra(cls, value: dict[str, ExtraValue]) -> dict[str, ExtraValue]:
        # options that need --allow-option are judged when the sweep is planned
        for key, item in value.items():
            problem = extra_option_problem(key) or value_problem(key, item)
            if problem:
                raise ValueError(problem)
        return value

    @field_validator("curve", mode="before")
    @classmethod
    def _curve_given(cls, value: Any) -> Any:
        """`curve: true` (or "default") is vdbench's default list."""
        if value is True or value == "default":
            return list(DEFAULT_CURVE)
        if value is False:
            return None
        return value

    @field_validator("curve")
    @classmethod
    def _curve_shares(cls, value: list[float] | None) -> list[float] | None:
        if value is None:
            return None
        if not value:
            raise ValueError("a curve needs at least one share of the maximum, e.g. [50, 90]")
        if len(value) > MAX_CURVE_POINTS:
            raise ValueError(f"a curve has at most {MAX_CURVE_POINTS} points, not {len(value)}")
        for share in value:
            if round(share, 2) != share or not 0.01 <= share:
                raise ValueError(f"{share!r} is no share to pace at: give percentages from "
                                 "0.01 to 100, with at most two decimals")  # fmt: skip
            if not 0 < share <= 100:
                raise ValueError(
                    f"{share:g} is no share of the maximum: give percentages "
                    "above 0 and at most 100, e.g. [10, 50, 70, 80, 90, 100]"
                )
        if sorted(set(value)) != list(value):
            raise ValueError("give a curve's shares once each, lowest first, e.g. [10, 50, 90]")
        return value

    @field_validator("curve_base", mode="before")
    @classmethod
    def _base_given(cls, value: Any) -> Any:
        """A rate is IOPS, a whole number above 0 ("20k" is 20,000)."""
        if isinstance(value, str) and value not in ("own", "fastest"):
            match = re.fullmatch(r"\s*(\d+)\s*([km]?)\s*", value.lower())
            if not match:
                raise ValueError(f"curve_base {value!r}: give own, fastest, or a rate in IOPS "
                                 "such as 20000 or 20k")  # fmt: skip
            value = int(match.group(1)) * {"": 1, "k": 1000, "m": 1_000_000}[match.group(2)]
        if isinstance(value, bool) or (isinstance(value, int) and not 0 < value <= 10**9):
            raise ValueError("curve_base: a rate in IOPS is a whole number above 0 (and at "
                             "most 1,000,000,000)")  # fmt: skip
        return value

    @field_validator("stop_p99_us", mode="before")
    @classmethod
    def _stop_latency(cls, value: Any) -> Any:
        return None if value is None else parse_latency_us(value)

    @field_validator("description", "group")
    @classmethod
    def _one_line(cls, value: str | None) -> str | None:
        # both are written into the jobfile's comment header: a newline would end the comment
        bad = control_character(value) if value is not None else None
        if bad:
            raise ValueError(f"contains {bad}; it is written into the jobfile, keep it one line")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> Workload:
        if self.rwmixread is not None and self.rw not in MIXED_PATTERNS:
            raise ValueError(
                f"rwmixread applies only to mixed patterns rw and randrw, not rw={self.rw}; "
                "drop rwmixread or use rw=randrw"
            )
        if self.rw in MIXED_PATTERNS and self.rwmixread is None:
            self.rwmixread = 50  # fio's own default, made explicit so ids and tables show it
        if (self.fsync or self.fdatasync) and self.rw not in WRITING_PATTERNS:
            which = "fsync" if self.fsync else "fdatasync"
            raise ValueError(f"{which} flushes after writes; rw={self.rw} does not write")
        if self.size_bytes is not None and self.size_pct is not None:
            raise ValueError("give size once, either in bytes or as a percentage")
        if self.thinktime_blocks is not None and self.thinktime_us is None:
            raise ValueError("thinktime_blocks needs thinktime (the idle time in microseconds)")
        self._check_curve()
        problem = self.longrun_problem(self.io_size_bytes, self.thinktime_us)
        problem = problem or self.realism_problem(
            self.rw, "write" in self.directions, self.ioengine, self.direct, self.extra
        )
        problem = problem or verify_problem(self)
        if problem:
            raise ValueError(problem)
        if self.id is None:
            self.id = self.generated_id()
        return self

    def _check_curve(self) -> None:
        """A curve's options go together, and its pacing is its own."""
        if self.curve is None:
            if self.stop_p99_us is not None or self.curve_base != "own":
                which = "stop_p99" if self.stop_p99_us is not None else "curve_base"
                raise ValueError(f"{which} applies to a curve; add curve: [10, 50, 70, 80, "
                                 "90, 100] or drop it")  # fmt: skip
            if self.point is not None or (self.id is not None and "@" in self.id):
                raise ValueError("'@' in an id and point are kept for the runs a curve makes")
            return
        problem = self._curve_problem()
        if problem:
            raise ValueError(problem)
        if self.point is not None and self.point not in self.curve:
            raise ValueError(f"point {self.point:g} is not one of the curve's shares")
        if self.id is not None and "@" in self.id:
            run = self.id.split("@", 1)[1]
            want = run_token(self.point)
            if run != want and not run.startswith(f"{want}."):
                raise ValueError(f"id {self.id!r}: '@' is kept for the runs a curve makes")

    def _curve_problem(self) -> str | None:
        """Why this curve's runs could not be paced as asked (see _check_curve); None."""
        assert self.curve is not None
        paced = sorted(key for key in self.extra if canonical(key) in CURVE_OWNED)
        if paced:
            return f"a curve paces its runs itself: drop {', '.join(paced)} from extra"
        if self.thinktime_us is not None:
            return ("a curve paces its runs itself, so thinktime cannot shape them too; drop "
                    "thinktime or the curve")  # fmt: skip
        if self.fsync or self.fdatasync:
            return ("fio (3.33) aborts when it paces flushed writes with random arrivals: a "
                    "curve cannot have fsync or fdatasync")  # fmt: skip
        if self.ramp_s > self.runtime_s:
            return (
                f"a curve's ramp_time ({self.ramp_s} s) must not outlast its runtime "
                f"({self.runtime_s} s): fio then records no latency for a paced run"
            )
        top = self.curve_base * max(self.curve) / 100 / self.numjobs if isinstance(
            self.curve_base, int) else 0  # fmt: skip
        if top > MAX_PACED_IOPS:
            return (f"curve_base {self.curve_base:,} asks fio for {top:,.0f} IOPS per process, "
                    f"and it paces at most about {MAX_PACED_IOPS:,} (its gaps are whole "
                    "microseconds): split the load with numjobs")  # fmt: skip
        return None

    def generated_id(self) -> str:
        """The readable id derived from the parameters, e.g. randread-4k-qd128."""
        pattern = f"{self.rw}{self.rwmixread}" if self.rw in MIXED_PATTERNS else self.rw
        parts = [pattern, size_token(self.bs_bytes), f"qd{self.iodepth}"]
        if self.numjobs > 1:
            parts.append(f"nj{self.numjobs}")
        if self.fsync:
            parts.append("fsync" if self.fsync == 1 else f"fsync{self.fsync}")
        if self.thinktime_us is not None:
            blocks = f"x{self.thinktime_blocks}" if self.thinktime_blocks else ""
            parts.append(f"think{self.thinktime_us}us{blocks}")
        if self.io_size_bytes is not None:
            parts.append(f"io{size_token(self.io_size_bytes)}")
        parts += self.longrun_tokens()
        if not self.direct:
            parts.append("buffered")
        parts += self.realism_tokens(self.ioengine)
        return "+".join(["-".join(parts), *map(_id_token, sorted(self.extra.items()))])

    @property
    def job_id(self) -> str:
        assert self.id is not None  # always set by validation
        return self.id

    @property
    def curve_name(self) -> str | None:
        """The job a curve run belongs to (`randread-4k-qd32` of `randread-4k-qd32@70pct`);
        None for a job that is no curve's."""
        if self.curve is None or "@" not in self.job_id:
            return None
        return self.job_id.split("@", 1)[0]

    @property
    def max_run_id(self) -> str | None:
        """The id of the unpaced run this curve run's rate is a share of (in the same drive
        state's pass); None for a job that is no curve's."""
        return self.curve_run_id(None)

    def curve_run_id(self, share: float | None) -> str | None:
        """The id of this curve's run at `share` (None: its unpaced run) in the same drive
        state's pass; None for a job that is no curve's."""
        name = self.curve_name
        return None if name is None else curve_run_id(name, share, self.state)

    @property
    def paced(self) -> bool:
        """A curve point: fio paces its I/O at a share of the curve's maximum."""
        return self.point is not None

    def curve_runs(self) -> list[Workload]:
        """This workload as it runs: itself, or for a curve its unpaced run (`<id>@max`) and
        one run per share of the maximum (`<id>@70pct`), lowest first."""
        if self.curve is None or "@" in self.job_id:
            return [self]
        runs = [self.model_copy(update={"id": f"{self.job_id}@{run_token(None)}"})]
        runs += [self.model_copy(update={"id": f"{self.job_id}@{run_token(share)}",
                                         "point": share}) for share in self.curve]  # fmt: skip
        return runs

    @property
    def bursty(self) -> bool:
        """I/O in bursts with idle gaps: a thinktime of at least BURST_MIN_IDLE_US after every
        thinktime_blocks (2 or more) I/Os."""
        return (
            self.thinktime_us is not None
            and self.thinktime_us >= BURST_MIN_IDLE_US
            and (self.thinktime_blocks or 1) >= 2
        )

    @property
    def logs_each_io(self) -> bool:
        """Whether fio logs every I/O (for per-burst results, see
        ssdcompare.analysis.perburst): a bursty job whose size cap (io_size) bounds it to
        MAX_LOGGED_IOS I/Os."""
        if not self.bursty or self.io_size_bytes is None:
            return False
        return self.io_size_bytes // self.bs_bytes * self.numjobs <= MAX_LOGGED_IOS

    @property
    def writes(self) -> bool:
        """True when the workload changes data on the target (writes or trims)."""
        return "write" in self.directions or "trim" in self.directions

    @property
    def directions(self) -> tuple[str, ...]:
        """The fio result sections this workload fills."""
        found = []
        # a mix at 100 % (0 %) read is a pure read (write) load; fio fills only that section
        if self.rw in READING_PATTERNS and self.rwmixread != 0:
            found.append("read")
        if self.rw in WRITING_PATTERNS and self.rwmixread != 100:
            found.append("write")
        if self.rw in TRIM_PATTERNS:
            found.append("trim")
        if self.fsync or self.fdatasync:
            found.append("sync")  # fio reports fsync and fdatasync calls in one "sync" section
        return tuple(found)

    @property
    def fdatasync(self) -> int:
        """Flush file data (fdatasync) after every N writes, given through `extra`; 0 = never."""
        value = self.extra.get("fdatasync")
        if value is None or isinstance(value, bool):
            return int(bool(value))
        try:
            return max(int(value), 0)
        except (TypeError, ValueError):
            return 0

    @property
    def extra_label(self) -> str | None:
        """The `extra` fio options as one line for tables ("rate_iops=200 zero_buffers"), or
        None when there are none: anything beyond the typed fields is shown, never hidden."""
        if not self.extra:
            return None
        return " ".join(
            key if value is None else f"{key}={int(value) if isinstance(value, bool) else value}"
            for key, value in sorted(self.extra.items())
        )

    @property
    def span_request(self) -> str:
        """The span asked for, whatever the target: "20%", "10g" or "all" (part of the
        workload hash: the same request on two targets is the same workload)."""
        if self.size_pct is not None:
            return f"{self.size_pct:g}%"
        if self.size_bytes is not None:
            return size_token(self.size_bytes)
        return "all"

    @property
    def span_label(self) -> str:
        """The span in words for tables: "20 %", "64 MiB" or "whole target"."""
        if self.size_pct is not None:
            return f"{self.size_pct:g} %"
        if self.size_bytes is not None:
            return format_bytes(self.size_bytes)
        return "whole target"

    @property
    def random(self) -> bool:
        return self.rw.startswith("rand")

    @property
    def duration_s(self) -> int:
        """Wall time fio spends measuring, ramp included (file layout and startup excluded)."""
        return self.ramp_s + self.runtime_s


# The keys a suite author may write for a workload (field names and their aliases).
WORKLOAD_KEYS: frozenset[str] = frozenset(
    {"size"}
    | {
        name
        for field_name, info in Workload.model_fields.items()
        for name in (
            [field_name, *info.validation_alias.choices]  # type: ignore[union-attr]
            if isinstance(info.validation_alias, AliasChoices)
            else [field_name]
        )
        if isinstance(name, str)
    }
) - {"state", "point", "log_ms"}

# Alias -> field name ("runtime" -> "runtime_s"), so overrides can use either spelling.
_FIELD_BY_ALIAS: dict[str, str] = {
    alias: field_name
    for field_name, info in Workload.model_fields.items()
    if isinstance(info.validation_alias, AliasChoices)
    for alias in info.validation_alias.choices
    if isinstance(alias, str)
}


class MatrixSpec(BaseModel):
    """A product of axes (e.g. bs x iodepth), with fixed fields, additions and exclusions."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    description: str | None = None
    base: dict[str, Any] = Field(default_factory=dict)
    axes: dict[str, list[Any]]
    include: list[dict[str, Any]] = Field(default_factory=list)
    exclude: list[dict[str, Any]] = Field(default_factory=list)

    @field_validator("axes")
    @classmethod
    def _axes_ok(cls, axes: dict[str, list[Any]]) -> dict[str, list[Any]]:
        if not axes:
            raise ValueError("a matrix needs at least one axis, e.g. iodepth: [1, 2, 4]")
        for key, values in axes.items():
            _check_keys([key], "axis")
            if key in ("id", "extra"):
                raise ValueError(f"{key!r} cannot be an axis")
            if not values:
                raise ValueError(f"axis {key!r} has no values")
        return axes

    @field_validator("name")
    @classmethod
    def _name_one_line(cls, value: str | None) -> str | None:
        # the name becomes each workload's group, written into the jobfile's comment header
        bad = control_character(value) if value is not None else None
        if bad:
            raise ValueError(f"contains {bad}; it is written into jobfiles, keep it one line")
        return value

    @field_validator("description")
    @classmethod
    def _printable(cls, value: str | None) -> str | None:
        return _printable_text(value)

    @field_validator("base")
    @classmethod
    def _base_ok(cls, base: dict[str, Any]) -> dict[str, Any]:
        _check_keys(base, "base key")
        return base


class SuiteSpec(BaseModel):
    """A suite file as written: defaults, single workloads and matrices."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$")
    description: str
    source: str | None = Field(None, description="Where the methodology comes from")
    read_only: bool = Field(False, description="True when no workload writes")
    # the preconditioning the methodology asks for; --precondition replaces it
    precondition: list[Literal["fill", "workload"]] = Field(default_factory=list)
    # the drive states the methodology measures in, a pass each; --states replaces it
    states: list[DriveState] = Field(default_factory=list)
    defaults: dict[str, Any] = Field(default_factory=dict)
    workloads: list[dict[str, Any]] = Field(default_factory=list)
    matrices: list[MatrixSpec] = Field(default_factory=list)
    # a test of SNIA's PTS: its jobs run in rounds until steady, or as one sequence
    pts: PtsSpec | None = None

    @field_validator("description", "source")
    @classmethod
    def _printable(cls, value: str | None) -> str | None:
        return _printable_text(value)

    @field_validator("defaults")
    @classmethod
    def _defaults_ok(cls, defaults: dict[str, Any]) -> dict[str, Any]:
        _check_keys(defaults, "default")
        if "id" in defaults:
            raise ValueError("'id' cannot be a default: every workload needs its own")
        return defaults

    @model_validator(mode="after")
    def _not_empty(self) -> SuiteSpec:
        if not self.workloads and not self.matrices:
            raise ValueError("a suite needs at least one entry under workloads or matrices")
        return self


def _printable_text(value: str | None) -> str | None:
    """Text shown on terminals and in reports: line breaks and tabs are fine, other control
    characters (e.g. terminal escape sequences) are not."""
    bad = control_character(value.replace("\n", " ").replace("\t", " ")) if value else None
    if bad:
        raise ValueError(f"contains {bad}: use plain text")
    return value


def _check_keys(keys: Any, what: str) -> None:
    unknown = sorted(set(keys) - WORKLOAD_KEYS)
    if unknown:
        raise ValueError(
            f"unknown {what} {', '.join(map(repr, unknown))}; allowed: "
            f"{', '.join(sorted(WORKLOAD_KEYS))}"
        )


class Suite(BaseModel):
    """An expanded suite: the ordered workloads every target runs."""

    model_config = ConfigDict(extra="forbid")

    name: str
    description: str
    source: str | None = None
    path: str | None = None
    precondition: list[str] = Field(default_factory=list)  # the suite's own preconditioning
    # the suite's own drive states; once expanded (in_states), the passes its workloads are in
    states: list[DriveState] = Field(default_factory=list)
    workloads: list[Workload] = Field(min_length=1)
    pts: PtsSpec | None = None  # a PTS test: how its jobs run (ssdcompare.suite.pts)
    # set by scaled(): every time multiplied by this (--scale); None: as written
    scale: float | None = None

    def scaled(self, factor: float | None) -> Suite:
        """The suite with every runtime, ramp and idle time multiplied by `factor`
        (ssdcompare.suite.pts.scaled_fields); None or 1 gives it as it is."""
        if factor is None or factor == 1 or self.scale is not None:
            return self
        shorter = [w.model_copy(update=scaled_fields(w, factor, MIN_RUNTIME_S))
                   for w in self.workloads]  # fmt: skip
        return self.model_copy(update={"workloads": shorter, "scale": factor})

    @property
    def expanded(self) -> bool:
        """True when the workloads are already one pass per drive state (see in_states)."""
        return any(w.state is not None for w in self.workloads)

    def in_states(self, states: list[str]) -> Suite:
        """Every workload once per drive state, pass after pass: `randread-4k-qd1.empty`,
        ..., then `randread-4k-qd1.full`, ... An empty list gives the suite as it is."""
        if not states or self.expanded:
            return self
        passes = [
            w.model_copy(update={"id": f"{w.job_id}.{state}", "state": state})
            for state in states
            for w in self.workloads
        ]
        return self.model_copy(update={"workloads": passes, "states": list(states)})

    @property
    def writes(self) -> bool:
        return any(w.writes for w in self.workloads)

    def read_only(self) -> Suite:
        """The same suite without any workload that writes or trims, or could: a mix at 100 %
        reads writes nothing, but fio opens its target for writing and the jobfile check
        counts it as writing, so it goes too."""
        kept = [w for w in self.workloads if not w.writes and w.rw not in WRITING_PATTERNS]
        if not kept:
            raise SsdcompareError(
                f"suite {self.name!r} has no read-only workloads; choose a suite with reads "
                "(e.g. qd-sweep or optane-vs-nand) for a device that holds data"
            )
        return self.model_copy(update={"workloads": kept})

    def with_overrides(self, **fields: Any) -> Suite:
        """Override fields on every workload (e.g. runtime=5), re-validating each one."""
        if not fields:
            return self
        # an alias next to its dumped field name would make pydantic reject the field name
        fields = {_FIELD_BY_ALIAS.get(key, key): value for key, value in fields.items()}
        rebuilt = []
        for workload in self.workloads:
            data = workload.model_dump(exclude_none=True)
            name, at, run = workload.job_id.partition("@")
            generated = name == workload.generated_id()
            if generated:  # a generated id follows the parameters it names
                del data["id"]
                data.pop("point", None)  # a curve run's: its id is made after validation
            if {"size", "size_bytes", "size_pct"} & set(fields):
                data.pop("size_bytes", None)
                data.pop("size_pct", None)
            data.update(fields)
            try:
                rebuilt.append(_rebuilt(data, f"@{run}" if at and generated else "",
                                        workload.point))  # fmt: skip
            except ValidationError as err:
                problem = validation_message(err)
                raise SsdcompareError(
                    f"override {fields} is invalid for {workload.job_id}: {problem}"
                ) from None
        return self.model_copy(update={"workloads": rebuilt})

    @property
    def duration_s(self) -> int:
        return sum(w.duration_s for w in self.workloads)


def _rebuilt(data: dict[str, Any], run: str, point: float | None) -> Workload:
    """A workload validated anew; a curve run (`run`: "@70pct") whose id is made from its
    options gets the id its new options make, with its run's suffix."""
    workload = Workload.model_validate(data)
    if not run:
        return workload
    return Workload.model_validate(
        {**data, "id": f"{workload.job_id}{run}", **({"point": point} if point else {})}
    )


def curve_run_id(curve: str, share: float | None, state: str | None = None) -> str:
    """The job id of curve `curve`'s run at `share` (None: its unpaced run) in the drive
    state's pass: "randread-4k-qd32@70pct", "randread-4k-qd32@max.full"."""
    return f"{curve}@{run_token(share)}" + (f".{state}" if state else "")


def run_token(share: float | None) -> str:
    """A curve run as its job id's suffix after "@": "max" for the unpaced run (None), a
    point's share as "70pct" or "92.5pct"."""
    return MAX_RUN if share is None else f"{share:g}pct"


def _id_token(option: tuple[str, ExtraValue]) -> str:
    """An `extra` option as part of a generated id: rate_iops=200 -> "rate_iops200"."""
    name, value = option
    if value is None or value is True or (name == "fdatasync" and value == 1):
        return name
    text = str(int(value) if isinstance(value, bool) else value)
    return name + re.sub(r"[^A-Za-z0-9._+-]+", ".", text).strip(".")
