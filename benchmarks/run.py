"""Performance at scale: each figure next to its target, measured side by side in one run.

    .venv/bin/python benchmarks/run.py            # every figure; exit 1 when a target is missed
    .venv/bin/python benchmarks/run.py --quick    # small sizes: checks that it works (CI)
    .venv/bin/python benchmarks/run.py --only orchestration   # one kind of figure (see --help)

Figures (ratios are measured side by side, so a busy shared host moves both sides alike):
- the report for a synthetic result set of 1,000 jobs x 4 devices (time and HTML size), the
  same where every job is a read/write mix (two directions each, twice the rows), and
  of 40 jobs x 2 devices (time), made again on results loaded before (each folder keeps its
  frame in .cache/; the sweep's own report at its end is the first load). The first report
  of a folder, which builds the frame from every raw file, is printed as well, without a
  target;
- ingest: `ssdcompare.load` of those results (loaded before) against `json.loads` of the same
  fio.json bytes, `read_fio` over the same files (the three in turns, five rounds, the best
  of each), and the first load (no target); the same for the mixed set;
- the CPU sampler's own cost at 10 Hz, as % of one core, while a null-engine fio job runs;
- a sweep's orchestration per job, in ms: sweeps of N and 2N jobs run by an instant fake fio,
  (T(2N) - T(N)) / N less the fake's own time per start (benchmarks/orchestration.py);
- IOPS of a CPU-bound null-engine job through `ssdcompare sweep` / bare fio running the
  jobfile the sweep kept, the median of pairs run side by side on a CPU each
  (benchmarks/orchestration.py: on this shared VM the same job's IOPS drift by 2x between
  runs, so runs in turn would measure the drift), and the fio worker's own CPU share in the
  same pairs (no target).

The synthetic results are real-shaped: every run holds a copy of a real fio json+ output
(tests/data/randread-libaio-jsonplus-normal.json) under the job's own name, a jobfile
rendered by ssdcompare for a file target, per-second IOPS, bandwidth and latency logs (5 s)
and a status, in a results folder with a manifest, as a sweep writes them. Nothing of fio
runs for them; the sampler and IOPS figures run fio.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECORDED = REPO / "tests" / "data" / "randread-libaio-jsonplus-normal.json"
RECORDED_MIXED = REPO / "tests" / "data" / "randrw-latpct-json.json"  # a 70/30 mix: two directions


@dataclass
class Figure:
    name: str
    value: float
    target: float | None  # None: a figure printed for information, with no target
    unit: str
    lower_is_better: bool = True

    @property
    def met(self) -> bool:
        if self.target is None:
            return True
        return self.value <= self.target if self.lower_is_better else self.value >= self.target

    def line(self) -> str:
        if self.target is None:
            return f"{self.name:<58} {self.value:>10.2f} {self.unit:<6} (no target)"
        sign = "<=" if self.lower_is_better else ">="
        mark = "met" if self.met else "MISSED"
        return (f"{self.name:<58} {self.value:>10.2f} {self.unit:<6} target {sign} "
                f"{self.target:g} {self.unit:<6} {mark}")  # fmt: skip


def _workloads(count: int, mixed: bool = False) -> list[dict[str, object]]:
    """`count` workloads in families: four patterns x block sizes x queue depths; `mixed`:
    every one a read/write mix (two directions each: the frame's rows double)."""
    found: list[dict[str, object]] = []
    patterns = ("randrw", "rw") if mixed else ("randread", "randwrite", "read", "write")
    sizes = (4096, 8192, 16384, 65536, 131072, 1 << 20)
    depths = (1, 2, 4, 8, 16, 32, 64, 128)
    jobs = 1
    while len(found) < count:
        for rw in patterns:
            for bs in sizes:
                for qd in depths:
                    if len(found) < count:
                        mix = {"rwmixread": 70} if mixed else {}
                        found.append({"rw": rw, "bs_bytes": bs, "iodepth": qd, "numjobs": jobs,
                                      "runtime_s": 5, **mix})  # fmt: skip
        jobs += 1
    return found


def synthetic_results(folder: Path, jobs: int, devices: int, mixed: bool = False) -> Path:
    """A results folder of `jobs` x `devices` finished runs, shaped as a sweep writes them;
    `mixed`: read/write mixes, each run's output a real 70/30 mix's."""
    from ssdcompare import __version__
    from ssdcompare.results.files import write_atomic
    from ssdcompare.results.models import Manifest, RunStatus, now_iso
    from ssdcompare.results.store import ResultsDir
    from ssdcompare.run.plan import PlanOptions, make_plan
    from ssdcompare.suite.workload import Suite, Workload
    from ssdcompare.target.metadata import HostInfo, device_info

    suite = Suite(name="scale", description="synthetic", workloads=[
        Workload(**w) for w in _workloads(jobs, mixed)])  # type: ignore[arg-type]  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    targets = [str(folder / f"dev{n}.img") for n in range(devices)]
    plan = make_plan(suite, targets, PlanOptions(size_bytes=1 << 20))
    manifest = Manifest(
        created_at=now_iso(), command_line=["benchmarks/run.py"], suite=plan.suite,
        targets=plan.targets, devices=[device_info(t) for t in plan.targets],
        host=HostInfo(hostname="bench", cpu_threads=2, ssdcompare_version=__version__),
        repeat=1, ioengine=plan.default_ioengine,
    )  # fmt: skip
    results = ResultsDir.create(folder / "results", manifest)
    recorded, name = _recorded(RECORDED_MIXED if mixed else RECORDED)
    for job in plan.jobs:
        run = results.prepare_run(job.target.name, job.job_id, 1)
        write_atomic(run / "jobfile.fio", job.text)
        # fio's own text, under the job's name
        write_atomic(
            run / "fio.json",
            recorded.replace(f'"jobname" : "{name}"', f'"jobname" : "{job.job_id}"'),
        )
        for kind, value in (("iops", 70000), ("bw", 280000), ("lat", 46000)):
            lines = "".join(f"{t * 1000}, {value + t}, {d}, 4096, 0\n" for t in range(1, 6)
                            for d in ((0, 1) if mixed else (0,)))  # fmt: skip
            write_atomic(run / f"timeseries_{kind}.1.log", lines)
        results.write_status(run, RunStatus(
            status="ok", target=job.target.name, job=job.job_id, repeat=1,
            workload_hash=job.workload_hash, started_at=now_iso(), finished_at=now_iso(),
        ))  # fmt: skip
    return results.path


def _recorded(path: Path) -> tuple[str, str]:
    """The JSON text of a recorded fio output, as fio wrote it (a file may also hold fio's
    normal report), and its job's name."""
    text = path.read_text()
    start = 0 if text.startswith("{") else text.index("\n{") + 1
    value, end = json.JSONDecoder().raw_decode(text[start:])
    return text[start : start + end] + "\n", value["jobs"][0]["jobname"]


def _timed(work: Callable[[], object], rounds: int = 1) -> float:
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - started)
    return best


def report_figures(scratch: Path, jobs: int, devices: int, limit_s: float,
                   limit_mb: float | None, mixed: bool = False) -> list[Figure]:  # fmt: skip
    from ssdcompare.report.build import write_report

    kind = "mixed " if mixed else ""
    folder = synthetic_results(scratch / f"r{jobs}x{devices}{kind}", jobs, devices, mixed)
    out = scratch / f"report-{jobs}x{devices}{kind.strip()}.html"
    first = _timed(lambda: write_report([folder], out))
    seconds = _timed(lambda: write_report([folder], out))
    name = f"report, {jobs} {kind}jobs x {devices} devices"
    found = [
        Figure(f"{name}: time", seconds, limit_s, "s"),
        Figure(f"{name}: first report", first, None, "s"),
    ]
    if limit_mb is not None:
        size = out.stat().st_size / 1e6
        found.append(Figure(f"{name}: size", size, limit_mb, "MB"))
    return found


def ingest_figures(scratch: Path, jobs: int, devices: int, mixed: bool = False) -> list[Figure]:
    import ssdcompare

    kind = "mixed " if mixed else ""
    folder = synthetic_results(scratch / f"i{jobs}x{devices}{kind}", jobs, devices, mixed)
    files = sorted(folder.glob("runs/*/*/r1/fio.json"))
    blobs = [f.read_bytes() for f in files]

    def baseline() -> None:
        for path in files:
            json.loads(path.read_bytes())

    first = _timed(lambda: ssdcompare.load(folder))  # builds the frame and keeps it
    # in turns, the best of each: a busy host slows the rounds next to each other alike
    plain = loading = reading = float("inf")
    for _ in range(5):
        plain = min(plain, _timed(baseline))
        loading = min(loading, _timed(lambda: ssdcompare.load(folder)))
        reading = min(reading, _timed(lambda: ssdcompare.read_fio(files)))
    count = f"{len(files)} {kind}results, {sum(map(len, blobs)) / 1e6:.1f} MB"
    return [
        Figure(f"ssdcompare.load / json.loads ({count})", loading / plain, 1.5, "x"),
        Figure(f"read_fio of the list / json.loads ({count})", reading / plain, 1.5, "x"),
        Figure("ssdcompare.load the first time / json.loads", first / plain, None, "x"),
    ]


def sampler_figure(seconds: int) -> Figure:
    from ssdcompare.fio.binary import find_fio
    from ssdcompare.run.sampler import CpuSampler

    fio = find_fio()
    with tempfile.TemporaryDirectory() as scratch:
        proc = subprocess.Popen(
            [fio.path, "--name=load", "--ioengine=null", "--rw=randread", "--bs=4k",
             "--size=1g", f"--runtime={seconds}", "--time_based", f"--filename={scratch}/x",
             "--output-format=terse"], stdout=subprocess.DEVNULL,
        )  # fmt: skip
        sampler = CpuSampler(interval_s=0.1)
        sampler.start(proc.pid)
        proc.wait()
        trace = sampler.stop()
    return Figure("CPU sampler at 10 Hz, % of one core", trace.sampler_cpu_pct or 0.0, 0.5, "%")


KINDS = ("report", "ingest", "sampler", "orchestration", "passthrough")


def figures_of(kind: str, scratch: Path, quick: bool) -> list[Figure]:
    """The figures of one kind (see KINDS and the module), measured in `scratch`."""
    if kind == "report":
        found = report_figures(scratch, 40, 2, 2.0, None)
        if not quick:
            found += report_figures(scratch, 1000, 4, 5.0, 5.0)
            found += report_figures(scratch, 1000, 4, 5.0, 5.0, mixed=True)
        return found
    if kind == "ingest":
        found = ingest_figures(scratch, 40 if quick else 1000, 2 if quick else 4)
        return found if quick else found + ingest_figures(scratch, 1000, 4, mixed=True)
    if kind == "sampler":
        return [sampler_figure(2 if quick else 5)]
    from orchestration import orchestration_figures, passthrough_figures

    if kind == "orchestration":
        return orchestration_figures(quick)
    return passthrough_figures(quick)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true",
                        help="small sizes only: checks that every measurement works")  # fmt: skip
    parser.add_argument("--only", choices=KINDS, action="append",
                        help="measure only this kind of figure (may be given again)")  # fmt: skip
    args = parser.parse_args()
    figures: list[Figure] = []
    with tempfile.TemporaryDirectory(prefix="ssdcompare-bench-") as name:
        for kind in args.only or KINDS:
            figures += figures_of(kind, Path(name), args.quick)
    for figure in figures:
        print(figure.line())
    missed = [f for f in figures if not f.met]
    if args.quick:
        return 0  # the figures of a quick run on a shared machine decide nothing
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
