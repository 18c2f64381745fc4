"""What was measured on: host and device metadata read from /proc, /sys and the fio binary.

Collectors never fail a run: what cannot be read is left out (None), never guessed.
"""

from __future__ import annotations

import platform
import socket
from pathlib import Path

import psutil
from pydantic import BaseModel, ConfigDict

from ssdcompare.target.devices import Target, read_int, read_value
from ssdcompare.target.topology import machine, numa_nodes, pci_link
from ssdcompare.version import __version__


class HostInfo(BaseModel):
    """The machine a sweep ran on."""

    model_config = ConfigDict(extra="allow")

    hostname: str
    cpu_model: str | None = None
    cpu_cores: int | None = None  # physical
    cpu_threads: int | None = None  # logical CPUs
    cpu_governors: list[str] = []  # distinct scaling governors over all CPUs
    kernel: str | None = None
    os: str | None = None
    memory_bytes: int | None = None
    fio_version: str | None = None
    fio_path: str | None = None
    python: str | None = None
    ssdcompare_version: str = __version__
    # what makes results comparable across hosts (ssdcompare.target.topology); older
    # manifests lack them and read as unknown
    numa_nodes: dict[str, str] = {}  # node -> its CPUs, as the kernel lists them ("0-15")
    virtual_machine: bool | None = None  # None: cannot tell
    hypervisor: str | None = None  # its vendor, where the machine names it


class DeviceInfo(BaseModel):
    """One target as the kernel describes it (block devices) or its filesystem (files)."""

    model_config = ConfigDict(extra="allow")

    name: str
    path: str
    kind: str
    size_bytes: int | None = None
    model: str | None = None
    vendor: str | None = None
    firmware: str | None = None
    serial: str | None = None
    transport: str | None = None  # nvme, sata/scsi, loop, zram, virtio, mmc, file
    logical_block_bytes: int | None = None
    physical_block_bytes: int | None = None
    rotational: bool | None = None
    scheduler: str | None = None
    parent: str | None = None  # the whole disk, for a partition
    loop_backing_file: str | None = None
    loop_direct_io: bool | None = None
    zram_comp_algorithm: str | None = None
    filesystem: str | None = None  # file targets: the filesystem type holding the file
    filesystem_device: str | None = None
    file_existed: bool | None = None
    # the PCI function the device is reached through and its link, as the kernel reports it
    # (a virtual machine's are the emulated ones); None where there is none (loop, zram)
    pci_address: str | None = None
    pcie_link_speed: str | None = None  # current, "8.0 GT/s PCIe"
    pcie_link_width: int | None = None  # current, lanes
    pcie_max_link_speed: str | None = None
    pcie_max_link_width: int | None = None
    numa_node: int | None = None  # the node the device hangs off; None where none is known
    nr_requests: int | None = None  # queue/nr_requests
    write_cache: str | None = None  # queue/write_cache: "write back" or "write through"
    max_sectors_kb: int | None = None  # queue/max_sectors_kb: the largest request sent


def _cpu_model(proc_root: Path) -> str | None:
    text = read_value(proc_root / "cpuinfo") or ""
    for line in text.splitlines():
        if line.lower().startswith(("model name", "hardware", "cpu model")):
            return line.split(":", 1)[1].strip()
    return platform.processor() or None


def host_info(
    fio_version: str | None = None,
    fio_path: str | None = None,
    sys_root: Path = Path("/sys"),
    proc_root: Path = Path("/proc"),
) -> HostInfo:
    """Collect host metadata; fields that cannot be read stay empty."""
    governors = set()
    for gov in sorted((sys_root / "devices/system/cpu").glob("cpu*/cpufreq/scaling_governor")):
        value = read_value(gov)
        if value:
            governors.add(value)
    os_name = None
    release = read_value(Path("/etc/os-release"))
    if release:
        for line in release.splitlines():
            if line.startswith("PRETTY_NAME="):
                os_name = line.split("=", 1)[1].strip('"')
    vm = machine(sys_root, proc_root)
    return HostInfo(
        hostname=socket.gethostname(),
        cpu_model=_cpu_model(proc_root),
        cpu_cores=psutil.cpu_count(logical=False),
        cpu_threads=psutil.cpu_count(logical=True),
        cpu_governors=sorted(governors),
        kernel=platform.release(),
        os=os_name,
        memory_bytes=psutil.virtual_memory().total,
        fio_version=fio_version,
        fio_path=fio_path,
        python=platform.python_version(),
        numa_nodes=numa_nodes(sys_root),
        virtual_machine=vm.virtual,
        hypervisor=vm.hypervisor,
    )


def transport_of(kernel_name: str, sys_root: Path = Path("/sys")) -> str:
    """How a whole disk is attached, by its kernel name: its device's own `transport` (an
    NVMe controller's: pcie, tcp, rdma, fc, loop), else its kind by name (nvme, scsi, loop,
    zram, virtio, ...); "unknown" when neither says."""
    return _transport(kernel_name, sys_root / "class" / "block" / kernel_name)


def _transport(name: str, dev_dir: Path) -> str:
    transport = read_value(dev_dir / "device" / "transport")
    if transport:
        return transport
    for prefix, kind in (
        ("nvme", "nvme"), ("sd", "scsi"), ("vd", "virtio"), ("xvd", "xen"), ("loop", "loop"),
        ("zram", "zram"), ("mmcblk", "mmc"), ("md", "md"), ("dm-", "device-mapper"),
        ("nbd", "nbd"), ("ram", "ramdisk"), ("pmem", "pmem"),
    ):  # fmt: skip
        if name.startswith(prefix):
            return kind
    return "unknown"


def device_info(target: Target, sys_root: Path = Path("/sys")) -> DeviceInfo:
    """Read a target's identity and queue settings from sysfs (block) or its filesystem (file).
    Nothing of a device on a remote host can be read from here: only its name and path."""
    if target.remote:  # its size is the server's to know: --size is only the span used
        return DeviceInfo(name=target.name, path=target.path, kind=target.kind)
    if target.kind == "file":
        return _file_info(target)
    name = target.kernel_name or target.name
    dev_dir = sys_root / "class" / "block" / name
    parent = None
    disk_dir = dev_dir
    if (dev_dir / "partition").exists():
        # a partition: model, firmware and the queue belong to the whole disk
        disk_dir = dev_dir.resolve().parent
        parent = disk_dir.name
    device = disk_dir / "device"
    queue = disk_dir / "queue"
    rotational = read_value(queue / "rotational")
    scheduler = read_value(queue / "scheduler")
    if scheduler and "[" in scheduler:
        scheduler = scheduler.split("[", 1)[1].split("]", 1)[0]
    info = DeviceInfo(
        name=target.name,
        path=target.path,
        kind="block",
        size_bytes=target.size_bytes,
        model=read_value(device / "model"),
        vendor=read_value(device / "vendor"),
        firmware=read_value(device / "firmware_rev") or read_value(device / "rev"),
        serial=read_value(device / "serial") or read_value(disk_dir / "serial"),
        transport=_transport(disk_dir.name, disk_dir),
        logical_block_bytes=read_int(queue / "logical_block_size"),
        physical_block_bytes=read_int(queue / "physical_block_size"),
        rotational=None if rotational is None else rotational == "1",
        scheduler=scheduler,
        parent=parent,
        nr_requests=read_int(queue / "nr_requests"),
        write_cache=read_value(queue / "write_cache"),
        max_sectors_kb=read_int(queue / "max_sectors_kb"),
    )
    _add_link(info, disk_dir.name, sys_root)
    _add_virtual(info, disk_dir)
    return info


def _add_virtual(info: DeviceInfo, disk_dir: Path) -> None:
    """What a loop device or zram RAM disk is made of."""
    if disk_dir.name.startswith("loop"):
        info.loop_backing_file = read_value(disk_dir / "loop" / "backing_file")
        dio = read_value(disk_dir / "loop" / "dio")
        info.loop_direct_io = None if dio is None else dio == "1"
        info.model = info.model or "loop device"
    if disk_dir.name.startswith("zram"):
        algorithm = read_value(disk_dir / "comp_algorithm")
        if algorithm and "[" in algorithm:
            algorithm = algorithm.split("[", 1)[1].split("]", 1)[0]
        info.zram_comp_algorithm = algorithm
        info.model = info.model or "zram RAM disk"


def _add_link(info: DeviceInfo, disk: str, sys_root: Path) -> None:
    """The device's PCI function, link and NUMA node, where it has one."""
    link = pci_link(disk, sys_root)
    if link is None:
        return
    info.pci_address = link.address
    info.pcie_link_speed, info.pcie_link_width = link.current_speed, link.current_width
    info.pcie_max_link_speed, info.pcie_max_link_width = link.max_speed, link.max_width
    info.numa_node = link.numa_node


def _file_info(target: Target) -> DeviceInfo:
    path = Path(target.path)
    existing = path if path.exists() else path.parent
    fs_type = fs_device = None
    best = -1
    # the longest mount point that contains the file is the filesystem holding it
    for part in psutil.disk_partitions(all=True):
        mount = part.mountpoint
        inside = str(existing.resolve()).startswith(mount.rstrip("/") + "/") or mount == "/"
        if inside and len(mount) > best:
            best, fs_type, fs_device = len(mount), part.fstype, part.device
    return DeviceInfo(
        name=target.name,
        path=target.path,
        kind="file",
        size_bytes=target.size_bytes,
        transport="file",
        filesystem=fs_type,
        filesystem_device=fs_device,
        file_existed=target.exists,
        model=f"file on {fs_type or 'unknown filesystem'}",
    )
