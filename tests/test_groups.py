"""Device groups: `--devices a+b` measures two devices as one unit, each running the same job
at the same time in one fio run; the group's figures add the members up, and each member
keeps its own rows. Real loop devices, real fio, real fio servers for groups across hosts."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from blockdevs import loop_device
from suitefiles import suite_file

import ssdcompare
from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.binary import FioInfo
from ssdcompare.fio.check import JobfileError, check_sections, read_jobfile
from ssdcompare.fio.jobfile import member_section, render, split_by_host
from ssdcompare.run import sweep
from ssdcompare.run.plan import make_plan
from ssdcompare.run.runner import RunOutcome, _check_reported
from ssdcompare.suite.files import load_suite
from ssdcompare.target.devices import Target, resolve_targets
from ssdcompare.target.hosts import parse_hosts

DATA = Path(__file__).parent / "data"


def _files(tmp_path: Path, *names: str) -> str:
    for name in names:
        (tmp_path / name).write_bytes(b"\0" * (1 << 20))
    return "+".join(str(tmp_path / name) for name in names)


def test_a_group_is_one_target_of_several_devices(tmp_path: Path) -> None:
    (group, alone) = resolve_targets(f"{_files(tmp_path, 'a.img', 'b.img')},"
                                     f"{_files(tmp_path, 'c.img')}")  # fmt: skip
    assert group.name == "a.img+b.img" and group.kind == "group"
    assert [m.name for m in group.members] == ["a.img", "b.img"]
    assert group.parts == list(group.members) and alone.parts == [alone]
    with pytest.raises(SsdcompareError, match="joins two or more devices"):
        resolve_targets(f"{tmp_path / 'a.img'}+")
    with pytest.raises(SsdcompareError, match="same target"):
        resolve_targets(f"{_files(tmp_path, 'a.img', 'b.img')},{tmp_path / 'a.img'}")
    # a group across hosts runs through their servers: all members alike
    with pytest.raises(SsdcompareError, match="name this machine as a host too"):
        resolve_targets(f"x:nvme0n1+{tmp_path / 'a.img'}", hosts=parse_hosts("x=192.0.2.7"))


def test_a_groups_jobfile_has_a_section_per_member_and_is_checked_whole(tmp_path: Path) -> None:
    (group,) = resolve_targets(_files(tmp_path, "a.img", "b.img"), size_bytes=1 << 20)
    workload = load_suite("quick").workloads[0]
    job = render(workload, group, "quick", "psync")
    facts = read_jobfile(job.text)
    assert [s.name for s in facts.jobs] == [member_section(workload.job_id, n) for n in (1, 2)]
    assert [s.files for s in facts.jobs] == [(m.path,) for m in group.members]
    # fio would add the members up into one entry: each member's own figures are wanted
    assert "group_reporting" not in job.text
    # two groups of two run the same workload; a device alone does not
    (other,) = resolve_targets(_files(tmp_path, "c.img", "d.img"), size_bytes=1 << 20)
    (alone,) = resolve_targets(_files(tmp_path, "e.img"), size_bytes=1 << 20)
    assert render(workload, other, "quick", "psync").workload_hash == job.workload_hash
    assert render(workload, alone, "quick", "psync").workload_hash != job.workload_hash
    # a member section opening anything but its own member is refused
    sections = [(member_section(workload.job_id, n), m.path) for n, m in
                enumerate(group.members, start=1)]  # fmt: skip
    swapped = job.text.replace(f"filename={group.members[1].path}",
                               f"filename={group.members[0].path}")  # fmt: skip
    with pytest.raises(JobfileError, match="would open"):
        check_sections(read_jobfile(swapped), sections)


def test_a_job_fio_dropped_fails_the_group_run_instead_of_shortening_its_sum(
    tmp_path: Path,
) -> None:
    output = json.loads((DATA / "numjobs2-separate-json.json").read_text())
    (tmp_path / "fio.json").write_text(json.dumps(output))
    outcome = RunOutcome("ok", 0, 1.0)
    _check_reported(outcome, tmp_path, [output["jobs"][0]["jobname"], "randread-4k-qd1.m2"])
    assert outcome.state == "failed"
    assert outcome.error and "no result for randread-4k-qd1.m2" in outcome.error


@pytest.mark.root
@pytest.mark.fio
def test_a_group_of_two_loop_devices_reports_the_sum_and_each_member(
    fio: FioInfo, tmp_path: Path
) -> None:
    suite = suite_file(tmp_path, "g", "{rw: randread, bs: 4k, iodepth: 4}",
                       defaults="{runtime: 2, size: 8m}")  # fmt: skip
    with (
        loop_device(tmp_path / "a.img", 32 << 20) as a,
        loop_device(tmp_path / "b.img", 32 << 20) as b,
        loop_device(tmp_path / "c.img", 32 << 20) as c,
    ):
        run = ssdcompare.run_sweep(f"{a}+{b},{c}", suite=str(suite), out=tmp_path / "r",
                                   read_only=True)  # fmt: skip
    assert run.complete
    names = [Path(d).name for d in (a, b, c)]
    group = f"{names[0]}+{names[1]}"
    frame = run.frame().set_index("label")
    assert sorted(frame.index) == sorted(
        [group, f"{names[0]} in {group}", f"{names[1]} in {group}", names[2]]
    )
    total, first, second = (frame.loc[k] for k in (group, f"{names[0]} in {group}",
                                                    f"{names[1]} in {group}"))  # fmt: skip
    assert total["iops"] == pytest.approx(first["iops"] + second["iops"], rel=1e-6)
    assert total["bw_bytes"] == pytest.approx(first["bw_bytes"] + second["bw_bytes"], rel=1e-6)
    assert total["total_ios"] == first["total_ios"] + second["total_ios"]
    # latency over all the group's I/O: from the merged distribution, between the members'
    low, high = sorted([first["lat_p99_us"], second["lat_p99_us"]])
    assert low <= total["lat_p99_us"] <= high
    assert [first["member"], second["member"]] == [1, 2] and pd_na(total["member"])
    assert set(frame["group"].dropna()) == {group} and pd_na(frame.loc[names[2], "group"])
    # one fio run for the group: both members' processes, one output
    folder = run.path / "runs" / group / "randread-4k-qd4" / "r1"
    assert len(json.loads((folder / "fio.json").read_text())["jobs"]) == 2
    # the answer compares units: the group against the device alone, members left out
    (line,) = ssdcompare.headline(ssdcompare.job_summary(run.frame()))
    assert line.total == 1 and " in " not in line.sentence
    html = run.report.read_text() if run.report else ""
    assert group in html and f"{names[0]} in {group}" in html


def pd_na(value: object) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


@pytest.mark.root
@pytest.mark.fio
def test_the_guard_looks_at_every_member_of_a_group(tmp_path: Path) -> None:
    writes = suite_file(tmp_path, "w", "{rw: randwrite, bs: 4k, iodepth: 1}",
                        defaults="{runtime: 1, size: 4m}")  # fmt: skip
    with (
        loop_device(tmp_path / "a.img", 32 << 20) as a,
        loop_device(tmp_path / "b.img", 32 << 20) as b,
    ):
        subprocess.run(["mkfs.ext4", "-q", "-F", b], check=True)
        plan = make_plan(str(writes), f"{a}+{b}", require_fio=True)
        with pytest.raises(SsdcompareError) as refused:
            sweep.start(plan, tmp_path / "r")
        problems = [line for line in str(refused.value).splitlines() if line.startswith("  - ")]
        # the member with the filesystem is the one named, and the only one
        assert len(problems) == 1 and Path(b).name in problems[0] and "ext4" in problems[0]
        # named consent for the one member is enough, and only that member is overwritten
        results, allowed = sweep.start(plan, tmp_path / "r2", destroy_data=[Path(b).name])
        assert [f.target for f in allowed] == [Path(b).name]
        outcome = sweep.run(plan, results)
    assert outcome.count("ok") == 1


@pytest.mark.root
@pytest.mark.fio
def test_a_group_across_two_hosts_runs_as_one_client_run(
    tmp_path: Path, two_hosts: tuple[str, list[str]]
) -> None:
    hosts, devices = two_hosts
    suite = suite_file(tmp_path, "g", "{rw: randread, bs: 4k, iodepth: 2}",
                       defaults="{runtime: 2, size: 8m}")  # fmt: skip
    group = "+".join(devices)
    run = ssdcompare.run_sweep(group, suite=str(suite), hosts=hosts, out=tmp_path / "r",
                               read_only=True)  # fmt: skip
    assert run.complete
    folder = run.path / "runs" / group / "randread-4k-qd2" / "r1"
    # each server got its own member's section, and ran it read-only
    for device in devices:
        name, member = device.split(":")
        text = (folder / f"jobfile.{name}.fio").read_text()
        assert f"/dev/{member}" in text and text.count("[") == 1
    command = json.loads((folder / "status.json").read_text())["command"]
    assert command.count("--readonly") == 2
    assert sum(arg.startswith("--client=") for arg in command) == 2
    # both servers' logs came back, numbered on
    assert (folder / "timeseries_iops.1.log").is_file()
    assert (folder / "timeseries_iops.2.log").is_file()
    frame = run.frame().set_index("label")
    a, b = (f"{device} in {group}" for device in devices)
    assert sorted(frame.index) == sorted([group, a, b])
    assert frame.loc[group, "iops"] == pytest.approx(frame.loc[a, "iops"] + frame.loc[b, "iops"],
                                                     rel=1e-6)  # fmt: skip
    assert (frame.loc[a, "host"], frame.loc[b, "host"]) == ("a", "b")


def test_a_group_target_splits_per_host() -> None:
    hosts = parse_hosts("x=192.0.2.7,y=192.0.2.8")
    (group,) = resolve_targets("x:sda+y:sdb+x:sdc", hosts=hosts)
    assert isinstance(group, Target) and [h.name for h in group.hosts] == ["x", "y"]
    job = render(load_suite("quick").workloads[0], group, "quick", "psync")
    split = dict((h.name, text) for h, text in split_by_host(job))
    assert "/dev/sda" in split["x"] and "/dev/sdc" in split["x"] and "/dev/sdb" in split["y"]
    assert ".m2]" in split["y"] and ".m2]" not in split["x"]
