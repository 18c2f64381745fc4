"""The short terminal summary printed at the end of a sweep."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ssdcompare.frame import load
from ssdcompare.units import format_count, format_latency, format_rate


def _cell(rows: pd.DataFrame) -> str:
    """One device's figures for one job: IOPS, MB/s, mean and p99 latency, repeats averaged."""
    status = rows["status"]
    if not (status == "ok").any():
        return str(status.iloc[0]).upper()
    ok = rows[status == "ok"]
    per_repeat = ok.groupby("repeat").agg(
        iops=("iops", "sum"), bw=("bw_bytes", "sum"),
        lat=("lat_mean_us", "mean"), p99=("lat_p99_us", "max"),
    )  # fmt: skip
    text = (
        f"{format_count(per_repeat['iops'].mean())} IOPS {format_rate(per_repeat['bw'].mean())}"
        f" lat {format_latency(per_repeat['lat'].mean())}"
        f" p99 {format_latency(per_repeat['p99'].mean())}"
    )
    if ok["cpu_bound"].fillna(False).astype(bool).any():
        text += " [CPU-bound]"
    return text


def summary_lines(path: Path) -> list[str]:
    """Per job, one line per device; CPU-bound results marked, reasons listed at the end."""
    frame = load(path)
    frame = frame[frame["direction"] != "sync"]
    if frame.empty:
        return ["no results recorded"]
    lines = []
    devices = list(dict.fromkeys(frame["device"]))
    width = max(len(d) for d in devices)
    for job in dict.fromkeys(frame["job"]):
        lines.append(job)
        for device in devices:
            rows = frame[(frame["job"] == job) & (frame["device"] == device)]
            if not rows.empty:
                lines.append(f"  {device:<{width}}  {_cell(rows)}")
    bound = frame[frame["cpu_bound"].fillna(False).astype(bool)]
    if not bound.empty:
        lines.append("")
        lines.append("CPU-bound: these numbers measure the CPU, not the drive:")
        for (job, device), rows in bound.groupby(["job", "device"], sort=False):
            lines.append(f"  {job} on {device}: {rows['cpu_bound_reason'].iloc[0]}")
    return lines
