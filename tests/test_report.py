"""The HTML report, rendered from real stored results and opened in a real browser."""

from __future__ import annotations

import http.server
import json
import re
import shutil
import subprocess
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from ssdcompare.analysis.frame import load
from ssdcompare.analysis.summary import job_summary
from ssdcompare.report.build import build_context, write_report
from ssdcompare.results.store import ResultsDir

EXAMPLE = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"
SUITES = Path(__file__).parent / "suites"


class Cells(HTMLParser):
    """Collects table cells with their class and title, and every src/href in the page."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[dict[str, str]] = []
        self.links: list[str] = []
        self._cell: dict[str, str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        for key in ("src", "href"):
            if key in values:
                self.links.append(values[key])
        if tag == "td":
            self._cell = {"class": values.get("class", ""), "title": values.get("title", ""),
                          "text": ""}  # fmt: skip
            self.cells.append(self._cell)

    def handle_endtag(self, tag: str) -> None:
        if tag == "td":
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell["text"] += data


def parse(html: str) -> Cells:
    cells = Cells()
    cells.feed(html)
    return cells


@pytest.fixture(scope="module")
def example_report(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    out = tmp_path_factory.mktemp("report") / "report.html"
    write_report([EXAMPLE], out, baseline=None)
    return out.read_text(), out


def test_cpu_bound_cells_are_grey_with_the_reason(example_report: tuple[str, Path]) -> None:
    html, _ = example_report
    summary = job_summary(load(EXAMPLE))
    bound = summary[summary["cpu_bound"].fillna(False).astype(bool)]
    assert not bound.empty, "the example should contain CPU-bound results"
    cells = parse(html).cells
    grey = [c for c in cells if "cpu" in c["class"].split()]
    # five cells (IOPS, MB/s, mean, p99, ratio) per CPU-bound device and job
    assert len(grey) == 5 * len(bound)
    for reason in bound["cpu_bound_reason"]:
        assert any(reason in c["title"] for c in grey)
        assert reason in html  # also in the footnotes
    assert "limited by the CPU or the host" in html


def test_ratios_match_the_raw_numbers(example_report: tuple[str, Path]) -> None:
    html, _ = example_report
    frame = load(EXAMPLE)
    labels = list(dict.fromkeys(frame["label"]))
    baseline, other = labels[0], labels[1]
    job = "randread-4k-qd1"
    # recompute from the raw fio JSON files, not from the frame
    iops = {}
    for label in labels:
        files = frame[(frame["label"] == label) & (frame["job"] == job)]["fio_json"].unique()
        values = [json.loads(Path(f).read_text())["jobs"][0]["read"]["iops"] for f in files]
        iops[label] = sum(values) / len(values)
    expected = f"×{iops[other] / iops[baseline]:.2f}"
    row = re.search(rf"<td>{job}</td>.*?</tr>", html, re.S)
    assert row is not None
    assert expected in row.group(0)
    assert "baseline" in row.group(0)


@pytest.mark.fio
def test_failed_jobs_show_as_failed_never_as_zero(tmp_path: Path) -> None:
    out = tmp_path / "results"
    subprocess.run(
        [sys.executable, "-m", "ssdcompare", "sweep", "--devices", str(tmp_path / "t.img"),
         "--size", "16m", "--suite", str(SUITES / "trim-in-middle.yaml"), "--out", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    html = (out / "report.html").read_text()  # written by the sweep itself
    row = re.search(r"<td>randtrim-4k-qd1</td>.*?</tr>", html, re.S)
    assert row is not None
    cells = parse(row.group(0)).cells
    assert any("FAILED" in c["text"] for c in cells)
    assert not any(c["text"].strip() in ("0", "0.0", "0 MB/s") for c in cells)
    assert "error 25" in html  # the reason, in the footnotes


def test_the_page_is_self_contained(example_report: tuple[str, Path]) -> None:
    html, _ = example_report
    links = parse(html).links
    assert all(link.startswith(("data:", "#")) for link in links), links
    # charts are inline SVG: no image, script or style comes from anywhere else
    assert "<svg" in html and "<img" not in html
    assert not re.search(r"https?://", html)


@pytest.mark.slow  # renders whole reports; neither root nor fio
def test_several_sweeps_compare_side_by_side(tmp_path: Path) -> None:
    copy = tmp_path / "after-firmware"
    shutil.copytree(EXAMPLE, copy)
    frame = load([EXAMPLE, copy])
    labels = list(dict.fromkeys(frame["label"]))
    assert len(labels) == 4 and all("@" in label for label in labels)
    # the copy holds the same measurements: each device matches its twin, figure for figure
    original, twin = labels[0], next(lb for lb in labels[1:] if lb.split(" @")[0] ==
                                     labels[0].split(" @")[0])  # fmt: skip
    context = build_context(frame, [ResultsDir.open(EXAMPLE), ResultsDir.open(copy)], original)
    rows = [row for group in context["groups"] for row in group.rows]
    assert len(rows) == frame["job"].nunique()
    for row in rows:
        cells = dict(zip(context["labels"], row.cells, strict=True))
        assert cells[twin].iops == cells[original].iops != "-", row.job
        assert cells[twin].ratio == "×1.00", row.job
    out = tmp_path / "both.html"
    write_report([EXAMPLE, copy], out)
    html = out.read_text()
    assert all(label in html for label in labels)
    assert html.count("×1.00") >= len(rows)


class _Recorder(http.server.BaseHTTPRequestHandler):
    requests: list[str] = []

    def _record(self) -> None:
        type(self).requests.append(f"{self.command} {self.path}")
        self.send_response(502)
        self.end_headers()

    do_GET = do_POST = do_CONNECT = do_HEAD = _record  # noqa: N815

    def log_message(self, *args: object) -> None:
        return


def chromium() -> str:
    """The headless browser the report is checked in."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    raise AssertionError("chromium is not installed: scripts/install.sh installs it for tests")


@pytest.mark.slow  # seconds of its own: left out of the unprivileged rerun (test_markers)
def test_a_real_browser_renders_it_offline(example_report: tuple[str, Path],
                                           tmp_path: Path) -> None:  # fmt: skip
    _, path = example_report
    proxy = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    shot = tmp_path / "shot.png"
    try:
        done = subprocess.run(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking", "--disable-component-update",
             "--disable-sync", f"--user-data-dir={tmp_path / 'profile'}",
             f"--proxy-server=http://127.0.0.1:{proxy.server_address[1]}",
             "--proxy-bypass-list=<-loopback>", "--window-size=1280,2000",
             f"--screenshot={shot}", path.as_uri()],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        dom = subprocess.run(
            [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile2'}",
             f"--proxy-server=http://127.0.0.1:{proxy.server_address[1]}",
             "--proxy-bypass-list=<-loopback>", "--dump-dom", path.as_uri()],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        proxy.shutdown()
    assert shot.exists(), done.stderr[-2000:]
    # Chromium itself phones home (time, component updates) even with background networking
    # off; those go to Google's service hosts. Anything else would come from the page.
    housekeeping = re.compile(r"^(GET|CONNECT|POST|HEAD) (https?://)?[^/]*"
                              r"(google\.com|googleapis\.com|gvt1\.com)(:\d+)?[/ ]?")  # fmt: skip
    from_page = [r for r in _Recorder.requests if not housekeeping.match(r + " ")]
    assert from_page == [], "the report made network requests"
    assert "Uncaught" not in done.stderr + dom.stderr  # no script errors
    assert "<table" in dom.stdout and "Random read" in dom.stdout
    from PIL import Image

    image = Image.open(shot).convert("RGB")
    colours = image.getcolors(maxcolors=1 << 20)
    assert colours is not None and len(colours) > 50, "the screenshot looks blank"
    frame = pd.DataFrame(colours, columns=["count", "rgb"])
    assert frame["count"].max() < 0.97 * image.width * image.height
