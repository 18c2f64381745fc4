"""The drive's own health log around each run: nvme-cli's and smartctl's JSON read from
recorded outputs, the hwmon temperature found by name in a sysfs tree, the watch that reads it
while a run goes on, and, end to end on a real loop device taken for an NVMe drive (a stand-in
`nvme` answering its health log), a run that throttled judged `throttled` with its figures and
one that did not judged otherwise, in the frame and in the report a browser shows."""

from __future__ import annotations

import itertools
import json
import math
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from blockdevs import loop_device
from fioprocs import wait_for
from reportbrowser import measure
from suitefiles import suite_file

import ssdcompare
from ssdcompare.analysis.persecond import cliff_cause
from ssdcompare.judge.verdict import RunFacts, Throttling, judge_run, throttled_reason
from ssdcompare.target import probes
from ssdcompare.target.devices import Target
from ssdcompare.target.probes import drivelog, health
from ssdcompare.target.probes.drivelog import Unavailable
from ssdcompare.target.probes.probe import Probe, ProbeColumn
from ssdcompare.target.probes.watch import Watch

DATA = Path(__file__).parent / "data" / "health"
QUIET = {"cpu_bound": False, "cpu_reason": None}


@pytest.fixture(autouse=True)
def _no_tool_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts with no tool remembered as not answering (it is kept per process)."""
    monkeypatch.setattr(drivelog, "_UNANSWERED", {})


def _recorded(name: str) -> Any:
    return json.loads((DATA / name).read_text())


def test_nvme_cli_health_logs_of_1_16_and_2_x_read_alike() -> None:
    old = drivelog.nvme_fields(_recorded("nvme-cli-1.16-smart-log.json"))
    new = drivelog.nvme_fields(_recorded("nvme-cli-2.x-smart-log.json"))
    assert set(old) == set(new) == set(drivelog.NVME_KEYS)
    assert old["temperature"] == 309 and old["data_units_written"] == 9711306
    # nvme-cli 2.x prints its 128-bit counters as strings of digits
    assert new["data_units_written"] == 61837202 and new["media_errors"] == 0
    assert new["thm_temp1_trans_count"] == 41 and new["thm_temp2_total_time"] == 96
    assert new["warning_temp_time"] == 12


def test_smartctl_json_gives_temperature_and_sas_bytes() -> None:
    sata = drivelog.smartctl_fields(_recorded("smartctl-7.3-sata.json"))
    assert sata == {"temperature_c": 34.0}  # an ATA vendor attribute's units are not guessed
    sas = drivelog.smartctl_fields(_recorded("smartctl-7.3-sas.json"))
    assert sas == {"temperature_c": 38.0, "bytes_written": 2391001000000,
                   "bytes_read": 1812662000000}  # fmt: skip
    with pytest.raises(Unavailable, match="Permission denied"):
        drivelog.smartctl_fields(_recorded("smartctl-7.3-permission-denied.json"))
    with pytest.raises(Unavailable, match="Unable to detect device type"):
        drivelog.smartctl_fields(_recorded("smartctl-7.3-loop.json"))  # real smartctl, a loop


def _stand_in(folder: Path, name: str, script: str) -> Path:
    """A program `name` in `folder` (put first on PATH by the test) running `script`."""
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(f"#!{sys.executable}\n{script}")
    path.chmod(0o755)
    return folder


def test_a_missing_or_failing_tool_is_not_available_with_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(Unavailable, match="^nvme-cli is not installed$"):
        drivelog.nvme_log("/dev/nvme0n1")
    failing = _stand_in(
        tmp_path / "bin",
        "nvme",
        "import sys\nprint('smart log: Permission denied', file=sys.stderr)\nsys.exit(1)\n",
    )
    monkeypatch.setenv("PATH", str(failing))
    with pytest.raises(Unavailable, match="^nvme-cli failed: smart log: Permission denied$"):
        drivelog.nvme_log("/dev/nvme0n1")


def _fake_sysfs(root: Path, new_kernel: bool) -> Path:
    """A sysfs tree with an NVMe drive and the hwmon of its temperature: under the controller
    (older kernels) or its PCI function (newer ones), plus another drive's hwmon."""
    pci = root / "devices" / "pci0000:00" / "0000:00:01.0"
    controller = pci / "nvme" / "nvme0"
    controller.mkdir(parents=True)
    (controller / "device").symlink_to(pci)
    (root / "class" / "block" / "nvme0n1").mkdir(parents=True)
    (root / "class" / "block" / "nvme0n1" / "device").symlink_to(controller)
    drive = pci if new_kernel else controller
    for name, owner, milli in (("hwmon0", root / "devices" / "other", "30000"),
                               ("hwmon1", drive, "47850")):  # fmt: skip
        folder = root / "class" / "hwmon" / name
        folder.mkdir(parents=True)
        owner.mkdir(parents=True, exist_ok=True)
        (folder / "name").write_text("nvme\n")
        (folder / "device").symlink_to(owner)
        (folder / "temp1_input").write_text(milli + "\n")
    return root


@pytest.mark.parametrize("new_kernel", [False, True])
def test_the_drives_hwmon_is_found_by_name_wherever_the_kernel_put_it(
    tmp_path: Path, new_kernel: bool
) -> None:
    sys_root = _fake_sysfs(tmp_path, new_kernel)
    found = drivelog.hwmon_inputs("nvme0n1", sys_root)
    assert found == [sys_root / "class" / "hwmon" / "hwmon1" / "temp1_input"]
    assert drivelog.hwmon_celsius(found[0]) == 47.85
    assert drivelog.hwmon_inputs("nvme1n1", sys_root) == []


def test_hwmon_is_read_no_more_often_than_every_5_s() -> None:
    assert health.PROBE.every_s >= 5.0 and health.PROBE.watch is not None


def _target(path: str = "/dev/null") -> Target:
    return Target(spec=path, name=Path(path).name, path=path, kind="file", size_bytes=0)


def test_the_watch_reads_at_its_pace_keeps_errors_once_and_stops_with_the_run() -> None:
    calls: list[float] = []

    def reader() -> dict[str, Any]:
        calls.append(time.monotonic())
        return {"n": len(calls)}

    def broken() -> dict[str, Any]:
        raise OSError("gone")

    def never(target: Target) -> None:
        return None

    def column(name: str) -> tuple[ProbeColumn, ...]:
        return (ProbeColumn(name, "float", "", "a test probe"),)

    kept = [Probe("fast", column("a"), lambda t: {}, lambda *a: {}, lambda t: reader, 0.05),
            Probe("bad", column("b"), lambda t: {}, lambda *a: {}, lambda t: broken, 0.05),
            Probe("none", column("c"), lambda t: {}, lambda *a: {}, never, 0.05)]  # fmt: skip
    watch = Watch(_target(), kept, time.monotonic())
    watch.start()
    time.sleep(0.5)
    started = time.monotonic()
    samples = watch.stop()
    assert time.monotonic() - started < 0.6  # stopping waits for no more than a reading
    assert len(samples["fast"]) >= 2 and samples["fast"][0]["reading"] == {"n": 1}
    times = [sample["t_s"] for sample in samples["fast"]]
    assert all(later - earlier >= 0.04 for earlier, later in itertools.pairwise(times))
    assert samples["bad"] == [{"t_s": samples["bad"][0]["t_s"], "error": "OSError: gone"}]
    assert samples["none"] == []
    count = len(calls)
    time.sleep(0.2)
    assert len(calls) == count  # stopped with the run


def _log(**counters: int) -> dict[str, Any]:
    base = {"temperature": 318, "thm_temp1_trans_count": 5, "thm_temp2_trans_count": 0,
            "thm_temp1_total_time": 100, "thm_temp2_total_time": 0, "warning_temp_time": 0,
            "critical_comp_time": 0, "data_units_written": 1000, "data_units_read": 1000,
            "percent_used": 3, "media_errors": 0}  # fmt: skip
    return {
        "tool": "nvme-cli",
        "log": {**base, **counters},
        "transport": "pcie",
        "host_sectors": {"read": 0, "written": counters.pop("written", 0)},
    }


def test_the_logs_before_and_after_become_the_runs_columns() -> None:
    before, after = _log(), _log(temperature=344, thm_temp1_trans_count=7,
                                 thm_temp1_total_time=141, data_units_written=1230,
                                 written=200_000)  # fmt: skip
    during = [{"t_s": 5.0, "reading": {"temperature_c": {"nvme0n1": 73.5, "other": 99.0}}}]
    values = probes.columns_of({"format_version": 1, "seconds": 12.0, "probes": {"health": {
        "before": {"drives": {"nvme0n1": before}}, "after": {"drives": {"nvme0n1": after}},
        "during": during}}})  # fmt: skip
    assert values["health_drives"] == "nvme0n1" and values["health_unavailable"] is None
    assert values["temp_before_c"] == pytest.approx(44.85)
    assert values["temp_after_c"] == pytest.approx(70.85) and values["temp_max_c"] == 73.5
    assert values["throttle_events"] == 2 and values["throttle_s"] == 41
    assert values["throttle_t2_events"] == 0 and values["warning_temp_min"] == 0
    assert values["device_bytes_written"] == 230 * 512_000
    assert values["write_amplification"] == pytest.approx(230 * 512_000 / (200_000 * 512))
    assert values["percent_used"] == 3 and values["media_errors"] == 0


def test_a_drive_without_a_log_says_why_and_its_columns_are_unknown() -> None:
    missing = {"drives": {"loop0": {"unavailable": "a loop device has no health log"}}}
    values = probes.columns_of({"format_version": 1, "seconds": 1.0, "probes": {"health": {
        "before": missing, "after": missing, "during": []}}})  # fmt: skip
    assert values["health_unavailable"] == "loop0: not available: a loop device has no health log"
    assert all(values[c.name] is None for c in health.PROBE.columns
               if c.name != "health_unavailable")  # fmt: skip


@pytest.mark.root
def test_real_devices_without_a_health_log_say_why(tmp_path: Path) -> None:
    with loop_device(tmp_path / "disk.img", 1 << 20) as loop:
        reading = health.read(Target(spec=loop, name=Path(loop).name, path=loop, kind="block",
                                     size_bytes=1 << 20))  # fmt: skip
    assert reading == {"drives": {Path(loop).name: {"unavailable": health._NO_LOG["loop"]}}}


def test_throttling_makes_the_verdict_with_its_figures_in_the_reason() -> None:
    counts = Throttling(t1_events=2, t1_s=41, t2_events=0, t2_s=0, warning_min=0,
                        critical_min=0, temp_after_c=70.85)  # fmt: skip
    verdict = judge_run(RunFacts(**QUIET, throttling=counts))
    assert verdict.verdict == "throttled"
    assert verdict.reason == "thermal throttling 2 times, 41 s at T1; 71 °C at the end"
    none = Throttling(t1_events=0, t1_s=0, t2_events=0, t2_s=0, warning_min=0, critical_min=0)
    assert judge_run(RunFacts(**QUIET, throttling=none)).verdict == "drive"
    assert judge_run(RunFacts(**QUIET, throttling=Throttling())).verdict == "drive"  # unknown
    warm = Throttling(warning_min=3, temp_after_c=80)
    assert throttled_reason(warm) == "3 min above its warning temperature; 80 °C at the end"
    # the CPU was the limit: the throttling is part of why, the verdict stays cpu
    cpu = judge_run(RunFacts(cpu_bound=True, cpu_reason="fio worker at 99 %", throttling=counts))
    assert cpu.verdict == "cpu" and "thermal throttling 2 times" in (cpu.reason or "")
    busy = judge_run(RunFacts(**QUIET, steal_pct=30.0, throttling=counts))
    assert busy.verdict == "throttled" and "CPU steal 30 %" in (busy.reason or "")


def test_a_cliff_says_its_likely_cause() -> None:
    assert cliff_cause(True, True, 5e9).startswith("thermal")
    assert cliff_cause(False, True, 5e9).startswith("CPU")
    assert cliff_cause(False, False, 42.4e9) == (
        "cache: no throttling; the device had written 42.4 GB when it fell"
    )
    assert cliff_cause(None, False, 1e9).startswith("cache or thermal: ")
    # a job that had written nothing filled no write cache
    assert cliff_cause(False, False, 0).startswith("not a write cache: ")
    assert "the drive did not throttle" in cliff_cause(False, False, 0)


_NVME = """import json, pathlib, sys
here = pathlib.Path(__file__).parent
calls = here / "calls"
number = len(calls.read_text().splitlines()) if calls.exists() else 0
with open(calls, "a") as handle:
    handle.write(" ".join(sys.argv[1:]) + "\\n")
if sys.argv[1:2] != ["smart-log"] or sys.argv[3:] != ["-o", "json"]:
    sys.exit("unexpected: " + " ".join(sys.argv[1:]))
answers = json.loads((here / "answers.json").read_text())
print(json.dumps(answers[min(number, len(answers) - 1)]))
"""


@pytest.mark.root
@pytest.mark.fio
def test_a_run_whose_drive_throttled_is_throttled_and_one_that_did_not_is_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs of a writing job on a real loop device, taken for an NVMe drive: a stand-in
    nvme answers its health log, the counters moving during the first run only."""
    cold = _log()["log"]
    hot = {**cold, "temperature": 344, "thm_temp1_trans_count": 7, "thm_temp1_total_time": 141,
           "data_units_written": 1000 + 230}  # fmt: skip
    bin_folder = _stand_in(tmp_path / "bin", "nvme", _NVME)
    # before the first run, after it; the same ever after
    (bin_folder / "answers.json").write_text(json.dumps([cold, hot]))
    monkeypatch.setenv("PATH", f"{bin_folder}{os.pathsep}{os.environ['PATH']}")
    suite = suite_file(tmp_path, "writes", "{rw: write, bs: 1m, iodepth: 4, runtime: 10, "
                       "io_size: 56m}", defaults="{size: 64m}")  # fmt: skip
    with loop_device(tmp_path / "disk.img", 64 << 20) as loop:
        name = Path(loop).name
        real = health.transport_of

        def as_nvme(disk: str, sys_root: Path) -> str:  # the loop device taken for an NVMe drive
            return "pcie" if disk == name else real(disk, sys_root)

        monkeypatch.setattr(health, "transport_of", as_nvme)
        run = ssdcompare.run_sweep([loop], suite=str(suite), out=tmp_path / "r", repeat=2)
    assert run.complete
    calls = (bin_folder / "calls").read_text().splitlines()
    assert calls == [f"smart-log /dev/{name} -o json"] * 4  # before and after each run
    frame = run.frame().sort_values("repeat")
    first, second = frame.iloc[0], frame.iloc[1]
    assert first["verdict"] == "throttled"
    assert first["verdict_reason"].startswith(
        "thermal throttling 2 times, 41 s at T1; 71 °C at the end"
    )
    assert first["throttle_events"] == 2 and first["throttle_s"] == 41
    assert first["temp_before_c"] == pytest.approx(44.85)
    assert first["temp_after_c"] == first["temp_max_c"] == pytest.approx(70.85)
    assert first["device_bytes_written"] == 230 * 512_000
    stored = json.loads((run.path / "runs" / name / first["job"] / "r1" / "probes.json")
                        .read_text())["probes"]["health"]  # fmt: skip
    host = (stored["after"]["drives"][name]["host_sectors"]["written"]
            - stored["before"]["drives"][name]["host_sectors"]["written"]) * 512  # fmt: skip
    assert host >= 56 << 20  # every byte fio wrote reached the drive's queue
    assert first["write_amplification"] == pytest.approx(230 * 512_000 / host)
    assert second["verdict"] != "throttled" and second["throttle_events"] == 0
    assert second["temp_before_c"] == second["temp_after_c"] == pytest.approx(70.85)
    assert math.isnan(second["device_bytes_written"]) or second["device_bytes_written"] == 0
    _the_report_shows_it(run.report, tmp_path / "browser", first["job"], name)


def _the_report_shows_it(report: Path | None, scratch: Path, job: str, name: str) -> None:
    """The report a reader opens: the throttled run's cell hatched with its reason, the
    health table with both runs' temperatures, the throttled one marked."""
    assert report is not None
    scratch.mkdir()
    found = measure(report.read_text(), """
        var rows = Array.from(document.querySelectorAll('#health-table tbody tr'));
        var cells = Array.from(document.querySelectorAll('#results td.dist'));
        var section = document.getElementById('health');
        return {rows: rows.map(function (r) { return {text: r.innerText,
                  throttled: r.classList.contains('throttled'), title: r.title}; }),
                hatched: cells.map(function (c) { return [c.title,
                  getComputedStyle(c).backgroundImage.indexOf('gradient') >= 0]; }),
                visible: section !== null && section.getBoundingClientRect().height > 0};
    """, 1280, scratch)  # fmt: skip
    assert found["visible"]
    assert [row["throttled"] for row in found["rows"]] == [True, False]
    assert "45 °C" in found["rows"][0]["text"] and "71 °C" in found["rows"][0]["text"]
    assert "2 times, 41 s" in found["rows"][0]["text"] and "none" in found["rows"][1]["text"]
    assert "thermal throttling 2 times, 41 s at T1" in found["rows"][0]["title"]
    # one repeat of two throttled: the job's result is hatched, its reason on hover
    assert found["hatched"] and all(hatched for _, hatched in found["hatched"])
    assert any("throttled: thermal throttling" in title for title, _ in found["hatched"])


@pytest.mark.root
@pytest.mark.fio
def test_preconditioning_stores_what_the_probes_read(tmp_path: Path) -> None:
    suite = suite_file(tmp_path, "reads", "{rw: randread, bs: 4k, runtime: 1, "
                       "extra: {rate_iops: 300}}")  # fmt: skip
    with loop_device(tmp_path / "disk.img", 16 << 20) as loop:
        run = ssdcompare.run_sweep(loop, suite=str(suite), out=tmp_path / "r",
                                   precondition="fill,workload", report=False)  # fmt: skip
    assert run.complete
    name = Path(loop).name
    folder = run.path / "precondition" / name
    stored = [
        json.loads(path.read_text())
        for path in [folder / "fill" / "probes.json", *folder.glob("*/round-*/probes.json")]
    ]
    assert len(stored) >= 6  # the fill and at least 5 rounds
    for readings in stored:
        assert readings["format_version"] == probes.FORMAT
        fill_writes = readings["probes"]["diskstats"]
        assert set(fill_writes["before"]["devices"]) == {name}
        assert readings["probes"]["health"]["before"]["drives"][name]["unavailable"]
    fill = stored[0]["probes"]["diskstats"]
    written = fill["after"]["devices"][name][6] - fill["before"]["devices"][name][6]
    assert written * 512 >= 2 * (16 << 20)  # the fill wrote the device twice


def test_a_watch_that_hangs_never_holds_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    release = threading.Event()

    def stuck() -> dict[str, Any]:
        release.wait(5)
        return {"late": True}

    probe = Probe("stuck", (ProbeColumn("s", "float", "", "a test probe"),), lambda t: {},
                  lambda *a: {}, lambda t: stuck, 0.01)  # fmt: skip
    watch = Watch(_target(), [probe], time.monotonic())
    watch.start()
    time.sleep(0.1)
    started = time.monotonic()
    assert watch.stop() == {"stuck": []}
    assert time.monotonic() - started < 1.0
    release.set()  # its late reading is not the run's
    time.sleep(0.05)
    assert watch.stop() == {"stuck": []}


def test_a_recorded_cliff_without_a_health_log_cannot_rule_out_thermal(tmp_path: Path) -> None:
    from test_plot import CLIFF_DEVICE, CLIFF_JOB, with_a_cliff

    frame = ssdcompare.load(with_a_cliff(tmp_path))
    mine = frame[(frame["job"] == CLIFF_JOB) & (frame["label"] == CLIFF_DEVICE)]
    assert set(mine["cliff_s"]) == {7.0}
    assert all(cause.startswith("cache or thermal: ") for cause in mine["cliff_cause"])
    others = frame[frame["cliff_s"].isna()]
    assert others["cliff_cause"].isna().all() and others["cliff_written_bytes"].isna().all()


def test_a_cliff_while_the_drive_throttled_is_said_to_be_thermal(tmp_path: Path) -> None:
    """The recorded cliff (a real run's logs) on a drive whose NVMe log counted throttling over
    the run: the cliff's cause is the heat, with the throttled verdict beside it."""
    from test_plot import CLIFF_DEVICE, CLIFF_JOB, with_a_cliff

    folder = with_a_cliff(tmp_path)
    cold = {"tool": "nvme-cli", "log": _log()["log"], "transport": "pcie",
            "host_sectors": {"read": 0, "written": 0}}  # fmt: skip
    hot = {**cold, "log": {**cold["log"], "temperature": 358, "thm_temp2_trans_count": 1,
                           "thm_temp2_total_time": 5}}  # fmt: skip
    stored = {"format_version": 1, "seconds": 12.0, "probes": {"health": {
        "before": {"drives": {"nvme0n1": cold}}, "after": {"drives": {"nvme0n1": hot}},
        "during": []}}}  # fmt: skip
    for run in folder.glob(f"runs/{CLIFF_DEVICE}/{CLIFF_JOB}/r*"):
        (run / "probes.json").write_text(json.dumps(stored))
    frame = ssdcompare.load(folder)
    mine = frame[(frame["job"] == CLIFF_JOB) & (frame["label"] == CLIFF_DEVICE)]
    assert len(mine) and set(mine["cliff_s"]) == {7.0}
    assert set(mine["cliff_cause"]) == {
        "thermal: the drive throttled during the run (its health log counted it)"
    }
    # throttled (or CPU-bound: the recorded run's own CPU figures decide), the throttling said
    assert set(mine["verdict"]) <= {"throttled", "cpu"} and set(mine["throttle_events"]) == {1}
    assert all("thermal throttling 1 time, 5 s at T2" in r for r in mine["verdict_reason"])


def test_a_counter_is_a_whole_number_from_0_below_2_63_else_unknown() -> None:
    for value, read in ((True, None), (False, None), (-5, None), (" -5", None), ("²", None),
                        ("5", 5), (" 7 ", 7), (5.0, 5), (6.5, None), (2**63 - 1, 2**63 - 1),
                        (2**63, None), (str(2**100), None), ("9" * 5000, None),
                        ({"a": 1}, None)):  # fmt: skip
        assert drivelog.counter(value) == read, value
    assert drivelog.nvme_fields({"temperature": 318, "thm_temp1_trans_count": True,
                                 "thm_temp2_trans_count": -1}) == {"temperature": 318}  # fmt: skip
    # a log going -5 -> 0 or false -> true is no throttling, nor none: it is not known
    for first, last in ((-5, 0), (False, True)):
        values = _columns(_log(thm_temp1_trans_count=first), _log(thm_temp1_trans_count=last))
        assert values["throttle_t1_events"] is None and values["throttle_events"] is None
        assert values["throttle_t1_s"] == 0  # the others are still read
    # the host's sectors: a side missing, or not a count, makes the amplification unknown
    after = _log(data_units_written=1230, written=200_000)
    assert _columns(_log(), after)["write_amplification"] is not None
    for broken in ({"read": 0}, {"read": 0, "written": -1}, {"read": 0, "written": True}):
        values = _columns({**_log(), "host_sectors": broken}, after)
        assert values["write_amplification"] is None
        assert values["device_bytes_written"] == 230 * 512_000


def _columns(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The run's health columns from one NVMe drive's readings before and after it."""
    return probes.columns_of({"format_version": 1, "seconds": 10.0, "probes": {"health": {
        "before": {"drives": {"nvme0n1": before}}, "after": {"drives": {"nvme0n1": after}},
        "during": []}}})  # fmt: skip


def _read_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str, script: str, answer: str = ""
) -> dict[str, Any]:
    """health.read of a drive taken for an NVMe drive nvme0n1 (tool "nvme") or a SATA drive
    sda ("smartctl") whose stand-in tool runs `script`, `answer` beside it."""
    folder = _stand_in(tmp_path / "bin", tool, script)
    (folder / "answer.txt").write_text(answer)
    monkeypatch.setenv("PATH", str(folder))
    disk, transport = ("nvme0n1", "pcie") if tool == "nvme" else ("sda", "sata")
    sys_root = tmp_path / "sys"
    (sys_root / "class" / "block" / disk).mkdir(parents=True, exist_ok=True)
    (sys_root / "class" / "block" / disk / "stat").write_text(
        "10 0 80 5 20 0 160 7 0 9 12 0 0 0 0\n"
    )
    monkeypatch.setattr(health, "disk_of", lambda part, sys_root: disk)
    monkeypatch.setattr(health, "transport_of", lambda disk, sys_root: transport)
    return health.read(_target(), sys_root)["drives"][disk]


_ANSWER = """import pathlib, sys
sys.stdout.write((pathlib.Path(__file__).parent / "answer.txt").read_text())
"""


def _whole_numbers(value: object) -> list[int]:
    if isinstance(value, dict):
        return [n for item in value.values() for n in _whole_numbers(item)]
    if isinstance(value, list):
        return [n for item in value for n in _whole_numbers(item)]
    return [value] if isinstance(value, int) else []


def test_figures_no_drive_reports_are_unknown_and_never_stored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = drivelog.nvme_fields({"temperature": 65535, "percent_used": 10**19,
                                "data_units_written": 10**20, "data_units_read": str(2**100),
                                "media_errors": 1e300, "thm_temp1_trans_count": 3})  # fmt: skip
    assert log == {"thm_temp1_trans_count": 3}
    assert drivelog.nvme_fields({"temperature": 473, "percent_used": 255}) == {
        "temperature": 473, "percent_used": 255}  # 199.85 °C; 255 % (NVMe's most)  # fmt: skip
    assert drivelog.nvme_fields({"temperature": 474, "percent_used": 256}) == {}
    sas = {
        "temperature": {"current": 1e300},
        "scsi_error_counter_log": {
            "write": {"gigabytes_processed": "1e30"},
            "read": {"gigabytes_processed": "1e400"},
        },
    }
    with pytest.raises(Unavailable, match="neither a temperature nor counters"):
        drivelog.smartctl_fields(sas)
    # stored readings are checked again: an older or damaged probes.json shows no such figure
    values = _columns(_log(temperature=65535, percent_used=10**19),
                      _log(temperature=65535, percent_used=10**19))  # fmt: skip
    assert values["temp_before_c"] is None and values["percent_used"] is None
    # a 128-bit counter of 2**100: left out, so the probes.json it goes to stays readable
    answer = json.dumps({**_log()["log"], "data_units_written": str(2**100),
                         "data_units_read": str(2**128 - 1)})  # fmt: skip
    reading = _read_through(tmp_path, monkeypatch, "nvme", _ANSWER, answer)
    assert reading["log"]["temperature"] == 318
    assert "data_units_written" not in reading["log"] and "data_units_read" not in reading["log"]
    assert reading["host_sectors"] == {"read": 80, "written": 160}
    assert all(0 <= number < 2**63 for number in _whole_numbers(reading))


def test_a_log_that_cannot_be_read_says_why_for_its_drive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # what raised before is now read: an odd counter is unknown, an odd smartctl section ignored
    odd = json.dumps({**_log()["log"], "thm_temp1_trans_count": "²"})
    reading = _read_through(tmp_path, monkeypatch, "nvme", _ANSWER, odd)
    assert "thm_temp1_trans_count" not in reading["log"] and reading["log"]["temperature"] == 318
    sata = json.dumps(
        {
            "smartctl": [1],
            "temperature": {"current": 30},
            "scsi_error_counter_log": {"write": {"gigabytes_processed": "1e400"}},
        }
    )
    reading = _read_through(tmp_path, monkeypatch, "smartctl", _ANSWER, sata)
    assert reading["log"] == {"temperature_c": 30.0}
    failed = json.dumps({"smartctl": {"exit_status": 2, "messages": 5}})
    reading = _read_through(tmp_path, monkeypatch, "smartctl", _ANSWER, failed)
    assert reading == {"unavailable": "smartctl could not read the drive: no reason given"}
    deep = _read_through(tmp_path, monkeypatch, "nvme", _ANSWER, "[" * 100_000 + "]" * 100_000)
    assert deep == {"unavailable": "nvme-cli printed JSON nested too deeply to be read"}
    # whatever else goes wrong reading one drive's log is that drive's reason
    for error, words in ((MemoryError(), "MemoryError"),
                         (OverflowError("int too large"), "OverflowError: int too large"),
                         (AttributeError("'list' object has no attribute 'get'"),
                          "AttributeError: 'list' object has no attribute 'get'")):  # fmt: skip

        def failing(device: str, error: Exception = error) -> dict[str, Any]:
            raise error

        monkeypatch.setattr(health, "nvme_log", failing)
        reading = _read_through(tmp_path, monkeypatch, "nvme", _ANSWER)
        assert reading == {"unavailable": f"the log could not be read: {words}"}
    values = _columns(reading, reading)
    assert values["health_unavailable"] == (
        "nvme0n1: not available: the log could not be read: AttributeError: 'list' object has "
        "no attribute 'get'"
    )


def test_an_hwmon_value_no_drive_reports_is_no_temperature(tmp_path: Path) -> None:
    path = tmp_path / "temp1_input"
    for text, read in (("47850\n", 47.85), ("-5000", -5.0), ("²", None), ("", None),
                       ("4.5e4", None), ("300000", None), ("-274000", None),
                       ("9" * 400, None), ("\udcff", None)):  # fmt: skip
        path.write_text(text, errors="surrogateescape")
        assert drivelog.hwmon_celsius(path) == read, text
    assert drivelog.hwmon_celsius(tmp_path / "gone") is None


def _gone(pid: int) -> bool:
    """Whether process `pid` has ended (a zombie waiting to be reaped has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


_ENDLESS = """import os, pathlib, sys
(pathlib.Path(__file__).parent / "pid").write_text(str(os.getpid()))
chunk = b"{" * 65536
while True:
    sys.stdout.buffer.write(chunk)
"""


def test_a_tool_printing_without_end_is_read_up_to_the_limit_and_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    reading = _read_through(tmp_path, monkeypatch, "nvme", _ENDLESS)
    assert reading == {"unavailable": "nvme-cli printed more than 1 MiB: no health log"}
    assert _gone(int((tmp_path / "bin" / "pid").read_text()))
    returncode, out, _ = drivelog.run_bounded([str(tmp_path / "bin" / "nvme")], 60, 1000)
    assert len(out) == 1001 and returncode == -1  # never more than the limit read


_LEAVES_A_CHILD = """import pathlib, subprocess, sys
here = pathlib.Path(__file__).parent
with open(here / "calls", "a") as calls:
    calls.write(" ".join(sys.argv[1:]) + "\\n")
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(1000)"])
(here / "child").write_text(str(child.pid))
"""


def test_a_tool_whose_child_holds_its_output_is_killed_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(drivelog, "NVME_TIMEOUT_S", 2.0)
    reading = _read_through(tmp_path, monkeypatch, "nvme", _LEAVES_A_CHILD)
    assert reading == {"unavailable": "nvme-cli did not answer within 2 s"}
    child = int((tmp_path / "bin" / "child").read_text())
    wait_for(lambda: _gone(child), "the tool's child to be killed")


_HANGS = """import pathlib, sys, time
with open(pathlib.Path(__file__).parent / "calls", "a") as calls:
    calls.write(" ".join(sys.argv[1:]) + "\\n")
time.sleep(1000)
"""


def test_a_tool_that_did_not_answer_a_drive_is_not_asked_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(drivelog, "NVME_TIMEOUT_S", 1.0)
    first = _read_through(tmp_path, monkeypatch, "nvme", _HANGS)
    assert first == {"unavailable": "nvme-cli did not answer within 1 s"}
    again = _read_through(tmp_path, monkeypatch, "nvme", _HANGS)
    assert again == {"unavailable": "nvme-cli did not answer within 1 s earlier in this sweep"}
    calls = (tmp_path / "bin" / "calls").read_text().splitlines()
    assert calls == ["smart-log /dev/nvme0n1 -o json"]  # asked once
    assert _columns(again, again)["health_unavailable"] == (
        "nvme0n1: not available: nvme-cli did not answer within 1 s earlier in this sweep"
    )
    with pytest.raises(Unavailable, match="^nvme-cli did not answer within 1 s$"):
        drivelog.nvme_log("/dev/nvme1n1")  # another drive is asked


def test_the_report_names_a_drive_without_a_log_once() -> None:
    from ssdcompare.report.health import health_section

    runs = pd.DataFrame({
        "status": ["ok", "ok", "ok"], "sweep": ["s"] * 3, "job": ["j"] * 3, "repeat": [1, 1, 2],
        "label": ["loop0", "scratch", "scratch"], "health_drives": [None] * 3,
        "health_unavailable": ["loop0: not available: a loop device has no health log",
                               "sda: not available: nvme-cli is not installed", None],
    })  # fmt: skip
    section = health_section(runs)
    assert section is not None and section["notes"] == [
        "loop0: not available: a loop device has no health log",
        "sda (for scratch): not available: nvme-cli is not installed",
    ]


def test_a_cliff_on_a_drive_whose_log_counts_no_throttling_says_so(tmp_path: Path) -> None:
    assert cliff_cause(None, False, 1e9, log_read=True) == (
        "cache or thermal: the job had written 1.0 GB when it fell; its health log does not "
        "count throttling"
    )
    assert "; its health log does not count throttling, so" in cliff_cause(None, False, 0, True)
    from test_plot import CLIFF_DEVICE, CLIFF_JOB, with_a_cliff

    folder = with_a_cliff(tmp_path)
    sata = {"tool": "smartctl", "log": {"temperature_c": 34.0}, "transport": "sata",
            "host_sectors": {"read": 0, "written": 0}}  # fmt: skip
    stored = {"format_version": 1, "seconds": 12.0, "probes": {"health": {
        "before": {"drives": {"sda": sata}}, "after": {"drives": {"sda": sata}},
        "during": []}}}  # fmt: skip
    for run in folder.glob(f"runs/{CLIFF_DEVICE}/{CLIFF_JOB}/r*"):
        (run / "probes.json").write_text(json.dumps(stored))
    frame = ssdcompare.load(folder)
    mine = frame[(frame["job"] == CLIFF_JOB) & (frame["label"] == CLIFF_DEVICE)]
    assert set(mine["health_drives"]) == {"sda"} and set(mine["cliff_s"]) == {7.0}
    assert all(cause.startswith("cache or thermal: ") for cause in mine["cliff_cause"])
    assert all(cause.endswith("its health log does not count throttling")
               for cause in mine["cliff_cause"])  # fmt: skip
