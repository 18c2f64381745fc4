"""The purge before a PTS test: a drive --destroy-data offers is purged before the test's
first round and its fill (a discard of the whole device, every block of a file punched out,
or an NVMe format or sanitize), any other is recorded as not purged and measured as it is,
and nothing beside the target is touched."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from blockdevs import loop_device
from conftest import CliResult

import ssdcompare
from ssdcompare.analysis.pts import DevicePrep
from ssdcompare.cli.api import prepare_sweep
from ssdcompare.cli.terminal import rounds_lines
from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.binary import FioInfo
from ssdcompare.results.store import ResultsDir
from ssdcompare.run import precondition, purge, sweep
from ssdcompare.run.nvmeerase import nvme_cli, nvme_format, nvme_sanitize, sanitize_status
from ssdcompare.suite.files import load_suite
from ssdcompare.target.devices import Target
from ssdcompare.target.nvme import NvmeNamespace, nvme_namespace

MIB = 1 << 20
PATTERN = b"data someone keeps on this drive\n"


def pts_suite(folder: Path, fill: bool = True) -> Path:
    """A PTS test of two jobs that run once (a group without a tracking variable): with
    --scale 0.002 each runs 0.12 s."""
    path = folder / "pts-two.yaml"
    path.write_text("\n".join([
        "name: pts-two", "description: two jobs of a PTS test, one round",
        *(["precondition: [fill]"] if fill else []),
        "defaults: {runtime: 60, iodepth: 4}",
        "workloads:", "  - {rw: randwrite, bs: 4k}", "  - {rw: randread, bs: 4k}",
        "pts:", "  test: iops", "  groups:", "    - {name: once}", "",
    ]))  # fmt: skip
    return path


def write_pattern(path: str | Path, size: int) -> None:
    with open(path, "r+b" if Path(path).exists() else "wb") as handle:
        handle.write((PATTERN * (size // len(PATTERN) + 1))[:size])
        handle.flush()
        os.fsync(handle.fileno())


def checksum(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def allocated(path: Path) -> int:
    return os.stat(path).st_blocks * 512


@pytest.mark.root
def test_the_offered_device_alone_is_discarded_whole_before_its_fill(
    tmp_path: Path, fio: FioInfo
) -> None:
    """Two loop devices in the sweep, one offered: it is discarded before its fill, the
    other measured as it is; a third loop device and a file beside the images are
    untouched."""
    out, image = tmp_path / "r", tmp_path / "offered.img"
    beside = tmp_path / "beside.bin"
    write_pattern(beside, MIB)
    seen: dict[str, dict[str, object]] = {}
    with loop_device(image, 16 * MIB) as offered, \
            loop_device(tmp_path / "kept.img", 8 * MIB) as kept, \
            loop_device(tmp_path / "bystander.img", 4 * MIB) as bystander:  # fmt: skip
        for device, size in ((offered, 16 * MIB), (kept, 8 * MIB), (bystander, 4 * MIB)):
            write_pattern(device, size)
        kept_before = checksum(kept)
        untouched = {path: checksum(path) for path in (bystander, beside)}

        def at_purge(event: sweep.Progress) -> None:
            if event.state == "purge":
                device = offered if event.target == Path(offered).name else kept
                seen[event.target] = {
                    "sum": checksum(device), "zeros": Path(device).read_bytes().count(0),
                    "allocated": allocated(image), "filled": ResultsDir.open(out).fill_record(
                        event.target) is not None, "detail": event.detail,
                }  # fmt: skip

        run = ssdcompare.run_sweep(f"{offered},{kept}", suite=str(pts_suite(tmp_path)),
                                   out=out, scale=0.002, destroy_data=Path(offered).name,
                                   progress=at_purge, report=False)  # fmt: skip
        assert {path: checksum(path) for path in untouched} == untouched
    assert run.complete
    name, other = Path(offered).name, Path(kept).name
    assert seen[name]["zeros"] == 16 * MIB and seen[name]["allocated"] < MIB  # type: ignore[operator]
    assert seen[name]["filled"] is False  # the purge came first
    assert seen[other]["sum"] == kept_before and seen[other]["filled"] is False
    results = ResultsDir.open(out)
    record = results.purge_record(name)
    assert record is not None and record.purged and record.error is None
    assert record.how == "discard"
    assert "the whole device (16 MiB)" in record.detail and "BLKDISCARD" in record.detail
    assert record.seconds is not None and record.started_at
    left = results.purge_record(other)
    assert left is not None and (left.purged, left.how) == (False, "none")
    assert left.detail == purge.NOT_OFFERED
    frame = run.frame()
    assert dict(zip(frame["device"], frame["purge"], strict=True)) == {
        name: "discard", other: "not purged"}  # fmt: skip


def test_plan_and_sweep_say_what_the_purge_does(
    tmp_path: Path, run_cli: Callable[..., CliResult], fio: FioInfo
) -> None:
    suite, target, new = pts_suite(tmp_path), tmp_path / "t.img", tmp_path / "new.img"
    write_pattern(target, 8 * MIB)
    beside = tmp_path / "beside.bin"
    write_pattern(beside, MIB)
    before = checksum(beside)
    planned = run_cli("plan", "--suite", str(suite), "--devices", f"{target},{new}", "--size",
                      "8m", "--scale", "0.002", "--brief",
                      "--destroy-data", str(target))  # fmt: skip
    assert planned.exit_code == 0, planned.stderr
    assert "purge before the PTS test (--purge discard):" in planned.stdout
    assert "t.img: every block of the file punched out (fallocate)" in planned.stdout
    assert f"new.img: {purge.NEW_FILE}" in planned.stdout  # nothing on it to purge
    swept = run_cli("sweep", "--suite", str(suite), "--devices", str(target), "--scale",
                    "0.002", "--destroy-data", "--out", str(tmp_path / "r"))  # fmt: skip
    assert swept.exit_code == 0, swept.stderr
    assert "purge: t.img: the whole file (8 MiB): punched the first 8 MiB" in swept.stderr
    assert "t.img purge: discard, the whole file (8 MiB)" in swept.stdout
    assert checksum(beside) == before


def test_a_purge_that_fails_skips_the_test_and_a_resume_tries_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fio: FioInfo
) -> None:
    def unsupported(path: str, block: bool, length: int, fd: int | None = None) -> str:
        raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))

    monkeypatch.setattr(precondition, "discard", unsupported)
    out, target = tmp_path / "r", tmp_path / "t.img"
    run = ssdcompare.run_sweep(str(target), suite=str(pts_suite(tmp_path)), out=out,
                               size="8m", scale=0.002, destroy_data=True,
                               report=False)  # fmt: skip
    results = ResultsDir.open(out)
    statuses = results.statuses()
    assert [s.status for s in statuses] == ["skipped", "skipped"]
    assert all("not purged: discard failed: Operation not supported" in (s.error or "")
               for s in statuses)  # fmt: skip
    failed = results.purge_record("t.img")
    assert failed is not None and not failed.purged and failed.how == "discard"
    assert failed.error is not None and failed.detail == f"not purged: {failed.error}"
    assert results.fill_record("t.img") is None  # not filled either
    steady = ssdcompare.pts_tables(out).steady()  # its groups say why they did not run
    assert set(steady["words"]) == {f"not run: the purge before the test failed: {failed.error}"}
    monkeypatch.undo()
    again = ssdcompare.run_sweep(resume=run.path, destroy_data=True, report=False)
    assert again.complete
    done = ResultsDir.open(out).purge_record("t.img")
    assert done is not None and done.purged and done.error is None


@pytest.mark.root
def test_a_resume_does_not_purge_again(tmp_path: Path, fio: FioInfo) -> None:
    out, suite = tmp_path / "r", pts_suite(tmp_path, fill=False)
    seen: list[str] = []
    sums: list[str] = []
    with loop_device(tmp_path / "disk.img", 16 * MIB) as device:

        def stop_after_purge(event: sweep.Progress) -> None:
            if event.state == "purge":
                raise KeyboardInterrupt

        first = ssdcompare.run_sweep(device, suite=str(suite), out=out, scale=0.002,
                                     destroy_data=True, progress=stop_after_purge,
                                     report=False)  # fmt: skip
        assert first.outcome.interrupted
        record = ResultsDir.open(out).purge_record(Path(device).name)
        assert record is not None and record.purged
        write_pattern(device, 16 * MIB)  # data a second purge would discard
        before = checksum(device)

        def look(event: sweep.Progress) -> None:
            seen.append(event.state)
            if event.state == "start" and not sums:
                sums.append(checksum(device))

        again = ssdcompare.run_sweep(resume=out, destroy_data=True, progress=look, report=False)
    assert again.complete and "purge" not in seen
    assert sums == [before]  # the first round began on the data as it was
    assert ResultsDir.open(out).purge_record(Path(device).name) == record


@pytest.mark.root
def test_a_filesystem_made_since_the_start_is_not_purged(tmp_path: Path, fio: FioInfo) -> None:
    with loop_device(tmp_path / "disk.img", 16 * MIB) as device:
        plan, results, _ = prepare_sweep(device, str(pts_suite(tmp_path)), out=tmp_path / "r",
                                         scale=0.002, destroy_data=True)  # fmt: skip
        subprocess.run(["mkfs.ext4", "-q", "-F", device], check=True)  # someone else, meanwhile
        outcome = sweep.run(plan, results)
        found = subprocess.run(["blkid", "-p", "-o", "value", "-s", "TYPE", device],
                               capture_output=True, text=True, check=False).stdout  # fmt: skip
    assert found.strip() == "ext4"  # neither discarded nor written over
    record = results.purge_record(Path(device).name)
    assert record is not None and not record.purged and "ext4" in (record.error or "")
    assert [s.status for s in outcome.statuses] == ["skipped", "skipped"]
    assert all((s.error or "").startswith("not purged: ") for s in outcome.statuses)


@pytest.mark.root
def test_nvme_purges_are_refused_at_plan_time_for_a_loop_device(
    tmp_path: Path, run_cli: Callable[..., CliResult]
) -> None:
    suite = pts_suite(tmp_path)
    with loop_device(tmp_path / "disk.img", 8 * MIB) as device:
        for method in ("nvme-format", "nvme-sanitize"):
            refused = run_cli("plan", "--suite", str(suite), "--devices", device, "--scale",
                              "0.002", "--purge", method, "--destroy-data", "--brief",
                              "--no-validate")  # fmt: skip
            assert refused.exit_code == 2
            name = Path(device).name
            assert refused.stderr.startswith(f"error: --purge {method}: {name} is not an NVMe "
                                             "namespace"), refused.stderr  # fmt: skip
            assert "--purge discard" in refused.stderr


def test_purge_options_refused(tmp_path: Path, run_cli: Callable[..., CliResult]) -> None:
    suite, target = pts_suite(tmp_path), str(tmp_path / "t.img")
    common = ("--devices", target, "--size", "8m", "--brief", "--no-validate")
    unknown = run_cli("plan", "--suite", str(suite), *common, "--purge", "shred")
    assert unknown.exit_code == 2 and "--purge shred: not a way to purge" in unknown.stderr
    other = run_cli("plan", "--suite", "quick", *common, "--purge", "discard")
    assert other.exit_code == 2 and "quick purges no drive" in other.stderr
    on_file = run_cli("plan", "--suite", str(suite), *common, "--purge", "nvme-format")
    assert on_file.exit_code == 2 and "t.img is a file, not an NVMe namespace" in on_file.stderr
    resumed = run_cli("sweep", "--resume", str(tmp_path / "r"), "--purge", "none")
    assert resumed.exit_code == 2 and "--purge would change it" in resumed.stderr
    assert not (tmp_path / "t.img").exists() and not (tmp_path / "r").exists()


def test_without_nvme_cli_an_nvme_purge_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(SsdcompareError, match=r"apt-get install nvme-cli"):
        nvme_cli()
    monkeypatch.setattr(purge, "nvme_namespace", lambda target: None)  # an NVMe namespace
    drive = Target(spec="nvme0n1", name="nvme0n1", path="/dev/nvme0n1", kind="block",
                   size_bytes=1 << 30)  # fmt: skip
    with pytest.raises(SsdcompareError, match=r"--purge nvme-sanitize runs nvme-cli: nvme-cli "
                       r"is not installed .*apt-get install nvme-cli"):  # fmt: skip
        purge.planned_purge(load_suite(str(pts_suite(tmp_path))), "nvme-sanitize", [drive])


def fake_nvme_sysfs(
    root: Path,
    namespaces: tuple[str, ...] = ("nvme0n1",),
    controllers: tuple[str, ...] = ("nvme0",),
    multipath: bool = False,
    number: str = "1:3",  # /dev/null's, which stands for the controller's node
) -> tuple[Path, Path]:
    """A sysfs tree of one NVM subsystem (its controllers, their namespaces: hung off the
    controller, or off the subsystem behind native multipath) and a /dev with nvme0."""
    sys_root, dev_root = root / "sys", root / "dev"
    pci = sys_root / "devices" / "pci0000:00" / "0000:00:04.0" / "nvme"
    subsystem = sys_root / "devices" / "virtual" / "nvme-subsystem" / "nvme-subsys0"
    subsystem.mkdir(parents=True)
    (sys_root / "class" / "block").mkdir(parents=True)
    (sys_root / "class" / "nvme-subsystem").mkdir()
    (sys_root / "class" / "nvme-subsystem" / "nvme-subsys0").symlink_to(subsystem)
    for controller in controllers:
        (pci / controller).mkdir(parents=True)
        (pci / controller / "dev").write_text(f"{number}\n")
        (subsystem / controller).symlink_to(pci / controller)
    for namespace in namespaces:
        parent = subsystem if multipath else pci / controllers[0]
        (parent / namespace).mkdir()
        (parent / namespace / "device").symlink_to(parent)
        (sys_root / "class" / "block" / namespace).symlink_to(parent / namespace)
        if multipath:  # the hidden path through the controller: nvme0c0n1
            (pci / controllers[0] / re.sub(r"n(\d+)$", r"c0n\1", namespace)).mkdir()
    dev_root.mkdir()
    (dev_root / "nvme0").symlink_to("/dev/null")
    return sys_root, dev_root


def namespace_of(name: str, roots: tuple[Path, Path]) -> NvmeNamespace:
    drive = Target(spec=name, name=name, path=f"/dev/{name}", kind="block", size_bytes=1 << 30)
    return nvme_namespace(drive, *roots)


def test_an_nvme_erase_takes_only_a_namespace_alone_on_its_controller(tmp_path: Path) -> None:
    alone = fake_nvme_sysfs(tmp_path / "alone")
    assert namespace_of("nvme0n1", alone) == NvmeNamespace(
        device="/dev/nvme0n1", controller=str(tmp_path / "alone" / "dev" / "nvme0"))  # fmt: skip
    assert namespace_of("nvme0n1", fake_nvme_sysfs(tmp_path / "mp", multipath=True)).device
    refusals = {
        "shares its NVMe controller with 1 other": fake_nvme_sysfs(
            tmp_path / "two", namespaces=("nvme0n1", "nvme0n2")),
        "reached through 2 NVMe controllers": fake_nvme_sysfs(
            tmp_path / "ports", controllers=("nvme0", "nvme1"), multipath=True),
        "is not the character device of NVMe controller nvme0 (259:0)": fake_nvme_sysfs(
            tmp_path / "node", number="259:0"),
    }  # fmt: skip
    for words, roots in refusals.items():
        with pytest.raises(SsdcompareError, match=words.replace("(", r"\(").replace(")", r"\)")):
            namespace_of("nvme0n1", roots)
    partition = alone[0] / "class" / "block" / "nvme0n1" / "nvme0n1p1"
    partition.mkdir()
    (partition / "partition").write_text("1\n")
    (alone[0] / "class" / "block" / "nvme0n1p1").symlink_to(partition)
    with pytest.raises(SsdcompareError, match="nvme0n1p1 is a partition of nvme0n1"):
        namespace_of("nvme0n1p1", alone)
    with pytest.raises(SsdcompareError, match="loop0 is not an NVMe namespace"):
        namespace_of("loop0", alone)


def test_the_sanitize_log_is_read_in_nvme_clis_layouts() -> None:
    done = "(1) Most Recent Sanitize Command Completed Successfully."
    nested = {"nvme0": {"sprog": 65535, "sstat": {"global_erased": 1, "status": done}}}
    assert sanitize_status(nested) == 1  # nvme-cli 2.x: under the device's name
    assert sanitize_status({"sprog": 0, "sstat": 0x102}) == 2  # nvme-cli 1.x: a number
    assert sanitize_status({"sstat": {"value": 3}}) == 3
    for unreadable in ({}, [], {"sstat": "busy"}, {"sstat": True}, None):
        assert sanitize_status(unreadable) is None  # fmt: skip


def fake_nvme(folder: Path, logs: list[str], fails: str = "") -> Path:
    """An nvme program that notes its arguments, prints the next of `logs` (sanitize
    statuses) for each sanitize-log, and fails `fails` (a command) with a message."""
    folder.mkdir()
    calls = folder / "calls"
    for number, status in enumerate(logs, 1):
        log = {"nvme0": {"sstat": {"status": f"({status}) ."}}}
        (folder / f"log{number}").write_text(json.dumps(log))
    program = folder / "nvme"
    program.write_text(f"""#!/bin/sh
echo "$*" >> {calls}
[ "$1" = "{fails}" ] && {{ echo "NVMe status: ACCESS_DENIED" >&2; exit 1; }}
[ "$1" = sanitize-log ] && cat {folder}/log$(grep -c '^sanitize-log' {calls})
exit 0
""")
    program.chmod(0o755)
    return calls


def test_a_sanitize_is_waited_for_until_its_log_says_it_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    namespace = NvmeNamespace(device="/dev/nvme0n1", controller="/dev/nvme0")
    calls = fake_nvme(tmp_path / "bin", ["1", "2", "2", "1"])  # an earlier one, then this one
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    naps: list[float] = []
    said = nvme_sanitize(namespace, sleep=naps.append)
    assert "block erase (nvme sanitize /dev/nvme0 --sanact=2)" in said and "completed" in said
    assert calls.read_text().splitlines() == [
        "sanitize-log /dev/nvme0 -o json", "sanitize /dev/nvme0 --sanact=2",
        *["sanitize-log /dev/nvme0 -o json"] * 3]  # fmt: skip
    assert len(naps) == 2
    calls = fake_nvme(tmp_path / "going", ["2", "3"])  # one under way already, which fails
    monkeypatch.setenv("PATH", f"{tmp_path / 'going'}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(SsdcompareError, match="did not complete: its sanitize log says failed"):
        nvme_sanitize(namespace, sleep=naps.append)
    assert "sanitize /dev/nvme0 --sanact=2" not in calls.read_text()
    calls = fake_nvme(tmp_path / "format", [], fails="format")
    monkeypatch.setenv("PATH", f"{tmp_path / 'format'}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(SsdcompareError, match="nvme format /dev/nvme0n1 failed: NVMe status: "
                       "ACCESS_DENIED"):  # fmt: skip
        nvme_format(namespace)
    assert calls.read_text().startswith("format /dev/nvme0n1 --ses=1 --force --timeout=")


@pytest.mark.parametrize(
    ("damage", "why"),
    [("link to /etc/shadow", "is a symbolic link"), ("link to /dev/zero", "is a symbolic link"),
     ("2 GB sparse file", "is larger than 4 MiB"), ("garbage", "is not JSON (line 1)"),
     ("no purge record", "is not a purge record (purged: ")],
)  # fmt: skip
def test_a_purge_record_that_cannot_be_read_is_said_so_not_taken_for_not_purged(
    tmp_path: Path, damage: str, why: str
) -> None:
    folder = tmp_path / "results"
    shutil.copytree(Path(__file__).parent / "data" / "format1-results", folder)
    results = ResultsDir.open(folder)
    target = results.manifest.targets[0].name
    record = folder / "rounds" / target / "purge.json"
    record.parent.mkdir(parents=True)
    assert results.purge_reading(target) == (None, None)  # no record: not decided yet
    if damage.startswith("link"):
        record.symlink_to(damage.removeprefix("link to "))
    elif damage.startswith("2 GB"):
        with record.open("wb") as out:
            out.truncate(2 << 30)
    elif damage == "garbage":
        record.write_bytes(b"\x00\xff{garbage")
    else:
        record.write_text('{"target": "t", "purged": "maybe", "how": "x", "detail": ""}')
    found, unreadable = results.purge_reading(target)
    assert found is None and results.purge_record(target) is None  # the frame's purge is NA
    assert unreadable is not None and unreadable.startswith(f"rounds/{target}/purge.json {why}")
    prep = DevicePrep(str(folder), target, target, "iops", None, None, False, None, unreadable)
    assert prep.purge_words == f"purge record unreadable: {unreadable}"  # never "not purged"
    results.manifest.suite = load_suite("pts-latency")
    assert f"{target} purge: purge record unreadable: {unreadable}" in rounds_lines(results)


def test_a_drive_without_discards_is_told_what_works_at_the_start_and_on_a_resume(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(purge, "discards", lambda name: False)
    loop5 = Target(spec="loop5", name="loop5", path="/dev/loop5", kind="block",
                   size_bytes=64 * MIB)  # fmt: skip
    with pytest.raises(SsdcompareError) as started:
        purge.check_purges([loop5], "discard", ["loop5"])
    assert str(started.value).startswith("loop5 does not take discards (TRIM)")
    assert "run the test unpurged: --purge none" in str(started.value)
    with pytest.raises(SsdcompareError) as resumed:  # a resume refuses --purge given again
        purge.check_purges([loop5], "discard", ["loop5"], resuming=True)
    said = str(resumed.value)
    assert "run the test unpurged: --purge none" not in said
    assert ("A resume keeps the sweep's --purge discard: resume the other devices without it "
            "(--resume with --devices naming them), and measure it in a new sweep with --purge "
            "none") in said  # fmt: skip
    purge.check_purges([loop5], "discard", [], resuming=True)  # not offered: not purged


def test_a_new_file_has_nothing_to_purge_and_is_not_told_to_be_offered(tmp_path: Path) -> None:
    path = tmp_path / "new.img"
    new = Target(spec=str(path), name="new.img", path=str(path), kind="file",
                 size_bytes=8 * MIB, exists=False)  # fmt: skip
    assert purge.intent("discard", new, []) == purge.NEW_FILE
    assert "--destroy-data" not in purge.NEW_FILE
    # as the sweep decides (or a resume): the file is there now, recorded as the sweep's own
    made = new.model_copy(update={"exists": True})
    assert purge.intent("discard", made, [], {str(path): "1:2"}) == purge.NEW_FILE
    assert purge.intent("discard", made, []) == purge.NOT_OFFERED  # there before the sweep
    offered = purge.intent("discard", new, ["new.img"])  # laid out, then every block punched
    assert offered == "every block of the file punched out (fallocate), its size kept"
