"""The report's sections for the bundled pts-latency and pts-throughput, read in headless
Chromium from real sweeps, scaled, side by side on two loop devices capped at 1000 IOPS.
Capped, the latency test's 4 KiB writes at QD1 wait for the cap (1 ms each) and are steady
in 5 rounds (a few more when a busy machine delays one), as are the 128 KiB transfers; the
1 MiB ones at QD32 are not held as evenly (32 MiB in flight against a cap that lets I/O
through in tenths of a second), so that group may take more rounds, up to the 25 the test
allows. Each group's words and chart are checked against its record, whichever it took, and
every figure shown against the results folders. Nine and four jobs a round for 5 to 25
rounds take 20-50 s: slow."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from blkio import needs_blkio
from ptssweeps import Planned, pts_sweeps, read_sections, record

import ssdcompare
from ssdcompare.units import format_latency, format_rate

pytestmark = [pytest.mark.xdist_group("pts_latency"), pytest.mark.root, pytest.mark.fio,
              pytest.mark.slow, needs_blkio]  # fmt: skip

PLANNED = [Planned("latency", "pts-latency", 0.002, 1000),
           Planned("throughput", "pts-throughput", 0.005, 1000)]  # fmt: skip


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    with pts_sweeps(tmp_path_factory.mktemp("pts"), PLANNED) as folders:
        yield folders


def window_rows(folder: Path) -> pd.DataFrame:
    """The frame's finished runs in their group's window."""
    frame = ssdcompare.load(folder)
    keep = frame["ss_window"].astype("boolean").fillna(False).astype(bool)
    return frame[keep & (frame["status"] == "ok")]


def state(rec: dict[str, Any]) -> str:
    count = len(rec["rounds"])
    return f"steady after {count} rounds" if rec["attained"] else f"NOT steady in {count} rounds"


def check_rounds(line: str, group: str, rec: dict[str, Any], mean: str) -> None:
    first, last = rec["window"][0], rec["window"][-1]
    assert line == (f"{group}: {state(rec)}; window rounds {first}–{last}: mean {mean}, range "
                    f"{rec['window_range_pct']:.1f} % (at most 20 %), slope excursion "
                    f"{rec['window_slope_pct']:.1f} % (at most 10 %)")  # fmt: skip


def check_chart(chart: dict[str, Any], label: str, group: str, rec: dict[str, Any]) -> None:
    assert chart["shown"] and chart["title"] == f"{label}: {group} ({state(rec)})"
    assert rec["window"] == list(range(len(rec["rounds"]) - 4, len(rec["rounds"]) + 1))
    assert chart["bands"] == 3 and len(chart["guides"]) == 2
    assert len(chart["points"]) == len(rec["rounds"])
    inside = [p for p in chart["points"] if p.endswith("(in the measurement window)")]
    assert len(inside) == len(rec["window"]) == 5


def test_the_latency_section(swept: dict[str, Path], tmp_path: Path) -> None:
    folder = swept["latency"]
    seen = read_sections(folder / "report.html", tmp_path / "browser")
    assert seen["banner"].startswith("Scaled by 0.002: ") and seen["bannerShown"]
    section = seen["sections"]["pts-latency"]
    assert section["title"] == "SNIA PTS latency test" and section["scaled"] == seen["banner"]
    rec = record(folder, "latency")
    assert rec["attained"]  # 1 ms a write, held by the cap: in 5 rounds, or a few more
    (device,) = section["devices"]
    label = device["label"]
    assert device["purge"].startswith("not purged: the sweep was not given --destroy-data")
    assert device["fill"].startswith("filled: ")
    (line,) = device["rounds"]
    check_rounds(line, "latency", rec, format_latency(rec["window_mean"]))
    (chart,) = device["charts"]
    check_chart(chart, label, "latency", rec)
    (table,) = section["tables"]
    assert table["caption"] == "latency over the window" and table["shown"]
    assert table["head"] == [["block size", "read/write", label],
                             ["mean", "p99.9", "p99.99", "max"]]  # fmt: skip
    expected = _latency_figures(window_rows(folder))
    shown = [[c["text"] for c in row] for row in table["rows"]]
    assert [row[:2] for row in shown] == [[bs, mix] for bs in ("8 KiB", "4 KiB", "512 B")
                                          for mix in ("100/0", "65/35", "0/100")]  # fmt: skip
    for row in shown:
        bs = {"8 KiB": "8k", "4 KiB": "4k", "512 B": "512"}[row[0]]
        job = f"randrw{row[1].split('/')[0]}-{bs}-qd1"
        assert row[2:] == [format_latency(v) for v in expected.loc[job]], job
    # capped at 1000 IOPS, a job of 0.12 s has about 120 I/Os a round: neither percentile is
    # backed (1,000 and 10,000 I/Os), so both are greyed and say from how many
    for row in table["rows"]:
        assert all("thin" in cell["cls"] and cell["tip"].startswith("from ")
                   for cell in row[3:5]), row[:2]  # fmt: skip


def _latency_figures(rows: pd.DataFrame) -> pd.DataFrame:
    """Per job over its window: the mean latency (I/O-weighted over a mix's directions in
    each round, then the rounds' mean), p99.9 and p99.99 (each round's worse direction, then
    the mean), and the highest latency of any I/O."""
    rows = rows.assign(weighted=rows["lat_mean_us"] * rows["total_ios"])
    runs = rows.groupby(["job", "repeat"]).agg(
        weighted=("weighted", "sum"), ios=("total_ios", "sum"), p999=("lat_p999_us", "max"),
        p9999=("lat_p9999_us", "max"), top=("lat_max_us", "max"))  # fmt: skip
    runs["mean"] = runs["weighted"] / runs["ios"]
    jobs = runs.groupby("job").agg(mean=("mean", "mean"), p999=("p999", "mean"),
                                   p9999=("p9999", "mean"), top=("top", "max"))  # fmt: skip
    assert (rows.groupby("job")["repeat"].nunique() == 5).all()
    return jobs


def test_the_throughput_section(swept: dict[str, Path], tmp_path: Path) -> None:
    folder = swept["throughput"]
    seen = read_sections(folder / "report.html", tmp_path / "browser")
    section = seen["sections"]["pts-throughput"]
    assert section["title"] == "SNIA PTS throughput test"
    assert section["scaled"] == seen["banner"] and seen["banner"].startswith("Scaled by 0.005: ")
    (device,) = section["devices"]
    label = device["label"]
    records = {group: record(folder, group) for group in ("1m", "128k")}
    assert records["128k"]["attained"] and records["1m"]["done"]
    assert len(device["rounds"]) == len(device["charts"]) == 2
    for line, chart, group in zip(device["rounds"], device["charts"], ("1m", "128k"),
                                  strict=True):  # fmt: skip
        rec = records[group]
        check_rounds(line, group, rec, format_rate(rec["window_mean"]))
        check_chart(chart, label, group, rec)
    (table,) = section["tables"]
    assert table["head"] == [["block size", label], ["write", "read"]]
    rows = window_rows(folder)
    means = rows.groupby("job")["bw_bytes"].sum() / rows.groupby("job")["repeat"].nunique()
    assert [[c["text"] for c in row] for row in table["rows"]] == [
        [size, format_rate(means[f"write-{bs}-qd32"]), format_rate(means[f"read-{bs}-qd32"])]
        for size, bs in (("1 MiB", "1m"), ("128 KiB", "128k"))]  # fmt: skip
    window = f"{records['128k']['window'][0]}–{records['128k']['window'][-1]}"
    assert all(c["tip"].startswith(f"{job}: mean of 5 window rounds ({window})")
               for c, job in zip(table["rows"][1][1:], ("write-128k-qd32", "read-128k-qd32"),
                                 strict=True))  # fmt: skip
