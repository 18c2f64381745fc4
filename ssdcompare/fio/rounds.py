"""Several jobs back to back in one fio run (a round of a PTS test, ssdcompare.suite.pts), and
its output cut into each job's own.

The round's jobfile holds each job's own jobfile, rendered and checked as if it ran alone,
turned into one section: its [global] options folded in, and `stonewall` from the second
section on, so that each starts when the one before has ended and the drive never idles
between them. fio reports each section as one entry (group_reporting adds up a section's
numjobs processes) and numbers the per-second logs of its processes on from the section
before: the first section's processes are 1..n, the next section's n+1..

Cut apart, each job's part of the output is a fio output of its own (fio's top-level fields
and the job's entry), its logs are the files of its processes, and its CPU samples are those
taken while its processes lived, as the CPU sampler saw them come and go. fio's own account
(each section's ramp and runtime, one after the other) stands in where the sampler did not
see as many processes as the sections have: it leaves out fio's start-up and the ~0.25 s fio
takes between sections, so late sections would drift by that much each. The round's whole
output stays where fio wrote it: each part says where it was cut from.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from ssdcompare.fio.check import read_jobfile
from ssdcompare.fio.result.models import FioOutput
from ssdcompare.suite.pts import RoundGroup
from ssdcompare.version import __version__

STONEWALL = "stonewall"


def round_text(jobs: Sequence[tuple[str, str]], title: str) -> str:
    """One jobfile running `jobs` (each its id and its own jobfile text) back to back, in
    order; `title` heads it as a comment."""
    lines = [f"; ssdcompare {__version__} | {title}",
             f"; {len(jobs)} jobs back to back in one fio run: each section below is one job's",
             "; own jobfile, and each starts as the one before ends (stonewall)"]  # fmt: skip
    for number, (job_id, text) in enumerate(jobs):
        (section,) = read_jobfile(text).jobs
        lines += ["", f"[{job_id}]"]
        if number:
            lines.append(STONEWALL)
        lines += [name if value is None else f"{name}={value}" for name, value in section.options]
    return "\n".join(lines) + "\n"


def process_numbers(numjobs: Sequence[int]) -> list[range]:
    """The numbers fio gives each section's processes in its logs (from 1, on across
    sections), for sections of `numjobs` processes each."""
    found, start = [], 1
    for count in numjobs:
        found.append(range(start, start + count))
        start += count
    return found


def job_output(output: dict[str, Any], name: str) -> dict[str, Any] | None:
    """The part of a round's fio output (parsed JSON) that is job `name`'s: fio's top-level
    fields with that job's entry alone; None when fio reported no entry for it (it never
    ran)."""
    entries = [e for e in output.get("jobs") or [] if isinstance(e, dict)
               and e.get("jobname") == name]  # fmt: skip
    if not entries:
        return None
    part = {key: value for key, value in output.items() if key != "jobs"}
    part["jobs"] = entries
    return part


def section_spans_s(output: dict[str, Any], names: Sequence[str], ramps_s: Sequence[float],
                    numjobs: Sequence[int]) -> list[tuple[float, float]]:  # fmt: skip
    """When each section ran, in seconds from fio's start, by fio's own account: each
    section's ramp and measured time after the one before (`job_runtime` is in ms, summed
    over a section's `numjobs` processes, which run side by side). A section fio did not
    report gets an empty span where it would have been."""
    runtimes = {e.get("jobname"): e.get("job_runtime") for e in output.get("jobs") or []
                if isinstance(e, dict)}  # fmt: skip
    spans, start = [], 0.0
    for name, ramp, processes in zip(names, ramps_s, numjobs, strict=True):
        took = runtimes.get(name)
        took = took / 1000 / max(processes, 1) if isinstance(took, (int, float)) else 0.0
        length = ramp + max(took, 0.0)
        spans.append((start, start + length))
        start += length
    return spans


def lived_spans_s(
    worker_spans: dict[str, list[float]], numjobs: Sequence[int], interval_s: float
) -> list[tuple[float, float]] | None:
    """When each section ran, from the times the CPU sampler first and last saw each of fio's
    job processes (`worker_spans`, pid -> [first, last]): the processes in the order they
    appeared, `numjobs` of them a section (stonewall keeps sections apart). A span reaches one
    sample past the last sight of its processes (they ended within it). None when the sampler
    saw more or fewer processes than the sections have, or a section's processes overlap the
    next's: then they cannot be told apart this way."""
    seen = sorted((span[0], span[1]) for span in worker_spans.values()
                  if isinstance(span, list) and len(span) == 2)  # fmt: skip
    if len(seen) != sum(numjobs) or not numjobs:
        return None
    spans = []
    for numbers in process_numbers(numjobs):
        lived = seen[numbers.start - 1 : numbers.stop - 1]
        spans.append((min(first for first, _ in lived), max(last for _, last in lived)
                      + interval_s))  # fmt: skip
    if any(later[0] < earlier[1] - interval_s for earlier, later in pairwise(spans)):
        return None
    return spans


def tracked_figure(output: FioOutput, group: RoundGroup) -> float | None:
    """The tracking job's figure in a round's fio output: IOPS or bandwidth (its directions
    added) or mean latency (µs, over all its I/O); None when fio gave none."""
    entry = next((j for j in output.jobs if j.name == group.track and j.ok), None)
    if entry is None:
        return None
    moving = [d for d in entry.directions.values() if d.direction != "sync"]
    if group.metric == "iops":
        return entry.total_iops or None
    if group.metric == "bw":
        return sum(d.bw_bytes for d in moving if not math.isnan(d.bw_bytes)) or None
    weighed = [(d.lat.mean_us, d.total_ios or 0) for d in moving if d.lat is not None]
    ios = sum(count for _, count in weighed)
    return sum(mean * count for mean, count in weighed) / ios if ios else None
