"""A slow drive hiding inside a device group: per group and job, a member whose IOPS are
more than 10 % below the median of its group's members is an outlier.

A group's figures add its members up, so one slow member lowers the group's IOPS without
showing in them; its own rows show it. The rule reads `job_summary`'s member rows (the
figure tables show: mean, median or best of the repeats) and needs two or more members
with a figure.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass

import pandas as pd

OUTLIER_BELOW_PCT = 10.0  # below the members' median by more than this: an outlier


@dataclass(frozen=True)
class Outlier:
    """A group member's result far below its fellow members' in one job."""

    group: str  # the group's name ("loop0+loop1")
    member: str  # the member's label ("loop1 in loop0+loop1")
    job: str
    iops: float
    median_iops: float

    @property
    def below_pct(self) -> float:
        """How far below the members' median, in percent of it."""
        return (1 - self.iops / self.median_iops) * 100

    def words(self) -> str:
        """In words: "randread-4k-qd1: 1,200 IOPS, 45 % below the members' median of 2,180"."""
        return (f"{self.job}: {self.iops:,.0f} IOPS, {self.below_pct:.0f} % below the "
                f"members' median of {self.median_iops:,.0f}")  # fmt: skip


def group_outliers(summary: pd.DataFrame, below_pct: float = OUTLIER_BELOW_PCT) -> list[Outlier]:
    """Every member of a group more than `below_pct` % below the median IOPS of its group's
    members in a job (`summary`: from `job_summary`), in the summary's order."""
    if summary.empty or "member" not in summary.columns:
        return []
    members = summary[summary["member"].notna() & (summary["status"] == "ok")]
    found = []
    for (_, group, job), rows in members.groupby(["sweep", "group", "job"], sort=False,
                                                 dropna=False):  # fmt: skip
        known = rows[rows["iops_value"].notna()]
        if len(known) < 2:
            continue
        median = statistics.median(known["iops_value"].astype(float))
        if not median > 0:
            continue
        for label, iops in zip(known["label"], known["iops_value"], strict=True):
            if iops < median * (1 - below_pct / 100):
                found.append(Outlier(str(group), str(label), str(job), float(iops), median))
    return found


def outlier_lines(outliers: list[Outlier]) -> list[str]:
    """The outliers in words, one line per member: its jobs far below its fellows'."""
    by_member: dict[str, list[Outlier]] = {}
    for outlier in outliers:
        by_member.setdefault(outlier.member, []).append(outlier)
    return [f"{member}: more than {OUTLIER_BELOW_PCT:.0f} % below the median of its group's "
            f"members in {len(found)} job(s): " + "; ".join(o.words() for o in found)
            for member, found in by_member.items()]  # fmt: skip
