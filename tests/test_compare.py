"""`ssdcompare compare BASE NEW` on real sweeps of real loop devices.

Every sweep runs inside a blkio group of the test's own that caps both devices at 2,000
reads and writes a second, far below what a loop device does here: the figures are then the
caps', not this shared machine's mood, and a device held to half its IOPS is a clear-cut
change. The NEW sweep holds one device's reads to 1,000 a second; its writes and the other
device stay as they were.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from blkio import IopsCaps, iops_capped, needs_blkio
from blockdevs import attached_loop, detach_and_wait, loop_device
from markdown_it import MarkdownIt
from suitefiles import suite_file

import ssdcompare

pytestmark = [pytest.mark.xdist_group("compare"), pytest.mark.root, pytest.mark.fio, needs_blkio]

CAP = 2000
JOBS = ("{rw: randread, bs: 4k, iodepth: 4, runtime: 1}",
        "{rw: randwrite, bs: 4k, iodepth: 4, runtime: 1}")  # fmt: skip
READ, WRITE = "randread-4k-qd4", "randwrite-4k-qd4"
# The figures are the caps'; what limited them is not: on this machine, busy with other
# tests, a run's verdict is cpu or disturbed as often as drive. The gate is told to judge
# those too (as on a shared CI runner); what a verdict does is shown on an edited copy below.
JUDGE_ALL = ("--judge", "cpu,disturbed", "--fail-if", "iops < -5%")


@dataclass(frozen=True)
class Sweeps:
    base: Path  # both devices at the cap, 3 repeats
    new: Path  # `slow`'s reads at half the cap
    changed: Path  # `same` with another runtime: other jobfiles
    renamed: Path  # `same`'s image attached as another loop device
    slow: str
    same: str
    renamed_as: str


def _sweep(devices: list[str], suite: Path, out: Path, repeat: int) -> Path:
    run = ssdcompare.run_sweep(devices, suite=str(suite), repeat=repeat, out=out, report=False)
    assert run.complete
    return run.path


@contextlib.contextmanager
def _caps_for(caps: IopsCaps, *devices: str) -> Iterator[None]:
    """This process (and the fio it starts) in the capped group while the block runs."""
    for device in devices:
        caps.cap(device, CAP, CAP)
    caps.join(os.getpid())
    try:
        yield
    finally:
        (caps.group.parent / "cgroup.procs").write_text(str(os.getpid()))


@pytest.fixture(scope="module")
def sweeps(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sweeps]:
    tmp = tmp_path_factory.mktemp("compare")
    suite = suite_file(tmp, "gate", *JOBS)
    longer = suite_file(tmp, "gate2", *(j.replace("runtime: 1", "runtime: 2") for j in JOBS))
    with contextlib.ExitStack() as stack:
        caps = stack.enter_context(iops_capped("compare"))
        slow = stack.enter_context(loop_device(tmp / "slow.img", 32 << 20))
        (tmp / "same.img").write_bytes(b"")
        os.truncate(tmp / "same.img", 32 << 20)
        same = _attach(stack, tmp / "same.img")
        with _caps_for(caps, slow, same):
            base = _sweep([slow, same], suite, tmp / "base", 3)
            caps.cap(slow, read_iops=CAP // 2)
            new = _sweep([slow, same], suite, tmp / "new", 3)
            changed = _sweep([same], longer, tmp / "changed", 1)
        renamed_as, renamed = _renamed(stack, caps, tmp, same, suite)
        yield Sweeps(base, new, changed, renamed, Path(slow).name, Path(same).name, renamed_as)


def _attach(stack: contextlib.ExitStack, image: Path) -> str:
    """`image` as a loop device, detached at the end only while it is still this image's
    (its number may be another test's by then)."""
    device = subprocess.run(["losetup", "--find", "--show", "--direct-io=on", str(image)],
                            capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip

    def detach() -> None:
        backing = Path(f"/sys/block/{Path(device).name}/loop/backing_file")
        with contextlib.suppress(OSError):
            if backing.read_text().strip() == str(image):
                subprocess.run(["losetup", "--detach", device], check=False)

    stack.callback(detach)
    return device


def _renamed(
    stack: contextlib.ExitStack, caps: IopsCaps, tmp: Path, device: str, suite: Path
) -> tuple[str, Path]:
    """`device`'s image detached and attached again under another name (a placeholder takes
    the freed number), and swept there once."""
    detach_and_wait(device, tmp / "same.img")
    (tmp / "placeholder.img").write_bytes(bytes(1 << 20))
    # the freed number held (by the placeholder, or by another test that took it meanwhile)
    stack.enter_context(attached_loop(tmp / "placeholder.img", device, direct_io=False))
    again = _attach(stack, tmp / "same.img")
    assert again != device
    with _caps_for(caps, again):
        return Path(again).name, _sweep([again], suite, tmp / "renamed", 1)


def _regressions(document: dict[str, object]) -> set[tuple[str, str, str]]:
    rows = document["rows"]
    assert isinstance(rows, list)
    return {(r["drive"], r["job"], r["metric"]) for r in rows if r["outcome"] == "regression"}


def test_a_device_held_to_half_its_iops_fails_the_gate_naming_exactly_its_jobs(
    sweeps: Sweeps, run_cli: Callable[..., object]
) -> None:
    result = run_cli("compare", str(sweeps.base), str(sweeps.new), *JUDGE_ALL, "--format",
                     "json")  # fmt: skip
    document = json.loads(result.stdout)
    assert result.exit_code == 1 and document["exit_status"] == 1
    assert _regressions(document) == {(sweeps.slow, READ, "iops")}
    row = next(r for r in document["rows"] if r["outcome"] == "regression")
    assert row["base_repeats"] == row["new_repeats"] == 3 and row["p_value"] < 0.05
    assert -55 < row["change_pct"] < -45 and row["threshold"] == "iops < -5%"
    # both devices paired by name, each job of each compared: 2 x 2 x 5 metrics
    assert {(p["base"], p["paired"]) for p in document["pairs"]} == {
        (sweeps.slow, "by name"), (sweeps.same, "by name")}  # fmt: skip
    assert len(document["rows"]) == 20 and not document["problems"]
    # the terminal names it: drive, job, metric, change, p
    text = run_cli("compare", str(sweeps.base), str(sweeps.new), *JUDGE_ALL)
    assert text.exit_code == 1 and text.stdout.startswith("FAIL: 1 regression.")
    named = [line for line in text.stdout.splitlines() if line.startswith("  ")]
    assert len(named) == 1 and named[0].split()[:2] == [sweeps.slow, f"{READ}:"]
    assert "IOPS" in named[0] and "p < 0.001" in named[0] and "fails iops < -5%" in named[0]
    # judging only what the drives limited, the throttled job is never passed as the same:
    # a regression, or not judged (and listed) when the machine limited a side
    strict = json.loads(run_cli("compare", str(sweeps.base), str(sweeps.new), "--fail-if",
                                "iops < -5%", "--format", "json").stdout)  # fmt: skip
    assert _regressions(strict) <= {(sweeps.slow, READ, "iops")}
    throttled = [r for r in strict["rows"] if (r["drive"], r["job"], r["metric"])
                 == (sweeps.slow, READ, "iops")]  # fmt: skip
    assert throttled[0]["outcome"] in ("regression", "not judged")


def test_an_unchanged_device_passes(sweeps: Sweeps, run_cli: Callable[..., object]) -> None:
    result = run_cli("compare", str(sweeps.base), str(sweeps.new), *JUDGE_ALL,
                     "--device", sweeps.same, "--format", "json")  # fmt: skip
    document = json.loads(result.stdout)
    assert result.exit_code == 0 and document["summary"].startswith("PASS: no regression.")
    assert {r["drive"] for r in document["rows"]} == {sweeps.same}
    iops = [r for r in document["rows"] if r["metric"] == "iops"]
    assert len(iops) == 2 and all(abs(r["change_pct"]) < 5 for r in iops)


def test_changed_jobfiles_are_not_comparable(
    sweeps: Sweeps, run_cli: Callable[..., object]
) -> None:
    result = run_cli("compare", str(sweeps.base), str(sweeps.changed), "--device", sweeps.same)
    assert result.exit_code == 2
    assert result.stdout.startswith("COULD NOT COMPARE: nothing comparable")
    listed = result.stdout.split("Not comparable:\n", 1)[1].splitlines()
    assert [line.split()[1] for line in listed[:2]] == [f"{READ}:", f"{WRITE}:"]
    assert all("the jobfiles differ" in line and "runtime 1 s vs 2 s" in line
               for line in listed[:2])  # fmt: skip
    # the drive the changed sweep did not run is only in BASE, never compared
    everything = run_cli("compare", str(sweeps.base), str(sweeps.changed))
    assert everything.exit_code == 2 and f"{sweeps.slow}: no drive of NEW matches it" in (
        everything.stdout)  # fmt: skip


def test_a_renamed_device_is_found_by_what_it_is(
    sweeps: Sweeps, run_cli: Callable[..., object], tmp_path: Path
) -> None:
    result = run_cli("compare", str(sweeps.base), str(sweeps.renamed), "--device", sweeps.same,
                     *JUDGE_ALL, "--format", "json")  # fmt: skip
    document = json.loads(result.stdout)
    (pair,) = document["pairs"]
    assert (pair["base"], pair["new"]) == (sweeps.same, sweeps.renamed_as)
    assert pair["paired"].startswith("by backing file") and "same.img" in pair["paired"]
    # one repeat in NEW: judged on the size of the change alone, and said so
    assert result.exit_code == 0 and "judged on size alone" in document["summary"]
    assert {r["outcome"] for r in document["rows"] if r["metric"] == "iops"} == {"untested"}
    # in two folders of one side under two names, it is one drive with every repeat
    pooled = json.loads(run_cli("compare", "--base", str(sweeps.base), "--base",
                                str(sweeps.renamed), "--new", str(sweeps.new), "--device",
                                sweeps.same, *JUDGE_ALL, "--format", "json").stdout)  # fmt: skip
    assert [(p["base"], p["new"]) for p in pooled["pairs"]] == [(sweeps.same, sweeps.same)]
    assert {(r["base_repeats"], r["new_repeats"]) for r in pooled["rows"]} == {(4, 3)}
    assert not pooled["problems"]
    # a drive with a serial (an NVMe drive moved to another slot) is found by its serial
    base, renamed = (_with_serial(folder, name, tmp_path / tag) for folder, name, tag in (
        (sweeps.base, sweeps.same, "b"), (sweeps.renamed, sweeps.renamed_as, "n")))  # fmt: skip
    serial = run_cli("compare", str(base), str(renamed), "--device", sweeps.same, *JUDGE_ALL,
                     "--format", "json")  # fmt: skip
    (pair,) = json.loads(serial.stdout)["pairs"]
    assert pair["new"] == sweeps.renamed_as and pair["paired"] == "by serial S4711 (Test SSD)"


def _with_serial(folder: Path, device: str, copy: Path) -> Path:
    """A copy of a results folder whose manifest gives `device` a model and serial, and no
    backing file to know it by."""
    shutil.copytree(folder, copy)
    manifest = json.loads((copy / "manifest.json").read_text())
    for info in manifest["devices"]:
        if info["name"] == device:
            info.update(model="Test SSD", serial="S4711")
    manifest["identities"][device].update(backing_inode=None, backing_file=None)
    (copy / "manifest.json").write_text(json.dumps(manifest))
    return copy


def test_the_markdown_is_a_table(sweeps: Sweeps, run_cli: Callable[..., object]) -> None:
    result = run_cli("compare", str(sweeps.base), str(sweeps.new), *JUDGE_ALL, "--format",
                     "markdown")  # fmt: skip
    assert result.exit_code == 1
    first = result.stdout.splitlines()[0]
    assert first.startswith("**FAIL: 1 regression.") and first.endswith("**")
    tokens = MarkdownIt("commonmark").enable("table").parse(result.stdout)
    assert [t.type for t in tokens].count("table_open") == 1
    cells, rows, row = [], [], []
    for token in tokens:
        if token.type in ("th_open", "td_open"):
            cells.append(token)
        if token.type == "inline" and cells and cells[-1] is not None:
            row.append(token.content)
            cells.append(None)
        if token.type == "tr_close":
            rows.append(row)
            row = []
    header, *body = rows
    assert header == ["job", "drive", "metric", "base", "new", "change", "p", "verdict",
                      "limited by"]  # fmt: skip
    # every gated figure (iops) of 2 jobs on 2 drives, and other figures that changed
    gated = [r for r in body if r[2] == "iops"]
    assert len(gated) == 4 and all(len(r) == 9 for r in body)
    assert [r[:3] for r in body if r[7] == "REGRESSION"] == [[READ, sweeps.slow, "iops"]]


def test_results_not_limited_by_the_drive_are_not_judged(
    sweeps: Sweeps, run_cli: Callable[..., object], tmp_path: Path
) -> None:
    # NEW's throttled reads as if other processes had used half a core meanwhile: disturbed
    new = tmp_path / "new"
    shutil.copytree(sweeps.new, new)
    for cpu in (new / "runs" / sweeps.slow / READ).glob("r*/cpu.json"):
        samples = json.loads(cpu.read_text())
        for sample in samples["samples"]:
            sample.update(others_pct=50.0, others_top="stress (pid 1)")
        cpu.write_text(json.dumps(samples))
    result = run_cli("compare", str(sweeps.base), str(new), "--format", "json")
    document = json.loads(result.stdout)
    judged = {(p["drive"], p["job"]): p["why"] for p in document["problems"]
              if p["kind"] == "not judged"}  # fmt: skip
    # (others may be too: what limited the real runs varies on a busy machine)
    assert " in NEW" in judged[(sweeps.slow, READ)]
    assert not _regressions(document)
    assert {r["outcome"] for r in document["rows"] if r["job"] == READ
            and r["drive"] == sweeps.slow} == {"not judged"}  # fmt: skip
    # ... unless the gate is strict about it (which fails, or finds nothing to judge when
    # the busy machine limited every other job too), or told to judge such results
    strict = run_cli("compare", str(sweeps.base), str(new), "--strict")
    judged = [r for r in document["rows"] if r["outcome"] not in ("not judged", "no figure")]
    assert (strict.exit_code, strict.stdout.split(":")[0]) == (
        (1, "FAIL (--strict)") if judged else (2, "COULD NOT COMPARE"))  # fmt: skip
    anyway = run_cli("compare", str(sweeps.base), str(new), *JUDGE_ALL)
    assert anyway.exit_code == 1 and anyway.stdout.startswith("FAIL: 1 regression.")
