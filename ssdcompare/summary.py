"""The short terminal summary printed at the end of a sweep."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from ssdcompare.frame import is_true, job_summary, known_true, load
from ssdcompare.units import format_count, format_latency, format_rate


def _cell(row: pd.Series) -> str:
    """One device's figures for one job: IOPS, MB/s, mean and p99 latency, repeats averaged."""
    if row["status"] != "ok":
        return str(row["status"]).upper()
    text = (
        f"{format_count(row['iops_mean'])} IOPS {format_rate(row['bw_bytes_mean'])}"
        f" lat {format_latency(row['lat_mean_us_mean'])}"
        f" p99 {format_latency(row['lat_p99_us_mean'])}"
    )
    if row["repeats"] > 1:
        text += f" (CV {row['iops_cv_pct']:.0f} %)"
    if is_true(row["cpu_bound"]):
        text += " [CPU-bound]"
    return text


def summary_lines(path: Path) -> list[str]:
    """Per job, one line per device; CPU-bound results marked, reasons listed at the end.

    A job that sets fio options beyond the typed fields names them after its id, e.g.
    "randread-4k-qd1+rate_iops200  (+ rate_iops=200)".
    """
    frame = load(path)
    if frame.empty:
        return ["no results recorded"]
    summary = job_summary(frame)
    lines = []
    width = max(len(str(label)) for label in summary["label"])
    for job, rows in summary.groupby("job", sort=False):
        # options beyond the typed fields (rate limits, buffer contents...) change what the
        # numbers mean: say so next to the job, not only in the jobfile
        extras = [
            str(e) for e in dict.fromkeys(rows["extra_options"]) if e is not None and pd.notna(e)
        ]
        lines.append(f"{job}  (+ {'; '.join(extras)})" if extras else str(job))
        for _, row in rows.iterrows():
            lines.append(f"  {row['label']:<{width}}  {_cell(row)}")
    bound = summary[known_true(summary["cpu_bound"])]
    if not bound.empty:
        lines.append("")
        lines.append("CPU-bound: these numbers measure the CPU, not the drive:")
        for _, row in bound.iterrows():
            lines.append(f"  {row['job']} on {row['label']}: {row['cpu_bound_reason']}")
    return lines
