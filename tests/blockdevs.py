"""Real block devices made by the tests themselves: loop devices and zram RAM disks.

Every device is created here and removed in teardown; nothing else on the machine is touched.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

ZRAM_CONTROL = Path("/sys/class/zram-control")


@contextlib.contextmanager
def loop_device(image: Path, size_bytes: int, direct_io: bool = True) -> Iterator[str]:
    """Attach a fresh sparse image of `size_bytes` as a loop device; yields /dev/loopN."""
    with open(image, "wb") as handle:
        handle.truncate(size_bytes)
    command = ["losetup", "--find", "--show"]
    if direct_io:
        command.append("--direct-io=on")
    device = subprocess.run(
        [*command, str(image)], capture_output=True, text=True, check=True
    ).stdout.strip()
    try:
        yield device
    finally:
        subprocess.run(["losetup", "--detach", device], check=False)


@contextlib.contextmanager
def attached_loop(
    image: Path, device: str | None = None, direct_io: bool = True
) -> Iterator[str | None]:
    """Attach an existing `image` as it is (nothing written to it) as a loop device: as
    `device` when given (None is yielded when that one is taken), else the first free one;
    yields /dev/loopN and detaches it after."""
    command = ["losetup", *(["--direct-io=on"] if direct_io else [])]
    command += [device, str(image)] if device else ["--find", "--show", str(image)]
    done = subprocess.run(command, capture_output=True, text=True, check=device is None)
    attached = device if device else done.stdout.strip()
    if done.returncode != 0:
        yield None
        return
    try:
        yield attached
    finally:
        subprocess.run(["losetup", "--detach", attached], check=False)


def detach_and_wait(device: str, image: Path, timeout_s: float = 30.0) -> None:
    """Detach loop `device` (attached to `image`) and wait until the kernel has let it go."""
    subprocess.run(["losetup", "--detach", device], check=True)
    wait_detached(device, image, timeout_s)


def wait_detached(device: str, image: Path, timeout_s: float = 30.0) -> None:
    """Wait until loop `device` no longer reads `image`: one still open somewhere (udev
    probing it) is detached only once closed, and until then its number is not free to
    attach. (Another test may attach its own file there meanwhile: that is let go.)"""
    backing = Path("/sys/block") / Path(device).name / "loop" / "backing_file"
    deadline = time.monotonic() + timeout_s
    while _reads(backing, image) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _reads(backing, image), f"{device} was not let go within {timeout_s} s"


def _reads(backing: Path, image: Path) -> bool:
    try:
        return backing.read_text().strip() == str(image)
    except OSError:  # not attached
        return False


@contextlib.contextmanager
def zram_device(size_bytes: int) -> Iterator[str]:
    """Hot-add a new zram RAM disk of `size_bytes`; yields /dev/zramN and removes it after."""
    index = (ZRAM_CONTROL / "hot_add").read_text().strip()
    name = f"zram{index}"
    try:
        Path(f"/sys/block/{name}/disksize").write_text(str(size_bytes))
        yield f"/dev/{name}"
    finally:
        with contextlib.suppress(OSError):
            Path(f"/sys/block/{name}/reset").write_text("1")
        with contextlib.suppress(OSError):
            (ZRAM_CONTROL / "hot_remove").write_text(index)


LOOP_CONTROL = Path("/dev/loop-control")


def why_no_devices() -> str | None:
    """Why this process cannot make loop devices and zram RAM disks, or None when it can."""
    if os.geteuid() != 0:
        return "not running as root"
    if not LOOP_CONTROL.exists():
        return f"no loop device support ({LOOP_CONTROL} is missing)"
    if not ZRAM_CONTROL.exists():
        return f"no zram support ({ZRAM_CONTROL} is missing: modprobe zram)"
    return None


def can_make_devices() -> bool:
    """Root with loop and zram support: what the end-to-end tests need."""
    return why_no_devices() is None
