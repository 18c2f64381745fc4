"""The workload keys that make a job like production's: where its I/O lands
(`random_distribution`), what data it writes (`buffer_compress_percentage`,
`dedupe_percentage`, `refill_buffers`), whether it checks that data (`verify`), how fio submits
and completes it (`hipri`, `sqthread_poll`, `fixedbufs`, `registerfiles`, with `ioengine` of
the workload itself) and where fio runs (`cpus_allowed`, `numa_cpu_nodes`, `numa_mem_policy`).

`RealismKeys` holds them as typed fields, each checked on its own here and against the rest
of the workload by `Workload` (ssdcompare.suite.workload): they are part of the generated id,
rendered into the jobfile by `jobfile_lines`, recorded with the suite in the manifest and read
into the frame's columns. Left out, each is what fio does by default, and the jobfile says so
in a comment: writing the default as an option would change what fio does (fio turns on its
compression code path for `buffer_compress_percentage=0`, and refills every buffer for
`dedupe_percentage=0`).
"""

from __future__ import annotations

import math
import re
import textwrap
from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field, field_validator

from ssdcompare.units import parse_size, size_token

# fio's checksums for `verify` (fio 3.33 --cmdhelp=verify), strongest last
VERIFY_METHODS = (
    "crc7", "crc16", "crc32", "crc32c", "crc32c-intel", "crc64", "xxhash", "md5", "sha1",
    "sha256", "sha512", "sha3-224", "sha3-256", "sha3-384", "sha3-512",
)  # fmt: skip
# The engines each submission option belongs to (fio --enghelp=<engine>)
ENGINE_FLAGS: dict[str, tuple[str, ...]] = {
    "hipri": ("io_uring", "io_uring_cmd", "pvsync2"),
    "sqthread_poll": ("io_uring", "io_uring_cmd"),
    "fixedbufs": ("io_uring", "io_uring_cmd"),
    "registerfiles": ("io_uring", "io_uring_cmd"),
}
FLAG_TOKENS = {"hipri": "hipri", "sqthread_poll": "sqpoll", "fixedbufs": "fixedbufs",
               "registerfiles": "regfiles"}  # fmt: skip
# how many written blocks a time-based job with `verify` checks at a time: fio's verify phase
# comes after the write phase, which in a time-based job never ends
VERIFY_BACKLOG = 1024
# fio options besides the keys that change what data is written: given through `extra`, the
# data is what they make, not fio's default
DATA_OPTIONS = frozenset({"zero_buffers", "buffer_pattern", "scramble_buffers",
                          "buffer_compress_chunk", "dedupe_mode", "dedupe_working_set_percentage",
                          "dedupe_global"})  # fmt: skip
DEFAULT_DATA = ("random bytes, incompressible; fio scrambles each buffer a little on every "
                "write so that no two blocks repeat")  # fmt: skip
_DISTRIBUTIONS = {"zipf", "pareto", "normal", "gauss", "zoned", "zoned_abs"}
# ASCII digits only: \d also matches other scripts' digits, which fio does not read
_CPU_LIST_RE = re.compile(r"^[0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*\Z")
_MEM_POLICY_RE = re.compile(r"^(default|local|prefer:(?P<p>[0-9]+)|bind:(?P<b>[0-9,-]+)|"
                            r"interleave:(?P<i>[0-9,-]+))\Z")  # fmt: skip
# the highest CPU or NUMA node number taken (fio's own limit is 4096 CPUs): a list is
# expanded to check it against the machine, and a mistyped 0-4294967295 must not fill memory
MAX_CPU_NUMBER = 8191


def _either(names: tuple[str, ...]) -> str:
    """("a", "b", "c") as "a, b or c"."""
    return " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)


def number_list(text: str) -> list[int]:
    """The numbers of a CPU or node list such as "0-3,8" ([0, 1, 2, 3, 8]); ValueError
    for anything else (checked as listed() checks it, so a list from `extra` is bounded too)."""
    found: list[int] = []
    for part in listed(text, "list").split(","):
        low, _, high = part.partition("-")
        found += range(int(low), int(high or low) + 1)
    return sorted(set(found))


def listed(value: Any, what: str) -> str:
    """A CPU or node list as fio takes it ("0-3,8"), from a number or a string: ASCII
    numbers and ranges, none backwards, none above MAX_CPU_NUMBER; ValueError otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"{what} is a list such as 0-3,8, not {value!r}")
    text = str(value).replace(" ", "")
    if not _CPU_LIST_RE.match(text):
        raise ValueError(f"{what} {value!r}: give numbers and ranges such as 0-3,8")
    for part in text.split(","):
        low, _, high = part.partition("-")
        if high and int(high) < int(low):
            raise ValueError(f"{what} {value!r}: the range {part} runs backwards")
        if int(high or low) > MAX_CPU_NUMBER:
            raise ValueError(f"{what} {value!r}: {int(high or low)} is above the highest CPU "
                             f"or node number taken ({MAX_CPU_NUMBER})")  # fmt: skip
    return text


def _zoned(kind: str, bands: str, original: str) -> str:
    """`zoned:` (shares of the span) or `zoned_abs:` (sizes) bands, checked: fio wants the
    shares of I/O (and for zoned, of the span) to add up to 100. Written anew from the
    numbers read, never as given."""
    access = span = 0.0
    written = []
    for band in bands.split(":"):
        share, slash, where = band.partition("/")
        try:
            io_pct = float(share)
            size = float(where) if kind == "zoned" else parse_size(where)
        except ValueError:
            size = io_pct = -1
        if not slash or io_pct < 0 or size <= 0:
            raise ValueError(f"random_distribution {original!r}: each band is a share of the "
                             "I/O and where it lands, e.g. zoned:90/10:10/90 (90 % of I/O to "
                             "10 % of the span, 10 % to the other 90 %)")  # fmt: skip
        if not (math.isfinite(io_pct) and math.isfinite(size)):
            raise ValueError(f"random_distribution {original!r}: give finite numbers")
        access += io_pct
        span += size
        where_text = f"{size:g}" if kind == "zoned" else size_token(int(size))
        written.append(f"{io_pct:g}/{where_text}")
    if round(access, 6) != 100:
        raise ValueError(f"random_distribution {original!r}: the shares of I/O add up to "
                         f"{access:g} %, not 100 %")  # fmt: skip
    if kind == "zoned" and round(span, 6) != 100:
        raise ValueError(f"random_distribution {original!r}: the shares of the span add up "
                         f"to {span:g} %, not 100 %")  # fmt: skip
    return f"{kind}:{':'.join(written)}"


def zoned_abs_bytes(value: str | None) -> int | None:
    """The bytes a `zoned_abs:` distribution's bands cover (they must fit in the span);
    None for any other distribution."""
    if value is None or not value.startswith("zoned_abs:"):
        return None
    return sum(parse_size(band.split("/")[1]) for band in value.split(":", 1)[1].split(":"))


def distribution(value: Any) -> str | None:
    """A `random_distribution` as fio takes it; None for uniform offsets (fio's `random`).

    Takes fio's own forms (`zipf:1.2`, `pareto:0.9`, `normal:10`, with an optional `:center`
    from 0 to 1; `zoned:90/10:10/90`, `zoned_abs:90/1g:10/9g`) and a hot band in words:
    "90/10" is 90 % of the I/O to 10 % of the span (zoned:90/10:10/90).
    """
    if value is None:
        return None
    text = str(value).strip().lower().replace(" ", "").replace("%", "")
    if not text.isascii() or not text.isprintable():
        raise ValueError(f"random_distribution {value!r}: use plain ASCII without tabs or "
                         "line breaks, such as zipf:1.2")  # fmt: skip
    if text in ("random", "uniform"):
        return None
    hot = re.fullmatch(r"([0-9]+(?:\.[0-9]+)?)/([0-9]+(?:\.[0-9]+)?)", text)
    if hot:
        io_pct, span = float(hot.group(1)), float(hot.group(2))
        if not (0 < io_pct < 100 and 0 < span < 100):
            raise ValueError(f"random_distribution {value!r}: a hot band is a share of the "
                             "I/O to a share of the span, both between 0 and 100, e.g. "
                             "90/10")  # fmt: skip
        return f"zoned:{io_pct:g}/{span:g}:{100 - io_pct:g}/{100 - span:g}"
    kind, _, rest = text.partition(":")
    if kind not in _DISTRIBUTIONS or not rest:
        raise ValueError(
            f"random_distribution {value!r}: give uniform, zipf:1.2, pareto:0.9, normal:10, "
            "zoned:90/10:10/90 (shares of I/O/span), zoned_abs:90/1g:10/9g, or a hot band such "
            "as 90/10 (90 % of the I/O to 10 % of the span)"
        )
    if kind.startswith("zoned"):
        return _zoned(kind, rest, str(value))
    return _skewed(kind.replace("gauss", "normal"), rest, str(value))


def _skewed(kind: str, rest: str, original: str) -> str:
    """zipf:theta, pareto:h or normal:deviation%, with an optional :center (0 to 1)."""
    figure, _, center = rest.partition(":")
    try:
        number = float(figure)
        middle = float(center) if center else None
    except ValueError:
        raise ValueError(f"random_distribution {original!r}: {kind} takes a number, e.g. "
                         f"{kind}:{_EXAMPLES[kind]}") from None  # fmt: skip
    limits = {"zipf": (0 < number < 1e6 and number != 1, "a theta above 0, other than 1"),
              "pareto": (0 < number < 1, "a power between 0 and 1"),
              "normal": (0 < number < 100, "a deviation in % of the span, above 0 and "
                         "under 100")}  # fmt: skip
    ok, needs = limits[kind]
    if not ok:
        raise ValueError(f"random_distribution {original!r}: {kind} needs {needs}")
    if middle is not None and not 0 <= middle <= 1:
        raise ValueError(f"random_distribution {original!r}: the center is a share of the "
                         "span from 0 to 1")  # fmt: skip
    return f"{kind}:{number:g}" + (f":{middle:g}" if middle is not None else "")


_EXAMPLES = {"zipf": "1.2", "pareto": "0.9", "normal": "10"}


def distribution_token(value: str) -> str:
    """A distribution as part of an id: zipf1.2, zoned90in10.10in90, zonedabs90in1g.10in9g."""
    kind, _, rest = value.partition(":")
    if kind.startswith("zoned"):
        bands = [band.replace("/", "in") for band in rest.split(":")]
        return kind.replace("_", "") + ".".join(bands)
    return kind + rest.replace(":", "c")


def distribution_words(value: str | None) -> str:
    """Where a random job's I/O lands, in words."""
    if value is None:
        return "uniform"
    kind, _, rest = value.partition(":")
    if kind == "zoned":
        bands = [band.split("/") for band in rest.split(":")]
        return ", ".join(f"{io} % of I/O to {span} % of the span" for io, span in bands)
    if kind == "zoned_abs":
        bands = [band.split("/") for band in rest.split(":")]
        return ", ".join(f"{io} % of I/O to {size}" for io, size in bands)
    return value


REALISM_KEYS = (
    "random_distribution", "buffer_compress_percentage", "dedupe_percentage", "refill_buffers",
    "verify", *ENGINE_FLAGS, "cpus_allowed", "numa_cpu_nodes", "numa_mem_policy",
)  # fmt: skip


class RealismKeys(BaseModel):
    """The fields of a Workload that make it like production's (see the module's words)."""

    random_distribution: str | None = Field(
        None, description="Where random I/O lands; None: uniformly over the span"
    )
    buffer_compress_percentage: int | None = Field(None, ge=0, le=100)
    dedupe_percentage: int | None = Field(None, ge=0, le=100)
    refill_buffers: bool | None = None
    verify: str | None = Field(None, description="Checksum each written block and check it")
    hipri: bool | None = None
    sqthread_poll: bool | None = None
    fixedbufs: bool | None = None
    registerfiles: bool | None = None
    cpus_allowed: str | None = None
    numa_cpu_nodes: str | None = None
    numa_mem_policy: str | None = None

    @field_validator("random_distribution", mode="before")
    @classmethod
    def _distribution(cls, value: Any) -> str | None:
        return distribution(value)

    @field_validator("verify", mode="before")
    @classmethod
    def _verify(cls, value: Any) -> str | None:
        if isinstance(value, str):  # fio reads its checksum names in any case
            value = value.strip().lower()
        if value is None or value is False or value in ("0", 0, "none"):
            return None
        if value is True:
            return "crc32c"
        if str(value) not in VERIFY_METHODS:
            raise ValueError(f"verify {value!r}: give a checksum fio has: "
                             f"{', '.join(VERIFY_METHODS)}")  # fmt: skip
        return str(value)

    @field_validator("cpus_allowed", "numa_cpu_nodes", mode="before")
    @classmethod
    def _lists(cls, value: Any, info: Any) -> str | None:
        return None if value is None else listed(value, info.field_name)

    @field_validator("buffer_compress_percentage", "dedupe_percentage", mode="before")
    @classmethod
    def _percent(cls, value: Any, info: Any) -> Any:
        """A share as 50 or "50%"; a yes/no is no share."""
        if isinstance(value, bool):
            raise ValueError(f"{info.field_name} is a share of 0 to 100 (%), not {value}")
        if isinstance(value, str) and value.strip().endswith("%"):
            return value.strip()[:-1].strip()
        return value

    @field_validator("numa_mem_policy", mode="before")
    @classmethod
    def _policy(cls, value: Any) -> str | None:
        if value is None:
            return None
        text = str(value).replace(" ", "")
        match = _MEM_POLICY_RE.match(text)
        if not match:
            raise ValueError(f"numa_mem_policy {value!r}: give default, local, prefer:0, "
                             "bind:0-1 or interleave:0-1")  # fmt: skip
        nodes = match.group("p") or match.group("b") or match.group("i")
        if nodes:
            listed(nodes, f"numa_mem_policy {value!r}: the nodes")
        return text

    def engine_flags(self) -> list[str]:
        """The submission options asked for (hipri, sqthread_poll, ...), in ENGINE_FLAGS order."""
        return [flag for flag in ENGINE_FLAGS if getattr(self, flag)]

    def realism_problem(
        self, rw: str, writes: bool, engine: str | None, direct: bool, extra: Mapping[str, Any]
    ) -> str | None:
        """Why these keys do not fit the rest of the workload (its pattern `rw`, whether it
        `writes`, the engine it names, direct I/O, its `extra` options), or None."""
        twice = [key for key in REALISM_KEYS if key in extra and getattr(self, key) is not None]
        if twice:
            return (f"{twice[0]} is given twice, as a workload key and in extra: keep the "
                    "workload key")  # fmt: skip
        if self.random_distribution is not None and not rw.startswith("rand"):
            return (f"random_distribution applies to random patterns, not rw={rw}: a "
                    "sequential job reads or writes the span in order")  # fmt: skip
        data = [key for key in ("buffer_compress_percentage", "dedupe_percentage",
                                "refill_buffers") if getattr(self, key) is not None]  # fmt: skip
        if data and not writes:
            return (f"{data[0]} shapes the data a job writes, and rw={rw} writes none (reads "
                    "get what earlier writes left): drop it, or exclude this pattern")  # fmt: skip
        if self.verify is not None and rw.endswith("trim"):
            return f"verify checks data read back, and rw={rw} only trims"
        for flag in self.engine_flags():
            if engine is not None and engine not in ENGINE_FLAGS[flag]:
                return (f"{flag} is an option of the {_either(ENGINE_FLAGS[flag])} engine, not "
                        f"of ioengine {engine}")  # fmt: skip
        if self.hipri and not direct:
            return "hipri polls for completions of direct I/O: it needs direct (not buffered)"
        return None

    def realism_tokens(self, engine: str | None) -> list[str]:
        """These keys as parts of a generated id, in a fixed order."""
        parts = []
        if self.random_distribution is not None:
            parts.append(distribution_token(self.random_distribution))
        if self.buffer_compress_percentage is not None:
            parts.append(f"cmp{self.buffer_compress_percentage}")
        if self.dedupe_percentage is not None:
            parts.append(f"dedup{self.dedupe_percentage}")
        if self.refill_buffers is not None:
            parts.append("refill" if self.refill_buffers else "norefill")
        if self.verify is not None:
            parts.append(f"verify{self.verify}")
        if engine is not None:
            parts.append(engine)
        parts += [FLAG_TOKENS[flag] for flag in self.engine_flags()]
        if self.cpus_allowed is not None:
            parts.append(f"cpus{self.cpus_allowed.replace(',', '.')}")
        if self.numa_cpu_nodes is not None:
            parts.append(f"numa{self.numa_cpu_nodes.replace(',', '.')}")
        if self.numa_mem_policy is not None:
            parts.append("mem" + re.sub(r"[:,]", ".", self.numa_mem_policy).replace(".", "", 1))
        return parts

    def data_words(self, extra: Mapping[str, Any]) -> str:
        """What data the job writes, in words: fio's default, the shares asked for, or the
        `extra` options that shape it (zero_buffers, buffer_pattern, ...), named as given."""
        shaping = [key for key in sorted(extra) if key in DATA_OPTIONS]
        if shaping:
            given_words = " ".join(k if extra[k] is None else f"{k}={extra[k]}" for k in shaping)
            return f"as extra shapes it ({given_words}); its compressibility is not known"
        return self.data_label

    @property
    def data_label(self) -> str:
        """What data the job writes, in words: fio's default or the shares asked for."""
        parts = []
        if self.buffer_compress_percentage is not None:
            parts.append(f"{self.buffer_compress_percentage} % compressible")
        if self.dedupe_percentage is not None:
            parts.append(f"{self.dedupe_percentage} % duplicate blocks")
        if self.refill_buffers:
            parts.append("new random bytes for every write")
        elif self.refill_buffers is False:
            parts.append("buffers not refilled")
        return ", ".join(parts) if parts else DEFAULT_DATA

    def realism_label(self, engine: str | None) -> str | None:
        """The keys given, as one line for tables ("zipf:1.2 compress 50 % verify crc32c"),
        or None when none is."""
        parts = []
        if self.random_distribution is not None:
            parts.append(self.random_distribution)
        if self.buffer_compress_percentage is not None:
            parts.append(f"compress {self.buffer_compress_percentage} %")
        if self.dedupe_percentage is not None:
            parts.append(f"dedupe {self.dedupe_percentage} %")
        if self.refill_buffers is not None:
            parts.append("refill_buffers" if self.refill_buffers else "refill_buffers=0")
        if self.verify is not None:
            parts.append(f"verify {self.verify}")
        if engine is not None:
            parts.append(engine)
        parts += self.engine_flags()
        for key in ("cpus_allowed", "numa_cpu_nodes", "numa_mem_policy"):
            if getattr(self, key) is not None:
                parts.append(f"{key}={getattr(self, key)}")
        return " ".join(parts) or None


def jobfile_lines(
    keys: RealismKeys, rw: str, writes: bool, time_based: bool, extra: Mapping[str, Any]
) -> list[str]:
    """The lines these keys add to a job's section: comments for what fio does by default
    (never the default as an option, which would change what fio does), options for what
    was asked."""
    lines = []
    if rw.startswith("rand"):
        where = distribution_words(keys.random_distribution)
        if keys.random_distribution is None:
            lines.append("; offsets: uniform over the span (fio's default, random_distribution="
                         "random)")  # fmt: skip
        else:
            lines += [f"; offsets: {where}", f"random_distribution={keys.random_distribution}"]
    if writes:
        lines.append(f"; data written: {keys.data_words(extra)}")
        for key in ("buffer_compress_percentage", "dedupe_percentage"):
            if getattr(keys, key) is not None:
                lines.append(f"{key}={getattr(keys, key)}")
        if keys.refill_buffers is not None:
            lines.append(f"refill_buffers={int(keys.refill_buffers)}")
    lines += _verify_lines(keys, writes, time_based)
    lines += [f"{flag}=1" for flag in keys.engine_flags()]
    for key in ("cpus_allowed", "numa_cpu_nodes", "numa_mem_policy"):
        if getattr(keys, key) is not None:
            lines.append(f"{key}={getattr(keys, key)}")
    return [part for line in lines for part in _wrapped(line)]


def _wrapped(line: str) -> list[str]:
    """A comment line cut to fit 95 columns, each part a comment; an option as it is."""
    if not line.startswith("; "):
        return [line]
    return textwrap.wrap(line[2:], 93, initial_indent="; ", subsequent_indent="; ")


def _verify_lines(keys: RealismKeys, writes: bool, time_based: bool) -> list[str]:
    if keys.verify is None:
        return []
    if not writes:
        lines = [f"; one pass of as many blocks as the span holds, each checked against the "
                 f"{keys.verify} checksum that a job with verify wrote into it earlier; the "
                 "first block that comes back wrong ends the run"]  # fmt: skip
    elif time_based:
        lines = [f"; every written block carries a {keys.verify} checksum; fio reads back each "
                 f"{VERIFY_BACKLOG} blocks it wrote and checks them, and the first that comes "
                 "back wrong ends the run",
                 f"verify_backlog={VERIFY_BACKLOG}"]  # fmt: skip
    else:
        lines = [f"; every written block carries a {keys.verify} checksum; fio reads the span "
                 "back after writing it, and the first block that comes back wrong ends the "
                 "run"]  # fmt: skip
    return [*lines, f"verify={keys.verify}", "verify_fatal=1"]


def given(workload: Any, key: str) -> Any:
    """A key's value for a Workload: the workload key, else the same fio option in its
    `extra` (suites written before the key was one pass it so: a flag without a value is
    on), else None."""
    value = getattr(workload, key)
    if value is not None or key not in workload.extra:
        return value
    value = workload.extra[key]
    if key in ENGINE_FLAGS or key == "refill_buffers":
        return value is None or str(value).lower() in ("1", "true")
    if key in ("buffer_compress_percentage", "dedupe_percentage"):
        try:
            return int(str(value))
        except ValueError:
            return None  # fio refuses it when the jobfile is checked
    return value if value is None else str(value)


def realism_columns(workload: Any) -> dict[str, object]:
    """The frame's columns of these keys for one workload (a Workload): what it asked for,
    and where it asked for nothing, what fio did by default (see ssdcompare.analysis.columns).
    Options given through `extra` count as the keys."""
    keys = workload.model_copy(update={key: given(workload, key) for key in REALISM_KEYS})
    return _columns_of(keys, workload)


def _columns_of(keys: Any, workload: Any) -> dict[str, object]:
    writes = "write" in workload.directions
    refill = keys.refill_buffers
    if refill is None:
        refill = keys.dedupe_percentage is not None  # fio refills for dedupe_percentage
    random = workload.rw.startswith("rand")
    fio_data = not DATA_OPTIONS & set(workload.extra)
    return {
        "workload_options": workload.realism_label(workload.ioengine),
        "random_distribution": (keys.random_distribution or "uniform") if random else None,
        # unknown, never fio's default, when extra shapes the data
        "compress_pct": (keys.buffer_compress_percentage or 0) if writes and fio_data else None,
        "dedupe_pct": (keys.dedupe_percentage or 0) if writes and fio_data else None,
        "refill_buffers": refill if writes else None,
        "data": keys.data_words(workload.extra) if writes else None,
        "verify": keys.verify,
        **{flag: bool(getattr(keys, flag)) for flag in ENGINE_FLAGS},
        "cpus_allowed": keys.cpus_allowed,
        "numa_cpu_nodes": keys.numa_cpu_nodes,
        "numa_mem_policy": keys.numa_mem_policy,
    }
