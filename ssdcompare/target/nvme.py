"""NVMe namespaces as an NVMe erase needs them (the purge before a PTS test,
ssdcompare.run.purge): the controller a namespace is reached through, and whether anything
but the namespace itself would be erased with it. Read from sysfs and /dev only; nothing here
sends a command to a drive.

A Format NVM may erase every namespace of the controller at once (the controller's Format NVM
Attributes decide), and a Sanitize erases every namespace of the NVM subsystem. So a device is
taken for an erase only when it is a whole namespace (not a partition of one), its subsystem
has one controller (no second path, no second port), and that controller holds no other
namespace. Kernel names count namespaces: `nvme<S>n<N>` (and a path to it, `nvme<S>c<C>n<N>`,
behind native multipath) is namespace N of the subsystem or controller numbered S.
"""

from __future__ import annotations

import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from ssdcompare.errors import SsdcompareError
from ssdcompare.target.devices import Target, read_value, whole_disk

_NAMESPACE = re.compile(r"^nvme\d+n(\d+)$")
_ANY_NAMESPACE = re.compile(r"^nvme\d+(?:c\d+)?n(\d+)$")  # a namespace, or a path to one
_CONTROLLER = re.compile(r"^nvme\d+$")
_SUBSYSTEM = re.compile(r"^nvme-subsys\d+$")


@dataclass(frozen=True)
class NvmeNamespace:
    """An NVMe namespace alone on its controller: what an NVMe erase of it reaches."""

    device: str  # the namespace's block device: /dev/nvme0n1
    controller: str  # its controller's character device: /dev/nvme0


def nvme_namespace(
    target: Target, sys_root: Path = Path("/sys"), dev_root: Path = Path("/dev")
) -> NvmeNamespace:
    """The NVMe namespace `target` is, alone on its controller and subsystem (see the
    module); SsdcompareError saying why it is not one an NVMe erase may be used on."""
    name = target.kernel_name
    if target.host is not None or name is None:
        where = "on a fio server" if target.host is not None else "a file"
        raise SsdcompareError(f"{target.name} is {where}, not an NVMe namespace of this machine")
    block = sys_root / "class" / "block" / name
    if (block / "partition").exists():
        raise SsdcompareError(
            f"{target.name} is a partition of {whole_disk(block)}: an NVMe format or sanitize "
            "would erase the whole namespace, not the partition alone"
        )
    own = _NAMESPACE.match(name)
    if own is None:
        raise SsdcompareError(f"{target.name} is not an NVMe namespace (an NVMe drive's "
                              "device is named like nvme0n1)")  # fmt: skip
    controller, subsystem = _controller_of(target.name, block, sys_root)
    others = sorted(_namespaces(controller, subsystem) - {own.group(1)})
    if others:
        raise SsdcompareError(
            f"{target.name} shares its NVMe controller with {len(others)} other namespace(s): "
            "an NVMe format or sanitize may erase them too"
        )
    node = dev_root / controller.name
    _check_node(node, controller)
    return NvmeNamespace(device=target.path, controller=str(node))


def _controller_of(name: str, block: Path, sys_root: Path) -> tuple[Path, Path | None]:
    """The one controller a namespace is reached through and its NVM subsystem's folder (None
    where sysfs shows none), both resolved."""
    try:
        parent = (block / "device").resolve(strict=True)
    except (OSError, RuntimeError):
        raise SsdcompareError(f"{name}: its NVMe controller is not found in sysfs") from None
    if _SUBSYSTEM.match(parent.name):  # native multipath: the namespace hangs off its subsystem
        subsystem: Path | None = parent
    elif _CONTROLLER.match(parent.name):
        subsystem = _subsystem_of(parent, sys_root / "class" / "nvme-subsystem")
    else:
        raise SsdcompareError(f"{name}: its NVMe controller is not found in sysfs")
    controllers = [parent] if subsystem is None else _entries(subsystem, _CONTROLLER)
    if len(controllers) != 1:
        raise SsdcompareError(
            f"{name} is reached through {len(controllers)} NVMe controllers (several paths or "
            "ports): a sanitize or format through one of them reaches the others' namespaces too"
        )
    return controllers[0], subsystem


def _subsystem_of(controller: Path, subsystems: Path) -> Path | None:
    """The NVM subsystem (/sys/class/nvme-subsystem/<name>) a controller belongs to."""
    for subsystem in _entries(subsystems, _SUBSYSTEM):
        if any(c == controller for c in _entries(subsystem, _CONTROLLER)):
            return subsystem
    return None


def _entries(folder: Path, pattern: re.Pattern[str]) -> list[Path]:
    """The entries of a sysfs folder whose names match, resolved."""
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    found = []
    for entry in (folder / n for n in names if pattern.match(n)):
        try:
            found.append(entry.resolve(strict=True))
        except (OSError, RuntimeError):
            continue
    return found


def _namespaces(controller: Path, subsystem: Path | None) -> set[str]:
    """The numbers of the namespaces a controller and its subsystem hold (paths to one
    namespace count once)."""
    folders = [controller, *([subsystem] if subsystem is not None else [])]
    return {_ANY_NAMESPACE.match(e.name).group(1)  # type: ignore[union-attr]
            for folder in folders for e in _entries(folder, _ANY_NAMESPACE)}  # fmt: skip


def _check_node(node: Path, controller: Path) -> None:
    """The character device an erase command is sent to must be the controller sysfs names
    (its device number), not whatever a node of that name is."""
    number = read_value(controller / "dev") or "no device number in sysfs"
    try:
        info = os.stat(node)
        found = f"{os.major(info.st_rdev)}:{os.minor(info.st_rdev)}"
        ours = stat.S_ISCHR(info.st_mode) and found == number
    except OSError:
        ours = False
    if not ours:
        raise SsdcompareError(f"{node} is not the character device of NVMe controller "
                              f"{controller.name} ({number})")  # fmt: skip
