"""Parsing sizes as people type them, and formatting numbers for people.

Sizes follow fio's default (kb_base=1024): "4k", "4K", "4KiB" and "4kb" all mean 4096 bytes.
All formatting for display lives here so that stored values keep their units in field names.
"""

from __future__ import annotations

import re

_SUFFIX_POWER = {"": 0, "k": 1, "m": 2, "g": 3, "t": 4, "p": 5}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([kmgtp]?)(i?b)?\s*$", re.IGNORECASE)


def parse_size(value: int | str) -> int:
    """Return a size in bytes from 4096, "4k", "4K", "4KiB", "1M", "4m" or "512b".

    Raises ValueError with the accepted forms when the value cannot be read.
    """
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a size")
    if isinstance(value, int):
        if value <= 0:
            raise ValueError(f"size must be positive, got {value}")
        return value
    match = _SIZE_RE.match(str(value))
    if not match:
        raise ValueError(
            f"{value!r} is not a size; use bytes (4096) or a number with a suffix "
            "k/K/KiB, m/M/MiB, g/G/GiB, t/T/TiB (powers of 1024), e.g. 4k, 128K, 1M"
        )
    number, suffix, _ = match.groups()
    size = int(number) * 1024 ** _SUFFIX_POWER[suffix.lower()]
    if size <= 0:
        raise ValueError(f"size must be positive, got {value!r}")
    return size


def size_token(size_bytes: int) -> str:
    """A compact, fio-compatible spelling used in ids and jobfiles: 4096 -> "4k", 2**20 -> "1m"."""
    for suffix in ("p", "t", "g", "m", "k"):
        unit = 1024 ** _SUFFIX_POWER[suffix]
        if size_bytes >= unit and size_bytes % unit == 0:
            return f"{size_bytes // unit}{suffix}"
    return str(size_bytes)


def format_bytes(size_bytes: float | None) -> str:
    """Human display of a byte count with binary units: 4096 -> "4 KiB"."""
    if size_bytes is None:
        return "-"
    value = float(size_bytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


_LATENCY_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(ns|us|µs|ms|s)?\s*$", re.IGNORECASE)
_LATENCY_US = {"ns": 0.001, "us": 1.0, "µs": 1.0, "ms": 1000.0, "s": 1_000_000.0}


def parse_latency_us(value: int | float | str) -> float:
    """A latency as people type it, in microseconds: "500us", "1ms", "0.5ms", "2s", "800ns";
    a bare number is microseconds. Raises ValueError for anything else, or for 0."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a latency; give one like 500us or 1ms")
    if isinstance(value, (int, float)):
        number, unit = float(value), "us"
    else:
        match = _LATENCY_RE.match(value)
        if not match:
            raise ValueError(f"{value!r} is not a latency; give one like 500us, 1ms or 2s")
        number, unit = float(match.group(1)), (match.group(2) or "us").lower()
    if not number > 0 or number == float("inf"):
        raise ValueError(f"{value!r} is not a latency above 0")
    return number * _LATENCY_US[unit]


def format_duration(seconds: float) -> str:
    """Human display of a duration: 59 -> "59 s", 125 -> "2 min 05 s", 7260 -> "2 h 01 min";
    under a second as it is, 0.25 -> "0.25 s" (a scaled test's jobs)."""
    if 0 < seconds < 0.995:
        return f"{seconds:.2g} s"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, secs = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


# (from this value up, divide by, format) for each display; the first that fits is used
_Scale = tuple[tuple[float, float, str], ...]
_COUNT: _Scale = ((1e6, 1e6, "{:.2f}M"), (1e4, 1e3, "{:.1f}k"), (1e3, 1e3, "{:.2f}k"),
                  (10, 1, "{:.0f}"), (float("-inf"), 1, "{:.1f}"))  # fmt: skip
_RATE: _Scale = ((1e9, 1e9, "{:.2f} GB/s"), (1e7, 1e6, "{:.0f} MB/s"),
                 (float("-inf"), 1e6, "{:.1f} MB/s"))  # fmt: skip
_LATENCY: _Scale = ((1e6, 1e6, "{:.2f} s"), (1000, 1000, "{:.2f} ms"), (100, 1, "{:.0f} µs"),
                    (float("-inf"), 1, "{:.1f} µs"))  # fmt: skip


MISSING = "n/a"  # a figure that is unknown: shown as such, never as 0


def _scaled(value: float | None, scale: _Scale) -> str:
    if value is None or value != value:  # None or NaN
        return MISSING
    for start, divisor, form in scale:
        if value >= start:
            return form.format(value / divisor)
    return "-"  # not reached: the last step starts at -inf


def format_count(value: float | None) -> str:
    """IOPS and other rates for people: 950 -> "950", 85210 -> "85.2k", 1.2e6 -> "1.20M"."""
    return _scaled(value, _COUNT)


def format_rate(bytes_per_s: float | None) -> str:
    """Bandwidth for people in decimal megabytes per second, as drive vendors quote it."""
    return _scaled(bytes_per_s, _RATE)


def format_latency(us: float | None) -> str:
    """Latency for people: microseconds below 1 ms, milliseconds below 1 s."""
    return _scaled(us, _LATENCY)
