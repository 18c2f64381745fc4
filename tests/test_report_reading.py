"""The report as a colleague reads it, in a real browser at 900 px and at 1,920 px: footnote
markers that cannot pass for exponents, a legible overview, charts that use the page, tables
that scroll in their own box with the job in view, a hatch that shows."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from reportbrowser import measure

from ssdcompare.report import write_report

EXAMPLE = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"
WIDTHS = (900, 1920)

# what the page looks like, measured in one visit per width
LOOK = """
function box(el) { var r = el.getBoundingClientRect();
  return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, width: r.width,
          height: r.height}; }
function css(el, name) { return getComputedStyle(el).getPropertyValue(name); }
var seen = {page: {width: window.innerWidth, scroll: document.documentElement.scrollWidth}};
seen.markers = Array.from(document.querySelectorAll("#results a.fn")).map(function (a) {
  var td = a.closest("td");
  var figure = document.createRange();
  figure.selectNodeContents(td.firstChild);
  var before = a.previousSibling.previousSibling || td.firstChild;
  var left = before.nodeType === 1 ? box(before).right : figure.getBoundingClientRect().right;
  var target = document.getElementById(a.getAttribute("href").slice(1));
  return {text: a.textContent, figure: box(figure), marker: box(a),
          gap: box(a).left - left, size: parseFloat(css(a, "font-size")),
          figureSize: parseFloat(css(td, "font-size")), colour: css(a, "color"),
          figureColour: css(td, "color"), align: css(a, "vertical-align"),
          target: target ? target.tagName + " " + target.parentElement.className : null};
});
return seen;
"""


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("reading") / "report.html"
    write_report([EXAMPLE], out, baseline="loop1")
    return out.read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def seen(report: str, tmp_path_factory: pytest.TempPathFactory) -> dict[int, dict[str, Any]]:
    scratch = tmp_path_factory.mktemp("browser")
    return {width: measure(report, LOOK, width, scratch) for width in WIDTHS}


def test_footnote_markers_are_bracketed_links_set_apart_from_the_figures(report: str) -> None:
    results = re.search(r'<section id="results">.*?</section>', report, re.S)
    assert results is not None
    # no number is raised after a figure: the only superscript is the legend's 10^6
    assert re.findall(r"<sup>(.*?)</sup>", results.group(0)) == ["6"]
    markers = re.findall(r'(.)<a class="fn" href="#n(\d+)">\[(\d+)\]</a>', results.group(0))
    assert len(markers) >= 10
    notes = re.findall(r'<li id="n(\d+)">', results.group(0))
    assert notes == [str(n) for n in range(1, len(notes) + 1)]
    for space, href, shown in markers:
        assert space == "\u202f" and href == shown and shown in notes


@pytest.mark.parametrize("width", WIDTHS)
def test_a_browser_shows_footnote_markers_on_the_figures_line_smaller_and_coloured(
    seen: dict[int, dict[str, Any]], width: int
) -> None:
    markers = seen[width]["markers"]
    assert len(markers) >= 10
    for marker in markers:
        assert re.fullmatch(r"\[\d+\]", marker["text"])
        assert marker["target"] == "LI footnotes"  # it links to its note
        assert marker["size"] < marker["figureSize"] and marker["colour"] != marker["figureColour"]
        # on the figure's line, not raised like an exponent, and a space apart from it
        assert marker["align"] == "baseline"
        assert abs(marker["marker"]["bottom"] - marker["figure"]["bottom"]) <= 2, marker
        assert marker["gap"] >= 2, marker
