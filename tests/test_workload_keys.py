"""The workload keys that make a job like production's (ssdcompare.suite.realism): each reaches
the jobfile, the job id, the frame and the manifest, and what this machine, its kernel or fio
cannot run is refused before a sweep starts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from blockdevs import loop_device
from suitefiles import suite_file

import ssdcompare
from ssdcompare.cli.api import run_sweep
from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.result.reader import parse_fio_file
from ssdcompare.run.plan import PlanOptions, make_plan, validate
from ssdcompare.suite.files import load_suite
from ssdcompare.suite.workload import Workload

MIB = 1 << 20


def problem(**fields: object) -> str:
    with pytest.raises(ValueError) as caught:
        Workload(**{"bs": "4k", **fields})
    return str(caught.value)


def test_each_key_is_part_of_the_generated_id() -> None:
    assert Workload(rw="randread", bs="4k", random_distribution="zipf:1.2").job_id == (
        "randread-4k-qd1-zipf1.2"
    )
    hot = Workload(rw="randread", bs="4k", random_distribution="90/10")
    assert hot.random_distribution == "zoned:90/10:10/90"  # a hot band in words
    assert hot.job_id == "randread-4k-qd1-zoned90in10.10in90"
    written = Workload(rw="randwrite", bs="4k", buffer_compress_percentage=50,
                       dedupe_percentage=20, refill_buffers=True, verify="crc32c",
                       ioengine="io_uring", hipri=True, sqthread_poll=True, fixedbufs=True,
                       registerfiles=True, cpus_allowed="0-1,3", numa_cpu_nodes=0,
                       numa_mem_policy="bind:0")  # fmt: skip
    assert written.job_id == (
        "randwrite-4k-qd1-cmp50-dedup20-refill-verifycrc32c-io_uring-hipri-sqpoll-fixedbufs-"
        "regfiles-cpus0-1.3-numa0-membind0"
    )
    # left out, a key leaves the id as it always was: results of earlier sweeps still pair
    assert Workload(rw="randread", bs="4k", random_distribution="uniform").job_id == (
        "randread-4k-qd1"
    )


@pytest.mark.parametrize(
    ("fields", "said"),
    [
        ({"rw": "read", "random_distribution": "zipf:1.2"}, "applies to random patterns"),
        ({"rw": "randread", "random_distribution": "zoned:90/10:5/90"},
         "shares of I/O add up to 95 %"),
        ({"rw": "randread", "random_distribution": "zipf:1"}, "other than 1"),
        ({"rw": "randread", "random_distribution": "pareto:2"}, "between 0 and 1"),
        ({"rw": "randread", "random_distribution": "lognormal:3"}, "give uniform, zipf:1.2"),
        ({"rw": "randread", "buffer_compress_percentage": 50}, "writes none"),
        ({"rw": "randwrite", "dedupe_percentage": 101}, "less than or equal to 100"),
        ({"rw": "randwrite", "verify": "crc33"}, "give a checksum fio has"),
        ({"rw": "trim", "verify": "crc32c"}, "only trims"),
        ({"rw": "randread", "ioengine": "libaio", "hipri": True}, "not of ioengine libaio"),
        ({"rw": "randread", "ioengine": "psync", "sqthread_poll": True}, "io_uring"),
        ({"rw": "randread", "hipri": True, "direct": False}, "needs direct"),
        ({"rw": "randread", "cpus_allowed": "3-1"}, "runs backwards"),
        ({"rw": "randread", "cpus_allowed": "all"}, "numbers and ranges"),
        ({"rw": "randread", "numa_mem_policy": "bind"}, "give default, local"),
        ({"rw": "randread", "random_distribution": "zipf:1.2",
          "extra": {"random_distribution": "zipf:0.8"}}, "given twice"),
        ({"rw": "randread", "random_distribution": "zipf:inf"}, "a theta above 0"),
        ({"rw": "randread", "random_distribution": "normal:100"}, "under 100"),
        ({"rw": "randread", "random_distribution": "zoned:90/10:10/9\t0"}, "plain ASCII"),
        ({"rw": "randread", "cpus_allowed": "\u0660"}, "numbers and ranges"),  # Arabic 0
        ({"rw": "randread", "cpus_allowed": "0-4294967295"}, "above the highest CPU"),
        ({"rw": "randread", "numa_mem_policy": "bind:1-0"}, "runs backwards"),
        ({"rw": "randwrite", "buffer_compress_percentage": True}, "a share of 0 to 100"),
    ],
)  # fmt: skip
def test_what_does_not_fit_is_refused_in_words(fields: dict, said: str) -> None:
    assert said in problem(**fields)


def test_a_key_is_a_matrix_axis(tmp_path: Path) -> None:
    path = tmp_path / "axes.yaml"
    path.write_text(
        "name: axes\ndescription: keys as axes\nmatrices:\n"
        "  - base: {rw: randread, bs: 4k, runtime: 1}\n"
        "    axes:\n"
        "      random_distribution: [uniform, 'zipf:1.2', '90/10']\n"
        "      ioengine: [libaio, io_uring]\n"
    )
    ids = [w.job_id for w in load_suite(path).workloads]
    assert len(set(ids)) == 6
    assert "randread-4k-qd1-zipf1.2-libaio" in ids
    assert "randread-4k-qd1-zoned90in10.10in90-io_uring" in ids


@pytest.mark.fio
def test_every_key_reaches_the_jobfile_fio_the_frame_and_the_manifest(tmp_path: Path) -> None:
    suite = suite_file(
        tmp_path, "keys",
        "{rw: randread, bs: 4k, iodepth: 2}",
        "{rw: randread, bs: 4k, iodepth: 2, random_distribution: 'zipf:1.2'}",
        "{rw: randwrite, bs: 4k, iodepth: 2, ioengine: libaio, buffer_compress_percentage: 50,"
        " dedupe_percentage: 20, refill_buffers: true, verify: crc32c, cpus_allowed: '0',"
        " numa_cpu_nodes: 0, numa_mem_policy: local}",
        "{rw: randwrite, bs: 4k, iodepth: 2, ioengine: io_uring, fixedbufs: true,"
        " registerfiles: true, sqthread_poll: true}",
        defaults="{runtime: 0.4}",
    )  # fmt: skip
    out = tmp_path / "out"
    run_sweep(str(tmp_path / "target.bin"), str(suite), out=out, size=8 * MIB, report=False)
    frame = ssdcompare.load(out).set_index("job")
    uniform, zipf, data, uring = (w.job_id for w in load_suite(suite).workloads)
    assert zipf == "randread-4k-qd2-zipf1.2"
    # the zipf job and the uniform one differ in what was recorded of their distribution
    assert frame.loc[uniform, "random_distribution"] == "uniform"
    assert frame.loc[zipf, "random_distribution"] == "zipf:1.2"
    options = {job: fio_options(out, job) for job in (uniform, zipf, data, uring)}
    assert options[zipf]["random_distribution"] == "zipf:1.2"  # fio ran with it
    assert "random_distribution" not in options[uniform]  # fio's own default: uniform
    assert "; offsets: uniform over the span" in jobfile(out, uniform)
    for key, value in [("buffer_compress_percentage", "50"), ("dedupe_percentage", "20"),
                       ("refill_buffers", "1"), ("verify", "crc32c"), ("verify_fatal", "1"),
                       ("verify_backlog", "1024"), ("ioengine", "libaio"),
                       ("cpus_allowed", "0"), ("numa_cpu_nodes", "0"),
                       ("numa_mem_policy", "local")]:  # fmt: skip
        assert options[data].get(key) == value, key
    for key in ("fixedbufs", "registerfiles", "sqthread_poll"):
        assert options[uring][key] == "1"
    row = frame.loc[data]
    assert (row["compress_pct"], row["dedupe_pct"], row["verify"]) == (50, 20, "crc32c")
    assert row["refill_buffers"] and row["cpus_allowed"] == "0"
    assert (row["numa_cpu_nodes"], row["numa_mem_policy"]) == ("0", "local")
    assert row["workload_options"].startswith("compress 50 % dedupe 20 % refill_buffers")
    assert bool(frame.loc[uring, "fixedbufs"]) and bool(frame.loc[uring, "sqthread_poll"])
    assert not bool(frame.loc[uniform, "hipri"])
    # a job that gives no data keys still says what data fio wrote: its defaults
    assert frame.loc[uring, "compress_pct"] == 0 and frame.loc[uring, "dedupe_pct"] == 0
    assert "incompressible" in frame.loc[uring, "data"]
    assert "; data written: random bytes, incompressible" in jobfile(out, uring)
    assert pd_na(frame.loc[uniform, "compress_pct"])  # a read job writes no data
    recorded = {w["id"]: w for w in json.loads((out / "manifest.json").read_text())["suite"][
        "workloads"]}  # fmt: skip
    assert recorded[zipf]["random_distribution"] == "zipf:1.2"
    assert recorded[data]["verify"] == "crc32c" and recorded[uring]["fixedbufs"] is True


def fio_options(out: Path, job: str) -> dict[str, str | None]:
    """The options fio reports it ran the job with (its JSON's "job options")."""
    (entry,) = parse_fio_file(out / "runs" / "target.bin" / job / "r1" / "fio.json").jobs
    return entry.options


def jobfile(out: Path, job: str) -> str:
    return (out / "runs" / "target.bin" / job / "r1" / "jobfile.fio").read_text()


def pd_na(value: object) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


@pytest.mark.root
@pytest.mark.fio
def test_what_this_machine_cannot_run_is_refused_before_the_sweep(tmp_path: Path) -> None:
    beyond = max(os.sched_getaffinity(0)) + 1
    nodes = Path("/sys/devices/system/node/online").read_text().strip()
    node = max(int(part.split("-")[-1]) for part in nodes.split(",")) + 1
    suite = suite_file(
        tmp_path, "cannot",
        "{rw: randread, bs: 4k, ioengine: io_uring, hipri: true}",
        "{rw: randread, bs: 4k, ioengine: pvsync2, hipri: true}",
        f"{{rw: randread, bs: 4k, cpus_allowed: '0,{beyond}'}}",
        f"{{rw: randread, bs: 4k, numa_cpu_nodes: {node}}}",
        f"{{rw: randread, bs: 4k, numa_mem_policy: 'interleave:0,{node}'}}",
        "{rw: randread, bs: 4k}",
        defaults="{runtime: 1}",
    )  # fmt: skip
    # a loop device never has poll queues: polled completions cannot be had from it
    with loop_device(tmp_path / "loop.img", 16 * MIB) as loop:
        plan = make_plan(str(suite), loop, PlanOptions())
        said = {r.job.job_id: r.reason for r in validate(plan) if not r.by_fio}
        name = Path(loop).name
        for job in ("randread-4k-qd1-io_uring-hipri", "randread-4k-qd1-pvsync2-hipri"):
            assert f"{name} (serving {name}) has no poll queues" in said[job]
        assert f"fio may not run on CPU {beyond} here" in said[f"randread-4k-qd1-cpus0.{beyond}"]
        assert f"NUMA node {node} is not on this machine" in said[f"randread-4k-qd1-numa{node}"]
        assert f"numa_mem_policy interleave:0,{node}" in said[
            f"randread-4k-qd1-meminterleave0.{node}"]  # fmt: skip
        assert "randread-4k-qd1" not in said and len(said) == 5
        out = tmp_path / "out"
        with pytest.raises(SsdcompareError, match="5 jobfile.s. cannot run") as caught:
            run_sweep(loop, str(suite), out=out, report=False)
        assert "this machine cannot run" in str(caught.value)
        assert not (out / "runs").exists()  # refused before anything ran


def test_an_engine_option_on_the_sweeps_fallback_engine_is_refused_with_the_way_out(
    tmp_path: Path,
) -> None:
    from ssdcompare.fio.jobfile import render
    from ssdcompare.run.support import job_problems
    from ssdcompare.target.devices import resolve_targets

    (target,) = resolve_targets(str(tmp_path / "t.img"), MIB)
    # where io_uring does not work, a sweep runs the workloads that name no engine on libaio
    job = render(Workload(rw="randread", bs="4k", fixedbufs=True), target, "s", "libaio")
    (said,) = job_problems(job, None)
    assert said.startswith("fixedbufs is an option of the io_uring or io_uring_cmd engine, and "
                           "this job runs on libaio")  # fmt: skip
    assert "give the workload ioengine: io_uring" in said


def test_numa_keys_need_a_fio_built_with_libnuma(tmp_path: Path) -> None:
    from ssdcompare.fio.binary import FioInfo
    from ssdcompare.run.support import _placement_problems, numa_built

    # what `fio --cmdhelp` answers for a NUMA option in a build without libnuma (a build
    # this machine does not have: a script stands in for it)
    fake = tmp_path / "fio"
    fake.write_text("#!/bin/sh\necho 'numa_cpu_nodes: Build fio with libnuma-dev(el) to "
                    "enable this option'\n")  # fmt: skip
    fake.chmod(0o755)
    without = FioInfo(path=str(fake), version="fio-3.33")
    assert not numa_built(without)
    (said,) = _placement_problems(None, "0", None, without)
    assert said.startswith("numa_cpu_nodes: this fio was built without NUMA support")
    assert _placement_problems(None, "0", "local", None) == []  # no fio: the nodes alone


def test_data_shaped_through_extra_is_named_not_called_random(tmp_path: Path) -> None:
    from ssdcompare.fio.jobfile import render
    from ssdcompare.suite.realism import realism_columns
    from ssdcompare.target.devices import resolve_targets

    zeros = Workload(rw="write", bs="64k", extra={"zero_buffers": None})
    (target,) = resolve_targets(str(tmp_path / "t.img"), MIB)
    text = render(zeros, target, "s", "libaio").text
    assert "; data written: as extra shapes it (zero_buffers)" in text
    columns = realism_columns(zeros)
    assert columns["data"].startswith("as extra shapes it (zero_buffers)")
    assert columns["compress_pct"] is None and columns["dedupe_pct"] is None  # not known
    assert Workload(rw="randwrite", bs="4k", buffer_compress_percentage="50%").job_id.endswith(
        "-cmp50"
    )


def test_bands_beyond_the_span_and_lists_fio_cannot_take_are_said_before_a_run(
    tmp_path: Path,
) -> None:
    from ssdcompare.fio.jobfile import render
    from ssdcompare.run.support import job_problems
    from ssdcompare.target.devices import resolve_targets

    (target,) = resolve_targets(str(tmp_path / "t.img"), 16 * MIB)
    wide = Workload(rw="randread", bs="4k", random_distribution="zoned_abs:90/1g:10/9g")
    (said,) = job_problems(render(wide, target, "s", "libaio"), None)
    assert "its bands cover 10 GiB, and the span this job runs over on t.img is 16 MiB" in said
    fits = Workload(rw="randread", bs="4k", random_distribution="zoned_abs:90/1m:10/15m")
    assert job_problems(render(fits, target, "s", "libaio"), None) == []
    for engine, said_of in (("io_uring_cmd", "generic device"), ("sg", "SCSI")):
        (said,) = job_problems(render(Workload(rw="randread", bs="4k", ioengine=engine), target,
                                      "s", "libaio"), None)  # fmt: skip
        assert said_of in said
    # a CPU list given through extra (as older suites did) is checked as the key's
    old = Workload(rw="randread", bs="4k", extra={"cpus_allowed": "all"})
    (said,) = job_problems(render(old, target, "s", "libaio"), None)
    assert said.startswith("cpus_allowed 'all': ") and "numbers and ranges" in said


def test_the_submission_threads_cpu_given_through_extra_is_checked_before_a_run(
    tmp_path: Path,
) -> None:
    from ssdcompare.fio.jobfile import render
    from ssdcompare.run.support import job_problems
    from ssdcompare.target.devices import resolve_targets

    (target,) = resolve_targets(str(tmp_path / "t.img"), 16 * MIB)
    beyond = max(os.sched_getaffinity(0)) + 1

    def said(**extra: object) -> list[str]:
        workload = Workload(rw="randread", bs="4k", ioengine="io_uring", extra=extra)
        return job_problems(render(workload, target, "s", "libaio"), None)

    # with sqthread_poll fio pins its submission thread there and fails the job without it
    (problem,) = said(sqthread_poll=1, sqthread_poll_cpu=beyond)
    assert problem.startswith(f"sqthread_poll_cpu {beyond}: fio may not run on CPU {beyond}")
    (problem,) = said(sqthread_poll=1, sqthread_poll_cpu="first")
    assert "give the number of one CPU" in problem
    assert said(sqthread_poll=1, sqthread_poll_cpu=0) == []
    assert said(sqthread_poll_cpu=beyond) == []  # without polling fio ignores it


def test_verify_takes_fios_checksum_names_in_any_case() -> None:
    assert Workload(rw="randwrite", bs="4k", verify=" CRC32C ").verify == "crc32c"
    assert Workload(rw="randwrite", bs="4k", verify="None").verify is None
    with pytest.raises(ValueError, match="give a checksum fio has"):
        Workload(rw="randwrite", bs="4k", verify="crc33")
