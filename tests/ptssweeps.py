"""SNIA PTS sweeps for the end-to-end tests: several at once, each with the real fio on a loop
device of its own over a file in memory (/dev/shm: a loop device over the disk is too noisy
for rounds of a tenth of a second to settle), its reads and writes capped at a number of IOPS
(tests/blkio.py) so that what the rounds measure is the cap: steady from the first round. A
capped device waits rather than burns CPU, so the sweeps run side by side. And the report
as a reader sees it: each PTS section read out of headless Chromium."""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from blkio import iops_capped
from blockdevs import loop_device
from reportbrowser import measure

MEMORY = Path("/dev/shm")
SUITES = Path(__file__).parent / "suites"


@dataclass(frozen=True)
class Planned:
    """One sweep: its name (its results folder's), suite, --scale, IOPS cap and device size."""

    name: str
    suite: str
    scale: float
    cap: int
    size: int = 32 << 20


@contextlib.contextmanager
def pts_sweeps(scratch: Path, planned: list[Planned]) -> Iterator[dict[str, Path]]:
    """Run every planned sweep at once (`ssdcompare sweep`, report included), each on its
    own capped loop device; yields their results folders by name. Devices, images and the
    cap's group are gone after."""
    memory = Path(tempfile.mkdtemp(prefix="ssdcompare-pts-", dir=MEMORY))
    with contextlib.ExitStack() as stack:
        stack.callback(shutil.rmtree, memory, True)
        caps = stack.enter_context(iops_capped("pts"))
        started = []
        for plan in planned:
            device = stack.enter_context(loop_device(memory / f"{plan.name}.img", plan.size))
            caps.cap(device, plan.cap, plan.cap)
            out = scratch / plan.name
            command = caps.command(sys.executable, "-m", "ssdcompare", "sweep", "--suite",
                                   plan.suite, "--devices", device, "--scale",
                                   f"{plan.scale:g}", "--out", str(out))  # fmt: skip
            process = subprocess.Popen(command, stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, text=True)  # fmt: skip
            started.append((plan, out, process))
        folders = {}
        for plan, out, process in started:
            _, said = process.communicate(timeout=600)
            assert process.returncode == 0, f"{plan.name}: {said[-3000:]}"
            folders[plan.name] = out
        yield folders


# what a reader sees of the PTS sections, read out of the page as JSON
_READ_SECTIONS = """
function text(e) { return e ? e.textContent.replace(/\\s+/g, " ").trim() : null; }
function shown(e) { var r = e.getBoundingClientRect(); return r.width > 0 && r.height > 0; }
function table(t) {
  return {caption: text(t.querySelector("caption")),
          head: Array.from(t.tHead.rows).map(function (r) {
            return Array.from(r.cells).map(text); }),
          rows: Array.from(t.tBodies[0].rows).map(function (r) {
            return Array.from(r.cells).map(function (c) {
              var sub = c.querySelector("small");
              return {text: text(c.firstChild), sub: text(sub), cls: c.className,
                      tip: c.getAttribute("title")}; }); }),
          shown: shown(t)};
}
function chart(f) {
  var svg = f.querySelector("svg.chart");
  return {title: text(f.querySelector("figcaption")), shown: !!svg && shown(svg),
          bands: f.querySelectorAll("svg rect.band").length,
          guides: Array.from(f.querySelectorAll("svg path.guide title")).map(text),
          points: Array.from(f.querySelectorAll("svg g[class^='d'] title")).map(text),
          lines: f.querySelectorAll("svg .lines path").length,
          targets: f.querySelectorAll("svg g.target").length,
          answers: f.querySelectorAll("svg g.answer").length,
          keys: Array.from(f.querySelectorAll(".chart-keys .key")).map(text)};
}
var banner = document.getElementById("scaled");
var found = {banner: text(banner), bannerShown: !!banner && shown(banner),
             bannerFirst: !!banner && banner.previousElementSibling.tagName === "HEADER",
             note: text(document.querySelector("p.pts-note")),
             advice: text(document.querySelector(".advice")), sections: {}};
document.querySelectorAll("section.pts").forEach(function (s) {
  found.sections[s.id] = {
    title: text(s.querySelector("h2")), scaled: text(s.querySelector("p.scaled")),
    rule: Array.from(s.querySelectorAll("ul.rule li")).map(text),
    window: text(s.querySelector("h2 ~ p.muted")),
    devices: Array.from(s.querySelectorAll("div.pts-device")).map(function (d) {
      return {label: text(d.querySelector("h3")), purge: text(d.querySelector("dd.purge")),
              fill: text(d.querySelector("dd.fill")),
              rounds: Array.from(d.querySelectorAll("ul.rounds li")).map(text),
              charts: Array.from(d.querySelectorAll("figure.steady-chart")).map(chart)}; }),
    tables: Array.from(s.querySelectorAll("table.pts")).map(table),
    answers: Array.from(s.querySelectorAll("ul.answers li")).map(text),
    charts: Array.from(s.querySelectorAll(
      "figure.dirth-chart, figure.wsat-chart, figure.hir-chart, figure.xsr-chart")).map(chart)};
});
return found;
"""


def read_sections(report: Path, scratch: Path) -> dict[str, Any]:
    """The report's PTS parts as a reader sees them in Chromium: the banner, the Results
    table's note, the advice under the answer, and each PTS section (by its id) with its
    devices, tables and charts."""
    scratch.mkdir(parents=True, exist_ok=True)
    return measure(report.read_text(encoding="utf-8"), _READ_SECTIONS, 1400, scratch)  # type: ignore[no-any-return]


def record(folder: Path, group: str) -> dict[str, Any]:
    """A group's rounds.json in a results folder of one device."""
    (path,) = folder.glob(f"rounds/*/{group}/rounds.json")
    return dict(json.loads(path.read_text()))
