"""The host's ceiling (`sweep --ceiling`): each reading job once on a zram RAM disk the sweep
makes and removes, with the sweep's accepted options; a RAM disk left by a sweep that was
killed is removed by the next sweep, and nothing else is."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import psutil
import pytest
from blockdevs import loop_device, zram_device
from fioprocs import DEADLINE_S, fio_has_read, fio_processes, wait_for
from suitefiles import suite_file

import ssdcompare
from ssdcompare.results.store import CEILING_RAM_DISK, ResultsDir
from ssdcompare.run.ramdisk import RECORD_PREFIX, RamDiskRecord, remove_leftovers
from ssdcompare.target.locks import own_folder

SUITES = Path(__file__).parent / "suites"

RunCli = Callable[..., object]  # the run_cli fixture: exit_code, stdout, stderr


def ceiling_iops(results: Path, job: str) -> float | None:
    return ResultsDir.open(results).ceiling_iops(job)


def assert_removed(results: Path) -> None:
    """The RAM disk the sweep recorded in `results` is gone, and so is its record."""
    record = RamDiskRecord.model_validate_json((results / CEILING_RAM_DISK).read_text())
    assert record.removed and record.removed_by == "its sweep"
    try:  # a device of that name now (another test's) is another device
        assert os.stat(f"/sys/devices/virtual/block/{record.name}").st_ino != record.sysfs_inode
    except FileNotFoundError:
        pass
    assert not (own_folder() / f"{RECORD_PREFIX}{record.index}-{record.sysfs_inode}.json").exists()


@pytest.mark.root
@pytest.mark.fio
def test_the_ceiling_runs_with_the_accepted_options_and_so_does_its_resume(
    tmp_path: Path, run_cli: RunCli
) -> None:
    suite = suite_file(tmp_path, "delayed",
                       "{rw: randread, bs: 4k, iodepth: 1, extra: {startdelay: 0}}",
                       "{rw: randread, bs: 4k, iodepth: 2, extra: {bssplit: 4k/50:8k/50}}",
                       defaults="{runtime: 1, size: 16m}")  # fmt: skip
    jobs = ["randread-4k-qd1+startdelay0", "randread-4k-qd2+bssplit4k.50.8k.50"]
    out = tmp_path / "r"
    with zram_device(64 << 20) as device:
        done = run_cli("sweep", "--devices", device, "--suite", str(suite), "--ceiling",
                       "--allow-option", "startdelay,bssplit", "--out", str(out))  # fmt: skip
        assert done.exit_code == 0, done  # type: ignore[attr-defined]
        assert sorted(p.name for p in (out / "ceiling").iterdir()) == jobs
        for job in jobs:
            assert (ceiling_iops(out, job) or 0) > 0, job
        assert "startdelay=0" in (out / "ceiling" / jobs[0] / "jobfile.fio").read_text()
        # a resume measures a missing ceiling with the same options
        (out / "ceiling" / jobs[1] / "status.json").unlink()
        again = run_cli("sweep", "--resume", str(out))
        assert again.exit_code == 0, again  # type: ignore[attr-defined]
        assert (ceiling_iops(out, jobs[1]) or 0) > 0
        assert "bssplit=4k/50:8k/50" in (out / "ceiling" / jobs[1] / "jobfile.fio").read_text()
    assert_removed(out)


def sha256_of(device: str, size: int) -> str:
    with open(device, "rb") as handle:
        return hashlib.sha256(handle.read(size)).hexdigest()


def fill_with_data(device: str, size: int) -> str:
    with open(device, "r+b") as handle:
        handle.write(os.urandom(size))
        handle.flush()
        os.fsync(handle.fileno())
    return sha256_of(device, size)


@pytest.mark.serial  # counts the machine's block devices: none may come or go beside it
@pytest.mark.root
@pytest.mark.fio
def test_a_ram_disk_a_killed_ceiling_sweep_left_is_removed_by_the_next_sweep(
    tmp_path: Path, run_cli: RunCli
) -> None:
    reads = suite_file(tmp_path, "reads", "{rw: randread, bs: 4k, iodepth: 1}",
                       defaults="{runtime: 1, size: 16m}")  # fmt: skip
    out = tmp_path / "killed"
    with loop_device(tmp_path / "loop.img", 64 << 20) as loop, \
            zram_device(16 << 20) as mine:  # fmt: skip
        digest = fill_with_data(mine, 4 << 20)
        proc = subprocess.Popen(
            [sys.executable, "-m", "ssdcompare", "sweep", "--devices", loop, "--ceiling",
             "--suite", str(SUITES / "long-read.yaml"), "--out", str(out)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            wait_for(lambda: fio_has_read(out, where="ceiling"), "the ceiling run to read")
        finally:
            proc.kill()
            proc.wait(timeout=DEADLINE_S)
        record = json.loads((out / CEILING_RAM_DISK).read_text())
        left = record["name"]
        assert record["maker_pid"] == proc.pid and not record["removed"]
        # fio dies with its sweep (a parent-death signal); the RAM disk stays: nothing else
        # would remove it
        wait_for(lambda: not fio_processes(out), "fio to end with its sweep")
        assert Path(f"/sys/block/{left}").exists() and left != Path(mine).name
        # the next sweep, of any kind, removes it, and nothing else
        done = run_cli("sweep", "--devices", loop, "--suite", str(reads), "--out",
                       str(tmp_path / "next"))  # fmt: skip
        assert done.exit_code == 0, done  # type: ignore[attr-defined]
        assert not Path(f"/sys/block/{left}").exists()
        record = json.loads((out / CEILING_RAM_DISK).read_text())
        assert record["removed"]
        if record["removed_by"] == f"a later sweep (pid {os.getpid()})":  # not a test beside
            assert f"note: removed the RAM disk {left}" in done.stderr  # type: ignore[attr-defined]
        assert sha256_of(mine, 4 << 20) == digest
    assert not list(own_folder().glob(f"{RECORD_PREFIX}{record['index']}-*"))


def forge(device: str, **changes: object) -> Path:
    """A record in the lock folder naming `device` as a dead sweep's RAM disk."""
    name = Path(device).name
    sysfs = Path("/sys/devices/virtual/block") / name
    record = RamDiskRecord(
        name=name,
        index=int(name.removeprefix("zram")),
        sysfs_inode=sysfs.stat().st_ino,
        disksize=int((sysfs / "disksize").read_text()),
        maker_pid=os.getpid(),
        maker_started=0.0,
    ).model_copy(update=changes)  # a start time of 0: the pid is another process's now
    path = own_folder() / f"{RECORD_PREFIX}{record.index}-{record.sysfs_inode}.json"
    path.write_text(record.model_dump_json())
    return path


@pytest.mark.root
def test_a_leftover_is_removed_only_when_it_is_the_device_recorded_unused_and_empty() -> None:
    with zram_device(16 << 20) as full, zram_device(16 << 20) as busy, \
            zram_device(16 << 20) as other, zram_device(16 << 20) as alive:  # fmt: skip
        digest = fill_with_data(full, 1 << 20)
        records = [
            forge(full),  # holds data nobody recorded writing
            forge(other, sysfs_inode=1),  # a later device of the same name
            forge(alive, maker_started=psutil.Process().create_time()),  # its maker runs
        ]
        held = forge(busy)
        try:
            with open(busy, "rb") as handle:  # open in another process: in use
                holder = subprocess.Popen(["sleep", "600"], stdin=handle)
            try:
                said = remove_leftovers()
            finally:
                holder.kill()
                holder.wait()
            assert Path(f"/sys/block/{Path(busy).name}").exists()
            assert any(Path(busy).name in line and "in use" in line for line in said), said
            assert any(Path(full).name in line and "bytes of data" in line for line in said)
            for device in (full, other, alive):
                assert Path(f"/sys/block/{Path(device).name}").exists()
            assert sha256_of(full, 1 << 20) == digest
            assert not records[1].exists()  # named no device of ours: gone
            assert records[2].exists()
            # closed, the leftover goes (here or in a sweep beside this test)
            remove_leftovers()
            assert not Path(f"/sys/block/{Path(busy).name}").exists() and not held.exists()
        finally:
            for path in [*records, held]:
                path.unlink(missing_ok=True)


@pytest.mark.root
@pytest.mark.fio
def test_a_curves_points_share_the_ceiling_of_its_unpaced_run(
    tmp_path: Path, run_cli: RunCli
) -> None:
    suite = suite_file(tmp_path, "curve", "{rw: randread, bs: 4k, iodepth: 4, curve: [50]}",
                       defaults="{runtime: 1, size: 16m}")  # fmt: skip
    out = tmp_path / "r"
    with zram_device(64 << 20) as device:
        done = run_cli("sweep", "--devices", device, "--suite", str(suite), "--ceiling",
                       "--out", str(out))  # fmt: skip
        assert done.exit_code == 0, done  # type: ignore[attr-defined]
    # the host's ceiling for the job is measured once, unpaced: a paced run is no ceiling
    assert [p.name for p in (out / "ceiling").iterdir()] == ["randread-4k-qd4@max"]
    frame = ssdcompare.load(out).set_index("job")
    ceiling = ceiling_iops(out, "randread-4k-qd4@max")
    assert ceiling and frame.loc["randread-4k-qd4@50pct", "ceiling_iops"] == ceiling
    point = frame.loc["randread-4k-qd4@50pct"]
    assert point["ceiling_pct"] == pytest.approx(point["iops"] / ceiling * 100)
    assert_removed(out)
