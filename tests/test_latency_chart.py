"""The latency-vs-load chart: one per curve, in the report (checked in a browser) and as a
matplotlib Figure (ssdcompare.plot.latency_curve). Its points are the frame's runs: the
curve's paced runs on their line, the closed-loop runs of the same workload hollow beside
it, a run that could not reach its load apart; latency targets and each device's answer on
them. A real sweep on two loop devices; a made-up frame for what a run cannot make at will
(a point that could not reach its load, a CPU-bound one, an answer between two points)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from blockdevs import loop_device
from reportbrowser import measure
from suitefiles import suite_file

import ssdcompare
import ssdcompare.plot
from ssdcompare.analysis.slo import parse_slos, run_points, slo_summary
from ssdcompare.errors import SsdcompareError
from ssdcompare.report import svg as charts
from ssdcompare.report.build import write_report
from ssdcompare.report.figure import figure
from ssdcompare.report.loadchart import load_charts
from ssdcompare.units import format_count, format_latency

# one worker runs this file's tests (scripts/test.sh: --dist loadgroup): their module
# fixture, a sweep or a big results folder, is then made once, not once per worker
pytestmark = pytest.mark.xdist_group("test_latency_chart")

EXAMPLE = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"
CURVE = "randread-4k-qd16"
CURVE_JOB = "{rw: randread, bs: 4k, iodepth: 16, curve: [10, 50, 80, 100]}"
# the same workload at other depths, without a curve: closed-loop points beside it
SWEPT = ["{rw: randread, bs: 4k, iodepth: 1}", "{rw: randread, bs: 4k, iodepth: 4}"]
# every point meets the first (its answer: at least the highest reached point), none the
# second: whatever this machine's speed, the first is answered and the second never
TARGETS = ["p99=10s", "p50=1us"]
METRICS = ("p50", "p99", "p99.9")


@pytest.fixture(scope="module")
def swept(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, pd.DataFrame]]:
    """A curve and a queue-depth sweep of the same workload on two loop devices, 1 s a run."""
    folder = tmp_path_factory.mktemp("curve")
    suite = suite_file(folder, "curve", CURVE_JOB, *SWEPT, defaults="{runtime: 1, size: 32m}")
    with (
        loop_device(folder / "a.img", 64 << 20) as a,
        loop_device(folder / "b.img", 64 << 20) as b,
    ):
        run = ssdcompare.run_sweep(f"{a},{b}", suite=str(suite), out=folder / "r",
                                   read_only=True, report=False)  # fmt: skip
    assert run.complete
    yield run.path, run.frame()


def runs_of(frame: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The curve's paced runs and the closed-loop runs beside it, each a row (run_points)."""
    paced = run_points(frame[frame["curve"].eq(CURVE) & frame["curve_pct"].notna()])
    closed = frame[(frame["curve"].eq(CURVE) & frame["curve_pct"].isna())
                   | frame["job"].isin(["randread-4k-qd1", "randread-4k-qd4"])]  # fmt: skip
    return paced, run_points(closed)


def limited(run: pd.Series) -> bool:
    return run["verdict"] in ("cpu", "host") or bool(run["cpu_bound"])


# the latency chart's figures as a reader's browser has them: ticks, points, marks, keys
LOOK = """
  var figure = Array.from(document.querySelectorAll("#charts figure")).find(function (f) {
    return f.querySelector("figcaption").textContent.indexOf(CAPTION) === 0; });
  if (!figure) return null;
  var chart = figure.querySelector("svg.chart");
  function texts(part) { return Array.from(part.querySelectorAll("text")); }
  // the axes are shared parts, placed by reference: the y axis is the second
  var y = document.getElementById(chart.querySelectorAll("use")[1].getAttribute("href").slice(1));
  var target = Array.from(chart.querySelectorAll("g.target"));
  return {
    shown: chart.getBoundingClientRect().width > 0,
    ticks: texts(y.querySelector("g[text-anchor=end]")).map(function (t) {
      return [t.textContent, parseFloat(t.getAttribute("y"))]; }),
    tips: Array.from(chart.querySelectorAll("g[class^='d'] title")).map(function (t) {
      return t.textContent; }),
    hollow: chart.querySelectorAll(".hollow").length,
    hollowFill: Array.from(chart.querySelectorAll(".hollow")).map(function (m) {
      return getComputedStyle(m).fill; }),
    apart: chart.querySelectorAll(".apart").length,
    rings: chart.querySelectorAll("circle[r='7']").length,
    lines: Array.from(chart.querySelectorAll("g.lines path")).map(function (p) {
      return getComputedStyle(p).strokeDasharray; }),
    targets: target.map(function (g) { var d = g.querySelector("path").getAttribute("d");
      return [g.querySelector("title").textContent, parseFloat(d.split(" ")[1])]; }),
    answers: Array.from(chart.querySelectorAll("g.answer title")).map(function (t) {
      return t.textContent; }),
    keys: figure.querySelector(".chart-keys") ? figure.querySelector(".chart-keys").innerText : "",
    depthTips: Array.from(document.querySelectorAll("#charts figure")).filter(function (f) {
      return f.querySelector("figcaption").textContent.indexOf("IOPS against queue depth") === 0;
    }).map(function (f) { return f.querySelectorAll("g[class^='d'] title").length; }),
  };
"""


@pytest.mark.root
@pytest.mark.fio
def test_the_report_draws_each_curve_with_its_points_targets_and_answers(
    swept: tuple[Path, pd.DataFrame], tmp_path: Path
) -> None:
    folder, frame = swept
    report = write_report([folder], tmp_path / "report.html", slo=TARGETS).read_text()
    seen = measure(report, f"var CAPTION = 'Latency against load: {CURVE}';" + LOOK, 1280,
                   tmp_path)  # fmt: skip
    assert seen is not None and seen["shown"]
    _log_latency_axis(seen["ticks"])
    paced, closed = runs_of(frame)
    # a point per run and latency, each with its figures on hover
    assert len(seen["tips"]) == 3 * (len(paced) + len(closed))
    for _, run in paced.iterrows():
        asked, achieved = format_count(run["rate_asked_iops"]), format_count(run["iops"])
        said = (f"{run['label']}, {run['curve_pct']:g} % of the maximum: asked {asked} IOPS, "
                f"reached {achieved}")  # fmt: skip
        mine = [tip for tip in seen["tips"] if tip.startswith(said)]
        assert len(mine) == 3, (said, seen["tips"])
        assert any(f"p99 {format_latency(run['lat_p99'])}" in tip for tip in mine)
    for _, run in closed.iterrows():
        said = re.escape(f"{run['label']}, QD {run['iodepth']}") + "[ ,].*closed loop"
        assert sum(bool(re.match(said, tip)) for tip in seen["tips"]) == 3
    assert seen["hollow"] == 3 * len(closed)
    assert set(seen["hollowFill"]) == {"rgb(255, 255, 255)"}  # white inside the device's colour
    unreached = paced[paced["rate_reached"].eq(False)]
    assert seen["apart"] == 3 * len(unreached)
    bound = sum(limited(run) for frame_ in (paced, closed) for _, run in frame_.iterrows())
    assert seen["rings"] == 3 * bound
    # p50, p99, p99.9 in three line styles (the device's colour), one line per device each
    assert sorted(set(seen["lines"])) == sorted({"1.5px, 3px", "none", "7px, 3px"})
    # each target a line at its limit, named; an answer only where a device has one
    assert [title for title, _ in seen["targets"]] == [
        "latency target: p99 ≤ 10.00 s", "latency target: p50 ≤ 1.0 µs"]  # fmt: skip
    ten_s = dict(seen["ticks"])["10s"]
    assert abs(seen["targets"][0][1] - ten_s) <= 1
    answers = slo_summary(frame, parse_slos(TARGETS), None)
    answered = answers[answers["slo_iops"].notna()]
    assert len(seen["answers"]) == len(answered) >= 1
    assert set(answered["slo"]) == {"p99 ≤ 10.00 s"}  # every point meets it, none the other
    for _, row in answered.iterrows():
        said = f"{row['label']} within p99 ≤ 10.00 s: at least {format_count(row['slo_iops'])}"
        assert said in " ".join(seen["answers"])
    assert all(word in seen["keys"] for word in ("p50", "p99.9", "closed loop", "latency target"))
    # the paced runs are no queue-depth points: that chart has QD 1, 4 and the unpaced 16
    assert seen["depthTips"] == [3 * 2]


def _log_latency_axis(ticks: list[list[Any]]) -> None:
    """The y ticks are latencies a decade apart, evenly spaced: a log axis."""
    units = {"µs": 1.0, "ms": 1e3, "s": 1e6}
    values = []
    for text, y in ticks:
        found = re.fullmatch(r"([\d.]+)(µs|ms|s)", text)
        assert found is not None, text
        values.append((float(found.group(1)) * units[found.group(2)], y))
    values.sort()
    assert len(values) >= 3
    for (low, _), (high, _) in zip(values, values[1:], strict=False):
        assert math.isclose(high / low, 10)
    gaps = [a[1] - b[1] for a, b in zip(values, values[1:], strict=False)]
    assert max(gaps) - min(gaps) <= 1.5  # pixels, rounded


@pytest.mark.root
@pytest.mark.fio
def test_plot_draws_the_curve_as_a_figure_with_the_frame_figures(
    swept: tuple[Path, pd.DataFrame],
) -> None:
    _, frame = swept
    fig = ssdcompare.plot.latency_curve(frame, CURVE, slo=TARGETS)
    (ax,) = fig.axes
    assert ax.get_yscale() == "log" and ax.get_xscale() == "linear"
    paced, closed = runs_of(frame)
    drawn = {line.get_label(): line for line in ax.get_lines() if line.get_gid() == "series"}
    apart = {line.get_label(): line for line in ax.get_lines() if line.get_gid() == "apart"}
    for label in set(paced["label"]):
        mine = paced[paced["label"] == label].sort_values("iops")
        reached = mine[mine["rate_reached"].eq(True)]
        for metric in METRICS:
            line = drawn[f"{label} {metric}"]
            assert list(line.get_xdata()) == list(reached["iops"])
            assert list(line.get_ydata()) == list(reached[f"lat_{metric}"])
            hollow = drawn[f"{label} {metric} (closed loop)"]
            assert hollow.get_linestyle() == "None" and hollow.get_markerfacecolor() == "#fff"
            theirs = closed[closed["label"] == label]
            assert sorted(hollow.get_xdata()) == sorted(theirs["iops"])
            short = mine[mine["rate_reached"].eq(False)]
            cross = apart.get(f"_{label} {metric} (could not reach its load)")
            assert sorted(cross.get_xdata() if cross else []) == sorted(short["iops"])
    targets = [line for line in ax.get_lines() if line.get_gid() == "target"]
    assert sorted(line.get_ydata()[0] for line in targets) == [1.0, 10e6]
    answers = slo_summary(frame, parse_slos(TARGETS), None).dropna(subset=["slo_iops"])
    marks = [line for line in ax.get_lines() if line.get_gid() == "answer"]
    assert sorted((m.get_xdata()[0], m.get_ydata()[0]) for m in marks) == sorted(
        (iops, 10e6) for iops in answers["slo_iops"])  # fmt: skip


def run(job: str, iops: float, p99: float, **given: Any) -> dict[str, Any]:
    """A made-up run of one direction, as the frame has it: 4 KiB random reads at QD 16."""
    row = {"sweep": "S", "host": "h", "device": "a", "label": "a", "member": None, "job": job,
           "repeat": 1, "direction": "read", "status": "ok", "rw": "randread",
           "bs_bytes": 4096, "iodepth": 16, "numjobs": 1, "rwmixread": None, "fsync": 0,
           "fdatasync": 0, "extra_options": None, "state": None, "thinktime_us": None,
           "io_size_bytes": None, "span_bytes": 1 << 26, "ioengine": "io_uring",
           "curve": None, "curve_pct": math.nan, "curve_base": None,
           "rate_asked_iops": math.nan, "rate_reached_pct": math.nan, "rate_reached": None,
           "iops": iops, "total_ios": iops, "lat_mean_us": p99 / 3, "lat_p50_us": p99 / 10,
           "lat_p99_us": p99, "lat_p999_us": p99 * 2, "lat_dist_us": None,
           "verdict": "drive", "cpu_bound": False}  # fmt: skip
    return {**row, **given}


def point(share: float, iops: float, p99: float, asked: float, **given: Any) -> dict[str, Any]:
    """A made-up paced run of the curve "c" at `share` % of its maximum."""
    reached = iops / asked * 100
    return run(f"c@{share:g}pct", iops, p99, curve="c", curve_pct=share, curve_base="own",
               rate_asked_iops=asked, rate_reached_pct=reached,
               rate_reached=reached >= 98, **given)  # fmt: skip


@pytest.fixture
def made_up() -> pd.DataFrame:
    """A curve whose 80 % point the CPU limited and whose 100 % point fell short of its
    load, with a closed-loop run at QD 1 and two runs of other workloads."""
    return pd.DataFrame([
        run("c@max", 1000, 600, curve="c", curve_base="own"),
        point(50, 500, 100, 500),
        point(80, 800, 300, 800, verdict="cpu", cpu_bound=True),
        point(100, 850, 5000, 1000),
        run("c-qd1", 300, 50, iodepth=1),
        run("other-bs", 200, 80, bs_bytes=8192, iodepth=1),
        run("other-engine", 250, 90, ioengine="libaio", iodepth=1),
    ])  # fmt: skip


def test_a_point_short_of_its_load_is_apart_and_a_cpu_bound_one_marked(
    made_up: pd.DataFrame,
) -> None:
    ((title, caption, spec),) = load_charts(made_up, ["a"], slos=parse_slos("p99=200us"))
    assert title == "Latency against load: c" and "paced at 50, 80, 100 %" in caption
    lines = {line.name: line for line in spec.series}
    assert set(lines) == {*METRICS, *(f"{m} (closed loop)" for m in METRICS)}
    p99 = lines["p99"]
    assert p99.xs == [500, 800, 850] and p99.ys == [100, 300, 5000]
    assert p99.apart == [False, False, True] and p99.bound == [False, True, False]
    assert "could not reach its load" in p99.tips[2] and "(CPU-bound)" in p99.tips[1]
    # the closed loop: the curve's unpaced run and the same workload at QD 1; not the others
    closed = lines["p99 (closed loop)"]
    assert sorted(closed.xs) == [300, 1000] and closed.hollow and not closed.joined
    assert closed.tips[0].startswith("QD 1 (closed loop): 300 IOPS, p99 50.0 µs")
    assert closed.tips[1].startswith("QD 16, the curve's maximum (closed loop): 1.00k IOPS")
    # the answer lies between the 50 % and 80 % points: linear in IOPS, log in latency
    ((target,), (mark,)) = spec.targets, spec.target_marks
    assert target.y == 200 and mark.y == 200
    assert math.isclose(mark.x, 500 + 300 * math.log(2) / math.log(3))
    svg = charts.svg(spec)
    assert svg is not None
    assert svg.count('class="apart"') == 3 and svg.count('class="hollow"') == 6
    assert svg.count('r="7"') == 3  # the CPU-bound point's ring, at each of its latencies
    # the unreached point is no step of its line: each line joins the two reached points
    paths = re.findall(r'<path d="M\S+ \S+l(\S+ \S+)" class="d0"', svg)
    assert len(paths) == 3
    assert svg.count('class="answer"') == 1 and svg.count('class="target"') == 1


def test_the_figure_draws_the_made_up_curve_alike(made_up: pd.DataFrame) -> None:
    ((_, _, spec),) = load_charts(made_up, ["a"], slos=parse_slos("p99=200us"))
    ax = figure([spec], ["a"]).axes[0]
    by_gid: dict[str, list[Any]] = {}
    for line in ax.get_lines():
        by_gid.setdefault(str(line.get_gid()), []).append(line)
    p99 = next(line for line in by_gid["series"] if line.get_label() == "a p99")
    assert list(p99.get_xdata()) == [500, 800]
    assert [list(line.get_xdata()) for line in by_gid["apart"]] == [[850]] * 3
    assert len(by_gid["target"]) == 1 and len(by_gid["answer"]) == 1
    assert ax.get_yscale() == "log"
    legend = [text.get_text() for text in ax.figure.legends[0].get_texts()]
    assert {"p50", "p99", "p99.9", "could not reach its load", "latency target"} <= set(legend)


def test_results_without_a_curve_have_no_such_chart() -> None:
    frame = ssdcompare.load(EXAMPLE)
    assert load_charts(frame, list(dict.fromkeys(frame["label"]))) == []
    with pytest.raises(SsdcompareError, match="latency-vs-load curve"):
        ssdcompare.plot.latency_curve(frame)
    with pytest.raises(SsdcompareError, match="no curve 'x'"):
        ssdcompare.plot.latency_curve(frame, "x")
