"""What `ssdcompare sweep` costs around fio: its time per job, and the IOPS it leaves a job.

- Orchestration per job: sweeps of N and of 2N jobs against a file target, each job run by
  an instant fake fio (a shell script that answers `--version` like fio 3.33, accepts every
  jobfile, and for a job run copies a real recorded fio json+ output, under the job's name,
  to its --output file). The overhead per job is (T(2N) - T(N)) / N, which cancels a sweep's
  fixed costs (fio's checks, the manifest), less the fake fio's own time per start (measured
  by starting it alike). What remains is the sweep's own work per job: the jobfile written,
  read back and checked, the guard's look before a writing job, the CPU sampler started and
  stopped, fio started, its output parsed, the status written. Each sweep runs in a process
  of its own (this file as a script: the sweep command's steps from the plan to the last
  run); the interpreter's start and the closing report are left out, the report having
  figures of its own.
- Passthrough: IOPS of a CPU-bound null-engine job (4k random reads, time based) run by
  `ssdcompare sweep` against the same jobfile run by bare fio, in pairs run side by side,
  each pinned to a CPU of its own (swapped from pair to pair; the sweep's process and its
  CPU sampler share its fio's CPU); the median of the pairs' ratios. Bare fio runs the
  jobfile a first sweep rendered and kept (runs/<device>/<job>/r1/jobfile.fio), with the
  command line the sweep recorded for it, and starts when the sweep's fio job has started.
"""

from __future__ import annotations

import io
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from run import RECORDED, Figure, _recorded

FAKE_VERSION = "fio-3.33"
ENGINES = ("io_uring", "libaio", "null", "psync", "sync", "pvsync", "pvsync2", "posixaio", "mmap")


def fake_fio(folder: Path, outputs: Path) -> Path:
    """An instant fio: `--version`, `--enghelp` and `--parse-only` answer as fio 3.33 does for
    good jobfiles; any other command line with --output=FILE runs "the job" by copying
    `outputs`/<job>.json to FILE, <job> being the folder of the run holding the jobfile
    (runs/<device>/<job>/r1/jobfile.fio, as the runner passes it, last)."""
    engines = "".join(f"\\t{name}\\n" for name in ENGINES)
    script = folder / "fio"
    script.write_text(f"""#!/bin/sh
out=
for arg in "$@"; do
    case $arg in
        --version) echo {FAKE_VERSION}; exit 0 ;;
        --enghelp) printf 'Available IO engines:\\n{engines}'; exit 0 ;;
        --parse-only) exit 0 ;;
        --output=*) out=${{arg#--output=}} ;;
    esac
    last=$arg
done
[ -n "$out" ] || exit 0
run=${{last%/*}}
job=${{run%/*}}
exec cp {shlex.quote(str(outputs))}/"${{job##*/}}.json" "$out"
""")
    script.chmod(0o755)
    return script


def _suite(folder: Path, name: str, workloads: list[str], runtime: int) -> Path:
    lines = [f"name: {name}", f"description: {name}, for benchmarks/run.py",
             f"defaults: {{runtime: {runtime}, size: 16m}}", "workloads:",
             *(f"  - {w}" for w in workloads)]  # fmt: skip
    path = folder / f"{name}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _job_ids(count: int) -> list[str]:
    return [f"j{n:04d}" for n in range(count)]


def _workloads(count: int) -> list[str]:
    """Reads and writes in turn, as in the bundled suites: writing jobs get the guard's
    look before they run."""
    return [f"{{id: {job}, rw: {'randread' if n % 2 == 0 else 'randwrite'}, bs: 4k, "
            f"iodepth: {1 << (n % 6)}}}" for n, job in enumerate(_job_ids(count))]  # fmt: skip


def _check_ok(out: Path, what: str, stderr: str) -> None:
    statuses = [json.loads(p.read_text())["status"] for p in out.glob("runs/*/*/r*/status.json")]
    if not statuses or set(statuses) != {"ok"}:
        raise RuntimeError(f"the sweep of {what} did not end ok ({sorted(set(statuses))}): "
                           f"{stderr[-2000:]}")  # fmt: skip


def _sweep_command(suite: Path, target: Path, out: Path) -> list[str]:
    """`ssdcompare sweep` as a user runs it."""
    return [sys.executable, "-m", "ssdcompare", "sweep", "--devices", str(target), "--size",
            "16m", "--suite", str(suite), "--out", str(out)]  # fmt: skip


def _sweep(suite: Path, target: Path, out: Path, env: dict[str, str]) -> None:
    """`ssdcompare sweep` as a user runs it; every run must end ok."""
    done = subprocess.run(
        _sweep_command(suite, target, out),
        env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    _check_ok(out, suite.name, done.stderr if done.returncode else "")


def _sweep_time(suite: Path, target: Path, out: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds (its own and its children's) of a sweep in a new process (this
    file run as a script, see `_timed_sweep`): what `ssdcompare sweep` does from the plan to
    the last run, without the interpreter's start and the closing report (measured by
    figures of its own)."""
    done = subprocess.run(
        [sys.executable, __file__, str(suite), str(target), str(out)],
        env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    _check_ok(out, suite.name, done.stderr)
    wall, cpu = done.stdout.split()[-2:]
    return float(wall), float(cpu)


def _cpu_s() -> float:
    """CPU seconds of this process and of its children that ended."""
    own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                         resource.RUSAGE_CHILDREN))  # fmt: skip
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _timed_sweep(suite: str, target: str, out: str) -> tuple[float, float]:
    """The sweep command's own steps, in this process: plan, checks, manifest, every run
    with the progress line (the CLI's, into a buffer)."""
    from ssdcompare.cli.api import prepare_sweep
    from ssdcompare.cli.terminal import ProgressLine
    from ssdcompare.run import sweep

    started, cpu = time.perf_counter(), _cpu_s()
    plan, results, _ = prepare_sweep(target, suite, ["ssdcompare", "sweep"], size="16m", out=out)
    progress = ProgressLine(io.StringIO())
    sweep.run(plan, results, progress=progress)
    progress.close()
    return time.perf_counter() - started, _cpu_s() - cpu


def _fake_start_s(fake: Path, scratch: Path, outputs: Path, rounds: int) -> tuple[float, float]:
    """The fake fio's own time per job run, wall (the median of `rounds` starts) and CPU (the
    mean, the starter's share included): started as the runner starts it (a command line of
    the same shape, a new session)."""
    run = scratch / "runs" / "dev" / "j0000" / "r1"
    run.mkdir(parents=True)
    (run / "jobfile.fio").write_text("[j0000]\n")
    command = [str(fake), "--output-format=json+", f"--output={run / 'fio.json.partial'}",
               "--readonly", str(run / "jobfile.fio")]  # fmt: skip
    times = []
    cpu = _cpu_s()
    for _ in range(rounds):
        started = time.perf_counter()
        subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                       start_new_session=True, cwd=run, check=True)  # fmt: skip
        times.append(time.perf_counter() - started)
    return statistics.median(times), (_cpu_s() - cpu) / rounds


def orchestration_figures(quick: bool) -> list[Figure]:
    """Per-job overhead of a sweep: (T(2N) - T(N)) / N less the fake fio's time per start,
    the median over `pairs` pairs of sweeps (N first, then 2N, in turn)."""
    count, pairs = (8, 1) if quick else (40, 5)
    with tempfile.TemporaryDirectory(prefix="ssdcompare-orch-") as name:
        scratch = Path(name)
        outputs = scratch / "outputs"
        outputs.mkdir()
        recorded, recorded_name = _recorded(RECORDED)
        for job in _job_ids(2 * count):
            text = recorded.replace(f'"jobname" : "{recorded_name}"', f'"jobname" : "{job}"')
            (outputs / f"{job}.json").write_text(text)
        fake = fake_fio(scratch, outputs)
        env = dict(os.environ, SSDCOMPARE_FIO=str(fake))
        suites = {n: _suite(scratch, f"orch{n}", _workloads(n), 1) for n in (count, 2 * count)}
        target = scratch / "target.img"
        with open(target, "wb") as handle:
            handle.truncate(16 << 20)
        _sweep_time(suites[count], target, scratch / "warm", env)  # the page cache
        wall, cpu = [], []
        for pair in range(pairs):
            short = _sweep_time(suites[count], target, scratch / f"n{pair}", env)
            long = _sweep_time(suites[2 * count], target, scratch / f"2n{pair}", env)
            wall.append((long[0] - short[0]) / count)
            cpu.append((long[1] - short[1]) / count)
        fake_wall, fake_cpu = _fake_start_s(fake, scratch / "alone", outputs, 20 if quick else 100)
    net_ms = [(seconds - fake_wall) * 1000 for seconds in wall]
    cpu_ms = (statistics.median(cpu) - fake_cpu) * 1000
    # the CPU time per job too: a busy host stretches the wall time, the CPU time far less
    spread = f"{min(net_ms):.0f}-{max(net_ms):.0f} ms, " if pairs > 1 else ""
    what = f"{count} vs {2 * count} jobs x {pairs}, {spread}CPU {cpu_ms:.0f} ms"
    return [Figure(f"sweep orchestration per job ({what})", statistics.median(net_ms), 20, "ms")]


def _iops(path: Path) -> float:
    return float(sum(job["read"]["iops"] for job in json.loads(path.read_text())["jobs"]))


def _cpu(path: Path) -> float:
    """The job's fio worker CPU use, usr + sys, % of one CPU."""
    job = json.loads(path.read_text())["jobs"][0]
    return float(job["usr_cpu"]) + float(job["sys_cpu"])


def passthrough_figures(quick: bool) -> list[Figure]:
    """IOPS through ssdcompare / bare fio of one null-engine jobfile: the median of the pairs'
    ratios. The two runs of a pair run side by side, each pinned to a CPU of its own (swapped
    from one pair to the next): this shared VM's speed drifts by 2x between runs seconds
    apart, which alternating runs leave in every pair (their ratios ranged 0.5-1.6 for the
    same job run twice), while runs side by side share the host's moments (0.97-1.02).
    The sweep's own process and CPU sampler share its fio's CPU: the harder case. With one
    CPU the runs alternate."""
    from ssdcompare.fio.binary import find_fio

    seconds, pairs = (1, 1) if quick else (2, 10)
    fio = find_fio()
    cpus = sorted(os.sched_getaffinity(0))[:2]
    ratios: list[float] = []
    cpu: list[float] = []
    with tempfile.TemporaryDirectory(prefix="ssdcompare-iops-") as name:
        scratch = Path(name)
        suite = _suite(scratch, "nullio", ["{id: null-4k, rw: randread, bs: 4k, iodepth: 1, "
                                           "ioengine: null}"], seconds)  # fmt: skip
        target = scratch / "target.img"
        env = dict(os.environ, SSDCOMPARE_FIO=fio.path)
        # a first sweep: the command line its fio ran with, for bare fio to run alike
        _sweep(suite, target, scratch / "sweep-first", env)
        (run,) = (scratch / "sweep-first").glob("runs/*/null-4k/r1")
        ran = json.loads((run / "status.json").read_text())["command"]
        for pair in range(pairs):
            out, bare = scratch / f"sweep{pair}", scratch / f"bare{pair}"
            bare.mkdir()
            command = [f"--output={bare / 'fio.json'}" if arg.startswith("--output=") else arg
                       for arg in ran]  # fmt: skip
            if len(cpus) < 2:
                _sweep(suite, target, out, env)
                _bare(command, bare, None)
            else:
                first, second = cpus if pair % 2 == 0 else cpus[::-1]
                sweep = _start_sweep(suite, target, out, env, first)
                try:
                    _until_job_runs(sweep)  # then bare fio starts: both run the same seconds
                    _bare(command, bare, second)
                    _, stderr = sweep.communicate(timeout=120)
                finally:
                    if sweep.poll() is None:
                        sweep.kill()
                _check_ok(out, suite.name, stderr)
            (run,) = out.glob("runs/*/null-4k/r1")
            ratios.append(_iops(run / "fio.json") / _iops(bare / "fio.json"))
            cpu.append(_cpu(run / "fio.json") / _cpu(bare / "fio.json"))
    how = "side by side" if len(cpus) >= 2 else "alternating"
    what = f"{pairs} pairs of {seconds} s {how}, {min(ratios):.3f}-{max(ratios):.3f}"
    return [
        Figure(f"IOPS via ssdcompare / bare fio, null engine ({what})",
               statistics.median(ratios), 0.99, "x", lower_is_better=False),
        Figure("fio worker's CPU (usr+sys) via ssdcompare / bare fio", statistics.median(cpu),
               None, "x"),
    ]  # fmt: skip


def _pinned(cpu: int | None) -> Callable[[], None] | None:
    return None if cpu is None else lambda: os.sched_setaffinity(0, {cpu})


def _start_sweep(
    suite: Path, target: Path, out: Path, env: dict[str, str], cpu: int
) -> subprocess.Popen[str]:
    """`ssdcompare sweep` as _sweep runs it, started on one CPU (its fio inherits it)."""
    return subprocess.Popen(
        _sweep_command(suite, target, out),
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        preexec_fn=_pinned(cpu),
    )  # fmt: skip


def _until_job_runs(sweep: subprocess.Popen[str]) -> None:
    """Wait until the sweep runs its job: a fio writing an output (it first runs fio to ask
    its version, engines and whether the jobfile parses)."""
    import psutil

    parent = psutil.Process(sweep.pid)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and sweep.poll() is None:
        for child in parent.children(recursive=True):
            try:
                if child.name() == "fio" and any(
                    a.startswith("--output=") for a in child.cmdline()
                ):
                    return
            except psutil.Error:
                pass  # a child that ended between the listing and the look
        time.sleep(0.002)
    raise RuntimeError("the sweep's fio job did not start")


def _bare(command: list[str], folder: Path, cpu: int | None) -> None:
    subprocess.run(command, cwd=folder, stdin=subprocess.DEVNULL, capture_output=True,
                   timeout=120, check=True, preexec_fn=_pinned(cpu))  # fmt: skip


if __name__ == "__main__":
    print(*_timed_sweep(*sys.argv[1:4]))
