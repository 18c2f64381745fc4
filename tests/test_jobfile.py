"""Rendered jobfiles: what fio reads, how much of each target they span, and fio's verdict."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ssdcompare.fio.binary import FioInfo, parse_only
from ssdcompare.fio.jobfile import RenderedJob, render, span, span_words
from ssdcompare.run.plan import PlanOptions, make_plan, validate
from ssdcompare.suite.files import bundled_suite_paths
from ssdcompare.suite.workload import Suite, Workload
from ssdcompare.target.devices import Target

MIB = 1024**2
GIB = 1024**3

FILE_TARGET = Target(
    spec="./scratch.img", name="scratch.img", path="/srv/scratch/scratch.img", kind="file",
    size_bytes=64 * MIB, exists=False,
)  # fmt: skip
# fio --parse-only never opens the device, so a made-up block device is enough here
BLOCK_TARGET = Target(
    spec="nvme9n1", name="nvme9n1", path="/dev/ssdcompare-test-nvme9n1", kind="block",
    size_bytes=2 * 1024**4,
)  # fmt: skip


def workload(**fields: Any) -> Workload:
    return Workload.model_validate({"rw": "randread", "bs": "4k", **fields})


def options(job: RenderedJob) -> dict[str, dict[str, str | None]]:
    """The jobfile as fio reads it: section -> option -> value (None for bare flags)."""
    sections: dict[str, dict[str, str | None]] = {}
    current: dict[str, str | None] = {}
    for line in job.text.splitlines():
        line = line.strip()
        if not line or line.startswith((";", "#")):
            continue
        if line.startswith("["):
            current = sections.setdefault(line.strip("[]"), {})
            continue
        key, sep, value = line.partition("=")
        current[key] = value if sep else None
    return sections


def test_jobfile_holds_the_workload_as_fio_options() -> None:
    job = render(
        workload(rw="randrw", rwmixread=70, bs="8k", iodepth=32, numjobs=4, fsync=2,
                 runtime=30, ramp_time=5, size="1g"),
        BLOCK_TARGET, "demo", "io_uring",
    )  # fmt: skip
    sections = options(job)
    assert list(sections) == ["global", "randrw70-8k-qd32-nj4-fsync2"]
    assert sections["global"] == {
        "filename": "/dev/ssdcompare-test-nvme9n1", "size": "1g", "ioengine": "io_uring",
        "direct": "1", "time_based": "1", "runtime": "30", "ramp_time": "5",
        "group_reporting": "1", "lat_percentiles": "1", "norandommap": "1", "randrepeat": "0",
        # per-second logs into the run's folder (fio runs there)
        "write_iops_log": "timeseries", "write_bw_log": "timeseries",
        "write_lat_log": "timeseries", "log_avg_msec": "1000",
    }  # fmt: skip
    assert sections["randrw70-8k-qd32-nj4-fsync2"] == {
        "rw": "randrw", "bs": "8k", "iodepth": "32", "numjobs": "4", "rwmixread": "70",
        "fsync": "2",
    }  # fmt: skip
    assert job.job_id == "randrw70-8k-qd32-nj4-fsync2"
    assert job.file_name == "randrw70-8k-qd32-nj4-fsync2.fio"
    assert job.ioengine == "io_uring"


def test_header_says_what_the_job_does_for_people() -> None:
    job = render(workload(description="why this job"), FILE_TARGET, "demo", "libaio")
    header = [line for line in job.text.splitlines() if line.startswith(";")]
    assert header[0].startswith("; ssdcompare ")
    assert "suite demo | job randread-4k-qd1 | target scratch.img" in header[0]
    assert "; why this job" in header
    assert any("random read, 4 KiB blocks, queue depth 1 x 1 job(s)" in line for line in header)


def test_sequential_buffered_job_without_ramp() -> None:
    job = render(workload(rw="read", bs="1m", direct=False), BLOCK_TARGET, "demo", "libaio")
    glob = options(job)["global"]
    assert glob["direct"] == "0"
    assert glob["ioengine"] == "libaio"
    assert "ramp_time" not in glob
    assert "norandommap" not in glob  # only random jobs skip the block map
    assert "size" not in glob  # the whole device


def test_workload_engine_and_thinktime_and_extra_options() -> None:
    job = render(
        workload(ioengine="psync", thinktime=20, thinktime_blocks=4,
                 extra={"random_distribution": "zipf:1.2", "refill_buffers": True,
                        "norandommap": None}),
        BLOCK_TARGET, "demo", "io_uring",
    )  # fmt: skip
    assert job.ioengine == "psync"
    # options beyond the typed fields are part of the generated id, so it never hides them
    job_id = (
        "randread-4k-qd1-think20usx4-psync+norandommap+random_distributionzipf.1.2+refill_buffers"
    )
    assert job.job_id == job_id
    section = options(job)[job_id]
    assert section["thinktime"] == "20us"
    assert section["thinktime_blocks"] == "4"
    assert section["random_distribution"] == "zipf:1.2"
    assert section["refill_buffers"] == "1"  # booleans as fio spells them
    assert "norandommap" in section and section["norandommap"] is None


@pytest.mark.parametrize(
    ("size", "bs", "expected"),
    [
        (None, "4k", "64m"),  # the whole file
        ("10g", "4k", "64m"),  # never more than the file
        ("512k", "4k", "512k"),
        ("50%", "4k", "32m"),  # shares become bytes: the file may not exist yet
        ("20%", "8k", "13104k"),  # 12.8 MiB rounded down to whole 8k blocks
        (100000, "4k", "96k"),  # whole blocks
        ("1k", "4k", "4k"),  # at least one block
    ],
)
def test_span_of_a_file_target(size: str | int | None, bs: str, expected: str) -> None:
    assert span(workload(size=size, bs=bs), FILE_TARGET) == expected


@pytest.mark.parametrize(
    ("size", "device_bytes", "expected"),
    [
        ("20%", 2 * 1024**4, "20%"),  # fio takes shares of a device natively
        ("10g", 2 * 1024**4, "10g"),
        (None, 2 * 1024**4, None),  # the whole device
        ("10g", 1 * GIB, None),  # larger than the device: the whole device instead
        ("10g", None, "10g"),  # capacity unknown: as asked
    ],
)
def test_span_of_a_block_target(size: str | None, device_bytes: int | None, expected: str) -> None:
    target = BLOCK_TARGET.model_copy(update={"size_bytes": device_bytes})
    assert span(workload(size=size), target) == expected


def test_span_shows_in_the_jobfile_and_its_summary() -> None:
    small = BLOCK_TARGET.model_copy(update={"size_bytes": GIB})
    job = render(workload(size="10g"), small, "demo", "io_uring")
    assert "size" not in options(job)["global"]
    assert "over the whole device" in job.text
    assert "over 20% of the device" in render(workload(size="20%"), small, "d", "io_uring").text


def test_same_workload_on_different_targets_has_the_same_hash() -> None:
    job = workload(size="1g", runtime=10)
    other_block = BLOCK_TARGET.model_copy(
        update={"name": "sdb", "path": "/dev/ssdcompare-test-sdb", "spec": "sdb"}
    )
    a = render(job, BLOCK_TARGET, "suite-a", "io_uring")
    b = render(job, other_block, "suite-b", "io_uring")
    assert a.text != b.text
    assert a.workload_hash == b.workload_hash
    other_file = FILE_TARGET.model_copy(update={"path": "/mnt/other/scratch.img"})
    assert (
        render(job, FILE_TARGET, "s", "io_uring").workload_hash
        == render(job, other_file, "s", "io_uring").workload_hash
    )


@pytest.mark.parametrize(
    "changed",
    [{"iodepth": 2}, {"bs": "8k"}, {"runtime": 11}, {"size": "2g"}, {"numjobs": 2},
     {"extra": {"random_distribution": "zipf:1.2"}}],
)  # fmt: skip
def test_different_workloads_have_different_hashes(changed: dict[str, Any]) -> None:
    base = {"size": "1g", "runtime": 10}
    first = render(workload(**base), BLOCK_TARGET, "s", "io_uring")
    second = render(workload(**{**base, **changed}), BLOCK_TARGET, "s", "io_uring")
    assert first.workload_hash != second.workload_hash


def test_engine_is_part_of_the_hash() -> None:
    job = workload()
    assert (
        render(job, BLOCK_TARGET, "s", "io_uring").workload_hash
        != render(job, BLOCK_TARGET, "s", "libaio").workload_hash
    )


@pytest.mark.fio
@pytest.mark.parametrize("suite", sorted(bundled_suite_paths()))
def test_fio_accepts_every_bundled_suite_on_files_and_block_devices(suite: str) -> None:
    # a PTS test is shortened only as a whole (it refuses --runtime)
    options = PlanOptions(scale=0.01) if suite.startswith("pts-") else PlanOptions(runtime_s=5)
    plan = make_plan(suite, [FILE_TARGET, BLOCK_TARGET], options)
    assert plan.fio is not None
    assert len(plan.jobs) == 2 * len(plan.suite.workloads)
    assert {job.target.kind for job in plan.jobs} == {"file", "block"}
    assert validate(plan) == []


@pytest.mark.fio
def test_fio_rejects_a_bad_extra_option_and_names_the_job() -> None:
    suite = Suite(
        name="bad", description="one good job, one with a typo",
        workloads=[workload(), workload(rw="read", extra={"bogus_option": 1})],
    )  # fmt: skip
    plan = make_plan(suite, [FILE_TARGET])
    rejections = validate(plan)
    assert [r.job.job_id for r in rejections] == ["read-4k-qd1+bogus_option1"]
    assert "bogus_option" in rejections[0].reason


@pytest.mark.fio
def test_engine_missing_from_this_fio_is_rejected(fio: FioInfo) -> None:
    suite = Suite(name="s", description="d", workloads=[workload(ioengine="solarisaio")])
    rejections = validate(make_plan(suite, [BLOCK_TARGET]))
    assert [r.reason for r in rejections] == ["ioengine solarisaio is not in this fio build"]


@pytest.mark.fio
def test_parse_only_one_or_many_files(fio: FioInfo, tmp_path: Path) -> None:
    good = tmp_path / "good.fio"
    good.write_text(render(workload(), FILE_TARGET, "s", "io_uring").text)
    bad = tmp_path / "bad.fio"
    bad.write_text(render(workload(extra={"bogus_option": 1}), FILE_TARGET, "s", "io_uring").text)
    assert parse_only(fio, good) is None
    assert parse_only(fio, [good, good]) is None
    complaint = parse_only(fio, bad)
    assert complaint is not None and "bogus_option" in complaint
    many = parse_only(fio, [good, bad])
    assert many is not None and "bogus_option" in many


def test_a_byte_span_cut_to_a_smaller_target_is_another_workload() -> None:
    big = FILE_TARGET.model_copy(update={"size_bytes": 1024 * MIB, "path": "/srv/big.img"})
    asked = workload(size="256m")
    small_job, big_job = (
        render(asked, FILE_TARGET, "s", "io_uring"),
        render(asked, big, "s", "io_uring"),
    )
    assert small_job.workload_hash != big_job.workload_hash  # 64 MiB ran, not 256 MiB
    assert span_words(asked, "64m") == "64 MiB (cut from 256 MiB: the target is smaller)"
    assert span_words(asked, "256m") == "256 MiB"
    # a share is the same request on any target; so is the whole target
    for same in (workload(size="20%"), workload()):
        assert (
            render(same, FILE_TARGET, "s", "io_uring").workload_hash
            == render(same, big, "s", "io_uring").workload_hash
        )
    assert span_words(workload(size="20%"), "12m") == "20 % (12 MiB)"
    # a block device smaller than the span runs over all of it, and says so
    small_disk = BLOCK_TARGET.model_copy(update={"size_bytes": 128 * MIB})
    cut = render(asked, small_disk, "s", "io_uring")
    assert cut.workload_hash != render(asked, BLOCK_TARGET, "s", "io_uring").workload_hash
    assert span_words(asked, None) == "whole target (cut from 256 MiB: the target is smaller)"


def test_a_size_capped_job_ends_after_its_bytes_or_its_runtime() -> None:
    capped = workload(rw="read", bs="128k", runtime=60, io_size="32g")
    job = render(capped, BLOCK_TARGET, "s", "io_uring")
    section = options(job)["global"]
    assert section["time_based"] == "0" and section["io_size"] == "32g"
    assert section["runtime"] == "60"
    assert job.job_id == "read-128k-qd1-io32g"
    assert "time_based=1" in render(workload(rw="read", bs="128k"), BLOCK_TARGET, "s", "x").text
