"""The CPU-bound rule on the CPUs a workload gave fio (cpus_allowed, numa_cpu_nodes): rule 2
judges the chosen CPUs from their own samples; results that chose none judge as before."""

from __future__ import annotations

from pathlib import Path

from test_report_advice import EXAMPLE, busy_host

from ssdcompare.analysis.frame import load
from ssdcompare.analysis.runrows import chosen_cpus
from ssdcompare.fio.binary import FioInfo
from ssdcompare.fio.result.plausibility import trace_problem
from ssdcompare.judge.cpu import ChosenCpus, CpuSample, CpuStats, CpuTrace, cpu_list, judge
from ssdcompare.judge.verdict import RunFacts, judge_run
from ssdcompare.report.build import render_report
from ssdcompare.results.store import ResultsDir
from ssdcompare.run import sampler, sweep
from ssdcompare.run.plan import PlanOptions, make_plan
from ssdcompare.suite.workload import Workload

ALLOWED_0 = ChosenCpus(frozenset({0}), "cpus_allowed")


def busy(pct: float) -> list[float]:
    """One CPU's shares in a sample (CATEGORIES order): `pct` in user, the rest idle."""
    return [pct, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 100.0 - pct]


def stats(*cpus: float, numbers: list[int] | None = None) -> CpuStats:
    """The means of ten samples in which each CPU is as busy as given, and two fio workers
    share half a core each (neither near a full core, neither runnable all the time)."""
    samples = [
        CpuSample(t_s=0.1 * (n + 1), cpus=[busy(pct) for pct in cpus],
                  workers={"11": 49.0, "12": 49.0}, runnable={"11": 55.0, "12": 55.0})
        for n in range(10)
    ]  # fmt: skip
    trace = CpuTrace(interval_s=0.1, cpu_count=len(cpus), samples=samples,
                     cpu_numbers=numbers or [])  # fmt: skip
    found = trace.stats()
    assert found is not None
    return found


def test_a_chosen_cpu_at_its_limit_is_cpu_bound_though_the_machine_is_half_idle() -> None:
    two_jobs_on_cpu0 = stats(98.0, 1.0)
    verdict = judge(two_jobs_on_cpu0, 30.0, 19.0, cpu_count=2, chosen=ALLOWED_0)
    assert verdict.cpu_bound is True
    assert verdict.reason == "CPU 0 (cpus_allowed) 98 % busy"


def test_the_same_samples_without_chosen_cpus_are_judged_on_the_whole_machine() -> None:
    two_jobs_on_cpu0 = stats(98.0, 1.0)
    assert two_jobs_on_cpu0.cpu_busy_pct == 49.5  # the machine's mean: rule 2 stays quiet
    verdict = judge(two_jobs_on_cpu0, 30.0, 19.0, cpu_count=2)
    assert verdict.cpu_bound is False and verdict.reason is None


def test_several_chosen_cpus_are_judged_together_and_named_as_a_list() -> None:
    found = stats(97.0, 93.0, 2.0, 1.0)
    verdict = judge(found, 30.0, 19.0, chosen=ChosenCpus(frozenset({0, 1}), "cpus_allowed"))
    assert verdict.reason == "CPUs 0-1 chosen with cpus_allowed 95 % busy"
    node = ChosenCpus(frozenset({0, 1, 3}), "numa_cpu_nodes=0")
    assert judge(found, 30.0, 19.0, chosen=node).cpu_bound is False  # (97+93+1)/3: 64 %
    assert cpu_list([5, 0, 1, 2, 8, 9]) == "0-2,5,8-9"


def test_a_busy_machine_does_not_make_an_idle_chosen_cpu_cpu_bound() -> None:
    """Other work fills CPUs fio was not given; fio's own CPU has room: rule 2 does not fire
    (the busy neighbours are the verdict's `others_pct`, a disturbance, not the CPU limit)."""
    found = stats(30.0, *[100.0] * 7)
    assert found.cpu_busy_pct is not None and found.cpu_busy_pct >= 90.0
    assert judge(found, 30.0, 19.0, chosen=ALLOWED_0).cpu_bound is False


def test_rule_three_stays_machine_wide_with_chosen_cpus() -> None:
    found = stats(20.0, 20.0).model_copy(
        update={"irq_softirq_max_pct": 95.0, "irq_softirq_max_index": 1}
    )
    verdict = judge(found, 10.0, 5.0, chosen=ALLOWED_0)
    assert verdict.cpu_bound is True and verdict.reason == "CPU1 95 % in irq+softirq"


def test_chosen_cpus_that_cannot_be_read_leave_the_result_unknown_with_the_reason() -> None:
    found = stats(98.0, 1.0)
    unsampled = judge(found, 30.0, 19.0, chosen=ChosenCpus(frozenset({7}), "cpus_allowed"))
    assert unsampled.cpu_bound is None
    assert unsampled.reason == "no CPU samples of the CPUs chosen with cpus_allowed"
    unrecorded = judge(found, 30.0, 19.0, chosen=ChosenCpus(None, "numa_cpu_nodes=1"))
    assert unrecorded.cpu_bound is None
    verdict = judge_run(RunFacts(cpu_bound=None, cpu_reason=unrecorded.reason))
    assert verdict.verdict == "unknown"
    assert verdict.reason == ("the CPUs chosen with numa_cpu_nodes=1 are not recorded: whether "
                              "the CPU was the limit is not known")  # fmt: skip
    # another rule that fires still decides
    saturated = found.model_copy(update={"fio_worker_max_pct": 99.0})
    assert judge(saturated, None, None, chosen=ChosenCpus(None, "numa_cpu_nodes=1")).cpu_bound


def test_a_chosen_cpu_is_found_by_its_number_when_a_lower_one_is_offline() -> None:
    """CPU 1 offline: /proc/stat's second line is CPU 2, and the trace says so."""
    found = stats(1.0, 98.0, numbers=[0, 2])
    assert [share.index for share in found.per_cpu] == [0, 2]
    verdict = judge(found, 30.0, 19.0, chosen=ChosenCpus(frozenset({2}), "cpus_allowed"))
    assert verdict.reason == "CPU 2 (cpus_allowed) 98 % busy"
    assert judge(found, 30.0, 19.0, chosen=ChosenCpus(frozenset({1}), "cpus_allowed")).reason == (
        "no CPU samples of the CPUs chosen with cpus_allowed")  # fmt: skip


def test_cpu_numbers_are_read_from_proc_stat_and_checked_when_read_back() -> None:
    data = b"cpu  3 0 0 9 0 0 0\ncpu0 1 0 0 4 0 0 0\ncpu3 2 0 0 5 0 0 0\nintr 1\n"
    numbers, rows = sampler.parse_cpu_stat(data)
    assert numbers == [0, 3] and rows == sampler.parse_cpu_lines(data)
    taken = sampler.CpuSampler()
    taken.start()
    trace = taken.stop()
    assert len(trace.cpu_numbers) == trace.cpu_count >= 1
    assert len(set(trace.cpu_numbers)) == trace.cpu_count
    twice = CpuTrace(interval_s=0.1, cpu_count=2, cpu_numbers=[0, 0])
    assert trace_problem(twice) is not None
    assert trace_problem(twice.model_copy(update={"cpu_numbers": [0, 5]})) is None


def workload(**keys: object) -> Workload:
    return Workload.model_validate({"id": "w", "rw": "randread", "bs": "4k", **keys})


def test_the_chosen_cpus_come_from_the_workload_and_the_recorded_nodes() -> None:
    nodes = {"0": "0-1", "1": "2-3"}
    assert chosen_cpus(workload(), nodes) is None
    assert chosen_cpus(None, nodes) is None
    assert chosen_cpus(workload(cpus_allowed="0,2-3"), nodes) == ChosenCpus(
        frozenset({0, 2, 3}), "cpus_allowed")  # fmt: skip
    assert chosen_cpus(workload(extra={"cpus_allowed": "1"}), nodes) == ChosenCpus(
        frozenset({1}), "cpus_allowed")  # fmt: skip
    node = ChosenCpus(frozenset({2, 3}), "numa_cpu_nodes=1")
    assert chosen_cpus(workload(numa_cpu_nodes="1"), nodes) == node
    # fio runs a job on the node's CPUs after cpus_allowed: they replace it
    assert chosen_cpus(workload(numa_cpu_nodes="1", cpus_allowed="0"), nodes) == node
    assert chosen_cpus(workload(numa_cpu_nodes="0-1"), nodes) == ChosenCpus(
        frozenset({0, 1, 2, 3}), "numa_cpu_nodes=0-1")  # fmt: skip
    assert chosen_cpus(workload(numa_cpu_nodes="2"), nodes) == ChosenCpus(
        None, "numa_cpu_nodes=2")  # fmt: skip
    assert chosen_cpus(workload(numa_cpu_nodes="0"), {}) == ChosenCpus(None, "numa_cpu_nodes=0")


def test_two_null_engine_jobs_pinned_to_one_cpu_are_cpu_bound_on_it(
    tmp_path: Path, fio: FioInfo
) -> None:
    """The null engine never waits: two jobs on CPU 0 keep it busy whatever else runs, and the
    verdict names the chosen CPU (on a 2-CPU host the machine is about half busy)."""
    suite = tmp_path / "pinned.yaml"
    suite.write_text(
        "name: pinned\ndescription: two null-engine jobs on CPU 0\n"
        "defaults: {runtime: 1, size: 16m}\nworkloads:\n"
        "  - {id: null-cpu0, rw: randread, bs: 4k, iodepth: 1, ioengine: null, numjobs: 2,"
        ' cpus_allowed: "0"}\n'
    )
    plan = make_plan(str(suite), str(tmp_path / "scratch.img"), PlanOptions(size_bytes=16 << 20))
    assert "\ncpus_allowed=0\n" in plan.jobs[0].text
    results, _ = sweep.start(plan, tmp_path / "results", command_line=["test"])
    assert sweep.run(plan, results).count("ok") == 1
    row = load(results.path, cache=False).iloc[0]
    assert row["cpus_allowed"] == "0"
    assert bool(row["cpu_bound"]) is True, row["cpu_bound_reason"]
    assert "CPU 0 (cpus_allowed)" in row["cpu_bound_reason"], row["cpu_bound_reason"]
    assert row["verdict_reason"] is not None and row["cpu_bound_reason"] in row["verdict_reason"]


def test_the_report_names_the_chosen_cpus_where_a_job_chose_them() -> None:
    """The legend's rule 2 says "all CPUs" alone unless some job chose its CPUs; the advice
    for CPU-bound results that ran on chosen CPUs says to give them more."""
    frame, sweeps = busy_host(load(EXAMPLE)), [ResultsDir.open(EXAMPLE)]
    legend = "for a job\n    that chose its CPUs with <code>cpus_allowed</code>"
    assert legend not in render_report(frame, sweeps, "loop1")
    frame.loc[frame["verdict"] == "cpu", "cpus_allowed"] = "0"
    html = render_report(frame, sweeps, "loop1")
    assert legend in html
    assert "ran on the CPUs their job chose (cpus_allowed, numa_cpu_nodes)" in html
