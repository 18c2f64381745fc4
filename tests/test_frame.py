"""Result frames: raw fio files, stored sweeps, per-job summaries, side-by-side and export."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import ssdcompare
from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.binary import FioInfo

DATA = Path(__file__).parent / "data"
EXAMPLE = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"


def test_read_fio_mixed_job_gives_read_and_write_rows_with_numbers_from_the_file() -> None:
    frame = ssdcompare.read_fio(DATA / "randrw-latpct-json.json")
    raw = json.loads((DATA / "randrw-latpct-json.json").read_text())["jobs"][0]
    assert list(frame["direction"]) == ["read", "write"]
    read = frame.iloc[0]
    assert read["iops"] == pytest.approx(raw["read"]["iops"])
    assert read["bw_bytes"] == pytest.approx(raw["read"]["bw_bytes"])
    # lat_percentiles=1 in that job: total latency (lat_ns) is used, in microseconds
    assert read["lat_mean_us"] == pytest.approx(raw["read"]["lat_ns"]["mean"] / 1000)
    assert read["lat_p99_us"] == pytest.approx(raw["read"]["lat_ns"]["percentile"]["99.000000"]
                                               / 1000)  # fmt: skip
    assert read["lat_source"] == "lat"
    assert frame["iops"].dtype == "float64" and frame["iodepth"].dtype == "Int64"


def test_read_fio_gives_na_for_counts_fio_took_as_fractions(fio: FioInfo, tmp_path: Path) -> None:
    """fio runs with rwmixread=50.5 or iodepth=1.5 and prints them as given: such a count is
    NA in its Int64 column, and the rest of the row is read."""
    output = tmp_path / "fractions.json"
    subprocess.run(
        [fio.path, "--name=frac", "--ioengine=null", "--size=1m", "--rw=randrw", "--bs=4k",
         "--rwmixread=50.5", "--iodepth=1.5", "--fsync=1.5", "--output-format=json",
         f"--output={output}", f"--directory={tmp_path}"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    frame = ssdcompare.read_fio(output)
    assert list(frame["direction"]) == ["read", "write", "sync"]  # fio took fsync=1.5 as 1
    for column in ("rwmixread", "iodepth", "fsync"):
        assert str(frame[column].dtype) == "Int64" and frame[column].isna().all(), column
    assert frame["bs_bytes"].tolist() == [4096] * 3 and (frame["iops"][:2] > 0).all()


def test_read_fio_names_a_path_with_a_nul_byte() -> None:
    with pytest.raises(SsdcompareError, match="no such file"):
        ssdcompare.read_fio(["runs/a\0b.json"])


def test_read_fio_reads_a_list_or_a_glob_into_one_frame() -> None:
    files = [DATA / "randrw-latpct-json.json", DATA / "numjobs2-separate-jsonplus.json"]
    alone = [ssdcompare.read_fio(f) for f in files]
    together = ssdcompare.read_fio(files)
    assert len(together) == sum(len(f) for f in alone)
    assert together["iops"].sum() == pytest.approx(sum(f["iops"].sum() for f in alone))
    assert list(together["fio_json"].unique()) == [str(f) for f in files]
    matched = ssdcompare.read_fio(str(DATA / "randrw-latpct-*.json"))
    assert list(matched["fio_json"].unique()) == [str(files[0])]
    with pytest.raises(SsdcompareError, match="no file matches"):
        ssdcompare.read_fio(str(DATA / "nothing-*.json"))


def test_read_fio_keeps_failed_jobs_as_failed_not_zero() -> None:
    frame = ssdcompare.read_fio(DATA / "job-error-enotdir-jsonplus.json")
    bad = frame[frame["job"] == "bad"].iloc[0]
    assert bad["status"] == "failed" and "error 20" in bad["error"]
    assert pd.isna(bad["iops"]) and pd.isna(bad["lat_mean_us"])
    assert frame[frame["job"] == "good"].iloc[0]["status"] == "ok"


def test_read_fio_client_server_is_per_host_and_judges_from_fio_cpu() -> None:
    frame = ssdcompare.read_fio(DATA / "client-server-numjobs2-json.json")
    assert list(frame["host"]) == ["127.0.0.1"]
    assert frame.iloc[0]["numjobs"] == 2
    # the null engine: fio's own figure shows a saturated worker
    assert bool(frame.iloc[0]["cpu_bound"]) is True
    assert frame.iloc[0]["label"] == "127.0.0.1"


def test_read_fio_sync_rows_carry_latency_but_no_rate() -> None:
    frame = ssdcompare.read_fio(DATA / "fdatasync-write-jsonplus.json")
    sync = frame[frame["direction"] == "sync"].iloc[0]
    assert pd.isna(sync["iops"]) and sync["lat_mean_us"] > 0


def test_read_fio_rejects_what_is_not_fio_output() -> None:
    with pytest.raises(SsdcompareError, match="sigkill-empty"):
        ssdcompare.read_fio(DATA / "sigkill-empty-jsonplus.json")


def test_load_a_sweep_one_row_per_device_job_repeat_direction() -> None:
    frame = ssdcompare.load(EXAMPLE)
    keys = ["device", "job", "repeat", "direction"]
    assert not frame.duplicated(keys).any()
    manifest = json.loads((EXAMPLE / "manifest.json").read_text())
    jobs = len(manifest["suite"]["workloads"])
    fsync_jobs = sum(1 for w in manifest["suite"]["workloads"] if w["fsync"])
    assert len(frame) == 2 * 3 * (jobs + fsync_jobs)  # devices x repeats x rows per run
    assert set(frame["status"]) == {"ok"}
    assert frame["model"].notna().all() and frame["fio_version"].str.startswith("fio-3").all()
    # every number traces back to its raw file
    row = frame[(frame["job"] == "read-4m-qd16") & (frame["repeat"] == 2)].iloc[0]
    raw = json.loads(Path(row["fio_json"]).read_text())["jobs"][0]["read"]
    assert row["bw_bytes"] == pytest.approx(raw["bw_bytes"])


def test_job_summary_aggregates_repeats() -> None:
    frame = ssdcompare.load(EXAMPLE)
    summary = ssdcompare.job_summary(frame)
    one = summary[(summary["device"] == "loop1") & (summary["job"] == "randread-4k-qd1")].iloc[0]
    values = frame[(frame["device"] == "loop1") & (frame["job"] == "randread-4k-qd1")]["iops"]
    assert one["repeats"] == 3
    assert one["iops_mean"] == pytest.approx(values.mean())
    assert one["iops_std"] == pytest.approx(values.std(ddof=1))
    assert one["iops_cv_pct"] == pytest.approx(values.std(ddof=1) / values.mean() * 100)
    mixed = summary[summary["job"] == "randwrite-4k-qd1-fsync"]
    assert (mixed["repeats"] == 3).all()  # the sync row does not count as a direction of I/O


def frame_of_repeats(frame: pd.DataFrame, repeats: int) -> pd.DataFrame:
    return frame[frame["repeat"] <= repeats]


def test_side_by_side_ratios_and_significance() -> None:
    summary = ssdcompare.job_summary(ssdcompare.load(EXAMPLE), baseline="loop1")
    table = ssdcompare.side_by_side(summary, "iops", baseline="loop1")
    ratio = table.loc["randread-4k-qd4", "zram1/loop1"]
    assert ratio == pytest.approx(table.loc["randread-4k-qd4", "zram1"]
                                  / table.loc["randread-4k-qd4", "loop1"])  # fmt: skip
    # three repeats a device: the RAM disk's lead at 4K QD4 reads is tested, and real
    assert bool(table.loc["randread-4k-qd4", "zram1 significant"]) is True
    row = summary[(summary["label"] == "zram1") & (summary["job"] == "randread-4k-qd4")].iloc[0]
    assert row["p_value"] < 0.05 and row["ratio_ci_low"] < row["ratio"] < row["ratio_ci_high"]
    # two repeats a device are too few to test a difference: no verdict, not a guess
    two = ssdcompare.job_summary(frame_of_repeats(ssdcompare.load(EXAMPLE), 2))
    assert two["p_value"].isna().all() and two["significant"].isna().all()
    # a summary made against zram1, compared against loop1: tested anew, from its repeats,
    # with the result a summary made against loop1 gives
    other = ssdcompare.job_summary(ssdcompare.load(EXAMPLE), baseline="zram1")
    anew = ssdcompare.side_by_side(other, "iops", baseline="loop1")["zram1 significant"]
    assert anew.notna().any()
    assert anew.fillna(False).tolist() == table["zram1 significant"].fillna(False).tolist()
    # each figure carries its verdict: a ratio of CPU-bound results is no drive ratio
    assert table.loc["randread-4k-qd128", "zram1 verdict"] == "cpu"
    assert set(table["loop1 verdict"]) <= {"drive", "cpu", "host", "disturbed", "unknown"}
    with pytest.raises(SsdcompareError, match="baseline 'nvme0n1' is not among"):
        ssdcompare.side_by_side(summary, "iops", baseline="nvme0n1")


@pytest.mark.slow  # seconds of its own: left out of the unprivileged rerun (test_markers)
def test_export_csv_from_the_command_line(tmp_path: Path) -> None:
    out = tmp_path / "results.csv"
    done = subprocess.run(
        [sys.executable, "-m", "ssdcompare", "export", str(EXAMPLE), "-o", str(out)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    frame = pd.read_csv(out)
    assert f"{len(frame)} rows written" in done.stdout
    assert {"device", "job", "iops", "cpu_bound", "fio_json"} <= set(frame.columns)
    summary = tmp_path / "summary.csv"
    subprocess.run([sys.executable, "-m", "ssdcompare", "export", str(EXAMPLE), "-o",
                    str(summary), "--summary"], check=True, capture_output=True)  # fmt: skip
    assert len(pd.read_csv(summary)) == 2 * 19
    bad = subprocess.run([sys.executable, "-m", "ssdcompare", "export", str(EXAMPLE), "-o",
                          str(tmp_path / "x.xlsx")], capture_output=True, text=True)  # fmt: skip
    assert bad.returncode == 2 and "use a .csv or .parquet" in bad.stderr


def test_read_fio_names_a_device_as_a_sweep_does() -> None:
    """One naming: a raw fio output's /dev/loop0 is `loop0`, as `load` names a sweep's."""
    frame = ssdcompare.read_fio(Path(__file__).parent / "data" / "trim-loopdev-jsonplus.json")
    assert set(frame["device"]) == {"loop0"}
