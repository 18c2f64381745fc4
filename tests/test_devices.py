"""What users type after --devices: kernel names, by-id links, block devices and test files."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from blockdevs import loop_device

from ssdcompare.errors import SsdcompareError
from ssdcompare.target.devices import (
    Target,
    available_block_devices,
    describe,
    resolve_target,
    resolve_targets,
)

MIB = 1024**2


def fake_sysfs(root: Path, sectors: dict[str, int]) -> Path:
    """A /sys with block/NAME/size and class/block/NAME/size (512-byte sectors)."""
    for name, count in sectors.items():
        for folder in (root / "block" / name, root / "class" / "block" / name):
            folder.mkdir(parents=True)
            (folder / "size").write_text(f"{count}\n")
    return root


@pytest.fixture
def roots(tmp_path: Path) -> tuple[Path, Path]:
    """A fake /dev holding one block device node, nvme7n1, and a fake /sys describing it.

    The node is only ever stat()ed: no device is opened, whatever its numbers.
    """
    dev = tmp_path / "dev"
    dev.mkdir()
    os.mknod(dev / "nvme7n1", stat.S_IFBLK | 0o600, os.makedev(259, 4093))
    (dev / "disk" / "by-id").mkdir(parents=True)
    (dev / "disk" / "by-id" / "nvme-Fake_SSD_123").symlink_to("../../nvme7n1")
    sys_root = fake_sysfs(tmp_path / "sys", {"nvme7n1": 2048, "sda": 8, "loop5": 0})
    return dev, sys_root


@pytest.mark.root
def test_bare_name_is_a_device_under_dev(roots: tuple[Path, Path]) -> None:
    dev, sys_root = roots
    target = resolve_target("nvme7n1", dev_root=dev, sys_root=sys_root)
    assert target.kind == "block"
    assert target.path == str(dev / "nvme7n1")
    assert target.name == target.kernel_name == "nvme7n1"
    assert target.size_bytes == 2048 * 512  # sysfs counts 512-byte sectors
    assert target.exists


@pytest.mark.root
def test_by_id_link_is_followed_to_the_kernel_name(roots: tuple[Path, Path]) -> None:
    dev, sys_root = roots
    link = dev / "disk" / "by-id" / "nvme-Fake_SSD_123"
    target = resolve_target(str(link), dev_root=dev, sys_root=sys_root)
    assert (target.spec, target.name, target.path) == (str(link), "nvme7n1", str(dev / "nvme7n1"))


def test_unknown_device_lists_the_ones_that_exist(tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    dev.mkdir()
    sys_root = fake_sysfs(tmp_path / "sys", {"nvme0n1": 100, "sda": 200, "loop3": 0})
    assert available_block_devices(sys_root) == ["nvme0n1", "sda"]
    with pytest.raises(SsdcompareError) as caught:
        resolve_target("nvme9n1", dev_root=dev, sys_root=sys_root)
    message = str(caught.value)
    assert "unknown device 'nvme9n1'" in message
    assert "Block devices on this machine: nvme0n1, sda." in message  # empty loop3 left out
    assert "./nvme9n1.img with --size" in message


def test_unknown_device_on_a_machine_without_any(tmp_path: Path) -> None:
    (tmp_path / "dev").mkdir()
    with pytest.raises(SsdcompareError, match="none found.*./scratch.img with --size"):
        resolve_target("scratch.img", dev_root=tmp_path / "dev", sys_root=tmp_path / "sys")


def test_missing_path_under_dev_is_not_created_as_a_file(tmp_path: Path) -> None:
    dev = tmp_path / "dev"
    dev.mkdir()
    sys_root = fake_sysfs(tmp_path / "sys", {"sda": 8})
    with pytest.raises(
        SsdcompareError, match="unknown device .*Block devices on this machine: sda"
    ):
        resolve_target(str(dev / "nvme0n1"), size_bytes=MIB, dev_root=dev, sys_root=sys_root)


def test_existing_file_takes_its_size(tmp_path: Path) -> None:
    image = tmp_path / "scratch.img"
    image.write_bytes(b"\0" * 8192)
    target = resolve_target(str(image))
    assert target == Target(
        spec=str(image), name="scratch.img", path=str(image), kind="file", size_bytes=8192
    )
    assert target.kernel_name is None
    assert resolve_target(str(image), size_bytes=4096).size_bytes == 4096


def test_empty_file_needs_a_size(tmp_path: Path) -> None:
    (tmp_path / "empty.img").touch()
    with pytest.raises(SsdcompareError, match="is empty: give its size with --size"):
        resolve_target(str(tmp_path / "empty.img"))


def test_new_file_needs_a_size(tmp_path: Path) -> None:
    wanted = tmp_path / "new.img"
    with pytest.raises(SsdcompareError, match="does not exist: fio can create it.*--size"):
        resolve_target(str(wanted))
    target = resolve_target(str(wanted), size_bytes=64 * MIB)
    assert (target.kind, target.size_bytes, target.exists) == ("file", 64 * MIB, False)
    assert not wanted.exists()  # resolving never creates anything


def test_new_file_in_a_missing_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SsdcompareError, match="neither does its folder"):
        resolve_target(str(tmp_path / "nowhere" / "new.img"), size_bytes=MIB)


def test_relative_path_becomes_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    target = resolve_target("./rel.img", size_bytes=MIB)
    assert (target.spec, target.path) == ("./rel.img", str(tmp_path / "rel.img"))


def test_directory_is_refused_with_an_example(tmp_path: Path) -> None:
    with pytest.raises(SsdcompareError, match="is a directory; give a file inside it"):
        resolve_target(str(tmp_path), size_bytes=MIB)


def test_other_file_types_are_refused(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(SsdcompareError, match="neither a block device nor a regular file"):
        resolve_target(str(tmp_path / "pipe"))


def test_resolve_targets_splits_commas(tmp_path: Path) -> None:
    targets = resolve_targets(f"{tmp_path}/a.img,{tmp_path}/b.img", size_bytes=MIB)
    assert [t.name for t in targets] == ["a.img", "b.img"]


def test_the_same_target_twice_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SsdcompareError) as caught:
        resolve_targets(["./a.img", str(tmp_path / "a.img")], size_bytes=MIB)
    message = str(caught.value)
    assert "'./a.img'" in message and repr(str(tmp_path / "a.img")) in message
    assert "list each device once" in message


def test_same_file_names_in_two_folders_get_distinct_names(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    targets = resolve_targets([str(tmp_path / "x/d.img"), str(tmp_path / "y/d.img")], MIB)
    names = [t.name for t in targets]
    assert len(set(names)) == 2
    assert all(name.endswith("d.img") and "/" not in name for name in names)


@pytest.mark.parametrize("specs", ["", " , ", []])
def test_no_devices_is_refused(specs: str | list[str]) -> None:
    with pytest.raises(SsdcompareError, match="no devices given"):
        resolve_targets(specs)


def test_stray_comma_is_named(tmp_path: Path) -> None:
    with pytest.raises(SsdcompareError, match="stray comma"):
        resolve_targets(f"{tmp_path}/a.img,,{tmp_path}/b.img", size_bytes=MIB)


def test_describe() -> None:
    block = Target(spec="nvme0n1", name="nvme0n1", path="/dev/nvme0n1", kind="block",
                   size_bytes=1000 * 1024**3)  # fmt: skip
    assert describe(block) == "nvme0n1 (block device /dev/nvme0n1, 1000 GiB)"
    new = Target(spec="./s.img", name="s.img", path="/t/s.img", kind="file",
                 size_bytes=64 * MIB, exists=False)  # fmt: skip
    assert describe(new) == "s.img (file /t/s.img, 64 MiB, to be created)"
    unknown = block.model_copy(update={"size_bytes": None})
    assert describe(unknown).endswith("size unknown)")


@pytest.mark.root
def test_real_loop_device(tmp_path: Path) -> None:
    with loop_device(tmp_path / "disk.img", 64 * MIB) as device:
        name = Path(device).name
        by_path = resolve_target(device)
        assert (by_path.kind, by_path.name, by_path.path) == ("block", name, device)
        assert by_path.size_bytes == 64 * MIB
        assert name in available_block_devices()
        by_name = resolve_target(name)
        assert by_name.path == device
        assert by_name.size_bytes == 64 * MIB


def test_a_new_file_under_a_dev_folder_is_a_file_target(tmp_path: Path) -> None:
    dev_root = tmp_path / "dev"
    (dev_root / "shm").mkdir(parents=True)
    target = resolve_target(str(dev_root / "shm" / "test.img"), 1 << 20, dev_root=dev_root,
                            sys_root=tmp_path / "sys")  # fmt: skip
    assert target.kind == "file" and not target.exists
    with pytest.raises(SsdcompareError, match="unknown device"):
        resolve_target(str(dev_root / "nvme7n1"), dev_root=dev_root, sys_root=tmp_path / "sys")
