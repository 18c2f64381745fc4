"""Workload keys for long runs shaped in time, as SNIA PTS tests run them (ssdcompare.suite.pts):
a size cap in multiples of the span (`io_size: 4x`, the write saturation test's "four times
the drive"), I/O for a time between idle times (`thinktime_iotime`, host idle recovery's
"5 s of writes, then idle"), and how finely fio logs the time series (`log_ms`, set when a
test is scaled: a scaled 5 s burst lasts 50 ms, which a log a second cannot show).
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import AliasChoices, BaseModel, Field, field_validator, model_validator

LOG_MS = 1000  # the time series' interval unless a scaled test asks for a finer one
_SPANS_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*x\s*$")


class LongRunKeys(BaseModel):
    """The fields of a Workload for long runs shaped in time (see the module's words)."""

    # the job ends after this many times its span is moved (or its runtime): `io_size: 4x`
    io_size_spans: float | None = Field(None, gt=0, le=1000)
    # with thinktime: fio does I/O for this long (seconds), then idles for thinktime
    thinktime_iotime_s: float | None = Field(
        None,
        gt=0,
        validation_alias=AliasChoices("thinktime_iotime", "thinktime_iotime_s"),
        description="Seconds of I/O per burst",
    )
    # how often fio logs the time series (ms); set by --scale, not by suites
    log_ms: int = Field(LOG_MS, ge=1, le=LOG_MS)

    @model_validator(mode="before")
    @classmethod
    def _spans(cls, data: Any) -> Any:
        """`io_size: 4x` is four times the span; bytes ("32g") stay io_size_bytes."""
        if isinstance(data, dict) and isinstance(data.get("io_size"), str):
            match = _SPANS_RE.match(data["io_size"])
            if match:
                data = {**data, "io_size_spans": float(match.group(1))}
                del data["io_size"]
        return data

    @field_validator("thinktime_iotime_s")
    @classmethod
    def _whole_ms(cls, value: float | None) -> float | None:
        if value is not None and round(value, 3) != value:
            raise ValueError("thinktime_iotime: give seconds in whole milliseconds")
        return value

    def longrun_problem(self, io_size_bytes: int | None, thinktime_us: int | None) -> str | None:
        """Why these keys do not fit the rest of the workload, or None."""
        if self.io_size_spans is not None and io_size_bytes is not None:
            return "give io_size once: in bytes (32g) or in spans (4x)"
        if self.thinktime_iotime_s is not None and thinktime_us is None:
            return "thinktime_iotime needs thinktime (the idle time after each stretch of I/O)"
        return None

    def longrun_tokens(self) -> list[str]:
        """These keys as parts of a generated id."""
        parts = []
        if self.io_size_spans is not None:
            parts.append(f"io{self.io_size_spans:g}x")
        if self.thinktime_iotime_s is not None:
            parts.append(f"for{self.thinktime_iotime_s:g}s")
        return parts
