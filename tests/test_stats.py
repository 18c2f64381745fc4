"""Is a difference real: Welch's t-test on repeats, ratios with confidence intervals."""

from __future__ import annotations

import contextlib
import math
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from blkio import needs_blkio, read_capped
from blockdevs import loop_device
from suitefiles import suite_file
from test_report import chromium

import ssdcompare
from ssdcompare.analysis.compare import side_by_side
from ssdcompare.analysis.summary import job_summary
from ssdcompare.judge.stats import MIN_REPEATS, aggregate_values, compare, find_knee, why_untested
from ssdcompare.report.build import write_report

# judged on CPU use or timing: runs alone, never beside other tests (scripts/test.sh)
pytestmark = pytest.mark.serial


def test_a_clear_difference_is_significant_with_its_interval() -> None:
    found = compare([200, 204, 198], [100, 101, 99])
    assert found is not None and found.significant and found.p_value < 0.001
    assert found.ratio == pytest.approx((200 * 204 * 198) ** (1 / 3) / (100 * 101 * 99) ** (1 / 3))
    assert found.ci_low < found.ratio < found.ci_high
    assert 1.9 < found.ci_low and found.ci_high < 2.1


def test_noise_is_not_significant() -> None:
    found = compare([100, 104, 97], [101, 98, 103])
    assert found is not None and not found.significant and found.p_value > 0.5
    assert found.ci_low < 1 < found.ci_high


def test_fewer_than_three_repeats_give_no_verdict() -> None:
    assert MIN_REPEATS == 3
    assert compare([200, 201], [100, 101, 99]) is None
    assert compare([200, 201, 202], [100, float("nan"), 99]) is None
    assert compare([200, 0, 202], [100, 101, 99]) is None  # a ratio needs positive figures


def test_repeats_without_spread_are_no_difference_or_a_certain_one() -> None:
    # rate-limited jobs, and p99 latencies in fio's histogram buckets: three equal values a
    # side are common. The same values on both sides: no difference
    same = compare([5, 5, 5], [5, 5, 5])
    assert same is not None and not same.significant
    assert (same.ratio, same.ci_low, same.ci_high, same.p_value) == (1.0, 1.0, 1.0, 1.0)
    # equal to float noise is equal
    noise = compare([100, 100, 100.0000001], [100, 100, 100])
    assert noise is not None and noise.ratio == 1.0 and not noise.significant
    # two sets of equal values that differ: the difference is certain
    apart = compare([6, 6, 6], [5, 5, 5])
    assert apart is not None and apart.significant and apart.p_value < 1e-9
    assert apart.ratio == pytest.approx(1.2) and apart.ci_low == apart.ci_high == apart.ratio
    half = compare([100, 100, 100.0000001], [200, 200, 200])
    assert half is not None and half.significant and half.ratio == pytest.approx(0.5)
    # spread on one side is enough for Welch's test
    one_side = compare([6, 6, 6], [5, 5.1, 4.9])
    assert one_side is not None and one_side.significant
    assert one_side.ratio == pytest.approx(1.2, rel=1e-3)
    close = compare([5, 5, 5], [5, 5.1, 4.9])
    assert close is not None and not close.significant and close.ci_low < 1 < close.ci_high


def test_what_is_not_tested_says_why() -> None:
    assert why_untested(2, 3) == why_untested(3, 0) == "fewer than 3 repeats a side"
    # 3 finished repeats a side, and still no test: a repeat had no figure (0 IOPS, unknown)
    assert compare([200, 0, 202], [100, 101, 99]) is None
    assert why_untested(3, 3) == "a repeat without a figure to test (zero or unknown)"


def test_how_sensitive_three_repeats_are() -> None:
    # the module says: with 3 repeats, a ratio of 1.10 is told from noise at about 4 % spread
    def spread(cv: float) -> list[float]:
        return [1 - cv, 1.0, 1 + cv]  # their sample standard deviation is cv

    assert compare([1.1 * v for v in spread(0.04)], spread(0.04)).significant  # type: ignore[union-attr]
    assert not compare([1.1 * v for v in spread(0.05)], spread(0.05)).significant  # type: ignore[union-attr]


def test_aggregates() -> None:
    values = [3.0, 1.0, 2.0, 10.0]
    assert aggregate_values(values, "mean") == 4.0
    assert aggregate_values(values, "median") == 2.5
    assert aggregate_values(values, "best") == 10.0
    assert aggregate_values(values, "best", higher_is_better=False) == 1.0
    assert math.isnan(aggregate_values([], "mean"))
    with pytest.raises(ValueError, match="unknown aggregate"):
        aggregate_values(values, "max")


def _frame(rows: dict[str, list[float]]) -> pd.DataFrame:
    data = []
    for device, values in rows.items():
        for repeat, iops in enumerate(values, start=1):
            data.append({
                "sweep": "s", "host": "h", "device": device, "job": "j", "repeat": repeat,
                "direction": "read", "status": "ok", "error": None, "iops": iops,
                "bw_bytes": iops * 4096, "total_ios": iops, "lat_mean_us": 1e6 / iops,
                "lat_p99_us": 2e6 / iops, "lat_max_us": 3e6 / iops, "cpu_bound": False,
                "cpu_bound_reason": None, "rw": "randread", "bs_bytes": 4096, "iodepth": 1,
                "numjobs": 1, "rwmixread": None, "fsync": 0, "fdatasync": 0,
                "workload_hash": "h1",
            })  # fmt: skip
    return pd.DataFrame(data)


def test_the_summary_tests_each_device_against_the_baseline() -> None:
    frame = _frame({"a": [100, 101, 99], "b": [200, 203, 198], "c": [100, 98, 102]})
    summary = job_summary(frame, baseline="a").set_index("label")
    assert pd.isna(summary.loc["a", "ratio"]) and pd.isna(summary.loc["a", "significant"])
    assert bool(summary.loc["b", "significant"]) and summary.loc["b", "ratio"] > 1.9
    assert not bool(summary.loc["c", "significant"])
    # p99 latency halves where IOPS double
    assert bool(summary.loc["b", "p99_significant"]) and summary.loc["b", "p99_ratio"] < 0.55
    table = side_by_side(job_summary(frame, baseline="a"), "iops", baseline="a")
    assert bool(table.loc["j", "b significant"]) and not bool(table.loc["j", "c significant"])
    # without a baseline, the table is against the summary's own, significance and all
    against_c = side_by_side(job_summary(frame, baseline="c"), "iops")
    assert "b/c" in against_c.columns and bool(against_c.loc["j", "b significant"])


def test_an_unknown_figure_stays_unknown_and_a_true_zero_stays_zero() -> None:
    # fio printed nan for a repeat's IOPS: unknown, left out of the mean (never a 0 in it)
    frame = _frame({"a": [1000.0, 1000.0, 1000.0]})
    frame.loc[frame["repeat"] == 2, ["iops", "bw_bytes"]] = float("nan")
    row = job_summary(frame).iloc[0]
    assert row["repeats"] == 3 and row["iops_mean"] == 1000 and row["iops_cv_pct"] == 0
    # ... and a known bandwidth beside an unknown IOPS stays as it was
    frame = _frame({"a": [1000.0]})
    frame["iops"] = float("nan")
    row = job_summary(frame).iloc[0]
    assert pd.isna(row["iops_value"]) and row["bw_bytes_value"] == 1000 * 4096
    # a direction of a mix unknown: the run's total is unknown, not the other direction's
    mix = pd.concat([_frame({"a": [1000.0]}), _frame({"a": [500.0]}).assign(direction="write")])
    mix.loc[mix["direction"] == "write", "iops"] = float("nan")
    assert pd.isna(job_summary(mix).iloc[0]["iops_value"])
    # fio printed the direction with zeros (a true zero): 0, and no latency
    idle = _frame({"a": [1000.0]}).assign(
        iops=0.0, bw_bytes=0.0, total_ios=0.0, lat_mean_us=float("nan"), lat_p99_us=float("nan")
    )
    row = job_summary(idle).iloc[0]
    assert row["iops_value"] == 0 and pd.isna(row["lat_mean_us_value"])


def test_the_summary_shows_the_aggregate_asked_for() -> None:
    frame = _frame({"a": [100, 110, 300]})
    assert job_summary(frame)["iops_value"].iloc[0] == pytest.approx(170)
    assert job_summary(frame, aggregate="median")["iops_value"].iloc[0] == 110
    best = job_summary(frame, aggregate="best").iloc[0]
    assert best["iops_value"] == 300 and best["lat_mean_us_value"] == pytest.approx(1e6 / 300)
    assert best["aggregate"] == "best" and best["iops_mean"] == pytest.approx(170)


EXAMPLE = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"


@contextlib.contextmanager
def throttled(device: str, read_iops: int) -> Iterator[None]:
    """Cap reads from `device` at `read_iops` for this process and the fio it starts (a blkio
    cgroup of our own; other devices are not limited); what it started that lives on (the
    sweep's watchdog) moves out with it."""
    with read_capped(device, read_iops, "test-stats") as cap:
        cap.join(os.getpid())
        yield


@pytest.mark.root
@pytest.mark.fio
@needs_blkio
def test_twin_devices_are_tested_and_a_throttled_one_differs_significantly(
    tmp_path: Path,
) -> None:
    suite = suite_file(tmp_path, "pair", "{rw: randread, bs: 4k, iodepth: 4, runtime: 1}")
    with contextlib.ExitStack() as stack:
        same, twin, slow = (
            stack.enter_context(loop_device(tmp_path / f"{name}.img", 16 << 20))
            for name in ("same", "twin", "slow")
        )
        stack.enter_context(throttled(slow, 200))
        run = ssdcompare.run_sweep([same, twin, slow], suite=str(suite), repeat=3,
                                   out=tmp_path / "r", report=False)  # fmt: skip
    assert run.complete
    summary = ssdcompare.job_summary(run.frame(), baseline=Path(same).name)
    twins = summary[summary["device"] == Path(twin).name]
    throttled_rows = summary[summary["device"] == Path(slow).name]
    assert twins["p_value"].notna().all() and throttled_rows["p_value"].notna().all()
    # two loop devices over the same filesystem: tested, with an interval around their ratio;
    # whether a shared, loaded host makes them "differ" is the host's doing, not asserted
    assert (twins["ratio_ci_low"] < twins["ratio_ci_high"]).all()
    assert (twins["ratio_ci_low"] > throttled_rows["ratio_ci_high"].max()).all()
    # capped at 200 reads a second, far below a loop device: significant, and far slower
    assert throttled_rows["significant"].astype(bool).all()
    assert (throttled_rows["ratio_ci_high"] < 0.5).all()
    # the answer at the top of the report, as a browser shows it
    report = write_report([run.path], tmp_path / "report.html", baseline=Path(same).name)
    dom = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", report.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    ).stdout  # fmt: skip
    # (loop devices reading never-written blocks are often CPU-bound here: which jobs count
    # varies, that each device gets its line and the verdicts are counted does not)
    answer = dom[dom.index('id="headline"') : dom.index('id="what"')]
    # the answer's own lines (what to do next, when nothing compared, has a list of its own)
    listed = answer[answer.index('<ul class="headline">') :].split("</ul>")[0]
    lines = [line for line in listed.split("<li>")[1:]]
    assert [line.split()[0] for line in lines] == [Path(twin).name, Path(slow).name]
    assert all(f" {Path(same).name} " in line for line in lines)
    assert "Verdicts here:" in answer and "95 % CI" in dom


def test_the_knee_is_where_queueing_only_adds_waiting() -> None:
    depths = [1, 2, 4, 8, 16, 32]
    # IOPS double up to QD8 and then stop growing; latency then doubles with the depth
    iops = [10e3, 20e3, 40e3, 80e3, 84e3, 85e3]
    lat = [100.0, 100.0, 100.0, 100.0, 190.0, 376.0]
    assert find_knee(depths, iops, lat) == 8
    assert find_knee(depths, [1e3 * d for d in depths], [100.0] * 6) is None  # still scaling
    assert find_knee([1, 2], [1.0, 1.0], [1.0, 2.0]) is None  # too short to tell
    # a growth spurt later on means it had not saturated yet
    assert find_knee(depths, [10e3, 10.5e3, 11e3, 11.5e3, 30e3, 30.5e3],
                     [100.0, 190.0, 380.0, 700.0, 600.0, 1200.0]) == 16  # fmt: skip


def test_the_summary_gives_each_queue_depth_series_its_knee() -> None:
    summary = ssdcompare.job_summary(ssdcompare.load(EXAMPLE))
    zram = summary[(summary["label"] == "zram1") & summary["job"].str.match(r"randread-4k-qd")]
    knees = set(zram["knee_qd"].dropna())
    assert len(knees) == 1 and next(iter(knees)) in set(zram["iodepth"])
    single = summary[summary["job"].isin(["read-4m-qd16", "write-4m-qd16"])]
    assert len(single) == 4 and single["knee_qd"].isna().all()  # one depth is no series
