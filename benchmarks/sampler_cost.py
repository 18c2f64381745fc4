"""The CPU sampler's own cost at several rates while a real fio job runs.

    .venv/bin/python benchmarks/sampler_cost.py [--seconds 3]

Prints, per rate: samples taken, the sampler thread's CPU use (% of one core) and the fio
worker's measured CPU, so a change to the sampler can be checked for what it costs.
"""

from __future__ import annotations

import argparse
import subprocess
import tempfile

from ssdcompare.cpu import CpuSampler
from ssdcompare.fio import find_fio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=3)
    args = parser.parse_args()
    fio = find_fio()
    print(f"{'rate':>6} {'samples':>8} {'sampler % of a core':>20} {'fio worker %':>13}")
    for hertz in (10, 20, 50):
        with tempfile.TemporaryDirectory() as scratch:
            proc = subprocess.Popen(
                [fio.path, "--name=load", "--ioengine=null", "--rw=randread", "--bs=4k",
                 "--size=1g", f"--runtime={args.seconds}", "--time_based",
                 f"--filename={scratch}/x", "--output-format=terse"],
                stdout=subprocess.DEVNULL,
            )  # fmt: skip
            sampler = CpuSampler(interval_s=1 / hertz)
            sampler.start(proc.pid)
            proc.wait()
            trace = sampler.stop()
        summary = trace.summary(skip_s=0.5)
        worker = summary.fio_worker_max_pct if summary else None
        print(f"{hertz:>4}Hz {len(trace.samples):>8} {trace.sampler_cpu_pct:>20.2f} "
              f"{worker if worker is not None else '-':>13}")  # fmt: skip


if __name__ == "__main__":
    main()
