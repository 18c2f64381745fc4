"""The fio output parser against real fio 3.33 outputs recorded in tests/data (see its README).

Expected numbers come from the raw JSON of the same file or from fio's own normal report of the
same run, never from the parser itself.
"""

from __future__ import annotations

import json
import math
import re
import statistics
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest

from ssdcompare.errors import SsdcompareError
from ssdcompare.fioresult import (
    FioOutputError,
    LatencyStats,
    merge_latency,
    parse_fio_file,
    parse_fio_text,
    percentiles_from_bins,
)

DATA = Path(__file__).parent / "data"
JSON_START = re.compile(r"^\{", re.MULTILINE)


def raw_documents(name: str) -> list[dict[str, Any]]:
    """Every JSON document in a recorded file, decoded with the json module alone."""
    text = (DATA / name).read_text()
    decoder = json.JSONDecoder()
    start = JSON_START.search(text)
    assert start is not None
    docs, pos = [], start.start()
    while pos < len(text) and text[pos] == "{":
        doc, end = decoder.raw_decode(text, pos)
        docs.append(doc)
        pos = end + len(text[end:]) - len(text[end:].lstrip())
    return docs


def raw_entries(name: str) -> list[dict[str, Any]]:
    doc = raw_documents(name)[-1]
    return doc.get("client_stats", doc.get("jobs"))


def ns_to_us(value: float) -> float:
    return value / 1000


# --- json+ and fio's own normal report of the same run ---------------------------------------

NORMAL = "randread-libaio-jsonplus-normal.json"
UNIT_US = {"nsec": 0.001, "usec": 1.0, "msec": 1000.0}
SUFFIX = {"": 1, "k": 1e3, "M": 1e6}


def test_json_plus_agrees_with_fios_normal_report_of_the_same_run() -> None:
    output = parse_fio_file(DATA / NORMAL)
    report = output.trailing_text
    assert report.startswith("randread-qd4: (groupid=0, jobs=1): err= 0")
    (job,) = output.jobs
    read = job.directions["read"]

    iops_text, suffix, io_mib, runtime = re.search(
        r"read: IOPS=([\d.]+)([kM]?), BW=[^(]+\([^)]+\)\((\d+)MiB/(\d+)msec\)", report
    ).groups()
    last_digit = 10 ** -len(iops_text.partition(".")[2]) * SUFFIX[suffix]
    assert abs(read.iops - float(iops_text) * SUFFIX[suffix]) <= last_digit
    assert read.runtime_ms == int(runtime)
    assert round(read.io_bytes / 2**20) == int(io_mib)
    assert int(re.search(r"issued rwts: total=(\d+),", report).group(1)) == read.total_ios

    for name, stats in (("slat", read.slat), ("clat", read.clat), ("lat", read.lat)):
        unit, low, high, avg, stdev = re.search(
            rf"^ +{name} \((\w+)\): min=\s*(\d+), max=\s*(\d+),"
            r" avg=\s*([\d.]+), stdev=\s*([\d.]+)",
            report,
            re.MULTILINE,
        ).groups()
        assert stats is not None
        scale = UNIT_US[unit]
        assert math.floor(stats.min_us / scale + 1e-9) == int(low)
        assert math.floor(stats.max_us / scale + 1e-9) == int(high)
        assert f"{stats.mean_us / scale:.2f}" == avg
        assert f"{stats.stddev_us / scale:.2f}" == stdev

    unit, table = re.search(r"clat percentiles \((\w+)\):\n((?: +\|.*\n)+)", report).groups()
    printed = dict(re.findall(r"([\d.]+)th=\[\s*(\d+)\]", table))
    assert len(printed) == 17
    for percent, value in printed.items():
        # the normal report rounds up to whole units
        assert math.ceil(read.clat.percentile_us(float(percent)) / UNIT_US[unit]) == int(value)

    usr, sys_ = re.search(r"cpu +: usr=([\d.]+)%, sys=([\d.]+)%", report).groups()
    assert (f"{job.usr_cpu_pct:.2f}", f"{job.sys_cpu_pct:.2f}") == (usr, sys_)


def test_json_plus_keeps_the_header_lines_as_notes_and_the_histogram() -> None:
    output = parse_fio_file(DATA / NORMAL)
    assert output.fio_version == "fio-3.33"
    assert output.notes[1:] == [
        "fio-3.33",
        "Starting 1 process",
        "randread-qd4: Laying out IO file (1 file / 8MiB)",
    ]
    clat = output.jobs[0].directions["read"].clat
    raw = raw_entries(NORMAL)[0]["read"]["clat_ns"]
    assert clat.bins == {int(k): v for k, v in raw["bins"].items()}
    assert clat.n == raw["N"] == sum(clat.bins.values())
    assert output.disk_util and output.disk_util[0]["name"]


JSON_PLUS = sorted(
    p.name for p in DATA.glob("*jsonplus*.json") if not p.name.startswith(("synthetic", "trunc"))
)


@pytest.mark.parametrize("name", [n for n in JSON_PLUS if "empty" not in n])
def test_percentiles_from_bins_reproduce_fios_own_percentiles(name: str) -> None:
    checked = 0
    for job in parse_fio_file(DATA / name).jobs:
        for direction in job.directions.values():
            for stats in (direction.slat, direction.clat, direction.lat):
                if stats is None or not stats.bins:
                    continue
                recomputed = percentiles_from_bins(stats.bins, stats.percentiles_us)
                assert recomputed == stats.percentiles_us
                checked += 1
    assert checked >= 1


def test_latency_is_total_latency_when_fio_computed_its_percentiles() -> None:
    name = "randrw-latpct-json.json"
    (job,) = parse_fio_file(DATA / name).jobs
    raw = raw_entries(name)[0]
    assert set(job.directions) == {"read", "write"}
    for direction in ("read", "write"):
        result = job.directions[direction]
        assert result.latency_source == "lat"
        assert result.latency is result.lat
        # with lat_percentiles=1 fio keeps clat percentiles too; lat's are larger (slat added)
        assert result.clat.percentile_us(50) < result.lat.percentile_us(50)
        assert result.lat.bins is None  # plain json has no histogram
        want = raw[direction]["lat_ns"]["percentile"]["99.000000"]
        assert result.latency.percentile_us(99) == ns_to_us(want)
        assert result.iops == raw[direction]["iops"]
        assert result.bw_bytes == raw[direction]["bw_bytes"]
    # rwmixread=70
    share = job.directions["read"].total_ios / sum(d.total_ios for d in job.directions.values())
    assert 0.65 < share < 0.75


def test_latency_is_completion_latency_by_default() -> None:
    read = parse_fio_file(DATA / NORMAL).jobs[0].directions["read"]
    assert read.lat is not None and read.lat.percentiles_us == {}
    assert read.latency_source == "clat"
    assert read.latency is read.clat


def test_percentile_lookup_by_number_or_missing() -> None:
    stats = LatencyStats(
        n=3, min_us=1, max_us=9, mean_us=4, stddev_us=1,
        percentiles_us={"99.900000": 8.5, "50.000000": 4.0, "99.5": 8.0},
    )  # fmt: skip
    assert stats.percentile_us(99.9) == 8.5
    assert stats.percentile_us(50) == 4.0
    assert stats.percentile_us(99.5) == 8.0
    assert stats.percentile_us(99.99) is None


# --- text before the JSON ----------------------------------------------------------------


def test_note_printed_before_the_json_is_kept() -> None:
    output = parse_fio_file(DATA / "note-psync-iodepth-jsonplus.json")
    assert output.notes == [
        "note: both iodepth >= 1 and synchronous I/O engine are selected, queue depth will be"
        " capped at 1"
    ]
    (job,) = output.jobs
    assert job.ok and job.directions["read"].total_ios > 0
    assert job.directions["read"].slat is None  # a synchronous engine measures no slat


def test_failed_job_has_no_directions_and_its_error_lines_are_notes() -> None:
    name = "job-error-enotdir-jsonplus.json"
    output = parse_fio_file(DATA / name)
    assert output.notes == [
        "file:filesetup.c:455, func=fstat, error=Not a directory",
        "fio: pid=0, err=20/file:filesetup.c:455, func=fstat, error=Not a directory",
    ]
    good, bad = output.jobs
    assert (good.name, good.ok, list(good.directions)) == ("good", True, ["read"])
    assert good.directions["read"].io_bytes == 1024 * 1024  # size=1m
    assert (bad.name, bad.error, bad.ok) == ("bad", 20, False)
    assert bad.directions == {}
    raw_bad = raw_entries(name)[1]
    assert raw_bad["error"] == 20 and raw_bad["write"]["iops"] == 0  # fio's zeros, not kept


# --- numjobs: group_reporting and merged clones --------------------------------------------


def test_group_reporting_entry_is_one_result_for_two_processes() -> None:
    name = "numjobs2-group-reporting-jsonplus.json"
    (job,) = parse_fio_file(DATA / name).jobs
    (raw,) = raw_entries(name)
    assert job.group_reporting is True  # the flag is not in the JSON: one entry, numjobs=2
    assert job.processes == 2
    assert job.job_runtime_ms == raw["job_runtime"]
    assert 1900 <= job.job_runtime_ms <= 2100  # fio sums the two 1 s runtimes
    assert job.usr_cpu_pct == raw["usr_cpu"] and job.sys_cpu_pct == raw["sys_cpu"]
    read = job.directions["read"]
    assert read.iops == raw["read"]["iops"]
    assert read.clat.n == raw["read"]["clat_ns"]["N"] == read.total_ios
    assert read.clat.percentile_us(99) == ns_to_us(
        raw["read"]["clat_ns"]["percentile"]["99.000000"]
    )


def pooled(entries: list[dict[str, Any]]) -> tuple[float, float]:
    """Mean and sample standard deviation of the union of samples, from (N, mean, stddev)."""
    n = sum(e["N"] for e in entries)
    mean = sum(e["N"] * e["mean"] for e in entries) / n
    squares = sum(
        (e["N"] - 1) * e["stddev"] ** 2 + e["N"] * (e["mean"] - mean) ** 2 for e in entries
    )
    return mean, math.sqrt(squares / (n - 1))


def order_statistic_percentiles(bins: dict[int, int], keys: list[str]) -> dict[str, float]:
    """Percentiles as the k-th smallest sample, k = ceil(p/100 x N), from the expanded samples."""
    samples = sorted(value for value, count in bins.items() for _ in range(count))
    return {
        key: samples[math.ceil(Fraction(float(key)) * len(samples) / 100) - 1] / 1000
        for key in keys
    }


def test_clones_without_group_reporting_are_merged_by_hand_computed_sums() -> None:
    name = "numjobs2-separate-jsonplus.json"
    (job,) = parse_fio_file(DATA / name).jobs
    first, second = raw_entries(name)
    assert first["jobname"] == second["jobname"] == job.name
    assert (job.processes, job.group_reporting) == (2, False)

    read, a, b = job.directions["read"], first["read"], second["read"]
    assert read.iops == pytest.approx(a["iops"] + b["iops"], rel=1e-12)
    assert read.bw_bytes == a["bw_bytes"] + b["bw_bytes"]
    assert read.io_bytes == a["io_bytes"] + b["io_bytes"]
    assert read.total_ios == a["total_ios"] + b["total_ios"]
    assert read.runtime_ms == max(a["runtime"], b["runtime"])

    # CPU: total CPU time over total runtime, still percent of one CPU per process
    runtime = first["job_runtime"] + second["job_runtime"]
    usr = first["usr_cpu"] * first["job_runtime"] + second["usr_cpu"] * second["job_runtime"]
    assert job.usr_cpu_pct == pytest.approx(usr / runtime)
    assert 0 <= job.usr_cpu_pct <= 100
    assert job.job_runtime_ms == runtime
    assert job.ctx == first["ctx"] + second["ctx"]

    for key in ("clat_ns", "slat_ns", "lat_ns"):
        stats = getattr(read, key.removesuffix("_ns"))
        parts = [a[key], b[key]]
        mean, stddev = pooled(parts)
        assert stats.n == parts[0]["N"] + parts[1]["N"]
        assert stats.min_us == ns_to_us(min(p["min"] for p in parts))
        assert stats.max_us == ns_to_us(max(p["max"] for p in parts))
        assert stats.mean_us == pytest.approx(ns_to_us(mean), rel=1e-12)
        assert stats.stddev_us == pytest.approx(ns_to_us(stddev), rel=1e-9)

    merged_bins: dict[int, int] = {}
    for part in (a, b):
        for value, count in part["clat_ns"]["bins"].items():
            merged_bins[int(value)] = merged_bins.get(int(value), 0) + count
    assert read.clat.bins == merged_bins
    keys = list(a["clat_ns"]["percentile"])
    assert read.clat.percentiles_us == order_statistic_percentiles(merged_bins, keys)
    assert read.latency_source == "clat" and not read.clat.percentiles_lost
    p99 = read.clat.percentile_us(99)
    low, high = sorted(ns_to_us(p["clat_ns"]["percentile"]["99.000000"]) for p in (a, b))
    assert low <= p99 <= high


def test_merged_clones_without_bins_have_no_percentiles() -> None:
    name = "numjobs2-separate-json.json"
    (job,) = parse_fio_file(DATA / name).jobs
    first, second = raw_entries(name)
    read = job.directions["read"]
    assert read.iops == pytest.approx(first["read"]["iops"] + second["read"]["iops"])
    assert "percentile" in first["read"]["clat_ns"]  # fio printed them per entry
    assert read.clat.bins is None and read.clat.percentiles_us == {}
    assert read.clat.percentiles_lost
    assert read.latency.percentile_us(99) is None
    assert read.clat.n == first["read"]["clat_ns"]["N"] + second["read"]["clat_ns"]["N"]


def test_pooled_standard_deviation_equals_that_of_all_samples() -> None:
    groups = [[10.0, 12.0, 15.0, 11.0], [30.0, 28.0, 35.0], [20.0]]
    stats = [
        LatencyStats(
            n=len(g), min_us=min(g), max_us=max(g), mean_us=statistics.mean(g),
            stddev_us=statistics.stdev(g) if len(g) > 1 else 0.0,
        )
        for g in groups
    ]  # fmt: skip
    merged = merge_latency(stats, [0, 0, 0])
    everything = [x for g in groups for x in g]
    assert merged.n == len(everything)
    assert merged.mean_us == pytest.approx(statistics.mean(everything))
    assert merged.stddev_us == pytest.approx(statistics.stdev(everything))
    assert (merged.min_us, merged.max_us) == (10.0, 35.0)


def test_a_failing_clone_makes_the_merged_result_failed() -> None:
    doc = raw_documents("numjobs2-separate-json.json")[0]
    doc["jobs"][1]["error"] = 5
    (job,) = parse_fio_text(json.dumps(doc)).jobs
    assert (job.error, job.ok, job.directions, job.processes) == (5, False, {}, 2)


def test_group_reporting_option_printed_as_a_value_is_read() -> None:
    doc = raw_documents("steadystate-json.json")[0]
    doc["global options"] = {"group_reporting": "1"}
    (job,) = parse_fio_text(json.dumps(doc)).jobs
    assert (job.group_reporting, job.processes) == (True, 1)
    (plain,) = parse_fio_file(DATA / "steadystate-json.json").jobs
    assert plain.group_reporting is None  # numjobs=1, no option: nothing tells


# --- several jobs, directions ------------------------------------------------------------


def test_stonewalled_jobs_are_separate_groups() -> None:
    name = "stonewall-three-jobs-jsonplus.json"
    jobs = parse_fio_file(DATA / name).jobs
    assert [(j.name, j.groupid, list(j.directions)) for j in jobs] == [
        ("seqwrite-64k", 0, ["write"]),
        ("randread-4k", 1, ["read"]),
        ("randwrite-4k-qd1", 2, ["write"]),
    ]
    for job, raw in zip(jobs, raw_entries(name), strict=True):
        (direction,) = job.directions.values()
        assert direction.iops == raw[direction.direction]["iops"] > 0
        assert job.processes == 1 and job.group_reporting is None
    seqwrite = jobs[0].directions["write"]
    assert seqwrite.io_bytes == 64 * 1024 * seqwrite.total_ios


def test_fdatasync_count_comes_from_n_when_total_ios_is_zero() -> None:
    name = "fdatasync-write-jsonplus.json"
    (job,) = parse_fio_file(DATA / name).jobs
    (raw,) = raw_entries(name)
    assert raw["sync"]["total_ios"] == 0 and raw["sync"]["lat_ns"]["N"] > 0
    sync = job.directions["sync"]
    assert sync.total_ios == raw["sync"]["lat_ns"]["N"]
    assert sync.latency_source == "lat" and sync.clat is None
    assert sync.lat.mean_us == ns_to_us(raw["sync"]["lat_ns"]["mean"])
    assert sync.latency.percentile_us(50) == ns_to_us(
        raw["sync"]["lat_ns"]["percentile"]["50.000000"]
    )
    assert math.isnan(sync.iops) and math.isnan(sync.bw_bytes)  # fio gives no rate for syncs
    write = job.directions["write"]
    assert write.io_bytes == 1024 * 1024 and write.total_ios == 256
    # one fdatasync per write; fio does not time the first
    assert sync.total_ios in (write.total_ios - 1, write.total_ios)


def test_trim_on_a_loop_device() -> None:
    name = "trim-loopdev-jsonplus.json"
    output = parse_fio_file(DATA / name)
    (job,) = output.jobs
    assert list(job.directions) == ["trim"]
    trim = job.directions["trim"]
    raw = raw_entries(name)[0]["trim"]
    assert trim.iops == raw["iops"] > 0 and trim.total_ios == raw["total_ios"]
    assert trim.io_bytes == 4096 * trim.total_ios
    assert output.disk_util[0]["name"].startswith("loop")


def test_unified_rw_reporting_gives_one_mixed_direction() -> None:
    (job,) = parse_fio_file(DATA / "unified-rw-mixed-json.json").jobs
    assert list(job.directions) == ["mixed"]
    assert job.directions["mixed"].total_ios > 0


def test_steadystate_object_is_kept() -> None:
    (job,) = parse_fio_file(DATA / "steadystate-json.json").jobs
    assert job.steadystate is not None
    assert job.steadystate["ss"] == "iops:50.000000%"
    assert job.steadystate["attained"] in (0, 1)
    assert len(job.steadystate["data"]["iops"]) == job.steadystate["duration"]


def test_status_interval_reports_use_the_last_one() -> None:
    name = "status-interval-3-reports-json.json"
    output = parse_fio_file(DATA / name)
    documents = raw_documents(name)
    assert len(documents) == 3 and output.interim_reports == 2
    ios = [d["jobs"][0]["read"]["total_ios"] for d in documents]
    assert ios == sorted(ios)  # cumulative
    assert output.jobs[0].directions["read"].total_ios == ios[-1]


def test_status_interval_reports_separated_by_normal_text() -> None:
    # --status-interval with --output-format=json,normal prints a normal report after each one
    text = (DATA / "status-interval-3-reports-json.json").read_text()
    text = re.sub(r"^\}\n", "}\nstatus-interval: (groupid=0, jobs=1): err= 0\n", text, flags=re.M)
    output = parse_fio_text(text)
    last = raw_documents("status-interval-3-reports-json.json")[-1]
    assert output.interim_reports == 2
    assert output.jobs[0].directions["read"].total_ios == last["jobs"][0]["read"]["total_ios"]
    assert output.trailing_text == "status-interval: (groupid=0, jobs=1): err= 0"


# --- client/server ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "name", ["client-server-numjobs2-json.json", "client-server-format-first-json.json"]
)
def test_client_server_output_per_host_without_the_all_clients_entry(name: str) -> None:
    output = parse_fio_file(DATA / name)
    entries = raw_entries(name)
    assert [e["jobname"] for e in entries] == ["cs-randread", "cs-randread", "All clients"]
    assert output.client_server
    (job,) = output.jobs
    assert (job.name, job.hostname, job.processes) == ("cs-randread", "127.0.0.1", 2)
    assert job.port == entries[0]["port"]
    hosts = entries[:2]
    assert job.directions["read"].iops == pytest.approx(sum(e["read"]["iops"] for e in hosts))
    assert job.directions["read"].total_ios == sum(e["read"]["total_ios"] for e in hosts)
    (aggregate,) = output.client_aggregates
    assert aggregate.name == "All clients"
    # fio's own aggregate already holds the per-host sum, which is why it must not be added again
    assert aggregate.directions["read"].total_ios == job.directions["read"].total_ios
    assert aggregate.directions["read"].io_bytes == job.directions["read"].io_bytes


def test_server_text_before_the_json_becomes_notes() -> None:
    output = parse_fio_file(DATA / "client-server-format-first-json.json")
    assert any(note.endswith("Starting 2 processes") for note in output.notes)
    assert all(note.startswith("<") for note in output.notes)


# --- interrupted, broken and foreign files -------------------------------------------------


def test_sigint_output_is_partial_but_valid() -> None:
    output = parse_fio_file(DATA / "sigint-interrupted-jsonplus.json")
    assert output.notes == ["fio: terminating on signal 2"]
    (job,) = output.jobs
    assert job.ok
    assert 0 < job.directions["read"].runtime_ms < 30_000  # runtime=30 was cut short


@pytest.mark.parametrize(
    ("name", "words"),
    [
        ("truncated-by-hand-first-half-of-sigint-interrupted-jsonplus.json", "cut off or damaged"),
        ("sigkill-empty-jsonplus.json", "empty"),
        ("synthetic-not-fio-output.json", "not fio output"),
        ("terse-output.txt", "no JSON"),
    ],
)
def test_unusable_files_raise_an_error_naming_the_file(name: str, words: str) -> None:
    with pytest.raises(FioOutputError, match=words) as caught:
        parse_fio_file(DATA / name)
    assert str(DATA / name) in str(caught.value)
    assert isinstance(caught.value, SsdcompareError)


def test_missing_file_raises_an_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(FioOutputError, match="cannot read"):
        parse_fio_file(tmp_path / "fio.json")


def test_text_source_is_named_in_errors() -> None:
    with pytest.raises(FioOutputError, match="^<text>: empty"):
        parse_fio_text("\n")
    with pytest.raises(FioOutputError, match="^run-3: JSON, but not fio output"):
        parse_fio_text('{"jobs": 3}\n', source="run-3")
    with pytest.raises(FioOutputError, match="^run-4: no JSON in it"):
        parse_fio_text("[1, 2]\n", source="run-4")


def test_nan_and_inf_are_tolerated() -> None:
    text = (DATA / NORMAL).read_text()
    raw = raw_entries(NORMAL)[0]["read"]
    mean = f'"mean" : {raw["clat_ns"]["mean"]:f}'
    assert text.count(mean) == 1
    text = text.replace(mean, '"mean" : -nan').replace('"bw_agg" : ', '"bw_agg" : inf, "x" : ', 1)
    output = parse_fio_text(text)
    read = output.jobs[0].directions["read"]
    assert math.isnan(read.clat.mean_us)
    assert read.iops == raw["iops"]
    assert output.warnings and "nan" in output.warnings[0]


def test_bw_in_kib_when_bw_bytes_is_missing() -> None:
    # fio 3.0 and 3.1 printed io_bytes and io_kbytes but no bw_bytes
    doc = raw_documents("stonewall-three-jobs-jsonplus.json")[0]
    del doc["jobs"][1]["read"]["bw_bytes"]
    read = parse_fio_text(json.dumps(doc)).jobs[1].directions["read"]
    assert read.bw_bytes == doc["jobs"][1]["read"]["bw"] * 1024
    assert read.io_bytes == doc["jobs"][1]["read"]["io_bytes"]


# --- older layouts (synthetic files, see tests/data/README.md) -----------------------------


def test_fio_2_layout_units_and_padding() -> None:
    output = parse_fio_file(DATA / "synthetic-fio-2.x-layout.json")
    assert output.fio_version == "fio-2.2.10"
    randread, seqwrite = output.jobs
    write = seqwrite.directions["write"]
    assert list(seqwrite.directions) == ["write"]
    assert write.io_bytes == 20480 * 1024  # printed in KiB under the name io_bytes
    assert write.bw_bytes == 2048 * 1024
    assert (write.iops, write.runtime_ms, write.total_ios) == (512.0, 10000, 5120)
    assert write.slat is None  # all zeros: not measured
    assert (write.clat.n, write.clat.min_us, write.clat.mean_us) == (None, 120.0, 480.25)
    assert write.clat.stddev_us == 95.5
    assert len(write.clat.percentiles_us) == 17  # the "0.00" padding is dropped
    assert write.clat.percentile_us(99.9) == 2500.0
    assert write.latency_source == "clat"  # fio 2.x had no lat percentiles
    assert seqwrite.job_runtime_ms is None and seqwrite.usr_cpu_pct == 1.75


def test_fio_2_layout_clones_merge_weighted_by_total_ios() -> None:
    randread = parse_fio_file(DATA / "synthetic-fio-2.x-layout.json").jobs[0]
    assert randread.name == "randread-2x"
    assert (randread.processes, randread.group_reporting) == (2, False)
    read = randread.directions["read"]
    assert read.io_bytes == (40000 + 30000) * 1024
    assert read.bw_bytes == (4000 + 3000) * 1024
    assert (read.iops, read.total_ios) == (1750.0, 17500)
    # no N before fio 3.18: each clone weighs its total_ios (10000 and 7500)
    mean = (10000 * 250.50 + 7500 * 333.33) / 17500
    squares = 9999 * 40.25**2 + 7499 * 60.00**2 + 10000 * (250.50 - mean) ** 2
    squares += 7500 * (333.33 - mean) ** 2
    assert read.clat.n is None
    assert read.clat.mean_us == pytest.approx(mean)
    assert read.clat.stddev_us == pytest.approx(math.sqrt(squares / 17499))
    assert (read.clat.min_us, read.clat.max_us) == (50.0, 3000.0)
    assert read.clat.percentiles_us == {} and read.clat.percentiles_lost
    assert randread.usr_cpu_pct == pytest.approx((2.50 + 3.50) / 2)  # no job_runtime: plain mean


def test_fio_2_json_plus_bins_by_bucket_index() -> None:
    (job,) = parse_fio_file(DATA / "synthetic-fio-2.x-jsonplus-layout.json").jobs
    clat = job.directions["read"].clat
    # bucket 100 is exact (100 µs); 128 -> 129 µs, 200 -> 290 µs, 260 -> 548 µs (midpoints)
    assert clat.bins == {100_000: 10, 129_000: 50, 290_000: 35, 548_000: 5}
    assert percentiles_from_bins(clat.bins, clat.percentiles_us) == clat.percentiles_us
    assert clat.percentile_us(50) == 129.0 and clat.percentile_us(99.9) == 548.0


def test_fio_3_16_layout_without_n_merges_bins() -> None:
    (job,) = parse_fio_file(DATA / "synthetic-fio-3.16-layout.json").jobs
    assert list(job.directions) == ["read"]  # zero write/trim/sync sections are not results
    read = job.directions["read"]
    assert (read.io_bytes, read.bw_bytes, read.iops, read.total_ios) == (614400, 61440, 15.0, 150)
    assert read.slat.n is None and read.slat.percentiles_us == {}
    assert read.lat.percentiles_us == {} and read.latency_source == "clat"
    clat = read.clat
    assert clat.bins == {100864: 10, 130560: 55, 150528: 30, 292864: 35, 403456: 14, 552960: 6}
    # running counts 10, 65, 95, 130, 144, 150: p10 -> 15th, p50 -> 75th, p90 -> 135th sample
    assert clat.percentile_us(5) == 100.864
    assert clat.percentile_us(10) == 130.56
    assert clat.percentile_us(50) == 150.528
    assert clat.percentile_us(70) == 292.864
    assert clat.percentile_us(90) == 403.456
    assert clat.percentile_us(99) == 552.96
    assert clat.mean_us == pytest.approx((100 * 205.5168 + 50 * 227.39968) / 150)
    assert job.usr_cpu_pct == 5.5 and job.ctx == 230
