"""Plans (what a sweep would run) and the `suites` and `plan` commands as users run them."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ssdcompare.errors import SsdcompareError
from ssdcompare.judge.steady import MAX_ROUNDS
from ssdcompare.results.outputs import write_jobfiles
from ssdcompare.run.plan import JOB_OVERHEAD_S, PlanOptions, make_plan
from ssdcompare.suite.files import bundled_suite_paths, load_suite
from ssdcompare.suite.workload import Suite, Workload
from ssdcompare.units import format_duration

MIB = 1024**2
QUICK_IDS = [w.job_id for w in load_suite("quick").workloads]

RunCli = Callable[..., Any]  # the run_cli fixture: returns exit_code, stdout, stderr


def assert_clean_error(result: Any, message: str) -> None:
    """Exit status 2, one "error: ..." line for people on stderr, no traceback."""
    assert result.exit_code == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    assert message in result.stderr
    assert "Traceback" not in result.stderr + result.stdout


# ---- plans ----------------------------------------------------------------------------------


def test_plan_renders_every_job_for_every_target(tmp_path: Path) -> None:
    devices = f"{tmp_path}/a.img,{tmp_path}/b.img"
    plan = make_plan("quick", devices, PlanOptions(runtime_s=2, size_bytes=64 * MIB, repeat=3))
    assert [t.name for t in plan.targets] == ["a.img", "b.img"]
    assert all(t.size_bytes == 64 * MIB and not t.exists for t in plan.targets)
    # targets outermost: a whole suite on one device, then the next device
    assert [(j.target.name, j.job_id) for j in plan.jobs] == [
        (name, job_id) for name in ("a.img", "b.img") for job_id in QUICK_IDS
    ]
    assert {j.workload.runtime_s for j in plan.jobs} == {2}
    assert [j.job_id for j in plan.jobs_for(plan.targets[1])] == QUICK_IDS
    # 12 jobs of 2 s + 1 s ramp, plus start-up, three times
    assert plan.estimated_s == 3 * 12 * (2 + 1 + JOB_OVERHEAD_S)


def test_plan_read_only_drops_writers(tmp_path: Path) -> None:
    (tmp_path / "a.img").write_bytes(bytes(MIB))  # read-only sweeps read what is there
    plan = make_plan("optane-vs-nand", str(tmp_path / "a.img"), PlanOptions(read_only=True))
    assert [j.job_id for j in plan.jobs] == [
        "randread-4k-qd1",
        "randread-4k-qd128",
        "read-4m-qd16",
    ]
    assert not any(j.workload.writes for j in plan.jobs)


def test_plan_refuses_zero_repeats(tmp_path: Path) -> None:
    with pytest.raises(SsdcompareError, match="--repeat must be from 1 to 1000, got 0"):
        make_plan("quick", str(tmp_path / "a.img"), PlanOptions(size_bytes=MIB, repeat=0))


def test_plan_warns_about_shares_of_a_file(tmp_path: Path) -> None:
    image = tmp_path / "a.img"
    image.write_bytes(b"\0" * MIB)
    plan = make_plan("storagereview", str(image), PlanOptions(runtime_s=1))
    assert any("a.img is a file: its spans are shares" in w for w in plan.warnings)
    sized = make_plan("storagereview", str(image), PlanOptions(size_bytes=MIB))
    assert not any("shares" in w for w in sized.warnings)


def test_plan_warns_that_sync_engines_ignore_queue_depth(tmp_path: Path) -> None:
    suite = Suite(name="s", description="d", workloads=[
        Workload(rw="randread", bs="4k", iodepth=8, ioengine="psync"),
        Workload(rw="randread", bs="4k", iodepth=8, ioengine="libaio"),
    ])  # fmt: skip
    plan = make_plan(suite, str(tmp_path / "a.img"), PlanOptions(size_bytes=MIB))
    assert any(w.startswith("synchronous engines ignore iodepth") for w in plan.warnings)
    assert any(w.endswith(": randread-4k-qd8-psync") for w in plan.warnings)


def test_write_jobfiles_lays_out_target_and_job(tmp_path: Path) -> None:
    plan = make_plan(
        "quick", f"{tmp_path}/a.img,{tmp_path}/b.img", PlanOptions(size_bytes=64 * MIB)
    )
    paths = write_jobfiles(plan.jobs, tmp_path / "out")
    assert [p.relative_to(tmp_path / "out").as_posix() for p in paths] == [
        f"{target}/{job_id}.fio" for target in ("a.img", "b.img") for job_id in QUICK_IDS
    ]
    assert [p.read_text() for p in paths] == [j.text for j in plan.jobs]


# ---- the `suites` command -------------------------------------------------------------------


def test_suites_lists_every_bundled_suite(run_cli: RunCli) -> None:
    result = run_cli("suites")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    for name in bundled_suite_paths():
        assert any(line.startswith(f"{name} ") for line in lines), name
    database = next(line for line in lines if line.startswith("database "))
    assert " 45 jobs " in database and "writes" in database
    assert "per device" in database
    assert "source: docs/methodology.md#quick" in result.stdout
    assert "--suite NAME" in lines[-1]
    # what a suite spends besides measuring is said: rounds until steady, fills
    text = " ".join(result.stdout.split())
    storagereview = load_suite("storagereview")
    worst = format_duration(storagereview.duration_s * (1 + MAX_ROUNDS))
    assert "storagereview 33 jobs" in text and f"up to {worst} in all with its rounds" in text
    anandtech = text[text.index("anandtech ") : text.index("crystaldiskmark ")]
    assert "empty then a full drive" in anandtech and "plus a fill of the span" in anandtech


# ---- the `plan` command ---------------------------------------------------------------------


@pytest.mark.fio
def test_plan_brief_lists_jobs_and_fio_accepts_them(run_cli: RunCli, tmp_path: Path) -> None:
    image = tmp_path / "scratch.img"
    result = run_cli("plan", "--suite", "quick", "--devices", str(image), "--size", "64m",
                     "--brief")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    out = result.stdout
    assert out.startswith("suite quick: ")
    assert f"scratch.img (file {image}, 64 MiB, to be created)" in out
    for job_id in QUICK_IDS:
        assert any(line.startswith(f"{job_id} ") for line in out.splitlines()), job_id
    assert "accepts all 6 jobfiles." in out
    assert "6 jobs x 1 target(s) x 1 repeat(s) = 6 fio runs" in out
    assert "[global]" not in out  # --brief: no jobfile text
    assert not image.exists()  # planning creates nothing


@pytest.mark.fio
def test_plan_prints_the_jobfiles(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("plan", "--suite", "optane-vs-nand", "--devices", str(tmp_path / "s.img"),
                     "--size", "64m", "--runtime", "3")  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.stdout.count("[global]") == 6
    assert "----- s.img/randwrite-4k-qd1-fsync.fio" in result.stdout
    assert "runtime=3\n" in result.stdout
    assert f"filename={tmp_path / 's.img'}\n" in result.stdout


@pytest.mark.fio
def test_plan_out_writes_one_file_per_target_and_job(run_cli: RunCli, tmp_path: Path) -> None:
    out = tmp_path / "jobfiles"
    devices = f"{tmp_path}/a.img,{tmp_path}/b.img"
    result = run_cli("plan", "--suite", "quick", "--devices", devices, "--size", "64m",
                     "--out", str(out))  # fmt: skip
    assert result.exit_code == 0, result.stderr
    written = sorted(p.relative_to(out).as_posix() for p in out.rglob("*.fio"))
    assert written == sorted(f"{t}/{j}.fio" for t in ("a.img", "b.img") for j in QUICK_IDS)
    assert "accepts all 12 jobfiles." in result.stdout
    assert (
        f"filename={tmp_path / 'b.img'}\n" in (out / "b.img" / f"{QUICK_IDS[0]}.fio").read_text()
    )


@pytest.mark.fio
def test_plan_of_a_suite_fio_rejects_fails(run_cli: RunCli, tmp_path: Path) -> None:
    suite = tmp_path / "typo.yaml"
    suite.write_text(
        "name: typo\ndescription: d\nworkloads:\n  - {rw: read, bs: 4k}\n"
        "  - {rw: randread, bs: 4k, extra: {bogus_option: 1}}\n"
    )
    result = run_cli("plan", "--suite", str(suite), "--devices", str(tmp_path / "a.img"),
                     "--size", "1m", "--brief")  # fmt: skip
    assert_clean_error(result, "1 jobfile(s) cannot run")
    assert "fio rejects a.img/randread-4k-qd1+bogus_option1.fio:" in result.stderr
    assert "bogus_option" in result.stderr


def test_plan_unknown_device(run_cli: RunCli) -> None:
    result = run_cli("plan", "--suite", "quick", "--devices", "nvme-does-not-exist0n1")
    assert_clean_error(result, "unknown device 'nvme-does-not-exist0n1'")
    assert "Block devices on this machine" in result.stderr


def test_plan_unknown_suite(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("plan", "--suite", "nope", "--devices", str(tmp_path / "a.img"),
                     "--size", "1m")  # fmt: skip
    assert_clean_error(result, "unknown suite 'nope'; bundled suites: anandtech, crystaldiskmark")


def test_plan_broken_suite_file_names_file_and_field(run_cli: RunCli, tmp_path: Path) -> None:
    suite = tmp_path / "broken.yaml"
    suite.write_text("name: broken\ndescription: d\ndefaults: {bs: 4q}\nworkloads: [{rw: read}]\n")
    result = run_cli("plan", "--suite", str(suite), "--devices", str(tmp_path / "a.img"),
                     "--size", "1m")  # fmt: skip
    assert_clean_error(result, f"{suite}: invalid suite:")
    assert "defaults.bs: '4q' is not a size" in result.stderr


def test_plan_new_file_without_size(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("plan", "--suite", "quick", "--devices", str(tmp_path / "a.img"))
    assert_clean_error(result, "needs a size (e.g. --size 4g)")


def test_plan_read_only_of_a_writing_suite(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("plan", "--suite", "database", "--read-only", "--devices",
                     str(tmp_path / "a.img"), "--size", "1m")  # fmt: skip
    assert_clean_error(result, "suite 'database' has no read-only workloads")


def test_plan_bad_size_is_a_usage_error(run_cli: RunCli, tmp_path: Path) -> None:
    result = run_cli("plan", "--suite", "quick", "--devices", str(tmp_path / "a.img"),
                     "--size", "4q")  # fmt: skip
    assert result.exit_code == 2
    assert "Invalid value" in result.stderr
    assert "'4q' is not a size" in result.stderr
    assert "Traceback" not in result.stderr


def test_plan_needs_suite_and_devices(run_cli: RunCli) -> None:
    result = run_cli("plan", "--suite", "quick")
    assert result.exit_code == 2
    assert "Missing option '--devices'" in result.stderr


def test_python_dash_m_help_and_errors_in_a_real_process(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "ssdcompare", "--help"],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for command in ("plan", "suites", "sweep"):
        assert f"  {command} " in done.stdout
    failed = subprocess.run(
        [sys.executable, "-m", "ssdcompare", "plan", "--suite", "nope", "--devices",
         str(tmp_path / "a.img"), "--size", "1m"],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert failed.returncode == 2
    assert failed.stderr.startswith("error: unknown suite 'nope'")
    assert "Traceback" not in failed.stderr
    assert failed.stdout == ""


def test_plan_and_sweep_take_the_planned_choices_under_run_sweeps_names() -> None:
    # --resume refuses a planned choice by its name: a name no option has would go unnoticed
    from ssdcompare.cli.api import SweepChoices
    from ssdcompare.cli.commands import plan_command, sweep_command
    from ssdcompare.run.plan import PLANNED_CHOICES

    sweep_options = {param.name: param.opts for param in sweep_command.params}
    plan_options = {param.name: param.opts for param in plan_command.params}
    for name, flag in PLANNED_CHOICES:
        assert flag in sweep_options[name], name
        assert name == "suite" or name in SweepChoices.__annotations__, name
    shared = {"suite", "runtime_s", "size", "repeat", "read_only", "allow_options",
              "precondition", "states", "hosts", "destroy_data"}  # fmt: skip
    assert all(sweep_options[name] == plan_options[name] for name in shared)


def test_version(run_cli: RunCli) -> None:
    from ssdcompare import __version__

    result = run_cli("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"ssdcompare, version {__version__}"


# ---- plan runs the sweep's own checks --------------------------------------------------------


@pytest.mark.root
@pytest.mark.fio
def test_plan_says_what_the_sweep_would_refuse_and_why(run_cli: RunCli, tmp_path: Path) -> None:
    from blockdevs import loop_device

    with loop_device(tmp_path / "disk.img", 64 * MIB) as loop:
        subprocess.run(["mkfs.ext4", "-q", "-F", loop], check=True)
        where = tmp_path / "mnt"
        where.mkdir()
        subprocess.run(["mount", loop, str(where)], check=True)
        try:
            planned = run_cli("plan", "--suite", "quick", "--devices", loop, "--brief")
            swept = run_cli("sweep", "--suite", "quick", "--devices", loop, "--out",
                            str(tmp_path / "r"), "--destroy-data")  # fmt: skip
        finally:
            subprocess.run(["umount", str(where)], check=True)
        assert_clean_error(planned, "the sweep would be refused")
        for said in (planned.stderr, swept.stderr):
            # the mount once (every mount namespace sees it), and no advice that cannot help
            assert said.count(f"is mounted at {where}") == 1, said
            assert "--destroy-data cannot change that" in said
            assert "If you mean to, add --destroy-data" not in said
        assert "the sweep would refuse" in planned.stderr
        assert not (tmp_path / "r").exists()
        # unmounted: the filesystem still needs consent, and the plan says so
        unmounted = run_cli("plan", "--suite", "quick", "--devices", loop, "--brief")
        assert_clean_error(unmounted, "the sweep would be refused")
        assert "ext4 filesystem" in unmounted.stderr and "add --destroy-data" in unmounted.stderr
        consented = run_cli("plan", "--suite", "quick", "--devices", loop, "--brief",
                            "--destroy-data")  # fmt: skip
        assert consented.exit_code == 0, consented.stderr
        assert "the sweep would overwrite" in consented.stderr
        assert "safety checks for writing pass" in consented.stdout
        # one warning for the six jobs whose 1 GiB span the 64 MiB device cuts
        cut = [line for line in consented.stderr.splitlines() if "is smaller than" in line]
        assert len(cut) == 1 and "of 6 jobs" in cut[0], consented.stderr
