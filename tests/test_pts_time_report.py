"""The report's sections for the SNIA PTS tests read over time (write saturation, host idle
recovery, cross stimulus recovery), read in headless Chromium from real sweeps run side by
side, each on a loop device capped at some IOPS: pts-wsat itself scaled by 0.05, pts-xsr
itself at the smallest scale (0.0001: its 20 hours in 7 s), and a suite of the host idle
recovery test's kind with shorter runs (tests/suites/pts-hir-small.yaml, whose first
idle-time segment's bursts the time series tells apart and whose second's it cannot: the
bundled pts-hir's 5 s bursts scaled are 0.5 ms, never told apart). Each section's figures are
checked against the analysis (`ssdcompare.pts_tables`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from blkio import needs_blkio
from ptssweeps import SUITES, Planned, pts_sweeps, read_sections

import ssdcompare
import ssdcompare.plot
from ssdcompare.units import format_count, format_rate

pytestmark = [pytest.mark.xdist_group("pts_time_report"), pytest.mark.root, pytest.mark.fio,
              needs_blkio]  # fmt: skip

PLANNED = [
    # four times 8 MiB written, at most: 8,192 writes at 2,000 IOPS
    Planned("wsat", "pts-wsat", 0.05, 2000, 8 << 20),
    Planned("hir", str(SUITES / "pts-hir-small.yaml"), 0.0002, 2000),
    Planned("xsr", "pts-xsr", 0.0001, 1000),
]


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    scratch = tmp_path_factory.mktemp("pts-time")
    with pts_sweeps(scratch, PLANNED) as folders:
        found = {name: read_sections(folder / "report.html", scratch / f"{name}-browser")
                 for name, folder in folders.items()}  # fmt: skip
        yield {"folders": folders, "pages": found}


def section(swept: dict[str, Any], test: str) -> dict[str, Any]:
    page = swept["pages"][test]
    assert page["banner"] and "Scaled by" in page["banner"]
    found: dict[str, Any] = page["sections"][f"pts-{test}"]
    (device,) = found["devices"]
    assert device["purge"].startswith("not purged")  # no --destroy-data: never purged
    assert found["scaled"] == page["banner"] or "Scaled by" in found["scaled"]
    return found


def test_the_write_saturation_section_says_where_the_iops_settle(swept: dict[str, Any]) -> None:
    found = section(swept, "wsat")
    (figures,) = ssdcompare.pts_tables(swept["folders"]["wsat"]).saturation()
    assert figures.capacities > 0 and figures.settled_iops > 0
    assert found["answers"] == [figures.words]
    # its header: a limit, not a time measured, and one run, not rounds
    page = (swept["folders"]["wsat"] / "report.html").read_text()
    assert "at most 1 h 12 min measured, or until the size cap" in page
    assert "1 group(s) run once, in order" in page and "in rounds until steady" not in page
    assert f"settle at {format_count(figures.settled_iops)}" in found["answers"][0]
    charts = found["charts"]
    assert [c["title"] for c in charts] == [
        f"{figures.label}: IOPS against time",
        f"{figures.label}: IOPS against the capacity written",
    ]
    assert all(c["shown"] and c["lines"] >= 1 for c in charts)


def test_the_host_idle_recovery_section_sets_bursts_against_baselines(
    swept: dict[str, Any],
) -> None:
    found = section(swept, "hir")
    (device,) = found["devices"]
    assert device["rounds"][0].startswith("steady: steady after")  # capped: steady at once
    assert device["charts"] and device["charts"][0]["shown"]  # the steady rounds' chart
    tables = ssdcompare.pts_tables(swept["folders"]["hir"])
    ((label, rows),) = tables.recovery().items()
    resolved, merged = rows
    assert resolved.segment.resolved and resolved.bursts >= 3
    assert resolved.baseline_job == "steady rounds"
    assert not merged.segment.resolved and merged.baseline_job == "hir-base1"
    (table,) = found["tables"]
    first, second = table["rows"]
    assert first[0]["text"] == "hir-idle200"
    assert first[2]["text"] == format_count(resolved.burst_iops)
    assert first[2]["sub"] == f"{resolved.bursts} bursts"
    assert first[4]["text"] == f"{resolved.ratio:.2f}×"
    assert second[0]["text"] == "hir-idle5" and second[2]["text"] == "not resolved"
    assert "cannot tell the bursts apart" in second[2]["tip"] and second[4]["text"] == "-"
    (chart,) = found["charts"]
    assert chart["shown"] and chart["bands"] == 2  # the two idle-time segments
    assert sum("burst at" in p for p in chart["points"]) == resolved.bursts


def test_the_cross_stimulus_recovery_section_says_when_each_segment_settled(
    swept: dict[str, Any],
) -> None:
    found = section(swept, "xsr")
    ((label, rows),) = ssdcompare.pts_tables(swept["folders"]["xsr"]).settled().items()
    (table,) = found["tables"]
    assert [r[0]["text"] for r in table["rows"]] == ["xsr-seq1", "xsr-rand", "xsr-seq2"]
    for row, figures in zip(table["rows"], rows, strict=True):
        assert row[1]["text"] == format_rate(figures.bw_bytes)
        said = "did not settle" if figures.settle_s is None else f"{figures.settle_s:.2f} s"
        assert row[2]["text"] == said
    (chart,) = found["charts"]
    assert chart["shown"] and chart["bands"] == 3 and chart["lines"] >= 1
    figure = ssdcompare.plot.pts_time(swept["folders"]["xsr"], "xsr")
    assert len(figure.axes) == 1
