"""The safety guard: fake sysfs/procfs trees for each finding, and real loop devices."""

from __future__ import annotations

import hashlib
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest
from blockdevs import loop_device
from fioprocs import wait_for

from ssdcompare.errors import SsdcompareError
from ssdcompare.target.devices import Target, resolve_target
from ssdcompare.target.guard import check_write_safety, inspect_target
from ssdcompare.target.identity import identify, new_signatures
from ssdcompare.target.signatures import probe_signatures


def fake_tree(
    tmp_path: Path,
    partitions: int = 0,
    mounts: str = "",
    swaps: str = "",
    holders: list[str] | None = None,
    name: str = "sdz",
) -> tuple[Path, Path]:
    """A fake /sys and /proc with disk `name` (8:0) and its partitions (8:1, 8:2, ...)."""
    sys_root, proc_root = tmp_path / "sys", tmp_path / "proc"
    disk = sys_root / "devices" / name
    disk.mkdir(parents=True)
    (disk / "dev").write_text("8:0\n")
    (disk / "holders").mkdir()
    for holder in holders or []:
        (disk / "holders" / holder).mkdir()
    block = sys_root / "class" / "block"
    block.mkdir(parents=True)
    (block / name).symlink_to(disk)
    for index in range(1, partitions + 1):
        part = disk / f"{name}{index}"
        part.mkdir()
        (part / "partition").write_text(f"{index}\n")
        (part / "dev").write_text(f"8:{index}\n")
        (part / "holders").mkdir()
        (block / part.name).symlink_to(part)
    (proc_root / "self").mkdir(parents=True)
    (proc_root / "self" / "mountinfo").write_text(mounts)
    (proc_root / "swaps").write_text("Filename Type Size Used Priority\n" + swaps)
    return sys_root, proc_root


TARGET = Target(spec="sdz", name="sdz", path="/dev/sdz", kind="block", size_bytes=1 << 30)


def no_signature(path: str) -> list[str]:
    return []


def check(tmp_path: Path, destroy: bool, probe=no_signature, **tree) -> list:
    sys_root, proc_root = fake_tree(tmp_path, **tree)
    return check_write_safety([TARGET], True, destroy, sys_root, proc_root, probe)


def test_a_blank_device_may_be_written(tmp_path: Path) -> None:
    assert check(tmp_path, destroy=False) == []


def test_mounted_partition_is_refused_even_with_the_flag(tmp_path: Path) -> None:
    mounts = "36 25 8:2 / /home rw,relatime shared:1 - ext4 /dev/sdz2 rw\n"
    with pytest.raises(SsdcompareError) as err:
        check(tmp_path, destroy=True, partitions=2, mounts=mounts)
    assert "sdz2 is mounted at /home" in str(err.value)
    assert "--read-only" in str(err.value)


def test_swap_and_holders_are_refused_even_with_the_flag(tmp_path: Path) -> None:
    with pytest.raises(SsdcompareError, match="sdz1 is in use as swap"):
        check(tmp_path / "a", destroy=True, partitions=1,
              swaps="/dev/sdz1 partition 1024 0 -2\n")  # fmt: skip
    with pytest.raises(SsdcompareError, match="in use by dm-0"):
        check(tmp_path / "b", destroy=True, holders=["dm-0"])


def test_the_root_disk_is_refused(tmp_path: Path) -> None:
    mounts = "22 1 8:1 / / rw,relatime - ext4 /dev/sdz1 rw\n"
    sys_root, proc_root = fake_tree(tmp_path, partitions=1, mounts=mounts)
    kinds = {f.kind for f in inspect_target(TARGET, sys_root, proc_root, no_signature)}
    assert {"mounted", "root", "partitions"} <= kinds


def test_partitions_and_signatures_need_the_flag(tmp_path: Path) -> None:
    def ext4(path: str) -> list[str]:
        return ["an ext4 filesystem (UUID 1234) [blkid]"]

    with pytest.raises(SsdcompareError) as err:
        check(tmp_path / "a", destroy=False, probe=ext4, partitions=1)
    text = str(err.value)
    assert "sdz has partitions: sdz1" in text and "ext4" in text and "--destroy-data" in text
    overridden = check(tmp_path / "b", destroy=True, probe=ext4, partitions=1)
    assert {f.kind for f in overridden} == {"partitions", "signature"}


def test_reads_and_files_are_not_guarded(tmp_path: Path) -> None:
    mounts = "36 25 8:0 / /data rw - ext4 /dev/sdz rw\n"
    sys_root, proc_root = fake_tree(tmp_path, mounts=mounts)
    assert check_write_safety([TARGET], False, False, sys_root, proc_root, no_signature) == []
    file_target = Target(spec="x", name="x", path=str(tmp_path / "x"), kind="file",
                         size_bytes=1 << 20)  # fmt: skip
    assert check_write_safety([file_target], True, False, sys_root, proc_root) == []


def test_every_target_is_checked_before_refusing(tmp_path: Path) -> None:
    mounts = "36 25 8:0 / /data rw - ext4 /dev/sdz rw\n"
    sys_root, proc_root = fake_tree(tmp_path, mounts=mounts)
    other = TARGET.model_copy(update={"name": "sdz-again"})
    with pytest.raises(SsdcompareError) as err:
        check_write_safety([TARGET, other], True, False, sys_root, proc_root, no_signature)
    assert str(err.value).count("is mounted at /data") == 2


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.root
def test_real_loop_devices(tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    with loop_device(tmp_path / "blank.img", 32 << 20) as blank:
        assert check_write_safety([resolve_target(blank)], True, False) == []
    with loop_device(tmp_path / "fs.img", 32 << 20) as loop:
        subprocess.run(["mkfs.ext4", "-q", "-L", "precious", loop], check=True)
        subprocess.run(["mount", loop, str(mnt)], check=True)
        try:
            (mnt / "data.bin").write_bytes(os.urandom(256 << 10))
            target = resolve_target(loop)
            with pytest.raises(SsdcompareError, match="is mounted at"):
                check_write_safety([target], True, True)
            before = sha256(mnt / "data.bin")
        finally:
            subprocess.run(["umount", str(mnt)], check=True)
        with pytest.raises(SsdcompareError) as err:
            check_write_safety([target], True, False)
        assert "ext4 filesystem" in str(err.value) and "LABEL precious" in str(err.value)
        assert "--destroy-data" in str(err.value)
        allowed = check_write_safety([target], True, True)
        assert [f.kind for f in allowed] == ["signature"]
        subprocess.run(["mount", loop, str(mnt)], check=True)
        try:
            assert sha256(mnt / "data.bin") == before
        finally:
            subprocess.run(["umount", str(mnt)], check=True)


@pytest.mark.root
def test_real_partition_table(tmp_path: Path) -> None:
    image = tmp_path / "parts.img"
    with open(image, "wb") as handle:
        handle.truncate(16 << 20)
        entry = bytes([0, 0, 2, 0, 0x83, 0, 0, 0]) + (2048).to_bytes(4, "little") + (
            8192).to_bytes(4, "little")  # fmt: skip
        handle.seek(446)
        handle.write(entry)
        handle.seek(510)
        handle.write(b"\x55\xaa")
    device = subprocess.run(["losetup", "--find", "--show", "--partscan", str(image)],
                            capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    try:
        subprocess.run(["udevadm", "settle"], check=False, capture_output=True)
        findings = inspect_target(resolve_target(device))
        details = " ".join(f.detail for f in findings)
        assert "partition table" in details
        with pytest.raises(SsdcompareError, match="--destroy-data"):
            check_write_safety([resolve_target(device)], True, False)
    finally:
        subprocess.run(["losetup", "--detach", device], check=False)


def blkid_names_nothing(path: str) -> bool:
    done = subprocess.run(["blkid", "-p", path], capture_output=True, check=False)
    return done.returncode == 2


def refused_then_overridden(device: str, words: str) -> None:
    """Writing needs --destroy-data because of `words`; with it, the finding is overridden."""
    target = resolve_target(device)
    with pytest.raises(SsdcompareError) as err:
        check_write_safety([target], True, False)
    assert words in str(err.value) and "--destroy-data" in str(err.value)
    assert [f.kind for f in check_write_safety([target], True, True)] == ["signature"]


@pytest.mark.root
@pytest.mark.parametrize("block_size", [1024, 2048, 4096])
def test_an_ext4_whose_primary_superblock_was_zeroed_is_data(
    tmp_path: Path, block_size: int
) -> None:
    # 160 MiB (sparse): past the 4 KiB filesystem's first backup at 128 MiB
    with loop_device(tmp_path / "fs.img", 160 << 20) as loop:
        subprocess.run(["mkfs.ext4", "-q", "-b", str(block_size), loop], check=True)
        at_start = identify(resolve_target(loop)).signatures
        with open(loop, "r+b") as device:
            device.seek(1024)
            device.write(bytes(1024))  # the primary superblock, wherever the block size
            os.fsync(device.fileno())
        assert blkid_names_nothing(loop)
        backup = {1024: 8193, 2048: 16384, 4096: 32768}[block_size]
        found = probe_signatures(loop)
        assert len(found) == 1 and "backup superblock" in found[0], found
        assert f"e2fsck -b {backup} -B {block_size}" in found[0]
        # e2fsck agrees that the filesystem is there to recover
        checked = subprocess.run(["e2fsck", "-n", "-b", str(backup), "-B", str(block_size),
                                  loop], capture_output=True, text=True, check=False)  # fmt: skip
        assert checked.returncode in (0, 1, 4) and "Bad magic" not in checked.stdout
        refused_then_overridden(loop, "backup superblock")
        # a sweep that writes over the start of an ext4 it was allowed to destroy uncovers
        # the backup: nothing someone made since
        assert new_signatures(at_start, identify(resolve_target(loop)).signatures) == []
        assert new_signatures([], found) == found


@pytest.mark.root
def test_a_gpt_whose_start_was_zeroed_is_data(tmp_path: Path) -> None:
    with loop_device(tmp_path / "gpt.img", 16 << 20) as loop:
        subprocess.run(["sfdisk", "-q", "--no-reread", loop], input="label: gpt\nsize=4M\n",
                       text=True, check=True)  # fmt: skip
        at_start = identify(resolve_target(loop)).signatures
        with open(loop, "r+b") as device:
            device.write(bytes(1 << 20))  # protective MBR, primary header and entries
            os.fsync(device.fileno())
        assert blkid_names_nothing(loop)
        found = probe_signatures(loop)
        assert len(found) == 1 and "GPT partition table's backup header" in found[0], found
        refused_then_overridden(loop, "backup header")
        assert new_signatures(at_start, identify(resolve_target(loop)).signatures) == []


@pytest.mark.root
@pytest.mark.parametrize("start_mib", [1, 2])
def test_a_filesystem_behind_a_wiped_partition_table_is_data(
    tmp_path: Path, start_mib: int
) -> None:
    """wipefs -a on a disk removes its partition table; the filesystem in its partition, at
    1 MiB (or 2 MiB, behind a BIOS boot partition), is whole, and mounting it again needs only
    a new table."""
    start = start_mib << 20
    with loop_device(tmp_path / "disk.img", 32 << 20) as loop:
        table = f"label: gpt\nstart={start // 512}\n"
        subprocess.run(["sfdisk", "-q", "--no-reread", loop], input=table, text=True,
                       check=True)  # fmt: skip
        subprocess.run(["mkfs.ext4", "-q", "-F", "-E", f"offset={start}", loop, "16M"],
                       check=True)  # fmt: skip
        subprocess.run(["wipefs", "-q", "-a", loop], check=True)
        assert blkid_names_nothing(loop)
        found = probe_signatures(loop)
        assert any("ext4 filesystem" in f and f"at {start_mib} MiB" in f for f in found), found
        refused_then_overridden(loop, f"at {start_mib} MiB")


def test_random_data_where_backups_would_be_is_no_signature(tmp_path: Path) -> None:
    """Only the magic numbers in place, the fields around them random: no backup."""
    noise = random.Random(7)
    image = tmp_path / "noise.img"
    size = 40 << 20
    with open(image, "wb") as handle:
        handle.truncate(size)
        for block_size, block in ((1024, 8193), (2048, 16384)):
            chunk = bytearray(noise.randbytes(1024))
            chunk[56:58] = b"\x53\xef"
            handle.seek(block * block_size)
            handle.write(chunk)
        tail = bytearray(noise.randbytes(4096))
        tail[:8] = tail[-512 : -512 + 8] = b"EFI PART"  # a 4 KiB and a 512-byte last sector
        handle.seek(size - 4096)
        handle.write(tail)
    assert probe_signatures(str(image)) == []


def test_magic_numbers_without_blkid(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    image = tmp_path / "ext.img"
    data = bytearray(128 << 10)
    data[1024 + 56 : 1024 + 58] = b"\x53\xef"
    image.write_bytes(bytes(data))
    monkeypatch.setenv("PATH", str(tmp_path))  # no blkid on PATH
    monkeypatch.setattr("ssdcompare.target.signatures.Path.exists", lambda self: False)
    assert probe_signatures(str(image)) == ["an ext2/3/4 filesystem [magic numbers]"]


@pytest.mark.root
def test_the_root_disk_of_this_machine_is_refused() -> None:
    root_device = subprocess.run(["findmnt", "-n", "-o", "SOURCE", "/"], capture_output=True,
                                 text=True, check=False).stdout.strip()  # fmt: skip
    if not root_device.startswith("/dev/"):
        pytest.skip(f"/ is on {root_device or 'an unknown source'}, not a block device")
    with pytest.raises(SsdcompareError, match="never written|holds the system"):
        check_write_safety([resolve_target(root_device)], True, True)


def test_a_read_only_device_is_refused_for_writes(tmp_path: Path) -> None:
    sys_root, proc_root = fake_tree(tmp_path)
    (sys_root / "devices" / "sdz" / "ro").write_text("1\n")
    with pytest.raises(SsdcompareError, match="sdz is read-only"):
        check_write_safety([TARGET], True, True, sys_root, proc_root, no_signature)
    assert check_write_safety([TARGET], False, False, sys_root, proc_root, no_signature) == []


def test_a_file_mounted_without_a_loop_device_is_refused(tmp_path: Path) -> None:
    image = tmp_path / "ro.img"
    image.write_bytes(bytes(1 << 20))
    mounts = f"40 25 0:77 / /mnt/ro ro,relatime shared:2 - erofs {image} ro\n"
    sys_root, proc_root = fake_tree(tmp_path / "tree", mounts=mounts)
    target = Target(spec=str(image), name="ro.img", path=str(image), kind="file",
                    size_bytes=1 << 20)  # fmt: skip
    with pytest.raises(SsdcompareError, match=f"{image} is mounted at /mnt/ro"):
        check_write_safety([target], True, True, sys_root, proc_root, no_signature)


def holders_of(program: str, data: Path, ready: Path) -> str:
    """What the guard says of file `data` while a Python process runs `program`, which
    creates `ready` once it holds the file."""
    holder = subprocess.Popen([sys.executable, "-c", program])
    try:
        wait_for(lambda: ready.exists() or holder.poll() is not None, "the holder to be ready")
        assert holder.poll() is None, "the holder ended early"
        with pytest.raises(SsdcompareError) as err:
            check_write_safety([resolve_target(str(data))], True, False)
        message = str(err.value)
    finally:
        holder.kill()
        holder.wait()
    assert f"is open in process {holder.pid}" in message
    return message


def test_a_file_open_in_a_thread_with_its_own_file_table_is_in_use(tmp_path: Path) -> None:
    data, ready = tmp_path / "held.bin", tmp_path / "ready"
    data.write_bytes(bytes(1 << 20))
    program = (
        "import ctypes, os, threading, time\n"
        "def hold():\n"
        "    # a file table of this thread's own: the process's fd folder does not list it\n"
        "    assert ctypes.CDLL(None, use_errno=True).unshare(0x400) == 0  # CLONE_FILES\n"
        f"    fd = os.open({str(data)!r}, os.O_RDWR)\n"
        f"    open({str(ready)!r}, 'w').close()\n"
        "    time.sleep(120)\n"
        "threading.Thread(target=hold).start()\n"
        "time.sleep(120)\n"
    )
    holders_of(program, data, ready)


def test_a_file_mapped_by_a_thread_whose_main_thread_ended_is_in_use(tmp_path: Path) -> None:
    data, ready = tmp_path / "held.bin", tmp_path / "ready"
    data.write_bytes(bytes(1 << 20))
    program = (
        "import ctypes, mmap, os, threading, time\n"
        "def hold():\n"
        f"    with open({str(data)!r}, 'r+b') as handle:\n"
        "        view = mmap.mmap(handle.fileno(), 0)\n"
        "    # closed: only the memory map holds it; and the main thread, whose maps the\n"
        "    # process's own folder shows, ends (that folder's maps then read empty)\n"
        "    while open('/proc/self/maps').read():\n"
        "        time.sleep(0.01)\n"
        f"    open({str(ready)!r}, 'w').close()\n"
        "    time.sleep(120)\n"
        "    view.close()\n"
        "threading.Thread(target=hold).start()\n"
        "ctypes.CDLL(None).pthread_exit(None)\n"
    )
    holders_of(program, data, ready)


@pytest.mark.parametrize("key", [True, False])
def test_a_file_holding_data_says_when_a_new_one_would_need_no_consent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, key: bool
) -> None:
    """A file that holds data needs --destroy-data; the refusal says a new file ssdcompare
    makes needs none, and, where this user has no key to mark files with, that it needs one
    first (a home or cache folder it can write to)."""
    from ssdcompare import userkey

    if not key:
        monkeypatch.setattr(userkey, "_key_folder", lambda: None)
    else:
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    path = tmp_path / "notes.img"
    path.write_bytes(b"someone's notes\n" * 4096)
    with pytest.raises(SsdcompareError, match="holds data") as refused:
        check_write_safety([resolve_target(str(path))], True, False)
    assert "needs no consent to write it again" in str(refused.value)
    assert ("no key of yours" in str(refused.value)) is not key
