"""What a workload with `verify` may be: the combinations in which fio's checks of the data
would fail a healthy device, or check nothing, refused with the reason before anything runs
(docs/methodology.md, "Checking the data: verify").

When a suite is loaded (`verify_problem`, from Workload's own checks):

- a mix (rw, randrw): fio checks only what the mix writes, in a pass after it; once a
  size-capped mix writes more than its span, that pass finds blocks written over since and
  reports a bad header (rand_seed) on a healthy device, with or without a random map;
- the null engine: it moves no data, so nothing is checked;
- a ramp_time on a verified read: fio ends a verified read after one pass over its span,
  which can end inside the ramp and leave nothing measured;
- several processes (numjobs) writing one span: each writes over the others' blocks, and
  fio reports a bad header (numberio) on a healthy device, unless each process has a region
  of its own (fio's `offset_increment`, given through `extra`, at least the span).

When the sweep is planned, with what only the targets and the sweep's choices tell:
`regions_problem` with the span that runs on each target, and `overwritten_problem` for the
sweep's own writes (a fill, a drive state) and the ceiling's RAM disk, none of which holds
the data a verified read checks.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

from ssdcompare.suite.realism import given
from ssdcompare.units import format_bytes, parse_size

# a Workload (ssdcompare.suite.workload), which checks itself with these rules
Workload = Any

# `verify` values that check nothing (given through `extra`): fio's "no verification"
_NOT_CHECKING = ("0", "none", "null", "false")
_MIXES = ("rw", "randrw")
_APART = ("give each process a region of its own with extra: {offset_increment: SIZE}, SIZE "
          "at least the span each writes, or use numjobs: 1")  # fmt: skip


def verifies(workload: Workload) -> str | None:
    """The checksum the workload's blocks are checked with (the `verify` key, or `verify` in
    `extra`), or None when nothing is checked."""
    value = given(workload, "verify")
    if value is None or str(value).strip().lower() in _NOT_CHECKING:
        return None
    return str(value)


def verified_read(workload: Workload) -> bool:
    """A job that only reads and checks what an earlier verified write left: fio reads its
    span once and ends, whatever its runtime."""
    return verifies(workload) is not None and workload.directions == ("read",)


def verify_problem(workload: Workload) -> str | None:
    """Why fio's checks of this workload would fail a healthy device or check nothing, as far
    as the workload alone tells (see the module's words), or None."""
    if verifies(workload) is None:
        return None
    if workload.rw in _MIXES:
        return (f"verify on a mix (rw={workload.rw}) is refused: fio checks only what a mix "
                "writes, in a pass after it, and reports blocks the mix wrote over since as "
                "bad (bad header rand_seed) on a healthy device; verify a write job, then a "
                "read job with the same bs and span")  # fmt: skip
    if workload.ioengine == "null":
        return ("verify with ioengine null checks nothing: the null engine moves no data; drop "
                "verify, or name an engine that does (io_uring, libaio, psync)")  # fmt: skip
    if verified_read(workload) and workload.ramp_s:
        return (f"a verified read reads its span once and ends, and a ramp_time of "
                f"{workload.ramp_s} s can take all of that pass, leaving nothing measured: "
                "drop ramp_time")  # fmt: skip
    return regions_problem(workload, workload.size_bytes, None, planned=False)


def regions_problem(
    workload: Workload, span_bytes: int | None, target_bytes: int | None, planned: bool = True
) -> str | None:
    """Why the processes of a verified write (numjobs > 1) would write over each other's
    blocks, or None: each writes `span_bytes` (None: to the end of the target) from its own
    start, `offset_increment` apart (a share: of `target_bytes`). Before the sweep is
    `planned` what the targets and --size decide is not judged yet."""
    if verifies(workload) is None or "write" not in workload.directions or workload.numjobs < 2:
        return None
    step = workload.extra.get("offset_increment")
    if step is None or step is False:
        return (f"{workload.numjobs} processes (numjobs) write one span with verify: each "
                "writes over blocks the others wrote, and fio reports them as bad (bad header "
                f"numberio) on a healthy device; {_APART}")  # fmt: skip
    apart = _step_bytes(str(step), target_bytes)
    if not planned:
        if apart is None or span_bytes is None:
            return None  # a share of the target, or a span the target and --size decide
    elif apart is None:
        return (f"offset_increment {step}: cannot tell whether it keeps the {workload.numjobs} "
                "verified processes apart; give it in bytes (1g) or as a share of the target "
                "(25%)")  # fmt: skip
    elif span_bytes is None:
        return ("each of the processes of a verified write (numjobs) writes from its own start "
                "to the end of the target, over the next one's region: give size, at most "
                f"offset_increment ({step})")  # fmt: skip
    if apart < span_bytes:
        return (f"offset_increment {step} is less than the span each process writes "
                f"({format_bytes(span_bytes)}): the regions of the {workload.numjobs} verified "
                "processes overlap, and fio reports blocks one wrote over another's as bad "
                "(bad header numberio); give offset_increment at least the span, or a smaller "
                "size")  # fmt: skip
    return None


def _step_bytes(step: str, target_bytes: int | None) -> int | None:
    """offset_increment in bytes: a size, or a share of the target (fio takes a percentage
    of the file or device); None when it cannot be told."""
    text = step.strip()
    if text.endswith("%"):
        try:
            share = float(text[:-1])
        except ValueError:
            return None
        return int(target_bytes * share / 100) if target_bytes is not None else None
    try:
        return parse_size(text)
    except ValueError:
        return None


def overwritten_problem(
    workloads: Sequence[Workload], steps: Collection[str], states: Collection[str],
    ceiling: bool,
) -> str | None:  # fmt: skip
    """Why the sweep's own choices (preconditioning `steps`, drive `states`, the `ceiling`)
    leave the verified reads among `workloads` nothing verified to check, or None."""
    reads = [w.job_id for w in workloads if verified_read(w)]
    if not reads:
        return None
    asked = [(flag, why) for flag, on, why in (
        ("--precondition fill", "fill" in steps, "fills the span with data that carries no "
         "checksums before the first job"),
        ("--states empty", "empty" in states, "discards the span before every run"),
        ("--states full", "full" in states, "fills the span with data that carries no "
         "checksums before each pass"),
        ("--ceiling", ceiling, "runs each reading job on a fresh RAM disk, which holds no "
         "verified data"),
    ) if on]  # fmt: skip
    if not asked:
        return None
    which = reads[0] if len(reads) == 1 else f"{len(reads)} jobs ({', '.join(reads)})"
    flags = " and ".join(flag for flag, _ in asked)
    return (f"{asked[0][0]} {asked[0][1]}, and {which} checks what a verified write left "
            f"there: the check could only fail. Drop {flags} (--precondition none or --states "
            "none drops the suite's own), or run the verified reads in a sweep without "
            "them")  # fmt: skip
