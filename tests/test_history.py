"""`ssdcompare history FOLDER...`: a drive's results over several results folders in date
order. Three real sweeps of one loop device, the last after the same image was attached
again under another number (the drive followed by its backing file), the second with one
job's runtime changed (that date not comparable); copies of a folder with the kernel or the
firmware changed in their manifests (the change said between its two dates, and marked on
the trend lines of the HTML page); and bad input, said in one line."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from blockdevs import attached_loop, loop_device, wait_detached
from conftest import CliResult
from suitefiles import suite_file

import ssdcompare

# one worker runs this file's tests (--dist loadgroup): the three sweeps are made once
pytestmark = pytest.mark.xdist_group("history")

EXAMPLE = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"
DEFAULTS = "{runtime: 1, size: 16m}"
SAME = "{rw: randread, bs: 4k, iodepth: 1}"
LONGER = "{rw: read, bs: 64k, iodepth: 4}"  # its runtime is 2 s in the second sweep
JOBS = ("randread-4k-qd1", "read-64k-qd4")
NEW_KERNEL = "9.9.9-history"


@dataclass(frozen=True)
class Dated:
    """Three sweeps of one drive (A, B, C in the order made) and the loop devices it was."""

    folders: list[Path]
    first: str  # the loop device of A and B
    second: str  # the one C measured: the same image under another number


def _sweep(device: str, suite: Path, out: Path) -> Path:
    run = ssdcompare.run_sweep(device, suite=str(suite), out=out, read_only=True, report=False)
    assert run.complete
    return run.path


@pytest.fixture(scope="module")
def dated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dated]:
    """A and B on a loop device (B with LONGER's runtime 2 s), then the image detached, its
    number taken by a placeholder and the image attached again for C: 6 fio runs."""
    folder = tmp_path_factory.mktemp("history")
    (folder / "longer").mkdir()
    plain = suite_file(folder, "history", SAME, LONGER, defaults=DEFAULTS)
    longer = suite_file(folder / "longer", "history", SAME,
                        LONGER.replace("}", ", runtime: 2}"), defaults=DEFAULTS)  # fmt: skip
    image = folder / "drive.img"
    with loop_device(image, 64 << 20) as first:
        a = _sweep(first, plain, folder / "A")
        b = _sweep(first, longer, folder / "B")
    wait_detached(first, image)  # its number free before the placeholder takes it
    (folder / "placeholder.img").write_bytes(b"\0" * (1 << 20))
    with (
        attached_loop(folder / "placeholder.img", first, direct_io=False),
        attached_loop(image) as second,
    ):
        assert second is not None and second != first  # the name really changed
        c = _sweep(second, plain, folder / "C")
    yield Dated([a, b, c], first, second)


def table_of(lines: list[str], drive: str) -> dict[str, list[str]]:
    """The text output's table of `drive`: the header's and each job's cells by job."""
    start = lines.index(drive)
    header = next(i for i in range(start, len(lines)) if lines[i].strip().startswith("job  "))
    rows = {}
    for line in lines[header:]:
        if not line.strip():
            break
        cells = re.split(r"\s{2,}", line.strip())
        rows[cells[0]] = cells[1:]
    return rows


def history_json(run_cli: Any, *args: str | Path) -> dict[str, Any]:
    done = run_cli("history", *map(str, args), "--format", "json")
    assert done.exit_code == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.root
@pytest.mark.fio
def test_a_renamed_drive_is_followed_by_its_backing_file_over_three_dates(
    dated: Dated, run_cli: Any
) -> None:
    a, b, c = dated.folders
    first, second = Path(dated.first).name, Path(dated.second).name
    done = run_cli("history", str(c), str(a), str(b))  # given out of order
    assert done.exit_code == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("History of IOPS: 1 drive over 3 dates")
    found = history_json(run_cli, c, a, b)
    assert [d["folder"] for d in found["dates"]] == [str(a), str(b), str(c)]
    labels = [d["date"] for d in found["dates"]]
    (drive,) = found["drives"]
    assert drive["drive"] == first
    assert drive["names"] == [first, first, second]
    assert drive["followed"][0] == "first seen" and drive["followed"][1] == "by name"
    assert drive["followed"][2].startswith("by backing file")
    assert any(line.strip().startswith(f"{second} at {labels[2]}, followed by backing file")
               for line in lines)  # fmt: skip
    table = table_of(lines, first)
    assert table["job"] == labels
    assert set(JOBS) <= set(table)
    for job in JOBS:
        assert len(table[job]) == 3
        assert all(re.match(r"[\d.]+k? IOPS", cell) for cell in table[job]), table[job]
    jobs = {j["job"]: j for j in drive["jobs"]}
    assert set(jobs) == set(JOBS)
    for job in jobs.values():
        assert [p["date"] for p in job["points"]] == labels
        assert all(p["figure"] > 0 and p["repeats"] == 1 for p in job["points"])
        assert job["reference"] == labels[0] and job["points"][0]["change_pct"] == 0


@pytest.mark.root
@pytest.mark.fio
def test_a_date_that_ran_another_jobfile_is_not_comparable(dated: Dated, run_cli: Any) -> None:
    a, b, c = dated.folders
    found = history_json(run_cli, a, b, c)
    jobs = {j["job"]: j["points"] for j in found["drives"][0]["jobs"]}
    changed = jobs["read-64k-qd4"][1]
    assert changed["mark"] == "not comparable" and changed["change_pct"] is None
    assert "runtime 2 s vs 1 s" in changed["why"]
    assert changed["figure"] > 0  # shown all the same
    # the dates that ran the first date's jobfile keep their change
    assert isinstance(jobs["read-64k-qd4"][2]["change_pct"], float)
    assert all(isinstance(p["change_pct"], float) for p in jobs["randread-4k-qd1"])
    lines = run_cli("history", str(a), str(b), str(c)).stdout.splitlines()
    table = table_of(lines, Path(dated.first).name)
    assert table["read-64k-qd4"][1].endswith("IOPS not comparable")
    assert "%" not in table["read-64k-qd4"][1]
    marks = [line.strip() for line in lines if line.strip().startswith("read-64k-qd4 at ")]
    # (other dates may carry a verdict: the machine is shared)
    assert f"read-64k-qd4 at {table['job'][1]}: not comparable: {changed['why']}" in marks


def with_manifest(source: Path, copy: Path, created_at: str, **changes: Any) -> Path:
    """A copy of a results folder made at `created_at`, its manifest changed: `kernel`
    (the host's), `firmware` (every device's)."""
    shutil.copytree(source, copy, ignore=shutil.ignore_patterns(".cache"))
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["created_at"] = created_at
    if "kernel" in changes:
        manifest["host"]["kernel"] = changes["kernel"]
    for device in manifest["devices"] if "firmware" in changes else []:
        device["firmware"] = changes["firmware"]
    for device in manifest["devices"] if "serial" in changes else []:
        device["serial"] = f"{changes['serial']}-{device['name']}"
    (copy / "manifest.json").write_text(json.dumps(manifest, indent=2))
    return copy


class _Page(HTMLParser):
    """The history page's trend lines: per job, its points' x and titles, and its change
    marks' x and titles."""

    def __init__(self) -> None:
        super().__init__()
        self.jobs: dict[str, dict[str, list[tuple[float, str]]]] = {}
        self._job: str | None = None
        self._open: tuple[str, float] | None = None  # a point or mark awaiting its title
        self._in_title = False
        self._title = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag == "div" and values.get("data-job"):
            self._job = values["data-job"]
            self.jobs[str(self._job)] = {"points": [], "changes": []}
        elif tag == "circle" and "point" in (values.get("class") or ""):
            self._open = ("points", float(values["cx"] or "nan"))
        elif tag == "line" and self._open is not None and self._open[0] == "changes":
            self._open = ("changes", float(values["x1"] or "nan"))
        elif tag == "g" and values.get("class") == "change":
            self._open = ("changes", float("nan"))
        elif tag == "title":
            self._in_title = True
            self._title = ""

    def handle_data(self, data: str) -> None:
        if self._in_title:
            self._title += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "title":
            self._in_title = False
        elif tag in ("circle", "g") and self._open is not None and self._job is not None:
            self.jobs[self._job][self._open[0]].append((self._open[1], self._title))
            self._open = None
        elif tag == "table":
            self._job = None


@pytest.mark.root
@pytest.mark.fio
def test_a_kernel_change_is_said_between_its_dates_and_marked_on_the_trend_lines(
    dated: Dated, run_cli: Any, tmp_path: Path
) -> None:
    a, b, c = dated.folders
    assert ssdcompare.history([a, b, c]).drives[0].steps == []  # nothing changed, so far
    d = with_manifest(c, tmp_path / "D", "2099-01-01T00:00:00+00:00", kernel=NEW_KERNEL)
    page = tmp_path / "history.html"
    done = run_cli("history", str(a), str(b), str(c), str(d), "-o", str(page))
    assert done.exit_code == 0, done.stderr
    assert f"history: {page}" in done.stderr
    found = ssdcompare.history([a, b, c, d])
    labels = [date.label for date in found.dates]
    said = [line.strip() for line in done.stdout.splitlines()
            if line.strip().startswith("between")]  # fmt: skip
    old = json.loads((c / "manifest.json").read_text())["host"]["kernel"]
    assert said == [f"between {labels[2]} and {labels[3]}: kernel {old} -> {NEW_KERNEL}"]
    parsed = _Page()
    parsed.feed(page.read_text())
    assert set(parsed.jobs) == set(JOBS)
    for job, drawn in parsed.jobs.items():
        points = drawn["points"]
        assert len(points) == len(labels), job  # a point per date
        assert [title.split(": ")[0] for _, title in points] == labels
        (mark,) = drawn["changes"]
        assert mark[1] == said[0]
        assert points[2][0] < mark[0] < points[3][0]  # between the two dates it names


def test_a_firmware_change_is_said_and_the_history_reads_from_python(tmp_path: Path) -> None:
    folders = [
        with_manifest(EXAMPLE, tmp_path / "one", "2026-11-01T10:00:00+00:00", firmware="1.0"),
        with_manifest(EXAMPLE, tmp_path / "two", "2026-11-02T10:00:00+00:00", firmware="1.0"),
        with_manifest(EXAMPLE, tmp_path / "three", "2026-11-03T10:00:00+00:00", firmware="2.1"),
    ]
    found = ssdcompare.history(list(reversed(folders)), metric="p99", devices=["loop1"])
    assert [d.path for d in found.dates] == folders
    (drive,) = found.drives
    assert drive.name == "loop1" and drive.names == ["loop1"] * 3
    (step,) = drive.steps
    assert (step.before, step.after, step.what) == (1, 2, ["firmware 1.0 -> 2.1"])
    frame = found.frame()
    assert len(frame) == len(drive.trends) * 3 and set(frame["metric"]) == {"p99"}
    # the same copies: every figure equal to the first date's
    assert set(frame["change_pct"].dropna()) == {0.0}
    limited = frame[frame["verdict"].isin(["cpu", "host", "disturbed", "throttled"])]
    assert not limited.empty and (limited["mark"] == limited["verdict"]).all()


def test_a_name_that_holds_another_drive_than_before_is_said(tmp_path: Path) -> None:
    folders = [
        with_manifest(EXAMPLE, tmp_path / "one", "2026-11-01T10:00:00+00:00", serial="S1"),
        with_manifest(EXAMPLE, tmp_path / "two", "2026-11-02T10:00:00+00:00", serial="S2"),
        with_manifest(EXAMPLE, tmp_path / "three", "2026-11-03T10:00:00+00:00", serial="S2"),
    ]
    found = ssdcompare.history(folders, devices=["loop1"])
    (drive,) = found.drives
    assert drive.followed == ["first seen", "by name", "by name"]
    (step,) = drive.steps
    assert (step.before, step.after) == (0, 1)
    assert step.what == [f"another drive under the same name: serial S1-loop1 (loop device) in "
                         f"an earlier folder, serial S2-loop1 (loop device) in "
                         f"{found.dates[1].label}"]  # fmt: skip


@pytest.fixture(scope="module")
def two_dates(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    folder = tmp_path_factory.mktemp("two-dates")
    return [with_manifest(EXAMPLE, folder / "one", "2026-11-01T10:00:00+00:00"),
            with_manifest(EXAMPLE, folder / "two", "2026-11-02T10:00:00+00:00")]  # fmt: skip


def one_line_error(done: CliResult, *said: str) -> None:
    assert done.exit_code == 2, done
    assert "Traceback" not in done.stderr
    (line,) = done.stderr.strip().splitlines()
    assert line.startswith("error: ")
    for words in said:
        assert words in line, line


def test_bad_input_is_said_in_one_line(
    two_dates: list[Path], run_cli: Any, tmp_path: Path
) -> None:
    one, two = map(str, two_dates)
    (tmp_path / "empty").mkdir()
    one_line_error(run_cli("history", one, str(tmp_path / "empty")),
                   "is not an ssdcompare results folder")  # fmt: skip
    one_line_error(run_cli("history", one, str(tmp_path / "missing")),
                   "is not an ssdcompare results folder")  # fmt: skip
    one_line_error(run_cli("history", one), "two or more different results folders")
    one_line_error(run_cli("history", one, one + "/"), "two or more different results folders")
    one_line_error(run_cli("history", one, two, "--device", "nvme9n9"),
                   "--device 'nvme9n9' is no drive", "loop1", "zram1")  # fmt: skip
    one_line_error(run_cli("history", one, two, "--metric", "speed"), "--metric: no metric")
    one_line_error(run_cli("history", one, two, "-o", str(tmp_path / "no" / "h.html")),
                   "does not exist")  # fmt: skip


def test_the_page_is_never_written_over_a_file_ssdcompare_did_not_make(
    two_dates: list[Path], run_cli: Any, tmp_path: Path
) -> None:
    data = tmp_path / "notes.html"
    data.write_text("<!DOCTYPE html><html><head></head><body>mine</body></html>")
    one_line_error(run_cli("history", *map(str, two_dates), "-o", str(data)),
                   "not a report ssdcompare made")  # fmt: skip
    assert "mine" in data.read_text()
    among_runs = two_dates[0] / "runs" / "history.html"
    one_line_error(run_cli("history", *map(str, two_dates), "-o", str(among_runs)),
                   "inside the results folder")  # fmt: skip
    page = tmp_path / "history.html"
    for _ in range(2):  # its own page it replaces
        assert run_cli("history", *map(str, two_dates), "-o", str(page)).exit_code == 0
    assert "mine" in data.read_text() and page.read_text().startswith("<!DOCTYPE html>")


def test_two_folders_compare_and_more_show_their_history(
    two_dates: list[Path], run_cli: Any, tmp_path: Path
) -> None:
    third = with_manifest(EXAMPLE, tmp_path / "three", "2026-11-03T10:00:00+00:00")
    folders = [*map(str, two_dates), str(third)]
    compared = run_cli("compare", *folders[:2])
    assert not compared.stdout.startswith("History of")
    shown = run_cli("compare", *folders, "--device", "zram1", "--format", "markdown")
    assert shown.exit_code == 0, shown.stderr
    assert shown.stdout.startswith("**History of IOPS: 1 drive over 3 dates")
    header = next(line for line in shown.stdout.splitlines() if line.startswith("| job |"))
    assert header.count("|") == 5  # the job and three dates
