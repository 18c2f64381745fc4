"""A results folder from someone else is read safely and honestly: made by a real sweep with
the real fio on a file target, copied, then tampered with. Every case ends as a failed run
that names the file and why, or as one clear error; never a traceback, a hang, a crash, a
wrong number shown as right, or anything a file holds quoted in a message."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pandas as pd
import pytest
from suitefiles import suite_file

import ssdcompare
from ssdcompare.analysis.frame import load
from ssdcompare.analysis.summary import job_summary
from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.binary import FioInfo
from ssdcompare.fio.result.models import FioOutputError
from ssdcompare.fio.result.plausibility import job_problem, trace_problem
from ssdcompare.fio.result.reader import parse_fio_file
from ssdcompare.judge.cpu import trace_from
from ssdcompare.results import files
from ssdcompare.results.store import ResultsDir

SECRET = "root:$6$saltsalt$hashhashhash:19000:0:99999:7:::"
READ, WRITE, MIX = "randread-4k-qd1", "randwrite-4k-qd8", "randrw100-4k-qd1"
DATA = Path(__file__).parent / "data"
EXAMPLES = Path(__file__).parent.parent / "examples" / "results"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory, fio: FioInfo) -> Path:
    """A real sweep: three 1 s jobs on a 16 MiB file target."""
    folder = tmp_path_factory.mktemp("made")
    suite = suite_file(
        folder, "trust", "{rw: randread, bs: 4k, iodepth: 1}",
        "{rw: randwrite, bs: 4k, iodepth: 8}", "{rw: randrw, rwmixread: 100, bs: 4k, iodepth: 1}",
        defaults="{runtime: 1}",
    )  # fmt: skip
    run = ssdcompare.run_sweep(str(folder / "x.img"), suite=str(suite), size="16m",
                               out=folder / "results", report=False)  # fmt: skip
    assert run.complete
    return run.path


@pytest.fixture
def received(made: Path, tmp_path: Path) -> Path:
    """A copy of the sweep, as mailed by a colleague, to tamper with."""
    copy = tmp_path / "received"
    shutil.copytree(made, copy, symlinks=True, ignore=shutil.ignore_patterns(".cache"))
    return copy


@pytest.fixture
def secret(tmp_path: Path) -> Path:
    """A file only its owner (root, who runs the report) can read."""
    path = tmp_path / "shadow"
    path.write_text(SECRET + "\n")
    path.chmod(0o600)
    return path


def run_of(folder: Path, job: str, repeat: int = 1) -> Path:
    return folder / "runs" / "x.img" / job / f"r{repeat}"


def row_of(frame: pd.DataFrame, job: str, repeat: int = 1) -> pd.Series:
    """The one row of a run on the sweep's own target."""
    mine = (frame["device"] == "x.img") & (frame["job"] == job) & (frame["repeat"] == repeat)
    rows = frame[mine]
    assert len(rows) == 1, rows
    return rows.iloc[0]


def edit_json(path: Path, change: Any) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data, indent=2))


def ssdcompare_cli(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """The command as a user runs it, in a process of its own (a hang fails the test)."""
    return subprocess.run([sys.executable, "-m", "ssdcompare", *args], capture_output=True,
                          text=True, timeout=timeout, check=False)  # fmt: skip


class Done(NamedTuple):
    """What a command run in this process left (as subprocess.CompletedProcess names it)."""

    returncode: int
    stderr: str


@pytest.fixture
def cli(run_cli: Callable[..., Any]) -> Callable[..., Done]:
    """The command as a user runs it, in this process (quicker than one of its own)."""

    def run(*args: str) -> Done:
        done = run_cli(*args)
        return Done(done.exit_code, done.stderr)

    return run


def assert_one_clear_line(done: Done | subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr and "internal error" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(errors) == 1, done.stderr
    for word in words:
        assert word in errors[0], errors[0]


# --- 1. links, odd files and sizes --------------------------------------------------------


def test_a_link_to_a_secret_is_never_followed_nor_quoted(
    received: Path, secret: Path, tmp_path: Path, cli: Callable[..., Done]
) -> None:
    links = [
        run_of(received, READ) / "fio.json",  # the measurement itself
        run_of(received, WRITE) / "timeseries_iops.1.log",  # a per-second log
        run_of(received, WRITE) / "jobfile.fio",
        run_of(received, MIX) / "cpu.json",
    ]
    for link in links:
        link.unlink()
        link.symlink_to(secret)
    frame = load(received)
    read, mix = row_of(frame, READ), row_of(frame, MIX)
    assert read["status"] == "damaged" and math.isnan(read["iops"])
    assert read["error"].startswith(f"runs/x.img/{READ}/r1/fio.json is a symbolic link")
    assert mix["status"] == "damaged"
    assert mix["error"].startswith(f"runs/x.img/{MIX}/r1/cpu.json is a symbolic link")
    assert row_of(frame, WRITE)["status"] == "ok"  # its log and jobfile are left out, not it
    damaged: list[str] = []
    ssdcompare.timeseries(received, damaged)
    assert any("timeseries_iops.1.log is a symbolic link" in line for line in damaged)
    report = cli("report", str(received), "-o", str(tmp_path / "report.html"))
    export = cli("export", str(received), "-o", str(tmp_path / "results.csv"))
    summary = cli("export", str(received), "-o", str(tmp_path / "summary.csv"),
                             "--summary")  # fmt: skip
    assert report.returncode == export.returncode == summary.returncode == 0, report.stderr
    shown = [
        (tmp_path / "report.html").read_text(), (tmp_path / "results.csv").read_text(),
        (tmp_path / "summary.csv").read_text(), " ".join(frame["error"].dropna()),
        " ".join(damaged), report.stderr + export.stderr + summary.stderr,
    ]  # fmt: skip
    for text in shown:
        assert "saltsalt" not in text and "hashhash" not in text and "root:" not in text
    assert "fio.json is a symbolic link" in shown[0]  # the report names the file and why


def test_a_link_into_another_sweep_or_within_the_folder_is_refused(
    received: Path, made: Path, tmp_path: Path, cli: Callable[..., Done]
) -> None:
    other = tmp_path / "other"
    shutil.copytree(made, other)
    edit_json(run_of(other, READ) / "fio.json",
              lambda d: d["jobs"][0]["read"].__setitem__("iops", 777777.0))  # fmt: skip
    (run_of(received, READ) / "fio.json").unlink()
    (run_of(received, READ) / "fio.json").symlink_to(run_of(other, READ) / "fio.json")
    # a link inside the folder: one run's output standing in for another's
    (run_of(received, MIX) / "fio.json").unlink()
    (run_of(received, MIX) / "fio.json").symlink_to("../../randread-4k-qd1/r1/fio.json")
    # a run folder that is a link to another sweep's run
    shutil.rmtree(run_of(received, WRITE))
    run_of(received, WRITE).symlink_to(run_of(other, WRITE), target_is_directory=True)
    frame = load(received)
    assert 777777.0 not in set(frame["iops"])
    assert set(frame["status"]) == {"damaged"}
    assert "is a symbolic link" in row_of(frame, WRITE)["error"]


@pytest.mark.parametrize("place", ["target", "job"])
@pytest.mark.parametrize("what", ["link", "file"])
def test_a_target_or_job_folder_that_is_no_folder_makes_damaged_rows_not_a_failure(
    received: Path, made: Path, tmp_path: Path, cli: Callable[..., Done], place: str, what: str
) -> None:
    """Only the runs the plan has there are damaged, each naming the place and why; the
    rest of the folder is read, and report and export work."""
    other = tmp_path / "other"
    shutil.copytree(made, other)
    relative = "runs/x.img" if place == "target" else f"runs/x.img/{WRITE}"
    shutil.rmtree(received / relative)
    if what == "link":
        (received / relative).symlink_to(other / relative, target_is_directory=True)
    else:
        (received / relative).write_text("not a folder\n")
    frame = load(received, cache=False)
    damaged = frame[frame["status"] == "damaged"]
    jobs = {READ, WRITE, MIX} if place == "target" else {WRITE}
    assert set(damaged["job"]) == jobs and set(frame["job"]) == {READ, WRITE, MIX}
    kind = "is a symbolic link" if what == "link" else "is not a folder"
    assert all(f"{relative} {kind}" in error for error in damaged["error"])
    if place == "job":
        assert (frame[frame["job"] != WRITE]["status"] == "ok").all()
    for command in (["report", str(received), "-o", str(tmp_path / "r.html")],
                    ["export", str(received), "-o", str(tmp_path / "r.csv")]):  # fmt: skip
        done = cli(*command)
        assert done.returncode == 0, done.stderr
        assert relative in done.stderr and "damaged" in done.stderr.lower()


def test_a_runs_folder_that_is_a_link_names_the_results_folder(
    received: Path, tmp_path: Path, cli: Callable[..., Done]
) -> None:
    elsewhere = tmp_path / "elsewhere"
    (received / "runs").rename(elsewhere)
    (received / "runs").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(SsdcompareError) as refused:
        load(received)
    said = str(refused.value)
    assert said.startswith(f"results folder {received}: runs is a symbolic link")
    assert "move the folder the link points to into its place" in said
    assert "file itself" not in said
    assert_one_clear_line(cli("report", str(received)), str(received), "runs", "link")


@pytest.mark.parametrize("which", ["manifest.json", "status.json", "cpu.json"])
def test_deeply_nested_json_is_a_clear_error_or_a_failed_run(
    received: Path, which: str, cli: Callable[..., Done]
) -> None:
    path = received / which if which == "manifest.json" else run_of(received, READ) / which
    path.write_text("[" * 100_000)
    if which == "manifest.json":
        assert_one_clear_line(cli("report", str(received)), "manifest.json", "nested")
        return
    row = row_of(load(received), READ)
    assert row["status"] == "damaged" and which in row["error"] and "nested" in row["error"]
    # nested less deep than Python's limit, yet deeper than any file ssdcompare writes
    edit_json(received / "manifest.json", lambda d: d.__setitem__("extra", json.loads(
        "[" * 200 + "]" * 200)))  # fmt: skip
    assert_one_clear_line(cli("report", str(received)), "manifest.json", "nested")


def test_fifos_devices_and_huge_files_are_refused_without_waiting(
    received: Path, tmp_path: Path, cli: Callable[..., Done]
) -> None:
    fifo = run_of(received, READ) / "fio.json"
    fifo.unlink()
    os.mkfifo(fifo)  # a read of it would wait for a writer forever
    zero = run_of(received, WRITE) / "fio.json"
    zero.unlink()
    zero.symlink_to("/dev/zero")  # a read of it would never end
    (run_of(received, WRITE) / "timeseries_iops.1.log").unlink()
    os.mkfifo(run_of(received, WRITE) / "timeseries_iops.1.log")
    huge = run_of(received, MIX) / "cpu.json"
    with huge.open("r+b") as handle:
        handle.truncate(files.LIMITS["cpu"] + 1)  # sparse: no disk spent
    # in a process of its own: were a FIFO read, the test would fail, not hang
    report = ssdcompare_cli("report", str(received), "-o", str(tmp_path / "r.html"), timeout=60)
    assert report.returncode == 0, report.stderr
    export = cli("export", str(received), "-o", str(tmp_path / "r.csv"))
    assert export.returncode == 0, export.stderr
    frame = load(received)
    assert "fio.json is a FIFO, not a regular file" in row_of(frame, READ)["error"]
    assert "fio.json is a symbolic link" in row_of(frame, WRITE)["error"]
    assert "cpu.json is larger than 256 MiB" in row_of(frame, MIX)["error"]
    # raw fio files a user names: a link is followed, but no FIFO or device is read
    for path in (fifo, Path("/dev/zero")):
        with pytest.raises(FioOutputError, match="not a regular file"):
            ssdcompare.read_fio(path)
    os.mkfifo(tmp_path / "manifest-fifo")
    (received / "manifest.json").unlink()
    (received / "manifest.json").symlink_to(tmp_path / "manifest-fifo")
    assert_one_clear_line(cli("report", str(received)), "manifest.json")


def test_a_log_that_unpacks_past_its_bound_or_is_cut_off_is_refused(
    received: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import gzip

    log = run_of(received, READ) / "timeseries_iops.1.log"
    lines = "".join(f"{t * 1000}, 100, 0, 4096, 0\n" for t in range(1, 200)).encode()
    log.unlink()
    packed = gzip.compress(lines)
    (log.with_name(log.name + ".gz")).write_bytes(packed)
    assert len(ssdcompare.timeseries(received)) > 0  # read back whole
    monkeypatch.setitem(files.LIMITS, "log", len(lines) // 2)  # a gzip bomb, made small
    shutil.rmtree(received / ".cache")  # the seconds kept: the bound is not in their key
    damaged: list[str] = []
    ssdcompare.timeseries(received, damaged)
    assert (
        damaged and "timeseries_iops.1.log.gz is too large: it unpacks to more than" in damaged[0]
    )
    monkeypatch.undo()
    (log.with_name(log.name + ".gz")).write_bytes(packed[: len(packed) // 2])
    damaged = []
    ssdcompare.timeseries(received, damaged)
    assert damaged and "is cut off (gzip)" in damaged[0]


# --- 2. runs that are not what they claim -------------------------------------------------


def test_a_run_folder_not_in_the_plan_is_a_named_failed_run(
    received: Path, tmp_path: Path, cli: Callable[..., Done]
) -> None:
    source = run_of(received, READ)
    shutil.copytree(source, received / "runs" / "x.img" / "alien-job" / "r1")
    shutil.copytree(source, received / "runs" / "other.img" / READ / "r1")
    shutil.copytree(source, run_of(received, READ, 9))
    frame = load(received)
    foreign = frame[frame["error"].fillna("").str.contains("not part of this sweep's plan")]
    assert len(foreign) == 3 and set(foreign["status"]) == {"damaged"}
    assert foreign["iops"].isna().all() and foreign["rw"].isna().all()
    assert row_of(frame, READ)["status"] == "ok"
    summary = job_summary(frame).set_index(["device", "job"])
    assert len(summary) == 5  # the copied repeat is counted as a failed run of its job
    assert summary.loc[("x.img", READ), "failed_runs"] == 1
    done = cli("report", str(received), "-o", str(tmp_path / "r.html"))
    assert done.returncode == 0, done.stderr
    html = (tmp_path / "r.html").read_text()
    assert "Not shown: alien-job on x.img" in html and "runs/other.img/" in html


@pytest.mark.parametrize("name", ["../x.img", "..", "a/b"])
def test_a_target_name_that_is_no_folder_name_is_named_as_the_damage(
    received: Path, tmp_path: Path, cli: Callable[..., Done], name: str
) -> None:
    """An edited manifest whose target would be looked for outside runs/."""
    edit_json(received / "manifest.json", lambda d: d["targets"][0].__setitem__("name", name))
    for command, output in (("report", "r.html"), ("export", "r.csv")):
        done = cli(command, str(received), "-o", str(tmp_path / output))
        assert_one_clear_line(done, "manifest.json is damaged", "targets[0]", "no folder name")
        assert "no runs" not in done.stderr


def test_a_status_naming_another_run_is_not_used_to_find_files(received: Path) -> None:
    # the old way built the path from the status' own fields: this decoy would be read
    decoy = received.parent / "outside" / READ / "r1"
    shutil.copytree(run_of(received, READ), decoy)
    edit_json(decoy / "fio.json", lambda d: d["jobs"][0]["read"].__setitem__("iops", 424242.0))
    edit_json(
        run_of(received, READ) / "status.json", lambda d: d.__setitem__("target", "../../outside")
    )
    edit_json(run_of(received, WRITE) / "status.json", lambda d: d.__setitem__("job", READ))
    frame = load(received)
    assert 424242.0 not in set(frame["iops"])
    for job in (READ, WRITE):
        row = row_of(frame, job)
        assert row["status"] == "damaged" and row["device"] == "x.img" and row["job"] == job
        assert "status.json is damaged: it names another run than the folder" in row["error"]
        assert "outside" not in row["error"]


def test_a_run_without_status_shows_and_resume_runs_it_and_the_damaged_ones_again(
    received: Path,
) -> None:
    (run_of(received, WRITE) / "status.json").unlink()
    edit_json(run_of(received, READ) / "status.json", lambda d: d.__setitem__("target", "../x"))
    (run_of(received, MIX) / "status.json").write_text("[" * 100_000)
    frame = load(received)
    row = row_of(frame, WRITE)
    assert row["status"] == "failed" and "status.json is missing" in row["error"]
    assert "--resume" in row["error"]
    assert len(frame.groupby(["job", "repeat"])) == 3  # nothing vanished
    resumed = ssdcompare.run_sweep(resume=received, report=False)
    assert resumed.complete
    again = load(received)
    assert set(again["status"]) == {"ok"} and (again["iops"] > 0).all()
    assert (run_of(received, MIX).with_name("r1.attempt-1")).is_dir()  # kept aside


# --- 3. wrong numbers shown as right ------------------------------------------------------


def test_missing_iops_stay_missing_and_a_true_zero_stays_zero(
    received: Path, tmp_path: Path, cli: Callable[..., Done]
) -> None:
    path = run_of(received, READ) / "fio.json"
    # fio prints a figure it cannot compute as a bare nan
    path.write_text(path.read_text().replace('"iops" : ', '"iops" : nan, "was" : ', 1))
    # a job that moved nothing: fio prints its direction with zeros
    idle = run_of(received, MIX) / "fio.json"
    nothing = {"io_bytes": 0, "io_kbytes": 0, "bw_bytes": 0, "bw": 0, "iops": 0.0, "total_ios": 0}
    edit_json(idle, lambda d: d["jobs"][0]["read"].update(nothing))
    edit_json(run_of(received, WRITE) / "fio.json", lambda d: d.__setitem__("jobs", []))
    frame = load(received)
    read = row_of(frame, READ)
    assert read["status"] == "ok" and math.isnan(read["iops"]) and read["bw_bytes"] > 0
    summary = job_summary(frame).set_index("job")
    assert math.isnan(summary.loc[READ, "iops_value"]) and summary.loc[READ, "bw_bytes_value"] > 0
    assert summary.loc[MIX, "iops_value"] == 0 and math.isnan(
        summary.loc[MIX, "lat_mean_us_value"]
    )
    write = row_of(frame, WRITE)
    assert write["status"] == "damaged" and "fio's output holds no job" in write["error"]
    done = cli("report", str(received), "-o", str(tmp_path / "r.html"))
    assert done.returncode == 0, done.stderr
    assert ">n/a<" in (tmp_path / "r.html").read_text()


IMPOSSIBLE = {
    "negative IOPS": (lambda j: j["read"].__setitem__("iops", -12345.0), "read.iops", "-12345"),
    "absurd IOPS": (lambda j: j["read"].__setitem__("iops", 1e300), "read.iops", "1e+300"),
    "negative latency": (
        lambda j: j["read"]["lat_ns"].__setitem__("mean", -1000.0),
        "read.lat mean",
        "-1000",
    ),  # fmt: skip
    "negative bandwidth": (
        lambda j: j["read"].__setitem__("bw_bytes", -5),
        "read.bw_bytes",
        "-5",
    ),  # fmt: skip
    # numbers that contradict each other, each believable alone
    "IOPS against total_ios": (lambda j: j["read"].__setitem__("iops", 5e8), "read.iops", "5e+08"),
    "bandwidth against io_bytes": (
        lambda j: j["read"].__setitem__("bw_bytes", 5e12),
        "read.bw_bytes",
        "5e+12",
    ),  # fmt: skip
    "IOPS over a runtime of 0": (
        lambda j: j["read"].update(runtime=0, iops=10007.0),
        "read.iops above 0 over a runtime of 0",
        "10007",
    ),  # fmt: skip
    "latency min above max": (
        lambda j: j["read"]["lat_ns"].update(min=5000, max=2000),
        "read.lat whose mean is not between its min and max",
        "5000",
    ),  # fmt: skip
    "negative zero mean": (
        lambda j: j["read"]["lat_ns"].__setitem__("mean", -0.0),
        "read.lat mean",
        "-0.0",
    ),  # fmt: skip
}


@pytest.mark.parametrize("case", sorted(IMPOSSIBLE))
def test_an_impossible_value_makes_a_named_failed_run(received: Path, case: str) -> None:
    change, field, value = IMPOSSIBLE[case]
    edit_json(run_of(received, READ) / "fio.json", lambda d: change(d["jobs"][0]))
    row = row_of(load(received), READ)
    assert row["status"] == "damaged" and math.isnan(row["iops"])
    assert row["error"].startswith(f"runs/x.img/{READ}/r1/fio.json holds a")
    assert field in row["error"] and value not in row["error"]
    # the same file named as a raw fio output: the same check
    (raw,) = ssdcompare.read_fio(run_of(received, READ) / "fio.json").itertuples()
    assert raw.status == "damaged" and field in raw.error and math.isnan(raw.iops)


def test_a_job_written_twice_is_not_added_up(received: Path) -> None:
    edit_json(run_of(received, READ) / "fio.json", lambda d: d["jobs"].append(d["jobs"][0]))
    row = row_of(load(received), READ)
    assert row["status"] == "damaged" and math.isnan(row["iops"])
    assert "reports the job more often than it ran fio processes" in row["error"]


def test_a_job_written_twice_without_its_numjobs_is_not_added_up(received: Path) -> None:
    """The output's own options are the editor's to change: the workload's numjobs counts."""

    def twice(data: dict[str, Any]) -> None:
        data["jobs"][0]["job options"].pop("numjobs", None)
        data.get("global options", {}).pop("numjobs", None)
        data["jobs"].append(data["jobs"][0])

    edit_json(run_of(received, READ) / "fio.json", twice)
    row = row_of(load(received), READ)
    assert row["status"] == "damaged" and math.isnan(row["iops"])
    assert "more fio processes than its workload's numjobs=1" in row["error"]


CPU_DAMAGE = {
    "negative share": lambda s: s["cpus"][0].__setitem__(7, -50.0),  # idle below 0: "busy"
    "share over 100": lambda s: s["cpus"][0].__setitem__(0, 150.0),
    "NaN share": lambda s: s["cpus"][0].__setitem__(0, math.nan),
    "NaN worker": lambda s: s.__setitem__("workers", {"1": math.nan}),
}


@pytest.mark.parametrize("case", sorted(CPU_DAMAGE))
def test_impossible_cpu_samples_make_a_failed_run_naming_cpu_json(
    received: Path, case: str
) -> None:
    edit_json(run_of(received, READ) / "cpu.json", lambda d: CPU_DAMAGE[case](d["samples"][-1]))
    row = row_of(load(received), READ)
    assert row["status"] == "damaged" and pd.isna(row["verdict"])
    assert row["error"].startswith(f"runs/x.img/{READ}/r1/cpu.json holds a")


def test_no_recorded_or_fresh_output_is_taken_for_impossible(made: Path) -> None:
    outputs = [p for p in sorted(DATA.glob("*.json")) if "not-fio" not in p.name]
    outputs += sorted(EXAMPLES.rglob("fio.json")) + sorted((DATA / "format1-results").rglob(
        "fio.json")) + sorted(made.rglob("fio.json"))  # fmt: skip
    checked = 0
    for path in outputs:
        try:
            output = parse_fio_file(path)
        except FioOutputError:
            continue  # an output the tests keep for being unreadable
        for job in output.jobs + output.client_aggregates:
            assert job_problem(job) is None, (path, job.name, job_problem(job))
            checked += 1
    assert checked > 100
    traces = sorted(EXAMPLES.rglob("cpu.json")) + sorted(made.rglob("cpu.json"))
    for path in traces:
        assert trace_problem(trace_from(json.loads(path.read_text()))) is None, path
    for folder in (*EXAMPLES.iterdir(), DATA / "format1-results", made):
        assert set(load(folder, cache=False)["status"]) == {"ok"}, folder


@pytest.mark.parametrize(
    ("option", "unmeasured"),
    [("disable_lat", ("lat", "slat")), ("disable_clat", ("clat",)), ("disable_slat", ("slat",))],
)
def test_a_measurement_fio_left_out_is_no_figure(
    tmp_path: Path, fio: FioInfo, option: str, unmeasured: tuple[str, ...]
) -> None:
    output = tmp_path / "fio.json"
    subprocess.run([fio.path, "--name=off", f"--filename={tmp_path / 'f.img'}", "--size=4m",
                    "--rw=randread", "--bs=4k", "--ioengine=libaio", "--iodepth=4",
                    "--lat_percentiles=1", f"--{option}=1", "--output-format=json",
                    f"--output={output}"],
                   check=True, capture_output=True, timeout=60)  # fmt: skip
    (row,) = ssdcompare.read_fio(output).itertuples()
    assert row.status == "ok" and row.iops > 0
    for kind in ("clat", "slat"):
        mean = getattr(row, f"{kind}_mean_us")
        assert math.isnan(mean) if kind in unmeasured else mean > 0, (kind, mean)
    # the latency columns come from what was measured: completion latency where lat is off
    assert row.lat_source == ("clat" if "lat" in unmeasured else "lat")
    assert row.lat_mean_us > 0 and row.lat_mean_us <= row.lat_max_us


# --- what the messages quote --------------------------------------------------------------


def test_no_message_quotes_what_a_stored_file_holds(received: Path) -> None:
    (run_of(received, READ) / "fio.json").write_text(SECRET + "\n")  # a regular file, hostile
    log = run_of(received, WRITE) / "timeseries_iops.1.log"
    log.write_text(f"{SECRET}\n1000, 5, 1, 4096, 0\n2000, 5, 1, 4096, 0\n")
    edit_json(run_of(received, MIX) / "status.json", lambda d: d.__setitem__("repeat", SECRET))
    frame = load(received)
    errors = " ".join(frame["error"].dropna())
    damaged: list[str] = []
    ssdcompare.timeseries(received, damaged)
    assert "fio.json holds no JSON" in errors and "status.json is damaged (repeat:" in errors
    assert damaged and "line 1 is not a fio log line" in damaged[0]
    for text in (errors, *damaged):
        assert "saltsalt" not in text
    manifests = {
        "host.hostname": lambda d: d["host"].__setitem__("hostname", [SECRET]),
        "allowed_options": lambda d: d.__setitem__("allowed_options", [SECRET]),
        "identities[...]": lambda d: d.__setitem__("identities", {SECRET: 5}),
    }
    original = (received / "manifest.json").read_text()
    for where, change in manifests.items():
        (received / "manifest.json").write_text(original)
        edit_json(received / "manifest.json", change)
        with pytest.raises(SsdcompareError) as raised:
            ResultsDir.open(received)
        assert f"manifest.json is damaged: {where}" in str(raised.value)
        assert "saltsalt" not in str(raised.value)


def test_resume_never_writes_through_a_link_in_the_folder(
    received: Path, made: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    shutil.copytree(made, other)
    before = sorted(p.name for p in (other / "runs" / "x.img" / WRITE).iterdir())
    shutil.rmtree(received / "runs" / "x.img" / WRITE)
    (received / "runs" / "x.img" / WRITE).symlink_to(other / "runs" / "x.img" / WRITE)
    (other / "runs" / "x.img" / WRITE / "r1" / "status.json").unlink()  # to be run again
    done = ssdcompare_cli("sweep", "--resume", str(received))
    assert_one_clear_line(done, f"runs/x.img/{WRITE} is a symbolic link")
    assert sorted(p.name for p in (other / "runs" / "x.img" / WRITE).iterdir()) == before
    assert not (other / "runs" / "x.img" / WRITE / "r1" / "status.json").exists()


@pytest.mark.parametrize("where", ["probes.json", "cpu.json", "manifest.json"])
def test_a_number_too_large_for_any_field_is_damage_not_a_crash(
    received: Path, cli: Callable[..., Done], tmp_path: Path, where: str
) -> None:
    """10**400 is valid JSON, and no float: every stored file is read with a bound on whole
    numbers, so it is a damaged file named as such, never an internal error."""
    if where == "manifest.json":
        edit_json(received / where, lambda d: d["devices"][0].__setitem__("size_bytes", 10**400))
    elif where == "cpu.json":
        edit_json(run_of(received, READ) / where, lambda d: d.__setitem__("cpu_count", 10**400))
    else:
        huge = {"n": 10**400}
        edit_json(run_of(received, READ) / where,
                  lambda d: d["probes"]["diskstats"].__setitem__("after", huge))  # fmt: skip
    done = cli("report", str(received), "-o", str(tmp_path / "r.html"))
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    if where == "manifest.json":  # the folder itself cannot be read: one clear line
        assert done.returncode == 2 and "larger than any a run records" in done.stderr
    else:
        assert done.returncode == 0, done.stderr
    if where == "cpu.json":
        row = row_of(load(received), READ)
        assert row["status"] == "damaged" and "larger than any a run records" in row["error"]
