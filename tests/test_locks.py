"""Lock files: the folder holding them is writable by us alone, so no other local user can hold
a target's lock (and so keep every sweep off it) or plant a link in a lock file's place."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from ssdcompare.errors import SsdcompareError
from ssdcompare.target import locks
from ssdcompare.target.locks import Lock, lock_dir_name, target_lock_paths

OTHER_USER = 65534  # `nobody`


@pytest.fixture
def bases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """Two places for the lock folder, tried in order (as /run/lock, then the temp folder)."""
    first, second = tmp_path / "run-lock", tmp_path / "tmp"
    first.mkdir()
    second.mkdir()
    monkeypatch.setattr(locks, "LOCK_DIRS", (first, second))
    return first, second


def writable_by_others(path: Path) -> bool:
    return bool(path.stat().st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def test_the_lock_folder_and_its_files_are_ours_alone(bases: tuple[Path, Path]) -> None:
    path = target_lock_paths(str(bases[0] / "t.img"))[0]
    folder = bases[0] / lock_dir_name()
    assert path.parent == folder
    assert folder.stat().st_uid == os.geteuid() and not writable_by_others(folder)
    lock = Lock(path, "t.img", "pid 1, test")
    try:
        assert path.stat().st_uid == os.geteuid()
        assert path.stat().st_mode & 0o077 == 0  # nobody else can open it to hold the lock
    finally:
        lock.release()


def test_a_lock_folder_of_ours_that_others_can_write_to_is_closed(
    bases: tuple[Path, Path],
) -> None:
    folder = bases[0] / lock_dir_name()
    folder.mkdir()
    folder.chmod(0o1777)  # as older versions made it
    assert target_lock_paths(str(bases[0] / "t.img"))[0].parent == folder
    assert not writable_by_others(folder)


@pytest.mark.root  # gives files to another user
def test_lock_files_others_put_in_our_folder_are_removed(bases: tuple[Path, Path]) -> None:
    path = target_lock_paths(str(bases[0] / "t.img"))[0]
    path.parent.chmod(0o1777)  # as older versions made it
    path.write_text("held by someone else")
    os.chown(path, OTHER_USER, OTHER_USER)
    assert target_lock_paths(str(bases[0] / "t.img"))[0] == path
    assert not path.exists()
    Lock(path, "t.img", "pid 1, test").release()


@pytest.mark.root  # gives files to another user
def test_a_lock_folder_owned_by_another_user_is_not_used(bases: tuple[Path, Path]) -> None:
    first, second = bases
    planted = first / lock_dir_name()
    planted.mkdir()
    planted.chmod(0o777)
    os.chown(planted, OTHER_USER, OTHER_USER)
    assert target_lock_paths(str(first / "t.img"))[0].parent == second / lock_dir_name()
    taken = second / lock_dir_name()
    taken.rename(second / "ours")
    taken.mkdir(mode=0o755)
    os.chown(taken, OTHER_USER, OTHER_USER)
    with pytest.raises(SsdcompareError) as caught:
        target_lock_paths(str(first / "t.img"))
    message = str(caught.value)
    assert "no safe folder for lock files" in message
    assert f"{planted} belongs to user id {OTHER_USER}" in message
    assert f"{taken} belongs to user id {OTHER_USER}" in message


def test_a_link_in_the_lock_folder_s_place_is_not_followed(bases: tuple[Path, Path]) -> None:
    first, second = bases
    elsewhere = first / "elsewhere"
    elsewhere.mkdir()
    (first / lock_dir_name()).symlink_to(elsewhere)
    assert target_lock_paths(str(first / "t.img"))[0].parent == second / lock_dir_name()


def test_a_lock_file_lives_only_while_its_lock_is_held(bases: tuple[Path, Path]) -> None:
    path = target_lock_paths(str(bases[0] / "t.img"))[0]
    first = Lock(path, "t.img", "pid 1, test")
    with pytest.raises(SsdcompareError, match=r"in use by another ssdcompare sweep \(pid 1"):
        Lock(path, "t.img", "pid 2, test")
    first.release()
    assert not path.exists()  # none pile up
    second = Lock(path, "t.img", "pid 2, test")  # free again
    second.release()
    assert not path.exists()


def holder_process(path: Path) -> subprocess.Popen[str]:
    """Another process holding the lock at `path`, as a running sweep does."""
    code = ("import sys, time\nfrom pathlib import Path\n"
            "from ssdcompare.target.locks import Lock\n"
            "Lock(Path(sys.argv[1]), 't', f'pid {__import__(\"os\").getpid()}, test')\n"
            "print('held', flush=True)\ntime.sleep(120)\n")  # fmt: skip
    process = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE,
                               text=True)  # fmt: skip
    assert process.stdout is not None and process.stdout.readline() == "held\n"
    return process


def test_a_killed_sweep_s_lock_files_are_removed_when_the_next_sweep_starts(
    bases: tuple[Path, Path], tmp_path: Path
) -> None:
    killed_path, alive_path = (target_lock_paths(str(tmp_path / n))[0] for n in ("a", "b"))
    killed, alive = holder_process(killed_path), holder_process(alive_path)
    try:
        killed.kill()  # as SIGKILL or the OOM killer end a sweep: no chance to clean up
        killed.wait(30)
        assert killed_path.exists()
        folder = killed_path.parent
        others = [folder / "ceiling-ram-disk-1-2.json", folder / "notes.lock"]
        for path in others:
            path.write_text("not a lock file\n")
        results = tmp_path / "results"
        results.mkdir()
        with locks.holding([], results, "results r"):
            assert not killed_path.exists()
            assert alive_path.exists()  # a live sweep's lock stays, and stays held
            with pytest.raises(SsdcompareError, match="in use by another ssdcompare sweep"):
                Lock(alive_path, "b", "pid 2, test")
            assert all(path.exists() for path in others)  # only lock files are ours to judge
    finally:
        alive.kill()
        alive.wait(30)
