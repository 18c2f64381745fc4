"""Repeats aggregated: one row per job on each device (`job_summary`,
`ssdcompare.job_summary`), with the spread of its repeats, the figure tables show, what
limited it, its comparison with the baseline device and the knee of its queue-depth series.

A run's directions are combined first (IOPS and bandwidth add up, latency is weighted by
I/O count), then its repeats: failed ones are counted, never averaged in as zeros.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

import pandas as pd

from ssdcompare.analysis.columns import INT_COLUMNS
from ssdcompare.analysis.compare import (
    baseline_label,
    comparability,
    compare_repeats,
)
from ssdcompare.analysis.frame import (
    frame_given,
    is_true,
    known_true,
    label_devices,
    whole_numbers,
)
from ssdcompare.analysis.latencytarget import SEARCH_COLUMNS, search_words
from ssdcompare.analysis.likeness import Difference, like_for_like
from ssdcompare.analysis.outliers import Outlier, group_outliers
from ssdcompare.analysis.slo import Slo, parse_slos, slo_summary
from ssdcompare.errors import SsdcompareError
from ssdcompare.judge.stats import AGGREGATES, aggregate_values, find_knee
from ssdcompare.judge.verdict import Verdict, judge_repeats

# a job on one device: the summary's row; and one run of it
_JOB_KEYS = ["sweep", "host", "device", "label", "job"]
_PER_RUN_KEYS = [*_JOB_KEYS, "repeat"]
_WORKLOAD_KEYS = ["rw", "bs_bytes", "iodepth", "numjobs", "rwmixread", "fsync", "fdatasync",
                  "workload_hash"]  # fmt: skip
# What else describes how a result was made; kept in the summary so that a differing workload
# hash can be explained ("runtime 10 s vs 3 s") without the manifests at hand.
_RUN_FACTS = ["runtime_s", "ramp_s", "span", "ioengine", "extra_options", "workload_options",
              "fio_version",
              "lat_source", "drive_state", "state", "thinktime_us", "io_size_bytes",
              "group", "member", "curve", "curve_pct", "rate_asked_iops",
              "rate_reached", "rate_reached_pct", "pts_group"]  # fmt: skip


def in_windows(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame without a PTS test's rounds before its group's measurement window: a PTS
    figure is its window's."""
    if "ss_window" not in frame.columns:
        return frame
    return frame[frame["ss_window"].astype("boolean").fillna(True).astype(bool)]


def _per_run(frame: pd.DataFrame) -> pd.DataFrame:
    """Read, write and trim of one run combined: IOPS and bandwidth add up, the mean latency
    is weighted by each direction's I/O count, the p99 is the worst direction's. A figure
    unknown in one direction is unknown for the run (a sum without it would pass for the
    whole); a direction that did no I/O adds 0 and has no latency to weigh."""
    data = _directions(frame)
    keys = [k for k in _PER_RUN_KEYS if k in data.columns]
    # frames written by an older version (e.g. read back from CSV) lack the newer columns
    facts = [k for k in _WORKLOAD_KEYS + _RUN_FACTS if k in data.columns]
    firsts = ["status", "error", *facts, "cpu_bound_reason",
              *[k for k in (*_CLIFF_COLUMNS, "burst_iops", *_SEARCH_INPUTS)
                if k in data.columns]]  # fmt: skip
    # the group's number of each row: every aggregate below is a vectorised one over it
    codes = data.groupby(keys, sort=False, dropna=False).ngroup()
    by = data.groupby(codes.to_numpy(), sort=True)
    runs = data.loc[~codes.duplicated().to_numpy(), keys].reset_index(drop=True)
    for column, values in by[firsts].first().items():
        runs[column] = values.to_numpy()
    summed = ["iops", "bw_bytes", "total_ios", "lat_weighted"]
    gaps = data[summed].isna().groupby(codes.to_numpy(), sort=True).any()
    sums = by[summed].sum(min_count=1).where(~gaps)
    for column, values in sums.items():
        runs[column] = values.to_numpy()
    worst = ["lat_p99_us", "lat_p999_us", "lat_max_us"]
    unknown = by[[f"{c}_unknown" for c in worst]].any().to_numpy()
    for index, (column, values) in enumerate(by[worst].max().items()):
        runs[column] = values.where(~unknown[:, index]).to_numpy()
    # CPU-bound when a direction was; NA when no direction could tell
    bound = known_true(data["cpu_bound"]).groupby(codes.to_numpy()).any()
    told = data["cpu_bound"].notna().groupby(codes.to_numpy()).any()
    runs["cpu_bound"] = pd.Series(bound.to_numpy(), dtype="object").where(told.to_numpy(), pd.NA)
    if "verdict" in data.columns:  # the first verdict in VERDICTS order among its directions
        pairs: dict[int, list[Verdict]] = {}
        for code, verdict, reason in zip(codes.to_numpy(), data["verdict"],
                                         data["verdict_reason"], strict=True):  # fmt: skip
            if isinstance(verdict, str):
                pairs.setdefault(int(code), []).append(Verdict(verdict, reason))
        runs["verdict_pair"] = [judge_repeats(pairs[c], None, 1) if c in pairs else None
                                for c in range(len(runs))]  # fmt: skip
    # no I/O at all: no latency (0 / 0 is unknown, not a number)
    runs["lat_mean_us"] = runs["lat_weighted"] / runs["total_ios"].where(runs["total_ios"] != 0)
    for column in _WORKLOAD_KEYS + _RUN_FACTS:
        if column not in runs.columns:
            runs[column] = pd.NA
    return runs.drop(columns=["lat_weighted"])


def _directions(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows _per_run combines (the `sync` ones left out), with each direction's share of
    the weighted mean latency and which worst-direction figures are unknown."""
    data = frame[frame["direction"] != "sync"].copy()
    for column in _SUMMED:  # a frame of an older version may lack a newer figure: unknown
        if column not in data.columns:
            data[column] = math.nan
    idle = data["total_ios"] == 0
    data["lat_weighted"] = (data["lat_mean_us"] * data["total_ios"]).where(~idle, 0.0)
    for column in ("lat_p99_us", "lat_p999_us", "lat_max_us"):
        # an idle direction has no latency; a busy one without it leaves the run's unknown
        data[f"{column}_unknown"] = data[column].isna() & ~idle
    return data


def job_summary(
    frame: pd.DataFrame,
    baseline: str | None = None,
    aggregate: str = "mean",
    slo: str | Slo | list[str | Slo] | None = None,
) -> pd.DataFrame:
    """One row per (device, job): repeats aggregated to mean, stddev, min, max and coefficient
    of variation (cv_pct = stddev / mean x 100; 10 % or more means the runs disagree).

    Failed or interrupted repeats are left out of the figures and counted in `failed_runs`;
    a job with no successful repeat keeps its status and NaN figures, never zeros. A PTS
    test's figures are its measurement window's (`ss_window`).

    `comparable` says whether the row ran the same workload (equal `workload_hash`) as the
    baseline label (`baseline`, else the first label) for that job: False when the jobfiles
    differ, with the reason in `comparable_note`; NA when either side has no hash (raw fio
    files) or the baseline did not run the job.

    `<metric>_value` is the figure tables show: the mean, median or best of the repeats, as
    `aggregate` says (named in the `aggregate` column). Against the baseline, with 3 or more
    repeats on both sides (ssdcompare.judge.stats): `ratio` of IOPS with `ratio_ci_low` /
    `ratio_ci_high` (95 %), `p_value` (Welch's t-test on the logarithms) and `significant`;
    the same for p99 latency as `p99_ratio`, `p99_ratio_ci_low`, `p99_ratio_ci_high`,
    `p99_p_value`, `p99_significant`. NA with fewer repeats or jobfiles that differ.

    `latency_search`: what fio's search for a latency target found (search_words). `slo`
    ("p99=1ms", or several): each curve's answer at it on its `@max` row (see _with_slo).
    """
    frame = frame_given(frame, "job_summary", "ssdcompare.load (or read_fio)")
    if aggregate not in AGGREGATES:
        raise SsdcompareError(f"--aggregate {aggregate}: use one of {', '.join(AGGREGATES)}")
    frame = label_devices(frame) if "label" not in frame.columns else frame
    runs = _per_run(in_windows(frame))
    figures = _Runs.of(runs)
    summary = pd.DataFrame([_job_row(figures, group, aggregate) for group in _jobs(runs)])
    if not summary.empty:
        summary["cpu_bound"] = summary["cpu_bound"].astype("boolean")
        for column in [c for c in INT_COLUMNS if c in summary.columns]:
            summary[column] = whole_numbers(summary[column])
        chosen = baseline_label(list(dict.fromkeys(summary["label"])), baseline)
        summary["comparable"], summary["comparable_note"] = comparability(summary, chosen)
        compare_repeats(summary, chosen)
        summary["compared_to"] = chosen
        summary["knee_qd"] = _knees(summary)
        summary["like_for_like"] = _unlike(summary, like_for_like(frame).differences)
        summary["group_outlier"] = _outlying(summary, group_outliers(summary))
    targets = parse_slos(slo)
    if targets and not summary.empty:
        summary = _with_slo(summary, slo_summary(frame, targets, summary["compared_to"].iloc[0]))
    return summary


def _with_slo(summary: pd.DataFrame, answers: pd.DataFrame) -> pd.DataFrame:
    """The answers at the latency targets (ssdcompare.analysis.slo) on the rows of the
    curves' unpaced runs (`<job>@max`), such a row once per target: `slo`, `slo_iops`,
    `slo_status`, the bracketing points `slo_below` / `slo_above` (and their shares), and
    against the baseline `slo_ratio` with `slo_ratio_ci_low`, `slo_ratio_ci_high`,
    `slo_p_value` and `slo_significant` from 3 repeats a side. Other rows have none."""
    keys = ["sweep", "host", "device", "label", "curve", "state"]
    answers = answers.drop(columns=["slo_iops_repeats"])
    is_max = summary["curve"].notna() & summary["curve_pct"].isna()
    # keys as plain objects on both sides: a missing state is None, not NaN of a float column
    answers, mine = answers.copy(), summary[is_max].copy()
    for table in (answers, mine):
        for key in keys:
            table[key] = [v if isinstance(v, str) else None for v in table[key]]
    merged = mine.merge(answers, on=keys, how="left")
    rest = summary[~is_max]
    position = {job: n for n, job in enumerate(dict.fromkeys(summary["job"]))}
    together = pd.concat([rest, merged], ignore_index=True)
    order = together["job"].map(position)
    return together.iloc[order.argsort(kind="stable")].reset_index(drop=True)


def _unlike(summary: pd.DataFrame, differences: list[Difference]) -> list[str | None]:
    """Per row, in words, what its device differs in from most of the others compared (a
    group's row: what any of its members does); with no majority (two devices, or every one
    alike with none), every device differs. None when nothing that matters differs."""
    groups = dict(zip(summary["label"], summary["group"], strict=True))
    odd = [(d, _odd_ones(d.values)) for d in differences]
    said = []
    for label, group, member in zip(summary["label"], summary["group"], summary["member"],
                                    strict=True):  # fmt: skip
        whole_group = isinstance(group, str) and pd.isna(member)
        mine = [d.words() for d, labels in odd if label in labels or (
            whole_group and any(groups.get(other) == group for other in labels))]  # fmt: skip
        said.append("; ".join(mine) or None)
    return said


def _odd_ones(values: dict[str, str]) -> set[str]:
    """The labels whose value is not the one most devices have (all, when none has most)."""
    counts = Counter(values.values())
    (common, most), *rest = counts.most_common()
    if rest and rest[0][1] == most:
        return set(values)
    return {label for label, value in values.items() if value != common}


def _outlying(summary: pd.DataFrame, outliers: list[Outlier]) -> list[str | None]:
    """Per group member's row, how far below its fellow members' median IOPS it is when that
    is an outlier; None elsewhere."""
    found = {(o.member, o.job): o.words() for o in outliers}
    return [found.get((label, job)) for label, job in zip(summary["label"], summary["job"],
                                                          strict=True)]  # fmt: skip


def _jobs(runs: pd.DataFrame) -> list[list[int]]:
    """The positions of each job's runs on one device (its repeats), jobs in the order of
    their first run."""
    codes = runs.groupby(_JOB_KEYS, sort=False, dropna=False).ngroup().to_numpy()
    members: dict[int, list[int]] = {}
    for position, code in enumerate(codes):
        members.setdefault(int(code), []).append(position)
    return [members[code] for code in range(len(members))]


@dataclass
class _Runs:
    """The combined runs as plain lists, by position: one job's figures are a handful of
    numbers, not worth a frame each."""

    firsts: list[dict[str, object]]  # how each run was made (a job's row starts as its first's)
    status: list[object]
    error: list[object]
    figures: dict[str, list[float]]  # the summed metrics, the cliffs and burst_iops
    bound: list[object]
    bound_reason: list[object]
    pairs: list[Verdict | None]  # each run's verdict and reason
    searches: list[str | None]  # what each run's search for a latency target found, in words

    @classmethod
    def of(cls, runs: pd.DataFrame) -> _Runs:
        figures = {m: runs[m].astype("float64").tolist() for m in _SUMMED}
        for column in (*_CLIFF_COLUMNS, "burst_iops"):
            figures[column] = (runs[column].astype("float64").tolist() if column in runs.columns
                               else [math.nan] * len(runs))  # fmt: skip
        pairs = runs["verdict_pair"].tolist() if "verdict_pair" in runs.columns else None
        return cls(
            firsts=runs[_JOB_KEYS + _WORKLOAD_KEYS + _RUN_FACTS].to_dict("records"),
            status=runs["status"].tolist(),
            error=runs["error"].tolist(),
            figures=figures,
            bound=runs["cpu_bound"].tolist(),
            bound_reason=runs["cpu_bound_reason"].tolist(),
            pairs=pairs if pairs is not None else [None] * len(runs),
            searches=_search_words(runs),
        )

    def of_runs(self, column: str, positions: list[int]) -> list[float]:
        """The figures of `column` in the runs at `positions`."""
        return [self.figures[column][i] for i in positions]


def _job_row(runs: _Runs, group: list[int], aggregate: str) -> dict[str, object]:
    """The summary's row of one job on one device, from its runs (`group`): how it was
    made, its repeats' figures (the failed ones only counted) and what they tell."""
    ok = [i for i in group if runs.status[i] == "ok"]
    row: dict[str, object] = dict(runs.firsts[group[0]])
    row["repeats"] = len(ok)
    row["failed_runs"] = len(group) - len(ok)
    row["status"] = "ok" if ok else str(runs.status[group[-1]])
    row["error"] = None if ok else runs.error[group[-1]]
    for metric in _SUMMED:
        found = runs.of_runs(metric, ok)
        row.update(_spread(metric, found))
        lower_better = metric.startswith("lat_")
        row[f"{metric}_value"] = aggregate_values(found, aggregate, not lower_better)
    row["aggregate"] = aggregate
    # for comparisons made later: against another baseline (compare.compare_repeats), and
    # results over time (ssdcompare.analysis.overtime)
    for metric in _SUMMED:
        row[f"{metric}_per_repeat"] = tuple(runs.of_runs(metric, ok))
    row.update(_judged(runs, ok, row["iops_cv_pct"]))  # type: ignore[arg-type]
    return row


def _judged(runs: _Runs, ok: list[int], iops_cv_pct: float | None) -> dict[str, object]:
    """What a job's successful repeats (`ok`) tell together besides their figures: whether
    the CPU bounded them (and why), their write cliffs, their bursts' IOPS and the verdict."""
    told = [bool(runs.bound[i]) for i in ok if pd.notna(runs.bound[i])]
    reasons = [runs.bound_reason[i] for i in ok if is_true(runs.bound[i])]
    values: dict[str, object] = {
        "cpu_bound": any(told) if told else pd.NA,
        "cpu_bound_reason": reasons[0] if reasons else None,
    }
    cliffs = zip(*(runs.of_runs(column, ok) for column in _CLIFF_COLUMNS), strict=True)
    values.update(_cliffs(list(cliffs)))
    values["burst_iops_mean"] = _mean(runs.of_runs("burst_iops", ok))
    values["latency_search"] = _searches_found([runs.searches[i] for i in ok])
    judged = [runs.pairs[i] for i in ok if runs.pairs[i] is not None]
    rounds = pd.notna(runs.firsts[ok[0]].get("pts_group")) if ok else False
    verdict = judge_repeats(judged, iops_cv_pct, len(ok), rounds=bool(rounds)) if ok else None
    values["verdict"] = verdict.verdict if verdict else None
    values["verdict_reason"] = verdict.reason if verdict else None
    return values


_CLIFF_COLUMNS = ("cliff_s", "cliff_before_iops", "cliff_after_iops")
# what search_words reads of a run besides the facts every summary row keeps
_SEARCH_INPUTS = (*SEARCH_COLUMNS, "measured_s")


def _search_words(runs: pd.DataFrame) -> list[str | None]:
    """What each run's search for a latency target found, in words (None without one)."""
    if "latency_depth" not in runs.columns or runs["latency_depth"].isna().all():
        return [None] * len(runs)
    return [search_words(run) for run in runs.to_dict("records")]


def _searches_found(words: list[str | None]) -> str | None:
    """What the searches of a job's repeats found: the words once when every repeat found
    the same, else each finding with the number of repeats that came to it."""
    found = Counter(said for said in words if said is not None)
    if not found:
        return None
    if len(found) == 1 and sum(found.values()) == len(words):
        return next(iter(found))
    return "; ".join(f"{count} of {len(words)} runs: {said}" for said, count in found.items())


def _cliffs(runs: list[tuple[float, float, float]]) -> dict[str, object]:
    """A job's write cliffs over its repeats (second, IOPS before, IOPS after of each run's,
    NaN without one): how many runs had one, the earliest second, and the median levels
    before and after."""
    cliffs = [c for c in runs if not math.isnan(c[0])]
    if not cliffs:
        return {"cliff_runs": 0, **dict.fromkeys(_CLIFF_COLUMNS, float("nan"))}
    return {
        "cliff_runs": len(cliffs),
        "cliff_s": min(c[0] for c in cliffs),
        "cliff_before_iops": aggregate_values([c[1] for c in cliffs], "median"),
        "cliff_after_iops": aggregate_values([c[2] for c in cliffs], "median"),
    }


_SUMMED = ("iops", "bw_bytes", "lat_mean_us", "lat_p99_us", "lat_p999_us", "lat_max_us")


def _known_values(values: list[float]) -> list[float]:
    return [v for v in values if not math.isnan(v)]


def _mean(values: list[float]) -> float:
    """The mean of the known values (NaN left out, as pandas does); NaN without any."""
    known = _known_values(values)
    return sum(known) / len(known) if known else math.nan


def _spread(metric: str, values: list[float]) -> dict[str, float]:
    """Mean, sample standard deviation, min, max and coefficient of variation (%) of one
    metric's repeats; NaN values are left out, and NaN stands for what cannot be told."""
    known = _known_values(values)
    mean = _mean(known)
    std = math.nan
    if len(known) > 1:
        std = math.sqrt(sum((v - mean) ** 2 for v in known) / (len(known) - 1))
    return {
        f"{metric}_mean": mean,
        f"{metric}_std": std,
        f"{metric}_min": min(known) if known else math.nan,
        f"{metric}_max": max(known) if known else math.nan,
        f"{metric}_cv_pct": std / mean * 100 if mean else math.nan,
    }


# what makes results one workload but for its queue depth (the report's curves use it too)
SERIES_SETTINGS = ["rw", "bs_bytes", "numjobs", "rwmixread", "fsync", "fdatasync",
                   "extra_options", "workload_options", "state", "thinktime_us",
                   "io_size_bytes"]  # fmt: skip
# a queue-depth series: the same workload on the same device at rising iodepth
_SERIES_KEYS = ["sweep", "host", "device", "label", *SERIES_SETTINGS]


def options_line(record: Mapping[str, object]) -> str | None:
    """A job's workload keys and `extra` options as one line ("zipf:1.2 verify crc32c;
    rate_iops=200"), or None when it has neither: what changes what its numbers mean, said
    next to the job and not only in the jobfile. `record` is a row (a dict or a Series)."""
    found = []
    for column in ("workload_options", "extra_options"):
        value = record.get(column)
        if value is not None and not pd.isna(value):
            found.append(str(value))
    return "; ".join(found) or None


def _knees(summary: pd.DataFrame) -> pd.Series:
    """The saturation knee of each row's queue-depth series (ssdcompare.judge.stats.find_knee)."""
    knees = pd.Series(pd.NA, index=summary.index, dtype="Int64")
    ok = summary[summary["status"] == "ok"]
    if "curve_pct" in ok.columns:  # a curve's paced points run at a load, not at a depth
        ok = ok[ok["curve_pct"].isna()]
    keys = [k for k in _SERIES_KEYS if k in ok.columns]
    if ok.empty:
        return knees
    depths = ok["iodepth"].astype("float64").tolist()
    iops = ok["iops_value"].astype("float64").tolist()
    lat = ok["lat_mean_us_value"].astype("float64").tolist()
    series: dict[int, list[int]] = {}
    for position, code in enumerate(ok.groupby(keys, sort=False, dropna=False).ngroup()):
        series.setdefault(int(code), []).append(position)
    index = ok.index
    for positions in series.values():
        if len({depths[i] for i in positions if not math.isnan(depths[i])}) < 3:
            continue
        knee = find_knee([depths[i] for i in positions], [iops[i] for i in positions],
                         [lat[i] for i in positions])  # fmt: skip
        if knee is not None:
            knees[index[positions]] = knee
    return knees
