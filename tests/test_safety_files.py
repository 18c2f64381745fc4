"""Files: a file target that is someone else's data is refused; results that cannot be written,
and stored files that are damaged or from a newer version, give one clear line."""

from __future__ import annotations

import contextlib
import hashlib
import html
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from blockdevs import loop_device
from suitefiles import suite_file

from ssdcompare.analysis.frame import load
from ssdcompare.errors import NewerFormatError, SsdcompareError
from ssdcompare.results.store import ResultsDir
from ssdcompare.run import sweep
from ssdcompare.run.plan import PlanOptions, make_plan

SUITES = Path(__file__).parent / "suites"
EXAMPLE = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"
FORMAT_1 = Path(__file__).parent / "data" / "format1-results"


def ssdcompare(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "ssdcompare", *args], capture_output=True,
                          text=True, timeout=300, check=False, cwd=cwd)  # fmt: skip


def write_sweep(target: Path, out: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """A sweep of one writing job against a file target."""
    return ssdcompare("sweep", "--devices", str(target), "--suite",
                      str(SUITES / "one-write.yaml"), "--out", str(out), *extra)  # fmt: skip


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def assert_refused(done: subprocess.CompletedProcess[str], *words: str) -> None:
    assert done.returncode == 2, done.stderr
    assert "refusing to write" in done.stderr and "Traceback" not in done.stderr
    for word in words:
        assert word in done.stderr, done.stderr


@contextmanager
def mounted(device: str, where: Path) -> Iterator[Path]:
    where.mkdir(exist_ok=True)
    subprocess.run(["mount", device, str(where)], check=True)
    try:
        yield where
    finally:
        subprocess.run(["umount", str(where)], check=True)


@pytest.mark.slow  # one of the longest: started early (tests/conftest.py)
@pytest.mark.root
@pytest.mark.fio
def test_the_backing_file_of_a_loop_device_is_never_written(tmp_path: Path) -> None:
    image = tmp_path / "disk.img"
    with loop_device(image, 32 << 20) as loop:
        subprocess.run(["mkfs.ext4", "-q", "-F", loop], check=True)
        with mounted(loop, tmp_path / "mnt") as mnt:
            (mnt / "precious.bin").write_bytes(os.urandom(1 << 20))
            before = sha256(mnt / "precious.bin")
            for flags in ([], ["--destroy-data"]):
                done = write_sweep(image, tmp_path / f"mounted{len(flags)}", *flags)
                assert_refused(done, f"backing file of {Path(loop).name}")
            assert sha256(mnt / "precious.bin") == before
        attached = sha256(image)  # attached but not mounted: still the loop device's data
        done = write_sweep(image, tmp_path / "attached", "--destroy-data")
        assert_refused(done, f"backing file of {Path(loop).name}")
        assert sha256(image) == attached
        # the same file under another name (a hard link) is the same data
        link = tmp_path / "alias.img"
        os.link(image, link)
        assert_refused(write_sweep(link, tmp_path / "link", "--destroy-data"), "backing file")


@pytest.mark.root
@pytest.mark.fio
def test_an_active_swap_file_is_never_written(tmp_path: Path) -> None:
    swap = tmp_path / "swap.img"
    with open(swap, "wb") as handle:
        handle.write(bytes(16 << 20))  # no holes: swapon refuses sparse files
    swap.chmod(0o600)
    subprocess.run(["mkswap", str(swap)], check=True, capture_output=True)
    subprocess.run(["swapon", str(swap)], check=True)
    try:
        before = sha256(swap)
        done = write_sweep(swap, tmp_path / "results", "--destroy-data")
        assert_refused(done, "in use as swap")
        assert sha256(swap) == before
    finally:
        subprocess.run(["swapoff", str(swap)], check=True)


@pytest.mark.fio
def test_a_file_another_process_has_open_is_never_written(tmp_path: Path) -> None:
    data = tmp_path / "database.bin"
    data.write_bytes(os.urandom(4 << 20))
    before = sha256(data)
    holder = subprocess.Popen([sys.executable, "-c", f"f = open({str(data)!r}, 'r+b'); input()"],
                              stdin=subprocess.PIPE)  # fmt: skip
    try:
        # wait until the other process really holds it open
        fd_dir = Path(f"/proc/{holder.pid}/fd")
        deadline = 600
        while not any(os.path.realpath(fd) == str(data) for fd in fd_dir.iterdir()):
            deadline -= 1
            assert deadline, "the holder never opened the file"
            subprocess.run(["sleep", "0.05"], check=True)
        done = write_sweep(data, tmp_path / "results", "--destroy-data")
        assert_refused(done, f"open in process {holder.pid}")
    finally:
        holder.communicate(b"\n", timeout=30)
    assert sha256(data) == before


@pytest.mark.slow  # one of the longest: started early (tests/conftest.py)
@pytest.mark.fio
def test_a_file_that_holds_data_needs_destroy_data_unless_ssdcompare_made_it(
    tmp_path: Path,
) -> None:
    """Text, a database, an archive: no signature names them, and they are data all the same.
    A file of zeros (sparse or written) holds none; a file a sweep made is written again."""
    thesis = tmp_path / "thesis.txt"
    thesis.write_text("my thesis, chapter 1. " * 200_000)
    before = sha256(thesis)
    refused = write_sweep(thesis, tmp_path / "refused")
    assert_refused(refused, f"{thesis} holds data", "not all zeros", "--destroy-data")
    assert sha256(thesis) == before
    planned = ssdcompare("plan", "--devices", str(thesis), "--suite", str(SUITES / "tiny.yaml"))
    assert planned.returncode == 2 and "holds data" in planned.stderr
    assert sha256(thesis) == before
    # zeros, written or a hole: nothing to lose
    zeros = tmp_path / "zeros.img"
    zeros.write_bytes(bytes(8 << 20))
    with open(tmp_path / "sparse.img", "wb") as handle:
        handle.truncate(8 << 20)
    for blank in (zeros, tmp_path / "sparse.img"):
        done = write_sweep(blank, tmp_path / f"{blank.stem}-out")
        assert done.returncode == 0, done.stderr
    # a file the sweep made (and laid out with random data) is written again without consent
    made = tmp_path / "made.img"
    first = write_sweep(made, tmp_path / "first", "--size", "16m")
    assert first.returncode == 0, first.stderr
    again = write_sweep(made, tmp_path / "again", "--size", "16m")
    assert again.returncode == 0, again.stderr
    # ... until something else writes it, or it is copied (the mark names one file as it was)
    copy = tmp_path / "copy.img"
    subprocess.run(["cp", "--preserve=xattr", str(made), str(copy)], check=True)
    with open(made, "r+b") as handle:
        handle.write(b"my own data now")
    for changed in (made, copy):
        kept = sha256(changed)
        assert_refused(write_sweep(changed, tmp_path / f"{changed.stem}-later"), "holds data")
        assert sha256(changed) == kept
    # consent, given: written
    allowed = write_sweep(thesis, tmp_path / "allowed", "--destroy-data")
    assert allowed.returncode == 0, allowed.stderr
    assert sha256(thesis) != before


@pytest.mark.slow  # one of the longest: started early (tests/conftest.py)
@pytest.mark.root
@pytest.mark.fio
def test_a_disk_image_needs_destroy_data(tmp_path: Path) -> None:
    image = tmp_path / "vm-disk.img"
    with open(image, "wb") as handle:
        handle.truncate(32 << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
    before = sha256(image)
    refused = write_sweep(image, tmp_path / "refused")
    assert_refused(refused, "ext4", "--destroy-data")
    assert sha256(image) == before
    reads = ssdcompare(
        "sweep",
        "--devices",
        str(image),
        "--suite",
        str(SUITES / "tiny.yaml"),
        "--runtime",
        "1",
        "--read-only",
        "--out",
        str(tmp_path / "reads"),
    )
    assert reads.returncode == 0, reads.stderr
    assert sha256(image) == before
    allowed = write_sweep(image, tmp_path / "allowed", "--destroy-data")
    assert allowed.returncode == 0, allowed.stderr
    assert "overwriting" in allowed.stderr
    report = (tmp_path / "allowed" / "report.html").read_text()
    assert "--destroy-data overwrote" in report and "ext4" in report


@pytest.mark.slow  # one of the longest: started early (tests/conftest.py)
@pytest.mark.root
@pytest.mark.fio
def test_an_unwritable_or_full_output_place_is_one_clear_line(tmp_path: Path) -> None:
    readonly, full = tmp_path / "readonly", tmp_path / "full"
    for folder, options in ((readonly, "ro,size=1m"), (full, "size=64k")):
        folder.mkdir()
        subprocess.run(["mount", "-t", "tmpfs", "-o", options, "none", str(folder)], check=True)
    try:
        shutil.copytree(EXAMPLE, tmp_path / "copy")
        attempts = {
            "sweep --out": write_sweep(tmp_path / "t.img", readonly / "results", "--size", "8m"),
            "report -o": ssdcompare("report", str(tmp_path / "copy"), "-o",
                                    str(full / "r.html")),  # a report does not fit in 64 KiB
            "export -o": ssdcompare("export", str(tmp_path / "copy"), "-o",
                                    str(readonly / "x.csv")),
            "plan --out": ssdcompare("plan", "--suite", "quick", "--devices",
                                     str(tmp_path / "t.img"), "--size", "1m", "--out",
                                     str(readonly / "plan"), "--no-validate"),
            "full sweep": write_sweep(tmp_path / "u.img", full / "results", "--size", "8m"),
        }  # fmt: skip
    finally:
        for folder in (readonly, full):
            subprocess.run(["umount", str(folder)], check=True)
    for what, done in attempts.items():
        assert done.returncode == 2, (what, done.stderr)
        assert "Traceback" not in done.stderr, what
        error = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
        assert len(error) == 1, (what, done.stderr)
        assert "Read-only file system" in error[0] or "No space left" in error[0], what
    assert "--resume" in attempts["full sweep"].stderr


def damaged_copy(tmp_path: Path) -> Path:
    """A copy of real results to damage."""
    copy = tmp_path / "results"
    shutil.copytree(FORMAT_1, copy)
    return copy


@pytest.mark.parametrize("content", ["[1, 2]", '"text"', "{}", '{"format_version": 2}'])
def test_a_manifest_of_the_wrong_shape_is_a_clear_error(tmp_path: Path, content: str) -> None:
    copy = damaged_copy(tmp_path)
    (copy / "manifest.json").write_text(content)
    done = ssdcompare("report", str(copy))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "manifest.json is damaged" in done.stderr or "format_version" in done.stderr
    if content == '{"format_version": 2}':
        assert "created_at: Field required" in done.stderr  # the field is named


def test_a_damaged_status_is_a_failed_run_not_a_lost_one(tmp_path: Path) -> None:
    copy = damaged_copy(tmp_path)
    status = next((copy / "runs").glob("*/*/r1/status.json"))
    status.write_text("[1, 2]")
    frame = load(copy)
    target, job = status.parent.parent.parent.name, status.parent.parent.name
    rows = frame[(frame["device"] == target) & (frame["job"] == job) & (frame["repeat"] == 1)]
    assert set(rows["status"]) == {"damaged"}
    assert rows["error"].iloc[0].startswith("status.json is damaged")
    runs = [p for p in (copy / "runs").glob("*/*/r*") if p.name[1:].isdigit()]
    assert len(frame.groupby(["device", "job", "repeat"])) == len(runs)  # nothing dropped
    # report and export name the damaged file, on the terminal and in the report's warnings
    said = f"{target} {job} r1: status.json is damaged"
    report = ssdcompare("report", str(copy), "-o", str(tmp_path / "damaged.html"))
    assert report.returncode == 0 and f"warning: damaged, left out: {said}" in report.stderr
    assert said in html.unescape((tmp_path / "damaged.html").read_text())
    export = ssdcompare("export", str(copy), "-o", str(tmp_path / "damaged.csv"))
    assert export.returncode == 0 and f"warning: damaged, left out: {said}" in export.stderr


def test_damaged_cpu_samples_make_the_run_a_failed_one_naming_cpu_json(tmp_path: Path) -> None:
    # judged as "no CPU samples", a damaged cpu.json would pass a CPU-bound result as the
    # drive's: the run is failed instead, and says which file and why
    copy = damaged_copy(tmp_path)
    cpu = copy / "runs/zram1/randread-4k-qd1/r1/cpu.json"
    cpu.write_text('{"samples": "not a list"}')
    frame = load(copy)
    row = frame[(frame["job"] == "randread-4k-qd1") & (frame["repeat"] == 1)
                & frame["device"].str.startswith("zram")].iloc[0]  # fmt: skip
    assert row["status"] == "damaged" and pd_isna(row["iops"])
    assert row["error"].startswith("runs/zram1/randread-4k-qd1/r1/cpu.json is damaged")
    assert "not a list" not in row["error"]  # what the file holds is never quoted
    # a run without any cpu.json is judged without samples, as before
    cpu.unlink()
    frame = load(copy)
    row = frame[(frame["device"] == "zram1") & (frame["job"] == "randread-4k-qd1")].iloc[0]
    assert row["status"] == "ok" and row["iops"] > 0 and pd_isna(row["cpu_busy_pct"])


def pd_isna(value: object) -> bool:
    return value is None or value != value


@pytest.mark.parametrize("which", ["manifest.json", "status.json", "cpu.json"])
def test_a_file_from_a_newer_ssdcompare_says_to_upgrade(tmp_path: Path, which: str) -> None:
    copy = damaged_copy(tmp_path)
    path = copy / which if which == "manifest.json" else next(
        (copy / "runs").glob(f"*/*/r1/{which}"))  # fmt: skip
    data = json.loads(path.read_text())
    data["format_version"] = 99
    path.write_text(json.dumps(data))
    with pytest.raises(NewerFormatError, match="upgrade ssdcompare"):
        load(copy)
    done = ssdcompare("report", str(copy))
    assert done.returncode == 2 and "upgrade ssdcompare" in done.stderr
    assert "Traceback" not in done.stderr


def test_format_1_results_load_and_their_hashes_are_recomputed() -> None:
    """Real results of format 1 (only the manifest was versioned, the hash covered the jobfile
    text): they load through the migration, every status comes out in the current format, and
    two devices of one sweep stay comparable."""
    results = ResultsDir.open(FORMAT_1)
    assert results.manifest.format_version == 2
    statuses = results.statuses()
    assert len(statuses) == 4 and {s.format_version for s in statuses} == {2}
    by_job: dict[str, set[str]] = {}
    for status in statuses:
        by_job.setdefault(status.job, set()).add(status.workload_hash)
    assert all(len(hashes) == 1 for hashes in by_job.values())
    recorded = {json.loads(p.read_text())["workload_hash"]
                for p in (FORMAT_1 / "runs").glob("*/*/r1/status.json")}  # fmt: skip
    assert not recorded & {h for hashes in by_job.values() for h in hashes}  # recomputed
    frame = load(FORMAT_1)
    data_rows = frame[frame["direction"] != "sync"]  # fsync calls have a latency, no rate
    assert set(frame["status"]) == {"ok"} and (data_rows["iops"] > 0).all()


def test_an_unknown_manifest_version_is_refused(tmp_path: Path) -> None:
    copy = damaged_copy(tmp_path)
    data = json.loads((copy / "manifest.json").read_text())
    data["format_version"] = "two"
    (copy / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(SsdcompareError, match="format_version is not a number") as raised:
        ResultsDir.open(copy)
    assert "two" not in str(raised.value)  # what the file holds is never quoted


# --- holes found by trying to break it ------------------------------------------------------


def test_read_only_never_creates_or_extends_a_file(tmp_path: Path) -> None:
    data = tmp_path / "data.bin"
    data.write_bytes(os.urandom(4 << 20))
    before = sha256(data)
    bigger = ssdcompare("sweep", "--devices", str(data), "--size", "64m", "--suite", "quick",
                        "--read-only", "--out", str(tmp_path / "a"))  # fmt: skip
    assert bigger.returncode == 2 and "would make fio lay it out anew" in bigger.stderr
    missing = ssdcompare(
        "sweep",
        "--devices",
        str(tmp_path / "new.img"),
        "--size",
        "8m",
        "--suite",
        "quick",
        "--read-only",
        "--out",
        str(tmp_path / "b"),
    )
    assert missing.returncode == 2 and "--read-only reads only what is there" in missing.stderr
    assert not (tmp_path / "new.img").exists()
    assert sha256(data) == before


@pytest.mark.fio
def test_fio_itself_refuses_to_change_a_target_the_plan_does_not_write(tmp_path: Path) -> None:
    """Reading from an offset past the end would make fio extend the file: with --readonly
    (given to fio for every target no job writes) it cannot."""
    data = tmp_path / "data.bin"
    data.write_bytes(os.urandom(4 << 20))
    before = sha256(data)
    suite = tmp_path / "offset.yaml"
    suite.write_text("name: offset\ndescription: d\nworkloads:\n"
                     "  - {rw: randread, bs: 4k, runtime: 1, extra: {offset: 3m}}\n")  # fmt: skip
    done = ssdcompare("sweep", "--devices", str(data), "--suite", str(suite),
                      "--out", str(tmp_path / "results"))  # fmt: skip
    assert "Traceback" not in done.stderr
    (status,) = (tmp_path / "results").glob("runs/*/*/r1/status.json")
    assert "--readonly" in json.loads(status.read_text())["command"]
    assert sha256(data) == before and data.stat().st_size == 4 << 20


@pytest.mark.root
@pytest.mark.fio
def test_a_device_under_a_stacked_loop_device_is_never_written(tmp_path: Path) -> None:
    with loop_device(tmp_path / "lower.img", 32 << 20) as lower:
        upper = subprocess.run(["losetup", "--find", "--show", lower], capture_output=True,
                               text=True, check=True).stdout.strip()  # fmt: skip
        try:
            subprocess.run(["mkfs.ext4", "-q", "-F", upper], check=True)
            with mounted(upper, tmp_path / "mnt") as mnt:
                (mnt / "precious.bin").write_bytes(os.urandom(1 << 20))
                before = sha256(mnt / "precious.bin")
                done = write_sweep(Path(lower), tmp_path / "results", "--destroy-data")
                assert_refused(done, f"backing device of {Path(upper).name}")
                assert sha256(mnt / "precious.bin") == before
        finally:
            subprocess.run(["losetup", "--detach", upper], check=False)


def hold_open(path: Path, flags: str = "r+b") -> subprocess.Popen:
    holder = subprocess.Popen(
        [sys.executable, "-c", f"f = open({str(path)!r}, {flags!r}); print('open', flush=True);"
         " input()"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert holder.stdout is not None and holder.stdout.readline() == "open\n"
    return holder


@pytest.mark.fio
def test_a_file_open_elsewhere_is_refused_under_any_name(tmp_path: Path) -> None:
    data = tmp_path / "db.dat"
    data.write_bytes(os.urandom(4 << 20))
    alias = tmp_path / "alias.dat"
    os.link(data, alias)  # the same data under another name
    before = sha256(data)
    holder = hold_open(data)
    try:
        done = write_sweep(alias, tmp_path / "results", "--destroy-data")
        assert_refused(done, f"open in process {holder.pid}")
    finally:
        holder.communicate("\n", timeout=30)
    assert sha256(data) == before


@pytest.mark.root
@pytest.mark.fio
def test_a_device_open_for_writing_elsewhere_is_never_written(tmp_path: Path) -> None:
    """A virtual machine's raw disk, say: open read-write, not exclusively."""
    with loop_device(tmp_path / "vm.img", 32 << 20) as loop:
        holder = hold_open(Path(loop))
        try:
            done = write_sweep(Path(loop), tmp_path / "results", "--destroy-data")
            assert_refused(done, f"open in process {holder.pid}")
        finally:
            holder.communicate("\n", timeout=30)


@pytest.mark.parametrize(
    ("spec", "said"),
    [("/proc/1/root/tmp/x.img", "the kernel's view"), ("/sys/kernel/x", "the kernel's view"),
     ("/dev/mapper/vg0-data", "unknown device"), ("/dev/../dev/nosuch", "unknown device")],
)  # fmt: skip
def test_kernel_views_and_missing_devices_are_not_file_targets(spec: str, said: str) -> None:
    done = ssdcompare("plan", "--suite", "quick", "--devices", spec, "--size", "16m",
                      "--no-validate")  # fmt: skip
    assert done.returncode == 2 and said in done.stderr
    assert not Path("/dev/mapper/vg0-data").exists()


@pytest.mark.root
@pytest.mark.fio
def test_resume_refuses_a_new_file_whose_filesystem_went_away(tmp_path: Path) -> None:
    """Resumed after an unmount, fio would write into the mount point's folder on the disk
    below: the folder's filesystem is part of the target's identity."""
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "none", str(mnt)], check=True)
    try:
        plan = make_plan(str(SUITES / "tiny.yaml"), str(mnt / "test.img"),
                         PlanOptions(size_bytes=8 << 20), require_fio=True)  # fmt: skip
        results, _ = sweep.start(plan, tmp_path / "results", command_line=["test"])
    finally:
        subprocess.run(["umount", str(mnt)], check=True)
    done = ssdcompare("sweep", "--resume", str(results.path))
    assert done.returncode == 2 and "filesystem of its folder" in done.stderr
    assert list(mnt.iterdir()) == []


@pytest.mark.slow  # one of the longest: started early (tests/conftest.py)
@pytest.mark.fio
def test_an_ok_run_without_its_output_is_failed_and_rerun(tmp_path: Path) -> None:
    out = tmp_path / "results"
    first = ssdcompare(
        "sweep",
        "--devices",
        str(tmp_path / "t.img"),
        "--size",
        "8m",
        "--suite",
        str(SUITES / "tiny.yaml"),
        "--runtime",
        "1",
        "--out",
        str(out),
    )
    assert first.returncode == 0, first.stderr
    lost = next(out.glob("runs/*/randread-4k-qd1/r1/fio.json"))
    lost.unlink()
    row = load(out).query("job == 'randread-4k-qd1'").iloc[0]
    assert row["status"] == "failed" and "fio.json is missing" in row["error"]
    again = ssdcompare("sweep", "--resume", str(out))
    assert again.returncode == 0, again.stderr
    assert lost.exists() and (lost.parent.parent / "r1.attempt-1").is_dir()
    assert set(load(out)["status"]) == {"ok"}


@pytest.mark.fio
def test_a_span_cut_to_a_smaller_file_is_shown_and_not_compared(tmp_path: Path) -> None:
    small, large = tmp_path / "small.img", tmp_path / "large.img"
    for path, size in ((small, 8 << 20), (large, 64 << 20)):
        with open(path, "wb") as handle:
            handle.truncate(size)
    suite = suite_file(tmp_path, "span", "{rw: randread, bs: 4k, iodepth: 4, size: 32m}",
                       defaults="{runtime: 1}")  # fmt: skip
    out = tmp_path / "results"
    done = ssdcompare("sweep", "--devices", f"{small},{large}", "--suite", str(suite),
                      "--out", str(out))  # fmt: skip
    assert done.returncode == 0, done.stderr
    said = " ".join((done.stdout + done.stderr).split())
    assert "small.img is smaller than the 32 MiB span of randread-4k-qd4" in said
    frame = load(out).set_index("device")
    assert frame.loc["small.img", "span"] == "8 MiB (cut from 32 MiB: the target is smaller)"
    assert frame.loc["large.img", "span"] == "32 MiB"
    assert (frame.loc["small.img", "span_bytes"], frame.loc["large.img", "span_bytes"]) == (
        8 << 20, 32 << 20)  # fmt: skip
    # not the same workload: the summary keeps them apart instead of calling one faster
    hashes = frame["workload_hash"]
    assert hashes["small.img"] != hashes["large.img"]


@pytest.mark.fio
def test_a_file_swapped_mid_sweep_is_named_a_file_in_the_skip_reason(tmp_path: Path) -> None:
    suite = suite_file(tmp_path, "reads", "{rw: randread, bs: 4k}", "{rw: read, bs: 128k}",
                       defaults="{runtime: 1, size: 8m}")  # fmt: skip
    target = tmp_path / "t.img"
    target.write_bytes(bytes(8 << 20))
    swapped: list[bool] = []

    def swap_after_first_job(progress) -> None:
        if progress.state == "ok" and not swapped:
            other = tmp_path / "other.img"
            other.write_bytes(bytes(8 << 20))
            os.replace(other, target)  # the same name, another file
            swapped.append(True)

    plan = make_plan(str(suite), [str(target)], require_fio=True)
    results, _ = sweep.start(plan, tmp_path / "results")
    outcome = sweep.run(plan, results, progress=swap_after_first_job)
    assert [s.status for s in outcome.statuses] == ["ok", "skipped"]
    assert "t.img is no longer the file the sweep started on: file (inode) was" in (
        outcome.statuses[1].error or "")  # fmt: skip
    with pytest.raises(SsdcompareError, match=r"not the same file\(s\) as when") as refused:
        sweep.reopen(tmp_path / "results")
    assert "If the file was replaced on purpose" in str(refused.value)


def someone_makes_a_filesystem_before_the_second_look(
    monkeypatch: pytest.MonkeyPatch, target: Path, shrunk: int | None = None
) -> None:
    """Someone runs mkfs.ext4 (label "theirs") on `target` between the first writing job and
    the guard's look before the second; first cut to `shrunk` bytes, if given."""
    from ssdcompare.run import access

    real = access.check_in_use
    looks: list[str] = []

    def look(part: object, exclusive: bool = True) -> None:
        looks.append("look")
        if len(looks) == 2:  # after the first writing job, before the second
            if shrunk is not None:
                os.truncate(target, shrunk)
            subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "theirs", str(target)], check=True)
        real(part, exclusive)  # type: ignore[arg-type]

    monkeypatch.setattr(access, "check_in_use", look)


@pytest.mark.fio
def test_a_filesystem_made_on_the_target_mid_sweep_stops_its_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Someone makes a filesystem on the target between two writing jobs: the guard's look
    before the second finds it (blkid on the target itself), the writing job is skipped with
    the reason and the filesystem is left whole; the reading job after it still runs."""
    target = tmp_path / "t.img"
    someone_makes_a_filesystem_before_the_second_look(monkeypatch, target)
    suite = suite_file(tmp_path, "w", "{rw: randwrite, bs: 4k, runtime: 1}",
                       "{rw: write, bs: 128k, runtime: 1}", "{rw: randread, bs: 4k, runtime: 1}",
                       defaults="{size: 16m}")  # fmt: skip
    plan = make_plan(str(suite), str(target), PlanOptions(size_bytes=16 << 20))
    results, _ = sweep.start(plan, tmp_path / "r", command_line=["test"])
    outcome = sweep.run(plan, results)
    states = [(s.job, s.status) for s in outcome.statuses]
    assert states == [("randwrite-4k-qd1", "ok"), ("write-128k-qd1", "skipped"),
                      ("randread-4k-qd1", "ok")]  # fmt: skip
    assert "now carries an ext4 filesystem" in (outcome.statuses[1].error or "")
    blkid = subprocess.run(["blkid", "-p", "-o", "export", str(target)], capture_output=True,
                           text=True, check=False)  # fmt: skip
    assert "LABEL=theirs" in blkid.stdout  # their filesystem, whole


def ext4_image(tmp_path: Path, label: str, size: int) -> Path:
    image = tmp_path / f"{label}.ext4"
    with image.open("wb") as out:
        out.truncate(size)
    subprocess.run(["mkfs.ext4", "-q", "-F", "-L", label, str(image)], check=True)
    return image


@pytest.mark.fio
def test_data_the_sweep_wrote_itself_that_passes_for_a_filesystem_is_not_someone_elses(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Random data can pass for a signature (blkid has taken it for a jbd journal). The sweep
    lays a new file out with data that does so every time, here an ext4 image: its first
    writing job still runs (a file it made and has only laid out holds no one's data). A
    filesystem someone makes afterwards is still found before the next writing job, and left
    whole."""
    from ssdcompare.target import file

    image = ext4_image(tmp_path, "lookalike", 16 << 20).read_bytes()
    served = [0]

    def lookalike_data(count: int) -> bytes:
        start = served[0]
        served[0] += count
        return image[start : start + count]

    monkeypatch.setattr(file, "_random_bytes", lookalike_data)
    target = tmp_path / "t.img"
    someone_makes_a_filesystem_before_the_second_look(monkeypatch, target)
    suite = suite_file(tmp_path, "w", "{rw: randwrite, bs: 4k, runtime: 1, size: 1m}",
                       "{rw: write, bs: 128k, runtime: 1}", defaults="{size: 16m}")  # fmt: skip
    plan = make_plan(str(suite), str(target), PlanOptions(size_bytes=16 << 20))
    results, _ = sweep.start(plan, tmp_path / "r", command_line=["test"])
    outcome = sweep.run(plan, results)
    assert served[0] == 16 << 20  # laid out with the look-alike data
    states = [(s.job, s.status) for s in outcome.statuses]
    assert states == [("randwrite-4k-qd1", "ok"), ("write-128k-qd1", "skipped")], outcome
    assert "LABEL theirs" in (outcome.statuses[1].error or "")
    assert not file.made_by_ssdcompare(str(target))  # nor marked as a file it made
    blkid = subprocess.run(["blkid", "-p", "-o", "export", str(target)], capture_output=True,
                           text=True, check=False)  # fmt: skip
    assert "LABEL=theirs" in blkid.stdout  # their filesystem, whole


@pytest.mark.fio
def test_a_file_cut_short_and_given_a_filesystem_is_laid_out_but_not_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Someone cuts the sweep's file to 8 MiB and makes a filesystem in it between two
    writing jobs: the next run lays the file out to its size again (after what is there),
    and the look after that finds their filesystem: no more writes, and it is left whole."""
    from ssdcompare.target import file

    target = tmp_path / "t.img"
    someone_makes_a_filesystem_before_the_second_look(monkeypatch, target, shrunk=8 << 20)
    suite = suite_file(tmp_path, "w", "{rw: randwrite, bs: 4k, runtime: 1}",
                       "{rw: write, bs: 128k, runtime: 1}", defaults="{size: 16m}")  # fmt: skip
    plan = make_plan(str(suite), str(target), PlanOptions(size_bytes=16 << 20))
    results, _ = sweep.start(plan, tmp_path / "r", command_line=["test"])
    outcome = sweep.run(plan, results)
    states = [(s.job, s.status) for s in outcome.statuses]
    assert states == [("randwrite-4k-qd1", "ok"), ("write-128k-qd1", "skipped")], outcome
    assert "LABEL theirs" in (outcome.statuses[1].error or "")
    assert target.stat().st_size == 16 << 20  # laid out again
    blkid = subprocess.run(["blkid", "-p", "-o", "export", str(target)], capture_output=True,
                           text=True, check=False)  # fmt: skip
    assert "LABEL=theirs" in blkid.stdout
    assert not file.made_by_ssdcompare(str(target))


@pytest.mark.fio
@pytest.mark.parametrize("kind", ["file", pytest.param("loop", marks=pytest.mark.root)])
def test_a_filesystem_made_while_a_job_writes_stops_the_next_writing_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str
) -> None:
    """Someone makes a filesystem on the target (a file, or the file a loop device writes
    to) while the first writing job runs: after fio's writes, before the run ends. What the
    sweep sees after its own run is never taken for its own: the look before the next writing
    job finds the filesystem, and that job is skipped."""
    from ssdcompare.run import jobrun

    real = jobrun.run_fio
    made: list[str] = []

    def fio_then_someone_makes_a_filesystem(*args: object, **kwargs: object) -> object:
        outcome = real(*args, **kwargs)  # type: ignore[arg-type]
        if not made:
            made.append("theirs")
            subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "theirs", str(image)], check=True)
        return outcome

    monkeypatch.setattr(jobrun, "run_fio", fio_then_someone_makes_a_filesystem)
    suite = suite_file(tmp_path, "w", "{rw: randwrite, bs: 4k, runtime: 1}",
                       "{rw: write, bs: 128k, runtime: 1}", defaults="{size: 16m}")  # fmt: skip
    image = tmp_path / "t.img"
    with contextlib.ExitStack() as stack:
        target = str(image)
        if kind == "loop":
            target = stack.enter_context(loop_device(image, 16 << 20))
        plan = make_plan(str(suite), target, PlanOptions(size_bytes=16 << 20))
        results, _ = sweep.start(plan, tmp_path / "r", command_line=["test"])
        outcome = sweep.run(plan, results)
    states = [(s.job, s.status) for s in outcome.statuses]
    assert states == [("randwrite-4k-qd1", "ok"), ("write-128k-qd1", "skipped")], outcome
    assert "LABEL theirs" in (outcome.statuses[1].error or "")
    blkid = subprocess.run(["blkid", "-p", "-o", "export", str(image)], capture_output=True,
                           text=True, check=False)  # fmt: skip
    assert "LABEL=theirs" in blkid.stdout


@pytest.mark.root
@pytest.mark.fio
def test_on_a_filesystem_of_whole_seconds_a_laid_out_file_is_looked_at_and_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ext4 with 128-byte inodes keeps whole seconds only: a write just after the sweep's
    lay-out leaves the file's times as they were. Such a file is never taken as "only laid
    out since": the look runs and finds a filesystem made right after the lay-out. A sweep
    there without one runs every job (the sweep's own lay-out is no one else's change)."""
    from ssdcompare.run import access

    with loop_device(tmp_path / "fs.img", 64 << 20) as device:
        subprocess.run(["mkfs.ext4", "-q", "-F", "-I", "128", device], check=True)
        with mounted(device, tmp_path / "mnt") as place:
            suite = suite_file(tmp_path, "rw", "{rw: randread, bs: 4k, runtime: 1}",
                               "{rw: randwrite, bs: 4k, runtime: 1}",
                               defaults="{size: 16m}")  # fmt: skip
            calm = place / "calm.img"
            plan = make_plan(str(suite), str(calm), PlanOptions(size_bytes=16 << 20))
            results, _ = sweep.start(plan, tmp_path / "r1", command_line=["test"])
            states = [s.status for s in sweep.run(plan, results).statuses]
            assert states == ["ok", "ok"]
            assert calm.stat().st_ctime_ns % 1_000_000_000 == 0  # whole seconds indeed
            target = place / "t.img"
            real = access.lay_out

            def lay_out_then_someone_makes_a_filesystem(fd: int, size: int) -> int:
                done = real(fd, size)
                subprocess.run(["mkfs.ext4", "-q", "-F", "-L", "theirs", str(target)],
                               check=True)  # fmt: skip
                return done

            monkeypatch.setattr(access, "lay_out", lay_out_then_someone_makes_a_filesystem)
            plan = make_plan(str(suite), str(target), PlanOptions(size_bytes=16 << 20))
            results, _ = sweep.start(plan, tmp_path / "r2", command_line=["test"])
            outcome = sweep.run(plan, results)
            blkid = subprocess.run(["blkid", "-p", "-o", "export", str(target)],
                                   capture_output=True, text=True, check=False)  # fmt: skip
    assert [s.status for s in outcome.statuses] == ["ok", "skipped"]
    assert "LABEL theirs" in (outcome.statuses[1].error or "")
    assert "LABEL=theirs" in blkid.stdout


@pytest.mark.fio
@pytest.mark.parametrize("how", ["written into it", "a new file in its place, no key"])
def test_plain_data_written_into_the_sweeps_file_between_jobs_is_not_written_over(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """Someone writes plain text (no signature) into the sweep's file between two writing
    jobs, or puts a new file of text in its place (ext4 often gives it the same inode
    number), also where the sweep cannot mark its files (no key of this user's): the file is
    not as the sweep's last write left it, so the next writing job is skipped and the text
    is kept."""
    from ssdcompare.target import file

    target = tmp_path / "t.img"
    text = b"someone's notes\n" * (1 << 16)
    if how.endswith("no key"):
        monkeypatch.setattr(file, "signature", lambda facts: None)

    def someone_writes_text(progress: sweep.Progress) -> None:
        if progress.state == "ok" and progress.job == "randwrite-4k-qd1":
            if how.startswith("a new file"):
                target.unlink()
                target.write_bytes(text + b"\0" * ((16 << 20) - len(text)))
            else:
                with target.open("r+b") as handle:
                    handle.write(text)

    suite = suite_file(tmp_path, "w", "{rw: randwrite, bs: 4k, runtime: 1}",
                       "{rw: write, bs: 128k, runtime: 1}", defaults="{size: 16m}")  # fmt: skip
    plan = make_plan(str(suite), str(target), PlanOptions(size_bytes=16 << 20))
    results, _ = sweep.start(plan, tmp_path / "r", command_line=["test"])
    outcome = sweep.run(plan, results, progress=someone_writes_text)
    assert [s.status for s in outcome.statuses] == ["ok", "skipped"]
    reason = outcome.statuses[1].error or ""
    # the same inode number again, or another one
    assert "changed by someone else" in reason or "no longer the file" in reason, reason
    assert target.read_bytes()[: len(text)] == text
