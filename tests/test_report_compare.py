"""The report compares what may be compared: each folder once, the same jobfiles, and its
tables sort by the numbers rather than by their text."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from test_frame_compare import CHANGED_JOB, changed_copy
from test_report import chromium, parse

from ssdcompare.analysis.frame import load
from ssdcompare.analysis.summary import job_summary
from ssdcompare.report.build import write_report

EXAMPLE = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"


@pytest.fixture(scope="module")
def example_html(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("example") / "report.html"
    write_report([EXAMPLE], out)
    return out.read_text()


def _results(html: str) -> str:
    found = re.search(r'<section id="results">.*?</section>', html, re.S)
    assert found is not None
    return found.group(0)


def _row(html: str, job: str) -> str:
    found = re.search(rf"<td>{re.escape(job)}</td>.*?</tr>", html, re.S)
    assert found is not None
    return found.group(0)


@pytest.mark.slow  # renders whole reports; neither root nor fio
def test_the_same_folder_named_three_ways_is_reported_once(
    tmp_path: Path, run_cli: Callable[..., object], example_html: str
) -> None:
    link = tmp_path / "same-results"
    link.symlink_to(EXAMPLE.resolve(), target_is_directory=True)
    twice = tmp_path / "twice.html"
    done = run_cli("report", str(EXAMPLE), f"{EXAMPLE}/", str(link), "-o", str(twice))
    assert done.exit_code == 0, done.stderr  # type: ignore[attr-defined]
    html = twice.read_text()
    assert "<title>ssdcompare: zram1 vs loop1</title>" in html
    assert _results(html) == _results(example_html)
    assert html.count("<h3>ramdisk-vs-loop on") == 1  # one sweep described, not three


@pytest.mark.slow  # renders whole reports; neither root nor fio
def test_a_job_from_another_jobfile_is_marked_and_explained(tmp_path: Path) -> None:
    copy = changed_copy(tmp_path)
    out = tmp_path / "report.html"
    write_report([EXAMPLE, copy], out, baseline="loop1 @ramdisk-vs-loop")
    html = out.read_text()
    row = _row(html, CHANGED_JOB)
    cells = parse(row).cells
    marked = [c for c in cells if "nc" in c["class"].split()]
    assert len(marked) == 5 * 2  # five cells for each device of the other sweep
    # labels: zram1 and loop1 (the baseline) of the example, then the same two of the copy
    ratios = [cells[2 + 5 * k + 4]["text"].strip() for k in range(4)]
    assert ratios[0].startswith("×") and ratios[1] == "baseline"
    assert all(r.startswith("≠ jobfile") for r in ratios[2:])  # then the footnote number
    other = parse(_row(html, "randread-4k-qd4")).cells
    assert all(other[2 + 5 * k + 4]["text"].startswith("×") for k in (0, 2, 3))
    summary = job_summary(load([EXAMPLE, copy]))
    hashes = set(summary.loc[summary["job"] == CHANGED_JOB, "workload_hash"])
    notes = re.search(r'<ol class="footnotes">.*?</ol>', html, re.S)
    assert notes is not None
    jobfile_notes = [n for n in re.findall(r"<li>(.*?)</li>", notes.group(0)) if "jobfiles" in n]
    assert len(jobfile_notes) == 2
    for note in jobfile_notes:
        assert all(h in note for h in hashes)
        assert "runtime 10 s vs 3 s" in note and "ioengine libaio vs io_uring" in note
    assert "ran a different jobfile than the baseline" in html  # among the warnings


def test_within_one_sweep_nothing_is_marked(example_html: str) -> None:
    html = example_html
    assert not [c for c in parse(html).cells if "nc" in c["class"].split()]
    assert "≠ jobfile</span><sup>" not in html
    assert job_summary(load(EXAMPLE))["comparable"].all()


def test_numeric_cells_carry_the_raw_number_to_sort_by(example_html: str) -> None:
    html = example_html
    summary = job_summary(load(EXAMPLE))
    row = summary[(summary["job"] == "read-4m-qd16") & (summary["label"] == "zram1")].iloc[0]
    tds = re.findall(r"<td ([^>]*)>", _row(html, "read-4m-qd16"))
    sorts = [re.search(r'data-sort="([^"]*)"', attrs) for attrs in tds]
    assert sorts[0] is not None  # the workload column sorts by the table's own order
    values = [float(found.group(1)) for found in sorts[1:6] if found]
    assert len(values) == 5  # IOPS, MB/s, mean lat, p99 lat, ratio of the first device
    expected = [row["iops_mean"], row["bw_bytes_mean"], row["lat_mean_us_mean"],
                row["lat_p99_us_mean"]]  # fmt: skip
    assert values[:4] == [float(str(v)) for v in expected]


def _megabytes(text: str) -> float:
    number, unit = re.match(r"([\d.]+) ([MG])B/s", text.strip()).groups()  # type: ignore[union-attr]
    return float(number) * (1000 if unit == "G" else 1)


def test_sorting_by_mb_s_in_a_browser_orders_by_the_number(
    tmp_path: Path, example_html: str
) -> None:
    html = example_html
    shown = [_megabytes(c["text"]) for c in parse(_results(html)).cells
             if re.fullmatch(r"[\d.]+ [MG]B/s", c["text"].strip())]  # fmt: skip
    assert any(v >= 1000 for v in shown) and any(v < 1000 for v in shown), "needs GB/s and MB/s"
    # click the first MB/s heading of the first table (random reads), as a reader would
    click = (
        '<script>var t = document.querySelector("table.results");'
        "Array.from(t.tHead.rows[1].cells).filter(function (c) {"
        ' return c.textContent.trim() === "MB/s"; })[0].click();</script></body>'
    )
    clicked = tmp_path / "clicked.html"
    clicked.write_text(html.replace("</body>", click))
    dom = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", clicked.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    table = re.search(r'<table class="sortable-table results">.*?</table>', dom.stdout, re.S)
    assert table is not None, dom.stderr[-2000:]
    rows = re.findall(r"<tr>(.*?)</tr>", table.group(0).split("<tbody>")[1], re.S)
    first_device_bw = [parse(f"<table><tr>{r}</tr></table>").cells[3]["text"] for r in rows]
    numbers = [_megabytes(text) for text in first_device_bw]
    assert len(numbers) > 3
    assert numbers == sorted(numbers), first_device_bw
