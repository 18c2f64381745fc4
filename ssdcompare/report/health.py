"""The report's drive health section: each run's drive temperatures and throttling, from
the drives' own health logs (ssdcompare.target.probes.health), and once for each drive why
its log could not be read."""

from __future__ import annotations

from typing import Any

import pandas as pd

from ssdcompare.units import format_bytes

_KEYS = ["sweep", "label", "job", "repeat"]


def health_section(frame: pd.DataFrame) -> dict[str, Any] | None:
    """The section's rows (a run each, in the frame's order, for runs whose drive's log was
    read) and notes (each drive's reason its log was not available, said once); None when
    no run has either."""
    runs = frame[frame["status"] == "ok"].drop_duplicates(_KEYS)
    read = runs[runs["health_drives"].notna()]
    rows = [_row(run) for run in read.to_dict("records")]
    notes = sorted({
        _note(str(run["label"]), reason)
        for run in runs[runs["health_unavailable"].notna()].to_dict("records")
        for reason in str(run["health_unavailable"]).split("; ")
    })  # fmt: skip
    if not rows and not notes:
        return None
    return {
        "rows": rows,
        "notes": notes,
        "throttled": sum(row["throttled"] for row in rows),
    }


def _note(label: str, reason: str) -> str:
    """A drive's reason its log was not read (`<drive>: not available: <why>`, which names the
    drive already), with the device it was measured under when that has another name."""
    drive, said = reason.split(": ", 1) if ": " in reason else ("", reason)
    if drive == label:
        return reason
    return f"{drive} (for {label}): {said}" if drive else f"{label}: {said}"


def _row(run: dict[str, Any]) -> dict[str, Any]:
    """One run's temperatures, throttling, bytes the drive wrote and its amplification."""
    return {
        "label": run["label"],
        "job": run["job"],
        "repeat": int(run["repeat"]),
        "before": _celsius(run["temp_before_c"]),
        "max": _celsius(run["temp_max_c"]),
        "after": _celsius(run["temp_after_c"]),
        "throttling": throttling_words(run),
        "throttled": run.get("verdict") == "throttled",
        "written": _bytes(run["device_bytes_written"]),
        "wa": _number(run["write_amplification"], "×{:.2f}"),
        "reason": run["verdict_reason"] if run.get("verdict") == "throttled" else "",
    }


def throttling_words(run: dict[str, Any]) -> str:
    """A run's throttling in a few words: "none", "2 times, 41 s" (with the minutes above
    the warning or critical temperature), or "not known" (the drive does not count it)."""
    events, seconds = run.get("throttle_events"), run.get("throttle_s")
    if pd.isna(events) or pd.isna(seconds):
        return "not known"
    said = []
    if events or seconds:
        said.append(f"{events:.0f} time{'s' if round(events) != 1 else ''}, {seconds:.0f} s")
    for column, what in (("warning_temp_min", "warning"), ("critical_temp_min", "critical")):
        minutes = run.get(column)
        if minutes is not None and pd.notna(minutes) and minutes > 0:
            said.append(f"{minutes:.0f} min above {what}")
    return "; ".join(said) or "none"


def _celsius(value: object) -> str:
    return _number(value, "{:.0f} °C")


def _bytes(value: object) -> str:
    if value is None or pd.isna(value):  # type: ignore[arg-type]
        return "-"
    return format_bytes(int(value))  # type: ignore[call-overload]


def _number(value: object, form: str) -> str:
    if value is None or pd.isna(value):  # type: ignore[arg-type]
        return "-"
    return form.format(value)
