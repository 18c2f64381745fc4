"""Results of two folders side by side (`ssdcompare report A B`): a device is named for short
where that is unambiguous, a job only one folder holds is said to be so (not counted as a
failure), and the answer's ratios are those of the figures the table shows, whatever the
aggregate."""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import pytest

import ssdcompare
from ssdcompare.errors import SsdcompareError

EXAMPLE = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"
ONLY_IN_EXAMPLE = ["read-4m-qd16", "write-4m-qd16"]  # jobs the other folder never had


@pytest.fixture(scope="module")
def two_folders(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The example, and a copy ("later") that holds the RAM disk's results only, without two
    of its jobs (a sweep of a smaller suite)."""
    later = tmp_path_factory.mktemp("two") / "later"
    shutil.copytree(EXAMPLE, later, ignore=shutil.ignore_patterns(".cache"))
    shutil.rmtree(later / "runs" / "loop1")
    for job in ONLY_IN_EXAMPLE:
        shutil.rmtree(later / "runs" / "zram1" / job)
    return [EXAMPLE, later]


def test_a_device_is_named_for_short_where_that_names_one(two_folders: list[Path]) -> None:
    frame = ssdcompare.load(two_folders)
    labels = set(frame["label"])
    assert {"zram1 @ramdisk-vs-loop", "zram1 @later", "loop1 @ramdisk-vs-loop"} == labels
    summary = ssdcompare.job_summary(frame, baseline="loop1")  # one folder holds it
    assert set(summary["compared_to"]) == {"loop1 @ramdisk-vs-loop"}
    with pytest.raises(SsdcompareError, match="could be 'zram1 @ramdisk-vs-loop' or "
                                              "'zram1 @later'"):  # fmt: skip
        ssdcompare.job_summary(frame, baseline="zram1")
    table = ssdcompare.side_by_side(summary, "iops", baseline="loop1")
    assert "zram1 @later/loop1 @ramdisk-vs-loop" in table.columns


def test_a_job_only_one_folder_holds_is_said_to_be_so(two_folders: list[Path]) -> None:
    frame = ssdcompare.load(two_folders)
    summary = ssdcompare.job_summary(frame, baseline="zram1 @ramdisk-vs-loop")
    (later,) = [h for h in ssdcompare.headline(summary) if h.label == "zram1 @later"]
    assert later.left_out["ran only on zram1 @ramdisk-vs-loop"] == len(ONLY_IN_EXAMPLE)
    assert "failed" not in later.left_out
    assert f"{len(ONLY_IN_EXAMPLE)} ran only on zram1 @ramdisk-vs-loop" in later.sentence


@pytest.mark.parametrize("aggregate", ["mean", "median", "best"])
def test_the_answer_takes_the_ratios_the_table_shows(aggregate: str) -> None:
    summary = ssdcompare.job_summary(ssdcompare.load(EXAMPLE), baseline="loop1",
                                     aggregate=aggregate)  # fmt: skip
    (line,) = ssdcompare.headline(summary)
    table = ssdcompare.side_by_side(summary, "iops", baseline="loop1")
    counted = table[(table["zram1 verdict"] == "drive") & (table["loop1 verdict"] == "drive")]
    ratios = counted["zram1/loop1"].dropna().tolist()
    assert line.jobs == len(ratios) > 0
    mean_log = sum(math.log(r) for r in ratios) / len(ratios)
    assert line.iops_ratio == pytest.approx(math.exp(mean_log))
    if aggregate != "mean":
        assert f"of the {aggregate} runs" in line.sentence
