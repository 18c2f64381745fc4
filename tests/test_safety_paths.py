"""Paths that lead elsewhere and signatures a probe cannot name: what a sweep refuses, with the
data around it checksummed before and after.

- a device or file carrying two signatures (blkid answers "ambivalent"), or one a probe cannot
  read, holds data: writing to it needs --destroy-data;
- a symbolic link someone else planted in a shared folder is never followed, and a path that
  looks like a file never becomes a block device;
- a file the sweep created (or found) is opened by ssdcompare without following links and
  compared with what it recorded before every job: a file swapped for a link mid-sweep is
  refused, and even a swap between that check and fio's own start cannot redirect fio.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from blockdevs import loop_device
from plantedlinks import plant_link
from plantedlinks import shared_folder as planted_shared_folder
from suitefiles import suite_file

import ssdcompare
from ssdcompare.errors import SsdcompareError
from ssdcompare.results.store import ResultsDir
from ssdcompare.run import jobrun, sweep
from ssdcompare.suite.files import load_suite
from ssdcompare.target.devices import resolve_target
from ssdcompare.target.guard import check_write_safety
from ssdcompare.target.signatures import probe_signatures

SUITES = Path(__file__).parent / "suites"
NOBODY = 65534


def ssdcompare_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ssdcompare", *args], capture_output=True,
                          text=True, timeout=300, check=False)  # fmt: skip


def sha256(path: Path | str) -> str:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def minix_and_squashfs(image: Path, size: int = 32 << 20) -> None:
    """An image carrying two signatures: a minix filesystem and a squashfs superblock."""
    with open(image, "wb") as handle:
        handle.truncate(size)
    subprocess.run(["mkfs.minix", str(image)], check=True, capture_output=True)
    with open(image, "r+b") as handle:
        handle.seek(0)
        handle.write(b"hsqs")
        handle.seek(12)
        handle.write(struct.pack("<I", 131072))
        handle.seek(20)
        handle.write(struct.pack("<HH", 1, 17))
        handle.seek(28)
        handle.write(struct.pack("<HH", 4, 0))


def write_suite(folder: Path) -> Path:
    return suite_file(folder, "writes", "{rw: randwrite, bs: 4k, runtime: 1}",
                      defaults="{size: 8m}")  # fmt: skip


@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A sticky folder anyone may add files to (as /tmp is), reachable by every user."""
    with planted_shared_folder() as folder:
        yield folder


# --- signatures a probe cannot name ---------------------------------------------------------


def test_an_ambivalent_image_is_reported_with_what_is_on_it(tmp_path: Path) -> None:
    image = tmp_path / "two.img"
    minix_and_squashfs(image)
    found = " ".join(probe_signatures(str(image)))
    assert "more than one signature" in found and "minix" in found and "squashfs" in found


def test_an_ambivalent_image_with_a_label_that_is_no_utf8_is_reported_too(tmp_path: Path) -> None:
    image = tmp_path / "two.img"
    with open(image, "wb") as handle:
        handle.truncate(32 << 20)
    subprocess.run([b"mkfs.ext4", b"-q", b"-L", b"d\xe9j\xe0", bytes(image)], check=True)
    minix_and_squashfs(tmp_path / "template.img")  # its squashfs superblock, on the ext4
    with open(image, "r+b") as handle, open(tmp_path / "template.img", "rb") as source:
        handle.write(source.read(32))
    found = " ".join(probe_signatures(str(image)))
    assert "more than one signature" in found and "ext4" in found and "squashfs" in found


@pytest.mark.fio
def test_a_file_with_two_signatures_needs_destroy_data(tmp_path: Path) -> None:
    image = tmp_path / "two.img"
    minix_and_squashfs(image)
    before = sha256(image)
    done = ssdcompare_cli("sweep", "--devices", str(image), "--suite",
                          str(write_suite(tmp_path)), "--out", str(tmp_path / "r"))  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "refusing to write" in done.stderr and "more than one signature" in done.stderr
    assert "--destroy-data" in done.stderr
    assert sha256(image) == before


@pytest.mark.root
@pytest.mark.fio
def test_a_device_with_two_signatures_is_not_taken_for_a_blank_one(tmp_path: Path) -> None:
    with loop_device(tmp_path / "disk.img", 32 << 20, direct_io=False) as loop:
        # loop_device made a fresh image: write the two signatures on the device itself
        minix_and_squashfs(tmp_path / "template.img")
        with open(loop, "r+b") as device, open(tmp_path / "template.img", "rb") as source:
            device.write(source.read(1 << 20))
        before = sha256(loop)
        suite = str(write_suite(tmp_path))
        done = ssdcompare_cli("sweep", "--devices", loop, "--suite", suite, "--out",
                              str(tmp_path / "r"))  # fmt: skip
        assert done.returncode == 2, done.stderr
        assert "more than one signature" in done.stderr and "squashfs" in done.stderr
        assert sha256(loop) == before


def test_leftovers_blkid_passes_over_are_found_by_their_magic_numbers(tmp_path: Path) -> None:
    cases = {
        "an ISO 9660": (32769, b"CD001"),
        "a ZFS pool member": (128 * 1024 + 3072, (0x00BAB10C).to_bytes(8, "little")),
    }
    for words, (offset, magic) in cases.items():
        image = tmp_path / "leftover.img"
        with open(image, "wb") as handle:
            handle.truncate(4 << 20)
            handle.seek(offset)
            handle.write(magic)
        assert any(words in found for found in probe_signatures(str(image))), words


def test_a_probe_that_fails_counts_as_data(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    image = tmp_path / "plain.img"
    image.write_bytes(os.urandom(1 << 20))
    tools = tmp_path / "bin"
    tools.mkdir()
    broken = tools / "blkid"  # a blkid that fails: the one failure real blkid seldom shows
    broken.write_text("#!/bin/sh\necho 'blkid: error: cannot read' >&2\nexit 4\n")
    broken.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tools}:{os.environ['PATH']}")
    found = probe_signatures(str(image))
    assert len(found) == 1 and "could not be checked" in found[0] and "status 4" in found[0]
    target = resolve_target(str(image))
    with pytest.raises(SsdcompareError, match="(?s)could not be checked.*--destroy-data"):
        check_write_safety([target], True, False)
    assert check_write_safety([target], True, True)  # consent covers it


# --- links someone else planted -------------------------------------------------------------


@pytest.mark.root  # plants the link as another user
@pytest.mark.fio
@pytest.mark.parametrize("how", ["writes", "states-empty-read-only"])
def test_a_link_planted_in_a_shared_folder_is_never_followed(
    tmp_path: Path, shared_folder: Path, how: str
) -> None:
    victim = tmp_path / "important.db"
    victim.write_bytes(os.urandom(8 << 20))
    before = sha256(victim)
    plant_link(victim, shared_folder / "test.img")
    if how == "writes":
        extra = ["--suite", str(write_suite(tmp_path))]
    else:
        reads = suite_file(tmp_path, "reads", "{rw: randread, bs: 4k, runtime: 1}")
        extra = ["--suite", str(reads), "--states", "empty"]
    done = ssdcompare_cli("sweep", "--devices", str(shared_folder / "test.img"), "--size", "8m",
                          "--out", str(tmp_path / "r"), *extra)  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "symbolic link to" in done.stderr and str(victim) in done.stderr
    assert "nobody" in done.stderr and "not followed" in done.stderr
    assert sha256(victim) == before
    assert not (tmp_path / "r").exists()


@pytest.mark.root  # plants the link as another user
def test_a_link_another_user_made_in_a_folder_of_theirs_is_never_followed(
    tmp_path: Path, shared_folder: Path
) -> None:
    """Not sticky, not writable by anyone else: the folder is theirs, and so is the link."""
    victim = tmp_path / "important.db"
    victim.write_bytes(os.urandom(1 << 20))
    theirs = shared_folder / "theirs"
    subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                    "mkdir", "-m", "755", str(theirs)], check=True)  # fmt: skip
    plant_link(victim, theirs / "test.img")
    with pytest.raises(SsdcompareError, match="symbolic link to .*owned by nobody"):
        resolve_target(str(theirs / "test.img"), 1 << 20)


@pytest.mark.root
def test_a_link_in_dev_shm_to_a_block_device_is_refused(tmp_path: Path) -> None:
    """/dev/shm holds ordinary files: a path there leading to a device is no device name."""
    with loop_device(tmp_path / "disk.img", 16 << 20) as loop:
        folder = Path(tempfile.mkdtemp(prefix="ssdcompare-test-", dir="/dev/shm"))
        try:
            (folder / "scratch.img").symlink_to(loop)
            with pytest.raises(SsdcompareError, match="leads to the block device"):
                resolve_target(str(folder / "scratch.img"))
        finally:
            shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.root  # plants the link as another user
def test_a_suite_file_through_someone_elses_link_is_never_read(
    tmp_path: Path, shared_folder: Path, run_cli: Callable[..., Any]
) -> None:
    """Read through such a link, a file of root's would be quoted in the suite's errors."""
    secret = tmp_path / "secret.yaml"
    secret.write_text("root_password_hash: secret-token-123\n")
    plant_link(secret, shared_folder / "suite.yaml")
    done = run_cli("plan", "--suite", str(shared_folder / "suite.yaml"), "--devices",
                   str(tmp_path / "t.img"), "--size", "8m")  # fmt: skip
    assert done.exit_code == 2 and "not followed" in done.stderr
    assert "secret-token-123" not in done.stderr + done.stdout
    assert "root_password_hash" not in done.stderr + done.stdout


def test_ones_own_link_is_followed(tmp_path: Path, shared_folder: Path) -> None:
    data = tmp_path / "scratch.img"
    data.write_bytes(bytes(1 << 20))
    (shared_folder / "mine.img").symlink_to(data)  # made by this user: taken as meant
    assert resolve_target(str(shared_folder / "mine.img")).path == str(data)


@pytest.mark.root
def test_a_path_that_looks_like_a_file_never_becomes_a_block_device(tmp_path: Path) -> None:
    with loop_device(tmp_path / "disk.img", 16 << 20) as loop:
        link = tmp_path / "test.img"
        link.symlink_to(loop)
        with pytest.raises(SsdcompareError, match="leads to the block device"):
            resolve_target(str(link))
        suite = str(write_suite(tmp_path))
        done = ssdcompare_cli("sweep", "--devices", str(link), "--suite", suite, "--out",
                              str(tmp_path / "r"))  # fmt: skip
        assert done.returncode == 2 and f"--devices {loop}" in done.stderr


# --- a file swapped after the sweep began ---------------------------------------------------


def three_writes(folder: Path) -> Path:
    return suite_file(folder, "three", *(f"{{rw: randwrite, bs: 4k, id: w{n}, runtime: 1}}"
                                         for n in (1, 2, 3)))  # fmt: skip


def scene(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A folder for the sweep's new file (not there yet), the file's path, and a victim
    holding data that a link swapped in for the file would lead to."""
    folder = tmp_path / "scratch"
    folder.mkdir()
    victim = tmp_path / "victim.db"
    victim.write_bytes(os.urandom(8 << 20))
    return folder, folder / "test.img", victim


@pytest.mark.fio
def test_a_new_file_swapped_for_a_link_mid_sweep_is_not_written(tmp_path: Path) -> None:
    folder, target, victim = scene(tmp_path)
    before = sha256(victim)

    def swap_after_first(progress: sweep.Progress) -> None:
        if progress.state == "ok" and progress.job == "w1":
            target.rename(folder / "moved.img")
            target.symlink_to(victim)

    run = ssdcompare.run_sweep(str(target), suite=str(three_writes(tmp_path)), size="8m",
                               out=tmp_path / "r", progress=swap_after_first,
                               report=False)  # fmt: skip
    statuses = {s.job: s for s in ResultsDir.open(run.path).statuses()}
    assert statuses["w1"].status == "ok"
    for job in ("w2", "w3"):
        assert statuses[job].status == "skipped"
        assert "symbolic link" in (statuses[job].error or "")
    assert sha256(victim) == before
    manifest = json.loads((run.path / "manifest.json").read_text())
    assert list(manifest["created_files"]) == [str(target)]


@pytest.mark.fio
def test_a_swap_after_the_last_check_cannot_redirect_fio(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The worst moment: the file is checked and opened, then swapped for a link just before
    fio starts. fio is given the open file, so it writes that file, never the link's."""
    folder, target, victim = scene(tmp_path)
    before = sha256(victim)
    prepare = jobrun.prepare

    def swap_then_prepare(*args: object, **kwargs: object) -> Path:
        run_folder = prepare(*args, **kwargs)  # type: ignore[arg-type]
        target.rename(folder / "kept.img")
        target.symlink_to(victim)
        return run_folder

    monkeypatch.setattr(jobrun, "prepare", swap_then_prepare)
    suite = suite_file(tmp_path, "one", "{rw: randwrite, bs: 4k, id: w1, runtime: 1}")
    run = ssdcompare.run_sweep(str(target), suite=str(suite), size="8m", out=tmp_path / "r",
                               report=False)  # fmt: skip
    (status,) = ResultsDir.open(run.path).statuses()
    assert status.status == "ok", status.error
    assert sha256(victim) == before
    jobfile = (run.path / "runs" / "test.img" / "w1" / "r1" / "jobfile.fio").read_text()
    assert "filename=/dev/fd/" in jobfile and str(target) in jobfile
    # what fio wrote is in the file the sweep made, now under its other name
    assert (folder / "kept.img").stat().st_size == 8 << 20


@pytest.mark.root  # plants links as another user
@pytest.mark.fio
def test_outputs_never_go_through_someone_elses_link_or_into_a_folder_they_control(
    tmp_path: Path, shared_folder: Path
) -> None:
    """--out, report -o, export -o and plan --out: a link another user made on the way is
    refused before anything is made; a results folder inside a folder of another user's
    (who could rename it and put a link in its place mid-sweep) is refused too."""
    victim = tmp_path / "victim"
    victim.mkdir()
    plant_link(victim, shared_folder / "odir")
    linked = shared_folder / "odir"
    example = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"
    suite = str(SUITES / "tiny.yaml")
    attempts = [
        ("sweep", "--devices", str(tmp_path / "t.img"), "--size", "8m", "--suite", suite,
         "--runtime", "1", "--out", str(linked / "r")),
        ("report", str(example), "-o", str(linked / "report.html")),
        ("export", str(example), "-o", str(linked / "results.csv")),
        ("plan", "--devices", str(tmp_path / "t.img"), "--size", "8m", "--suite", suite,
         "--out", str(linked / "jobs")),
    ]  # fmt: skip
    for args in attempts:
        done = ssdcompare_cli(*args)
        assert done.returncode == 2 and "Traceback" not in done.stderr, (args, done.stderr)
        assert "not followed" in done.stderr, (args, done.stderr)
    assert list(victim.iterdir()) == []
    theirs = shared_folder / "theirs"
    subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                    "mkdir", "-m", "755", str(theirs)], check=True)  # fmt: skip
    (theirs / "r").mkdir()  # made by this user (root may), inside their folder
    inside = ssdcompare_cli("sweep", "--devices", str(tmp_path / "t.img"), "--size", "8m",
                            "--suite", suite, "--runtime", "1",
                            "--out", str(theirs / "r"))  # fmt: skip
    assert inside.returncode == 2 and "someone else controls" in inside.stderr
    assert "belongs to nobody" in inside.stderr


# --- /proc and /sys, also through root's own links --------------------------------------------


def test_dev_stdin_never_leads_to_the_file_behind_it(tmp_path: Path) -> None:
    """/dev/stdin -> /proc/self/fd/0 -> the file on stdin: a name for whatever is open."""
    victim = tmp_path / "victim.img"
    victim.write_bytes(os.urandom(1 << 20))
    with open(victim, "rb") as stdin:
        done = subprocess.run(
            [sys.executable, "-m", "ssdcompare", "plan", "--suite", str(SUITES / "tiny.yaml"),
             "--devices", "/dev/stdin"],
            stdin=stdin, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "leads into /proc (through /dev/stdin -> /proc/self/fd/0" in done.stderr
    assert "safety checks pass" not in done.stdout + done.stderr


@pytest.mark.parametrize(
    "name",
    [
        "/dev/stdin",
        "/dev/stdout",
        "/dev/stderr",
        "/dev/fd/{fd}",
        "/proc/self/fd/{fd}",
        "/proc/self/cwd/t.img",
        "/sys/x.img",
    ],
)
def test_a_path_into_proc_or_sys_is_refused_at_any_step(tmp_path: Path, name: str) -> None:
    victim = tmp_path / "victim.img"
    victim.write_bytes(bytes(1 << 20))
    with open(victim, "rb") as handle:
        path = name.format(fd=handle.fileno())
        with pytest.raises(SsdcompareError, match=r"leads into /(proc|sys)\b|under /(proc|sys)"):
            resolve_target(path, 1 << 20)


def test_a_suite_through_dev_fd_is_refused(tmp_path: Path) -> None:
    suite = tmp_path / "s.yaml"
    suite.write_text((SUITES / "tiny.yaml").read_text())
    with open(suite, "rb") as handle:
        with pytest.raises(SsdcompareError, match="leads into /proc"):
            load_suite(f"/dev/fd/{handle.fileno()}")


@pytest.mark.root  # makes a folder of another user's
@pytest.mark.fio  # a sweep and a plan are among the writers refused
def test_nothing_is_written_into_a_folder_someone_else_controls(
    tmp_path: Path, shared_folder: Path
) -> None:
    """Whoever owns a folder can exchange it for a link between any check and a write: a
    report, an export, jobfiles, a results folder or a kept frame is never written there,
    and a refused --out makes no folder there first."""
    theirs = shared_folder / "theirs"
    subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                    "mkdir", "-m", "755", str(theirs)], check=True)  # fmt: skip
    example = tmp_path / "results"
    shutil.copytree(Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop",
                    example, ignore=shutil.ignore_patterns(".cache"))  # fmt: skip
    suite = str(SUITES / "tiny.yaml")
    for args in (("report", str(example), "-o", str(theirs / "report.html")),
                 ("export", str(example), "-o", str(theirs / "results.csv")),
                 ("plan", "--devices", str(tmp_path / "t.img"), "--size", "8m", "--suite", suite,
                  "--out", str(theirs / "jobs")),
                 ("sweep", "--devices", str(tmp_path / "t.img"), "--size", "8m", "--suite",
                  suite, "--runtime", "1", "--out", str(theirs / "a" / "b"))):  # fmt: skip
        done = ssdcompare_cli(*args)
        assert done.returncode == 2 and "belongs to nobody" in done.stderr, (args, done.stderr)
    assert list(theirs.iterdir()) == []
    # a results folder of theirs is read, and its frame kept nowhere
    shutil.copytree(example, theirs / "r", ignore=shutil.ignore_patterns(".cache"))
    frame = ssdcompare.load(theirs / "r")
    assert len(frame) > 0 and not (theirs / "r" / ".cache").exists()
