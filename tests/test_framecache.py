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
from ssdcompare import userkey
from ssdcompare.analysis import cache as framecache
from ssdcompare.analysis import frame as frame_module
from ssdcompare.analysis.export import export
from ssdcompare.analysis.frame import load
from ssdcompare.judge.cpu import Thresholds
from ssdcompare.report.build import write_report

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
    mark = (userkey.signature(text) or "") if sign else ""
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
    read = output["jobs"][0]["read"]
    # an edit that keeps the figures agreeing (IOPS are total_ios over the runtime)
    read.update(iops=12345.5, total_ios=round(12345.5 * read["runtime"] / 1000))
    path.write_text(json.dumps(output))  # in place: same file, new content
    after = load(copy)
    mine = (after["job"] == JOB) & (after["repeat"] == 1) & (after["device"] == owner)
    assert after.loc[mine, "iops"].tolist() == [12345.5]
    assert not before.loc[mine, "iops"].eq(12345.5).any()


def test_a_pts_record_that_changes_is_another_frame(copy: Path) -> None:
    # a PTS run's window, steady state and purge columns come from rounds/ (rounds.json,
    # purge.json), which change after the runs they describe were stored
    before = framecache.key(copy, "")
    (copy / "rounds" / "dev").mkdir(parents=True)
    (copy / "rounds" / "dev" / "purge.json").write_text("{}")
    assert framecache.key(copy, "") != before


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
    assert set(linked["status"]) == {"damaged"} and linked["iops"].isna().all()
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


def builds(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The folders whose frame is built from the raw files from now on."""
    built: list[Path] = []
    real = frame_module._load_results

    def counted(results: Any, thresholds: Any) -> pd.DataFrame:
        built.append(results.path)
        return real(results, thresholds)

    monkeypatch.setattr(frame_module, "_load_results", counted)
    return built


def test_a_report_reads_the_kept_frame_the_second_time(
    copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the report lands in the folder: it is no file the frame is built from, so writing it
    # leaves the kept frame valid (as does an export beside it)
    built = builds(monkeypatch)
    write_report([copy], copy / "report.html")
    assert built == [copy]
    export([copy], copy / "results.csv")
    write_report([copy], copy / "report.html")
    assert built == [copy]


def test_an_edited_cache_is_never_used(copy: Path, tmp_path: Path) -> None:
    built = load(copy, cache=False)
    load(copy)
    data = kept(copy)
    data["columns"]["iops"] = [1e9] * data["rows"]  # key kept, signature line kept
    signed = (copy / framecache.FOLDER / "frame.json").read_bytes()
    mark = signed.partition(b"\n")[0]
    (copy / framecache.FOLDER / "frame.json").write_bytes(mark + b"\n" + json.dumps(data).encode())
    again = load(copy)
    pd.testing.assert_frame_equal(built, again)
    assert 1e9 not in set(again["iops"])
    html = write_report([copy], tmp_path / "report.html").read_text()
    assert "1.00G" not in html and "1000.00M" not in html


def test_a_cache_that_came_with_the_folder_is_never_used(
    copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as theirs:  # a colleague's own key signs their copy
        theirs.setenv("XDG_CACHE_HOME", str(tmp_path / "colleague"))
        load(copy)
    assert (copy / framecache.FOLDER / "frame.json").is_file()
    data = kept(copy)
    data["columns"]["iops"] = [1e9] * data["rows"]
    keep(copy, data, sign=False)  # ... or planted without any signature
    built = builds(monkeypatch)
    assert 1e9 not in set(load(copy)["iops"]) and built == [copy]
    assert load(copy) is not None and built == [copy]  # now kept, signed by this user


def test_the_key_is_the_users_own_and_without_a_safe_one_nothing_is_kept(
    copy: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, own_cache_key: Path
) -> None:
    load(copy)
    key_file = own_cache_key / "ssdcompare" / userkey.KEY_FILE
    assert key_file.stat().st_mode & 0o777 == 0o600
    assert len(key_file.read_bytes()) == userkey.KEY_BYTES
    shared = tmp_path / "shared"
    (shared / "ssdcompare").mkdir(parents=True)
    (shared / "ssdcompare").chmod(0o777)  # anyone could put a key of theirs there
    linked = tmp_path / "linked"
    linked.mkdir()
    (linked / "ssdcompare").symlink_to(own_cache_key / "ssdcompare")
    for unsafe in (shared, linked, None):
        shutil.rmtree(copy / framecache.FOLDER, ignore_errors=True)
        if unsafe is None:  # no cache folder at all: no absolute $XDG_CACHE_HOME, no home
            monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
            monkeypatch.setenv("HOME", "relative")
        else:
            monkeypatch.setenv("XDG_CACHE_HOME", str(unsafe))
        pd.testing.assert_frame_equal(load(copy), load(copy, cache=False))
        assert not (copy / framecache.FOLDER / "frame.json").exists(), unsafe


def test_a_report_read_twice_reads_the_raw_files_once(
    copy: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The report beside the results (its default place) is no input of the frame: writing
    it leaves the cache valid, so a second report opens no fio output, CPU trace or log."""
    from collections import Counter

    from ssdcompare.results.files import ResultsFiles

    opened: Counter[str] = Counter()
    read_bytes = ResultsFiles.read_bytes
    log_samples = ResultsFiles.log_samples

    def counted_bytes(self: ResultsFiles, path: Path, kind: str) -> bytes:
        opened[kind] += 1
        return read_bytes(self, path, kind)

    def counted_log(self: ResultsFiles, path: Path) -> Any:
        opened["log"] += 1
        return log_samples(self, path)

    monkeypatch.setattr(ResultsFiles, "read_bytes", counted_bytes)
    monkeypatch.setattr(ResultsFiles, "log_samples", counted_log)
    runs = len(list(copy.glob("runs/*/*/r*/status.json")))
    write_report([copy], copy / "report.html")
    assert opened["fio"] == opened["cpu"] == runs and opened["status"] >= runs and opened["log"]
    opened.clear()
    write_report([copy], copy / "report.html")  # over the first, in the results folder
    assert opened["fio"] == opened["cpu"] == opened["status"] == opened["log"] == 0
    assert opened["manifest"] >= 1  # the folder is still checked, its frame taken as kept
