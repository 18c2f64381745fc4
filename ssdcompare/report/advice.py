"""What the report advises when devices could not be compared as drives at all (every job
CPU-bound, host-bound or disturbed on one side or the other, as on a busy host): what limited
the results, counted by verdict and a disturbance by its cause, and what would help.

The causes are read from the figures the verdicts were judged on (ssdcompare.judge.verdict's
thresholds), the advice from the sweeps' own settings: a --repeat, a --ceiling, a runtime, a
RAM disk among the devices.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pandas as pd

from ssdcompare.analysis.answer import Headline
from ssdcompare.analysis.frame import verify_sets_the_time
from ssdcompare.analysis.runrows import START_UP_S
from ssdcompare.judge.verdict import OTHERS_PCT, SHORT_RUN, SPREAD_CV_PCT, STEAL_PCT, VERDICTS
from ssdcompare.report.table import records
from ssdcompare.results.store import ResultsDir

LONG_ENOUGH_S = 30  # seconds a job runs for a passing disturbance to weigh little
RAM_DISKS = ("zram", "ramdisk")  # transports of devices whose medium is memory

_VERDICT_WORDS = {
    "host": "host-bound", "cpu": "CPU-bound", "disturbed": "disturbed",
    "throttled": "throttled (the drive slowed itself to cool down)",
    "unknown": "not judged (no CPU samples)", "drive": "measured the drive",
}  # fmt: skip


@dataclass
class Advice:
    """What limited the `results` (`limits`, in words) and what would help (`helps`)."""

    results: int
    limits: str
    helps: list[str] = field(default_factory=list)


def advice(
    lines: list[Headline], summary: pd.DataFrame, frame: pd.DataFrame, sweeps: list[ResultsDir]
) -> Advice | None:
    """Advice when a device could be compared on none of its jobs; None otherwise."""
    if not any(line.jobs == 0 for line in lines):
        return None
    ok = summary[summary["status"] == "ok"]
    verdicts = Counter(v for v in ok["verdict"] if isinstance(v, str))
    causes = _disturbances(ok, frame)
    said = []
    for verdict in [v for v in VERDICTS if verdicts[v]]:
        words = f"{verdicts[verdict]} {_VERDICT_WORDS[verdict]}"
        if verdict == "disturbed" and causes:
            words += " (" + ", ".join(f"{n} by {cause}" for cause, n in causes.most_common()) + ")"
        said.append(words)
    failed = int((summary["status"] != "ok").sum())
    if failed:
        said.append(f"{failed} did not complete")
    found = Advice(len(summary), ", ".join(said))
    answered = _answered_by_host(ok, frame)
    if answered:
        verdicts["host"] -= answered  # not the CPU's or the host's speed: its memory
        found.helps.append(
            f"The page cache or the filesystem, not the device, answered {answered} result(s) "
            "(the block layer counted less than fio): use direct I/O (direct: true, the "
            "default) and an engine other than mmap, and read files only after writing them."
        )  # fmt: skip
    found.helps += _host_helps(verdicts, sweeps)
    if pinned_runs(frame[frame["verdict"] == "cpu"]):
        found.helps.append(
            "Some CPU-bound results ran on the CPUs their job chose (cpus_allowed, "
            "numa_cpu_nodes), all of them busy: give those jobs more CPUs, or fewer jobs."
        )
    if verdicts["throttled"]:
        found.helps.append("Cool the drives: air over them, a heatsink, or pauses between "
                           "jobs; compare drives only while none throttles.")  # fmt: skip
    found.helps += _disturbance_helps(causes, frame, sweeps)
    found.helps += _unjudged_helps(verdicts["unknown"], frame, sweeps)
    return found


def _unjudged_helps(unknown: int, frame: pd.DataFrame, sweeps: list[ResultsDir]) -> list[str]:
    """What helps when results could not be judged because their runs were too short to be
    sampled past fio's start-up (a scaled PTS test's rounds)."""
    shortest = frame["runtime_s"].min()
    if not unknown or pd.isna(shortest) or shortest > START_UP_S:
        return []
    longer = ("a larger --scale" if any(s.manifest.suite.scale is not None for s in sweeps)
              else "a longer --runtime")  # fmt: skip
    return [
        f"{unknown} result(s) were not judged: runs of {shortest:g} s end before the CPU "
        f"is sampled past fio's start-up ({START_UP_S:g} s): run longer jobs ({longer})."
    ]


def _answered_by_host(ok: pd.DataFrame, frame: pd.DataFrame) -> int:
    """The host-bound results some run of which the page cache or the filesystem answered
    (ssdcompare.judge.iocount's `cached` and `unwritten`)."""
    if "io_check" not in frame.columns:
        return 0
    runs = frame[frame["io_check"].isin(["cached", "unwritten"])]
    answered = set(zip(runs["sweep"], runs["label"], runs["job"], strict=True))
    host = ok[ok["verdict"] == "host"]
    return sum(key in answered for key in zip(host["sweep"], host["label"], host["job"],
                                              strict=True))  # fmt: skip


def _disturbances(ok: pd.DataFrame, frame: pd.DataFrame) -> Counter[str]:
    """The disturbed results by what disturbed them (a result may count under several)."""
    found: Counter[str] = Counter()
    keys = ["sweep", "label", "job"]
    causes_of = _run_causes(frame, keys)
    disturbed = ok[ok["verdict"] == "disturbed"]
    for result in records(disturbed, [*keys, "repeats", "iops_cv_pct"]):
        causes = set(causes_of.get(tuple(result[k] for k in keys), ()))
        cv = result.get("iops_cv_pct")
        if result.get("repeats", 0) >= 2 and cv is not None and pd.notna(cv):
            if round(cv) >= SPREAD_CV_PCT:
                causes.add("repeats that differ")
        found.update(causes or {"something else (see the notes)"})
    return found


def _run_causes(frame: pd.DataFrame, keys: list[str]) -> dict[tuple[object, ...], set[str]]:
    """What disturbed some finished run of each result (by `keys`), read from its runs'
    figures: each cause a column over every run at once, then gathered per result."""
    runs = frame[frame["status"] == "ok"]
    checking = [verify_sets_the_time(v, rw) for v, rw in zip(runs["verify"], runs["rw"],
                                                             strict=True)]  # fmt: skip
    timed = runs["io_size_bytes"].isna() & ~pd.Series(checking, index=runs.index, dtype=bool)
    flags = {
        "CPU steal": runs["steal_pct"].round() >= STEAL_PCT,
        "other processes": runs["others_pct"].round() >= OTHERS_PCT,
        "a run cut short": timed & (runs["measured_s"] < SHORT_RUN * runs["runtime_s"]),
    }
    if "io_check" in runs.columns:  # the block layer's count (ssdcompare.judge.iocount)
        flags["another process using the device"] = runs["io_check"] == "shared"
        flags["an output not the device's"] = runs["io_check"] == "elsewhere"
    found: dict[tuple[object, ...], set[str]] = {}
    results = list(zip(*(runs[k].tolist() for k in keys), strict=True))
    for key in results:
        found.setdefault(key, set())
    for cause, seen in flags.items():
        for key, flagged in zip(results, seen.fillna(False).astype(bool).tolist(), strict=True):
            if flagged:
                found[key].add(cause)
    return found


def pinned_runs(frame: pd.DataFrame) -> bool:
    """Whether any run of `frame` ran fio on CPUs its workload chose (cpus_allowed or
    numa_cpu_nodes): the CPU-bound rule then judged those CPUs, not all of the host's."""
    columns = [c for c in ("cpus_allowed", "numa_cpu_nodes") if c in frame.columns]
    return bool(len(frame) and frame[columns].notna().any(axis=None))


def _host_helps(verdicts: Counter[str], sweeps: list[ResultsDir]) -> list[str]:
    """What helps when the CPU or the host set the figures."""
    if not (verdicts["cpu"] or verdicts["host"]):
        return []
    ram = sorted({d.name for s in sweeps for d in s.manifest.devices if d.transport in RAM_DISKS})
    memory = (f" ({', '.join(ram)} {'is a RAM disk' if len(ram) == 1 else 'are RAM disks'}, "
              "faster than any CPU can drive)") if ram else ""  # fmt: skip
    helps = [
        f"The CPU or the host, not the drives, set {verdicts['cpu'] + verdicts['host']} "
        f"results: compare real drives rather than RAM disks{memory}, make each I/O cost "
        "the CPU less (larger blocks, fewer jobs, a lower queue depth), or use a host with "
        "more or faster cores."
    ]
    if not any(s.manifest.ceiling for s in sweeps):
        helps.append(
            "Sweep with --ceiling (as root): each reading job runs on a RAM disk first, so a "
            "result at this host's own limit is named as such rather than taken for a drive's."
        )
    return helps


def _disturbance_helps(
    causes: Counter[str], frame: pd.DataFrame, sweeps: list[ResultsDir]
) -> list[str]:
    """What helps against what disturbed the results, and for a comparison in general."""
    helps = []
    if any(cause.startswith(("CPU steal", "other processes")) for cause in causes):
        others = frame[["others_pct", "others_top"]].dropna()
        top = others.sort_values("others_pct")["others_top"].iloc[-1] if len(others) else None
        named = f" (the busiest seen: {top})" if "other processes" in causes and top else ""
        helps.append("Run when the host is quiet: no other guests on its hypervisor, no other "
                     f"busy processes{named}.")  # fmt: skip
    helps += _longer_helps(causes, frame, sweeps)
    if "a run cut short" in causes:
        helps.append("Some runs ended before their runtime: each run's status.json and "
                     "fio.stderr.txt in the results folder say why.")  # fmt: skip
    if "another process using the device" in causes:
        helps.append("Another process read or wrote a device while its jobs ran (the block "
                     "layer counted more than fio): find it (iotop, fuser -v on the device) "
                     "and measure when it is idle.")  # fmt: skip
    return helps + _repeat_helps(causes, sweeps)


def _longer_helps(
    causes: Counter[str], frame: pd.DataFrame, sweeps: list[ResultsDir]
) -> list[str]:
    """Longer jobs, when something disturbed short ones: for a scaled PTS test, a larger
    scale (its rounds are as long as the scale makes them)."""
    longest = frame["runtime_s"].max()
    if not causes or (pd.notna(longest) and longest >= LONG_ENOUGH_S):
        return []
    here = f", {longest:g} s here" if pd.notna(longest) else ""
    scales = [s.manifest.suite.scale for s in sweeps]
    if sweeps and all(scale is not None for scale in scales):
        smallest = min(scale for scale in scales if scale is not None)
        return [f"Run the PTS test unscaled, or at a larger --scale ({smallest:g}{here}): a "
                "passing disturbance weighs less in a longer round."]  # fmt: skip
    return [f"Run longer jobs (--runtime {LONG_ENOUGH_S} or more{here}): a passing "
            "disturbance weighs less in a longer run."]  # fmt: skip


def _repeat_helps(causes: Counter[str], sweeps: list[ResultsDir]) -> list[str]:
    """More repeats: never for a PTS test, whose repeats are its rounds (--repeat refused)."""
    counted = [s.manifest.repeat for s in sweeps if s.manifest.suite.pts is None]
    if not counted:
        return []
    repeats = min(counted)
    if repeats < 3:
        return [f"Sweep with --repeat 3 or more ({repeats} here): repeats measure the "
                "run-to-run spread and let each difference be tested."]  # fmt: skip
    if "repeats that differ" in causes:
        return [f"Repeats differ by {SPREAD_CV_PCT:.0f} % or more: more repeats "
                f"(--repeat {repeats * 2}) and longer jobs narrow the spread."]  # fmt: skip
    return []
