"""Resume trusts nothing: the device must be the one the sweep started on, --destroy-data must be
given again, the jobfiles must be the planned ones, and options that would change the sweep are
refused rather than ignored."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from blockdevs import loop_device

from ssdcompare.results.store import ResultsDir
from ssdcompare.run import sweep
from ssdcompare.run.plan import PlanOptions, make_plan
from ssdcompare.run.sweep import Progress

SUITES = Path(__file__).parent / "suites"


def ssdcompare(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ssdcompare", *args], capture_output=True,
                          text=True, timeout=300, check=False)  # fmt: skip


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def stop_before(run_number: int) -> Callable[[Progress], None]:
    """A progress callback that acts as Ctrl-C just before the given run starts."""

    def progress(event: Progress) -> None:
        if event.state == "start" and event.index == run_number:
            raise KeyboardInterrupt

    return progress


def read_then_write(tmp_path: Path) -> Path:
    suite = tmp_path / "read-then-write.yaml"
    suite.write_text(
        "name: read-then-write\ndescription: a read first, then a write\n"
        "defaults: {runtime: 1, size: 16m}\n"
        "workloads:\n  - {rw: randread, bs: 4k}\n  - {rw: randwrite, bs: 4k}\n"
    )
    return suite


def interrupted_sweep(
    tmp_path: Path, suite: Path, devices: str, stop_at: int, destroy_data: bool = False,
    size: int | None = None,
) -> Path:  # fmt: skip
    """A sweep stopped as if by Ctrl-C before run number `stop_at`; returns its folder."""
    plan = make_plan(str(suite), devices, PlanOptions(size_bytes=size), require_fio=True)
    results, _ = sweep.start(plan, tmp_path / "results", destroy_data=destroy_data,
                             command_line=["test"])  # fmt: skip
    with pytest.raises(KeyboardInterrupt):
        sweep.run(plan, results, progress=stop_before(stop_at))
    return results.path


def engines_suite(tmp_path: Path) -> Path:
    """A suite whose first job names its own engine and whose second uses the default."""
    suite = tmp_path / "engines.yaml"
    suite.write_text(
        "name: engines\ndescription: d\ndefaults: {runtime: 1, size: 16m}\nworkloads:\n"
        "  - {id: null-engine, rw: randread, bs: 4k, ioengine: null}\n"
        "  - {rw: randread, bs: 4k}\n"
    )
    return suite


def make_ext4_image(path: Path, size: int = 64 << 20) -> None:
    with open(path, "wb") as handle:
        handle.truncate(size)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "precious", str(path)], check=True)


@pytest.mark.root
@pytest.mark.fio
def test_resume_refuses_a_different_disk_at_the_same_path(tmp_path: Path) -> None:
    with loop_device(tmp_path / "blank.img", 64 << 20) as loop:
        results = interrupted_sweep(tmp_path, read_then_write(tmp_path), loop, stop_at=2)
        # the same /dev/loopN now holds someone's filesystem
        subprocess.run(["losetup", "--detach", loop], check=True)
        other = tmp_path / "someone-else.img"
        make_ext4_image(other)
        before = sha256(other)
        subprocess.run(["losetup", "--direct-io=on", loop, str(other)], check=True)
        for extra in ([], ["--destroy-data"]):
            done = ssdcompare("sweep", "--resume", str(results), *extra)
            assert done.returncode == 2, done.stderr
            assert "not the same device" in done.stderr and "backing file" in done.stderr
            assert "ext4" in done.stderr and "Traceback" not in done.stderr
    assert sha256(other) == before
    write_run = results / "runs" / Path(loop).name / "randwrite-4k-qd1" / "r1"
    assert not write_run.exists()


@pytest.mark.root
@pytest.mark.fio
def test_destroy_data_must_be_given_again_on_resume(tmp_path: Path) -> None:
    image = tmp_path / "ext4.img"
    make_ext4_image(image)
    with loop_device(tmp_path / "unused.img", 1 << 20) as placeholder:
        subprocess.run(["losetup", "--detach", placeholder], check=True)
        subprocess.run(["losetup", "--direct-io=on", placeholder, str(image)], check=True)
        loop = placeholder
        results = interrupted_sweep(tmp_path, read_then_write(tmp_path), loop, stop_at=2,
                                    destroy_data=True)  # fmt: skip
        assert json.loads((results / "manifest.json").read_text())["destroy_data"] is True
        before = sha256(image)
        refused = ssdcompare("sweep", "--resume", str(results))
        assert refused.returncode == 2
        assert "ext4" in refused.stderr and "--destroy-data" in refused.stderr
        assert sha256(image) == before
        allowed = ssdcompare("sweep", "--resume", str(results), "--destroy-data")
        assert allowed.returncode == 0, allowed.stderr
        assert "overwriting" in allowed.stderr
    assert sha256(image) != before  # the write job ran once it was allowed


@pytest.mark.fio
def test_resume_renders_each_job_with_its_own_engine(tmp_path: Path) -> None:
    """A suite whose first job names an engine: the others keep the default on resume."""
    suite = engines_suite(tmp_path)
    results = interrupted_sweep(tmp_path, suite, str(tmp_path / "t.img"), stop_at=2,
                                size=16 << 20)  # fmt: skip
    manifest = ResultsDir.open(results).manifest
    assert manifest.ioengine in ("io_uring", "libaio")
    plan, _, _ = sweep.reopen(results)
    engines = {job.job_id: job.ioengine for job in plan.jobs}
    assert engines == {"null-engine": "null", "randread-4k-qd1": manifest.ioengine}
    done = ssdcompare("sweep", "--resume", str(results))
    assert done.returncode == 0, done.stderr
    jobfile = (results / "runs/t.img/randread-4k-qd1/r1/jobfile.fio").read_text()
    assert f"ioengine={manifest.ioengine}\n" in jobfile


@pytest.mark.fio
def test_a_format_1_manifest_no_longer_lends_the_first_jobs_engine(tmp_path: Path) -> None:
    suite = engines_suite(tmp_path)
    results = interrupted_sweep(tmp_path, suite, str(tmp_path / "t.img"), stop_at=2,
                                size=16 << 20)  # fmt: skip
    data = json.loads((results / "manifest.json").read_text())
    expected = data["ioengine"]
    for key in ("identities", "planned", "allowed_options"):
        del data[key]
    data.update(format_version=1, ioengine="null")  # what format 1 recorded: the first job's
    (results / "manifest.json").write_text(json.dumps(data))
    # an edited manifest is no longer the one signed: its device is named to resume it
    plan, _, _ = sweep.reopen(results, devices=[str(tmp_path / "t.img")])
    assert {job.job_id: job.ioengine for job in plan.jobs}["randread-4k-qd1"] == expected


@pytest.mark.fio
@pytest.mark.parametrize(
    ("option", "value"),
    [("--runtime", "5"), ("--suite", "quick"), ("--size", "8m"), ("--repeat", "2"),
     ("--read-only", None), ("--out", "elsewhere"), ("--allow-option", "bssplit")],
)  # fmt: skip
def test_resume_refuses_options_that_would_change_the_sweep(
    tmp_path: Path, option: str, value: str | None
) -> None:
    results = interrupted_sweep(tmp_path, read_then_write(tmp_path), str(tmp_path / "t.img"),
                                stop_at=2, size=16 << 20)  # fmt: skip
    done = ssdcompare("sweep", "--resume", str(results), option, *([value] if value else []))
    assert done.returncode == 2
    assert option in done.stderr and "--resume continues a sweep" in done.stderr
    assert not (results / "runs/t.img/randwrite-4k-qd1").exists()


@pytest.mark.fio
def test_resume_with_devices_continues_only_those(tmp_path: Path) -> None:
    results = interrupted_sweep(tmp_path, read_then_write(tmp_path),
                                f"{tmp_path / 'a.img'},{tmp_path / 'b.img'}", stop_at=2,
                                size=16 << 20)  # fmt: skip
    unknown = ssdcompare("sweep", "--resume", str(results), "--devices", "c.img")
    assert unknown.returncode == 2 and "not a target of this sweep" in unknown.stderr
    done = ssdcompare("sweep", "--resume", str(results), "--devices", "a.img")
    assert done.returncode == 0, done.stderr
    found = {p.parent.parent.name + "/" + p.parent.name
             for p in (results / "runs").glob("*/*/r1")}  # fmt: skip
    assert found == {"a.img/randread-4k-qd1", "a.img/randwrite-4k-qd1"}


@pytest.mark.fio
def test_resume_refuses_jobfiles_that_differ_from_the_planned_ones(tmp_path: Path) -> None:
    results = interrupted_sweep(tmp_path, read_then_write(tmp_path), str(tmp_path / "t.img"),
                                stop_at=2, size=16 << 20)  # fmt: skip
    data = json.loads((results / "manifest.json").read_text())
    data["planned"]["t.img"]["randwrite-4k-qd1"] = "0123456789abcdef"
    (results / "manifest.json").write_text(json.dumps(data))
    done = ssdcompare("sweep", "--resume", str(results), "--devices", str(tmp_path / "t.img"))
    assert done.returncode == 2 and "different jobfile than planned" in done.stderr


@pytest.mark.slow  # one of the longest: started early (tests/conftest.py)
@pytest.mark.fio
def test_a_manifest_not_signed_by_you_is_resumed_only_on_devices_you_name(
    tmp_path: Path,
) -> None:
    """A results folder from someone else (or edited) names the devices a resume writes: one
    pointed at a file of yours, without identities to check, must not write it unasked."""
    results = interrupted_sweep(tmp_path, read_then_write(tmp_path), str(tmp_path / "t.img"),
                                stop_at=2, size=16 << 20)  # fmt: skip
    victim = tmp_path / "victim.db"
    victim.write_bytes(os.urandom(16 << 20))
    before = hashlib.sha256(victim.read_bytes()).hexdigest()
    data = json.loads((results / "manifest.json").read_text())
    data["targets"][0].update(spec=str(victim), path=str(victim))
    data["identities"], data["created_files"] = {}, {}
    (results / "manifest.json").write_text(json.dumps(data))
    done = ssdcompare("sweep", "--resume", str(results))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "is not signed by your ssdcompare" in done.stderr
    assert f"{victim} ({victim})" in done.stderr and f"--devices {victim}" in done.stderr
    assert hashlib.sha256(victim.read_bytes()).hexdigest() == before
    # the label is the manifest's word, and it leads wherever the manifest says: naming the
    # label is no consent to write what it leads to
    labelled = ssdcompare("sweep", "--resume", str(results), "--devices", "t.img")
    assert labelled.returncode == 2 and "not a target of this sweep" in labelled.stderr
    assert "not by a label" in labelled.stderr and str(victim) in labelled.stderr
    assert hashlib.sha256(victim.read_bytes()).hexdigest() == before
    # the signature is checked against what was signed: the sweep's own folder resumes
    own = interrupted_sweep(tmp_path / "own", read_then_write(tmp_path),
                            str(tmp_path / "own.img"), stop_at=2, size=16 << 20)  # fmt: skip
    assert (own / "manifest.sig").is_file()
    assert ssdcompare("sweep", "--resume", str(own)).returncode == 0


@pytest.mark.fio
def test_resume_refuses_a_folder_others_can_write_to(tmp_path: Path) -> None:
    results = interrupted_sweep(tmp_path, read_then_write(tmp_path), str(tmp_path / "t.img"),
                                stop_at=2, size=16 << 20)  # fmt: skip
    results.chmod(0o777)
    done = ssdcompare("sweep", "--resume", str(results))
    assert done.returncode == 2 and "can be written by other users" in done.stderr
