"""End-to-end sweeps: the real fio against real block devices and files made by the tests."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from blockdevs import loop_device, zram_device
from fioprocs import fio_has_read, wait_for
from test_safety_process import start_sweep

from ssdcompare.fio.result.reader import parse_fio_file

SUITES = Path(__file__).parent / "suites"


def ssdcompare(*args: str, check: bool = False, **kwargs) -> subprocess.CompletedProcess:
    """Run the command as a user would, through `python -m ssdcompare`."""
    done = subprocess.run(
        [sys.executable, "-m", "ssdcompare", *args],
        capture_output=True,
        text=True,
        timeout=600,
        **kwargs,
    )
    if check and done.returncode != 0:
        raise AssertionError(f"exit {done.returncode}\n{done.stdout}\n{done.stderr}")
    return done


def run_dirs(results: Path) -> list[Path]:
    return sorted(p for p in (results / "runs").glob("*/*/r*") if ".attempt-" not in p.name)


def statuses(results: Path) -> dict[tuple[str, str, str], str]:
    found = {}
    for folder in run_dirs(results):
        status = json.loads((folder / "status.json").read_text())
        found[(folder.parent.parent.name, folder.parent.name, folder.name)] = status["status"]
    return found


@pytest.mark.serial  # judged on CPU use or timing: runs alone (scripts/test.sh)
@pytest.mark.root
@pytest.mark.fio
def test_sweep_over_a_ram_disk_and_a_loop_device(tmp_path: Path) -> None:
    with zram_device(256 << 20) as zram, loop_device(tmp_path / "loop.img", 256 << 20) as loop:
        out = tmp_path / "results"
        done = ssdcompare(
            "sweep", "--devices", f"{zram},{loop}", "--suite", str(SUITES / "tiny.yaml"),
            "--out", str(out), check=True,
        )  # fmt: skip
        zname, lname = Path(zram).name, Path(loop).name

    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["format_version"] == 2
    # what a resume compares: each target's identity and each planned jobfile's hash
    assert manifest["identities"][lname]["backing_file"].endswith("loop.img")
    assert manifest["identities"][zname]["size_bytes"] == 256 << 20
    assert set(manifest["planned"][zname]) == {"randread-4k-qd1", "randwrite-4k-qd16",
                                               "read-128k-qd4"}  # fmt: skip
    assert manifest["planned"][zname] == manifest["planned"][lname]
    assert manifest["suite"]["name"] == "tiny"
    assert [d["name"] for d in manifest["devices"]] == [zname, lname]
    zinfo, linfo = manifest["devices"]
    assert zinfo["transport"] == "zram" and zinfo["size_bytes"] == 256 << 20
    assert linfo["transport"] == "loop" and linfo["loop_backing_file"].endswith("loop.img")
    assert linfo["loop_direct_io"] is True
    assert manifest["host"]["fio_version"].startswith("fio-3")
    assert manifest["host"]["cpu_threads"] == os.cpu_count()

    folders = run_dirs(out)
    assert len(folders) == 6  # 3 jobs x 2 devices
    for folder in folders:
        status = json.loads((folder / "status.json").read_text())
        assert status["status"] == "ok", status
        text = (folder / "jobfile.fio").read_text()
        assert f"[{folder.parent.name}]" in text
        result = parse_fio_file(folder / "fio.json")
        (job,) = result.jobs
        assert job.ok and job.name == folder.parent.name
        assert sum(d.iops for d in job.directions.values()) > 0
        cpu = json.loads((folder / "cpu.json").read_text())
        # >= 10 Hz over a 2 s job
        assert len(cpu["samples"]) >= 15
    # the terminal summary names every job and device
    for job in ("randread-4k-qd1", "randwrite-4k-qd16", "read-128k-qd4"):
        assert job in done.stdout
    assert zname in done.stdout and lname in done.stdout
    assert str(out) in done.stdout


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow  # one of the longest: started early (tests/conftest.py)
@pytest.mark.root
@pytest.mark.fio
def test_filesystem_on_device_is_never_written_without_the_flag(tmp_path: Path) -> None:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    with loop_device(tmp_path / "fs.img", 64 << 20) as loop:
        subprocess.run(["mkfs.ext4", "-q", "-F", loop], check=True)
        subprocess.run(["mount", loop, str(mnt)], check=True)
        try:
            (mnt / "precious.bin").write_bytes(os.urandom(1 << 20))
            before = _sha256(mnt / "precious.bin")
        finally:
            subprocess.run(["umount", str(mnt)], check=True)

        refused = ssdcompare(
            "sweep", "--devices", loop, "--suite", str(SUITES / "tiny.yaml"),
            "--out", str(tmp_path / "refused"),
        )  # fmt: skip
        assert refused.returncode == 2
        assert "ext4" in refused.stderr and "--destroy-data" in refused.stderr
        assert "Traceback" not in refused.stderr
        assert not (tmp_path / "refused").exists()

        subprocess.run(["mount", loop, str(mnt)], check=True)
        try:
            assert _sha256(mnt / "precious.bin") == before
            mounted = ssdcompare(
                "sweep", "--devices", loop, "--suite", str(SUITES / "tiny.yaml"),
                "--destroy-data", "--out", str(tmp_path / "mounted"),
            )  # fmt: skip
            assert mounted.returncode == 2
            assert "mounted" in mounted.stderr
        finally:
            subprocess.run(["umount", str(mnt)], check=True)

        read_only = ssdcompare(
            "sweep", "--devices", loop, "--suite", str(SUITES / "tiny.yaml"), "--read-only",
            "--out", str(tmp_path / "read-only"), check=True,
        )  # fmt: skip
        assert len(run_dirs(tmp_path / "read-only")) == 2
        subprocess.run(["mount", loop, str(mnt)], check=True)
        try:
            assert _sha256(mnt / "precious.bin") == before
        finally:
            subprocess.run(["umount", str(mnt)], check=True)
        del read_only

        allowed = ssdcompare(
            "sweep", "--devices", loop, "--suite", str(SUITES / "tiny.yaml"),
            "--destroy-data", "--out", str(tmp_path / "allowed"), check=True,
        )  # fmt: skip
        assert "overwriting" in allowed.stderr and "ext4" in allowed.stderr
        assert set(statuses(tmp_path / "allowed").values()) == {"ok"}


@pytest.mark.fio
def test_failing_job_in_the_middle_is_recorded_and_the_sweep_goes_on(tmp_path: Path) -> None:
    out = tmp_path / "results"
    done = ssdcompare(
        "sweep", "--devices", str(tmp_path / "target.img"), "--size", "16m",
        "--suite", str(SUITES / "trim-in-middle.yaml"), "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    found = statuses(out)
    assert found == {
        ("target.img", "randread-4k-qd1", "r1"): "ok",
        ("target.img", "randtrim-4k-qd1", "r1"): "failed",
        ("target.img", "read-64k-qd2", "r1"): "ok",
    }
    failed = json.loads((out / "runs/target.img/randtrim-4k-qd1/r1/status.json").read_text())
    assert failed["exit_code"] == 1 and failed["fio_errno"] == 25
    assert "error 25" in failed["error"]
    assert "FAILED" in done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.slow  # one of the longest: started early (tests/conftest.py)
@pytest.mark.fio  # waits for the second job to read before it stops the sweep: no timing
def test_interrupt_keeps_finished_runs_and_resume_completes(tmp_path: Path) -> None:
    out = tmp_path / "results"
    proc = start_sweep(str(tmp_path / "t.img"), out, "slow-reads.yaml")
    second = out / "runs/t.img/randread-4k-qd8/r1"
    # the second job is measuring: its fio has read a good many blocks (fio writes its logs
    # only when a job ends, so they cannot tell)
    wait_for(lambda: fio_has_read(out, str(second), at_least=8 << 20), "the second job to read")
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "--resume" in stderr and "Traceback" not in stderr
    found = statuses(out)
    assert found[("t.img", "randread-4k-qd1", "r1")] == "ok"
    assert found[("t.img", "randread-4k-qd8", "r1")] == "interrupted"
    assert ("t.img", "read-64k-qd2", "r1") not in found
    partial = parse_fio_file(second / "fio.json")  # fio's partial results are kept
    assert partial.jobs[0].directions["read"].iops > 0
    finished_before = (out / "runs/t.img/randread-4k-qd1/r1/fio.json").read_bytes()

    resumed = ssdcompare("sweep", "--resume", str(out), check=True)
    assert set(statuses(out).values()) == {"ok"}
    assert len(statuses(out)) == 3
    assert (out / "runs/t.img/randread-4k-qd1/r1/fio.json").read_bytes() == finished_before
    assert (out / "runs/t.img/randread-4k-qd8/r1.attempt-1/status.json").exists()
    assert "3/3 runs ok" in resumed.stdout
    # the stopped sweep counted the run it cut short
    assert "1/3 runs ok, 0 failed, 0 skipped, 1 interrupted (--resume runs them again)" in stdout


def test_fio_missing_is_a_clear_error(tmp_path: Path) -> None:
    env = dict(os.environ, SSDCOMPARE_FIO=str(tmp_path / "no-fio-here"))
    done = ssdcompare(
        "sweep", "--devices", str(tmp_path / "t.img"), "--size", "16m", "--suite", "quick",
        env=env,
    )  # fmt: skip
    assert done.returncode == 2
    assert "fio not found" in done.stderr and "apt-get install fio" in done.stderr
    assert "Traceback" not in done.stderr


def test_unknown_device_is_a_clear_error(tmp_path: Path) -> None:
    done = ssdcompare("sweep", "--devices", "nvme9n9", "--suite", "quick")
    assert done.returncode == 2
    assert "unknown device 'nvme9n9'" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.fio
def test_existing_results_are_never_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "results"
    out.mkdir()
    (out / "keep.txt").write_text("measured")
    done = ssdcompare(
        "sweep", "--devices", str(tmp_path / "t.img"), "--size", "16m",
        "--suite", str(SUITES / "tiny.yaml"), "--out", str(out),
    )  # fmt: skip
    assert done.returncode == 2 and "--resume" in done.stderr
    assert (out / "keep.txt").read_text() == "measured"


@pytest.mark.fio
def test_a_target_refusing_writes_skips_later_writes_but_keeps_reading(tmp_path: Path) -> None:
    target = tmp_path / "immutable.img"
    with open(target, "wb") as handle:
        handle.truncate(16 << 20)
    if subprocess.run(["chattr", "+i", str(target)], capture_output=True).returncode != 0:
        pytest.skip("this filesystem has no immutable attribute (chattr +i)")
    try:
        out = tmp_path / "results"
        done = ssdcompare(
            "sweep", "--devices", str(target), "--suite", str(SUITES / "write-refused.yaml"),
            "--out", str(out),
        )  # fmt: skip
    finally:
        subprocess.run(["chattr", "-i", str(target)], check=True)
    assert done.returncode == 1
    assert statuses(out) == {
        ("immutable.img", "randread-4k-qd1", "r1"): "ok",
        ("immutable.img", "randwrite-4k-qd1", "r1"): "failed",
        ("immutable.img", "read-64k-qd2", "r1"): "ok",
        ("immutable.img", "write-64k-qd2", "r1"): "skipped",
    }
    skipped = json.loads((out / "runs/immutable.img/write-64k-qd2/r1/status.json").read_text())
    assert "cannot be written" in skipped["error"]
    assert "SKIPPED" in done.stdout
