"""Which results may be compared: one folder named twice, and sweeps made from other jobfiles."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest

import ssdcompare
from ssdcompare.analysis.export import export

EXAMPLE = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"
CHANGED_JOB = "randread-4k-qd1"
OTHER_HASH = "0123456789abcdef"


def spellings(tmp_path: Path) -> list[str | Path]:
    """The example folder as a user may name it: plain, trailing slash, ./relative, symlink."""
    link = tmp_path / "link-to-example"
    link.symlink_to(EXAMPLE.resolve(), target_is_directory=True)
    relative = os.path.relpath(EXAMPLE.resolve(), Path.cwd())
    return [EXAMPLE, f"{EXAMPLE}/", f"./{relative}", f"./{relative}/", link, EXAMPLE.resolve()]


def changed_copy(tmp_path: Path) -> Path:
    """The example sweep again, but CHANGED_JOB ran longer on another engine: another jobfile
    (as a sweep with --runtime 10 would have), recorded consistently in every file."""
    copy = tmp_path / "longer-runs"
    shutil.copytree(EXAMPLE, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    for workload in manifest["suite"]["workloads"]:
        if workload["id"] == CHANGED_JOB:
            workload["runtime_s"] = 10
            workload["ioengine"] = "libaio"
    (copy / "manifest.json").write_text(json.dumps(manifest, indent=2))
    for run in copy.glob(f"runs/*/{CHANGED_JOB}/r*"):
        jobfile = (run / "jobfile.fio").read_text()
        assert "runtime=3\n" in jobfile and "ioengine=io_uring\n" in jobfile
        jobfile = jobfile.replace("runtime=3\n", "runtime=10\n")
        (run / "jobfile.fio").write_text(jobfile.replace("ioengine=io_uring", "ioengine=libaio"))
        output = json.loads((run / "fio.json").read_text())
        output["global options"]["ioengine"] = "libaio"
        output["global options"]["runtime"] = "10"
        (run / "fio.json").write_text(json.dumps(output))
        status = json.loads((run / "status.json").read_text())
        status["workload_hash"] = OTHER_HASH
        (run / "status.json").write_text(json.dumps(status, indent=2))
    return copy


def test_one_folder_named_several_ways_is_read_once(tmp_path: Path) -> None:
    once = ssdcompare.load(EXAMPLE)
    many = ssdcompare.load(spellings(tmp_path))
    assert len(many) == len(once)
    assert list(dict.fromkeys(many["label"])) == ["zram1", "loop1"]  # not "zram1 @..." twice
    summary = ssdcompare.job_summary(many)
    expected = ssdcompare.job_summary(once)
    assert (summary["repeats"] == 3).all()
    assert list(summary["iops_mean"]) == pytest.approx(list(expected["iops_mean"]))


def test_export_of_one_folder_named_twice_writes_each_row_once(tmp_path: Path) -> None:
    out = tmp_path / "twice.csv"
    rows = export([EXAMPLE, f"{EXAMPLE}/."], out)
    assert rows == len(ssdcompare.load(EXAMPLE)) == len(pd.read_csv(out))


def test_a_job_run_from_another_jobfile_gets_no_ratio_but_a_reason(tmp_path: Path) -> None:
    copy = changed_copy(tmp_path)
    frame = ssdcompare.load([EXAMPLE, copy])
    baseline = "loop1 @ramdisk-vs-loop"
    summary = ssdcompare.job_summary(frame, baseline=baseline)
    table = ssdcompare.side_by_side(summary, "iops", baseline=baseline)
    for label in ("loop1 @longer-runs", "zram1 @longer-runs"):
        assert pd.isna(table.loc[CHANGED_JOB, f"{label}/{baseline}"])
        assert bool(table.loc[CHANGED_JOB, f"{label} comparable"]) is False
        assert pd.isna(table.loc[CHANGED_JOB, f"{label} significant"])
        # every other job is the same workload: compared as before
        others = table.drop(index=CHANGED_JOB)
        assert others[f"{label}/{baseline}"].notna().all()
        assert others[f"{label} comparable"].all()
    # within one sweep the devices share their hashes: nothing changes there
    assert table["zram1 @ramdisk-vs-loop comparable"].all()
    assert table["zram1 @ramdisk-vs-loop/" + baseline].notna().all()
    note = table.loc[CHANGED_JOB, "note"]
    hashes = set(summary.loc[summary["job"] == CHANGED_JOB, "workload_hash"])
    assert len(hashes) == 2 and all(h in note for h in hashes)
    assert "runtime 10 s vs 3 s" in note and "ioengine libaio vs io_uring" in note
    assert pd.isna(table.drop(index=CHANGED_JOB)["note"]).all()


def test_the_summary_says_which_rows_are_comparable_to_the_baseline(tmp_path: Path) -> None:
    frame = ssdcompare.load([EXAMPLE, changed_copy(tmp_path)])
    summary = ssdcompare.job_summary(frame)  # baseline: the first label
    assert summary["comparable"].dtype == "boolean"
    odd = summary[summary["comparable"] == False]  # noqa: E712 - a boolean column with NA
    assert set(odd["job"]) == {CHANGED_JOB}
    assert set(odd["sweep"]) == {str(tmp_path / "longer-runs")}
    assert odd["comparable_note"].str.contains("jobfiles differ").all()
    assert summary.loc[summary["comparable"] == True, "comparable_note"].isna().all()  # noqa: E712


def test_raw_fio_files_carry_no_hash_so_comparability_is_unknown() -> None:
    frame = ssdcompare.read_fio(Path(__file__).parent / "data" / "randrw-latpct-json.json")
    summary = ssdcompare.job_summary(frame)
    assert summary["comparable"].tolist() == [True]  # the baseline itself
    assert ssdcompare.side_by_side(summary).columns.tolist() == [
        "randrw-latpct-json", "randrw-latpct-json verdict"]  # fmt: skip
