"""A report of 1,000 jobs x 4 devices (synthetic results shaped as a sweep writes them, made
by the benchmark) keeps its structure: a table row per job in collapsible family sections, a
heatmap of every ratio, curves per family rather than a chart per job, one offline file that
a browser filters. Its time is a figure of benchmarks/run.py, not a test."""

from __future__ import annotations

import html as markup
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_report import chromium

from ssdcompare.report.build import write_report

# one worker runs this file's tests (scripts/test.sh: --dist loadgroup): their module
# fixture, a sweep or a big results folder, is then made once, not once per worker
pytestmark = pytest.mark.xdist_group("test_report_scale")

REPO = Path(__file__).resolve().parents[1]
JOBS, DEVICES = 1000, 4


def _benchmark():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("bench_run", REPO / "benchmarks" / "run.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def big(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    scratch = tmp_path_factory.mktemp("scale")
    folder = _benchmark().synthetic_results(scratch / "synthetic", JOBS, DEVICES)
    out = write_report([folder], scratch / "report.html")
    return out.read_text(encoding="utf-8"), out


@pytest.mark.slow  # writes 4,000 runs and renders them; neither root nor fio
def test_a_thousand_jobs_on_four_devices_make_a_readable_report(big: tuple[str, Path]) -> None:
    html, path = big
    results = re.search(r'<section id="results">.*?</section>', html, re.S)
    assert results is not None
    families = re.findall(r'<details class="family"( open)?>\s*<summary><h3>(.*?)</h3>',
                          results.group(0))  # fmt: skip
    names = [name for _, name in families]
    assert names == ["Random read", "Random write", "Sequential read", "Sequential write"]
    assert not any(opened for opened, _ in families[1:])  # a large report opens folded
    rows = re.findall(r"<tr><td>([^<]+)</td>", results.group(0))
    assert len(rows) == JOBS and len(set(rows)) == JOBS
    # every numeric cell carries its number: 5 per device per job
    assert len(re.findall(r' data-sort="', results.group(0))) >= JOBS * (1 + 5 * DEVICES)
    charts = re.search(r'<section id="charts">.*?</section>', html, re.S)
    assert charts is not None
    # the overview: every job once, a column per device against the baseline
    heatmap = re.search(r'<svg class="chart heatmap".*?</svg>', charts.group(0), re.S)
    assert heatmap is not None
    assert len(re.findall(r"<rect [^>]*><title>", heatmap.group(0))) == JOBS * (DEVICES - 1)
    # curves per family, not a chart per job; per-job charts only at the curves' ends
    svgs = re.findall(r'<svg class="chart"', charts.group(0))
    qd = re.findall(r"<figcaption>IOPS against queue depth: ", charts.group(0))
    per_job = re.findall(r"<figcaption>Latency distribution: ", charts.group(0))
    assert 0 < len(qd) < JOBS / 4 and len(per_job) < JOBS / 2
    assert len(svgs) < JOBS
    assert "lowest and highest depth, every job outside such a curve" in html
    # one self-contained file, small enough to mail
    assert "<img" not in html and not re.search(r"https?://", html)
    assert path.stat().st_size <= 5_000_000


@pytest.mark.slow
def test_a_browser_filters_the_big_report(big: tuple[str, Path], tmp_path: Path) -> None:
    html, _ = big
    typed = (
        '<script>var box = document.getElementById("filter"); box.value = "randwrite-64k";'
        'box.dispatchEvent(new Event("input"));</script></body>'
    )
    page = tmp_path / "typed.html"
    page.write_text(html.replace("</body>", typed), encoding="utf-8")
    dom = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=180, check=False,
    ).stdout  # fmt: skip
    shown = re.findall(r'<tr( class="")?><td>randwrite-64k', dom)
    hidden = re.findall(r'<tr class="filtered"><td>', dom)
    assert shown and len(shown) + len(hidden) == JOBS
    assert re.search(rf'id="filter-count">{len(shown)} of {JOBS} jobs<', dom)
    # the random-write family holds the matches and is opened; the others stay folded
    assert re.search(r'<details class="family" open="">\s*<summary><h3>Random write', dom)
    assert not re.search(r'<details class="family" open="">\s*<summary><h3>Random read', dom)


def _patched(original: str, diff: str) -> str:
    """`original` with a unified diff without context (difflib's, n=0) applied."""
    old, lines = original.splitlines(), diff.splitlines()[2:]
    out: list[str] = []
    done = 0  # lines of `old` used so far
    for line in lines:
        hunk = re.match(r"@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@", line)
        if hunk is not None:
            start, count = int(hunk.group(1)), int(hunk.group(2) or 1)
            begin = start - 1 if count else start  # no lines removed: added after `start`
            out += old[done:begin]
            done = begin + count
        elif line.startswith("+"):
            out.append(line[1:])
    return "\n".join(out + old[done:]) + "\n"


@pytest.mark.slow
def test_a_thousand_jobfiles_are_each_given_exactly(big: tuple[str, Path]) -> None:
    html, path = big
    section = re.search(r'<section id="jobfiles">.*?</section>', html, re.S)
    assert section is not None
    details = re.findall(r'<details class="jobfile" id="jobfile-([^"]+)">(.*?)</details>',
                         section.group(0), re.S)  # fmt: skip
    assert len(details) == JOBS
    runs = path.parent / "synthetic" / "results" / "runs"
    full: dict[str, str] = {}
    for job, shown in details:
        quoted = re.search(r"<pre>(.*?)</pre>", shown, re.S)
        assert quoted is not None
        text = markup.unescape(quoted.group(1))
        against = re.search(r'As a difference from <a href="#jobfile-([^"]+)">', shown)
        if against is not None:  # a difference from a jobfile quoted in full before it
            text = _patched(full[against.group(1)], text)
        else:
            full[job] = text
        assert text == (runs / "dev0.img" / job / "r1" / "jobfile.fio").read_text(), job
    assert len(full) < JOBS / 4  # most of them as a few lines of difference
    # the other devices' jobfiles differ in their target alone: said once, not 3,000 times
    said = (r"<li>(dev\d\.img)'s jobfile of every job: the same but for "
            r"<code>filename=([^<]+)</code> and 1 comment line")  # fmt: skip
    shared = re.findall(said, section.group(0))
    assert [(label, Path(name).name) for label, name in shared] == [
        (f"dev{n}.img", f"dev{n}.img") for n in range(1, DEVICES)
    ]
