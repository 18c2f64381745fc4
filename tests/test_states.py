"""Drive states: a --states sweep runs its jobs once on an empty drive and once on a full one."""

from __future__ import annotations

import errno
import json
import os
import subprocess
from pathlib import Path

import pytest
from blockdevs import loop_device
from suitefiles import suite_file
from test_report import chromium

import ssdcompare
from ssdcompare.errors import SsdcompareError
from ssdcompare.results.models import StateRecord
from ssdcompare.results.store import ResultsDir
from ssdcompare.run import precondition, sweep
from ssdcompare.run.order import ordered
from ssdcompare.run.plan import PlanOptions, make_plan
from ssdcompare.target.devices import discards

MIB = 1 << 20


def test_states_make_a_pass_per_state_with_their_own_ids_hashes_and_order(
    tmp_path: Path,
) -> None:
    suite = suite_file(tmp_path, "two", "{rw: randread, bs: 4k, runtime: 1}",
                       "{rw: randwrite, bs: 4k, runtime: 1}")  # fmt: skip
    target = str(tmp_path / "t.img")
    plan = make_plan(
        str(suite), target, PlanOptions(size_bytes=64 * MIB, repeat=2, states=["full", "empty"])
    )
    assert plan.states == ["empty", "full"]  # empty first: only a discard undoes a fill
    ids = [j.job_id for j in plan.jobs]
    assert ids == ["randread-4k-qd1.empty", "randwrite-4k-qd1.empty",
                   "randread-4k-qd1.full", "randwrite-4k-qd1.full"]  # fmt: skip
    hashes = {j.job_id: j.workload_hash for j in plan.jobs}
    assert hashes["randread-4k-qd1.empty"] != hashes["randread-4k-qd1.full"]
    assert "; drive state: empty" in plan.jobs[0].text
    # both repeats of the empty pass come before the full pass
    order = [(j.job_id, r) for r, j in ordered(plan)]
    assert [i for i, _ in order] == [ids[0], ids[1], ids[0], ids[1], ids[2], ids[3], ids[2],
                                     ids[3]]  # fmt: skip
    assert [r for _, r in order] == [1, 1, 2, 2, 1, 1, 2, 2]
    assert [t.name for t in plan.written_targets] == ["t.img"]  # reads too: discards write
    assert plan.precondition_s == pytest.approx(2 * 64 * MIB / 100e6)  # the fill


def test_states_refuse_what_cannot_be_and_suites_bring_their_own(tmp_path: Path) -> None:
    suite = suite_file(tmp_path, "reads", "{rw: randread, bs: 4k, runtime: 1}")
    target = str(tmp_path / "t.img")
    with pytest.raises(SsdcompareError, match="not a drive state"):
        make_plan(str(suite), target, PlanOptions(size_bytes=MIB, states=["fresh"]))
    with pytest.raises(SsdcompareError, match="--read-only cannot be combined with --states"):
        make_plan(str(suite), target, PlanOptions(size_bytes=MIB, read_only=True, states=["full"]))
    with pytest.raises(SsdcompareError, match="cannot be combined"):
        make_plan(
            str(suite), target, PlanOptions(size_bytes=MIB, states=["full"], precondition=["fill"])
        )
    bundled = make_plan("anandtech", target, PlanOptions(size_bytes=64 * MIB))
    assert bundled.states == ["empty", "full"] and len(bundled.jobs) == 100
    # choosing the other kind of preconditioning, or none, replaces the suite's states
    for other in (PlanOptions(size_bytes=64 * MIB, precondition=["fill"]),
                  PlanOptions(size_bytes=64 * MIB, states=["none"])):  # fmt: skip
        assert make_plan("anandtech", target, other).states == []
    os.truncate(Path(target).touch() or target, 64 * MIB)
    assert make_plan("anandtech", target, PlanOptions(read_only=True)).states == []


def test_discard_support_is_read_from_the_disk_queue(tmp_path: Path) -> None:
    sys_root = tmp_path / "sys"
    disk = sys_root / "devices" / "virtual" / "block" / "sdz"
    (disk / "queue").mkdir(parents=True)
    (disk / "sdz1").mkdir()
    (disk / "queue" / "discard_max_bytes").write_text("0\n")
    (sys_root / "class" / "block").mkdir(parents=True)
    (sys_root / "class" / "block" / "sdz").symlink_to(disk)
    (sys_root / "class" / "block" / "sdz1").symlink_to(disk / "sdz1")
    assert discards("sdz", sys_root) is False and discards("sdz1", sys_root) is False
    (disk / "queue" / "discard_max_bytes").write_text("2199023255040\n")
    assert discards("sdz", sys_root) is True and discards("sdz1", sys_root) is True
    assert discards("nothere", sys_root) is None


@pytest.mark.fio  # sweep.start checks fio
def test_a_full_pass_fills_again_after_any_discard(tmp_path: Path) -> None:
    suite = suite_file(tmp_path, "reads", "{rw: randread, bs: 4k, runtime: 1}")
    plan = make_plan(
        str(suite), str(tmp_path / "t.img"), PlanOptions(size_bytes=MIB, states=["empty", "full"])
    )
    results, _ = sweep.start(plan, tmp_path / "r", command_line=["test"])
    empty, full = plan.jobs
    folder = ResultsDir.open(results.path)

    def step(number: int, state: str, ok: bool) -> None:
        folder.save_state_record(StateRecord(
            target="t.img", state=state, number=number, how="test", job="j", repeat=1, ok=ok,
            started_at="", finished_at="",
        ))  # fmt: skip

    assert precondition.state_needed(folder, empty) and precondition.state_needed(folder, full)
    step(1, "full", False)
    assert precondition.state_needed(folder, full)  # a fill that failed is tried again
    step(2, "full", True)
    assert not precondition.state_needed(folder, full)
    assert precondition.state_needed(folder, empty)  # every empty run starts discarded
    step(3, "empty", True)  # e.g. a resumed empty run, after the full pass had begun
    assert precondition.state_needed(folder, full)
    assert [r.number for r in folder.state_records("t.img")] == [1, 2, 3]


def _allocated(path: Path) -> int:
    return os.stat(path).st_blocks * 512


@pytest.mark.root
@pytest.mark.fio
def test_an_empty_then_full_sweep_discards_fills_and_reports_both_states(tmp_path: Path) -> None:
    suite = suite_file(tmp_path, "reads", "{rw: randread, bs: 4k, iodepth: 4, runtime: 1}")
    image = tmp_path / "disk.img"
    seen: dict[str, int] = {}

    def progress(event: sweep.Progress) -> None:
        if event.state == "start":  # before the state step of that run
            seen[event.job] = _allocated(image)

    with loop_device(image, 16 * MIB) as device:
        with open(device, "r+b") as handle:  # data the empty state must discard
            handle.write(os.urandom(16 * MIB))
        assert _allocated(image) >= 16 * MIB
        run = ssdcompare.run_sweep(device, suite=str(suite), out=tmp_path / "r",
                                   states="empty,full", progress=progress)  # fmt: skip
        after = _allocated(image)
    assert run.complete
    # the empty run read a discarded span; the full pass wrote all of it first
    assert seen["randread-4k-qd4.full"] < MIB <= 16 * MIB <= after
    name = Path(device).name
    steps = ResultsDir.open(run.path).state_records(name)
    assert [(s.state, s.ok, s.job) for s in steps] == [
        ("empty", True, "randread-4k-qd4.empty"),
        ("full", True, "randread-4k-qd4.full"),
    ]
    assert "BLKDISCARD" in steps[0].how and steps[0].span_bytes == 16 * MIB
    fill = run.path / "precondition" / name / "states" / "0002-full" / "fio.json"
    written = json.loads(fill.read_text())["jobs"][0]["write"]["io_bytes"]
    assert written == 2 * 16 * MIB  # the raw fill output is kept
    frame = run.frame()
    assert list(frame["job"]) == ["randread-4k-qd4.empty", "randread-4k-qd4.full"]
    assert list(frame["drive_state"]) == ["empty", "full"]
    assert list(frame["state"]) == ["empty", "full"]
    statuses = {s.job: s.state_step for s in ResultsDir.open(run.path).statuses()}
    assert statuses == {"randread-4k-qd4.empty": 1, "randread-4k-qd4.full": 2}
    assert run.report is not None
    # the report as a browser shows it: both states side by side, and what each run was in
    dom = subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
         f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", run.report.as_uri()],
        capture_output=True, text=True, timeout=120, check=False,
    ).stdout  # fmt: skip
    assert "Empty drive against full drive" in dom and "full / empty" in dom
    table = dom[dom.index('id="states"') :]
    assert "randread-4k-qd4" in table and "×" in table[: table.index("</table>")]
    assert 'drive empty"' in dom and 'drive full"' in dom  # the cells' tooltips
    assert ">empty drive</span>" in dom and ">full drive</span>" in dom  # under the figures
    assert "not preconditioned" not in dom and "a pass over the jobs in each drive state" in dom


@pytest.mark.fio
def test_a_state_that_cannot_be_reached_skips_its_pass_with_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unsupported(path: str, block: bool, length: int, fd: int | None = None) -> str:
        raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))

    monkeypatch.setattr(precondition, "discard", unsupported)
    suite = suite_file(tmp_path, "writes", "{rw: randwrite, bs: 4k, runtime: 1}")
    run = ssdcompare.run_sweep(str(tmp_path / "t.img"), suite=str(suite), out=tmp_path / "r",
                               size="8m", states="empty,full")  # fmt: skip
    assert not run.complete
    by_job = {s.job: s for s in ResultsDir.open(run.path).statuses()}
    skipped = by_job["randwrite-4k-qd1.empty"]
    assert skipped.status == "skipped"
    assert skipped.error is not None and "not put in the empty state" in skipped.error
    assert "Operation not supported" in skipped.error
    assert by_job["randwrite-4k-qd1.full"].status == "ok"
    steps = ResultsDir.open(run.path).state_records("t.img")
    assert [(s.state, s.ok) for s in steps] == [("empty", False), ("full", True)]


@pytest.mark.root
@pytest.mark.fio
def test_a_filesystem_made_mid_sweep_is_neither_discarded_nor_written(tmp_path: Path) -> None:
    suite = suite_file(tmp_path, "two", "{rw: randread, bs: 4k, runtime: 1}",
                       "{rw: randwrite, bs: 4k, runtime: 1}")  # fmt: skip

    with loop_device(tmp_path / "disk.img", 32 * MIB) as device:

        def progress(event: sweep.Progress) -> None:
            if event.state == "ok" and event.job == "randread-4k-qd1.empty":
                subprocess.run(["mkfs.ext4", "-q", "-F", device], check=True)  # someone else

        run = ssdcompare.run_sweep(device, suite=str(suite), out=tmp_path / "r",
                                   states="empty", progress=progress, report=False)  # fmt: skip
        found = subprocess.run(["blkid", "-p", "-o", "value", "-s", "TYPE", device],
                               capture_output=True, text=True, check=False).stdout  # fmt: skip
    assert found.strip() == "ext4"  # still there: neither discarded nor written over
    status = {s.job: s for s in ResultsDir.open(run.path).statuses()}
    skipped = status["randwrite-4k-qd1.empty"]
    assert skipped.status == "skipped" and "ext4" in (skipped.error or "")


@pytest.mark.root
@pytest.mark.fio
def test_a_fill_never_uses_a_jobs_null_engine_and_a_trimming_job_ends_full(
    tmp_path: Path,
) -> None:
    suite = suite_file(tmp_path, "odd",
                       "{id: nothing, rw: randread, bs: 4k, runtime: 1, ioengine: 'null'}",
                       "{rw: trim, bs: 1m, runtime: 1, ioengine: psync}",
                       "{rw: randread, bs: 4k, runtime: 1}")  # fmt: skip
    image = tmp_path / "disk.img"
    with loop_device(image, 16 * MIB) as device:
        run = ssdcompare.run_sweep(device, suite=str(suite), out=tmp_path / "r", states="full",
                                   report=False)  # fmt: skip
        allocated = _allocated(image)
    assert run.complete
    name = Path(device).name
    steps = ResultsDir.open(run.path).state_records(name)
    # filled, trimmed by the job itself, filled again before the next job of the pass
    assert [s.state for s in steps] == ["full", "empty", "full"]
    assert steps[1].job == "trim-1m-qd1-psync.full" and steps[2].job == "randread-4k-qd1.full"
    fill = (run.path / "precondition" / name / "states" / "0001-full" / "jobfile.fio").read_text()
    assert "ioengine=null" not in fill
    assert allocated >= 16 * MIB  # the last fill wrote the whole span
    frame = run.frame().set_index("job")
    assert frame.loc["randread-4k-qd1.full", "drive_state"] == "full"


def test_the_span_a_state_covers_reaches_every_offset_a_job_uses(tmp_path: Path) -> None:
    suite = suite_file(tmp_path, "offsets",
                       "{rw: randread, bs: 4k, size: 32m, extra: {offset: 128m}}",
                       "{rw: randread, bs: 4k, size: 32m, numjobs: 2, "
                       "extra: {offset_increment: 64m}}")  # fmt: skip
    target = tmp_path / "t.img"
    os.truncate(target.touch() or target, 1 << 30)
    plan = make_plan(str(suite), str(target), PlanOptions(states=["empty"]))
    assert precondition.state_span(plan.jobs) == 160 * MIB  # 128 MiB + 32 MiB
    assert precondition.state_span(plan.jobs[1:]) == 96 * MIB  # 64 MiB x 1 + 32 MiB
