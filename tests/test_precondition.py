"""Preconditioning: a fill before a device's first job, a job's rounds until steady state."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path

import pytest
from blockdevs import loop_device
from suitefiles import suite_file

import ssdcompare
from ssdcompare.errors import SsdcompareError
from ssdcompare.judge.steady import MAX_ROUNDS
from ssdcompare.run import access
from ssdcompare.run.plan import PlanOptions, make_plan
from ssdcompare.target.devices import Target

MIB = 1 << 20


def test_the_plan_says_what_preconditioning_may_cost_and_refuses_what_cannot_be(
    tmp_path: Path,
) -> None:
    suite = suite_file(tmp_path, "reads", "{rw: randread, bs: 4k, runtime: 2}")
    target = str(tmp_path / "t.img")
    plain = make_plan(str(suite), target, PlanOptions(size_bytes=64 * MIB))
    assert plain.written_targets == []  # reads only
    plan = make_plan(
        str(suite), target, PlanOptions(size_bytes=64 * MIB, precondition=["workload", "fill"])
    )
    assert plan.precondition == ["fill", "workload"]  # in the order they run
    assert [t.name for t in plan.written_targets] == ["t.img"]  # preconditioning writes
    fill_s = 2 * 64 * MIB / 100e6
    assert plan.precondition_s == pytest.approx(fill_s + MAX_ROUNDS * 2)
    assert plan.estimated_s == pytest.approx(plain.estimated_s + plan.precondition_s)
    with pytest.raises(SsdcompareError, match="--read-only cannot be combined"):
        make_plan(
            str(suite), target, PlanOptions(size_bytes=MIB, read_only=True, precondition=["fill"])
        )
    with pytest.raises(SsdcompareError, match="not a step"):
        make_plan(str(suite), target, PlanOptions(size_bytes=MIB, precondition=["warm"]))


@pytest.mark.root
@pytest.mark.fio
def test_a_fill_then_rounds_until_steady_are_run_recorded_and_shown(tmp_path: Path) -> None:
    # a rate-limited job is steady from its first round: the rounds stop at the first window
    suite = suite_file(tmp_path, "steady", "{rw: randread, bs: 4k, runtime: 1, "
                       "extra: {rate_iops: 300}}")  # fmt: skip
    with loop_device(tmp_path / "disk.img", 16 * MIB) as device:
        run = ssdcompare.run_sweep(device, suite=str(suite), out=tmp_path / "results",
                                   precondition="fill,workload")  # fmt: skip
    assert run.complete
    name = Path(device).name
    fill = json.loads((run.path / "precondition" / name / "fill" / "fill.json").read_text())
    assert fill["ok"] and fill["size"] is None and fill["io_bytes"] == 2 * 16 * MIB
    job = "randread-4k-qd1+rate_iops300"
    steady = json.loads((run.path / "precondition" / name / job / "steady.json").read_text())
    # the rounds stop at the first window that passes (5 rounds, unless the host stalled one)
    rounds = len(steady["rounds_iops"])
    assert steady["attained"] and steady["steady_after"] == rounds and 5 <= rounds <= 25
    assert steady["window_range_pct"] <= 20 and steady["window_slope_pct"] <= 10
    folders = list((run.path / "precondition" / name / job).glob("round-*/fio.json"))
    assert len(folders) == rounds  # every round's raw output is kept
    row = run.frame().iloc[0]
    assert row["drive_state"] == "filled, steady"
    assert bool(row["steady_state"]) and row["ss_rounds"] == rounds
    manifest = json.loads((run.path / "manifest.json").read_text())
    assert manifest["precondition"] == ["fill", "workload"]
    assert run.report is not None
    html = run.report.read_text()
    assert "not preconditioned" not in html
    assert "fill then workload (SNIA PTS)" in html and "drive filled, steady" in html
    # and where a reader sees it: under the result's figures, with its rounds
    assert f'<span class="state">filled, steady after {rounds} rounds</span>' in html


@pytest.mark.root
@pytest.mark.fio  # the sweep is planned with fio, which checks its jobfiles
def test_preconditioning_a_device_with_data_needs_destroy_data(tmp_path: Path) -> None:
    suite = suite_file(tmp_path, "reads", "{rw: randread, bs: 4k, runtime: 1}")
    with loop_device(tmp_path / "disk.img", 16 * MIB) as device:
        with open(device, "r+b") as handle:  # an ext4 magic number: data someone may want
            handle.seek(1024 + 56)
            handle.write(b"\x53\xef")
        with pytest.raises(SsdcompareError, match="--destroy-data"):
            ssdcompare.run_sweep(device, suite=str(suite), out=tmp_path / "results",
                                 precondition="fill")  # fmt: skip
        reads = ssdcompare.run_sweep(device, suite=str(suite), out=tmp_path / "reads")
    assert reads.complete  # reading alone never needed it
    assert reads.frame()["drive_state"].tolist() == ["as found"]
    assert (
        reads.report is not None and "Devices were not preconditioned" in reads.report.read_text()
    )


def test_a_suite_may_ask_for_its_own_preconditioning(tmp_path: Path) -> None:
    target = str(tmp_path / "t.img")
    plan = make_plan("storagereview", target, PlanOptions(size_bytes=64 * MIB))
    assert plan.precondition == ["fill", "workload"]  # as StorageReview measures
    dropped = make_plan("storagereview", target, PlanOptions(size_bytes=64 * MIB, precondition=[]))
    assert dropped.precondition == []
    Path(target).write_bytes(bytes(64 * MIB))  # a read-only sweep reads what is there
    reads = make_plan("storagereview", target, PlanOptions(size_bytes=64 * MIB, read_only=True))
    assert reads.precondition == []  # a read-only sweep never writes, whatever the suite asks
    assert make_plan("quick", target, PlanOptions(size_bytes=64 * MIB)).precondition == []


@pytest.mark.fio
def test_the_guard_looks_again_before_every_write_of_a_sweep_and_only_then(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fill and every run of a writing job are each preceded by the guard's look at the
    target (is it in use now); a job that only reads gets none: nothing it does can destroy
    data, and the fill before it had its own."""
    looked: list[str] = []
    real = access.check_in_use

    def counted(target: Target, exclusive: bool = True) -> None:
        looked.append(target.name)
        real(target, exclusive)

    monkeypatch.setattr(access, "check_in_use", counted)
    suite = suite_file(tmp_path, "two", "{rw: randread, bs: 4k, runtime: 1}",
                       "{rw: randwrite, bs: 4k, runtime: 1}")  # fmt: skip
    run = ssdcompare.run_sweep(str(tmp_path / "t.img"), suite=str(suite), size="8m", repeat=2,
                               precondition="fill", out=tmp_path / "r", report=False)  # fmt: skip
    assert [s.status for s in run.outcome.statuses] == ["ok"] * 4
    assert run.frame()["drive_state"].eq("filled").all()
    assert looked == ["t.img"] * 3  # the fill, then each of the two writing runs


@pytest.mark.root
@pytest.mark.fio
def test_a_device_that_comes_into_use_is_not_preconditioned(tmp_path: Path) -> None:
    suite = suite_file(tmp_path, "read", "{rw: randread, bs: 4k, runtime: 1}")
    stacked: list[str] = []
    with (
        loop_device(tmp_path / "a.img", 16 * MIB) as first,
        loop_device(tmp_path / "b.img", 16 * MIB) as second,
    ):
        with open(second, "r+b") as handle:
            handle.write(os.urandom(16 * MIB))  # data the fill would overwrite
        before = hashlib.sha256(Path(second).read_bytes()).hexdigest()

        def use_second_after_first(progress) -> None:
            if progress.state == "ok" and progress.target == Path(first).name and not stacked:
                done = subprocess.run(["losetup", "--find", "--show", second],
                                      capture_output=True, text=True, check=True)  # fmt: skip
                stacked.append(done.stdout.strip())

        try:
            run = ssdcompare.run_sweep([first, second], suite=str(suite), precondition="fill",
                                       out=tmp_path / "results", report=False,
                                       progress=use_second_after_first)  # fmt: skip
        finally:
            for device in stacked:
                subprocess.run(["losetup", "--detach", device], check=False)
        after = hashlib.sha256(Path(second).read_bytes()).hexdigest()
    assert before == after  # never filled
    states = run.frame().set_index("device")["drive_state"]
    assert states[Path(first).name] == "filled" and states[Path(second).name] == "fill failed"
    statuses = {s.target: s.status for s in run.outcome.statuses}
    assert statuses == {Path(first).name: "ok", Path(second).name: "ok"}  # reads still ran


@pytest.mark.root
@pytest.mark.fio  # the sweep is planned with fio, which checks its jobfiles
def test_a_disk_and_its_partition_in_one_sweep_are_refused_before_anything_starts(
    tmp_path: Path,
) -> None:
    from test_safety_stacked import partition_node, partitioned

    suite = suite_file(tmp_path, "read", "{rw: randread, bs: 4k, runtime: 1}")
    with partitioned(tmp_path / "parts.img") as disk:
        node = partition_node(disk, 1, tmp_path)
        with pytest.raises(SsdcompareError, match="share data .* list one of them"):
            ssdcompare.run_sweep([disk, node], suite=str(suite), out=tmp_path / "results")
    assert not (tmp_path / "results").exists()
