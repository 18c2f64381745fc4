"""The rules of `ssdcompare compare` on clear-cut cases: the recorded example sweep against
itself and against copies of it edited as a colleague's folder might be (another kernel,
fio or drive), the gate's expressions, each outcome, and bad input."""

from __future__ import annotations

import functools
import json
import math
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from ssdcompare.analysis.overtime import (
    NOT_JUDGED,
    Changes,
    Row,
    Threshold,
    _outcome,
    compare_results,
    parse_changes,
    parse_fail_if,
)
from ssdcompare.analysis.sides import Pair, Side, load_side
from ssdcompare.errors import SsdcompareError

EXAMPLE = Path(__file__).parent.parent / "examples" / "results" / "ramdisk-vs-loop"


def _copy(tmp_path: Path, name: str, edit: Callable[[dict], None] | None = None) -> Path:
    """A copy of the example sweep, its manifest edited by `edit`."""
    copy = tmp_path / name
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns(".cache"))
    if edit is not None:
        manifest = json.loads((copy / "manifest.json").read_text())
        edit(manifest)
        (copy / "manifest.json").write_text(json.dumps(manifest))
    return copy


@functools.cache
def _example(role: str) -> Side:
    """The example sweep as a side, read once (comparing does not change a side)."""
    return load_side(role, [EXAMPLE])


def _changes(base: Path | list[Path], new: Path | list[Path], **options: object) -> Changes:
    sides = [_example(role) if folders == EXAMPLE else
             load_side(role, folders if isinstance(folders, list) else [folders])
             for role, folders in (("BASE", base), ("NEW", new))]  # fmt: skip
    return compare_results(*sides, **options)  # type: ignore[arg-type]


def test_the_same_results_are_the_same() -> None:
    changes = _changes(EXAMPLE, EXAMPLE)
    assert changes.exit_status == 0 and not changes.regressions
    assert [(p.base, p.new, p.how) for p in changes.pairs] == [
        ("zram1", "zram1", "by name"), ("loop1", "loop1", "by name")]  # fmt: skip
    judged = changes.judged
    assert judged and {r.outcome for r in judged} == {"same"}
    assert all(r.ratio == pytest.approx(1) and r.p_value == pytest.approx(1) for r in judged)
    # the example's CPU-bound and disturbed jobs are listed, their figures never judged
    skipped = changes.problems_of("not judged")
    assert skipped and all(p.why.split()[0] in ("cpu", "disturbed", "host") for p in skipped)
    said = {(p.drive, p.job) for p in skipped}
    assert {(r.drive, r.job) for r in changes.rows if r.outcome == "not judged"} == said


def test_a_recorded_change_of_the_machine_is_not_compared_unless_it_is_the_one_measured(
    tmp_path: Path,
) -> None:
    newer = _copy(tmp_path, "kernel", lambda m: m["host"].update(kernel="6.20.0-custom"))
    changes = _changes(EXAMPLE, newer)
    assert changes.exit_status == 2 and not changes.rows
    listed = changes.problems_of("not comparable")
    assert len(listed) == len(changes.base.frame.groupby(["label", "job"]))
    assert all("kernel 6.18.44-fc-v657 in BASE, 6.20.0-custom in NEW" in p.why
               and "--allow-change kernel" in p.why for p in listed)  # fmt: skip
    allowed = _changes(EXAMPLE, newer, allow_change=["kernel"])
    assert allowed.exit_status == 0 and not allowed.problems_of("not comparable")
    assert allowed.changed["loop1"] == ["kernel 6.18.44-fc-v657 in BASE, 6.20.0-custom in NEW"]
    # another change than the one allowed still stops it
    both = _copy(tmp_path, "both", lambda m: m["host"].update(kernel="6.20", cpu_model="Xeon"))
    assert _changes(EXAMPLE, both, allow_change=["kernel"]).exit_status == 2
    assert _changes(EXAMPLE, both, allow_change=["kernel", "machine"]).exit_status == 0


def test_another_fio_is_never_compared(tmp_path: Path) -> None:
    other = _copy(tmp_path, "fio", lambda m: m["host"].update(fio_version="fio-3.36"))
    changes = _changes(EXAMPLE, other, allow_change=list(parse_changes(["kernel,machine"])))
    assert changes.exit_status == 2
    assert all("fio fio-3.33 in BASE, fio-3.36 in NEW" in p.why and "--allow-change" not in p.why
               for p in changes.problems_of("not comparable"))  # fmt: skip


def test_one_name_holding_another_drive_is_said_and_not_compared(tmp_path: Path) -> None:
    def serial(value: str) -> Callable[[dict], None]:
        def edit(manifest: dict) -> None:
            for info in manifest["devices"]:
                info["serial"] = f"{value}-{info['name']}"
            for identity in manifest["identities"].values():
                identity.update(backing_inode=None)

        return edit

    old, new = _copy(tmp_path, "old", serial("A")), _copy(tmp_path, "new", serial("B"))
    changes = _changes(old, new)
    assert [(p.base, p.new, p.note) for p in changes.pairs][0] == (
        "zram1", "zram1", "another drive under the same name: serial A-zram1 (zram RAM disk) "
        "in BASE, serial B-zram1 (zram RAM disk) in NEW")  # fmt: skip
    assert changes.exit_status == 2
    assert _changes(old, new, allow_change=["drive"]).exit_status == 0


def test_folders_of_one_side_are_repeats_of_one_another(tmp_path: Path) -> None:
    again, other = _copy(tmp_path, "again"), _copy(tmp_path, "other")
    changes = _changes([EXAMPLE, again], other)
    assert len(changes.base.sweeps) == 2 and changes.exit_status == 0
    assert {(r.base_repeats, r.new_repeats) for r in changes.judged} == {(6, 3)}
    # a folder on both sides would count its runs twice over
    with pytest.raises(SsdcompareError, match="is given as BASE and as NEW"):
        _changes([EXAMPLE, again], again)


def test_drives_are_paired_as_the_user_says(tmp_path: Path) -> None:
    changes = _changes(EXAMPLE, EXAMPLE, matches=[("zram1", "loop1")])
    assert [(p.base, p.new, p.how) for p in changes.pairs] == [
        ("zram1", "loop1", "as --match says")]  # fmt: skip
    assert [(p.kind, p.drive) for p in changes.problems if p.job is None] == [
        ("only in BASE", "loop1"), ("only in NEW", "zram1")]  # fmt: skip
    with pytest.raises(SsdcompareError, match="no drive 'nvme0n1' in BASE; its drives: "):
        _changes(EXAMPLE, EXAMPLE, matches=[("nvme0n1", "loop1")])


def test_the_gate_reads_what_people_write() -> None:
    assert parse_fail_if("iops < -5%") == Threshold("iops", False, -5.0)
    assert parse_fail_if(" P99>+10 % ") == Threshold("p99", True, 10.0)
    assert parse_fail_if("p999 > 20%").metric == "p99.9"
    assert parse_fail_if("MB/s < -3%").metric == "bw"
    for bad, said in (("iops < -5", "write METRIC < CHANGE%"), ("iops <= -5%", "write"),
                      ("speed < -5%", "no metric 'speed'"), ("", "write"),
                      ("iops < 5%", "'<' takes a fall"), ("p99 > -10%", "'>' a rise"),
                      ("iops < -100%", "or never")):  # fmt: skip
        with pytest.raises(SsdcompareError, match=said):
            parse_fail_if(bad)
    with pytest.raises(SsdcompareError, match="--allow-change fw: not a change"):
        parse_changes(["kernel,fw"])


def _row(ratio: float, p_value: float, verdicts: tuple[str, str] = ("drive", "drive")) -> Row:
    return Row("d", "d", "job", "iops", 100.0, 100.0 * ratio, 3, 3, ratio, math.nan, math.nan,
               p_value, *verdicts)  # fmt: skip


@pytest.mark.parametrize(
    ("ratio", "p_value", "outcome"),
    [
        (0.90, 0.01, "regression"),  # beyond -5 % and significant
        (0.90, 0.20, "not significant"),  # beyond, but as likely noise
        (0.90, math.nan, "regression"),  # untested: its size alone
        (0.97, 0.01, "worse"),  # significant, within the gate
        (0.995, 0.001, "same"),  # significant, but under 1 %: nothing to act on
        (1.20, 0.01, "better"),
        (1.20, 0.30, "same"),
        (1.20, math.nan, "untested"),
        (math.nan, math.nan, "no figure"),
    ],
)
def test_each_change_has_one_outcome(ratio: float, p_value: float, outcome: str) -> None:
    changes = _changes(EXAMPLE, EXAMPLE, gate=[parse_fail_if("iops < -5%")])
    row = _row(ratio, p_value)
    assert _outcome(row, _metric("iops"), changes, judged=True)[0] == outcome
    if outcome != "no figure":
        assert _outcome(row, _metric("iops"), changes, judged=False)[0] == "not judged"


def _metric(name: str):  # type: ignore[no-untyped-def]
    from ssdcompare.analysis.overtime import METRICS

    return METRICS[name]


def test_exit_status_follows_what_was_found() -> None:
    changes = _changes(EXAMPLE, EXAMPLE)
    assert changes.exit_status == 0
    changes.strict = True
    assert changes.problems and changes.exit_status == 1  # jobs that were not judged
    changes.rows = [r for r in changes.rows if r.outcome == "not judged"]
    assert changes.exit_status == 2 and changes.nothing_judged().startswith("nothing could")
    nothing = Changes(changes.base, changes.new, [], [], 0.05, False, [])
    assert nothing.exit_status == 2 and "no drive of BASE matches" in nothing.nothing_judged()
    assert Pair("a", "b", "by name").note is None


def test_bad_input_is_one_line(run_cli: Callable[..., object], tmp_path: Path) -> None:
    example = str(EXAMPLE)
    for args, said in (
        ([example], "give two results folders"),
        ([example, str(tmp_path)], "is not an ssdcompare results folder"),
        ([example, example, "--fail-if", "iops < 5"], "write METRIC < CHANGE%"),
        ([example, example, "--alpha", "2"], "--alpha 2.0: give a probability"),
        ([example, example, "--judge", "drive"], "--judge drive: give any of"),
        ([example, example, "--match", "zram1"], "write BASE-DRIVE=NEW-DRIVE"),
        ([example, example, "--device", "nvme9n1"], "no drive 'nvme9n1' in BASE"),
        ([example, example, "--allow-change", "moon"], "--allow-change moon: not a change"),
        (["--base", example, example, example], "no folder without one"),
    ):
        result = run_cli("compare", *args)
        assert result.exit_code == 2, args
        assert result.stderr.startswith("error: ") and said in result.stderr, result.stderr
        assert "Traceback" not in result.stderr and len(result.stderr.splitlines()) == 1


def test_answers_at_a_latency_target_are_compared_where_both_sides_give_figures() -> None:
    from ssdcompare.analysis.overtime import _compare_answers
    from ssdcompare.analysis.slo import AT_LEAST, MET, NEVER

    changes = _changes(EXAMPLE, EXAMPLE)
    changes.gate = [parse_fail_if("slo < -10%")]
    with pytest.raises(SsdcompareError, match="--fail-if slo: .* give the target too"):
        _changes(EXAMPLE, EXAMPLE, gate=changes.gate)
    pair = Pair("d", "d", "by name")
    drive = {("d", "c@max"): {"verdict": "drive"}}
    target = "p99 ≤ 1 ms"

    def compared(base: list[tuple[str, float]], new: list[tuple[str, float]]) -> None:
        changes.rows, changes.problems = [], []
        answers = ({("d", "c@max", target): base}, {("d", "c@max", target): new})
        _compare_answers(changes, pair, answers, (drive, drive), list(NOT_JUDGED))

    compared([(MET, 1000.0)] * 3, [(MET, 800.0)] * 3)
    (row,) = changes.rows
    assert (row.job, row.metric, row.outcome) == (f"c@max at {target}", "slo", "regression")
    assert row.change_pct == pytest.approx(-20) and row.p_value == 0  # neither side varies
    # a drive that meets the target no more lost all of it
    compared([(MET, 1000.0)] * 3, [(NEVER, math.nan)] * 3)
    (row,) = changes.rows
    assert (row.new, row.change_pct, row.outcome) == (0.0, -100.0, "regression")
    # a bound is no figure: said, not judged
    for base, new in (([(AT_LEAST, 900.0)], [(MET, 800.0)]), ([(MET, 9.0), (NEVER, 0.0)],
                                                              [(MET, 8.0)])):  # fmt: skip
        compared(base, new)
        assert not changes.rows
        (problem,) = changes.problems
        assert problem.kind == "not judged" and "not figures to compare" in problem.why


def test_python_gets_the_same_comparison_as_a_frame() -> None:
    import ssdcompare

    found = ssdcompare.changes(EXAMPLE, [EXAMPLE], "iops < -5%", alpha=0.01)
    assert found.exit_status == 0 and found.gate == [Threshold("iops", False, -5.0)]
    frame = found.frame()
    assert len(frame) == len(found.rows) and {"drive", "change_pct", "outcome"} <= set(frame)
    assert set(frame["metric"]) == {"iops", "bw", "mean", "p99", "p99.9"}


def _side_rows(**per_repeat: list[float]) -> dict[str, object]:
    return {f"{column}_per_repeat": values for column, values in per_repeat.items()}


def test_a_drive_that_did_no_io_lost_all_of_it() -> None:
    from ssdcompare.analysis.overtime import METRICS, _row

    pair = Pair("d", "d", "by name")
    row = _row(pair, "job", METRICS["iops"], _side_rows(iops=[100.0, 110.0, 90.0]),
               _side_rows(iops=[0.0, 0.0, 0.0]), ("drive", "drive"))  # fmt: skip
    assert (row.new, row.change_pct, row.base_repeats, row.new_repeats) == (0.0, -100.0, 3, 3)
    changes = _changes(EXAMPLE, EXAMPLE, gate=[parse_fail_if("iops < -5%")])
    assert _outcome(row, METRICS["iops"], changes, judged=True)[0] == "regression"
    # the figures shown are those the change is the ratio of (geometric means)
    row = _row(pair, "job", METRICS["iops"], _side_rows(iops=[100.0, 400.0]),
               _side_rows(iops=[200.0]), ("drive", "drive"))  # fmt: skip
    assert (row.base, row.new) == (pytest.approx(200), pytest.approx(200))
    assert abs(row.change_pct) < 1e-9


def test_each_side_is_not_judged_for_its_own_reason() -> None:
    from ssdcompare.analysis.overtime import _compare_job

    changes = _changes(EXAMPLE, EXAMPLE)
    changes.rows, changes.problems = [], []
    base = dict(_side_rows(iops=[100.0] * 3), verdict="cpu", verdict_reason="fio at 100 %")
    new = dict(_side_rows(iops=[90.0] * 3), verdict="disturbed", verdict_reason="steal 30 %")
    _compare_job(changes, Pair("d", "d", "by name"), "d", "job", (base, new), list(NOT_JUDGED))
    (problem,) = changes.problems_of("not judged")
    assert problem.why == "cpu in BASE (fio at 100 %); disturbed in NEW (steal 30 %)"


@pytest.mark.slow  # one of the longest: started early (tests/conftest.py)
def test_side_folders_are_checked_as_a_colleague_may_have_edited_them(tmp_path: Path) -> None:
    # a name that holds another drive in one of BASE's folders: none of its runs compared
    def serial(value: str) -> Callable[[dict], None]:
        return lambda m: [info.update(serial=value) for info in m["devices"]]

    one, two = _copy(tmp_path, "one", serial("A")), _copy(tmp_path, "two", serial("B"))
    changes = _changes([one, two], _copy(tmp_path, "new", serial("A")), allow_change=["drive"])
    assert changes.exit_status == 2 and {p.kind for p in changes.problems} == {"not comparable"}
    assert all("holds two drives (other serials) in BASE's folders" in p.why
               and "--allow-change" not in p.why for p in changes.problems)  # fmt: skip
    # a loop device that reads another file under its old name: compared, and said
    other = _copy(tmp_path, "other", lambda m: m["identities"]["loop1"].update(
        backing_inode="65024:1", backing_file="/elsewhere.img"))  # fmt: skip
    said = _changes(EXAMPLE, other).changed["loop1"]
    assert said == ["another file under the same name: backing file /var/tmp/ssdcompare-"
                    "example.vYbOcU (inode 65024:395565) in BASE, backing file /elsewhere.img "
                    "(inode 65024:1) in NEW"]  # fmt: skip
    # a run whose stored output cannot be used is named, its job compared on the rest
    damaged = _copy(tmp_path, "damaged")
    output = damaged / "runs" / "loop1" / "randread-4k-qd1" / "r2" / "fio.json"
    output.unlink()
    output.symlink_to("/etc/hostname")
    (problem,) = _changes(EXAMPLE, damaged).problems_of("incomplete")
    assert (problem.drive, problem.job) == ("loop1", "randread-4k-qd1")
    assert problem.why == "1 of 3 runs in NEW not ok (1 damaged)"
    # a folder without runs holds no results, which is said as such
    empty = _copy(tmp_path, "empty")
    shutil.rmtree(empty / "runs")
    assert _changes(EXAMPLE, empty).nothing_judged() == (
        "NEW holds no results (no run of any drive in its folders)")  # fmt: skip
    # a start that is not a date: the order of results over time cannot be told
    undated = _copy(tmp_path, "undated", lambda m: m.update(created_at="yesterday"))
    with pytest.raises(SsdcompareError, match="started 'yesterday', which is not a date"):
        _changes(EXAMPLE, undated)


def test_python_names_its_choices_as_the_command_line_does(tmp_path: Path) -> None:
    import ssdcompare

    newer = _copy(tmp_path, "kernel", lambda m: m["host"].update(kernel="6.20"))
    found = ssdcompare.changes(EXAMPLE, newer, allow_change="Kernel", judge="CPU,disturbed",
                               drives="loop1")  # fmt: skip
    assert found.allowed == ["kernel"] and found.judge == ["cpu", "disturbed"]
    assert [p.base for p in found.pairs] == ["loop1"] and found.exit_status == 0
    with pytest.raises(SsdcompareError, match="--allow-change kernal: not a change"):
        ssdcompare.changes(EXAMPLE, newer, allow_change=["kernal"])


def test_more_than_two_folders_are_a_history_without_a_gate(
    run_cli: Callable[..., object], tmp_path: Path
) -> None:
    folders = [str(_copy(tmp_path, name)) for name in ("a", "b", "c")]
    refused = run_cli("compare", *folders, "--fail-if", "iops < -5%", "--strict")
    assert refused.exit_code == 2
    assert refused.stderr.startswith("error: --fail-if, --strict: compare judges two result")
    assert run_cli("compare", *folders).stdout.startswith("History of IOPS")


def test_a_reader_that_goes_away_leaves_the_gate_s_exit_status() -> None:
    import subprocess
    import sys

    command = [sys.executable, "-m", "ssdcompare", "compare", str(EXAMPLE), str(EXAMPLE)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stdout.read(4) == b"PASS"
    process.stdout.close()  # as `| head -c 4` does
    assert process.wait(timeout=120) == 0 and b"Traceback" not in process.stderr.read()
