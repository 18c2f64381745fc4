"""A results folder's frame is kept in its .cache/ and read again only while it is the same
frame: any change to any file, another place, other thresholds, and it is built anew."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import ssdcompare
from ssdcompare import framecache
from ssdcompare.cpu import Thresholds
from ssdcompare.frame import load

EXAMPLE = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"
JOB = "randread-4k-qd8"


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    folder = tmp_path / "results"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns(framecache.FOLDER))
    return folder


def kept(folder: Path, name: str = "frame") -> dict[str, Any]:
    """The kept frame's data, past its signature line."""
    signed = (folder / framecache.FOLDER / f"{name}.json").read_bytes()
    return dict(json.loads(signed.partition(b"\n")[2]))


def keep(folder: Path, data: dict[str, Any], name: str = "frame", sign: bool = True) -> None:
    """Write `data` as the kept frame, signed with this user's key (or an empty line)."""
    text = json.dumps(data).encode()
    mark = (framecache.signature(text) or "") if sign else ""
    (folder / framecache.FOLDER / f"{name}.json").write_bytes(mark.encode() + b"\n" + text)


def test_the_kept_frame_is_the_frame_built_from_the_raw_files(copy: Path) -> None:
    built = load(copy, cache=False)
    assert not (copy / framecache.FOLDER).exists()  # cache=False keeps nothing
    first = load(copy)
    assert (copy / framecache.FOLDER / "frame.json").is_file()
    again = load(copy)
    pd.testing.assert_frame_equal(built, first)
    pd.testing.assert_frame_equal(built, again)
    # tuples stay tuples, nullable columns stay nullable
    assert isinstance(again["lat_dist_us"].dropna().iloc[0], tuple)
    assert again["iodepth"].dtype == "Int64" and again["cpu_bound"].dtype == "boolean"
    seconds = ssdcompare.timeseries(copy)
    pd.testing.assert_frame_equal(seconds, ssdcompare.timeseries(copy))
    assert (copy / framecache.FOLDER / "timeseries.json").is_file()


def test_a_changed_result_is_read_anew(copy: Path) -> None:
    before = load(copy)
    path = sorted(copy.glob(f"runs/*/{JOB}/r1/fio.json"))[0]
    owner = path.parent.parent.parent.name
    output = json.loads(path.read_text())
    output["jobs"][0]["read"]["iops"] = 12345.5
    path.write_text(json.dumps(output))  # in place: same file, new content
    after = load(copy)
    mine = (after["job"] == JOB) & (after["repeat"] == 1) & (after["device"] == owner)
    assert after.loc[mine, "iops"].tolist() == [12345.5]
    assert not before.loc[mine, "iops"].eq(12345.5).any()


def test_a_copy_elsewhere_and_other_thresholds_are_other_frames(
    copy: Path, tmp_path: Path
) -> None:
    load(copy)
    # copied with its cache and every file's times: the frame still names its own folder
    moved = tmp_path / "moved"
    shutil.copytree(copy, moved)
    frame = load(moved)
    assert set(frame["sweep"]) == {str(moved)}
    strict = load(moved, Thresholds(worker_pct=10.0))
    assert strict["cpu_bound"].sum() > frame["cpu_bound"].sum()


def test_a_damaged_or_unwritable_cache_costs_only_time(copy: Path) -> None:
    built = load(copy, cache=False)
    load(copy)
    (copy / framecache.FOLDER / "frame.json").write_text('{"format": 1, "key": "x"')
    pd.testing.assert_frame_equal(built, load(copy))
    # a cache whose key matches but whose columns are cut short is no cache either, even
    # signed with this user's key (as a version of ssdcompare with a bug could have written)
    data = kept(copy)
    data["rows"] += 1
    keep(copy, data)
    pd.testing.assert_frame_equal(built, load(copy))
    shutil.rmtree(copy / framecache.FOLDER)
    os.chmod(copy, 0o555)
    try:
        if os.access(copy, os.W_OK):  # root writes anyway: make the cache folder a file
            (copy / framecache.FOLDER).write_text("not a folder")
        pd.testing.assert_frame_equal(built, load(copy))
    finally:
        os.chmod(copy, 0o755)


def test_the_folder_is_named_as_the_caller_names_it(
    copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(copy.parent)
    relative = load("results")  # kept with this spelling ...
    absolute = load(copy)  # ... and read again with another
    assert set(relative["sweep"]) == {"results"}
    assert set(absolute["sweep"]) == {str(copy)}
    assert all(str(p).startswith(str(copy) + "/") for p in absolute["fio_json"].dropna())
    pd.testing.assert_frame_equal(absolute, load(copy, cache=False))
    seconds = ssdcompare.timeseries(copy)
    assert set(seconds["sweep"]) == {str(copy)}
    # from inside the folder, "." names it, and paths under it are relative, as without a cache
    monkeypatch.chdir(copy)
    here = load(".")
    pd.testing.assert_frame_equal(here, load(".", cache=False))
    assert all(not str(p).startswith("/") and Path(p).is_file() for p in here["fio_json"].dropna())


def test_a_folder_holding_a_link_is_always_read_anew(copy: Path, tmp_path: Path) -> None:
    # the link is never followed (its run is a failed one), and no frame is kept of such a
    # folder: whatever is linked can change without the folder changing
    path = sorted(copy.glob(f"runs/*/{JOB}/r1/fio.json"))[0]
    elsewhere = tmp_path / "elsewhere.json"
    shutil.move(path, elsewhere)
    path.symlink_to(elsewhere)
    frame = load(copy)
    linked = frame[frame["fio_json"] == str(path)]
    assert set(linked["status"]) == {"failed"} and linked["iops"].isna().all()
    assert not (copy / framecache.FOLDER / "frame.json").exists()


def test_a_cache_that_is_a_link_is_never_written_through(copy: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "frame.json").write_text("precious")
    (copy / framecache.FOLDER).symlink_to(victim)
    pd.testing.assert_frame_equal(load(copy), load(copy, cache=False))
    ssdcompare.timeseries(copy)
    assert (victim / "frame.json").read_text() == "precious"
    assert sorted(p.name for p in victim.iterdir()) == ["frame.json"]
