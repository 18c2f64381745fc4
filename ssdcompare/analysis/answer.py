"""The answer in one line: each device against the baseline over the jobs that measured drives.

`headline(summary, baseline)` (`ssdcompare.headline`) gives one `Headline` per device but the
baseline, from job_summary's rows:

- the jobs that count are those both devices ran successfully from the same jobfile, with
  the verdict `drive` on both sides (ssdcompare.judge.verdict): a CPU-bound, host-bound,
  throttled or disturbed result says nothing about the drives as they work;
- `iops_ratio` is the geometric mean of the per-job IOPS ratios over those jobs (one job
  twice as fast and one half as fast average to 1.0, as they should), `p99_ratio` the same
  for p99 latency (below 1: lower latency). A job's ratio is that of the figures the table
  shows (the repeats' means, medians or best runs: job_summary's `aggregate`), so the
  answer and the table agree; the significance is tested on all repeats whatever the
  aggregate;
- wins, losses and ties count the jobs whose difference Welch's test found significant one
  way or the other, or not (ssdcompare.judge.stats, 3 repeats a side or more); `untested` the
  others, and `untested_why` why (fewer repeats, or a repeat without a figure to test).
  The sentence says "faster" or "slower" only where most tested jobs differ significantly
  that way (more than the others and the ties together), "not significantly different"
  only when every job was tested and none differed, and otherwise gives the ratio with "no
  consistent difference";
- a group's members (`member` set) are left out: the group is the unit compared;
- `left_out` counts the other jobs by why they were left out (a run that finished but did no
  I/O is counted apart from the failures, and a job only one of two results folders holds
  as "ran only on" that device, not as a failure).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from ssdcompare.analysis.compare import label_named, made_against
from ssdcompare.analysis.frame import frame_given, is_false, is_true
from ssdcompare.errors import SsdcompareError
from ssdcompare.judge.stats import why_untested
from ssdcompare.judge.verdict import VERDICTS


@dataclass
class Headline:
    label: str
    baseline: str
    jobs: int = 0  # jobs both devices measured as drives
    total: int = 0  # jobs either device ran
    iops_ratio: float = math.nan
    p99_ratio: float = math.nan
    p99_jobs: int = 0  # jobs whose p99 latency is known on both sides
    wins: int = 0
    losses: int = 0
    ties: int = 0
    untested: int = 0
    untested_why: Counter[str] = field(default_factory=Counter)  # why -> jobs (stats)
    left_out: Counter[str] = field(default_factory=Counter)  # why -> jobs
    aggregate: str = "mean"  # the figures whose ratios are averaged (job_summary's aggregate)

    @property
    def sentence(self) -> str:
        """The one line a colleague can quote."""
        if not self.jobs:
            why = _reasons(self.left_out)
            return (f"{self.label} and {self.baseline} cannot be compared as drives: none "
                    f"of their {self.total} jobs measured the drives on both sides "
                    f"({why}).")  # fmt: skip
        ratio = self.iops_ratio
        of = _OF_RUNS.get(self.aggregate, "")
        tested = self.wins + self.losses + self.ties
        jobs = f"on the {self.jobs} of {self.total} jobs that measured the drives"
        faster, slower = ratio >= 1.005, ratio <= 0.995
        if tested and not (self.wins or self.losses) and not self.untested:
            # a ratio off 1 that no test found real is not "faster" or "slower"
            line = (f"{self.label} is not significantly different from {self.baseline} {jobs} "
                    f"(geometric mean of IOPS ratios{of} {ratio:.2f}")  # fmt: skip
        elif tested and not (
            (faster and self.wins > self.losses + self.ties)
            or (slower and self.losses > self.wins + self.ties)
        ):
            # the average leans one way, the tested jobs do not: give the figure, no verdict
            line = (f"{self.label}'s IOPS are {ratio:.2f}× {self.baseline}'s {jobs}, with no "
                    f"consistent difference (geometric mean of IOPS ratios{of}")  # fmt: skip
        else:
            how = (
                f"{ratio:.2f}× faster than" if faster
                else f"{1 / ratio:.2f}× slower than" if slower
                else "as fast as"
            )  # fmt: skip
            line = (f"{self.label} is {how} {self.baseline} {jobs} (geometric mean of IOPS "
                    f"ratios{of}")  # fmt: skip
        if not math.isnan(self.p99_ratio):
            line += f"; p99 latency ×{self.p99_ratio:.2f}"
            if self.p99_jobs < self.jobs:
                line += f" over {self.p99_jobs} of them"
        line += ")."
        if tested:
            line += (f" Significant: {self.wins} faster, {self.losses} slower, {self.ties} "
                     "not significantly different")  # fmt: skip
            line += f", {self.untested} untested ({self._untested_why()})." if self.untested \
                else "."  # fmt: skip
        elif self.untested:
            line += f" Not tested for significance: {self._untested_why()}."
        if self.left_out:
            line += f" Left out: {_reasons(self.left_out)}."
        return line

    def _untested_why(self) -> str:
        """Why the untested jobs were not tested: the one reason, or each with its count."""
        if len(self.untested_why) == 1:
            return next(iter(self.untested_why))
        return ", ".join(f"{count} with {why}" for why, count in self.untested_why.most_common())


# how the answer names the figures it takes ratios of, when they are not the repeats' means
_OF_RUNS = {"median": " of the median runs", "best": " of the best runs"}

_WHY = {
    "cpu": "measured the CPU", "host": "measured the host",
    "throttled": "{were} measured on a throttling drive",
    "disturbed": "{were} disturbed", "unknown": "had no CPU samples",
    "differs": "ran from different jobfiles", "failed": "failed or did not run",
    "idle": "did no I/O", "unknown figures": "had no IOPS figure",
}  # fmt: skip


def _reasons(left_out: Counter[str]) -> str:
    return ", ".join(
        f"{count} " + _WHY.get(why, why).format(were="was" if count == 1 else "were")
        for why, count in left_out.most_common()
    )


def _geomean(values: list[float]) -> float:
    good = [v for v in values if v > 0 and not math.isnan(v)]
    return math.exp(sum(math.log(v) for v in good) / len(good)) if good else math.nan


def headline(summary: pd.DataFrame, baseline: str | None = None) -> list[Headline]:
    """One Headline per device against `baseline` (default: the device job_summary compared
    the others to, else the first label). The significance counts are job_summary's, so a
    baseline other than the summary's is an error: make the summary with that baseline."""
    summary = frame_given(
        summary,
        "headline",
        "ssdcompare.job_summary",
        ("label", "job", "status", "verdict", "iops_value"),
    )
    if "member" in summary.columns:  # a group's members are part of a unit, not units
        summary = summary[summary["member"].isna()]
    if "curve_pct" in summary.columns:
        # a curve's paced points run at the load they are given: their IOPS say whether the
        # drive took it, not how fast it is (a curve is answered at a latency target instead)
        summary = summary[summary["curve_pct"].isna()]
    labels = list(dict.fromkeys(summary["label"]))
    if not labels:
        return []
    baseline = _summary_baseline(summary, labels, baseline)
    reference = _by_job(summary, baseline)
    aggregate = str(summary["aggregate"].iloc[0]) if "aggregate" in summary.columns else "mean"
    return [
        _headline_of(_by_job(summary, label), reference, label, baseline, aggregate)
        for label in labels
        if label != baseline
    ]


def _summary_baseline(summary: pd.DataFrame, labels: list[str], baseline: str | None) -> str:
    """The label `baseline` names, else the one the summary was made against, else the
    first; an error when the summary was made against another (its significance counts
    are against that one)."""
    compared_to = made_against(summary)
    baseline = label_named(labels, baseline) if baseline is not None else compared_to or labels[0]
    if compared_to is not None and baseline != compared_to:
        raise SsdcompareError(
            f"this summary compares the devices to {compared_to!r}, not {baseline!r}: make it "
            f"with job_summary(frame, baseline={baseline!r})"
        )
    return baseline


def _headline_of(
    mine: dict[object, dict[str, Any]],
    reference: dict[object, dict[str, Any]],
    label: str,
    baseline: str,
    aggregate: str,
) -> Headline:
    """The Headline of one device (its summary rows by job: `mine`) against the baseline's
    (`reference`)."""
    result = Headline(label=label, baseline=baseline, aggregate=aggregate)
    jobs = list(dict.fromkeys([*reference, *mine]))
    result.total = len(jobs)
    iops: list[float] = []
    p99: list[float] = []
    for job in jobs:
        why = _left_out(mine, reference, job, (label, baseline))
        if why is not None:
            result.left_out[why] += 1
            continue
        row, base = mine[job], reference[job]
        result.jobs += 1
        iops.append(_ratio(row, base, "iops_value"))
        if base["lat_p99_us_value"] > 0 and row["lat_p99_us_value"] > 0:
            result.p99_jobs += 1
            p99.append(_ratio(row, base, "lat_p99_us_value"))
        _count_significance(result, row, base)
    result.iops_ratio, result.p99_ratio = _geomean(iops), _geomean(p99)
    return result


def _count_significance(result: Headline, row: dict[str, Any], base: dict[str, Any]) -> None:
    """Count a job that counts as a win, a loss, a tie or untested (and why), as Welch's
    test in the summary found."""
    significant = row.get("significant")
    if is_true(significant):
        if row["ratio"] >= 1:
            result.wins += 1
        else:
            result.losses += 1
    elif is_false(significant):
        result.ties += 1
    else:
        result.untested += 1
        rounds = bool(pd.notna(row.get("pts_group")))
        result.untested_why[why_untested(row.get("repeats"), base.get("repeats"), rounds)] += 1


def _by_job(summary: pd.DataFrame, label: str) -> dict[object, dict[str, Any]]:
    """One device's summary rows by job (the first row of a job, as the table shows it)."""
    found: dict[object, dict[str, Any]] = {}
    mine = summary.loc[summary["label"] == label, [c for c in _READ if c in summary.columns]]
    for record in mine.to_dict("records"):  # of the columns read: records of all are slow
        found.setdefault(record["job"], record)
    return found


_READ = ["job", "sweep", "status", "comparable", "verdict", "iops_value", "lat_p99_us_value",
         "significant", "ratio", "repeats", "pts_group"]  # fmt: skip


def _ratio(row: dict[str, Any], base: dict[str, Any], value: str) -> float:
    """The job's ratio: that of the figures the table shows (the means, medians or best runs,
    as job_summary's aggregate says), so that the answer and the table agree."""
    return float(row[value]) / float(base[value])


def _left_out(
    mine: dict[object, dict[str, Any]],
    reference: dict[object, dict[str, Any]],
    job: object,
    labels: tuple[str, str],
) -> str | None:
    """Why a job does not count for the headline (None: it counts). The same whichever of
    the two devices (`labels`: this one's, the baseline's) is the baseline."""
    if job not in mine or job not in reference:
        ran, other = (mine, reference) if job in mine else (reference, mine)
        if {r["sweep"] for r in ran.values()} == {r["sweep"] for r in other.values()}:
            return "failed"  # one sweep planned it for both: it did not run on one
        return f"ran only on {labels[0] if job in mine else labels[1]}"
    row, base = mine[job], reference[job]
    if row["status"] != "ok" or base["status"] != "ok":
        return "failed"
    if is_false(row.get("comparable")):
        return "differs"
    pair = (row.get("verdict"), base.get("verdict"))
    verdicts = [v if isinstance(v, str) else "unknown" for v in pair]
    first = min(verdicts, key=lambda v: VERDICTS.index(v) if v in VERDICTS else -1)
    if first != "drive":
        return first
    if pd.isna(row["iops_value"]) or pd.isna(base["iops_value"]):
        return "unknown figures"  # fio gave none (nan): unknown, not an idle device
    if not (row["iops_value"] > 0 and base["iops_value"] > 0):
        # finished, but no I/O counted (fio printed its directions with zeros):
        # left out apart, so a device that did nothing is not hidden among failures
        return "idle"
    return None
