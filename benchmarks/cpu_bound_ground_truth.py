"""The CPU-bound rule against ground truth, repeated, as a confusion matrix.

    sudo .venv/bin/python benchmarks/cpu_bound_ground_truth.py [--repeat 3]

Ground truth: fio's null engine is always CPU-bound, a job rate-limited to 200 IOPS never is,
4K QD128 random reads on a zram RAM disk are, and 4K QD1 writes with an fsync after each on a
loop device are not. Needs root (it makes and removes the RAM disk and the loop device).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

import pandas as pd  # noqa: E402
from blockdevs import loop_device, zram_device  # noqa: E402

from ssdcompare.analysis.frame import load  # noqa: E402
from ssdcompare.run import sweep  # noqa: E402
from ssdcompare.run.plan import PlanOptions, make_plan  # noqa: E402

SUITE = ROOT / "tests" / "suites" / "ground-truth.yaml"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        with zram_device(256 << 20) as zram, loop_device(scratch / "l.img", 256 << 20) as loop:
            cases = {
                ("scratch.img", "null-engine"): True,
                ("scratch.img", "rate-limited"): False,
                (Path(zram).name, "randread-4k-qd128"): True,
                (Path(loop).name, "randwrite-4k-qd1-fsync"): False,
            }
            plan = make_plan(str(SUITE), f"{scratch / 'scratch.img'},{zram},{loop}",
                             PlanOptions(size_bytes=64 << 20, repeat=args.repeat))  # fmt: skip
            plan.jobs = [j for j in plan.jobs if (j.target.name, j.job_id) in cases]
            results, _ = sweep.start(plan, scratch / "results", command_line=["benchmark"])
            sweep.run(plan, results)
            frame = load(results.path)
    runs = frame.drop_duplicates(["device", "job", "repeat"])
    matrix = {(t, p): 0 for t in (True, False) for p in (True, False, None)}
    print(f"{'device':<12} {'job':<24} {'truth':<6} verdicts (reason)")
    for (device, job), truth in cases.items():
        rows = runs[(runs["device"] == device) & (runs["job"] == job)]
        verdicts = []
        for _, row in rows.iterrows():
            verdict = None if pd.isna(row["cpu_bound"]) else bool(row["cpu_bound"])
            matrix[(truth, verdict)] += 1
            reason = row["cpu_bound_reason"] if isinstance(row["cpu_bound_reason"], str) else "-"
            verdicts.append(f"{verdict} ({reason})")
        print(f"{device:<12} {job:<24} {truth!s:<6} {'; '.join(verdicts)}")
    print()
    print("confusion matrix (rows: truth, columns: verdict)")
    print(f"{'':>14} {'bound':>6} {'not':>6} {'unknown':>8}")
    for truth in (True, False):
        name = "CPU-bound" if truth else "not bound"
        print(f"{name:>14} {matrix[(truth, True)]:>6} {matrix[(truth, False)]:>6} "
              f"{matrix[(truth, None)]:>8}")  # fmt: skip


if __name__ == "__main__":
    main()
