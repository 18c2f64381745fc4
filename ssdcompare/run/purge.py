"""The purge before a PTS test (ssdcompare.suite.pts, `purge: true`): SNIA's PTS starts every
test from a purged drive, one whose earlier writes (the last test's, a filesystem's) no longer
shape what it measures.

Before a PTS test's first round on a target, and before its fill:
- a target the sweep was given --destroy-data for (bare, or naming it) is purged by the method
  `--purge` chose: `discard` (the default: BLKDISCARD over the whole device; every block of a
  file target punched out), `nvme-format` (Format NVM with user-data erase) or
  `nvme-sanitize` (a Sanitize block erase, waited for), both through nvme-cli
  (ssdcompare.run.nvmeerase) and only on an NVMe namespace alone on its controller
  (ssdcompare.target.nvme);
- any other target is not purged: its test runs on the drive as it is;
- `--purge none` purges no target.
Each target's purge is recorded (`rounds/<target>/purge.json`), and a purge that fails stops
that target's test. Here: the methods, what a plan may choose, the checks before a sweep
starts, and the erase itself; ssdcompare.run.drivestate.purged runs it with its checks just
before and keeps the record.
"""

from __future__ import annotations

import os
from collections.abc import Collection

from ssdcompare.errors import SsdcompareError
from ssdcompare.run import precondition
from ssdcompare.run.nvmeerase import nvme_cli, nvme_format, nvme_sanitize
from ssdcompare.suite.workload import Suite
from ssdcompare.target.devices import Target, discards
from ssdcompare.target.nvme import nvme_namespace
from ssdcompare.units import format_bytes

PURGE_METHODS = ("discard", "nvme-format", "nvme-sanitize", "none")
NVME_METHODS = ("nvme-format", "nvme-sanitize")
NOT_OFFERED = ("not purged: the sweep was not given --destroy-data for it (a PTS test starts "
               "from a purged drive: add --destroy-data to purge it)")  # fmt: skip
CHOSE_NONE = "not purged: the sweep was given --purge none"
NEW_FILE = ("not purged: a new file the sweep makes, so no earlier write is on it to purge "
            "(ssdcompare lays it out itself)")  # fmt: skip


def planned_purge(suite: Suite, method: str | None, targets: list[Target]) -> str | None:
    """The purge a sweep of `suite` makes before its PTS test: `method` (--purge) or a
    discard; None when there is none (another suite, or `pts.purge: false`). Refuses a
    method that is none of PURGE_METHODS, --purge for a suite that purges nothing, and an
    NVMe method for a target that is not an NVMe namespace alone on its controller, or
    without nvme-cli."""
    if method is not None and method not in PURGE_METHODS:
        raise SsdcompareError(f"--purge {method}: not a way to purge; use "
                              f"{', '.join(PURGE_METHODS)}")  # fmt: skip
    if suite.pts is None or not suite.pts.purge:
        if method is not None:
            why = ("its pts block says purge: false" if suite.pts is not None else
                   "--purge is for a PTS test, the pts-* suites")  # fmt: skip
            raise SsdcompareError(f"--purge {method}: {suite.name} purges no drive ({why}); "
                                  "leave --purge out")  # fmt: skip
        return None
    chosen = method or "discard"
    if chosen in NVME_METHODS:
        for target in targets:
            try:
                nvme_namespace(target)
            except SsdcompareError as err:
                raise SsdcompareError(
                    f"--purge {chosen}: {err}; purge it by discard (--purge discard), or "
                    "measure it in a sweep of its own"
                ) from None
        try:
            nvme_cli()
        except SsdcompareError as err:
            raise SsdcompareError(f"--purge {chosen} runs nvme-cli: {err}") from None
    return chosen


def check_purges(
    targets: list[Target], method: str | None, offered: list[str], resuming: bool = False
) -> None:
    """Before a sweep writes anything (and for `plan`): every target it would purge can be
    purged, so that a sweep is refused at its start, not half-way. A device on a fio server
    cannot be (it is erased through this machine's kernel), nor a discard of a device that
    takes none. `resuming`: a resume, which keeps the sweep's --purge (the advice differs)."""
    if method not in ("discard", *NVME_METHODS):
        return
    for target in (t for t in targets if t.name in offered):
        if target.host is not None:
            raise SsdcompareError(
                f"{target.name} is on a fio server: the purge before a PTS test erases through "
                "this machine's kernel. Run ssdcompare on that host, or leave it out of "
                "--destroy-data (its test then runs unpurged)"
            )
        name = target.kernel_name
        if method == "discard" and name is not None and discards(name) is False:
            raise SsdcompareError(
                f"{target.name} does not take discards (TRIM): its queue's discard_max_bytes is "
                f"0, so the purge before a PTS test cannot discard it. {_undiscarded(resuming)}"
            )


def _undiscarded(resuming: bool) -> str:
    """What to do about a drive a PTS test would discard that takes no discards."""
    if not resuming:
        return ("Purge an NVMe drive with --purge nvme-format or nvme-sanitize, or run the "
                "test unpurged: --purge none")  # fmt: skip
    return ("A resume keeps the sweep's --purge discard: resume the other devices without it "
            "(--resume with --devices naming them), and measure it in a new sweep with --purge "
            "none (unpurged) or, an NVMe drive, --purge nvme-format or nvme-sanitize")  # fmt: skip


def made_new(target: Target, created: Collection[str] = ()) -> bool:
    """Whether `target` is files the sweep makes (not there when it was planned, or among
    `created`, the manifest's): no earlier test or filesystem wrote them."""
    return all(p.kind == "file" and (not p.exists or p.path in created) for p in target.parts)


def intent(
    method: str | None, target: Target, offered: list[str], created: Collection[str] = ()
) -> str | None:
    """What the purge before the test would do to `target`, in words; None: no purge.
    `created`: the files the sweep made (a new file not offered has nothing to purge, so it
    is not told to be offered)."""
    if method is None:
        return None
    if target.name not in offered:
        return NEW_FILE if made_new(target, created) else NOT_OFFERED
    if method == "none":
        return CHOSE_NONE
    if method == "nvme-format":
        return f"an NVMe Format with user-data erase (nvme format {target.path} --ses=1)"
    if method == "nvme-sanitize":
        return ("an NVMe Sanitize block erase through its controller (nvme sanitize --sanact=2), "
                "waited for")  # fmt: skip
    if target.kind == "block":
        size = format_bytes(target.size_bytes or 0)
        return f"a discard of the whole device ({size}, BLKDISCARD)"
    return "every block of the file punched out (fallocate), its size kept"


def erase(method: str, target: Target, fd: int | None) -> str:
    """Purge `target` by `method` now (the checks before any write have just passed; `fd`: a
    file target as the sweep opened it); what was done, in words. OSError (the device or
    filesystem cannot) or SsdcompareError (nvme-cli failed, the namespace is not alone any
    more) when it could not."""
    if method == "nvme-format":
        return nvme_format(nvme_namespace(target))
    if method == "nvme-sanitize":
        return nvme_sanitize(nvme_namespace(target))
    if method != "discard":
        raise SsdcompareError(f"{method}: not a way to purge")
    if target.kind == "block":  # a partition's own span only: offsets are the partition's
        size = target.size_bytes or 0
        said = precondition.discard(target.path, True, size)
        return f"the whole device ({format_bytes(size)}): {said}"
    if fd is None:
        raise SsdcompareError(f"{target.name} was not opened as the sweep recorded it")
    size = os.fstat(fd).st_size  # the file's own blocks only, never past its end
    said = precondition.discard(target.path, False, size, fd)
    return f"the whole file ({format_bytes(size)}): {said}"
