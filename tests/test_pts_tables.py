"""A SNIA PTS test's tables, words and charts, made from small hand-made frames and records
(no fio): the window's figures (means of its rounds, the maximum the window's highest), the
tables each test reports with ratios to the baseline, the DIRTH answer, where each group
stands in words, and the steady-state and DIRTH charts as specs, SVG and matplotlib Figures.
The end-to-end tests on real fio are in test_pts_report.py."""

from __future__ import annotations

import math
import re
from typing import Any

import pandas as pd
import pytest

import ssdcompare.plot
from ssdcompare.analysis.pts import (
    DevicePrep,
    GroupRounds,
    PtsTables,
    dirth_answer,
    window_figures,
)
from ssdcompare.report import svg
from ssdcompare.report.figure import figure
from ssdcompare.report.pts import pts_sections, results_note, scaled_banners
from ssdcompare.report.ptschart import dirth_chart, steady_chart
from ssdcompare.results.models import FillRecord, PurgeRecord, RoundsRecord
from ssdcompare.suite.pts import RoundGroup


def run(label: str, job: str = "j", round_: int = 1, direction: str = "write",
        **given: Any) -> dict[str, Any]:  # fmt: skip
    """One direction of one round of a PTS job, as the frame has it (4 KiB random writes at
    QD 32 unless `given` says otherwise), in its group's window unless `ss_window` is False."""
    row = {"sweep": f"/r/{label}", "host": "h", "device": label, "label": label,
           "member": None, "group": None, "job": job, "repeat": round_,
           "direction": direction, "status": "ok", "error": None, "rw": "randrw",
           "rwmixread": 0, "bs_bytes": 4096, "iodepth": 32, "numjobs": 1, "fsync": 0,
           "fdatasync": 0, "workload_hash": f"h-{job}", "iops": 1000.0,
           "bw_bytes": 4096e3, "total_ios": 1000, "lat_mean_us": 100.0, "lat_p99_us": 300.0,
           "lat_p999_us": 400.0, "lat_p9999_us": 500.0, "lat_max_us": 600.0,
           "verdict": "drive", "verdict_reason": None, "cpu_bound": False,
           "cpu_bound_reason": None, "pts_test": "iops", "pts_group": "g",
           "ss_window": True}  # fmt: skip
    return {**row, **given}


def group(label: str, rounds: list[float | None], window: list[int], attained: bool = True,
          **given: Any) -> GroupRounds:  # fmt: skip
    """A group's record on `label` with its window judged as recorded."""
    values = [rounds[n - 1] or 0.0 for n in window]
    mean = sum(values) / len(values) if values else None
    record = RoundsRecord(target=label, group=given.pop("name", "g"), track="t",
                          metric=given.pop("metric", "iops"), rounds=rounds, window=window,
                          window_mean=mean, window_range_pct=5.0, window_slope_pct=2.0,
                          slope=1.0, intercept=(mean or 0) - 2, attained=attained,
                          done=given.pop("done", True), **given)  # fmt: skip
    limits = RoundGroup(name=record.group, track="t", metric=record.metric)  # type: ignore[arg-type]
    return GroupRounds(f"/r/{label}", label, label, "iops", record.group, limits, record)


def tables_of(frame: pd.DataFrame, groups: list[GroupRounds], test: str = "iops",
              scale: float | None = 0.01) -> PtsTables:  # fmt: skip
    labels = list(dict.fromkeys(frame["label"]))
    devices = [DevicePrep(f"/r/{label}", label, label, test, scale, None, True,
                          FillRecord(target=label, ok=True, size=None, started_at="",
                                     finished_at="", io_bytes=2 << 30))
               for label in labels]  # fmt: skip
    return PtsTables(devices, groups, window_figures(frame, labels[0], groups), labels,
                     labels[0])  # fmt: skip


def test_a_jobs_figures_are_its_windows_means_and_its_highest_latency() -> None:
    rows = [run("a", "randrw0-4k", 1, iops=5000.0, lat_max_us=9000.0, ss_window=False)]
    rows += [run("a", "randrw0-4k", n, iops=900.0 + 50 * n, lat_p9999_us=400.0 + n,
                 lat_max_us=700.0 + n) for n in (2, 3, 4)]  # fmt: skip
    figures = window_figures(pd.DataFrame(rows), "a", [group("a", [5000, 1000, 1050, 1100],
                                                             [2, 3, 4])])  # fmt: skip
    (row,) = figures.to_dict("records")
    # the round before the window (5000 IOPS, 9 ms) is in no figure
    assert row["iops"] == pytest.approx(1050.0) and row["rounds"] == 3
    assert row["lat_p9999_us"] == pytest.approx(403.0) and row["lat_max_us"] == 704.0
    assert row["window"] == "2–4" and row["block size"] == "4 KiB" and row["mix"] == "0/100"


def test_a_mixed_jobs_tail_is_its_worse_direction_and_unknown_when_one_lacks_it() -> None:
    mixed = {"job": "randrw65-4k", "rwmixread": 65}
    rows = [run("a", round_=1, direction="read", lat_p9999_us=300.0, **mixed),
            run("a", round_=1, direction="write", lat_p9999_us=800.0, **mixed),
            run("a", round_=2, direction="read", lat_p9999_us=200.0, **mixed),
            run("a", round_=2, direction="write", lat_p9999_us=600.0, **mixed),
            run("a", "other", 1, "read", lat_p9999_us=200.0),
            run("a", "other", 1, "write", lat_p9999_us=math.nan)]  # fmt: skip
    figures = window_figures(pd.DataFrame(rows), "a", []).set_index("job")
    assert figures.at["randrw65-4k", "lat_p9999_us"] == pytest.approx(700.0)  # (800 + 600) / 2
    assert figures.at["randrw65-4k", "mix"] == "65/35"
    assert math.isnan(figures.at["other", "lat_p9999_us"])  # never the known half alone


def iops_frame() -> pd.DataFrame:
    """Two devices' IOPS test over 2 block sizes x 2 mixes, window rounds 1-2; b is twice as
    fast except at 8 KiB 100/0, which it ran from another jobfile."""
    rows = []
    for label, factor in (("a", 1.0), ("b", 2.0)):
        for bs, size in (("8k", 8192), ("4k", 4096)):
            for mix in (100, 0):
                job = f"randrw{mix}-{bs}"
                other = label == "b" and job == "randrw100-8k"
                for n in (1, 2):
                    rows.append(run(label, job, n, "read" if mix else "write", rwmixread=mix,
                                    bs_bytes=size, iops=factor * (size // 1024) * 100 + n,
                                    workload_hash="other" if other else f"h-{job}"))  # fmt: skip
    return pd.DataFrame(rows)


def test_the_iops_table_is_block_size_by_mix_per_device_with_ratios() -> None:
    frame = iops_frame()
    tables = tables_of(frame, [group(x, [1.0, 2.0], [1, 2]) for x in ("a", "b")])
    table = tables.iops()
    assert list(table.columns) == ["100/0", "0/100"]  # all reads first
    assert list(table.index) == [("a", "8 KiB"), ("a", "4 KiB"), ("b", "8 KiB"), ("b", "4 KiB")]
    assert table.loc[("a", "8 KiB"), "0/100"] == pytest.approx(801.5)
    figures = tables.figures.set_index(["label", "job"])
    assert figures.at[("b", "randrw0-4k"), "iops_ratio"] == pytest.approx(801.5 / 401.5)
    assert math.isnan(figures.at[("b", "randrw100-8k"), "iops_ratio"])  # another jobfile
    assert figures["iops_ratio"][figures.index.get_level_values(0) == "a"].isna().all()
    (section,) = pts_sections(tables, ["a", "b"])
    first, second = section.grids
    assert first.caption == "a: IOPS" and second.caption == "b: IOPS (under each: × a)"
    assert [h.text for h in first.head[0]] == ["block size", "100/0", "0/100"]
    assert [[c.text for c in row] for row in first.rows] == [
        ["8 KiB", "802", "802"],
        ["4 KiB", "402", "402"],
    ]
    assert [c.sub for c in second.rows[1]] == ["", "2.00×", "2.00×"]
    assert second.rows[0][1].sub == ""  # no ratio across jobfiles


def test_throughput_and_latency_tables() -> None:
    rows = []
    for n in (1, 2):
        for rw in ("write", "read"):
            for size in (1 << 20, 128 << 10):
                rows.append(run("a", f"{rw}-{size}", n, rw, rw=rw, rwmixread=None,
                                bs_bytes=size, bw_bytes=(2e8 if rw == "write" else 4e8) * n,
                                pts_test="throughput"))  # fmt: skip
    tables = tables_of(pd.DataFrame(rows), [], "throughput")
    table = tables.throughput()
    assert list(table.columns) == ["read MB/s", "write MB/s"]
    assert table.loc[("a", "1 MiB"), "write MB/s"] == pytest.approx(300.0)
    assert table.loc[("a", "128 KiB"), "read MB/s"] == pytest.approx(600.0)
    (section,) = pts_sections(tables, ["a"])
    (grid,) = section.grids
    assert [h.text for h in grid.head[1]] == ["write", "read"]
    assert [c.text for c in grid.rows[0]] == ["1 MiB", "300 MB/s", "600 MB/s"]
    latency = [run("a", "randrw65-4k", 1, d, rwmixread=65, pts_test="latency",
                   lat_max_us=m) for d, m in (("read", 700.0), ("write", 2000.0))]  # fmt: skip
    table = tables_of(pd.DataFrame(latency), [], "latency").latency()
    tails = [f"{p} {what}" for p in ("p99.9", "p99.99") for what in ("µs", "I/Os", "backed")]
    assert list(table.columns) == ["mean µs", *tails, "max µs"]
    assert table.loc[("a", "4 KiB", "65/35"), "max µs"] == 2000.0


def test_a_percentile_from_too_few_ios_is_said_so_in_the_table_and_the_report() -> None:
    # 65/35: its writes (the worse p99.99) had 1,500 I/Os in round 2, its reads 20,000; a
    # percentile is backed by the I/Os of the direction it is taken from, in its thinnest round
    mixed = [run("a", "randrw65-4k", n, d, rwmixread=65, pts_test="latency", total_ios=ios,
                 lat_p999_us=p999, lat_p9999_us=p9999)
             for n in (1, 2) for d, ios, p999, p9999 in
             (("read", 20000, 500.0, 700.0),
              ("write", 1500 if n == 2 else 30000, 400.0, 900.0))]  # fmt: skip
    writes = [run("a", "randrw0-4k", n, rwmixread=0, pts_test="latency", total_ios=ios)
              for n, ios in ((1, 12000), (2, 900))]  # fmt: skip
    table = tables_of(pd.DataFrame(mixed + writes), [], "latency").latency()
    row = table.loc[("a", "4 KiB", "65/35")]
    assert row["p99.99 µs"] == 900.0 and row["p99.99 I/Os"] == 1500
    assert not row["p99.99 backed"]  # the writes' 1,500: too few for a 99.99th percentile
    assert row["p99.9 I/Os"] == 20000 and row["p99.9 backed"]  # the reads' p99.9 is worse
    row = table.loc[("a", "4 KiB", "0/100")]
    assert row["p99.9 I/Os"] == 900 and not row["p99.9 backed"]
    (section,) = pts_sections(tables_of(pd.DataFrame(mixed + writes), [], "latency"), ["a"])
    (grid,) = section.grids
    cells = {(row[0].text, row[1].text): row[2:] for row in grid.rows}
    mean, p999, p9999, top = cells[("4 KiB", "65/35")]
    assert (p9999.text, p9999.cls) == ("900 µs", "thin")  # the figure, greyed
    said = (
        "from 1,500 I/Os (the fewest of a window round, in the direction counted): fewer "
        "than 10,000, so this is about the largest latency seen, not a 99.99th percentile"
    )
    assert p9999.tip.startswith(f"{said}; randrw65-4k")
    assert "thin" not in mean.cls + p999.cls + top.cls
    p999 = cells[("4 KiB", "0/100")][1]
    assert p999.cls == "thin" and p999.tip.startswith("from 900 I/Os")
    assert "a percentile in grey had fewer I/Os" in section.table_words


def dirth_frame(limit_us: float = 5000.0) -> pd.DataFrame:
    """A DIRTH test of 2 x 2 points whose mean latency is threads x QD / IOPS: 2 threads at
    QD 4 the fastest, its latency `limit_us` and beyond."""
    rows = []
    for threads, qd, iops in ((1, 1, 1000.0), (1, 4, 3000.0), (2, 1, 1800.0), (2, 4, 4000.0)):
        lat = threads * qd / iops * 1e6 if (threads, qd) != (2, 4) else limit_us
        rows.append(run("a", f"t{threads}q{qd}", 1, "read", numjobs=threads, iodepth=qd,
                        iops=iops, lat_mean_us=lat, pts_test="dirth", rwmixread=65))  # fmt: skip
    return pd.DataFrame(rows)


def test_the_dirth_answer_is_the_most_iops_under_5_ms() -> None:
    tables = tables_of(dirth_frame(), [], "dirth")
    (answer,) = tables.dirth_answers()
    # 2 x 4's 4000 IOPS are at 5 ms exactly: not under it
    assert (answer.iops, answer.threads, answer.qd) == (3000.0, 1, 4)
    assert answer.words == ("a: the most IOPS with mean latency under 5 ms: 3.00k IOPS at 1 "
                            "thread × QD 4 (1.33 ms mean)")  # fmt: skip
    table = tables.dirth()
    assert list(table.columns) == [1, 4] and list(table.index) == [("a", 1), ("a", 2)]
    assert table.loc[("a", 2), 4] == 4000.0
    (section,) = pts_sections(tables, ["a"])
    (grid,) = section.grids
    assert [c.sub for c in grid.rows[1]] == ["", "1.11 ms", "5.00 ms ›5 ms"]
    assert section.answers == [answer.words] and len(section.charts) == 1
    slow = dirth_frame().assign(lat_mean_us=9000.0)
    none = dirth_answer("a", slow)
    assert none.iops is None
    assert none.words == "a: no point stayed under 5 ms mean latency (the lowest was 9.00 ms)"


def test_the_dirth_chart_has_a_line_per_thread_count_the_limit_and_the_answer() -> None:
    points = tables_of(dirth_frame(), [], "dirth").figures
    answer = dirth_answer("a", points)
    chart = dirth_chart(points, "a", 1, answer)
    assert chart is not None
    assert [s.name for s in chart.series] == ["1 thread", "2 threads"]
    assert chart.series[0].xs == [1000.0, 3000.0] and chart.series[1].ys[-1] == 5000.0
    assert len({s.dash for s in chart.series}) == 2 and {s.index for s in chart.series} == {1}
    assert [t.y for t in chart.targets] == [5000.0]
    assert [(m.x, m.index) for m in chart.target_marks] == [(3000.0, 1)]
    drawn = svg.svg(chart)
    assert drawn is not None and drawn.count('class="target"') == 1
    assert drawn.count('class="answer"') == 1


def test_a_groups_words_say_where_it_stands() -> None:
    assert group("a", [1.0] * 5, [1, 2, 3, 4, 5]).words == "steady after 5 rounds"
    assert group("a", [1.0] * 25, list(range(21, 26)), False).words == "NOT steady in 25 rounds"
    assert group("a", [1.0] * 3, [1, 2, 3], False, done=False).words.startswith(
        "not steady yet after 3 rounds")  # fmt: skip
    broken = group("a", [1.0, None], [], False, error="round 2 has no figure")
    assert broken.words == "stopped after 2 rounds: round 2 has no figure"
    lost = GroupRounds("/r", "a", "a", "iops", "g", RoundGroup(name="g", track="t"), None)
    assert lost.words.startswith("no record of its rounds") and lost.window_words() is None
    latency = group("a", [90.0, 100.0, 110.0], [1, 2, 3], metric="lat_mean")
    assert latency.window_words() == ("window rounds 1–3: mean 100 µs, range 5.0 % (at most "
                                      "20 %), slope excursion 2.0 % (at most 10 %)")  # fmt: skip


def test_the_steady_state_chart_marks_the_window_its_bands_mean_and_slope() -> None:
    steady = group("b", [900.0, 1200.0, 1000.0, 1010.0, 990.0, 1000.0], [2, 3, 4, 5, 6])
    chart = steady_chart(steady, 1)
    assert chart is not None
    (line,) = chart.series
    assert line.xs == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0] and line.index == 1
    assert "(in the measurement window)" in line.tips[1]
    assert "(in the measurement window)" not in line.tips[0]
    window, twenty, ten = chart.bands
    assert (window.y0, window.y1) == (None, None) and window.x0 < 2 < 6 < window.x1
    mean = steady.record.window_mean  # type: ignore[union-attr]
    assert (twenty.y0, twenty.y1) == pytest.approx((mean * 0.8, mean * 1.2))
    assert (ten.y0, ten.y1) == pytest.approx((mean * 0.9, mean * 1.1))
    level, fitted = chart.guides
    assert (level.x0, level.y0, level.x1, level.y1) == (2, mean, 6, mean)
    # the least-squares line: its value at the window's first round, then 1 a round
    assert (fitted.y0, fitted.y1) == pytest.approx((mean - 2, mean + 2))
    assert [k.kind for k in chart.keys] == ["band", "band", "band", "line", "line"]
    drawn = svg.svg(chart)
    assert drawn is not None
    assert drawn.count('<rect class="band"') == 3 and drawn.count('class="guide"') == 2
    assert "measurement window: rounds 2–6" in drawn and 'class="d1"' in drawn
    assert len(re.findall(r"<title>round \d", drawn)) == 6
    ax = figure([chart], ["a", "b"]).axes[0]
    bands = [a for a in ax.get_children() if a.get_gid() == "band"]
    guides = [a for a in ax.get_lines() if a.get_gid() == "guide"]
    assert len(bands) == 3 and len(guides) == 2
    # bytes/s are drawn as MB/s
    bandwidth = steady_chart(group("b", [2e8, 3e8], [1, 2], metric="bw"), 0)
    assert bandwidth is not None and bandwidth.series[0].ys == [200.0, 300.0]
    assert bandwidth.y.label == "MB/s"
    assert steady_chart(group("b", [], []), 0) is None


def test_a_scaled_run_says_so_at_the_top_and_on_its_section() -> None:
    frame = pd.DataFrame([run("a", "j", 1), run("b", "j", 1)])
    tables = tables_of(frame, [group(x, [1.0], [1]) for x in ("a", "b")], scale=0.01)
    (banner,) = scaled_banners(tables)
    assert banner.startswith("Scaled by 0.01: every runtime and idle time of this PTS test")
    assert banner.endswith("a first look at the drives, not a PTS result.")
    (section,) = pts_sections(tables, ["a", "b"])
    assert section.scaled == banner
    assert scaled_banners(tables_of(frame, [], scale=None)) == []
    assert pts_sections(None, []) == [] and scaled_banners(None) == []
    note = results_note(tables)
    assert note is not None and "a g: rounds 1–1 of 1; b g: rounds 1–1 of 1" in note


def test_a_device_says_how_it_was_purged_or_why_not_and_filled() -> None:
    prep = DevicePrep("/r", "a", "a", "iops", None, None, True, None)
    assert prep.purge_words == "not purged" and prep.fill_words.startswith("not filled")
    said = PurgeRecord(target="a", purged=False, how="none", detail="no --destroy-data for it")
    done = PurgeRecord(target="a", purged=True, how="discard", detail="BLKDISCARD of 64 GiB")
    fill = FillRecord(target="a", ok=False, size=None, started_at="", finished_at="",
                      error="fio error 5")  # fmt: skip
    assert DevicePrep("/r", "a", "a", "iops", None, said, True, fill).purge_words == (
        "not purged: no --destroy-data for it")  # fmt: skip
    assert DevicePrep("/r", "a", "a", "iops", None, done, True, fill).purge_words == (
        "purged (discard): BLKDISCARD of 64 GiB")  # fmt: skip
    assert DevicePrep("/r", "a", "a", "iops", None, done, True, fill).fill_words == (
        "fill failed: fio error 5")  # fmt: skip
    assert DevicePrep("/r", "a", "a", "iops", None, done, False, None).fill_words == (
        "not filled (the suite asks for no fill)")  # fmt: skip


def test_a_pts_jobs_charts_are_of_its_window_rounds() -> None:
    # round 1 before the window was far slower: the distribution drawn is round 2's alone
    slow, steady = tuple(range(100, 119)), tuple(float(v) for v in range(10, 29))
    rows = [run("a", "randrw0-4k", 1, lat_dist_us=tuple(map(float, slow)), ss_window=False),
            run("a", "randrw0-4k", 2, lat_dist_us=steady)]  # fmt: skip
    frame = pd.DataFrame(rows).assign(lat_p50_us=1.0, lat_p99_us=2.0)
    ax = ssdcompare.plot.latency_distribution(frame).axes[0]
    (line,) = [line for line in ax.get_lines() if line.get_gid() == "series"]
    assert list(line.get_ydata()) == list(steady)


def test_the_pts_plots_say_in_their_titles_that_a_run_was_scaled(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    frame = pd.DataFrame([run("a", "j", n) for n in (1, 2)])
    steady = [group("a", [1.0, 1.05], [1, 2])]
    for scale, said in ((0.01, ", scaled ×0.01"), (None, "")):
        tables = tables_of(frame, steady, scale=scale)
        monkeypatch.setattr(ssdcompare.plot, "_pts", lambda results, t=tables: t)
        (ax,) = ssdcompare.plot.steady_state("results/P").axes
        assert ax.get_title() == f"a: g (steady after 2 rounds){said}"
    dirth = tables_of(dirth_frame(), [], "dirth", scale=0.002)
    monkeypatch.setattr(ssdcompare.plot, "_pts", lambda results: dirth)
    (ax,) = ssdcompare.plot.dirth("results/P").axes
    assert ax.get_title().endswith(", scaled ×0.002")


def test_the_tables_put_the_baseline_first_as_the_report_does() -> None:
    frame = iops_frame()
    # b's rounds read first (a load of b's folder before a's): a, the baseline, still leads
    frame = pd.concat([frame[frame["label"] == "b"], frame[frame["label"] == "a"]])
    groups = [group(x, [1.0, 2.0], [1, 2]) for x in ("a", "b")]
    devices = tables_of(iops_frame(), groups).devices
    tables = PtsTables(devices, groups, window_figures(frame, "a", groups), ["a", "b"], "a")
    assert [label for label, _ in tables.iops().index] == ["a", "a", "b", "b"]
    (section,) = pts_sections(tables, ["a", "b"])
    assert [grid.caption for grid in section.grids] == ["a: IOPS", "b: IOPS (under each: × a)"]


def test_a_group_whose_purge_failed_says_so_not_that_its_record_is_missing() -> None:
    failed = PurgeRecord(target="a", purged=False, how="discard",
                         detail="not purged: discard failed: Operation not supported",
                         error="discard failed: Operation not supported")  # fmt: skip
    prep = DevicePrep("/r/a", "a", "a", "iops", None, failed, True, None)
    assert prep.skipped == ("the purge before the test failed: discard failed: Operation not "
                            "supported")  # fmt: skip
    limits = RoundGroup(name="g", track="t")
    unrun = GroupRounds("/r/a", "a", "a", "iops", "g", limits, None, prep.skipped)
    assert unrun.words == f"not run: {prep.skipped}"
    assert GroupRounds("/r/a", "a", "a", "iops", "g", limits, None).words == (
        "no record of its rounds (not run yet, or rounds.json is missing)")  # fmt: skip
    done = PurgeRecord(target="a", purged=True, how="discard", detail="BLKDISCARD of 64 GiB")
    assert DevicePrep("/r/a", "a", "a", "iops", None, done, True, None).skipped is None
