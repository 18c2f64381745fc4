"""The workload model (one fio job) and the expansion of matrices into ordered workloads."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from ssdcompare.errors import SsdcompareError
from ssdcompare.suite import matrix
from ssdcompare.suite.matrix import expand
from ssdcompare.suite.workload import RW_PATTERNS, Suite, SuiteSpec, Workload


def workload(**fields: Any) -> Workload:
    return Workload.model_validate(fields)


def expanded(**spec: Any) -> Suite:
    return expand(SuiteSpec.model_validate({"name": "t", "description": "test", **spec}))


@pytest.mark.parametrize(
    ("fields", "job_id"),
    [
        ({"rw": "randread", "bs": "4k", "iodepth": 128}, "randread-4k-qd128"),
        ({"rw": "randwrite", "bs": "4k", "iodepth": 1, "fsync": 1}, "randwrite-4k-qd1-fsync"),
        ({"rw": "randwrite", "bs": "4k", "fsync": 8}, "randwrite-4k-qd1-fsync8"),
        ({"rw": "randrw", "rwmixread": 67, "bs": "8k", "iodepth": 4}, "randrw67-8k-qd4"),
        ({"rw": "randread", "bs": "4k", "iodepth": 16, "numjobs": 16}, "randread-4k-qd16-nj16"),
        ({"rw": "write", "bs": "4M", "iodepth": 16}, "write-4m-qd16"),
        ({"rw": "read", "bs": 1048576, "iodepth": 8}, "read-1m-qd8"),
        ({"rw": "read", "bs": "128k", "direct": False}, "read-128k-qd1-buffered"),
        ({"rw": "randread", "bs": "4k", "thinktime": 50, "thinktime_blocks": 8},
         "randread-4k-qd1-think50usx8"),
    ],
)  # fmt: skip
def test_generated_ids_are_readable(fields: dict[str, Any], job_id: str) -> None:
    assert workload(**fields).job_id == job_id


def test_generated_id_does_not_depend_on_spelling() -> None:
    assert workload(rw="randread", bs="4k").job_id == workload(rw="RandRead", bs=4096).job_id
    assert workload(rw="read", bs="4KiB", runtime=5).job_id == "read-4k-qd1"


def test_explicit_id_is_kept() -> None:
    job = workload(id="seq1m-q8t1-read", rw="read", bs="1M", iodepth=8)
    assert job.job_id == "seq1m-q8t1-read"
    assert job.generated_id() == "read-1m-qd8"


def test_readwrite_alias_means_rw_with_fio_default_mix() -> None:
    job = workload(rw="readwrite", bs="4k")
    assert job.rw == "rw"
    assert job.rwmixread == 50
    assert job.job_id == "rw50-4k-qd1"
    assert workload(rw="randreadwrite", bs="4k").rw == "randrw"


def test_mixed_pattern_defaults_to_half_reads() -> None:
    assert workload(rw="randrw", bs="4k").rwmixread == 50
    assert workload(rw="randread", bs="4k").rwmixread is None


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"rw": "randread", "bs": "4k", "iodepth": 0}, "greater than or equal to 1"),
        ({"rw": "randread", "bs": "4q"}, "'4q' is not a size"),
        ({"rw": "randread", "bs": True}, "block size must be"),
        ({"rw": "randread", "bs": "4k", "rwmixread": 70}, "rwmixread applies only to mixed"),
        ({"rw": "randrw", "bs": "4k", "rwmixread": 101}, "less than or equal to 100"),
        ({"rw": "read", "bs": "4k", "fsync": 1}, "rw=read does not write"),
        ({"rw": "randread", "bs": "4k", "numjobs": 0}, "greater than or equal to 1"),
        ({"rw": "randread", "bs": "4k", "runtime": 0}, "a job runs at least 0.1 s"),
        ({"rw": "randread", "bs": "4k", "runtime": 0.0005}, "whole milliseconds"),
        ({"rw": "randread", "bs": "4k", "queue_depth": 4}, "queue_depth"),
        ({"rw": "randread", "bs": "4k", "ioengine": "uring"}, "unknown ioengine 'uring'"),
        ({"rw": "randread", "bs": "4k", "size": "lots"}, "or a share of the device like 20%"),
        ({"rw": "randread", "bs": "4k", "size": "150%"}, "less than or equal to 100"),
        ({"rw": "randread", "bs": "4k", "id": "has space"}, "must start with a letter"),
        ({"rw": "randread", "bs": "4k", "thinktime_blocks": 4}, "needs thinktime"),
        ({"rw": "randread"}, "Field required"),
    ],
)  # fmt: skip
def test_invalid_workloads_say_why(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        workload(**fields)


def test_unknown_rw_lists_the_allowed_patterns() -> None:
    with pytest.raises(ValidationError) as caught:
        workload(rw="randomread", bs="4k")
    for pattern in RW_PATTERNS:
        assert f"'{pattern}'" in str(caught.value)


@pytest.mark.parametrize(
    ("option", "field"),
    [("bs", "bs"), ("blocksize", "bs"), ("iodepth", "iodepth"), ("filename", "--devices"),
     ("runtime", "runtime"), ("time_based", "time-based"), ("direct", "direct")],
)  # fmt: skip
def test_extra_cannot_set_options_ssdcompare_owns(option: str, field: str) -> None:
    with pytest.raises(ValidationError, match=f"'{option}' is set by ssdcompare.*{field}"):
        workload(rw="randread", bs="4k", extra={option: "4k"})


@pytest.mark.parametrize(
    ("option", "advice"),
    [("filename", "--devices sets it (the target of each run): leave it out of extra"),
     ("bs", "use the suite field bs instead of extra"),
     ("group_reporting", "it is always on: leave it out of extra"),
     ("log_offset", "it is always on, for the per-second time series: leave it out of extra")],
)  # fmt: skip
def test_an_option_ssdcompare_sets_says_what_to_do_instead(option: str, advice: str) -> None:
    with pytest.raises(ValidationError) as caught:
        workload(rw="randread", bs="4k", extra={option: "1"})
    assert f"fio option '{option}' is set by ssdcompare; {advice}" in str(caught.value)


def test_extra_keeps_other_fio_options() -> None:
    job = workload(
        rw="randread", bs="4k", extra={"random_distribution": "zipf:1.2", "norandommap": None}
    )
    assert job.extra == {"random_distribution": "zipf:1.2", "norandommap": None}
    with pytest.raises(ValidationError, match="not a fio option name"):
        workload(rw="randread", bs="4k", extra={"Bad Option": 1})


def test_size_as_share_or_bytes() -> None:
    share = workload(rw="randread", bs="4k", size="20%")
    assert (share.size_pct, share.size_bytes) == (20.0, None)
    absolute = workload(rw="randread", bs="4k", size="10g")
    assert (absolute.size_pct, absolute.size_bytes) == (None, 10 * 1024**3)
    assert workload(rw="randread", bs="4k", size=None).size_bytes is None


@pytest.mark.parametrize(
    ("fields", "writes", "directions"),
    [
        ({"rw": "randread"}, False, ("read",)),
        ({"rw": "read"}, False, ("read",)),
        ({"rw": "randwrite"}, True, ("write",)),
        ({"rw": "randwrite", "fsync": 1}, True, ("write", "sync")),
        ({"rw": "randrw", "rwmixread": 70}, True, ("read", "write")),
        ({"rw": "randrw", "rwmixread": 100}, False, ("read",)),
        ({"rw": "rw", "rwmixread": 0}, True, ("write",)),
        ({"rw": "randtrim"}, True, ("trim",)),
    ],
)
def test_writes_and_directions(
    fields: dict[str, Any], writes: bool, directions: tuple[str, ...]
) -> None:
    job = workload(bs="4k", **fields)
    assert job.writes is writes
    assert job.directions == directions


def test_duration_counts_ramp_and_runtime() -> None:
    assert workload(rw="read", bs="1m", runtime=7, ramp_time=1).duration_s == 8
    assert workload(rw="read", bs="1m").duration_s == 60  # the default runtime is 60 s


def test_matrix_is_the_product_of_axes_in_order() -> None:
    suite = expanded(
        defaults={"runtime": 5},
        matrices=[{"name": "grid", "axes": {"bs": ["4k", "8k"], "iodepth": [1, 32]},
                   "base": {"rw": "randread"}}],
    )  # fmt: skip
    assert [w.job_id for w in suite.workloads] == [
        "randread-4k-qd1", "randread-4k-qd32", "randread-8k-qd1", "randread-8k-qd32",
    ]  # fmt: skip
    assert {w.group for w in suite.workloads} == {"grid"}
    assert {w.runtime_s for w in suite.workloads} == {5}


def test_matrix_base_overrides_defaults_and_include_adds_points() -> None:
    suite = expanded(
        defaults={"rw": "randwrite", "runtime": 5, "bs": "4k"},
        workloads=[{"rw": "randwrite"}],
        matrices=[{
            "base": {"rw": "randread", "runtime": 9},
            "axes": {"iodepth": [1, 4]},
            "include": [{"iodepth": 256}, {"id": "deep-write", "rw": "randwrite", "iodepth": 64}],
        }],
    )  # fmt: skip
    assert [(w.job_id, w.runtime_s) for w in suite.workloads] == [
        ("randwrite-4k-qd1", 5),
        ("randread-4k-qd1", 9),
        ("randread-4k-qd4", 9),
        ("randread-4k-qd256", 9),
        ("deep-write", 9),
    ]


def test_exclude_matches_values_not_spellings() -> None:
    suite = expanded(
        matrices=[{
            "base": {"rw": "randread"},
            "axes": {"bs": ["4k", "64k"], "iodepth": [1, 256]},
            "exclude": [{"bs": 65536, "iodepth": 256}],
        }],
    )  # fmt: skip
    assert [w.job_id for w in suite.workloads] == [
        "randread-4k-qd1", "randread-4k-qd256", "randread-64k-qd1",
    ]  # fmt: skip


def test_exclude_reads_the_workload_keys_as_the_keys_do() -> None:
    suite = expanded(
        matrices=[{
            "base": {"rw": "randread", "bs": "4k"},
            "axes": {"random_distribution": ["90/10", "zipf:1.2"], "verify": [None, "crc32c"]},
            "exclude": [{"random_distribution": "zoned:90/10:10/90", "verify": "CRC32C"}],
        }],
    )  # fmt: skip
    assert sorted(w.job_id for w in suite.workloads) == [
        "randread-4k-qd1-zipf1.2", "randread-4k-qd1-zipf1.2-verifycrc32c",
        "randread-4k-qd1-zoned90in10.10in90",
    ]  # fmt: skip


def test_exclude_that_matches_nothing_is_an_error() -> None:
    with pytest.raises(SsdcompareError, match=r"matrices\[0\]\.exclude\[1\]: .*matches no"):
        expanded(
            matrices=[{
                "base": {"rw": "randread"},
                "axes": {"bs": ["4k"], "iodepth": [1, 2]},
                "exclude": [{"iodepth": 2}, {"iodepth": 3}],
            }],
        )  # fmt: skip


def test_duplicate_ids_name_both_places() -> None:
    with pytest.raises(SsdcompareError) as caught:
        expanded(
            workloads=[{"rw": "randread", "bs": "4k", "iodepth": 8}],
            matrices=[{"base": {"rw": "randread", "bs": 4096}, "axes": {"iodepth": [1, 8]}}],
        )
    message = str(caught.value)
    assert "duplicate id 'randread-4k-qd8'" in message
    assert "workloads[0]" in message
    assert "matrices[0]" in message
    assert "explicit id" in message


def test_every_problem_is_listed_once_with_its_location() -> None:
    with pytest.raises(SsdcompareError) as caught:
        expanded(
            defaults={"bs": "4q"},
            matrices=[{"base": {"rw": "randread"}, "axes": {"iodepth": [1, 0, 4]}}],
        )
    message = str(caught.value)
    assert message.count("defaults.bs: '4q' is not a size") == 1
    assert message.count("matrices[0].axes.iodepth[1]") == 1


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        ({"axes": {}}, "at least one axis"),
        ({"axes": {"iodepth": []}}, "axis 'iodepth' has no values"),
        ({"axes": {"id": ["a"]}}, "'id' cannot be an axis"),
        ({"axes": {"depth": [1]}}, "unknown axis 'depth'"),
        ({"axes": {"iodepth": [1]}, "base": {"blocks": 4}}, "unknown base key 'blocks'"),
    ],
)
def test_bad_matrices_are_refused(matrix: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        SuiteSpec.model_validate({"name": "t", "description": "d", "matrices": [matrix]})


def test_suite_needs_workloads() -> None:
    with pytest.raises(ValidationError, match="at least one entry"):
        SuiteSpec.model_validate({"name": "t", "description": "d"})


def test_read_only_suite_refuses_writing_jobs() -> None:
    with pytest.raises(
        SsdcompareError, match="read_only suite has writing jobs: randwrite-4k-qd1"
    ):
        expanded(read_only=True, workloads=[{"rw": "randread", "bs": "4k"},
                                            {"rw": "randwrite", "bs": "4k"}])  # fmt: skip


def test_a_suite_past_the_job_bound_is_refused_from_its_axes_before_expanding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def never(*_: Any, **__: Any) -> None:
        raise AssertionError("a workload was built")

    monkeypatch.setattr(matrix.Workload, "model_validate", never)
    ten = list(range(1, 11))
    axes = {"iodepth": ten, "numjobs": ten, "runtime": ten, "ramp": ten, "thinktime": ten,
            "fsync": ten}  # fmt: skip
    with pytest.raises(SsdcompareError) as caught:
        expanded(matrices=[{"name": "grid", "base": {"rw": "randwrite", "bs": "4k"},
                            "axes": axes}])  # fmt: skip
    (line,) = str(caught.value).splitlines()[1:]
    assert "matrices[0] ('grid'): its axes make 1,000,000 jobs" in line
    assert "iodepth 10 x numjobs 10 x runtime 10" in line and "at most 10,000 jobs" in line
    # several matrices under the bound each can pass it together
    half = {"iodepth": list(range(1, 81)), "numjobs": list(range(1, 81))}  # 6,400 each
    with pytest.raises(SsdcompareError, match=r"the suite: would expand to 12,800 jobs "
                       r"\(matrices\[0\] 6,400, matrices\[1\] 6,400\)"):  # fmt: skip
        expanded(matrices=[{"base": {"rw": "read", "bs": "4k"}, "axes": half},
                           {"base": {"rw": "write", "bs": "4k"}, "axes": half}])  # fmt: skip


def test_a_suite_at_the_job_bound_expands() -> None:
    suite = expanded(matrices=[{"base": {"rw": "randread", "bs": "4k"},
                                "axes": {"iodepth": list(range(1, 101)),
                                         "numjobs": list(range(1, 101))}}])  # fmt: skip
    assert len(suite.workloads) == matrix.MAX_JOBS


def test_a_bad_axis_value_is_said_once_not_once_per_combination() -> None:
    with pytest.raises(SsdcompareError) as caught:
        expanded(matrices=[{
            "base": {"rw": "randrw"},
            "axes": {"bs": ["4k", "8k", "4q"], "iodepth": list(range(1, 21)),
                     "numjobs": list(range(1, 21)), "size": ["1g", "lots"]},
        }])  # fmt: skip
    lines = sorted(line.strip() for line in str(caught.value).splitlines()[1:])
    assert len(lines) == 2
    assert lines[0].startswith("matrices[0].axes.bs[2]: '4q' is not a size")
    assert lines[1].startswith("matrices[0].axes.size[1]: 'lots' is not a size")


def test_a_field_no_combination_has_is_said_once() -> None:
    with pytest.raises(SsdcompareError) as caught:
        expanded(matrices=[{"axes": {"bs": ["4k", "8k"], "iodepth": list(range(1, 30))}}])
    (line,) = str(caught.value).splitlines()[1:]
    assert line.strip() == (
        "matrices[0]: rw: Field required (give it in defaults, in the matrix's base or as an axis)"
    )


def test_a_clash_between_axes_is_said_once_with_the_first_combination_and_a_count() -> None:
    with pytest.raises(SsdcompareError) as caught:
        expanded(matrices=[{"base": {"bs": "4k"},
                            "axes": {"rw": ["read", "write"], "fsync": [0, 1],
                                     "iodepth": list(range(1, 51))}}])  # fmt: skip
    (line,) = str(caught.value).splitlines()[1:]
    assert line.strip() == (
        "matrices[0] {'rw': 'read', 'fsync': 1, 'iodepth': 1} and 49 more combinations: fsync "
        "flushes after writes; rw=read does not write"
    )


def test_a_value_given_twice_in_an_axis_is_said_once() -> None:
    with pytest.raises(SsdcompareError) as caught:
        expanded(
            matrices=[
                {
                    "base": {"rw": "read"},
                    "axes": {"bs": ["4k", 4096], "iodepth": list(range(1, 51))},
                }
            ]
        )
    (line,) = str(caught.value).splitlines()[1:]
    assert line.strip().startswith("matrices[0].axes.bs[1]: 4096 is the same value as bs[0]")


def test_a_long_list_of_problems_is_cut_and_counted() -> None:
    with pytest.raises(SsdcompareError) as caught:
        expanded(workloads=[{"rw": "read", "bs": "4k", "iodepth": 0}] * 50)
    lines = str(caught.value).splitlines()[1:]
    assert len(lines) == matrix.MAX_LISTED + 1
    assert lines[0].strip().startswith("workloads[0].iodepth: Input should be greater")
    assert lines[-1].strip() == f"... and {50 - matrix.MAX_LISTED} more problems"
