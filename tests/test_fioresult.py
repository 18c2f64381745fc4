"""The fio output parser against real fio 3.33 outputs recorded in tests/data (see its README).

Expected numbers come from the raw JSON of the same file or from fio's own normal report of the
same run, never from the parser itself.
"""

from __future__ import annotations

import codecs
import json
import math
import random
import re
import statistics
from fractions import Fraction
from pathlib import Path
from typing import Any
from unittest import mock

import pytest

from ssdcompare import regularfile
from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.result import entry as fioentry
from ssdcompare.fio.result import merge as fiomerge
from ssdcompare.fio.result import models as fiomodels
from ssdcompare.fio.result import quick as fioquick
from ssdcompare.fio.result import reader as fioresult
from ssdcompare.fio.result.merge import merge_latency
from ssdcompare.fio.result.models import FioOutputError, LatencyStats, percentiles_from_bins
from ssdcompare.fio.result.reader import parse_fio_file, parse_fio_text

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
    steady = job.steadystate
    # as recorded: fio checked IOPS within 50 % of the mean over a 1 s window, and attained it
    assert steady["ss"] == "iops:50.000000%"
    assert (steady["attained"], steady["duration"]) == (1, 1)
    assert steady["criterion"] == "0.000000%" and steady["max_deviation"] == 0.0
    samples = steady["data"]["iops"]
    assert len(samples) == steady["duration"]
    assert steady["data"]["iops_mean"] == sum(samples) // len(samples) > 0


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
        ("terse-output.txt", "not JSON: it begins with text"),
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
    with pytest.raises(FioOutputError, match="^run-3: JSON, but not fio output: 'jobs' is a"):
        parse_fio_text('{"jobs": 3}\n', source="run-3")
    with pytest.raises(FioOutputError, match="^run-4: not JSON: it begins with text"):
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
    assert output.warnings == [
        "job 'randread-qd4': fio printed nan for read.clat_ns.mean and inf for read.bw_agg:"
        " read as missing"
    ]


def test_bw_in_kib_when_bw_bytes_is_missing() -> None:
    # fio 3.0 and 3.1 printed io_bytes and io_kbytes but no bw_bytes
    doc = raw_documents("stonewall-three-jobs-jsonplus.json")[0]
    del doc["jobs"][1]["read"]["bw_bytes"]
    read = parse_fio_text(json.dumps(doc)).jobs[1].directions["read"]
    assert read.bw_bytes == doc["jobs"][1]["read"]["bw"] * 1024
    assert read.io_bytes == doc["jobs"][1]["read"]["io_bytes"]


# --- numbers fio could not compute, and values that are not numbers --------------------------


def fio_json(doc: dict[str, Any], bare: dict[str, str] | None = None) -> str:
    """A document in fio's layout; string values named in `bare` become bare tokens (-nan)."""
    text = json.dumps(doc, indent=2, separators=(",", " : "))
    for sentinel, token in (bare or {}).items():
        text = text.replace(json.dumps(sentinel), token)
    return text + "\n"


def test_nan_iops_without_total_ios_is_missing_not_an_exception() -> None:
    # fio before 2.2 printed no total_ios: it is worked out from iops, which fio may print -nan
    doc = raw_documents("synthetic-fio-2.x-layout.json")[0]
    write = doc["jobs"][2]["write"]
    del write["total_ios"]
    write["iops"] = "@nan"
    output = parse_fio_text(fio_json(doc, {"@nan": "-nan"}))
    seqwrite = output.jobs[1].directions["write"]
    assert math.isnan(seqwrite.iops)
    assert seqwrite.total_ios is None  # unknown, not 0 and not a guess
    assert seqwrite.io_bytes == write["io_bytes"] * 1024  # what fio did print is kept
    assert output.warnings == ["job 'seqwrite': fio printed nan for write.iops: read as missing"]


def test_non_finite_counts_are_missing_never_zero() -> None:
    doc = raw_documents("numjobs2-separate-json.json")[0]
    first = doc["jobs"][0]
    first["job_runtime"] = "@inf"
    first["ctx"] = "@nan"
    first["read"]["runtime"] = "@nan"
    first["read"]["total_ios"] = "@nan"
    doc["timestamp"] = "@nan"
    output = parse_fio_text(fio_json(doc, {"@inf": "inf", "@nan": "-nan"}))
    (job,) = output.jobs
    read = job.directions["read"]
    # a sum with an unknown part is unknown
    assert (job.job_runtime_ms, job.ctx, read.runtime_ms, read.total_ios) == (None,) * 4
    assert output.timestamp is None
    second = doc["jobs"][1]["read"]
    assert read.iops == pytest.approx(first["read"]["iops"] + second["iops"])
    assert read.io_bytes == first["read"]["io_bytes"] + second["io_bytes"]
    # the clones' latency is still pooled: N is known for both
    assert read.clat.n == first["read"]["clat_ns"]["N"] + second["clat_ns"]["N"]
    assert output.warnings == [
        "fio's output: fio printed nan for timestamp: read as missing",
        "job 'randread-2jobs': fio printed nan for read.runtime, read.total_ios, ctx and inf"
        " for job_runtime: read as missing",
    ]


def test_warning_names_every_field_fio_printed_as_nan() -> None:
    doc = raw_documents(NORMAL)[0]
    doc["jobs"][0]["read"]["iops"] = "@nan"
    doc["jobs"][0]["read"]["clat_ns"]["mean"] = "@nan"
    output = parse_fio_text(fio_json(doc, {"@nan": "-nan"}))
    read = output.jobs[0].directions["read"]
    assert math.isnan(read.iops) and math.isnan(read.clat.mean_us)
    assert read.clat.percentile_us(99) is not None  # the rest of the object is kept
    assert output.warnings == [
        "job 'randread-qd4': fio printed nan for read.iops, read.clat_ns.mean: read as missing"
    ]


def test_values_that_are_not_numbers_are_missing_and_named() -> None:
    doc = raw_documents(NORMAL)[0]
    read = doc["jobs"][0]["read"]
    read["iops"] = "fast"
    read["clat_ns"]["stddev"] = [1, 2]
    first_bin = next(iter(read["clat_ns"]["bins"]))
    read["clat_ns"]["bins"][first_bin] = "x"
    read["lat_ns"]["percentile"] = 5
    output = parse_fio_text(fio_json(doc))
    result = output.jobs[0].directions["read"]
    assert math.isnan(result.iops) and math.isnan(result.clat.stddev_us)
    assert result.clat.bins is None  # a histogram with a hole would give wrong percentiles
    assert result.clat.percentile_us(99) == ns_to_us(read["clat_ns"]["percentile"]["99.000000"])
    assert output.warnings == [
        "job 'randread-qd4': not a number where fio writes one: read.clat_ns.stddev (a list),"
        f" read.clat_ns.bins.{first_bin} (a string ('x')), read.iops (a string ('fast'));"
        " read as missing",
        "job 'randread-qd4': read.lat_ns.percentile is a number (5), where fio writes an"
        " object: left out",
    ]


@pytest.mark.parametrize(
    ("edit", "words"),
    [
        (lambda t: t.replace('"iops" : ', '"iops" : ' + "[" * 100_000, 1), "nested too deeply"),
        (lambda t: t.replace('"error" : 0', '"error" : 1e999', 1), "'error' of jobs"),
        (lambda t: t.replace('"error" : 0', '"error" : 99999999999', 1), "not an errno"),
    ],
)  # fmt: skip
def test_unreadable_values_raise_fio_output_error_only(edit: Any, words: str) -> None:
    text = edit((DATA / NORMAL).read_text())
    with pytest.raises(FioOutputError, match=words) as caught:
        parse_fio_text(text, source="run-9")
    assert str(caught.value).startswith("run-9: ")


def test_numbers_beyond_any_float_are_named_and_read_as_missing() -> None:
    """An integer of more digits than Python makes an int of, or 1e999: inf, named where it is
    used (there is no nan or inf word in the text to start the walk that names them)."""
    text = (DATA / NORMAL).read_text()
    for literal in ("1" + "0" * 5000, "1e999"):
        edited = text.replace('"iops" : ', f'"iops" : {literal}, "x" : ', 1)
        output = parse_fio_text(edited, source="run-9")
        assert math.isnan(output.jobs[0].directions["read"].iops)
        assert output.warnings == [
            "job 'randread-qd4': fio printed inf for read.iops: read as missing"]  # fmt: skip


def test_huge_numbers_are_missing_not_an_overflow() -> None:
    doc = raw_documents("synthetic-fio-2.x-jsonplus-layout.json")[0]
    read = doc["jobs"][0]["read"]
    read["iops"] = 10**400  # float() of it overflows
    read["clat"]["bins"]["FIO_IO_U_PLAT_BITS"] = 10**9  # 1 << that would never end
    output = parse_fio_text(fio_json(doc))
    result = output.jobs[0].directions["read"]
    assert math.isnan(result.iops)
    assert result.clat.bins is None and result.clat.percentile_us(50) is not None
    assert "read.iops (a number of 25 digits or more)" in output.warnings[0]
    assert "FIO_IO_U_PLAT_BITS 1000000000" in output.warnings[1]


# --- several entries: what they are and what is wrong with them ------------------------------


def test_two_sections_with_one_name_are_two_jobs_not_clones() -> None:
    name = "dup-section-names-json.json"
    output = parse_fio_file(DATA / name)
    reader, writer = output.jobs
    raw_reader, raw_writer = raw_entries(name)
    assert (reader.name, reader.job_options) == ("job", {"rw": "randread", "bs": "4k"})
    assert (writer.name, writer.job_options) == ("job", {"rw": "randwrite", "bs": "8k"})
    assert list(reader.directions) == ["read"] and list(writer.directions) == ["write"]
    assert reader.processes == writer.processes == 1
    assert reader.directions["read"].iops == raw_reader["read"]["iops"]
    assert writer.directions["write"].iops == raw_writer["write"]["iops"]
    assert output.warnings == [
        "2 jobs are named 'job' in group 0 with different options (bs=4k, rw=randread /"
        " bs=8k, rw=randwrite): kept apart, not merged as numjobs clones"
    ]


def test_job_names_beginning_with_a_brace_are_text_not_json() -> None:
    # with json,normal fio prints "{a}: (g=0): ..." before the JSON and "{a}: (groupid=0, ..."
    # after it
    output = parse_fio_file(DATA / "brace-jobnames-json-normal.json")
    assert [(j.name, list(j.directions)) for j in output.jobs] == [
        ("{a}", ["read"]),
        ("{b}", ["write"]),
    ]
    assert output.notes[0].startswith("{a}: (g=0): rw=randread")
    assert output.trailing_text.startswith("{a}: (groupid=0, jobs=1): err= 0")
    assert output.interim_reports == 0 and output.warnings == []


@pytest.mark.parametrize(
    ("name", "clones"),
    [
        ("client-server-status-interval-numjobs2-json.json", 2),
        ("client-server-status-interval-one-job-json.json", 1),
    ],
)
def test_client_status_interval_reports_keep_only_the_last(name: str, clones: int) -> None:
    output = parse_fio_file(DATA / name)
    entries = raw_entries(name)
    per_job = [e for e in entries if e["jobname"] != "All clients"]
    assert len(per_job) >= 2 * clones  # at least one report before the final one
    final = per_job[-clones:]
    (job,) = output.jobs
    assert (job.processes, job.port) == (clones, final[0]["port"])
    read = job.directions["read"]
    assert read.total_ios == sum(e["read"]["total_ios"] for e in final)
    assert read.iops == pytest.approx(sum(e["read"]["iops"] for e in final))
    assert job.job_runtime_ms == sum(e["job_runtime"] for e in final)
    # an entry of an earlier report is smaller: the reports are cumulative
    assert per_job[0]["read"]["total_ios"] < final[0]["read"]["total_ios"]
    reports = len(per_job) // clones
    assert output.warnings[0] == (
        f"job {job.name!r} on 127.0.0.1:{job.port} is reported {reports} times"
        " (--status-interval; the reports are cumulative): the last report is used"
    )
    # fio's "All clients" sums the first report only
    assert output.client_aggregates == []
    assert ("All clients" in [e["jobname"] for e in entries]) == (clones > 1)


DOC = "numjobs2-separate-json.json"


def _drop_jobname(doc: dict[str, Any]) -> None:
    del doc["jobs"][1]["jobname"]


def _drop_error(doc: dict[str, Any]) -> None:
    del doc["jobs"][0]["error"]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_drop_jobname, "fio's JSON is not usable: jobs[1] has no 'jobname' (its keys: groupid,"
         " error, eta, elapsed, job options, read); fio names every entry"),
        (_drop_error, "fio's JSON is not usable: jobs[0] ('randread-2jobs') has no 'error':"
         " whether the job failed is unknown"),
        (lambda d: d["jobs"].__setitem__(0, "randread"), "fio's JSON is not usable: jobs[0] is"
         " a string ('randread'), where fio writes a job entry"),
        (lambda d: d.__setitem__("jobs", {}), "fio's JSON is not usable: 'jobs' is an object,"
         " where fio writes a list of job entries"),
        (lambda d: d.pop("jobs"), "fio's JSON is not usable: it has no 'jobs' (or"
         " 'client_stats') list of results (top-level keys: fio version, timestamp,"),
        (lambda d: d["jobs"][1].__setitem__("jobname", 7), "fio's JSON is not usable: the"
         " 'jobname' of jobs[1] is a number (7), not a name"),
        (lambda d: d["jobs"][0].__setitem__("error", "EIO"), "fio's JSON is not usable: the"
         " 'error' of jobs[0] ('randread-2jobs') is a string ('EIO'), not an errno"),
    ],
)  # fmt: skip
def test_an_unusable_entry_is_named_with_what_it_lacks(edit: Any, message: str) -> None:
    doc = raw_documents(DOC)[0]
    edit(doc)
    with pytest.raises(FioOutputError) as caught:
        parse_fio_text(fio_json(doc), source="run-5")
    assert str(caught.value).startswith(f"run-5: {message}")


# --- client/server: global options per server, and two servers on one IP ---------------------

TWO_SERVERS = "client-server-two-servers-one-ip-json.json"
OPTIONS_LIST = "synthetic-fio-3.43-client-global-options-list.json"


@pytest.mark.parametrize("name", [TWO_SERVERS, OPTIONS_LIST])
def test_two_servers_on_one_ip_stay_apart_by_port(name: str) -> None:
    output = parse_fio_file(DATA / name)
    entries = raw_entries(name)
    first, second = output.jobs
    assert first.hostname == second.hostname == "127.0.0.1"
    assert first.port != second.port
    for job in output.jobs:
        mine = [e for e in entries if e["port"] == job.port and e["jobname"] == job.name]
        assert len(mine) == 2  # numjobs=2 on each server, merged per server only
        assert (job.processes, job.group_reporting) == (2, False)
        read = job.directions["read"]
        assert read.total_ios == sum(e["read"]["total_ios"] for e in mine)
        assert read.io_bytes == sum(e["read"]["io_bytes"] for e in mine)
    (total,) = output.client_aggregates
    # fio writes on "All clients" the hostname and port of the server that reported last
    assert (total.hostname, total.port) == (entries[-1]["hostname"], entries[-1]["port"])
    assert total.port in (first.port, second.port)
    assert total.directions["read"].total_ios == sum(
        j.directions["read"].total_ios for j in output.jobs
    )


def test_two_servers_on_one_ip_with_status_interval_keep_each_ones_last_report() -> None:
    name = "client-server-status-interval-two-servers-json.json"
    output = parse_fio_file(DATA / name)
    entries = [e for e in raw_entries(name) if e["jobname"] != "All clients"]
    ports = {e["port"] for e in entries}
    assert len(ports) == 2 and {e["hostname"] for e in entries} == {"127.0.0.1"}
    assert sorted(j.port for j in output.jobs) == sorted(ports)
    for job in output.jobs:
        (final,) = [e for e in entries if e["port"] == job.port][-1:]
        assert (job.hostname, job.processes) == ("127.0.0.1", 1)
        assert job.directions["read"].total_ios == final["read"]["total_ios"]
        assert job.job_runtime_ms == final["job_runtime"]
    assert output.client_aggregates == []  # fio's sums the first report only


def test_global_options_listed_per_server_go_to_that_servers_jobs() -> None:
    output = parse_fio_file(DATA / OPTIONS_LIST)
    assert output.fio_version == "fio-3.43" and output.warnings == []
    raw_lists = raw_documents(OPTIONS_LIST)[0]["global options"]
    for job in output.jobs:
        (mine,) = [o for o in raw_lists if o["port"] == job.port]
        want = {k: v for k, v in mine.items() if k not in ("hostname", "port")}
        assert job.global_options == want
        assert job.options == {**want, "rw": "randread", "numjobs": "2"}
        # the recorded numbers agree: bytes per I/O is this server's bs
        read = job.directions["read"]
        bs = {"4k": 4096, "64k": 65536}[job.options["bs"]]
        assert read.io_bytes == bs * read.total_ios
    assert {j.options["iodepth"] for j in output.jobs} == {"4", "16"}
    # the file-wide options are those every server shares
    assert output.global_options == {"ioengine": "null", "size": "16m", "runtime": "1"}
    (total,) = output.client_aggregates
    assert total.global_options == output.global_options


def test_one_object_for_several_servers_leaves_clashing_options_unknown() -> None:
    # fio 3.33 puts every server's global options into one object, one after the other; the
    # second server's jobfile sets bs and iodepth otherwise and direct, which the first lacks
    text = (DATA / TWO_SERVERS).read_text()
    assert text.count('"bs" : "4k"') == text.count('"bs" : "64k"') == 1
    output = parse_fio_file(DATA / TWO_SERVERS)
    assert output.global_options == {"ioengine": "null", "size": "16m", "runtime": "1"}
    for job in output.jobs:
        assert job.global_options == output.global_options
        assert job.options["ioengine"] == "null"
    assert output.warnings == [
        "global options: bs (4k, 64k), iodepth (16, 4), direct (1) differ between the 2"
        " servers or are not set on all of them, and fio wrote every server's global options"
        " into one object without saying whose are whose: left unknown"
    ]


def test_one_object_for_one_server_with_status_interval_is_read_whole() -> None:
    # fio 3.33 repeats the global options once per --status-interval report
    name = "client-server-status-interval-numjobs2-json.json"
    text = (DATA / name).read_text()
    assert text.count('"bs" : "4k"') >= 2
    output = parse_fio_file(DATA / name)
    assert output.global_options == {"ioengine": "null", "size": "16m", "bs": "4k", "runtime": "2"}
    assert output.jobs[0].options["bs"] == "4k"


def test_a_servers_own_hostname_and_port_come_before_options_of_those_names() -> None:
    # the net engine has options called hostname and port; fio writes the server's first
    text = (DATA / OPTIONS_LIST).read_text()
    assert text.count('"iodepth" : "4"') == 1
    text = text.replace('"iodepth" : "4"', '"iodepth" : "4",\n      "hostname" : "10.0.0.9",'
                        '\n      "port" : "8888"', 1)  # fmt: skip
    output = parse_fio_text(text)
    (server,) = [j for j in output.jobs if j.options["iodepth"] == "4"]
    ports = {e["port"] for e in raw_entries(OPTIONS_LIST)}
    assert server.hostname == "127.0.0.1" and server.port in ports
    assert (server.options["hostname"], server.options["port"]) == ("10.0.0.9", "8888")
    assert server.options["bs"] == "4k"


def test_one_global_options_object_is_the_jobs_global_options() -> None:
    output = parse_fio_file(DATA / "stonewall-three-jobs-jsonplus.json")
    for job in output.jobs:
        assert job.global_options == output.global_options
        assert job.options == {**output.global_options, **job.job_options}


def test_an_option_printed_twice_in_a_job() -> None:
    # fio prints one "filename" per filename= line of the job, and opens every file
    text = (DATA / "job-error-enotdir-jsonplus.json").read_text()
    good = raw_entries("job-error-enotdir-jsonplus.json")[0]["job options"]["filename"]
    text = text.replace(
        f'"filename" : "{good}"', f'"filename" : "{good}",\n"filename" : "/dev/zero",'
        '\n"rw" : "randread"', 1
    )  # fmt: skip
    output = parse_fio_text(text)
    assert output.jobs[0].job_options["filename"] == f"{good}:/dev/zero"
    assert output.jobs[0].job_options["rw"] == "randread"  # a later assignment wins
    assert output.warnings == [
        f"job 'good': job options sets filename more than once ({good}, /dev/zero): fio uses"
        f" every one: read as {good}:/dev/zero",
        "job 'good': job options sets rw more than once (read, randread): the last is used",
    ]


# --- encodings ---------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [DOC, NORMAL])
@pytest.mark.parametrize(
    ("encode", "said"),
    [
        (lambda t: codecs.BOM_UTF8 + t.encode(), "UTF-8 with a byte-order mark"),
        (lambda t: codecs.BOM_UTF16_LE + t.encode("utf-16-le"), "UTF-16 LE with a byte-order"),
        (lambda t: codecs.BOM_UTF16_BE + t.encode("utf-16-be"), "UTF-16 BE with a byte-order"),
        (lambda t: t.encode("utf-16-le"), "UTF-16 LE without a byte-order mark"),
        (lambda t: t.encode("utf-16-be"), "UTF-16 BE without a byte-order mark"),
        (lambda t: t.encode("utf-32"), "UTF-32 LE with a byte-order mark"),
    ],
)  # fmt: skip
def test_byte_order_marks_and_utf16_are_read(
    tmp_path: Path, name: str, encode: Any, said: str
) -> None:
    # as saved by Windows tools (PowerShell's > writes UTF-16 LE with a byte-order mark)
    text = (DATA / name).read_text().replace("\n", "\r\n")
    path = tmp_path / name
    path.write_bytes(encode(text))
    output = parse_fio_file(path)
    plain = parse_fio_file(DATA / name)
    assert output.jobs == plain.jobs
    assert output.notes == plain.notes
    assert output.warnings[0].startswith(f"the file is {said}")


def test_text_with_a_byte_order_mark_left_in_is_read() -> None:
    text = (DATA / DOC).read_text()
    assert text.startswith("{")
    output = parse_fio_text("\ufeff" + text)
    assert output.jobs == parse_fio_file(DATA / DOC).jobs


def test_odd_bytes_in_utf8_are_replaced_not_refused(tmp_path: Path) -> None:
    data = (DATA / "job-error-enotdir-jsonplus.json").read_bytes()
    data = data.replace(b"error=Not a directory", b"error=Not a d\xe9rectory\xff", 1)
    path = tmp_path / "latin1-note.json"
    path.write_bytes(data)
    output = parse_fio_file(path)
    assert output.notes[0].endswith("error=Not a d\ufffdrectory\ufffd")
    assert output.warnings == []


@pytest.mark.parametrize("field", [b'"jobname" : "', b'"rw" : "', b'"ioengine" : "'])
def test_bytes_that_are_no_utf8_in_a_json_document_read_as_its_text_reads(
    tmp_path: Path, field: bytes
) -> None:
    """A file that is JSON from its first byte is read the quick way from its bytes; a byte
    that is no UTF-8 anywhere (a job name, an option) reads as the decoded text reads, the
    byte replaced, never an exception."""
    data = (DATA / "randrw-latpct-json.json").read_bytes()  # read the quick way
    assert data.startswith(b"{") and field in data
    odd = data.replace(field, field + b"\xff\xe9", 1)
    path = tmp_path / "odd.json"
    path.write_bytes(odd)
    output = parse_fio_file(path)
    assert output == parse_fio_text(odd.decode("utf-8", errors="replace"), source=str(path))
    assert "\ufffd\ufffd" in repr(output.jobs)


def test_nul_bytes_alone_are_not_taken_for_utf16(tmp_path: Path) -> None:
    # a file cut short by a crash can end in (or be) a run of NUL bytes
    path = tmp_path / "zeros.json"
    path.write_bytes(b"\0" * 8192)
    with pytest.raises(FioOutputError, match="not JSON: it begins with binary data"):
        parse_fio_file(path)
    path.write_bytes((DATA / DOC).read_bytes() + b"\0" * 8192)
    assert parse_fio_file(path).jobs == parse_fio_file(DATA / DOC).jobs


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


# --- whatever a file holds: a FioOutput or FioOutputError ------------------------------------

RECORDED = sorted(p.name for p in DATA.iterdir() if p.is_file() and p.suffix in (".json", ".txt"))
NUMBER = re.compile(r"(?<=: )-?\d+(?:\.\d+)?")
NOT_NUMBERS = [
    "nan", "-nan", "inf", "-inf", "NaN", "-Infinity", "1e999", '"fast"', '""', "null", "true",
    "[1, 2]", "[]", "{}", '{"N" : 1}', "-7", "0.5", str(10**30), str(2**64), "1" + "0" * 5000,
]  # fmt: skip
ODD_VALUES: list[Any] = [
    None, "", "text", "nan", [], {}, [1, "a"], {"a": None}, True, False, 0, -1, 2.5, 10**30,
    2**64, -(2**70), float("nan"), float("inf"), float("-inf"), 1e308,
]  # fmt: skip


def mutate_text(text: str, rng: random.Random) -> str:
    """Cut the text, put non-numbers where numbers were, or drop lines."""
    kind = rng.randrange(3)
    if kind == 0:
        return text[: rng.randrange(len(text) + 1)]
    if kind == 1:
        numbers = list(NUMBER.finditer(text))
        chosen = rng.sample(numbers, min(len(numbers), rng.randint(1, 8)))
        for match in sorted(chosen, key=lambda m: m.start(), reverse=True):
            text = text[: match.start()] + rng.choice(NOT_NUMBERS) + text[match.end() :]
        return text
    lines = text.splitlines(keepends=True)
    for _ in range(rng.randint(1, 3)):
        if lines:
            del lines[rng.randrange(len(lines))]
    return "".join(lines)


def places(doc: Any) -> list[tuple[Any, Any]]:
    """Every (container, key or index) in a decoded document."""
    found: list[tuple[Any, Any]] = []
    stack = [doc]
    while stack:
        item = stack.pop()
        keys = list(item) if isinstance(item, dict) else range(len(item))
        for key in keys:
            found.append((item, key))
            if isinstance(item[key], (dict, list)):
                stack.append(item[key])
    return found


def mutate_doc(doc: dict[str, Any], rng: random.Random) -> None:
    """Delete keys and give values other types, at random depths."""
    for _ in range(rng.randint(1, 4)):
        found = places(doc)
        if not found:
            return
        container, key = rng.choice(found)
        if isinstance(container, dict) and rng.random() < 0.4:
            del container[key]
        else:
            container[key] = json.loads(json.dumps(rng.choice(ODD_VALUES)))


def parses_or_refuses(text: str, source: str) -> None:
    quick = fioquick._quick(text.removeprefix("\ufeff"), source)
    if quick is not None:  # what the quick reading takes, the careful one reads the same
        with mock.patch.object(fioresult, "_quick", lambda text, source: None):
            assert _dumped(quick) == _dumped(parse_fio_text(text, source=source)), source
    try:
        output = parse_fio_text(text, source=source)
    except FioOutputError as err:
        assert str(err).startswith(f"{source}: ")
        # refused by a check that says what is wrong, not by the last-resort handler
        assert "holds something the parser cannot read" not in str(err), str(err)
        return
    for job in [*output.jobs, *output.client_aggregates]:
        for direction in job.directions.values():
            assert direction.latency_source in ("lat", "clat", None)
            if direction.latency is not None:
                direction.latency.percentile_us(99)
    assert all(isinstance(w, str) and w for w in output.warnings)


def last_document(text: str) -> tuple[str, str] | None:
    """The text before the last complete JSON document and that document's text."""
    found = None
    for start in JSON_START.finditer(text):
        try:
            _, end = json.JSONDecoder().raw_decode(text, start.start())
        except json.JSONDecodeError:
            continue
        found = (text[: start.start()], text[start.start() : end])
    return found


@pytest.mark.parametrize("name", RECORDED)
def test_mutated_recordings_give_a_result_or_fio_output_error(name: str) -> None:
    text = (DATA / name).read_text()
    rng = random.Random(f"ssdcompare-{name}")
    last = last_document(text)
    for round_ in range(25):
        parses_or_refuses(mutate_text(text, rng), f"{name}#t{round_}")
        if last is None:
            continue
        # the last document, edited as data and written back with what came before it
        prefix, doc = last[0], json.loads(last[1])
        mutate_doc(doc, rng)
        dumped = json.dumps(doc, indent=2, separators=(",", " : "))
        parses_or_refuses(prefix + dumped + "\n", f"{name}#d{round_}")


def test_edited_plain_outputs_the_quick_reading_takes_read_as_the_careful_one_reads_them() -> None:
    """Values of other types, left-out fields and numbers out of range, put into the outputs
    the quick reading takes: whatever of it the quick reading still takes reads the same as
    the careful reading reads it (parses_or_refuses compares the two)."""
    example = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"
    files = sorted(DATA.glob("*.json")) + sorted(example.glob("runs/*/*/r1/fio.json"))[:12]
    plain = [path for path in files if fioquick._quick(path.read_text(), "x") is not None]
    assert len(plain) >= 15
    taken = 0
    for path in plain:
        rng = random.Random(f"quick-{path.name}-{path.parent.parent.name}")
        for round_ in range(30):
            doc = json.loads(path.read_text())
            mutate_doc(doc, rng)
            text = json.dumps(doc, indent=2, separators=(",", " : "))
            taken += fioquick._quick(text, "x") is not None
            parses_or_refuses(text, f"{path.name}#q{round_}")
    assert taken >= 100, taken  # edits the quick reading does not mind (an unused field, say)


def test_a_failure_nobody_foresaw_still_comes_out_as_fio_output_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # the last line behind the checks: whatever goes wrong inside, callers see FioOutputError
    def broken(*args: Any) -> None:
        raise TypeError("unforeseen")

    monkeypatch.setattr(fioresult, "_combine", broken)
    with pytest.raises(FioOutputError, match="^run-7: fio's JSON holds something the parser"):
        parse_fio_text((DATA / DOC).read_text(), source="run-7")


def test_the_one_pass_histogram_reading_matches_the_careful_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every json+ output recorded here reads the same with the one-pass histogram reader
    as with the careful one; keys it cannot read alone ("01" beside "1") go the careful way."""
    files = sorted(DATA.glob("*jsonplus*.json"))
    assert files
    readable = [f for f in files if "sigkill" not in f.name and "truncated" not in f.name]
    quick = {f.name: parse_fio_file(f) for f in readable}
    monkeypatch.setattr(fioentry, "_plain_bins", lambda raw: None)
    careful = {name: parse_fio_file(DATA / name) for name in quick}
    assert quick == careful
    assert any(d.latency is not None and d.latency.bins for o in quick.values()
               for j in o.jobs for d in j.directions.values())  # fmt: skip
    monkeypatch.undo()
    assert fioentry._plain_bins({"01": 2, "1": 3}) is None  # one bucket written twice
    assert fioentry._plain_bins({"1": -1}) is None and fioentry._plain_bins({"x": 1}) is None
    assert fioentry._plain_bins({"1000": 2, "2000": 0}) == {1000: 2}
    # keys that are no plain number of fio's range, and counts that are no count
    for odd in ({"1.5": 1}, {"-1": 1}, {"1,2": 1}, {"": 1}, {"01": 1}, {"1e3": 1}, {"٣": 1},
                {str(2**64): 1}, {"1": 1.0}, {"1": True}, {"1": "2"}, {"1": None}, {"1": -3},
                {1: 1}):  # fmt: skip
        assert fioentry._plain_bins(odd) is None, odd  # type: ignore[arg-type]
    assert fioentry._plain_bins({"9": 1, "10": 2, str(2**63 - 1): 3}) == {
        9: 1, 10: 2, 2**63 - 1: 3}  # fmt: skip
    assert fioentry._plain_bins({" 1": 1, "2": 1}) == {1: 1, 2: 1}  # as the careful one reads it


def _both_ways(text: str) -> tuple[fiomodels.FioOutput | None, fiomodels.FioOutput]:
    """The quick reading of a text (None: not taken) and the careful reading of it."""
    quick = fioquick._quick(text, "x")
    with mock.patch.object(fioresult, "_quick", lambda text, source: None):
        return quick, parse_fio_text(text, "x")


def test_what_the_quick_reading_leaves_to_the_careful_one() -> None:
    """Texts a decoder would read differently from the careful reading, or whose oddity only
    the careful reading names, are left to it; and what is taken reads the same."""
    plus = (DATA / "fdatasync-write-jsonplus.json").read_text()
    assert fioquick._quick(plus, "x") is not None
    # "-0" is 0 to the decoder: beside a "0" bucket it would replace it; the careful one adds
    both = plus.replace('"bins" : {', '"bins" : {\n "0" : 5,\n "-0" : 7,', 1)
    quick, careful = _both_ways(both)
    assert quick is None and careful.jobs[0].directions["write"].clat.bins[0] == 12
    # an option written twice, however the pair is spaced, or after a key holding a brace
    options = (DATA / "randrw-latpct-json.json").read_text()
    assert fioquick._quick(options, "x") is not None
    for twice in ('"filename":"/dev/a", "filename" : "/dev/b", ',
                  '"filename" :\t"/dev/a", "filename" : "/dev/b", ',
                  '"filename" : "/dev/a", "filename":"/dev/b",\n "y}" : "1", '):  # fmt: skip
        edited = options.replace('"rw" : "randrw",', twice + '"rw" : "randrw",', 1)
        quick, careful = _both_ways(edited)
        assert quick is None, twice
        assert careful.jobs[0].options["filename"] == "/dev/a:/dev/b"
    # options objects written twice (the decoder keeps the last, as the careful one does), or
    # after a decoy string "job options": the object measured is the one decoded
    head = '{"fio version":"fio-3.33","jobs":[{"jobname":"j","groupid":0,"error":0,'
    for edited in (head + '"job options":{"filename":"/dev/a"},'
                   '"job options":{"filename":"/dev/a","filename":"/dev/b"}}]}',
                   head.replace('"jobs"', '"x":{"y":"job options","z":"1"},"jobs"') +
                   '"job options":{"filename":"/dev/a","filename":"/dev/b"}}]}'):  # fmt: skip
        quick, careful = _both_ways(edited)
        assert quick is None and careful.jobs[0].options["filename"] == "/dev/a:/dev/b"
    quick, careful = _both_ways(
        head + '"job options":{"rw":"read"},"job options":{"rw":"write"}}]}'
    )
    assert quick is not None and _dumped(quick) == _dumped(careful)
    # a carriage return alone after the brace: JSON's whitespace, for both readings
    quick, careful = _both_ways(plus.replace("{\n", "{\r", 1))
    assert quick is not None and _dumped(quick) == _dumped(careful)
    # a timestamp of null (named by the careful one), a name with a lone surrogate
    for edited in (plus.replace('"timestamp" : ', '"timestamp" : null, "x" : ', 1),
                   plus.replace('"jobname" : "', '"jobname" : "\ud800', 1)):  # fmt: skip
        quick, careful = _both_ways(edited)
        assert edited != plus and quick is None and careful.jobs
    # a histogram of empty buckets only: no bins either way (and not None against {})
    doc = json.loads(plus)
    for section in (doc["jobs"][0]["write"]["clat_ns"], doc["jobs"][0]["sync"]["lat_ns"]):
        section["bins"] = {key: 0 for key in section["bins"]}
    quick, careful = _both_ways(json.dumps(doc, indent=2, separators=(",", " : ")))
    assert quick is not None and _dumped(quick) == _dumped(careful)
    assert quick.jobs[0].directions["write"].clat.bins == {}


def test_a_file_is_read_whole_whatever_each_read_gives(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A read may give fewer bytes than asked for before the end (at most 2 GiB at once on
    Linux): the file is read until a read gives nothing."""
    path = tmp_path / "fio.json"
    path.write_text((DATA / "fdatasync-write-jsonplus.json").read_text())
    real_read = regularfile.os.read
    monkeypatch.setattr(regularfile.os, "read", lambda fd, n: real_read(fd, min(n, 1000)))
    assert regularfile.read_regular(path, 1 << 20) == path.read_bytes()
    assert parse_fio_file(path).jobs


# a model of each kind the quick reading builds, every field named
_LATENCY_VALUES = {"n": 3, "min_us": 1.0, "max_us": 3.0, "mean_us": 2.0, "stddev_us": 1.0,
                   "percentiles_us": {"50.000000": 2.0}, "bins": {2000: 3},
                   "percentiles_lost": False}  # fmt: skip
_DIRECTION_VALUES = {"direction": "read", "io_bytes": 4096, "bw_bytes": 1.0, "iops": 2.0,
                     "runtime_ms": 1, "total_ios": 3, "short_ios": 0, "drop_ios": 0,
                     "clat": fiomodels.LatencyStats(**_LATENCY_VALUES), "slat": None,
                     "lat": None}  # fmt: skip
_JOB_VALUES = {"name": "j", "groupid": 0, "error": 0, "hostname": None, "port": None,
               "job_runtime_ms": 5, "usr_cpu_pct": 1.0, "sys_cpu_pct": 2.0, "ctx": 7,
               "processes": 1, "group_reporting": None, "job_options": {"rw": "read"},
               "global_options": {}, "directions": {}, "empty_directions": ["write"],
               "steadystate": None,
               "latency_search": fiomodels.LatencySearch(depth=4, target_us=500.0,
                                                         percentile=99.9,
                                                         window_us=1e6)}  # fmt: skip
_OUTPUT_VALUES = {"fio_version": "fio-3.33", "timestamp": 1, "jobs": [], "global_options": {},
                  "disk_util": [], "client_server": False, "client_aggregates": [],
                  "notes": [], "trailing_text": "", "interim_reports": 0, "warnings": [],
                  "source": "x"}  # fmt: skip


def test_models_built_by_the_quick_reading_are_what_model_construct_makes() -> None:
    """The quick reading sets a model's attributes itself (fioquick._built): for every model
    that is what pydantic's model_construct gives with the same values."""
    for model, values in ((fiomodels.LatencyStats, _LATENCY_VALUES),
                          (fiomodels.DirectionResult, _DIRECTION_VALUES),
                          (fiomodels.JobResult, _JOB_VALUES),
                          (fiomodels.FioOutput, _OUTPUT_VALUES)):  # fmt: skip
        assert set(values) == set(model.model_fields), model  # every field named
        built, constructed = fioquick._built(model, dict(values)), model.model_construct(**values)
        assert built == constructed and built == model(**values)
        for attribute in ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__",
                          "__pydantic_private__"):  # fmt: skip
            assert getattr(built, attribute) == getattr(constructed, attribute), attribute
        assert built.model_dump() == constructed.model_dump()


def _dumped(output: fiomodels.FioOutput) -> str:
    """An output as comparable text: NaN equals NaN, 5 differs from 5.0."""
    return json.dumps(output.model_dump(), sort_keys=True, default=str)


def test_the_quick_reading_gives_what_the_careful_one_gives(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Every recorded output (and the example sweep's) that the quick reading takes reads the
    same both ways; outputs it is not sure of are left to the careful reading."""
    example = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"
    files = sorted(DATA.glob("*.json")) + sorted(example.glob("runs/*/*/r1/fio.json"))
    taken = []
    for path in files:
        text = path.read_bytes().decode("utf-8", errors="replace").removeprefix("\ufeff")
        quick = fioquick._quick(text, str(path))
        if quick is None:
            continue
        taken.append(path.name)
        with monkeypatch.context() as patched:
            patched.setattr(fioresult, "_quick", lambda text, source: None)
            careful = parse_fio_text(text, str(path))
        assert _dumped(quick) == _dumped(careful), path.name
    assert len(taken) >= 10  # the example's outputs and the plain recorded ones
    # what it leaves alone: text before the JSON, client/server, nan, a layout before 3.18
    for name in ("randread-libaio-jsonplus-normal.json", "client-server-numjobs2-json.json",
                 "synthetic-fio-3.16-layout.json", "numjobs2-separate-json.json"):  # fmt: skip
        assert name not in taken, name
    text = (DATA / "randrw-latpct-json.json").read_text()
    assert fioquick._quick(text, "x") is not None
    assert fioquick._quick(text.replace('"iops" : ', '"iops" : nan, "x" : ', 1), "x") is None
    twice = text.replace('"rw" : "randrw"', '"rw" : "randrw", "rw" : "read"', 1)
    assert twice != text and fioquick._quick(twice, "x") is None  # an option set twice
    # ... also when a value holds a brace, which could end the object early for the count
    braced = twice.replace('"rw" : "randrw"', '"x" : "a}b", "rw" : "randrw"', 1)
    assert braced != twice and fioquick._quick(braced, "x") is None


def test_directions_fio_printed_with_zeros_are_told_from_unknown_ones() -> None:
    """A direction fio printed with zeros did no I/O (a true 0); one it printed as nan, or
    not at all, is unknown. Both readings say which is which."""
    (job,) = parse_fio_file(DATA / NORMAL).jobs
    assert sorted(job.directions) == ["read"] and job.empty_directions == ["write", "trim"]
    (bad,) = [j for j in parse_fio_file(DATA / "job-error-enotdir-jsonplus.json").jobs if j.error]
    assert bad.empty_directions == []  # a failed job's zeros are not measurements
    doc = json.loads((DATA / "randrw-latpct-json.json").read_text())
    doc["jobs"][0]["write"]["iops"] = math.nan  # fio's nan: the direction did I/O, rate unknown
    del doc["jobs"][0]["trim"]
    text = json.dumps(doc, indent=2)
    quick, careful = _both_ways(text)
    assert quick is None  # nan is the careful reading's
    (job,) = careful.jobs
    assert math.isnan(job.directions["write"].iops) and job.empty_directions == []
    merged = fiomerge.merge_jobs([job, job])
    assert merged.empty_directions == [] and sorted(merged.directions) == ["read", "write"]
