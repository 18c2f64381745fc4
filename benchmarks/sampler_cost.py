"""The CPU sampler's rate and own cost at several rates while a real fio job runs.

    .venv/bin/python benchmarks/sampler_cost.py [--seconds 3]

Prints, per rate: samples taken against the samples the interval asks for, the sampler
thread's CPU use (% of one core), and what it measured of the fio worker (a null-engine job,
which spins: % of one core on a CPU, % of the time runnable) with the CPUs' steal share, so a
change to the sampler can be checked for what it costs and how closely it keeps its rate.
These are figures, not pass/fail checks: on a shared machine they move with other load.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile
import time

from ssdcompare.fio.binary import find_fio
from ssdcompare.run.sampler import CpuSampler


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=3)
    args = parser.parse_args()
    fio = find_fio()
    print(
        f"{'rate':>6} {'samples':>8} {'asked':>6} {'sampler % of a core':>20}"
        f" {'fio worker %':>13} {'runnable %':>11} {'steal %':>8}"
    )
    for hertz in (10, 20, 50):
        with tempfile.TemporaryDirectory() as scratch:
            proc = subprocess.Popen(
                [fio.path, "--name=load", "--ioengine=null", "--rw=randread", "--bs=4k",
                 "--size=1g", f"--runtime={args.seconds}", "--time_based",
                 f"--filename={scratch}/x", "--output-format=terse"],
                stdout=subprocess.DEVNULL,
            )  # fmt: skip
            sampler = CpuSampler(interval_s=1 / hertz)
            started = time.monotonic()
            sampler.start(proc.pid)
            proc.wait()
            trace = sampler.stop()
            elapsed = time.monotonic() - started
        summary = trace.stats(skip_s=0.5)
        worker = summary.fio_worker_max_pct if summary else None
        runnable = summary.fio_worker_max_runnable_pct if summary else None
        steal = (
            sum(c.steal_pct for c in summary.per_cpu) / len(summary.per_cpu)
            if summary and summary.per_cpu else None
        )  # fmt: skip
        print(
            f"{hertz:>4}Hz {len(trace.samples):>8} {round(elapsed * hertz):>6}"
            f" {shown(trace.sampler_cpu_pct):>20} {shown(worker):>13} {shown(runnable):>11}"
            f" {shown(steal):>8}"
        )


def shown(value: float | None) -> str:
    return "-" if value is None else f"{value:.1f}"


if __name__ == "__main__":
    main()
