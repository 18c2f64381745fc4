"""A blkio cgroup of a test's own (cgroup v1) that caps reads from one device it made: the
processes put in it (and what they start) are held to the cap on that device only."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

BLKIO = Path("/sys/fs/cgroup/blkio")
needs_blkio = pytest.mark.skipif(not BLKIO.is_dir(), reason="needs the cgroup v1 blkio controller")


class IopsCaps:
    """A group whose processes' reads and writes are capped per device (`cap`)."""

    def __init__(self, name: str) -> None:
        self.group = BLKIO / f"ssdcompare-{name}-{os.getpid()}"
        self.group.mkdir()

    def cap(
        self, device: str, read_iops: int | None = None, write_iops: int | None = None
    ) -> None:
        """Cap `device`'s reads and writes (0: the cap taken off); a new rule for a device
        replaces its old one."""
        number = os.stat(device).st_rdev
        for direction, iops in (("read", read_iops), ("write", write_iops)):
            if iops is not None:
                rule = f"{os.major(number)}:{os.minor(number)} {iops}"
                (self.group / f"blkio.throttle.{direction}_iops_device").write_text(rule)

    def join(self, pid: int) -> None:
        """Put process `pid` in the group (what it starts from then on is in it too)."""
        (self.group / "cgroup.procs").write_text(str(pid))

    def command(self, *args: str) -> list[str]:
        """A command that joins the group before it starts: the fio it starts is held too."""
        procs = self.group / "cgroup.procs"
        return ["sh", "-c", f'echo $$ > {procs} && exec "$@"', "sh", *args]

    def remove(self) -> None:
        """Every process still in the group back to the root group, and the group gone. A
        process the group's last one started meanwhile (a sweep's watchdog) is moved out on
        the next try: the group can be removed only once it is empty."""
        for _ in range(100):
            for pid in (self.group / "cgroup.procs").read_text().split():
                with contextlib.suppress(OSError):  # already gone
                    (BLKIO / "cgroup.procs").write_text(pid)
            try:
                self.group.rmdir()
                return
            except OSError:  # busy: a process joined it since
                time.sleep(0.05)
        self.group.rmdir()


class ReadCap(IopsCaps):
    """Reads from `device` capped at `iops` for the processes that join the group."""

    def __init__(self, device: str, iops: int, name: str) -> None:
        super().__init__(name)
        self.cap(device, read_iops=iops)


@contextlib.contextmanager
def iops_capped(name: str) -> Iterator[IopsCaps]:
    """An IopsCaps group, removed after it (whatever joined it moved out first)."""
    caps = IopsCaps(name)
    try:
        yield caps
    finally:
        caps.remove()


@contextlib.contextmanager
def read_capped(device: str, iops: int, name: str) -> Iterator[ReadCap]:
    """A ReadCap for the block, removed after it (whatever joined it moved out first)."""
    cap = ReadCap(device, iops, name)
    try:
        yield cap
    finally:
        cap.remove()
