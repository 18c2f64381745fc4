"""The report as a colleague reads it, in a real browser at 900 px and at 1,920 px: footnote
markers that cannot pass for exponents, a legible overview, charts that use the page, tables
that scroll in their own box with the job in view, a hatch that shows."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from reportbrowser import measure
from test_report import parse

from ssdcompare.report import svg as charts
from ssdcompare.report.build import write_report

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
          target: target ? target.parentElement.tagName + " " +
                           target.parentElement.parentElement.className : null};
});
seen.tables = Array.from(document.querySelectorAll("div.scroll")).map(function (wrap) {
  var row = wrap.querySelector("tbody tr"), first = row.cells[0];
  var last = row.cells[row.cells.length - 1];
  var found = {section: wrap.closest("section").id, fits: wrap.scrollWidth <= wrap.clientWidth,
               position: css(first, "position")};
  window.scrollTo(0, box(wrap).top + window.scrollY - 100);  // in the window, to hit-test
  wrap.scrollLeft = wrap.scrollWidth;  // scrolled as far right as it goes
  var kept = box(first), middle = (kept.top + kept.bottom) / 2;
  var hit = document.elementFromPoint(kept.left + 4, middle);
  found.scrolled = {box: box(wrap), first: kept, last: box(last),
                    firstOnTop: hit !== null && first.contains(hit)};
  wrap.scrollLeft = 0;
  return found;
});
window.scrollTo(0, 0);
seen.content = box(document.querySelector("#charts")).width;
seen.panels = Array.from(document.querySelectorAll("#charts .panels")).map(function (panel) {
  var figures = Array.from(panel.querySelectorAll("figure:not(.wide)"));
  return {box: box(panel), charts: figures.map(function (figure) {
    var caption = figure.querySelector("figcaption");
    return {box: box(figure.querySelector("svg")), title: caption.textContent,
            titleFits: caption.scrollWidth <= caption.clientWidth,
            texts: Array.from(figure.querySelectorAll("svg text")).map(function (t) {
              return t.textContent; })};
  })};
});
var map = document.querySelector("svg.heatmap");
seen.heatmap = {drawn: box(map).width, width: parseFloat(map.getAttribute("width")),
  sizes: Array.from(map.querySelectorAll("text")).map(function (t) {
    return parseFloat(css(t, "font-size")); }),
  grey: css(map.querySelector('rect[fill="' + "{grey}" + '"]'), "fill"),
  stripe: css(map.querySelector("pattern rect:last-child"), "fill")};
var hatched = document.querySelector("td.dist"), grey = document.querySelector("td.cpu");
seen.hatch = {cell: css(hatched, "background-image"),
              swatch: css(document.querySelector(".swatch.dist"), "background-image"),
              grey: css(grey, "background-color"),
              greySwatch: css(document.querySelector(".swatch:not(.dist)"), "background-color")};
var warnings = document.querySelector("ul.warnings"), item = warnings.querySelector("li");
seen.warnings = {inset: box(item).left - box(warnings).left,
                 fontSize: parseFloat(css(item, "font-size"))};
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
    look = LOOK.replace("{grey}", charts.BOUND_GREY)
    return {width: measure(report, look, width, scratch) for width in WIDTHS}


def test_footnote_markers_are_bracketed_links_set_apart_from_the_figures(report: str) -> None:
    results = re.search(r'<section id="results">.*?</section>', report, re.S)
    assert results is not None
    # no number is raised after a figure: the only superscript is the legend's 10^6
    assert re.findall(r"<sup>(.*?)</sup>", results.group(0)) == ["6"]
    markers = re.findall(r'(.)<a class="fn" href="#n(\d+)">\[(\d+)\]</a>', results.group(0))
    assert len(markers) >= 10
    notes = re.findall(r'<li><a id="n(\d+)"></a>', results.group(0))
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


@pytest.mark.parametrize("width", WIDTHS)
def test_wide_tables_scroll_in_their_own_box_with_the_first_column_in_view(
    seen: dict[int, dict[str, Any]], width: int
) -> None:
    page, tables = seen[width]["page"], seen[width]["tables"]
    assert page["scroll"] <= page["width"]  # the page itself never scrolls sideways
    results = [t for t in tables if t["section"] == "results"]
    assert len(results) == 4  # a table per pattern family
    if width == 1920:
        assert all(t["fits"] for t in results)
    else:
        assert not all(t["fits"] for t in results)  # 900 px is too narrow for both devices
    for table in tables:
        assert table["position"] == "sticky"
        scrolled = table["scrolled"]
        # scrolled to its end: the last column (the baseline's ratio) is in the box, and the
        # first (the job) still at the box's left edge, above the columns passing under it
        assert scrolled["last"]["right"] <= scrolled["box"]["right"] + 1
        assert abs(scrolled["first"]["left"] - scrolled["box"]["left"]) <= 1
        assert scrolled["firstOnTop"]


def _rgb(text: str) -> list[tuple[int, int, int]]:
    return [tuple(map(int, found)) for found in re.findall(r"rgb\((\d+), (\d+), (\d+)\)", text)]


def _luminance(rgb: tuple[int, int, int]) -> float:
    """Relative luminance (WCAG 2)."""
    linear = [c / 255 / 12.92 if c <= 10 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in rgb]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a: tuple[int, int, int], b: tuple[int, int, int]) -> float:
    light, dark = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_disturbed_hatch_shows_and_warnings_keep_their_bullets_inside(
    seen: dict[int, dict[str, Any]], width: int
) -> None:
    hatch = seen[width]["hatch"]
    assert hatch["cell"] == hatch["swatch"]  # the legend shows the cells' own hatch
    stripes = [c for c in _rgb(hatch["cell"]) if c != (255, 255, 255)]
    assert stripes, hatch
    white = (255, 255, 255)
    # stripes that stand out from white (the old ones: 1.2) and under which dark figures
    # stay legible
    assert all(_contrast(s, white) >= 1.5 and _contrast(s, (26, 26, 26)) >= 7 for s in stripes)
    widths = [int(w) for w in re.findall(r"(\d+)px", hatch["cell"])]
    assert widths and (widths[-1] - widths[-2]) / widths[-1] >= 0.25  # a stripe's share
    assert hatch["grey"] == hatch["greySwatch"]
    warnings = seen[width]["warnings"]
    # a bullet sits left of its line: the box leaves it room (the old one: 1.07 em)
    assert warnings["inset"] >= 1.5 * warnings["fontSize"]


@pytest.mark.parametrize("width", WIDTHS)
def test_charts_grow_with_the_page_in_a_grid_and_keep_their_titles_whole(
    seen: dict[int, dict[str, Any]], width: int
) -> None:
    page = seen[width]
    assert page["content"] >= 0.9 * page["page"]["width"]  # the page is used, not a strip of it
    panels = [p for p in page["panels"] if p["charts"]]
    figures = [chart for panel in panels for chart in panel["charts"]]
    assert len(figures) >= 30
    for chart in figures:
        drawn = chart["box"]
        # wider than the old fixed 330 px, at most 640, in the drawing's own proportions
        assert 330 < drawn["width"] <= 640, chart["title"]
        assert drawn["height"] / drawn["width"] == pytest.approx(250 / 400, abs=0.01)
        # every title is whole: it wraps in the page instead of being cut with "…"
        assert chart["titleFits"] and "…" not in chart["title"]
        assert not any("…" in text for text in chart["texts"])
    for panel in panels:
        rows: dict[float, list[dict[str, Any]]] = {}
        for chart in panel["charts"]:
            rows.setdefault(round(chart["box"]["bottom"]), []).append(chart)
        assert all(chart["box"]["right"] <= panel["box"]["right"] + 1 for chart in panel["charts"])
        across = max(len(row) for row in rows.values())
        # as many charts side by side as the width holds: 2 at 900 px, 4 at 1,920 px
        columns = 2 if width == 900 else 4
        assert across == min(len(panel["charts"]), columns)
        if len(panel["charts"]) >= columns:  # a full row reaches across the section
            used = max(c["box"]["right"] for c in panel["charts"]) - panel["box"]["left"]
            assert used >= 0.9 * panel["box"]["width"]


# the page as printed: its print rules in force (turned from `@media print` into rules for
# every medium), at the width of an A4 page's printable area, after the browser's beforeprint
PRINTED = """
function box(el) { var r = el.getBoundingClientRect(); return {left: r.left, right: r.right}; }
var details = Array.from(document.querySelectorAll("details.family, details.charts"));
var before = details.map(function (d) { return d.open; });
details.forEach(function (d) { d.open = false; });  // as a large report opens: folded
window.dispatchEvent(new Event("beforeprint"));
var seen = {opened: details.map(function (d) { return d.open; }),
            page: {width: window.innerWidth, scroll: document.documentElement.scrollWidth}};
seen.across = Array.from(document.querySelectorAll("#charts .panels")).map(function (panel) {
  var lefts = Array.from(panel.querySelectorAll("figure:not(.wide)")).map(function (f) {
    return Math.round(box(f).left); });
  return {charts: lefts.length, columns: new Set(lefts).size};
});
seen.tablesFit = Array.from(document.querySelectorAll("div.scroll")).every(function (w) {
  return w.scrollWidth <= w.clientWidth + 1; });
window.dispatchEvent(new Event("afterprint"));
seen.refolded = details.every(function (d) { return !d.open; });
details.forEach(function (d, i) { d.open = before[i]; });
return seen;
"""


def test_it_prints_every_section_open_two_charts_across_and_tables_whole(
    report: str, tmp_path: Path
) -> None:
    assert report.count("@media print") == 1
    printed = measure(report.replace("@media print", "@media all"), PRINTED, 718, tmp_path)
    assert printed["opened"] and all(printed["opened"])  # nothing folded away on paper
    assert printed["refolded"]  # and the page is as it was after printing
    assert printed["page"]["scroll"] <= printed["page"]["width"]
    assert printed["tablesFit"]  # paper does not scroll: every column is on the page
    assert all(p["columns"] == min(p["charts"], 2) for p in printed["across"] if p["charts"])


def test_the_overview_marks_each_job_as_the_table_marks_its_two_results(report: str) -> None:
    rows = re.findall(r"<tr><td>([^<]+)</td>(.*?)</tr>", report, re.S)
    assert len(rows) == 19
    heatmap = re.search(r'<svg class="chart heatmap".*?</svg>', report, re.S)
    assert heatmap is not None
    fills = re.findall(r'<text x="[^"]+" y="14" class="job">([^<]+)</text><rect [^>]* '
                       r'fill="([^"]+)">', heatmap.group(0))  # fmt: skip
    assert [job for job, _ in fills] == [job for job, _ in rows]
    marked = {job: fill for job, fill in fills}
    for job, cells in rows:
        # the IOPS cells of zram1 and of loop1 (the baseline): what limited either
        found = parse(f"<table><tr><td>{job}</td>{cells}</tr></table>").cells
        assert len(found) == 2 + 5 * 2, job
        classes = [found[2]["class"], found[7]["class"]]
        if any("cpu" in c for c in classes):
            assert marked[job] == charts.BOUND_GREY, job
        elif any("dist" in c for c in classes):
            assert marked[job] == "url(#disturbed)", job
        else:
            assert marked[job].startswith("#") and marked[job] != charts.BOUND_GREY, job
    assert {"url(#disturbed)", charts.BOUND_GREY} < set(marked.values())  # both kinds shown


@pytest.mark.parametrize("width", WIDTHS)
def test_the_overview_is_legible_and_drawn_in_the_tables_colours(
    seen: dict[int, dict[str, Any]], width: int
) -> None:
    heatmap, hatch = seen[width]["heatmap"], seen[width]["hatch"]
    assert heatmap["drawn"] == heatmap["width"]  # at its own size, never shrunk to fit
    assert len(heatmap["sizes"]) > 19 * 2 and min(heatmap["sizes"]) >= 11  # the old: 8 px
    assert heatmap["grey"] == hatch["grey"]  # the table's grey for CPU- or host-bound
    assert _rgb(heatmap["stripe"]) == [c for c in _rgb(hatch["cell"]) if c != (255, 255, 255)][:1]
