"""What a sweep shows on the terminal: a progress line, notices, messages that survive a
closed terminal, and the summary at the end.

On a terminal, one status line updates in place and failures get lines of their own. When
stderr is not a terminal (a pipe, a log file, cron), every finished run gets one plain line,
so a FAILED or skipped run is never lost from the log.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ssdcompare.units import format_count, format_duration, format_latency, format_rate

if TYPE_CHECKING:
    import pandas as pd

    from ssdcompare.sweep import Progress


def say(text: str, stream: TextIO | None = None, end: str = "\n") -> None:
    """Print to stderr (or `stream`), ignoring a terminal that has gone away (SIGHUP, a closed
    pipe): results are on disk already, and losing a message must not lose them."""
    target = stream if stream is not None else sys.stderr
    if target is None:  # started with the stream closed (2>&-)
        return
    try:
        target.write(text + end)
        target.flush()
    except (OSError, ValueError):
        pass


def _describe(event: Progress) -> str:
    return f"[{event.index}/{event.total}] {event.target}: {event.job} (repeat {event.repeat})"


class ProgressLine:
    """Receives sweep progress events; see the module docstring for what it prints where."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        try:
            self.interactive = self.stream.isatty()
        except (OSError, ValueError, AttributeError):  # closed, or None
            self.interactive = False
        self.width = 0

    def __call__(self, event: Progress) -> None:
        eta = f", ETA {format_duration(event.eta_s)}" if event.eta_s is not None else ""
        if event.state == "start":
            if self.interactive:
                self._show(_describe(event) + eta)
            return
        problem = f": {event.error}" if event.error and event.state != "ok" else ""
        line = f"{_describe(event)} {event.state.upper() if event.state != 'ok' else 'ok'}"
        if self.interactive:
            if event.state != "ok":
                self._show("")
                say("\r" + line + problem, self.stream)
                self.width = 0
        else:
            say(line + problem + (eta if event.state == "ok" else ""), self.stream)

    def _show(self, line: str) -> None:
        pad = max(self.width - len(line), 0)
        say("\r" + line + " " * pad, self.stream, end="")
        self.width = len(line)

    def close(self) -> None:
        if self.interactive and self.width:
            self._show("")
            say("\r", self.stream, end="")
            self.width = 0


def _summary_cell(row: pd.Series) -> str:
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
    from ssdcompare.frame import is_true

    if is_true(row["cpu_bound"]):
        text += " [CPU-bound]"
    return text


def summary_lines(path: Path) -> list[str]:
    """Per job, one line per device; CPU-bound results marked, reasons listed at the end.

    A job that sets fio options beyond the typed fields names them after its id, e.g.
    "randread-4k-qd1+rate_iops200  (+ rate_iops=200)".
    """
    import pandas as pd  # only now: the command starts without pandas

    from ssdcompare.frame import job_summary, known_true, load

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
            lines.append(f"  {row['label']:<{width}}  {_summary_cell(row)}")
    bound = summary[known_true(summary["cpu_bound"])]
    if not bound.empty:
        lines.append("")
        lines.append("CPU-bound: these numbers measure the CPU, not the drive:")
        for _, row in bound.iterrows():
            lines.append(f"  {row['job']} on {row['label']}: {row['cpu_bound_reason']}")
    return lines
