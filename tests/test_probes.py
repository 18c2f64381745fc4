"""Probes read around each run: the block layer's own counters (diskstats) on a real loop
device and under a file target, stored in the run's probes.json and shown as frame columns;
a probe that fails, or a damaged probes.json, never costs a run."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from pathlib import Path

import pytest
from blockdevs import loop_device
from suitefiles import suite_file

import ssdcompare
from ssdcompare.results.files import LIMITS
from ssdcompare.target import probes
from ssdcompare.target.probes import diskstats
from ssdcompare.target.probes.probe import Probe, ProbeColumn
from ssdcompare.target.probes.watch import MAX_SAMPLES, Watch

DISK_COLUMNS = [column.name for column in diskstats.PROBE.columns]


def _reads(folder: Path) -> Path:
    return suite_file(folder, "reads", "{rw: randread, bs: 4k, iodepth: 4, runtime: 1}",
                      defaults="{size: 8m}")  # fmt: skip


@pytest.mark.root
@pytest.mark.fio
def test_the_block_layer_counts_what_reached_a_loop_device(tmp_path: Path) -> None:
    with loop_device(tmp_path / "disk.img", 16 << 20) as loop:
        run = ssdcompare.run_sweep([loop], suite=str(_reads(tmp_path)), out=tmp_path / "r",
                                   read_only=True, report=False)  # fmt: skip
        name = Path(loop).name
    assert run.complete
    stored = json.loads(next((tmp_path / "r" / "runs").glob("*/*/r1/probes.json")).read_text())
    assert set(stored["probes"]["diskstats"]["before"]["devices"]) == {name}
    row = run.frame().iloc[0]
    assert row["disk_devices"] == name
    # every byte fio read reached the device (and the ramp's too); nothing wrote to it
    assert row["disk_read_bytes"] >= row["io_bytes"] > 0
    assert row["disk_read_ios"] * 4096 == row["disk_read_bytes"]  # 4k reads, none merged
    assert row["disk_write_ios"] == 0 and row["disk_write_bytes"] == 0
    assert 0 < row["disk_busy_pct"] <= 100 and row["disk_mean_inflight"] > 0


@pytest.mark.fio
def test_a_file_target_is_counted_on_its_filesystems_device_or_not_at_all(
    tmp_path: Path,
) -> None:
    run = ssdcompare.run_sweep([str(tmp_path / "t.img")], suite=str(_reads(tmp_path)),
                               out=tmp_path / "r", size="8m", report=False)  # fmt: skip
    assert run.complete
    row = run.frame().iloc[0]
    stored = json.loads(next((tmp_path / "r" / "runs").glob("*/*/r1/probes.json")).read_text())
    before = stored["probes"]["diskstats"]["before"]
    if before is None:  # a filesystem without a block device (tmpfs): nothing to count
        assert all(pd_missing(row[c]) for c in DISK_COLUMNS)
    else:
        assert row["disk_devices"] == "+".join(sorted(before["devices"]))
        assert row["disk_read_ios"] >= 0 and not math.isnan(row["disk_busy_pct"])


def pd_missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


@pytest.mark.fio
def test_a_probe_that_fails_costs_no_run_and_its_columns_are_unknown(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(target: object) -> dict[str, object]:
        raise OSError("the sensor is gone")

    failing = Probe("failing", (ProbeColumn("failing_value", "float", "", "a test probe"),),
                    broken, lambda before, after, seconds: {})  # fmt: skip
    monkeypatch.setattr(probes, "PROBES", (*probes.PROBES, failing))
    run = ssdcompare.run_sweep([str(tmp_path / "t.img")], suite=str(_reads(tmp_path)),
                               out=tmp_path / "r", size="8m", report=False)  # fmt: skip
    assert run.complete
    stored = json.loads(next((tmp_path / "r" / "runs").glob("*/*/r1/probes.json")).read_text())
    assert stored["probes"]["failing"]["before"] == {"error": "OSError: the sensor is gone"}
    assert run.frame().iloc[0]["status"] == "ok"


_V = {"format_version": probes.FORMAT}
_COUNTS = {"before": {"devices": {"sda": [1] * 17}}, "after": {"devices": {"sda": [5] * 17}}}


@pytest.mark.parametrize("stored", [
    None, [], {**_V, "probes": "x"},
    {**_V, "seconds": 1.0, "probes": {"diskstats": {"before": {}}}},
    {**_V, "seconds": -1, "probes": {}},
    {**_V, "seconds": 1.0, "probes": {"diskstats": {"before": {"devices": {"sda": [5] * 17}},
                                                    "after": {"devices": {"sda": [1] * 17}}}}},
    {**_V, "seconds": 1.0, "probes": {"diskstats": {"before": {"devices": {"sda": ["a"]}},
                                                    "after": {"devices": {"sda": [1]}}}}},
    {**_V, "seconds": 1.0, "probes": {"diskstats": {"before": {"devices": {"sda": [False] * 17}},
                                                    "after": {"devices": {"sda": [True] * 17}}}}},
    # a format this version does not know, or none: not read as if it were this one
    {"format_version": 99, "seconds": 1.0, "probes": {"diskstats": _COUNTS}},
    {"format_version": True, "seconds": 1.0, "probes": {"diskstats": _COUNTS}},
    {"seconds": 1.0, "probes": {"diskstats": _COUNTS}},
])  # fmt: skip
def test_a_damaged_or_impossible_reading_is_unknown_never_an_error(stored: object) -> None:
    values = probes.columns_of(stored)
    assert set(values) == {c.name for c in probes.probe_columns()}
    assert all(value is None for value in values.values())


def test_a_counter_an_older_kernel_does_not_have_is_unknown_not_zero() -> None:
    """Kernels before 4.18 print 11 fields (no discards), before 5.5 15 (no flushes)."""
    for fields, known, unknown in ((11, "disk_read_ios", "disk_discard_ios"),
                                   (15, "disk_discard_ios", "disk_flush_ios")):  # fmt: skip
        pair = {"before": {"devices": {"sda": [1] * fields}},
                "after": {"devices": {"sda": [3] * fields}}}  # fmt: skip
        values = probes.columns_of({**_V, "seconds": 1.0, "probes": {"diskstats": pair}})
        assert values[known] == 2 and values[unknown] is None, fields


def test_counters_become_the_runs_counts() -> None:
    before = {"devices": {"sda": [10, 0, 80, 5, 20, 1, 160, 7, 0, 100, 300] + [0] * 6}}
    after = {"devices": {"sda": [110, 0, 880, 9, 20, 1, 160, 7, 0, 600, 2300] + [0] * 6}}
    values = probes.columns_of({**_V, "seconds": 1.0, "probes": {
        "diskstats": {"before": before, "after": after}}})  # fmt: skip
    assert values["disk_read_ios"] == 100 and values["disk_read_bytes"] == 800 * 512
    assert values["disk_write_ios"] == 0
    assert values["disk_busy_pct"] == 50.0  # 500 ms of 1,000 with requests in flight
    assert values["disk_mean_inflight"] == 2.0  # 2,000 ms of queue time over 1,000 ms


@pytest.mark.fio
def test_a_new_probe_is_one_module_and_one_registered_line(tmp_path: Path) -> None:
    """A probe defined outside the package and added to PROBES, as a new module and its line
    would, before anything reads results: a real sweep stores its readings and the frame has
    its column, with the value its `values` worked out from them, and no other code knows it."""
    module = tmp_path / "sizeprobe.py"
    module.write_text(
        "import os\n"
        "from ssdcompare.target.probes.probe import Probe, ProbeColumn\n"
        "def read(target):\n"
        "    return {'bytes': os.stat(target.path).st_size}\n"
        "def values(before, after, seconds):\n"
        "    return {'target_bytes_grown': after['bytes'] - before['bytes']}\n"
        "PROBE = Probe('size', (ProbeColumn('target_bytes_grown', 'float', 'B',\n"
        "              'the size of the target after the run less before'),), read, values)\n"
    )
    script = (
        "import sys\n"
        f"sys.path.insert(0, {str(tmp_path)!r})\n"
        "import sizeprobe\n"
        "from ssdcompare.target import probes\n"
        "probes.PROBES = (*probes.PROBES, sizeprobe.PROBE)\n"
        "import ssdcompare\n"
        f"run = ssdcompare.run_sweep([{str(tmp_path / 't.img')!r}], "
        f"suite={str(_reads(tmp_path))!r}, out={str(tmp_path / 'r')!r}, size='8m', "
        "report=False)\n"
        "frame = run.frame()\n"
        "print(run.complete, list(frame['target_bytes_grown']))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          check=False)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "[0.0]"]  # a file made before the run keeps its size
    stored = json.loads(next((tmp_path / "r" / "runs").glob("*/*/r1/probes.json")).read_text())
    assert stored["probes"]["size"]["before"] == {"bytes": 8 << 20}
    assert stored["probes"]["size"]["after"] == {"bytes": 8 << 20}


def _probe(name: str, read: object) -> Probe:
    return Probe(name, (ProbeColumn(f"{name}_x", "float", "", "a test probe"),), read,  # type: ignore[arg-type]
                 lambda before, after, seconds: {})  # fmt: skip


def test_the_block_layers_count_is_read_nearest_to_fio(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first probe (diskstats) is read last before the run and first after it, and the
    run's seconds are taken beside it: a slow probe (a drive's health tool) lies outside."""
    calls: list[str] = []
    slow = _probe("slow", lambda target: calls.append("slow") or time.sleep(0.3) or {})
    first = _probe("first", lambda target: calls.append("first") or {})
    monkeypatch.setattr(probes, "PROBES", (first, slow))
    before = probes.snapshot(None, before=True)  # type: ignore[arg-type]
    after = probes.snapshot(None, before=False)  # type: ignore[arg-type]
    assert calls == ["slow", "first", "first", "slow"]
    assert after["t_s"] - before["t_s"] < 0.3  # neither slow reading in the window


@pytest.mark.fio
def test_a_stop_while_the_probes_read_after_a_run_keeps_the_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while a probe reads after fio has finished (a drive's health tool can take
    seconds): the measured run is stored, with the probes read so far, and the sweep stops
    as interrupted."""
    answers = iter([{}])  # the reading before the run; the one after it is stopped

    def stopping(target: object) -> dict[str, object]:
        try:
            return next(answers)
        except StopIteration:
            raise KeyboardInterrupt from None

    monkeypatch.setattr(probes, "PROBES", (*probes.PROBES, _probe("stopping", stopping)))
    suite = suite_file(tmp_path, "two", "{rw: randread, bs: 4k, iodepth: 4, runtime: 1}",
                       "{rw: randread, bs: 4k, iodepth: 8, runtime: 1}",
                       defaults="{size: 8m}")  # fmt: skip
    run = ssdcompare.run_sweep([str(tmp_path / "t.img")], suite=str(suite), out=tmp_path / "r",
                               size="8m", report=False)  # fmt: skip
    assert run.outcome.interrupted and run.outcome.stop_reason == "Ctrl-C" and not run.complete
    assert [s.status for s in run.outcome.statuses] == ["ok"]  # counted as the sweep's own
    frame = run.frame()
    assert list(frame["status"]) == ["ok"]  # the second never ran
    (path,) = (tmp_path / "r" / "runs").glob("*/*/r1/probes.json")
    stored = json.loads(path.read_text())["probes"]
    said = {"error": "not read: the sweep was asked to stop"}
    # the probes read before the one stopped kept their readings
    assert stored["stopping"]["after"] == said
    assert stored["health"]["after"] != said and stored["diskstats"]["after"] != said


def test_a_long_watch_keeps_its_peak_in_a_bounded_number_of_readings() -> None:
    """Readings beyond MAX_SAMPLES are merged in pairs keeping each number's highest value;
    a run of days of four drives' temperatures stays far under what probes.json may hold."""
    probe = Probe("temps", (ProbeColumn("t", "float", "", "a test probe"),), lambda t: {},
                  lambda *a: {}, lambda t: (lambda: None), 5.0)  # fmt: skip
    watch = Watch(None, [probe], 0.0)  # type: ignore[arg-type]
    for second in range(0, 5 * 50_000, 5):  # about 3 days
        hot = 80.0 if second == 123_455 else 40.0 + (second % 7)
        watch._keep("temps", {"t_s": float(second), "reading": {"temperature_c": {
            f"nvme{n}n1": hot - n for n in range(4)}}})  # fmt: skip
    (samples,) = watch.stop().values()
    assert len(samples) <= MAX_SAMPLES
    assert max(s["reading"]["temperature_c"]["nvme0n1"] for s in samples) == 80.0
    assert [s["t_s"] for s in samples] == sorted(s["t_s"] for s in samples)
    assert len(json.dumps(samples, separators=(",", ":"))) < LIMITS["probes"] // 2
