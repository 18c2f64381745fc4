"""Running a sweep from Python: the same sweep, checks and results as the command line."""

from __future__ import annotations

from pathlib import Path

import pytest
from blockdevs import loop_device

import ssdcompare
from ssdcompare.errors import SsdcompareError
from ssdcompare.run.preflight import consent_names
from ssdcompare.target.devices import resolve_targets

SUITES = Path(__file__).parent / "suites"


@pytest.mark.root
@pytest.mark.fio
def test_run_sweep_from_python_then_resume_it(tmp_path: Path) -> None:
    seen: list[str] = []
    with loop_device(tmp_path / "disk.img", 64 << 20) as device:
        run = ssdcompare.run_sweep(
            [device], suite=str(SUITES / "tiny.yaml"), out=tmp_path / "results",
            runtime_s=1, progress=lambda p: seen.append(p.state),
        )  # fmt: skip
        again = ssdcompare.run_sweep(device, resume=run.path)
    assert run.complete and not run.outcome.interrupted
    assert seen == ["start", "ok"] * 3
    assert run.report == run.path / "report.html" and run.report.is_file()
    frame = run.frame()
    assert sorted(frame["job"].unique()) == ["randread-4k-qd1", "randwrite-4k-qd16",
                                             "read-128k-qd4"]  # fmt: skip
    assert (frame["status"] == "ok").all()
    assert frame["device"].unique().tolist() == [Path(device).name]
    # a resume of a finished sweep runs nothing again
    assert again.complete and again.outcome.statuses == [] and again.outcome.skipped_existing == 3


def test_run_sweep_says_what_is_wrong(tmp_path: Path) -> None:
    with pytest.raises(SsdcompareError, match="say which devices"):
        ssdcompare.run_sweep([])
    with pytest.raises(SsdcompareError, match="size"):
        ssdcompare.run_sweep([str(tmp_path / "t.img")], size="four gigs")
    with pytest.raises(SsdcompareError, match="repeat would change it"):
        ssdcompare.run_sweep(resume=tmp_path, repeat=3)
    with pytest.raises(SsdcompareError, match="unknown sweep choice.*repeats"):
        ssdcompare.run_sweep(["nvme0n1"], repeats=3)  # a typo is never ignored
    target = str(tmp_path / "t.img")
    for limit in (float("nan"), float("inf"), -1, 0):
        with pytest.raises(SsdcompareError, match="is not a time limit"):
            ssdcompare.run_sweep([target], size="1m", job_timeout_s=limit)
    with pytest.raises(SsdcompareError, match="progress must be a function"):
        ssdcompare.run_sweep([target], size="1m", progress=5)
    # strictly typed: a number is not consent, nor a string a number of repeats
    for wrong in ({"destroy_data": 1}, {"repeat": "2"}, {"out": 123}):
        with pytest.raises(SsdcompareError, match="run_sweep: .*Input should be"):
            ssdcompare.run_sweep([target], size="1m", **wrong)
    # a string names the devices it is consent for: "no" is none of them
    (resolved,) = resolve_targets([target], size_bytes=1 << 20)
    with pytest.raises(SsdcompareError, match="--destroy-data no: not a device of this sweep"):
        consent_names(["no"], [resolved])
    with pytest.raises(SsdcompareError, match="run_sweep: .*valid string"):
        ssdcompare.run_sweep([target, None], size="1m")
    with pytest.raises(SsdcompareError, match="--repeat must be from 1 to 1000"):
        ssdcompare.run_sweep([target], size="1m", repeat=10**6)
    assert not list(tmp_path.iterdir())  # nothing was started


@pytest.mark.root
@pytest.mark.fio
def test_run_sweep_keeps_the_guard(tmp_path: Path) -> None:
    with loop_device(tmp_path / "disk.img", 64 << 20) as device:
        with open(device, "r+b") as handle:  # a filesystem signature: ext4's magic number
            handle.seek(1024 + 56)
            handle.write(b"\x53\xef")
        with pytest.raises(SsdcompareError, match="--destroy-data"):
            ssdcompare.run_sweep([device], suite=str(SUITES / "tiny.yaml"), runtime_s=1,
                                 out=tmp_path / "results")  # fmt: skip
    assert not (tmp_path / "results").exists()
