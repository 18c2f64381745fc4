"""Where a block device sits in the machine, and what kind of machine it is: the PCI
function behind a device and its link (speed and width, current and maximum), the NUMA node
it hangs off, the host's NUMA nodes and their CPUs, and whether the host is a virtual machine.

These decide whether two devices can be compared as drives: a drive on a PCIe 3.0 x2 link, or
on the NUMA node far from the CPUs fio ran on, loses to its twin for reasons that are not the
drive. Everything is read from sysfs and procfs; what cannot be read is None, never guessed,
and nothing here raises for a device that has no PCI function (loop, zram, a file).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from ssdcompare.target.devices import read_int, read_value

# a PCI function's folder name in sysfs: domain:bus:device.function
_PCI_FUNCTION = re.compile(r"^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$")
# hypervisors known by the machine's DMI vendor or product name
_VM_VENDORS = ("qemu", "kvm", "vmware", "virtualbox", "innotek", "xen", "bochs",
               "microsoft corporation", "amazon ec2", "google compute engine",
               "openstack", "parallels", "bhyve", "cloud hypervisor", "firecracker")  # fmt: skip


@dataclass(frozen=True)
class PciLink:
    """The PCI function a block device is reached through, and its link as the kernel
    reports it (a conventional PCI or emulated function may report no link: None)."""

    address: str  # "0000:3d:00.0"
    current_speed: str | None = None  # "8.0 GT/s PCIe"
    current_width: int | None = None  # lanes
    max_speed: str | None = None
    max_width: int | None = None
    numa_node: int | None = None  # None where the kernel knows none (-1)


def _pci_ancestor(start: Path) -> Path | None:
    """The nearest PCI function at or above `start` (a resolved sysfs device path)."""
    for folder in (start, *start.parents):
        if _PCI_FUNCTION.match(folder.name):
            return folder
        if folder.name.startswith("pci") or folder == folder.parent:
            break  # a PCI root bridge or the top: no function above
    return None


def _candidates(disk: str, sys_root: Path) -> list[Path]:
    """Where a disk's PCI function may be found: its own sysfs folder, its `device`, and
    for an NVMe namespace its controller (behind native multipath the namespace hangs off a
    virtual subsystem, the controller off the PCI function)."""
    block = sys_root / "class" / "block" / disk
    found = [block, block / "device", block / "device" / "device"]
    nvme = re.match(r"^nvme(\d+)(?:c\d+)?n\d+$", disk)
    if nvme:
        found.append(sys_root / "class" / "nvme" / f"nvme{nvme.group(1)}" / "device")
    return found


def pci_link(disk: str, sys_root: Path = Path("/sys")) -> PciLink | None:
    """The PCI function behind a whole disk (`disk`: its kernel name) and its link; None for
    a device with none (loop, zram, device-mapper, a virtual device)."""
    for candidate in _candidates(disk, sys_root):
        try:
            resolved = candidate.resolve(strict=True)
        except (OSError, RuntimeError):
            continue
        function = _pci_ancestor(resolved)
        if function is not None:
            return _link_of(function)
    return None


def _link_of(function: Path) -> PciLink:
    node = read_int(function / "numa_node")
    return PciLink(
        address=function.name,
        current_speed=read_value(function / "current_link_speed"),
        current_width=read_int(function / "current_link_width"),
        max_speed=read_value(function / "max_link_speed"),
        max_width=read_int(function / "max_link_width"),
        numa_node=node if node is not None and node >= 0 else None,
    )


def numa_nodes(sys_root: Path = Path("/sys")) -> dict[str, str]:
    """The host's NUMA nodes and the CPUs of each, as the kernel lists them ({"0": "0-15",
    "1": "16-31"}); empty where sysfs has no node folder."""
    nodes: dict[str, str] = {}
    try:
        folders = sorted((sys_root / "devices/system/node").glob("node[0-9]*"))
    except OSError:
        return nodes
    for folder in folders:
        cpus = read_value(folder / "cpulist")
        if cpus is not None:
            nodes[folder.name.removeprefix("node")] = cpus
    return dict(sorted(nodes.items(), key=lambda item: int(item[0])))


MAX_CPUS = 8192  # the most CPUs a Linux kernel can be built for (NR_CPUS)


def parse_cpulist(text: str | None) -> set[int]:
    """A kernel CPU list ("0-3,8,10-11") as a set of CPU numbers; empty for None or junk.
    Numbers no kernel gives (negative, MAX_CPUS or more, a range backwards) are left out: a
    list from an edited file cannot make a set of a billion numbers."""
    cpus: set[int] = set()
    for part in (text or "").split(",")[:MAX_CPUS]:
        low, _, high = part.strip().partition("-")
        try:
            first, last = int(low), int(high or low)
        except ValueError:
            continue
        if 0 <= first <= last < MAX_CPUS:
            cpus.update(range(first, last + 1))
    return cpus


def cpulist(cpus: set[int] | list[int]) -> str:
    """CPU numbers written as the kernel writes them: "0-3,8"."""
    ranges: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if ranges and cpu == ranges[-1][1] + 1:
            ranges[-1][1] = cpu
        else:
            ranges.append([cpu, cpu])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in ranges)


@dataclass(frozen=True)
class Machine:
    """Whether the host is a virtual machine, and by what it can be told."""

    virtual: bool | None  # None: nothing to tell by
    hypervisor: str | None  # the vendor where it is named ("QEMU", "KVM", "VMware, Inc.")


def machine(sys_root: Path = Path("/sys"), proc_root: Path = Path("/proc")) -> Machine:
    """Whether this host is a virtual machine: the CPU's "hypervisor" flag (set by every
    common hypervisor), the DMI vendor or product, or /sys/hypervisor. None when none of
    them can be read (not every architecture has them)."""
    dmi = [read_value(sys_root / "class/dmi/id" / name)
           for name in ("sys_vendor", "product_name")]  # fmt: skip
    named = next((v for v in dmi if v and v.lower().startswith(_VM_VENDORS)), None)
    xen = read_value(sys_root / "hypervisor/type")
    flags = _cpu_flags(proc_root)
    if named or xen or (flags is not None and "hypervisor" in flags):
        return Machine(virtual=True, hypervisor=named or xen)
    if flags is None and not any(dmi):
        return Machine(virtual=None, hypervisor=None)
    return Machine(virtual=False, hypervisor=None)


def _cpu_flags(proc_root: Path) -> set[str] | None:
    """The first CPU's flags from /proc/cpuinfo; None where it lists none (not x86: an
    ARM CPU's "Features" never name a hypervisor, so they cannot tell)."""
    text = read_value(proc_root / "cpuinfo") or ""
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return None
