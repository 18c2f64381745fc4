"""The rules of latency-vs-load curves on clear-cut cases: suite keys, fio's Poisson pacing,
the reach rule, the answer at a latency target and the order runs go in."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest
from suitefiles import suite_file

from ssdcompare.analysis.pacing import asked_iops, reach_tolerance_pct
from ssdcompare.analysis.slo import AT_LEAST, MET, NEVER, NO_POINTS, answer, parse_slo, parse_slos
from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.jobfile import paced_text
from ssdcompare.fio.pacing import offered_iops, rate_for
from ssdcompare.fio.result.models import DirectionResult, JobResult
from ssdcompare.suite.files import load_suite
from ssdcompare.suite.workload import DEFAULT_CURVE, Workload


def _suite(tmp_path: Path, workload: str) -> list[Workload]:
    return load_suite(str(suite_file(tmp_path, "c", workload))).workloads


def test_a_curve_is_its_unpaced_run_and_a_run_per_point(tmp_path: Path) -> None:
    runs = _suite(tmp_path, "{rw: randread, bs: 4k, iodepth: 32, curve: true, stop_p99: 10ms}")
    assert [w.job_id for w in runs] == ["randread-4k-qd32@max"] + [
        f"randread-4k-qd32@{p}pct" for p in DEFAULT_CURVE
    ]
    assert [w.point for w in runs] == [None, *map(float, DEFAULT_CURVE)]
    assert {w.curve_name for w in runs} == {"randread-4k-qd32"}
    assert {w.max_run_id for w in runs} == {"randread-4k-qd32@max"}
    assert all(w.stop_p99_us == 10_000 for w in runs)
    assert [w.paced for w in runs] == [False] + [True] * len(DEFAULT_CURVE)


def test_an_override_keeps_a_curve_runs_suffix_and_renames_its_job(tmp_path: Path) -> None:
    suite = load_suite(str(suite_file(tmp_path, "c", "{rw: randread, bs: 4k, curve: [50]}")))
    ids = [w.job_id for w in suite.with_overrides(iodepth=8).workloads]
    assert ids == ["randread-4k-qd8@max", "randread-4k-qd8@50pct"]
    states = [w.job_id for w in suite.in_states(["empty"]).workloads]
    assert states == ["randread-4k-qd1@max.empty", "randread-4k-qd1@50pct.empty"]
    assert suite.in_states(["empty"]).workloads[1].max_run_id == "randread-4k-qd1@max.empty"


@pytest.mark.parametrize(
    ("workload", "says"),
    [
        ("{rw: randread, bs: 4k, curve: [50, 10]}", "lowest first"),
        ("{rw: randread, bs: 4k, curve: [0, 50]}", "no share to pace at"),
        ("{rw: randread, bs: 4k, curve: [0.00001, 50]}", "at most two decimals"),
        ("{rw: randread, bs: 4k, curve: [50, 99.99999, 100]}", "at most two decimals"),
        ("{rw: randwrite, bs: 4k, fsync: 1, curve: [50]}", "cannot have fsync or fdatasync"),
        ("{rw: randread, bs: 4k, ramp_time: 5, runtime: 1, curve: [50]}", "must not outlast"),
        ("{rw: randread, bs: 4k, curve: [50], extra: {ratemin: 100}}", "drop ratemin"),
        ("{rw: randread, bs: 4k, curve: [100], curve_base: 1m}", "split the load with numjobs"),
        ("{rw: randread, bs: 4k, curve: [50, 120]}", "no share of the maximum"),
        ("{rw: randread, bs: 4k, curve: []}", "at least one share"),
        ("{rw: randread, bs: 4k, stop_p99: 10ms}", "stop_p99 applies to a curve"),
        ("{rw: randread, bs: 4k, curve_base: fastest}", "curve_base applies to a curve"),
        ("{rw: randread, bs: 4k, curve: [50], curve_base: slowest}", "give own, fastest"),
        ("{rw: randread, bs: 4k, curve: [50], curve_base: 0}", "whole number above 0"),
        ("{rw: randread, bs: 4k, curve: [50], stop_p99: fast}", "is not a latency"),
        ("{rw: randread, bs: 4k, curve: [50], extra: {rate_iops: 100}}", "drop rate_iops"),
        ("{rw: randread, bs: 4k, curve: [50], thinktime: 100}", "drop thinktime"),
        ("{rw: randread, bs: 4k, id: x@max}", "kept for the runs a curve makes"),
        ("{rw: randread, bs: 4k, point: 50}", "unknown key 'point'"),
    ],
)
def test_a_curve_given_wrong_is_refused_with_its_reason(
    tmp_path: Path, workload: str, says: str
) -> None:
    with pytest.raises(SsdcompareError, match="invalid suite") as caught:
        _suite(tmp_path, workload)
    assert says in str(caught.value)


def test_fio_paces_poisson_arrivals_in_whole_microseconds() -> None:
    # g = 1,000,000 // rate; a gap is floor(g * Exp(1)): its mean is 1 / (e^(1/g) - 1)
    assert offered_iops(1000) == pytest.approx(1000.5, rel=1e-4)
    assert offered_iops(60_000) == pytest.approx(1e6 * math.expm1(1 / 16))  # 64.5k, not 60k
    assert offered_iops(1_000_001) is None and offered_iops(0) is None  # fio does not pace
    for wanted in (100, 5_000, 33_000, 58_878, 120_000):
        rate = rate_for(wanted)
        offered = offered_iops(rate)
        assert offered is not None
        # no rate_iops whose gap is one microsecond more or less offers a closer load
        gap = 1_000_000 // rate
        for other in (gap - 1, gap + 1):
            near = 1_000_000 // other if other >= 2 else 0
            if near and 1_000_000 // near == other:  # a gap some rate_iops gives
                assert abs(offered - wanted) <= abs((offered_iops(near) or 0) - wanted)


def test_a_paced_jobfile_gets_its_rate_after_every_poisson_line() -> None:
    text = "[a.m1]\nrw=randrw\nrate_process=poisson\n\n[a.m2]\nrw=randrw\nrate_process=poisson\n"
    paced = paced_text(text, (700, 300))
    assert paced.count("rate_process=poisson\nrate_iops=700,300\n") == 2


def _job(rate_iops: str, directions: dict[str, float], processes: int = 1) -> JobResult:
    found = {
        name: DirectionResult(direction=name, io_bytes=None, bw_bytes=0.0, iops=iops,
                              runtime_ms=None, total_ios=None, short_ios=None, drop_ios=None)
        for name, iops in directions.items()
    }  # fmt: skip
    return JobResult(name="j", groupid=0, error=0, usr_cpu_pct=0.0, sys_cpu_pct=0.0,
                     processes=processes, job_options={"rate_iops": rate_iops},
                     directions=found)  # fmt: skip


def test_the_load_asked_is_read_from_fios_own_record_of_rate_iops() -> None:
    mix = _job("700,300", {"read": 690.0, "write": 300.0}, processes=2)
    assert asked_iops(mix) == pytest.approx(2 * (offered_iops(700) + offered_iops(300)))
    one = _job("500", {"read": 500.0})  # one value paces every direction
    assert asked_iops(one) == pytest.approx(offered_iops(500))
    assert asked_iops(_job("", {"read": 1.0})) is None
    assert asked_iops(_job("x,1", {"read": 1.0})) is None
    assert asked_iops(_job("2000000", {"read": 1.0})) is None  # beyond fio's pacing


def test_the_reach_rule_allows_what_a_poisson_count_varies_by_chance() -> None:
    assert reach_tolerance_pct(100_000, 60) == 2.0  # 6 million arrivals: 2 % rules
    assert reach_tolerance_pct(600, 2) == pytest.approx(300 / math.sqrt(1200))  # 8.7 %
    assert math.isinf(reach_tolerance_pct(0, 1))


def _points(*points: tuple[float, float, float, bool]) -> pd.DataFrame:
    """(share, IOPS, p99 µs, reached) per point."""
    return pd.DataFrame(
        [{"curve_pct": s, "iops": i, "lat_p99": p, "rate_reached": r} for s, i, p, r in points]
    )


def test_the_answer_is_interpolated_between_the_points_that_bracket_the_target() -> None:
    points = _points((10, 10_000, 100, True), (50, 50_000, 400, True), (90, 90_000, 1600, True))
    found = answer(points, parse_slo("p99=800us"))
    # log latency is linear in IOPS between 400 µs (50k) and 1.6 ms (90k): 800 µs at 70k
    assert found.status == MET and found.iops == pytest.approx(70_000)
    assert (found.below_pct, found.above_pct) == (50, 90)
    assert found.below == "50 %: 50.0k IOPS, p99 400 µs"
    assert found.above == "90 %: 90.0k IOPS, p99 1.60 ms"


def test_a_curve_says_never_at_least_and_leaves_unreached_points_out() -> None:
    points = _points((10, 10_000, 100, True), (50, 50_000, 400, True), (90, 60_000, 90_000, False))
    at_least = answer(points, parse_slo("p99=1ms"))  # the unreached point does not count
    assert at_least.status == AT_LEAST and at_least.iops == 50_000 and at_least.above is None
    never = answer(points, parse_slo("p99=50us"))
    assert never.status == NEVER and math.isnan(never.iops) and never.above_pct == 10
    none = answer(_points((10, 10_000, 100, False)), parse_slo("p99=1ms"))
    assert none.status == NO_POINTS
    # a point past the target, then one within it again: the first crossing answers
    wobbly = _points((10, 10_000, 100, True), (50, 50_000, 900, True), (70, 70_000, 700, True))
    assert answer(wobbly, parse_slo("p99=800us")).above_pct == 50


def test_targets_are_read_as_people_write_them() -> None:
    assert parse_slos("p99=1ms, p99.9<=500us") == [parse_slo("p99=1000us"),
                                                   parse_slo("p999=0.5ms")]  # fmt: skip
    assert parse_slo("mean=200").limit_us == 200
    assert parse_slo("p99.99=2s").label == "p99.99 ≤ 2.00 s"
    for wrong in ("p98=1ms", "p99", "p99=fast", "p99=0ms", "=1ms"):
        with pytest.raises(SsdcompareError, match="--slo"):
            parse_slo(wrong)


def _curve_frame(devices: dict[str, list[float]]) -> pd.DataFrame:
    """A frame of curve points: per device, per repeat, points at 10, 50 and 90 % whose p99
    doubles from one to the next; `devices` gives each repeat's IOPS at the 50 % point."""
    rows = []
    for device, repeats in devices.items():
        for repeat, middle in enumerate(repeats, start=1):
            for share, iops, p99 in ((10, middle / 5, 250.0), (50, middle, 500.0),
                                     (90, middle * 1.8, 1000.0)):  # fmt: skip
                rows.append({
                    "sweep": "s", "host": "h", "device": device, "label": device,
                    "job": f"j@{share}pct", "repeat": repeat, "direction": "read",
                    "status": "ok", "member": pd.NA, "curve": "j", "curve_pct": float(share),
                    "iops": iops, "total_ios": iops, "lat_mean_us": p99 / 2,
                    "lat_p50_us": p99 / 3, "lat_p99_us": p99, "lat_p999_us": p99 * 2,
                    "lat_dist_us": None, "rate_asked_iops": iops, "rate_reached": True,
                    "verdict": "drive",
                })  # fmt: skip
    return pd.DataFrame(rows)


def test_answers_of_repeats_are_compared_with_the_baselines_and_tested() -> None:
    from ssdcompare.analysis.slo import slo_summary

    frame = _curve_frame({"a": [10_000, 10_500, 9_500], "b": [20_000, 21_000, 19_000]})
    # p99 = 500 µs at the 50 % point exactly: the answer is that point's IOPS
    found = slo_summary(frame, [parse_slo("p99=500us")], "a").set_index("label")
    assert found.loc["a", "slo_iops"] == pytest.approx(10_000)
    assert found.loc["b", "slo_repeats"] == 3
    assert found.loc["b", "slo_ratio"] == pytest.approx(2.0, rel=1e-3)
    assert found.loc["b", "slo_p_value"] < 0.05 and bool(found.loc["b", "slo_significant"])
    assert found.loc["b", "slo_ratio_ci_low"] < 2.0 < found.loc["b", "slo_ratio_ci_high"]
    assert math.isnan(found.loc["a", "slo_ratio"])  # the baseline itself
    # one repeat a side: the ratio, untested
    single = slo_summary(_curve_frame({"a": [10_000], "b": [15_000]}),
                         [parse_slo("p99=500us")], None).set_index("label")  # fmt: skip
    assert single.loc["b", "slo_ratio"] == pytest.approx(1.5)
    assert math.isnan(single.loc["b", "slo_p_value"])
    assert pd.isna(single.loc["b", "slo_significant"])


def test_each_drive_state_is_a_curve_of_its_own() -> None:
    from ssdcompare.analysis.slo import slo_sentences, slo_summary

    empty = _curve_frame({"a": [10_000]}).assign(state="empty")
    full = _curve_frame({"a": [4_000]}).assign(state="full")
    found = slo_summary(pd.concat([empty, full]), [parse_slo("p99=500us")], None)
    answers = list(zip(found["state"], found["slo_iops"], strict=True))
    assert answers == [("empty", 10_000), ("full", 4_000)]
    lines = slo_sentences(found)
    assert [line.split(":")[0] for line in lines] == ["j (empty drive), p99 ≤ 500 µs",
                                                      "j (full drive), p99 ≤ 500 µs"]  # fmt: skip


def test_repeats_that_disagree_give_no_figure_and_bounds_give_bounded_ratios() -> None:
    from ssdcompare.analysis.slo import VARIES, slo_sentences, slo_summary

    frame = _curve_frame({"a": [10_000, 10_000, 10_000], "b": [20_000, 20_000, 20_000]})
    # b's second repeat: its lowest point already past the target
    late = (frame["label"] == "b") & (frame["repeat"] == 2)
    frame.loc[late, "lat_p99_us"] = frame.loc[late, "lat_p99_us"] * 10
    found = slo_summary(frame, [parse_slo("p99=500us")], "a").set_index("label")
    assert found.loc["b", "slo_status"] == VARIES and math.isnan(found.loc["b", "slo_iops"])
    assert found.loc["b", "slo_note"] == "its 3 repeats disagree: 2 met, 1 never"
    assert math.isnan(found.loc["b", "slo_ratio"])
    line = slo_sentences(found.reset_index())[0]
    assert "b: no answer (its 3 repeats disagree: 2 met, 1 never)" in line and "nan" not in line
    # every point of both meets 2 ms: two lower bounds make no ratio
    both = slo_summary(_curve_frame({"a": [10_000], "b": [20_000]}), [parse_slo("p99=2ms")],
                       "a").set_index("label")  # fmt: skip
    assert list(both["slo_status"]) == [AT_LEAST, AT_LEAST]
    assert math.isnan(both.loc["b", "slo_ratio"])
    assert both.loc["b", "slo_iops"] == 36_000  # the highest IOPS of a point within it
    # a's curve within 800 µs everywhere, b's met between its points: b's ratio is a bound
    mixed = _curve_frame({"a": [10_000], "b": [20_000]})
    mixed.loc[mixed["label"] == "a", "lat_p99_us"] /= 2
    bound = slo_summary(mixed, [parse_slo("p99=800us")], "a").set_index("label")
    assert bound.loc["b", "slo_status"] == MET and bound.loc["a", "slo_status"] == AT_LEAST
    assert bound.loc["b", "slo_ratio_kind"] == "≤"
    assert ", ≤ 1." in slo_sentences(bound.reset_index())[0]


def test_an_answer_names_what_it_rests_on_besides_the_drive() -> None:
    points = _points((10, 10_000, 100, True), (50, 50_000, 400, True), (90, 90_000, 1600, True),
                     (100, 91_000, 9_000, False))  # fmt: skip
    points["verdict"] = ["drive", "drive", "cpu", "drive"]
    met = answer(points, parse_slo("p99=800us"))
    assert met.status == MET and met.note == "the 90 % point was cpu-limited"
    at_least = answer(points, parse_slo("p99=2ms"))
    assert at_least.note == ("the 90 % point was cpu-limited; the points above (100 %) could "
                             "not reach their load")  # fmt: skip
    # a point whose reach is unknown (NA) counts for nothing, and breaks nothing
    points["rate_reached"] = pd.array([True, pd.NA, True, False], dtype="boolean")
    assert answer(points, parse_slo("p99=800us")).below_pct == 10
