"""Like for like: what makes results comparable is recorded (PCIe link, NUMA node, queue
settings, the CPUs fio ran on, whether the host is a virtual machine), devices that differ in
it are told apart in words at the top of the report and in `job_summary`, and a group member
far below its fellows is named. Real loop devices and real fio; a sysfs tree of files only
for what this machine cannot have (a PCIe link, a second NUMA node)."""

from __future__ import annotations

import html
import json
import os
from pathlib import Path

import pandas as pd
import pytest
from blockdevs import loop_device
from reportbrowser import measure
from suitefiles import suite_file

import ssdcompare
from ssdcompare.analysis import summary as summary_module
from ssdcompare.analysis.likeness import (
    Difference,
    Unit,
    compare_units,
    like_for_like,
    placement,
)
from ssdcompare.analysis.outliers import group_outliers, outlier_lines
from ssdcompare.fio.binary import FioInfo
from ssdcompare.target.devices import resolve_targets
from ssdcompare.target.metadata import DeviceInfo, HostInfo, device_info, host_info
from ssdcompare.target.topology import cpulist, machine, parse_cpulist, pci_link

ONE_JOB = "{rw: randread, bs: 4k, iodepth: 1}"
DEFAULTS = "{runtime: 1, size: 8m}"


def _queue(device: str, name: str, value: str) -> None:
    Path(f"/sys/block/{Path(device).name}/queue/{name}").write_text(value)


@pytest.mark.root
def test_a_loop_device_has_its_queue_settings_and_no_pci_link(tmp_path: Path) -> None:
    with loop_device(tmp_path / "a.img", 16 << 20) as dev:
        (target,) = resolve_targets(dev)
        info = device_info(target)
        queue = Path(f"/sys/block/{Path(dev).name}/queue")
        assert info.nr_requests == int((queue / "nr_requests").read_text())
        assert info.max_sectors_kb == int((queue / "max_sectors_kb").read_text()) > 0
    assert info.write_cache in ("write back", "write through")
    # a loop device hangs off no PCI function: nothing is made up
    assert info.pci_address is None and info.pcie_link_speed is None and info.numa_node is None


def test_the_host_says_its_numa_nodes_and_whether_it_is_a_virtual_machine() -> None:
    host = host_info("fio-3.33")
    cpus = set().union(*(parse_cpulist(c) for c in host.numa_nodes.values()))
    assert not host.numa_nodes or cpus <= set(range(os.cpu_count() or 1))
    flags = [line for line in Path("/proc/cpuinfo").read_text().splitlines()
             if line.startswith("flags")]  # fmt: skip
    if flags and "hypervisor" in flags[0].split():
        assert host.virtual_machine is True
    assert HostInfo(hostname="old").virtual_machine is None  # older manifests: unknown


def test_a_pci_function_is_found_above_the_disk_with_its_link(tmp_path: Path) -> None:
    function = tmp_path / "devices/pci0000:00/0000:00:1d.0/0000:3d:00.0"
    disk = function / "nvme/nvme0/nvme0n1"
    disk.mkdir(parents=True)
    for name, value in (("current_link_speed", "8.0 GT/s PCIe"), ("current_link_width", "2"),
                        ("max_link_speed", "16.0 GT/s PCIe"), ("max_link_width", "4"),
                        ("numa_node", "1")):  # fmt: skip
        (function / name).write_text(value + "\n")
    (tmp_path / "class/block").mkdir(parents=True)
    (tmp_path / "class/block/nvme0n1").symlink_to(disk)
    link = pci_link("nvme0n1", tmp_path)
    assert link is not None and link.address == "0000:3d:00.0"
    assert (link.current_speed, link.current_width) == ("8.0 GT/s PCIe", 2)
    assert (link.max_speed, link.max_width, link.numa_node) == ("16.0 GT/s PCIe", 4, 1)
    (function / "numa_node").write_text("-1\n")  # the kernel's "no node"
    assert pci_link("nvme0n1", tmp_path).numa_node is None  # type: ignore[union-attr]
    assert pci_link("loop0", tmp_path) is None


def test_a_virtual_machine_is_told_by_its_vendor_or_cpu_flag(tmp_path: Path) -> None:
    (tmp_path / "sys/class/dmi/id").mkdir(parents=True)
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc/cpuinfo").write_text("processor: 0\nflags\t\t: fpu sse2\n")
    (tmp_path / "sys/class/dmi/id/sys_vendor").write_text("Dell Inc.\n")
    assert machine(tmp_path / "sys", tmp_path / "proc").virtual is False
    (tmp_path / "sys/class/dmi/id/sys_vendor").write_text("QEMU\n")
    assert machine(tmp_path / "sys", tmp_path / "proc").hypervisor == "QEMU"
    (tmp_path / "sys/class/dmi/id/sys_vendor").unlink()
    (tmp_path / "proc/cpuinfo").write_text("processor: 0\nflags\t\t: fpu hypervisor\n")
    assert machine(tmp_path / "sys", tmp_path / "proc").virtual is True
    assert cpulist({0, 1, 2, 3, 8, 10, 11}) == "0-3,8,10-11"
    assert parse_cpulist("0-3,8,10-11") == {0, 1, 2, 3, 8, 10, 11}


def _unit(label: str, kind: str = "nvme", **device: object) -> Unit:
    host = HostInfo(hostname="h", kernel="6.1", numa_nodes={"0": "0-3", "1": "4-7"})
    return Unit(label=label, kind=kind, device=DeviceInfo(name=label, path=f"/dev/{label}",
                kind="block", transport=kind, **device), host=host)  # fmt: skip


def test_a_narrower_link_and_other_firmware_are_not_like_for_like() -> None:
    fast = _unit("nvme0", pcie_link_speed="16.0 GT/s PCIe", pcie_link_width=4, firmware="2.0")
    slow = _unit("nvme1", pcie_link_speed="8.0 GT/s PCIe", pcie_link_width=4, firmware="1.0",
                 pcie_max_link_speed="16.0 GT/s PCIe", pcie_max_link_width=4)  # fmt: skip
    found = compare_units([slow, fast])
    assert found.headline() == (
        "Not like for like: PCIe link: 8 GT/s x4 (of 16 GT/s x4) on nvme1; 16 GT/s x4 on "
        "nvme0, firmware: 1.0 on nvme1; 2.0 on nvme0."
    )
    assert not found.kind_differences
    # a RAM disk against a loop device: what follows from their kinds is information
    ram = _unit("zram0", "zram", logical_block_bytes=4096, rotational=False)
    loop = _unit("loop0", "loop", logical_block_bytes=512, rotational=True)
    mixed = compare_units([ram, loop])
    assert mixed.headline() is None and [d.fact for d in mixed.kind_differences] == [
        "rotational", "block size"]  # fmt: skip
    assert mixed.kind_line().startswith("Different kinds of device, zram (zram0), loop (loop0)")  # type: ignore[union-attr]


def test_fio_on_the_far_numa_node_is_told() -> None:
    near = _unit("nvme0", numa_node=0)
    far = _unit("nvme1", numa_node=1)
    near.fio_cpus = far.fio_cpus = (0, 1)
    assert placement(near) == "fio on the device's node (0)"
    assert placement(far) == "device on node 1, fio on CPUs 0-1 (node 0)"
    (difference,) = compare_units([near, far]).differences
    assert difference.fact == "NUMA placement"
    # a host of one node has no far node
    near.host = far.host = HostInfo(hostname="h", numa_nodes={"0": "0-7"})
    assert placement(far) is None and not compare_units([near, far]).differences


def test_odd_numa_facts_from_an_edited_manifest_are_unknown_or_left_out() -> None:
    """What a results folder from someone else may hold: a CPU list of a billion CPUs (no
    set of them is made), a node named otherwise than by a number, a node below 0."""
    assert parse_cpulist("0-999999999") == set() and parse_cpulist("7-3,-2,x") == set()
    assert parse_cpulist("0-3,8") == {0, 1, 2, 3, 8}
    assert parse_cpulist(",".join(["1"] * 100_000)) == {1}
    unit = _unit("nvme1", numa_node=1)
    unit.fio_cpus = (0, 1)
    assert unit.host is not None
    unit.host.numa_nodes = {"0": "0-999999999", "1": "2-3", "x": "0-1"}
    assert placement(unit) == "device on node 1, fio on CPUs 0-1 (node ?)"
    assert unit.device is not None
    unit.device.numa_node = -5
    assert placement(unit) is None


@pytest.mark.root
@pytest.mark.fio
def test_two_loop_devices_set_up_differently_are_told_apart_in_the_report(
    fio: FioInfo, tmp_path: Path
) -> None:
    suite = suite_file(tmp_path, "like", ONE_JOB, defaults=DEFAULTS)
    with (
        loop_device(tmp_path / "a.img", 32 << 20) as a,
        loop_device(tmp_path / "b.img", 32 << 20) as b,
    ):
        _queue(b, "scheduler", "mq-deadline")
        try:
            run = ssdcompare.run_sweep(f"{a},{b}", suite=str(suite), out=tmp_path / "r",
                                       read_only=True)  # fmt: skip
        finally:
            _queue(b, "scheduler", "none")
    assert run.complete
    names = [Path(a).name, Path(b).name]
    manifest = json.loads((run.path / "manifest.json").read_text())
    assert all(d["nr_requests"] and d["write_cache"] for d in manifest["devices"])
    assert manifest["host"]["numa_nodes"]
    # the CPUs fio's threads ran on, per run
    status = json.loads((run.path / "runs" / names[0] / "randread-4k-qd1" / "r1"
                         / "status.json").read_text())  # fmt: skip
    assert status["fio_cpus"] and set(status["fio_cpus"]) <= set(range(os.cpu_count() or 1))
    found = like_for_like(run.frame())
    # mq-deadline sets its own queue size: both differences are real
    assert [d.words() for d in found.differences][0] == (
        f"scheduler: none on {names[0]}; mq-deadline on {names[1]}")  # fmt: skip
    assert {d.fact for d in found.differences} <= {"scheduler", "nr_requests"}
    summary = ssdcompare.job_summary(run.frame())
    # each row carries what its device differs in
    assert set(summary["like_for_like"]) == {"; ".join(d.words() for d in found.differences)}
    assert run.report is not None
    shown = measure(run.report.read_text(), """
        var block = document.getElementById("likeness");
        var top = document.getElementById("headline") || document.getElementById("what");
        var above = block && block.getBoundingClientRect().top < top.getBoundingClientRect().top;
        return {text: block ? block.innerText : null, first: above};
    """, 1280, tmp_path)  # fmt: skip
    assert "Not like for like" in shown["text"] and "mq-deadline" in shown["text"]
    assert shown["first"]


@pytest.mark.root
@pytest.mark.fio
def test_the_same_device_in_two_folders_is_compared_with_itself(
    fio: FioInfo, tmp_path: Path
) -> None:
    suite = suite_file(tmp_path, "again", ONE_JOB, defaults=DEFAULTS)
    with loop_device(tmp_path / "a.img", 32 << 20) as a:
        first = ssdcompare.run_sweep(a, suite=str(suite), out=tmp_path / "A", read_only=True)
        before = Path(f"/sys/block/{Path(a).name}/queue/nr_requests").read_text().strip()
        _queue(a, "nr_requests", "16")
        try:
            second = ssdcompare.run_sweep(a, suite=str(suite), out=tmp_path / "B",
                                          read_only=True)  # fmt: skip
        finally:
            _queue(a, "nr_requests", before)
    name = Path(a).name
    found = like_for_like(ssdcompare.load([first.path, second.path]))
    (difference,) = found.differences
    assert difference.fact == "nr_requests"
    assert difference.values == {f"{name} @A": before, f"{name} @B": "16"}


def _member_rows(iops: list[float | None]) -> pd.DataFrame:
    group = "+".join(f"loop{i}" for i in range(len(iops)))
    return pd.DataFrame({
        "sweep": "/r", "group": group, "job": "randread-4k-qd1", "status": "ok",
        "member": list(range(1, len(iops) + 1)),
        "label": [f"loop{i} in {group}" for i in range(len(iops))],
        "iops_value": [float("nan") if v is None else v for v in iops],
    })  # fmt: skip


def test_a_member_more_than_a_tenth_below_the_median_is_an_outlier() -> None:
    (outlier,) = group_outliers(_member_rows([1000, 1000, 880, 1010]))
    assert outlier.member == "loop2 in loop0+loop1+loop2+loop3"
    assert outlier.median_iops == 1000 and round(outlier.below_pct) == 12
    assert not group_outliers(_member_rows([1000, 1000, 910, 1010]))  # 9 % below: within
    assert not group_outliers(_member_rows([1000, None]))  # one figure: no median to hold to
    (line,) = outlier_lines(group_outliers(_member_rows([1000, 1000, 500])))
    assert line.startswith("loop2 in loop0+loop1+loop2: more than 10 % below")
    assert "50 % below the members' median of 1,000" in line


@pytest.mark.root
@pytest.mark.fio
def test_a_real_group_is_checked_member_by_member(fio: FioInfo, tmp_path: Path) -> None:
    suite = suite_file(tmp_path, "grp", ONE_JOB, defaults=DEFAULTS)
    with (
        loop_device(tmp_path / "a.img", 32 << 20) as a,
        loop_device(tmp_path / "b.img", 32 << 20) as b,
        loop_device(tmp_path / "c.img", 32 << 20) as c,
    ):
        run = ssdcompare.run_sweep(f"{a}+{b}+{c}", suite=str(suite), out=tmp_path / "r",
                                   read_only=True)  # fmt: skip
    summary = ssdcompare.job_summary(run.frame())
    members = summary[summary["member"].notna()]
    assert len(members) == 3
    median = members["iops_value"].median()
    slow = set(members.loc[members["iops_value"] < median * 0.9, "label"])
    assert {o.member for o in group_outliers(summary)} == slow
    named = summary[summary["group_outlier"].notna()]
    assert set(named["label"]) == slow and all(named["group_outlier"].str.contains("below"))
    # the members are the devices compared: three loop devices set up alike
    assert [u.label for u in like_for_like(run.frame()).units] == list(members["label"])
    assert not like_for_like(run.frame()).differences


def test_each_summary_row_names_what_its_own_device_differs_in() -> None:
    """Of three devices two alike, only the odd one's rows carry the difference (a group
    member's, and its group's); of two that differ, both do."""
    summary = pd.DataFrame({
        "label": ["loop0", "loop1", "loop5+loop6", "loop5 in loop5+loop6", "loop6 in loop5+loop6"],
        "group": [None, None, "loop5+loop6", "loop5+loop6", "loop5+loop6"],
        "member": [pd.NA, pd.NA, pd.NA, 1, 2],
    })  # fmt: skip
    odd = Difference(
        "nr_requests",
        {
            "loop0": "128",
            "loop1": "128",
            "loop5 in loop5+loop6": "128",
            "loop6 in loop5+loop6": "4",
        },
    )
    said = summary_module._unlike(summary, [odd])
    assert said == [None, None, odd.words(), None, odd.words()]
    two = Difference("firmware", {"loop0": "1.0", "loop1": "2.0"})
    assert summary_module._unlike(summary, [two]) == [two.words()] * 2 + [None] * 3


@pytest.mark.root
@pytest.mark.fio
def test_a_member_whose_requests_are_cut_small_is_named_in_its_group(
    fio: FioInfo, tmp_path: Path
) -> None:
    """A real slow member: three loop devices as a group, one of them sending its device
    requests of at most 4 KiB (max_sectors_kb), read in 1 MiB blocks. It falls far below its
    fellows, is named as the group's outlier, and the setting that makes it so is named on
    its row as what it differs in."""
    suite = suite_file(tmp_path, "cut", "{rw: read, bs: 1m, iodepth: 4}",
                       defaults="{runtime: 1, size: 16m}")  # fmt: skip
    with (
        loop_device(tmp_path / "a.img", 32 << 20) as a,
        loop_device(tmp_path / "b.img", 32 << 20) as b,
        loop_device(tmp_path / "c.img", 32 << 20) as c,
    ):
        # the setting outlives the loop device (a loop device of that number has it next):
        # put back as it was
        before = Path(f"/sys/block/{Path(c).name}/queue/max_sectors_kb").read_text().strip()
        _queue(c, "max_sectors_kb", "4")
        try:
            run = ssdcompare.run_sweep(f"{a}+{b}+{c}", suite=str(suite), out=tmp_path / "r",
                                       read_only=True)  # fmt: skip
        finally:
            _queue(c, "max_sectors_kb", before)
    assert run.complete and run.report is not None
    summary = ssdcompare.job_summary(run.frame()).set_index("label")
    slow = f"{Path(c).name} in {Path(a).name}+{Path(b).name}+{Path(c).name}"
    assert summary["group_outlier"].dropna().index.tolist() == [slow]
    assert "below the members' median" in summary.loc[slow, "group_outlier"]
    assert summary.loc[slow, "like_for_like"].startswith("max_sectors_kb: ")
    shown = html.unescape(run.report.read_text())
    assert f"{slow}: more than 10 % below the median of its group's members" in shown
