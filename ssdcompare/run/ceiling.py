"""The host's ceiling: each job once on a RAM disk, the fastest target this host can drive.

A device whose result comes close to what the same job gets from a RAM disk measures the
host (fio, the kernel's block layer, the CPU), not itself: the verdict `host`
(ssdcompare.judge.verdict). `sweep --ceiling` asks for this, and is the consent to make the RAM
disk: a zram device added for the sweep and removed after it (root only), never a device
that was there before.

Each job that only reads runs once on it, from the job's own workload rendered for the RAM
disk (its span cut to the RAM disk's size), before the sweep's first job. Writing jobs get
no ceiling: zram compresses what it stores, so its writes (1 MiB ones measured at about 600
IOPS on a 2-CPU VM, a third of a loop device's) can be slower than a drive's; a ceiling
below the device would call a fast drive host-bound. Everything is kept in the
results folder under `ceiling/<job>/` (jobfile, fio's output, `status.json`), like a run.
The RAM disk itself is recorded (ssdcompare.run.ramdisk), so that one a killed sweep left
behind is removed when the next sweep starts.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection

from ssdcompare.fio.binary import FioInfo
from ssdcompare.fio.jobfile import RenderedJob, render
from ssdcompare.fio.logs import compress_large
from ssdcompare.results.files import write_atomic
from ssdcompare.results.models import now_iso, status_of
from ssdcompare.results.store import JOBFILE, ResultsDir
from ssdcompare.run.ramdisk import ZRAM_CONTROL, ram_disk
from ssdcompare.run.runner import raise_if_stopped, run_fio, timeout_for
from ssdcompare.suite.options import TIMESERIES_PREFIX
from ssdcompare.target.devices import resolve_target

RAM_DISK_BYTES = (
    1 << 30
)  # a span the size of the RAM disk at most: its speed does not grow with it


def why_not(root: bool | None = None) -> str | None:
    """Why this process cannot make a RAM disk for the ceiling, or None when it can."""
    if not (os.geteuid() == 0 if root is None else root):
        return "--ceiling makes a RAM disk (zram), which needs root"
    if not ZRAM_CONTROL.is_dir():
        return f"--ceiling needs zram ({ZRAM_CONTROL} is missing: modprobe zram)"
    return None


def measure(
    fio: FioInfo,
    results: ResultsDir,
    jobs: list[RenderedJob],
    suite: str,
    progress: Callable[[str, str | None], None] | None = None,
    allowed_options: Collection[str] = (),
) -> None:
    """Run each job (one per workload) that only reads once on a new RAM disk, unless an
    earlier attempt measured it; keep everything under ceiling/<job>/. Writing jobs get no
    ceiling: zram compresses what it stores, and writes to it can be slower than a drive's.
    `progress` hears of each job as it starts, and again with the error when its run failed
    (the job then has no ceiling). `allowed_options` are the opt-in fio options the sweep
    accepted (--allow-option): the jobs are rendered for the RAM disk with them, as they
    were for the sweep's targets."""
    pending = [j for j in jobs if has_ceiling(j) and not _done(results, j.job_id)]
    if not pending:
        return
    with ram_disk(RAM_DISK_BYTES, results.path) as path:
        target = resolve_target(path)
        for job in pending:
            if progress is not None:
                progress(job.job_id, None)
            workload = job.workload
            if workload.size_bytes is None or workload.size_bytes > RAM_DISK_BYTES:
                workload = workload.model_copy(update={"size_bytes": None, "size_pct": None})
            rendered = render(workload, target, suite, job.ioengine, allowed_options)
            folder = results.ceiling_dir(job.job_id)
            write_atomic(folder / JOBFILE, rendered.text)
            started = now_iso()
            outcome = run_fio(fio, folder / JOBFILE, folder, timeout_for(workload.duration_s))
            compress_large(folder, TIMESERIES_PREFIX)
            results.write_status(folder, status_of(
                outcome, target=target.name, job=job.job_id, repeat=1,
                workload_hash=rendered.workload_hash, started_at=started,
            ))  # fmt: skip
            raise_if_stopped(outcome)
            if outcome.state != "ok" and progress is not None:
                progress(job.job_id, f"no ceiling: {outcome.error}")


def has_ceiling(job: RenderedJob) -> bool:
    """Whether `--ceiling` measures this job: only jobs that neither write nor trim; a
    curve's paced points are measured against the ceiling of its unpaced run (`@max`)."""
    return not job.writes and not job.workload.paced


def _done(results: ResultsDir, job: str) -> bool:
    return results.ceiling_iops(job) is not None
