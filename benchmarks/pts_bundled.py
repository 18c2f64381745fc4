"""Every bundled SNIA PTS suite run scaled end to end, and its report section as a reader sees it.

    sudo .venv/bin/python benchmarks/pts_bundled.py [--suites pts-iops,pts-dirth]

Each bundled pts-* suite is swept at once with `ssdcompare sweep --scale`, each on a loop
device of its own over a file in memory, its reads and writes capped at some IOPS (what the
rounds then measure is the cap, so they can be steady), and the report of each read in
headless Chromium. Printed per suite: the jobs of a round, each group's rounds and whether
they became steady, the seconds a round took against the seconds its jobs ran (the rest is
fio's pause between a round's jobs and its start-up), and what the report's section shows
(devices, tables, charts). The bundled suites as written take hours; even scaled, the IOPS
test's 56 jobs a round make it minutes, which is why the test suite sweeps smaller suites of
the same kinds instead. Needs root (loop devices, the blkio cgroup).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from ptssweeps import Planned, pts_sweeps, read_sections  # noqa: E402

from ssdcompare.report.build import write_report  # noqa: E402
from ssdcompare.suite.files import load_suite  # noqa: E402

# suite -> (scale, IOPS cap): the smallest scale (a minute's job runs 0.1 s) where the cap
# keeps a round's figure steady; DIRTH's 32 threads x QD32 need a longer job to complete
# I/Os under its cap, and a larger cap
PLANNED = {
    "pts-iops": (0.0001, 1000),
    "pts-throughput": (0.005, 1000),
    "pts-latency": (0.002, 1000),
    "pts-dirth": (0.005, 4000),
    "pts-wsat": (0.05, 1000),
    "pts-hir": (0.0001, 1000),
    "pts-xsr": (0.0001, 1000),
}


def round_seconds(folder: Path) -> dict[str, tuple[int, float | None, float]]:
    """Each group's rounds: how many, the median seconds between the ends of two rounds one
    after the other (None with a single round), and the seconds the jobs of its first round
    ran by fio's account (each job's runtime, summed over its processes, over their count)."""
    found = {}
    for group in sorted(p for p in folder.glob("rounds/*/*") if p.is_dir()):
        ends = sorted(p.stat().st_mtime for p in group.glob("r*/fio.json"))
        gaps = [b - a for a, b in zip(ends, ends[1:], strict=False)]
        entries = json.loads((group / "r0001" / "fio.json").read_text())["jobs"]
        ran = sum(e["job_runtime"] / 1000 / int(e["job options"].get("numjobs", 1))
                  for e in entries)  # fmt: skip
        found[group.name] = (len(ends), statistics.median(gaps) if gaps else None, ran)
    return found


def describe(name: str, folder: Path, report: Path, scratch: Path) -> None:
    records = {p.parent.name: json.loads(p.read_text())
               for p in folder.glob("rounds/*/*/rounds.json")}  # fmt: skip
    suite = load_suite(name)
    print(f"{name}: {len(suite.workloads)} jobs")
    for group, (count, seconds, ran) in round_seconds(folder).items():
        rec = records[group]
        state = ("steady after" if rec.get("attained") else "not steady in") if rec.get("track") \
            else "ran in"  # fmt: skip
        per_round = f", {seconds:.1f} s a round" if seconds else ""
        print(f"  {group}: {state} {count} round(s){per_round}; its jobs ran {ran:.1f} s a round")
    seen = read_sections(report, scratch)
    (section,) = seen["sections"].values()
    charts = sum(len(d["charts"]) for d in section["devices"]) + len(section["charts"])
    print(f"  report: '{section['title']}', {len(section['devices'])} device(s), "
          f"{len(section['tables'])} table(s), {charts} chart(s), scaled banner: "
          f"{'yes' if seen['bannerShown'] else 'NO'}")  # fmt: skip
    assert seen["bannerShown"] and section["devices"] and (section["tables"] or charts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--suites", default=",".join(PLANNED))
    args = parser.parse_args()
    names = args.suites.split(",")
    planned = [Planned(name, name, *PLANNED[name]) for name in names]
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        started = time.monotonic()
        with pts_sweeps(scratch, planned) as folders:
            took = time.monotonic() - started
            print(f"{len(planned)} sweeps side by side: {took:.0f} s")
            for plan in planned:
                print(f"  {plan.name}: --scale {plan.scale:g}, capped at {plan.cap} IOPS")
            for plan in planned:
                report = write_report([folders[plan.name]], scratch / f"{plan.name}.html")
                describe(plan.name, folders[plan.name], report, scratch / "browser")


if __name__ == "__main__":
    main()
