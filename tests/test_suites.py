"""Suite files: the bundled methodologies load as documented, and broken files say where."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from ssdcompare.errors import SsdcompareError
from ssdcompare.resources import jobs_dir
from ssdcompare.suite import files as suites
from ssdcompare.suite.files import bundled_suite_paths, list_suites, load_suite
from ssdcompare.suite.workload import Workload

README = Path(__file__).resolve().parents[1] / "README.md"
# The bundled suites as documented (README, "Bundled suites"): jobs, and measuring time per
# device in seconds (runtime + ramp of every job). Written out here, not read from jobs/, so a
# suite that goes missing, appears unannounced or changes size is caught.
DOCUMENTED = {
    # bursts are capped at 10 min each; every job runs on an empty and on a full drive
    "anandtech": (2 * (4 + 24 + 22), 2 * (4 * 600 + 46 * 60)),
    "crystaldiskmark": (8, 8 * 5),
    "database": (45, 45 * 180),
    "latency-curve": (14, 14 * 65),
    "mix-sweep": (22, 22 * 60),
    "optane-vs-nand": (6, 6 * 30),
    "qd-sweep": (32, 32 * 60),
    "quick": (6, 6 * (7 + 1)),
    "storagereview": (8 + 25, 33 * 60),
    # one round: 8 block sizes x 7 mixes, a minute each (then rounds until steady)
    "pts-iops": (56, 56 * 60),
    "pts-throughput": (4, 4 * 60),
    "pts-latency": (9, 9 * 60),
    "pts-dirth": (36, 36 * 60),
    "pts-wsat": (1, 86400),
    # the steady rounds' job once, then the bursts with their idle times and the baselines
    "pts-hir": (11, 60 + 3600 + 5400 + 7200 + 10800 + 19800 + 5 * 1800),
    "pts-xsr": (3, 28800 + 2 * 21600),
}
DOCUMENTED_SUITES = set(DOCUMENTED)
OPTANE_VS_NAND_IDS = [
    "randwrite-4k-qd1-fsync",
    "randwrite-4k-qd128",
    "write-4m-qd16",
    "randread-4k-qd1",
    "randread-4k-qd128",
    "read-4m-qd16",
]


def write_suite(tmp_path: Path, text: str, name: str = "mine.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def load_error(path: Path) -> str:
    """The message a user gets for a broken suite file (a SsdcompareError, nothing else)."""
    with pytest.raises(SsdcompareError) as caught:
        load_suite(path)
    message = str(caught.value)
    assert str(path) in message
    return message


def readme_suites() -> list[str]:
    """The suite names in the README's table of bundled suites, in order."""
    text = README.read_text(encoding="utf-8")
    section = text.split("### Bundled suites", 1)[1].split("\n#", 1)[0]
    return re.findall(r"^\| `([a-z0-9-]+)` \|", section, flags=re.MULTILINE)


def test_jobs_holds_exactly_the_documented_suites() -> None:
    on_disk = sorted(p.name for p in jobs_dir().iterdir() if not p.name.startswith("."))
    assert on_disk == sorted(f"{name}.yaml" for name in DOCUMENTED)
    found = bundled_suite_paths()
    assert sorted(found) == sorted(DOCUMENTED)
    assert {name: Path(path) for name, path in found.items()} == {
        name: jobs_dir() / f"{name}.yaml" for name in DOCUMENTED
    }


def test_readme_table_lists_each_bundled_suite_once() -> None:
    listed = readme_suites()
    assert len(listed) == len(set(listed))
    assert set(listed) == DOCUMENTED_SUITES


@pytest.mark.parametrize("name", sorted(DOCUMENTED))
def test_bundled_suite_loads(name: str) -> None:
    suite = load_suite(name)
    assert suite.name == name
    assert suite.description
    assert suite.workloads
    ids = [w.job_id for w in suite.workloads]
    assert len(ids) == len(set(ids))
    assert Path(suite.path or "").parent == jobs_dir()


def test_optane_vs_nand_has_the_six_methodology_jobs_in_order() -> None:
    suite = load_suite("optane-vs-nand")
    assert [w.job_id for w in suite.workloads] == OPTANE_VS_NAND_IDS
    assert {(w.runtime_s, w.numjobs) for w in suite.workloads} == {(30, 1)}
    assert suite.workloads[0].fsync == 1
    assert suite.workloads[0].description


def test_database_is_45_random_67_33_points() -> None:
    suite = load_suite("database")
    assert len(suite.workloads) == 45
    assert {(w.rw, w.rwmixread) for w in suite.workloads} == {("randrw", 67)}
    assert {w.bs_bytes for w in suite.workloads} == {4096 << i for i in range(5)}
    assert {w.iodepth for w in suite.workloads} == {1 << i for i in range(9)}
    assert suite.workloads[0].job_id == "randrw67-4k-qd1"
    assert suite.workloads[-1].job_id == "randrw67-64k-qd256"


def test_mix_sweep_is_22_points_from_all_reads_to_all_writes() -> None:
    suite = load_suite("mix-sweep")
    assert len(suite.workloads) == 22
    assert [w.rwmixread for w in suite.workloads[:11]] == list(range(100, -1, -10))
    assert {w.iodepth for w in suite.workloads} == {2, 8}
    assert {w.bs_bytes for w in suite.workloads} == {65536}
    # 100 % read is a read-only point, 0 % a pure write one
    assert suite.workloads[0].directions == ("read",)
    assert suite.workloads[10].directions == ("write",)


def test_qd_sweep_is_32_points() -> None:
    suite = load_suite("qd-sweep")
    assert len(suite.workloads) == 32
    assert {w.rw for w in suite.workloads} == {"randread", "randwrite"}
    assert [w.iodepth for w in suite.workloads[:8]] == [1, 2, 4, 8, 16, 32, 64, 128]


def test_crystaldiskmark_and_storagereview_shapes() -> None:
    cdm = load_suite("crystaldiskmark")
    assert [w.job_id for w in cdm.workloads][:2] == ["seq1m-q8t1-read", "seq1m-q8t1-write"]
    assert {w.size_bytes for w in cdm.workloads} == {1024**3}
    storagereview = load_suite("storagereview")
    assert len(storagereview.workloads) == 8 + 25
    assert {w.size_pct for w in storagereview.workloads} == {20.0}


def test_list_suites_describes_each_bundled_suite() -> None:
    infos = list_suites()
    assert sorted(info.name for info in infos) == sorted(DOCUMENTED)  # each once
    for info in infos:
        jobs, seconds = DOCUMENTED[info.name]
        assert (info.jobs, info.duration_s) == (jobs, seconds), info.name
        assert info.writes  # every bundled suite has write jobs (see --read-only)
        assert info.source and info.source.strip(), info.name
        assert info.description == load_suite(info.name).description
        assert Path(info.path) == jobs_dir() / f"{info.name}.yaml"


def test_load_suite_by_path_as_str_or_path(tmp_path: Path) -> None:
    path = write_suite(
        tmp_path, "name: mine\ndescription: d\nworkloads:\n  - {rw: read, bs: 1m}\n"
    )
    assert load_suite(path).workloads[0].job_id == "read-1m-qd1"
    assert load_suite(str(path)).path == str(path)


def test_read_only_keeps_reads_in_order() -> None:
    suite = load_suite("optane-vs-nand").read_only()
    assert [w.job_id for w in suite.workloads] == [
        "randread-4k-qd1", "randread-4k-qd128", "read-4m-qd16",
    ]  # fmt: skip
    assert not suite.writes
    # a mix at 100 % reads writes nothing, but fio opens its target for writing (and refuses
    # it under --readonly): a read-only sweep cannot run it
    with pytest.raises(SsdcompareError, match="no read-only workloads"):
        load_suite("mix-sweep").read_only()


def test_read_only_of_an_all_writing_suite_says_what_to_use() -> None:
    with pytest.raises(SsdcompareError, match="no read-only workloads.*qd-sweep"):
        load_suite("database").read_only()


def test_with_overrides_keeps_ids_and_the_original() -> None:
    for name in ("crystaldiskmark", "optane-vs-nand"):
        original = load_suite(name)
        short = original.with_overrides(runtime_s=2)
        assert [w.job_id for w in short.workloads] == [w.job_id for w in original.workloads]
        assert {w.runtime_s for w in short.workloads} == {2}
        assert {w.runtime_s for w in original.workloads} != {2}
    assert original.with_overrides() is original


def test_with_overrides_accepts_suite_file_spellings() -> None:
    quick = load_suite("quick").with_overrides(runtime=3, ramp_time=0, size="64m")
    assert {(w.runtime_s, w.ramp_s, w.size_bytes) for w in quick.workloads} == {(3, 0, 64 << 20)}
    shares = load_suite("storagereview").with_overrides(size=1 << 30)
    assert {(w.size_bytes, w.size_pct) for w in shares.workloads} == {(1 << 30, None)}


def test_with_overrides_regenerates_generated_ids_only() -> None:
    cdm = load_suite("crystaldiskmark").with_overrides(bs="8k")
    assert cdm.workloads[0].job_id == "seq1m-q8t1-read"  # explicit ids stay
    quick = load_suite("quick").with_overrides(bs="8k")
    assert quick.workloads[0].job_id == "randread-8k-qd1"


def test_invalid_override_is_a_clean_error() -> None:
    with pytest.raises(
        SsdcompareError, match="override .* is invalid for randread-4k-qd1: iodepth"
    ):
        load_suite("quick").with_overrides(iodepth=0)


# ---- broken suite files: the message names the file, the place and the fix ------------------


def test_yaml_syntax_error_gives_the_line(tmp_path: Path) -> None:
    path = write_suite(
        tmp_path,
        "name: mine\ndescription: d\nworkloads:\n  - {rw: read, bs: 4k\n  - {rw: write}\n",
    )
    message = load_error(path)
    assert "not valid YAML at line 5" in message


def test_top_level_list_is_refused(tmp_path: Path) -> None:
    message = load_error(write_suite(tmp_path, "- rw: read\n  bs: 4k\n"))
    assert "a suite file is a YAML mapping" in message


def test_empty_file_is_refused(tmp_path: Path) -> None:
    assert "YAML mapping" in load_error(write_suite(tmp_path, ""))


def test_unknown_top_level_key_lists_the_allowed_ones(tmp_path: Path) -> None:
    message = load_error(write_suite(
        tmp_path,
        "name: mine\ndescription: d\nworkload:\n  - {rw: read, bs: 4k}\n",
    ))  # fmt: skip
    assert "workload: unknown key; allowed: name, description" in message
    assert "matrices" in message


def test_missing_description_is_named(tmp_path: Path) -> None:
    message = load_error(write_suite(tmp_path, "name: mine\nworkloads:\n  - {rw: read, bs: 4k}\n"))
    assert "description: Field required" in message


def test_every_problem_of_a_suite_is_said_at_once(tmp_path: Path) -> None:
    """A missing description does not hide the workloads' own problems."""
    message = load_error(write_suite(
        tmp_path,
        "name: mine\nworkloads:\n  - {rw: randread, bs: 4q}\n"
        "  - {rw: randwrite, bs: 4k, iodepth: 0}\n",
    ))  # fmt: skip
    assert "description: Field required" in message
    assert "workloads[0].bs: '4q' is not a size" in message
    assert "workloads[1].iodepth: Input should be greater than or equal to 1" in message


def test_null_as_an_option_value_is_caught_with_the_way_to_write_it(tmp_path: Path) -> None:
    message = load_error(write_suite(
        tmp_path,
        "name: mine\ndescription: d\nworkloads:\n"
        "  - {rw: randread, bs: 4k, extra: {norandommap: null}}\n",
    ))  # fmt: skip
    assert "workloads[0].extra: value of 'norandommap' is the word null" in message
    assert "{norandommap: ~}" in message
    bare = write_suite(tmp_path, "name: mine\ndescription: d\nworkloads:\n"
                       "  - {rw: randread, bs: 4k, extra: {norandommap: ~}}\n")  # fmt: skip
    assert load_suite(bare).workloads[0].extra == {"norandommap": None}


def test_a_line_break_in_an_id_names_the_field(tmp_path: Path) -> None:
    message = load_error(write_suite(
        tmp_path,
        'name: mine\ndescription: d\nworkloads:\n  - {rw: randread, bs: 4k, id: "abc\\n"}\n',
    ))  # fmt: skip
    assert "workloads[0].id: id 'abc\\n' must start with a letter or digit" in message


def test_zero_iodepth_in_an_axis_points_at_the_value(tmp_path: Path) -> None:
    message = load_error(write_suite(
        tmp_path,
        "name: mine\ndescription: d\nmatrices:\n  - axes:\n      rw: [randread, randwrite]\n"
        "      bs: [4k]\n      iodepth: [1, 0, 4]\n",
    ))  # fmt: skip
    assert "matrices[0].axes.iodepth[1]" in message
    assert "greater than or equal to 1 (got 0)" in message
    assert message.count("axes.iodepth[1]") == 1


def test_bad_block_size_in_defaults_points_at_defaults(tmp_path: Path) -> None:
    message = load_error(write_suite(
        tmp_path,
        "name: mine\ndescription: d\ndefaults:\n  bs: 4q\nworkloads:\n  - {rw: read}\n"
        "  - {rw: randread}\n",
    ))  # fmt: skip
    assert "defaults.bs: '4q' is not a size" in message


def test_workload_problems_are_all_listed(tmp_path: Path) -> None:
    message = load_error(write_suite(
        tmp_path,
        "name: mine\ndescription: d\nworkloads:\n  - {rw: read, bs: 4k, blocksize: 4k}\n"
        "  - {rw: randread, bs: 4k, rwmixread: 70}\n  - {rw: sequential, bs: 4k}\n"
        "  - {rw: read, bs: 4k, extra: {bs: 8k}}\n",
    ))  # fmt: skip
    assert "workloads[0]: unknown key 'blocksize'" in message
    assert "workloads[1]: rwmixread applies only to mixed patterns" in message
    assert "workloads[2].rw: Input should be 'read', 'write'" in message
    assert "workloads[3].extra: fio option 'bs' is set by ssdcompare" in message


def test_duplicate_ids_in_a_file_name_both_entries(tmp_path: Path) -> None:
    message = load_error(write_suite(
        tmp_path,
        "name: mine\ndescription: d\nworkloads:\n  - {rw: read, bs: 4k}\n"
        "  - {rw: read, bs: 4096, runtime: 5}\n",
    ))  # fmt: skip
    assert "workloads[1]: duplicate id 'read-4k-qd1' (also workloads[0])" in message


def test_exclude_typo_in_a_file_is_reported(tmp_path: Path) -> None:
    message = load_error(write_suite(
        tmp_path,
        "name: mine\ndescription: d\nmatrices:\n  - base: {rw: randread}\n"
        "    axes: {bs: [4k, 8k]}\n    exclude:\n      - {bs: 16k}\n",
    ))  # fmt: skip
    assert "matrices[0].exclude[0]: {'bs': '16k'} matches no combination" in message


def test_unknown_suite_name_lists_the_bundled_ones() -> None:
    with pytest.raises(SsdcompareError) as caught:
        load_suite("optane-vs-tlc")
    message = str(caught.value)
    assert "unknown suite 'optane-vs-tlc'" in message
    for name in DOCUMENTED_SUITES:
        assert name in message


def test_missing_suite_file(tmp_path: Path) -> None:
    with pytest.raises(SsdcompareError, match="suite file .*nothere.yaml does not exist"):
        load_suite(tmp_path / "nothere.yaml")


def test_binary_file_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "blob.yaml"
    path.write_bytes(b"\xff\xfe\x00garbage")
    assert "not a text (UTF-8) file" in load_error(path)


def test_a_directory_is_not_a_suite_file(tmp_path: Path) -> None:
    with pytest.raises(SsdcompareError) as caught:
        load_suite(tmp_path)
    message = str(caught.value)
    assert f"{tmp_path} is a directory" in message
    assert "suite file (.yaml) or the name of a bundled suite" in message


def test_a_folder_named_like_a_bundled_suite_does_not_hide_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "quick").mkdir()
    monkeypatch.chdir(tmp_path)
    assert load_suite("quick").name == "quick"


def test_a_key_given_twice_names_the_key_and_both_lines(tmp_path: Path) -> None:
    message = load_error(write_suite(
        tmp_path,
        "name: mine\ndescription: d\nworkloads:\n  - rw: read\n    bs: 4k\n    rw: write\n",
    ))  # fmt: skip
    assert "line 6" in message
    assert "duplicate key 'rw' (first given on line 4)" in message


def test_a_key_given_twice_on_one_line_is_refused(tmp_path: Path) -> None:
    message = load_error(write_suite(
        tmp_path, "name: mine\ndescription: d\nworkloads: [{rw: read, bs: 4k, bs: 8k}]\n"
    ))  # fmt: skip
    assert "duplicate key 'bs'" in message


def test_a_merged_mapping_may_be_overridden(tmp_path: Path) -> None:
    """`<<: *anchor` then a key of its own is YAML's way to override, not a repeated key."""
    suite = load_suite(write_suite(
        tmp_path,
        "name: mine\ndescription: d\nworkloads:\n  - &read {rw: read, bs: 4k}\n"
        "  - {<<: *read, bs: 8k}\n",
    ))  # fmt: skip
    assert [w.job_id for w in suite.workloads] == ["read-4k-qd1", "read-8k-qd1"]


def test_a_file_nested_too_deeply_is_not_a_suite(tmp_path: Path) -> None:
    message = load_error(write_suite(tmp_path, "[" * 100_000))
    assert "not a suite file: nested more than 50 levels deep" in message


def test_deep_nesting_inside_a_suite_is_refused_too(tmp_path: Path) -> None:
    deep = "[" * 60 + "]" * 60
    message = load_error(write_suite(
        tmp_path, f"name: mine\ndescription: d\nworkloads:\n  - {{rw: read, bs: {deep}}}\n"
    ))  # fmt: skip
    assert "nested more than 50 levels deep (at line 4)" in message


def test_an_id_too_long_for_a_file_name_is_refused(tmp_path: Path) -> None:
    long_id = "a" * 300
    message = load_error(write_suite(
        tmp_path, f"name: mine\ndescription: d\nworkloads: [{{id: {long_id}, rw: read, bs: 4k}}]\n"
    ))  # fmt: skip
    assert "workloads[0].id:" in message
    assert "is 300 characters long; at most 100" in message


def test_a_generated_id_too_long_for_a_file_name_is_refused(tmp_path: Path) -> None:
    message = load_error(write_suite(
        tmp_path,
        "name: mine\ndescription: d\nmatrices:\n"
        f"  - base: {{extra: {{rate: '{'1' * 120}'}}}}\n    axes: {{rw: [read], bs: [4k]}}\n",
    ))  # fmt: skip
    assert "matrices[0]" in message
    assert "characters long; at most 100" in message


def test_results_stored_with_a_longer_id_still_load() -> None:
    """Older versions took ids up to what the filesystem allows; only suites are held to 100."""
    assert Workload(id="a" * 200, rw="read", bs=4096).job_id == "a" * 200


def test_an_id_of_100_characters_is_fine(tmp_path: Path) -> None:
    long_id = "a" * 100
    suite = load_suite(write_suite(
        tmp_path, f"name: mine\ndescription: d\nworkloads: [{{id: {long_id}, rw: read, bs: 4k}}]\n"
    ))  # fmt: skip
    assert suite.workloads[0].job_id == long_id


def test_an_alias_bomb_is_refused_before_it_is_built(tmp_path: Path) -> None:
    levels = ["a: &l0 [x, x, x, x, x, x, x, x, x, x]"]
    levels += [f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 10)}]" for i in range(1, 8)]
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text("name: bomb\ndescription: d\n" + "\n".join(levels) + "\nworkloads: [*l7]\n")
    with pytest.raises(SsdcompareError, match="more than 100000 values once its aliases"):
        load_suite(str(bomb))
    loop = tmp_path / "loop.yaml"
    loop.write_text("name: loop\ndescription: d\na: &a [*a]\nworkloads: [{rw: read, bs: 4k}]\n")
    with pytest.raises(SsdcompareError, match="a value contains itself"):
        load_suite(str(loop))


def test_a_device_or_a_pipe_as_suite_is_not_called_missing(tmp_path: Path) -> None:
    pipe = tmp_path / "pipe.yaml"
    os.mkfifo(pipe)
    for path in ("/dev/null", str(pipe)):
        with pytest.raises(SsdcompareError, match="is not a regular file"):
            load_suite(path)


def test_a_suite_file_far_larger_than_a_suite_is_refused_unread(tmp_path: Path) -> None:
    big = write_suite(tmp_path, "name: big\ndescription: d\nworkloads: [" + "1," * (1 << 20) + "]")
    message = load_error(big)
    assert "not a suite file: it is larger than 1 MiB" in message


def test_counting_values_stops_at_the_first_past_the_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(suites, "MAX_VALUES", 1000)
    # what follows the values past the bound is no YAML at all: it is never read
    text = "name: big\ndescription: d\nworkloads: [" + "1, " * 1500 + "]] : {{\n"
    message = load_error(write_suite(tmp_path, text))
    assert "not a suite file: more than 1000 values" in message
    many = "name: big\ndescription: d\nworkloads: [" + "1, " * 990 + "]\n"
    assert "more than 1000 values" not in load_error(write_suite(tmp_path, many, "ok.yaml"))


def test_a_bare_bundled_name_is_the_bundled_suite_whatever_files_are_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file called `quick` in the current folder (anyone may have put it there) never
    replaces the bundled suite; given as a path, it is read."""
    write_suite(tmp_path, "name: planted\ndescription: d\nworkloads:\n  - {rw: write, bs: 1m}\n",
                name="quick")  # fmt: skip
    write_suite(tmp_path, "name: mine\ndescription: d\nworkloads:\n  - {rw: read, bs: 1m}\n",
                name="quick.yaml")  # fmt: skip
    monkeypatch.chdir(tmp_path)
    assert load_suite("quick").path == str(jobs_dir() / "quick.yaml")
    assert load_suite("./quick").name == "planted"
    assert load_suite("quick.yaml").name == "mine"
    assert load_suite(Path("quick")).name == "planted"  # a pathlib.Path is a path


def test_a_bare_name_that_is_no_bundled_suite_points_at_the_file_of_that_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_suite(tmp_path, "name: mine\ndescription: d\nworkloads:\n  - {rw: read, bs: 1m}\n",
                name="mysuite")  # fmt: skip
    monkeypatch.chdir(tmp_path)
    with pytest.raises(
        SsdcompareError, match=r"unknown suite 'mysuite'.*give its path: \./mysuite"
    ):
        load_suite("mysuite")
    assert load_suite("./mysuite").name == "mine"
