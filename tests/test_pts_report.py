"""The report's sections for a SNIA PTS IOPS and DIRTH test, read in headless Chromium from
real sweeps: the bundled pts-iops and pts-dirth run 56 and 36 jobs a round, over a minute for
five rounds even scaled, so these sweeps run suites of the same PTS test kinds with fewer jobs
(tests/suites/pts-iops-small.yaml and pts-dirth-small.yaml: 4 jobs each), scaled, each on a
loop device capped at some IOPS: steady from the first round, in 5 rounds (a few more when a
busy machine delays one, which the checks allow). The IOPS test ran on two devices, one
capped at half the other's IOPS, reported together. Every figure shown is checked against
the results folders (rounds.json, and the frame's window rounds). pts-latency and
pts-throughput themselves: test_pts_latency.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from blkio import needs_blkio
from ptssweeps import SUITES, Planned, pts_sweeps, read_sections, record

import ssdcompare
import ssdcompare.plot
from ssdcompare.report.build import write_report
from ssdcompare.units import format_count, format_latency

pytestmark = [pytest.mark.xdist_group("pts_report"), pytest.mark.root, pytest.mark.fio,
              needs_blkio]  # fmt: skip

SCALE = 0.002
PLANNED = [
    Planned("iops-a", str(SUITES / "pts-iops-small.yaml"), SCALE, 1000),
    Planned("iops-b", str(SUITES / "pts-iops-small.yaml"), SCALE, 500),
    # 65 % reads capped at 700 IOPS: about 1080 IOPS, so 2 threads x QD4 wait past 5 ms
    Planned("dirth", str(SUITES / "pts-dirth-small.yaml"), 0.003, 700),
]


NOT_OFFERED = "not purged: the sweep was not given --destroy-data"


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    with pts_sweeps(tmp_path_factory.mktemp("pts"), PLANNED) as folders:
        yield folders


def window_means(folders: list[Path]) -> pd.DataFrame:
    """Each job's figures over its window rounds, by label and job, from the frame."""
    frame = ssdcompare.load(folders)
    in_window = frame[frame["ss_window"].astype("boolean").fillna(False).astype(bool)]
    summary = ssdcompare.job_summary(in_window)
    return summary.set_index(["label", "job"])


def rounds_line(group: str, rec: dict[str, Any], mean: str) -> str:
    first, last = rec["window"][0], rec["window"][-1]
    state = (f"steady after {len(rec['rounds'])} rounds" if rec["attained"]
             else f"NOT steady in {len(rec['rounds'])} rounds")  # fmt: skip
    return (f"{group}: {state}; window rounds {first}–{last}: mean {mean}, range "
            f"{rec['window_range_pct']:.1f} % (at most 20 %), slope excursion "
            f"{rec['window_slope_pct']:.1f} % (at most 10 %)")  # fmt: skip


def window_words(rec: dict[str, Any]) -> str:
    return f"{rec['window'][0]}–{rec['window'][-1]}"


def check_device(device: dict[str, Any], folder: Path, group: str, mean: str) -> None:
    """A device's preparation, its group's rounds in words and its steady-state chart, as
    its record has them."""
    rec = record(folder, group)
    count = len(rec["rounds"])
    # capped, the device is steady from the first round: in 5 rounds, or a few more when a
    # busy machine delays one
    assert rec["attained"] and rec["window"] == list(range(count - 4, count + 1))
    # the sweep was not given --destroy-data: recorded as not purged, and why
    assert device["purge"].startswith(NOT_OFFERED)
    assert device["fill"].startswith("filled: sequential 128 KiB writes over the whole device")
    assert device["rounds"] == [rounds_line(group, rec, mean)]
    (chart,) = device["charts"]
    title = f"{device['label']}: {group} (steady after {count} rounds)"
    assert chart["shown"] and chart["title"] == title
    assert chart["bands"] == 3 and len(chart["guides"]) == 2
    assert chart["guides"][0] == f"the window's mean: {mean}"
    assert len(chart["points"]) == count
    assert sum("(in the measurement window)" in p for p in chart["points"]) == 5
    assert chart["keys"][:3] == [f"measurement window (rounds {window_words(rec)})",
                                 "±20 % of the mean", "±10 % of the mean"]  # fmt: skip


def banner(scale: float) -> str:
    return (f"Scaled by {scale:g}: every runtime and idle time of this PTS test was "
            f"{scale:g} of the specification's, so these are a first look at the drives, not "
            "a PTS result.")  # fmt: skip


def test_the_iops_section_shows_each_device_and_its_table_with_ratios(
    swept: dict[str, Path], tmp_path: Path
) -> None:
    folders = [swept["iops-a"], swept["iops-b"]]
    seen = read_sections(write_report(folders, tmp_path / "iops.html"), tmp_path / "browser")
    assert seen["banner"] == banner(SCALE) and seen["bannerShown"] and seen["bannerFirst"]
    section = seen["sections"]["pts-iops"]
    assert section["title"] == "SNIA PTS IOPS test" and section["scaled"] == banner(SCALE)
    figures = window_means(folders)
    labels = list(dict.fromkeys(figures.index.get_level_values("label")))
    assert [d["label"] for d in section["devices"]] == labels
    for device, folder in zip(section["devices"], folders, strict=True):
        mean = format_count(record(folder, "iops")["window_mean"]) + " IOPS"
        check_device(device, folder, "iops", mean)
    first, second = section["tables"]
    assert first["caption"] == f"{labels[0]}: IOPS"
    assert second["caption"] == f"{labels[1]}: IOPS (under each: × {labels[0]})"
    for shown, label, folder in ((first, labels[0], folders[0]), (second, labels[1],
                                                                    folders[1])):  # fmt: skip
        window = window_words(record(folder, "iops"))
        assert shown["shown"] and shown["head"] == [["block size", "65/35", "0/100"]]
        assert [row[0]["text"] for row in shown["rows"]] == ["8 KiB", "4 KiB"]
        for row, bs in zip(shown["rows"], ("8k", "4k"), strict=True):
            for cell, mix in zip(row[1:], (65, 0), strict=True):
                job = f"randrw{mix}-{bs}-qd4"
                assert cell["text"] == format_count(figures.at[(label, job), "iops_mean"])
                assert cell["tip"].startswith(f"{job}: mean of 5 window rounds ({window})")
    # b was capped at half of a's IOPS: every ratio about 0.5, and the figures' own ratio
    for row, bs in zip(second["rows"], ("8k", "4k"), strict=True):
        for cell, mix in zip(row[1:], (65, 0), strict=True):
            job = f"randrw{mix}-{bs}-qd4"
            ratio = figures.at[(labels[1], job), "iops_mean"] / figures.at[
                (labels[0], job), "iops_mean"]  # fmt: skip
            assert cell["sub"] == f"{ratio:.2f}×" and 0.4 < ratio < 0.6
    # the rounds of two windows are compared by their ratio and never tested as repeats
    summary = ssdcompare.job_summary(ssdcompare.load(folders))
    other = summary[summary["label"] == labels[1]]
    assert other["ratio"].between(0.4, 0.6).all() and other["significant"].isna().all()
    assert other["pts_group"].eq("iops").all()
    assert seen["note"] is not None and seen["note"].startswith("SNIA PTS jobs: each figure")
    for label, folder in zip(labels, folders, strict=True):
        rec = record(folder, "iops")
        said = f"{label} iops: rounds {window_words(rec)} of {len(rec['rounds'])}"
        assert said in seen["note"]
    # runs of 0.12 s have no CPU samples past fio's start-up: a larger scale helps, not
    # --repeat (a PTS test's repeats are its rounds, and it refuses the option)
    assert seen["advice"] is not None and "--repeat" not in seen["advice"]
    assert "run longer jobs (a larger --scale)" in seen["advice"]


def test_the_dirth_section_shows_its_table_chart_and_answer(
    swept: dict[str, Path], tmp_path: Path
) -> None:
    folder = swept["dirth"]
    seen = read_sections(folder / "report.html", tmp_path / "browser")
    section = seen["sections"]["pts-dirth"]
    assert section["title"] == "SNIA PTS demand intensity / response time (DIRTH) test"
    assert section["scaled"] == banner(0.003) == seen["banner"]
    figures = window_means([folder])
    (label,) = dict.fromkeys(figures.index.get_level_values("label"))
    (device,) = section["devices"]
    mean = format_count(record(folder, "dirth")["window_mean"]) + " IOPS"
    check_device(device, folder, "dirth", mean)
    (table,) = section["tables"]
    assert table["caption"] == f"{label}: IOPS, and mean latency under each"
    assert table["head"] == [["threads", "QD 1", "QD 4"]]
    assert [row[0]["text"] for row in table["rows"]] == ["1", "2"]
    for row, threads in zip(table["rows"], (1, 2), strict=True):
        for cell, qd in zip(row[1:], (1, 4), strict=True):
            job = f"randrw65-8k-qd{qd}" + (f"-nj{threads}" if threads > 1 else "")
            iops, lat = figures.loc[(label, job), ["iops_mean", "lat_mean_us_mean"]]
            assert cell["text"] == format_count(iops)
            assert cell["sub"] == format_latency(lat) + (" ›5 ms" if lat >= 5000 else "")
    # the answer, found again from the frame's window means
    jobs = figures.loc[label]
    under = jobs[jobs["lat_mean_us_mean"] < 5000]
    best = under.loc[under["iops_mean"].idxmax()]
    assert jobs.at["randrw65-8k-qd4-nj2", "lat_mean_us_mean"] > 5000  # the cap's doing
    threads = int(best["numjobs"])
    # a verdict other than the drive's is said with it (a short run has few CPU samples)
    judged = "" if best["verdict"] == "drive" else f"; that point's verdict: {best['verdict']}"
    assert section["answers"] == [
        f"{label}: the most IOPS with mean latency under 5 ms: {format_count(best['iops_mean'])} "
        f"IOPS at {threads} thread{'s' if threads > 1 else ''} × QD {int(best['iodepth'])} "
        f"({format_latency(best['lat_mean_us_mean'])} mean){judged}"]  # fmt: skip
    (chart,) = section["charts"]
    assert chart["shown"] and chart["title"] == f"{label}: IOPS against mean latency"
    assert chart["lines"] == 2 and chart["targets"] == 1 and chart["answers"] == 1
    assert chart["keys"] == ["1 thread", "2 threads", "5 ms mean latency",
                             "the most IOPS under 5 ms"]  # fmt: skip
    assert len(chart["points"]) == 4


def test_the_pts_charts_and_tables_from_python(swept: dict[str, Path]) -> None:
    folders = [swept["iops-a"], swept["iops-b"]]
    tables = ssdcompare.pts_tables(folders)
    assert tables.tests == ["iops"] and len(tables.iops()) == 4
    assert list(tables.steady()["steady"]) == [True, True]
    fig = ssdcompare.plot.steady_state(folders)
    assert len(fig.axes) == 2
    assert sum(a.get_gid() == "band" for a in fig.axes[0].get_children()) == 3
    fig = ssdcompare.plot.dirth(swept["dirth"])
    (ax,) = fig.axes
    assert sum(line.get_gid() == "series" for line in ax.get_lines()) == 2
    assert [line.get_gid() for line in ax.get_lines()].count("answer") == 1
