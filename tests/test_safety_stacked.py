"""The guard looks beneath a loop device and behind a node's name, and again before each write.

Every device here is a loop device over an image the test creates: a second loop device over
the same data, a loop device stacked on a mounted one, a node made with mknod under another
name, and a device that comes into use between two jobs of one sweep.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import signal
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from blockdevs import loop_device
from fioprocs import fio_processes, wait_for
from suitefiles import suite_file

import ssdcompare
from ssdcompare.errors import SsdcompareError
from ssdcompare.target.devices import resolve_target
from ssdcompare.target.guard import check_write_safety, inspect_target

MIB = 1 << 20


def attach(backing: str | Path) -> str:
    """Another loop device over an existing file or device (detached by `detached`)."""
    return subprocess.run(["losetup", "--find", "--show", str(backing)], capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip


@contextlib.contextmanager
def detached(*devices: str) -> Iterator[None]:
    try:
        yield
    finally:
        for device in reversed(devices):
            subprocess.run(["losetup", "--detach", device], check=False)


@contextlib.contextmanager
def mounted_ext4(device: str, mountpoint: Path) -> Iterator[Path]:
    subprocess.run(["mkfs.ext4", "-q", "-F", device], check=True, capture_output=True)
    mountpoint.mkdir()
    subprocess.run(["mount", device, str(mountpoint)], check=True)
    try:
        yield mountpoint
    finally:
        subprocess.run(["umount", str(mountpoint)], check=False)


@contextlib.contextmanager
def holder_process(program: str, ready: Path) -> Iterator[subprocess.Popen]:
    """A Python process running `program`, which creates `ready` once it holds its file."""
    process = subprocess.Popen([sys.executable, "-c", program])
    try:
        wait_for(ready.exists, "the other process to take hold of the file")
        yield process
    finally:
        process.kill()
        process.wait()


def refusal(device: str, destroy_data: bool = True) -> str:
    with pytest.raises(SsdcompareError) as err:
        check_write_safety([resolve_target(device)], True, destroy_data)
    return str(err.value)


@pytest.mark.root
def test_a_second_loop_over_the_image_of_a_mounted_one_is_refused(tmp_path: Path) -> None:
    image = tmp_path / "fs.img"
    with loop_device(image, 64 * MIB) as first, mounted_ext4(first, tmp_path / "mnt"):
        second = attach(image)
        with detached(second):
            message = refusal(second)
    name = Path(first).name
    assert f"writes through to {image}" in message
    assert f"backing file of {name}" in message
    assert "never written" in message  # not overridable: --destroy-data was given


@pytest.mark.root
def test_a_loop_over_an_image_another_loop_uses_is_refused_without_any_flag(
    tmp_path: Path,
) -> None:
    image = tmp_path / "shared.img"
    with loop_device(image, 16 * MIB) as first:
        with open(first, "rb"):  # a program reading the data through the first loop device
            second = attach(image)
            with detached(second):
                findings = inspect_target(resolve_target(second))
                message = refusal(second, destroy_data=False)
    assert [f.kind for f in findings] == ["loop-backing"]
    assert Path(first).name in message


@pytest.mark.root
def test_a_loop_stacked_on_a_mounted_device_is_refused(tmp_path: Path) -> None:
    with (
        loop_device(tmp_path / "fs.img", 64 * MIB) as lower,
        mounted_ext4(lower, tmp_path / "mnt") as mountpoint,
    ):
        upper = attach(lower)
        with detached(upper):
            message = refusal(upper)
    assert f"writes through to {lower}" in message
    assert f"is mounted at {mountpoint}" in message


@pytest.mark.root
def test_a_loop_over_a_blank_image_alone_may_be_written(tmp_path: Path) -> None:
    with loop_device(tmp_path / "blank.img", 16 * MIB) as device:
        assert check_write_safety([resolve_target(device)], True, False) == []


@pytest.mark.root
def test_a_node_under_another_name_is_the_device_of_its_number(tmp_path: Path) -> None:
    with (
        loop_device(tmp_path / "fs.img", 64 * MIB) as device,
        mounted_ext4(device, tmp_path / "mnt") as mountpoint,
    ):
        number = os.stat(device).st_rdev
        alias = tmp_path / "innocent"
        os.mknod(alias, stat.S_IFBLK | 0o600, number)
        target = resolve_target(str(alias))
        message = refusal(str(alias))
    assert target.kernel_name == Path(device).name
    assert target.path == device  # the kernel's own node, one name for one device
    assert target.size_bytes == 64 * MIB
    assert f"is mounted at {mountpoint}" in message


@pytest.mark.root
def test_a_node_no_device_answers_to_is_refused(tmp_path: Path) -> None:
    alias = tmp_path / "nothing"
    os.mknod(alias, stat.S_IFBLK | 0o600, os.makedev(7, 1 << 19))  # a loop number never made
    with pytest.raises(SsdcompareError, match="no device on this machine answers to"):
        resolve_target(str(alias))


def test_a_dangling_link_into_dev_is_not_a_new_file(tmp_path: Path) -> None:
    link = tmp_path / "disk"
    link.symlink_to("/dev/ssdcompare-no-such-disk")
    with pytest.raises(SsdcompareError, match="unknown device"):
        resolve_target(str(link), size_bytes=MIB)
    assert not Path("/dev/ssdcompare-no-such-disk").exists()


def test_results_are_never_written_under_dev(tmp_path: Path) -> None:
    from ssdcompare.results.models import Manifest
    from ssdcompare.results.store import ResultsDir

    link = tmp_path / "out"
    link.symlink_to("/dev/ssdcompare-no-such-folder")
    manifest = Manifest.model_construct()
    made = [Path("/dev/ssdcompare-results"), Path("/dev/ssdcompare-no-such-folder")]
    try:
        for place in (made[0], link):
            with pytest.raises(SsdcompareError, match="under /dev"):
                ResultsDir.create(place, manifest)
        assert not any(path.exists() for path in made)
    finally:
        for path in made:  # what a failing check would have left in /dev
            shutil.rmtree(path, ignore_errors=True)


@pytest.mark.root
@pytest.mark.fio
def test_a_device_that_comes_into_use_mid_sweep_is_not_written_again(tmp_path: Path) -> None:
    from ssdcompare.run.plan import make_plan
    from ssdcompare.run.sweep import run, start

    suite = suite_file(
        tmp_path, "writes", "{rw: randwrite, bs: 4k, iodepth: 4}",
        "{rw: write, bs: 128k, iodepth: 4}", "{rw: randread, bs: 4k, iodepth: 4}",
        defaults="{runtime: 1, size: 8m}",
    )  # fmt: skip
    stacked: list[str] = []

    def stack_after_first_job(progress) -> None:
        if progress.state == "ok" and not stacked:
            stacked.append(attach(target))  # something starts using the device

    with loop_device(tmp_path / "disk.img", 32 * MIB) as target:
        plan = make_plan(str(suite), [target], require_fio=True)
        results, _ = start(plan, tmp_path / "results")
        try:
            outcome = run(plan, results, progress=stack_after_first_job)
        finally:
            for device in stacked:
                subprocess.run(["losetup", "--detach", device], check=False)
    states = [(s.job, s.status) for s in outcome.statuses]
    assert states == [("randwrite-4k-qd4", "ok"), ("write-128k-qd4", "skipped"),
                      ("randread-4k-qd4", "ok")]  # fmt: skip
    skipped = outcome.statuses[1].error or ""
    assert "come into use since the sweep started" in skipped
    assert f"backing device of {Path(stacked[0]).name}" in skipped


@pytest.mark.root
def test_a_loop_is_known_by_its_backing_numbers_not_its_path(tmp_path: Path) -> None:
    """The path sysfs shows for a loop's backing file can mislead: the file deleted but kept
    through a hard link, a name with trailing blanks or " (deleted)" in it."""
    image = tmp_path / "fs.img"
    with loop_device(image, 64 * MIB) as first, mounted_ext4(first, tmp_path / "mnt"):
        link = tmp_path / "link.img"
        os.link(image, link)
        image.unlink()  # sysfs now says ".../fs.img (deleted)"
        second = attach(link)
        with detached(second):
            for target in (str(link), second):
                assert f"backing file of {Path(first).name}" in refusal(target)
    odd = tmp_path / "odd.img (deleted)"
    with loop_device(odd, 16 * MIB) as device:
        spaced = tmp_path / "spaced.img "
        os.link(odd, spaced)
        other = attach(spaced)
        with detached(other):
            message = refusal(str(odd), destroy_data=False)
    assert f"backing file of {Path(device).name}, {Path(other).name}" in message


@pytest.mark.root
def test_a_loop_over_a_deleted_device_node_is_judged_by_the_device(tmp_path: Path) -> None:
    with (
        loop_device(tmp_path / "fs.img", 64 * MIB) as lower,
        mounted_ext4(lower, tmp_path / "mnt") as mountpoint,
    ):
        node = tmp_path / "node"
        os.mknod(node, stat.S_IFBLK | 0o600, os.stat(lower).st_rdev)
        upper = attach(node)
        node.unlink()
        with detached(upper):
            message = refusal(upper)
    assert f"is mounted at {mountpoint}" in message


@pytest.mark.root
def test_a_mount_in_another_namespace_is_seen_beneath_a_loop(tmp_path: Path) -> None:
    with loop_device(tmp_path / "fs.img", 64 * MIB) as lower:
        subprocess.run(["mkfs.ext4", "-q", "-F", lower], check=True, capture_output=True)
        (tmp_path / "mnt").mkdir()
        ready = tmp_path / "ready"
        holder = subprocess.Popen(["unshare", "-m", "sh", "-c", f"mount {lower} {tmp_path}/mnt"
                                   f" && touch {ready} && exec sleep 120"])  # fmt: skip
        try:
            wait_for(ready.exists, "the other namespace to mount it")
            upper = attach(lower)
            with detached(upper):
                message = refusal(upper)
        finally:
            holder.kill()
            holder.wait()
    assert "in another mount namespace" in message


@pytest.mark.root
def test_a_partition_of_a_disk_in_use_is_refused(tmp_path: Path) -> None:
    with partitioned(tmp_path / "parts.img") as disk:
        node = partition_node(disk, 2, tmp_path)
        assert check_write_safety([resolve_target(node)], True, False) == []
        stacked = attach(disk)  # something uses the whole disk, partition 2 included
        with detached(stacked):
            message = refusal(node)
    name = Path(disk).name
    assert f"the disk {name} that holds {name}p2: {name} is the backing device of" in message


@pytest.mark.root
def test_a_file_mapped_into_memory_is_in_use_after_its_descriptor_closed(tmp_path: Path) -> None:
    data = tmp_path / "mapped.bin"
    data.write_bytes(bytes(1 << 20))
    ready = tmp_path / "ready"
    program = (
        "import mmap, os, time\n"
        f"fd = os.open({str(data)!r}, os.O_RDWR)\n"
        "view = mmap.mmap(fd, 0, mmap.MAP_SHARED)\n"
        f"os.close(fd)\nopen({str(ready)!r}, 'w').close()\ntime.sleep(120)\n"
    )
    with holder_process(program, ready) as mapper:
        message = refusal(str(data), destroy_data=False)
    assert f"is open in process {mapper.pid}" in message


@pytest.mark.root
def test_report_and_export_never_write_over_a_device_or_into_dev(tmp_path: Path) -> None:
    from ssdcompare.analysis.export import export
    from ssdcompare.report.build import write_report

    example = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"
    with loop_device(tmp_path / "disk.img", 16 * MIB) as device:
        number = os.stat(device).st_rdev
        nodes = [tmp_path / "node.html", tmp_path / "node.csv"]  # the device under other names
        for node in nodes:
            os.mknod(node, stat.S_IFBLK | 0o600, number)
        made = [Path("/dev/ssdcompare-test.html"), Path("/dev/ssdcompare-test.csv")]
        try:
            for output in (Path(device), nodes[0], made[0]):
                with pytest.raises(SsdcompareError, match="refusing to write"):
                    write_report([example], output)
            for output in (nodes[1], made[1]):
                with pytest.raises(SsdcompareError, match="refusing to write"):
                    export([example], output)
            assert Path(device).is_block_device() and all(n.is_block_device() for n in nodes)
            assert not any(path.exists() for path in made)
        finally:
            for path in made:
                path.unlink(missing_ok=True)


@pytest.mark.root
@pytest.mark.fio
def test_a_loop_pointed_at_another_file_mid_sweep_is_not_measured_again(tmp_path: Path) -> None:
    from ssdcompare.run.plan import make_plan
    from ssdcompare.run.sweep import run, start

    suite = suite_file(tmp_path, "reads", "{rw: randread, bs: 4k}", "{rw: read, bs: 128k}",
                       defaults="{runtime: 1, size: 8m}")  # fmt: skip
    other = tmp_path / "other.img"
    other.write_bytes(bytes(16 * MIB))
    swapped: list[bool] = []
    with loop_device(tmp_path / "disk.img", 16 * MIB) as target:

        def swap_after_first_job(progress) -> None:
            if progress.state == "ok" and not swapped:
                subprocess.run(["losetup", "--detach", target], check=True)
                subprocess.run(["losetup", target, str(other)], check=True)
                swapped.append(True)

        plan = make_plan(str(suite), [target], require_fio=True)
        results, _ = start(plan, tmp_path / "results")
        outcome = run(plan, results, progress=swap_after_first_job)
    assert [s.status for s in outcome.statuses] == ["ok", "skipped"]
    assert "no longer the device the sweep started on: backing file was" in (
        outcome.statuses[1].error or "")  # fmt: skip


@pytest.mark.root
@pytest.mark.fio
def test_nothing_can_mount_a_device_while_a_job_writes_to_it(tmp_path: Path) -> None:
    suite = suite_file(tmp_path, "write", "{rw: randwrite, bs: 4k, runtime: 30, size: 8m}")
    out = tmp_path / "results"
    (tmp_path / "mnt").mkdir()
    with loop_device(tmp_path / "fs.img", 64 * MIB) as device:
        subprocess.run(["mkfs.ext4", "-q", "-F", device], check=True, capture_output=True)
        sweep = subprocess.Popen([sys.executable, "-m", "ssdcompare", "sweep", "--devices",
                                  device, "--suite", str(suite), "--out", str(out),
                                  "--destroy-data"], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)  # fmt: skip
        try:
            wait_for(lambda: fio_processes(out), "fio to start writing")
            mount = subprocess.run(["mount", device, str(tmp_path / "mnt")],
                                   capture_output=True, text=True, check=False)  # fmt: skip
        finally:
            sweep.send_signal(signal.SIGINT)
            sweep.communicate(timeout=60)
            subprocess.run(["umount", str(tmp_path / "mnt")], check=False, capture_output=True)
    assert mount.returncode != 0, "mounted while ssdcompare wrote to it"
    assert "busy" in mount.stderr or "already mounted" in mount.stderr


@contextlib.contextmanager
def partitioned(image: Path) -> Iterator[str]:
    """A loop device over a new image with two partitions, told to the kernel with partx
    (no udev here). Its partitions are removed before it is detached: partitions partx adds
    outlive the loop device and would show on whatever attaches to its number next."""
    with open(image, "wb") as handle:
        handle.truncate(32 * MIB)
    subprocess.run(["sfdisk", "-q", str(image)], input="1MiB,8MiB\n,8MiB\n", text=True,
                   check=True, capture_output=True)  # fmt: skip
    disk = attach(image)
    try:
        subprocess.run(["partx", "-a", disk], check=False, capture_output=True)
        yield disk
    finally:
        subprocess.run(["partx", "-d", disk], check=False, capture_output=True)
        subprocess.run(["losetup", "--detach", disk], check=False)


def partition_node(disk: str, index: int, folder: Path) -> str:
    entry = Path(f"/sys/class/block/{Path(disk).name}p{index}/dev")
    wait_for(entry.exists, "the kernel to read the partition table")
    major, minor = (int(n) for n in entry.read_text().split(":"))
    node = folder / f"p{index}"
    os.mknod(node, stat.S_IFBLK | 0o600, os.makedev(major, minor))
    return str(node)


@pytest.mark.root
def test_a_partition_of_a_loop_is_judged_by_what_the_loop_writes_to(tmp_path: Path) -> None:
    image = tmp_path / "parts.img"
    with partitioned(image) as disk:
        node = partition_node(disk, 1, tmp_path)
        other = attach(image)  # the same image, reached another way (mounted, used by a VM...)
        with detached(other):
            message = refusal(node, destroy_data=False)
        from ssdcompare.target.identity import identify
        from ssdcompare.target.locks import target_lock_paths

        identity = identify(resolve_target(node))
        disk_locks = {p.name for p in target_lock_paths(disk)}
        node_locks = {p.name for p in target_lock_paths(node)}
    name = Path(disk).name
    assert f"the disk {name} that holds {name}p1: {name} writes through to {image}" in message
    assert f"backing file of {Path(other).name}" in message
    info = os.stat(image)
    assert identity.backing_inode == f"{info.st_dev}:{info.st_ino}"  # the image, not nothing
    assert disk_locks <= node_locks  # a sweep on the disk keeps one on its partition out


@pytest.mark.root
def test_the_loop_driver_is_asked_even_without_its_dev_node(tmp_path: Path) -> None:
    from ssdcompare.target.loops import loop_backing_key

    image = tmp_path / "fs.img"
    with loop_device(image, 16 * MIB) as device:
        link = tmp_path / "link.img"
        os.link(image, link)
        image.unlink()  # the path sysfs shows now leads nowhere
        key = loop_backing_key(Path(device).name, dev_root=tmp_path / "no-dev")
    info = os.stat(link)
    assert key == ("file", info.st_dev, info.st_ino)


@pytest.mark.root
def test_a_file_held_by_a_thread_whose_process_main_thread_ended_is_in_use(
    tmp_path: Path,
) -> None:
    data = tmp_path / "held.bin"
    data.write_bytes(bytes(1 << 20))
    ready = tmp_path / "ready"
    program = (
        "import ctypes, os, threading, time\n"
        "def hold():\n"
        f"    fd = os.open({str(data)!r}, os.O_RDWR)\n"
        f"    open({str(ready)!r}, 'w').close()\n"
        "    time.sleep(120)\n"
        "threading.Thread(target=hold).start()\n"
        f"while not os.path.exists({str(ready)!r}):\n    time.sleep(0.01)\n"
        "ctypes.CDLL(None).pthread_exit(None)  # the main thread ends, the process goes on\n"
    )
    with holder_process(program, ready) as holder:
        wait_for(lambda: not list(Path(f"/proc/{holder.pid}/fd").glob("*")),
                 "the main thread to end")  # fmt: skip
        message = refusal(str(data), destroy_data=False)
    assert f"is open in process {holder.pid}" in message


@pytest.mark.root
def test_a_file_in_a_layer_of_a_mounted_overlay_is_refused(tmp_path: Path) -> None:
    layers = {name: tmp_path / name for name in ("lower", "upper", "work", "merged")}
    for folder in layers.values():
        folder.mkdir()
    options = f"lowerdir={layers['lower']},upperdir={layers['upper']},workdir={layers['work']}"
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o", options, str(layers["merged"])],
                   check=True, capture_output=True)  # fmt: skip
    try:
        (layers["merged"] / "disk.img").write_bytes(bytes(1 << 20))
        message = refusal(str(layers["upper"] / "disk.img"), destroy_data=False)
    finally:
        subprocess.run(["umount", str(layers["merged"])], check=False)
    assert f"a layer (upperdir) of the overlay mounted at {layers['merged']}" in message


@pytest.mark.root
def test_an_overlay_layer_file_is_refused_through_a_hard_link_or_a_loop(tmp_path: Path) -> None:
    layers = {name: tmp_path / name for name in ("lower", "upper", "work", "merged")}
    for folder in layers.values():
        folder.mkdir()
    (layers["upper"] / "up.img").write_bytes(bytes(1 << 20))
    options = f"lowerdir={layers['lower']},upperdir={layers['upper']},workdir={layers['work']}"
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o", options, str(layers["merged"])],
                   check=True, capture_output=True)  # fmt: skip
    try:
        link = tmp_path / "link.img"
        os.link(layers["upper"] / "up.img", link)
        by_link = refusal(str(link), destroy_data=False)
        loop = attach(layers["upper"] / "up.img")
        with detached(loop):
            by_loop = refusal(loop, destroy_data=False)
    finally:
        subprocess.run(["umount", str(layers["merged"])], check=False)
    assert "a hard link on the filesystem of a layer (" in by_link
    assert f"writes through to {layers['upper'] / 'up.img'}" in by_loop
    assert "in a layer (upperdir) of the overlay" in by_loop


@pytest.mark.root
@pytest.mark.fio
@pytest.mark.parametrize("where", [[], ["-E", "offset=1048576"]], ids=["start", "at-1MiB"])
def test_a_filesystem_made_just_as_a_writing_run_starts_is_never_written(
    tmp_path: Path, where: list[str]
) -> None:
    """A filesystem made on the device after the look before a writing job and before its
    run (here: while the sweep says the run starts), at its start or where a partition
    usually starts, is found once the run holds the device: the run is skipped and the
    filesystem is left byte for byte as it was made."""
    with loop_device(tmp_path / "dev.img", 64 * MIB) as device:
        made: list[str] = []

        def progress(event: object) -> None:
            if event.state == "start" and event.index == 2:
                subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "theirs", *where, device, "32M"],
                               check=True, capture_output=True)  # fmt: skip
                made.append(_sha256(device))

        jobs = ["{rw: randwrite, bs: 4k, runtime: 1}", "{rw: write, bs: 128k, runtime: 1}",
                "{rw: randread, bs: 4k, runtime: 1}"]  # fmt: skip
        suite = suite_file(tmp_path, "w", *jobs, defaults="{size: 16m}")
        run = ssdcompare.run_sweep(device, suite=str(suite), out=tmp_path / "r",
                                   progress=progress, report=False)  # fmt: skip
        states = [(s.job, s.status) for s in run.outcome.statuses]
        assert states == [("randwrite-4k-qd1", "ok"), ("write-128k-qd1", "skipped"),
                          ("randread-4k-qd1", "ok")]  # fmt: skip
        assert "now carries an ext4 filesystem" in (run.outcome.statuses[1].error or "")
        assert made == [_sha256(device)]  # not a byte of it written


def _sha256(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()
