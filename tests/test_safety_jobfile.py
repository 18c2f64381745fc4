"""Nothing in a suite file can make fio write where it was not sent.

Jobfile injection (a newline in any rendered value), dangerous fio options, target paths fio
would read differently, and the reader that decides "does it write, what does it open" from the
final text: checked against fio's own reading of the same files.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from suitefiles import suite_file

from ssdcompare.analysis.frame import load
from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.check import JobfileError, check_jobfile, read_jobfile, workload_hash
from ssdcompare.fio.jobfile import render
from ssdcompare.run import sweep
from ssdcompare.run.plan import PlanOptions, make_plan
from ssdcompare.suite.files import load_suite
from ssdcompare.suite.options import OPT_IN, REFUSED
from ssdcompare.suite.workload import Workload
from ssdcompare.target.devices import Target, resolve_target

FILE_TARGET = Target(spec="t.img", name="t.img", path="/tmp/ssdcompare-test/t.img", kind="file",
                     size_bytes=16 << 20)  # fmt: skip


def ssdcompare(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ssdcompare", *args], capture_output=True, text=True,
        timeout=300, check=False, cwd=cwd,
    )  # fmt: skip


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def victim(tmp_path: Path) -> tuple[Path, str]:
    """A file a hostile suite tries to overwrite; its checksum before the attempt."""
    path = tmp_path / "victim.bin"
    path.write_bytes(os.urandom(1 << 20))
    return path, sha256(path)


def existing(path: Path, size: int = 16 << 20) -> Path:
    """A file with data in it, for read-only sweeps (which read only what is there)."""
    path.write_bytes(os.urandom(size))
    return path


INJECTED = "\n[evil]\nrw=randwrite\nfilename={victim}\nsize=1m\n"


@pytest.mark.parametrize(
    ("yaml_entry", "field"),
    [
        ("workloads:\n  - {rw: randread, bs: 4k, description: %s}", "workloads[0].description"),
        ("workloads:\n  - {rw: randread, bs: 4k, extra: {rate_iops: %s}}", "workloads[0].extra"),
        ("matrices:\n  - {name: %s, base: {rw: randread}, axes: {bs: [4k]}}", "matrices[0].name"),
    ],
)  # fmt: skip
def test_a_newline_in_a_rendered_value_is_refused_naming_the_field(
    tmp_path: Path, yaml_entry: str, field: str
) -> None:
    hostile = json.dumps("x" + INJECTED.format(victim=tmp_path / "v"))  # a valid YAML string
    suite = tmp_path / "hostile.yaml"
    suite.write_text("name: hostile\ndescription: d\n" + yaml_entry % hostile + "\n")
    with pytest.raises(SsdcompareError) as caught:
        load_suite(suite)
    message = str(caught.value)
    assert field in message and "newline" in message


@pytest.mark.parametrize("char", ["\r", "\x1b", "\x00", "\t"])
def test_other_control_characters_are_refused_too(char: str) -> None:
    with pytest.raises(ValueError, match="control character|carriage return|tab"):
        Workload(rw="randread", bs="4k", description=f"a{char}b")


@pytest.mark.fio
def test_an_injected_section_never_reaches_fio(tmp_path: Path) -> None:
    """A read-only sweep of a suite hiding a writing section aimed at another file."""
    target, before = victim(tmp_path)
    hostile = json.dumps("reads only" + INJECTED.format(victim=target))
    suite = tmp_path / "hostile.yaml"
    suite.write_text(
        "name: hostile\ndescription: d\nworkloads:\n"
        f"  - {{rw: randread, bs: 4k, runtime: 1, description: {hostile}}}\n"
    )
    out = tmp_path / "results"
    done = ssdcompare("sweep", "--devices", str(tmp_path / "t.img"), "--size", "16m",
                      "--suite", str(suite), "--read-only", "--out", str(out))  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "workloads[0].description" in done.stderr and "Traceback" not in done.stderr
    assert not out.exists()
    assert sha256(target) == before


@pytest.mark.fio
def test_a_tampered_jobfile_is_caught_before_fio_starts(tmp_path: Path) -> None:
    """Whatever puts a section into the text (a future template, a bug), the text decides:
    the run is refused from the jobfile on disk and fio never starts."""
    target, before = victim(tmp_path)
    existing(tmp_path / "t.img")
    plan = make_plan(str(Path(__file__).parent / "suites" / "tiny.yaml"),
                     str(tmp_path / "t.img"), PlanOptions(read_only=True))  # fmt: skip
    job = plan.jobs[0]
    plan.jobs[0] = job.model_copy(update={"text": job.text + INJECTED.format(victim=target)})
    results, _ = sweep.start(plan, tmp_path / "results", command_line=["test"])
    with pytest.raises(JobfileError, match=r"expected one job section .* found: .*evil"):
        sweep.run(plan, results)
    run_dir = results.run_dir("t.img", job.job_id, 1)
    assert not (run_dir / "fio.stdout.txt").exists()  # fio was never started
    assert sha256(target) == before


@pytest.mark.fio
def test_a_jobfile_that_writes_where_its_plan_did_not_is_refused(tmp_path: Path) -> None:
    """The guard judged the target from the planned jobfile; a text that writes anyway is
    stopped even in a sweep that is not read-only."""
    existing(tmp_path / "t.img")
    plan = make_plan(str(Path(__file__).parent / "suites" / "tiny.yaml"),
                     str(tmp_path / "t.img"), PlanOptions(read_only=True))  # fmt: skip
    plan.read_only = False
    job = plan.jobs[0]
    plan.jobs[0] = job.model_copy(update={"text": job.text.replace("rw=randread", "rw=randwrite")})
    results, _ = sweep.start(plan, tmp_path / "results", command_line=["test"])
    with pytest.raises(JobfileError, match="guard never checked"):
        sweep.run(plan, results)


@pytest.mark.parametrize("option", sorted(REFUSED))
def test_refused_options_are_refused_with_the_reason(option: str) -> None:
    with pytest.raises(ValueError) as caught:
        Workload(rw="randread", bs="4k", extra={option: "1"})
    assert f"'{option}' is refused" in str(caught.value)


@pytest.mark.parametrize(
    ("option", "value", "said"),
    [
        ("timeout", 5, "set by ssdcompare (fio's alias of runtime)"),
        ("filename", "/dev/sda", "set by ssdcompare"),
        ("readwrite", "write", "set by ssdcompare (fio's alias of rw)"),
        ("mem", "mmaphuge:/tmp/x", "without a file"),
        ("iomem", "mmap:/etc/passwd", "without a file"),
        ("buffer_pattern", "/etc/shadow", "looks like a file path"),
        ("buffer_pattern", "'/etc/shadow'", "looks like a file path"),  # fio reads it
        ("verify_pattern", '"../../x"', "looks like a file path"),
        ("rate", "1m;x", "cuts the line"),
        ("rate", "${HOME}", "expand"),
    ],
)  # fmt: skip
def test_owned_options_aliases_and_path_values_are_refused(
    option: str, value: object, said: str
) -> None:
    with pytest.raises(ValueError, match=re.escape(said)):
        Workload(rw="randread", bs="4k", extra={option: value})


def test_every_opt_in_option_needs_accepting_and_is_then_rendered() -> None:
    for option in sorted(OPT_IN):
        workload = Workload(rw="randread", bs="4k", extra={option: "1"})  # a suite may hold it
        with pytest.raises(JobfileError, match=f"needs --allow-option {option}"):
            render(workload, FILE_TARGET, "s", "libaio")
        job = render(workload, FILE_TARGET, "s", "libaio", allowed_options=[option])
        assert f"{option}=1" in job.text


@pytest.mark.fio
def test_allow_option_is_recorded_and_the_job_id_shows_it(tmp_path: Path) -> None:
    suite = suite_file(tmp_path, "mixed-bs", "{rw: randread, bs: 4k, runtime: 1, extra: "
                       "{bssplit: '4k/50:64k/50'}}")  # fmt: skip
    refused = ssdcompare("sweep", "--devices", str(tmp_path / "t.img"), "--size", "16m",
                         "--suite", str(suite), "--out", str(tmp_path / "no"))  # fmt: skip
    assert refused.returncode == 2 and "--allow-option bssplit" in refused.stderr
    assert not (tmp_path / "no").exists()
    out = tmp_path / "results"
    done = ssdcompare(
        "sweep",
        "--devices",
        str(tmp_path / "t.img"),
        "--size",
        "16m",
        "--suite",
        str(suite),
        "--allow-option",
        "bssplit",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    assert "fio option bssplit accepted" in done.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["allowed_options"] == ["bssplit"]
    (job,) = manifest["suite"]["workloads"]
    assert job["id"] == "randread-4k-qd1+bssplit4k.50.64k.50"
    jobfile = out / "runs/t.img" / job["id"] / "r1/jobfile.fio"
    assert "bssplit=4k/50:64k/50" in jobfile.read_text()
    report = (out / "report.html").read_text()
    assert "fio option bssplit was accepted with --allow-option" in report
    assert "bssplit=4k/50:64k/50" in report  # next to the job, too


def test_allow_option_only_takes_options_that_need_it() -> None:
    with pytest.raises(SsdcompareError, match="not an option that needs accepting"):
        make_plan("quick", [FILE_TARGET], PlanOptions(allowed_options=["exec_prerun"]))


def test_extra_options_change_the_id_and_the_hash_but_comments_do_not() -> None:
    plain = Workload(rw="randread", bs="4k")
    limited = Workload(rw="randread", bs="4k", extra={"rate_iops": 200})
    assert plain.job_id != limited.job_id
    a = render(plain, FILE_TARGET, "s", "libaio")
    b = render(limited, FILE_TARGET, "s", "libaio")
    assert a.workload_hash != b.workload_hash
    other_target = FILE_TARGET.model_copy(update={"name": "u.img", "path": "/tmp/u.img"})
    assert render(plain, other_target, "s", "libaio").workload_hash == a.workload_hash
    described = Workload(rw="randread", bs="4k", description="a comment only")
    assert render(described, FILE_TARGET, "other-suite", "libaio").workload_hash == a.workload_hash
    assert render(plain, FILE_TARGET, "s", "io_uring").workload_hash != a.workload_hash


@pytest.mark.parametrize("name", ["a;b.img", "a#b.img", "a$b.img", "a\\b.img", "a\nb.img"])
def test_paths_fio_would_read_differently_are_refused(tmp_path: Path, name: str) -> None:
    with pytest.raises(SsdcompareError, match="fio cannot take|control character"):
        resolve_target(str(tmp_path / name), 1 << 20)


@pytest.mark.fio
def test_a_colon_in_a_path_is_escaped_and_fio_opens_exactly_that_file(tmp_path: Path) -> None:
    out = tmp_path / "results"
    done = ssdcompare("sweep", "--devices", "./a:b.img", "--size", "4m", "--suite",
                      str(Path(__file__).parent / "suites" / "tiny.yaml"), "--runtime", "1",
                      "--out", str(out), cwd=tmp_path)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "a:b.img").stat().st_size == 4 << 20
    assert not (tmp_path / "a").exists() and not (tmp_path / "b.img").exists()
    # fio is given the file open (/dev/fd/N); the jobfile names it in a comment
    jobfile = next((out / "runs" / "a:b.img").glob("*/r1/jobfile.fio")).read_text()
    assert f"; {tmp_path}/a:b.img (device:inode " in jobfile and "filename=/dev/fd/" in jobfile
    # where fio opens it by path (the plan's jobfiles, a fio server's), the colon is escaped
    planned = ssdcompare("plan", "--devices", "./a:b.img", "--size", "4m", "--suite",
                         str(Path(__file__).parent / "suites" / "tiny.yaml"), "--no-validate",
                         cwd=tmp_path)  # fmt: skip
    assert f"filename={tmp_path}/a\\:b.img\n" in planned.stdout


@pytest.mark.fio
def test_fdatasync_in_extra_gives_sync_rows_like_fsync(tmp_path: Path) -> None:
    suite = suite_file(tmp_path, "datasync", "{rw: randwrite, bs: 4k, runtime: 1, extra: "
                       "{fdatasync: 1}}")  # fmt: skip
    out = tmp_path / "results"
    done = ssdcompare("sweep", "--devices", str(tmp_path / "t.img"), "--size", "16m",
                      "--suite", str(suite), "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    frame = load(out)
    assert list(frame["direction"]) == ["write", "sync"]
    sync = frame[frame["direction"] == "sync"].iloc[0]
    assert sync["total_ios"] > 0 and sync["lat_mean_us"] > 0


def test_fdatasync_on_a_reading_job_is_refused() -> None:
    with pytest.raises(ValueError, match="fdatasync flushes after writes"):
        Workload(rw="randread", bs="4k", extra={"fdatasync": 1})


# --- the reader against fio's own reading ---------------------------------------------------

CORPUS = {
    "rendered": None,  # filled from the template below
    "global-after-job": "[global]\nfilename=/tmp/x\nsize=1m\n[a]\nrw=read\n[global]\n"
    "rw=randwrite\n[b]\nsize=1m\n",  # fmt: skip
    "comments-everywhere": "; head\n[global]\nfilename=/tmp/x ; trailing\n  # indented\n"
    "size=1m # hash\n[a]\nrw=read;write\nbs=4k\n",  # fmt: skip
    "alias-and-bare": "[global]\nfilename=/tmp/x\nsize=1m\n[a]\nrw=read\nreadwrite=write\n"
    "norandommap\n",  # fmt: skip
    "global-prefix": "[globalx]\nfilename=/tmp/x\nsize=1m\n[a]\nrw=read\n",
    "colon-list": "[a]\nfilename=/tmp/x\\:y:/tmp/z\nsize=1m\nrw=trim\n",
    "two-jobs": "[global]\nsize=1m\n[a]\nfilename=/tmp/a\n[b]\nfilename=/tmp/b\nrw=randrw\n",
    "no-filename": "[a]\nsize=1m\nrw=read\n",
}
REFUSED_BY_READER = {
    "include": "[global]\nfilename=/tmp/x\n[a]\ninclude other.fio\n",
    "env": "[a]\nfilename=${HOME}/x\nsize=1m\n",
    "odd-header": "[a] b\nfilename=/tmp/x\n",
    "outside": "size=1m\n[a]\nfilename=/tmp/x\n",
}


def fio_view(fio_path: str, text: str, folder: Path) -> list[tuple[str, dict[str, str | None]]]:
    """Each job fio would run with the options it ends up with, from fio's own parse trace."""
    jobfile = folder / "view.fio"
    jobfile.write_text(text)
    done = subprocess.run([fio_path, "--parse-only", "--debug=parse", str(jobfile)],
                          capture_output=True, text=True, timeout=60, check=False)  # fmt: skip
    defaults: dict[str, str | None] = {}
    jobs: list[tuple[str, dict[str, str | None]]] = []
    current = defaults
    for line in (done.stdout + done.stderr).splitlines():
        section = re.search(r"Parsing section \[(.*)\]$", line)
        if section:
            name = section.group(1)
            current = defaults if name.startswith("global") else dict(defaults)
            if current is not defaults:
                jobs.append((name, current))
            continue
        option = re.search(r" handle_option=([^,]+), ptr=(.*)$", line)
        if option:
            value = option.group(2)
            current[option.group(1)] = None if value == "(null)" else value
    return jobs


@pytest.mark.fio
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_the_reader_sees_what_fio_sees(fio, tmp_path: Path, name: str) -> None:
    text = CORPUS[name]
    if text is None:
        text = render(Workload(rw="randrw", bs="8k", iodepth=4, extra={"rate_iops": 100}),
                      FILE_TARGET, "s", "libaio").text  # fmt: skip
    facts = read_jobfile(text)
    seen_by_fio = fio_view(fio.path, text, tmp_path)
    assert [job.name for job in facts.jobs] == [job for job, _ in seen_by_fio]
    for job, (_, options) in zip(facts.jobs, seen_by_fio, strict=True):
        mine = dict(job.options)
        assert mine == options, job.name
        fio_files = (options.get("filename") or f"./{job.name}").replace("\\:", "\0")
        assert list(job.files) == [f.replace("\0", ":") for f in fio_files.split(":")]


@pytest.mark.parametrize("name", sorted(REFUSED_BY_READER))
def test_what_the_reader_cannot_predict_is_refused(name: str) -> None:
    with pytest.raises(JobfileError):
        read_jobfile(REFUSED_BY_READER[name])


def test_writes_and_files_come_from_every_section() -> None:
    facts = read_jobfile(CORPUS["global-after-job"])
    assert [(j.name, j.rw, j.writes, j.files) for j in facts.jobs] == [
        ("a", "read", False, ("/tmp/x",)),
        ("b", "randwrite", True, ("/tmp/x",)),  # the later [global] reaches only b
    ]
    assert read_jobfile(CORPUS["global-prefix"]).jobs[0].files == ("/tmp/x",)
    assert read_jobfile(CORPUS["colon-list"]).files == ("/tmp/x:y", "/tmp/z")
    assert read_jobfile(CORPUS["no-filename"]).files == ("./a",)
    with pytest.raises(JobfileError, match="would open ./a"):
        check_jobfile(read_jobfile(CORPUS["no-filename"]), "/tmp/x", "a")
    with pytest.raises(JobfileError, match="read-only.*rw=randwrite"):
        check_jobfile(read_jobfile("[a]\nfilename=/t\nrw=randwrite\n"), "/t", "a", read_only=True)


def test_a_workload_id_cannot_name_a_global_section() -> None:
    with pytest.raises(ValueError, match="global"):
        Workload(id="global-reads", rw="randread", bs="4k")


# --- holes found by trying to break it ------------------------------------------------------


@pytest.mark.parametrize("key", ["include", "includex", "include_file"])
def test_any_option_starting_with_include_is_refused(key: str) -> None:
    """fio reads every line starting with 'include' as a file to pull in (include=x too)."""
    with pytest.raises(ValueError, match="reads any line starting with 'include'"):
        Workload(rw="randread", bs="4k", extra={key: "evil.fio"})


@pytest.mark.parametrize("line", ["include evil.fio", "include=evil.fio", "includex=evil.fio"])
def test_the_reader_refuses_every_include_spelling(line: str) -> None:
    with pytest.raises(JobfileError, match="pulls in another file"):
        read_jobfile(f"[a]\nfilename=/t\n{line}\n")


@pytest.mark.parametrize(
    "value", ["mmap:victim.txt", "mmapshared:sub/../../outside.txt", "shmhuge:x"]
)
def test_io_buffers_cannot_be_backed_by_a_file(value: str) -> None:
    for option in ("mem", "iomem"):
        with pytest.raises(ValueError, match="without a file"):
            Workload(rw="randread", bs="4k", extra={option: value})
    assert Workload(rw="randread", bs="4k", extra={"mem": "mmap"}).extra == {"mem": "mmap"}


@pytest.mark.parametrize("engine", ["nbd", "rdma", "net", "exec", "external"])
def test_engines_that_send_io_elsewhere_are_refused(engine: str) -> None:
    with pytest.raises(ValueError, match="unknown ioengine"):
        Workload(rw="randread", bs="4k", ioengine=engine)


@pytest.mark.fio
def test_files_fio_makes_of_its_own_stay_in_the_run_folder(tmp_path: Path) -> None:
    """verify writes a state file into fio's working folder: that is the run's folder."""
    suite = suite_file(tmp_path, "verify", "{rw: randwrite, bs: 4k, runtime: 1, extra: "
                       "{verify: crc32c, verify_fatal: 1}}")  # fmt: skip
    work = tmp_path / "work"
    work.mkdir()
    out = tmp_path / "results"
    done = ssdcompare("sweep", "--devices", str(tmp_path / "t.img"), "--size", "8m",
                      "--suite", str(suite), "--out", str(out), cwd=work)  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert list(work.iterdir()) == []
    assert list(out.glob("runs/*/*/r1/*verify.state"))


def test_the_time_series_logs_go_only_where_the_template_puts_them() -> None:
    # a suite can neither set the logs nor their interval
    for option, value in (("write_iops_log", "timeseries"), ("log_avg_msec", 10)):
        with pytest.raises(ValueError, match=f"'{option}' is"):
            Workload(rw="randread", bs="4k", extra={option: value})
    job = render(Workload(rw="randread", bs="4k"), FILE_TARGET, "s", "libaio")
    assert "write_lat_log=timeseries" in job.text
    # a jobfile whose log prefix is anything else (a path) is refused
    for prefix in ("/etc/cron.d/x", "../x", "timeseries2"):
        tampered = job.text.replace("write_bw_log=timeseries", f"write_bw_log={prefix}")
        with pytest.raises(JobfileError, match="'write_bw_log' is refused"):
            check_jobfile(read_jobfile(tampered), FILE_TARGET.path, job.job_id)


def test_recording_options_leave_the_workload_hash_alone() -> None:
    job = render(Workload(rw="randread", bs="4k"), FILE_TARGET, "s", "libaio")
    without = "\n".join(line for line in job.text.splitlines()
                        if not line.startswith(("write_", "log_avg_msec")))  # fmt: skip
    assert workload_hash(read_jobfile(without), "all") == workload_hash(
        read_jobfile(job.text), "all"
    )


def test_option_names_come_as_a_list_or_comma_separated() -> None:
    from ssdcompare.suite.options import option_names

    assert option_names("bssplit, rate_iops") == ["bssplit", "rate_iops"]
    assert option_names(("bssplit,kb_base", "rate_iops")) == ["bssplit", "kb_base", "rate_iops"]
