"""Devices compared: which results of a job are comparable (the same jobfile as the
baseline's), which device the baseline is, whether a difference is significant, and the
devices side by side for one metric (`side_by_side`, `ssdcompare.side_by_side`).

Two results of a job are comparable when their workload hashes are equal: the jobfiles
were the same. When they differ, the note says which option differs, as far as the
summary can tell, and no ratio is given. A difference is tested with Welch's t-test on the
repeats (ssdcompare.judge.stats) for IOPS and p99 latency, with 3 or more repeats a side.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ssdcompare.analysis.frame import frame_given, is_false
from ssdcompare.errors import SsdcompareError
from ssdcompare.judge.stats import compare
from ssdcompare.units import format_bytes

# Columns that tell how two results of one job were made, named as a reader knows them
_DESCRIBED = [
    ("rw", "rw"), ("bs_bytes", "bs"), ("iodepth", "iodepth"), ("numjobs", "numjobs"),
    ("rwmixread", "rwmixread"), ("fsync", "fsync"), ("fdatasync", "fdatasync"),
    ("runtime_s", "runtime"), ("ramp_s", "ramp_time"), ("span", "size/span"),
    ("ioengine", "ioengine"), ("extra_options", "extra options"), ("fio_version", "fio version"),
    ("lat_source", "latency measured as"),
]  # fmt: skip


# the metrics whose repeats are tested against the baseline's -> prefix of their columns
TESTED_METRICS = {"iops": "", "lat_p99_us": "p99_"}
# a tested metric's comparison columns (after its prefix)
_COMPARISON = ("ratio", "ratio_ci_low", "ratio_ci_high", "p_value", "significant")


def _missing(value: object) -> bool:
    # "" is what a status that could not be read carries as its hash
    return value is None or bool(pd.isna(value)) or value == ""


def _shown(column: str, value: object) -> str:
    if _missing(value):
        return "none" if column in ("extra_options", "fsync", "fdatasync") else "unknown"
    if column in ("runtime_s", "ramp_s"):
        return f"{int(value)} s"  # type: ignore[call-overload]
    if column == "bs_bytes":
        return format_bytes(int(value))  # type: ignore[call-overload]
    if column == "lat_source":
        return "total (lat)" if value == "lat" else "completion only (clat)"
    return str(value)


def described_differences(row: dict[str, Any], reference: dict[str, Any]) -> list[str]:
    """How two results of a job were made differently, as far as the summary rows tell
    ("runtime 10 s vs 3 s"); empty when they do not record it."""
    return [
        f"{name} {_shown(column, row.get(column))} vs {_shown(column, reference.get(column))}"
        for column, name in _DESCRIBED
        if _missing(row.get(column)) != _missing(reference.get(column))
        or (not _missing(row.get(column)) and row.get(column) != reference.get(column))
    ]


def _difference_note(row: dict[str, Any], reference: dict[str, Any], baseline: str) -> str:
    """Why a result is not comparable to the baseline's, with what the summary can tell."""
    differences = described_differences(row, reference)
    text = (
        f"{row['job']} on {row['label']}: the jobfiles differ from {baseline}'s (workload hash "
        f"{row['workload_hash']} vs {reference['workload_hash']})"
    )
    if differences:
        text += ": " + ", ".join(differences)
    else:
        text += (
            "; the results do not record which option differs: compare the jobfile.fio files "
            "of the two runs"
        )
    return text + ". Not the same workload, so no ratio is given."


def comparability(summary: pd.DataFrame, baseline: str) -> tuple[pd.Series, pd.Series]:
    """Per summary row: whether its workload hash equals the baseline's for the same job
    (NA when either is unknown), and a note explaining a difference."""
    wanted = ["job", "label", "workload_hash"] + [c for c, _ in _DESCRIBED if c in summary]
    records = summary[list(dict.fromkeys(wanted))].to_dict("records")
    reference: dict[object, dict[str, object]] = {}
    for record in records:
        if record["label"] == baseline:
            reference.setdefault(record["job"], record)
    flags: list[object] = []
    notes: list[str | None] = []
    for row in records:
        if row["label"] == baseline:
            flags.append(True)
            notes.append(None)
            continue
        ref = reference.get(row["job"])
        if ref is None:
            flags.append(pd.NA)
            notes.append(None)
            continue
        ours, theirs = row.get("workload_hash"), ref.get("workload_hash")
        if _missing(ours) or _missing(theirs):
            # raw fio files carry no hash: nothing to judge
            flags.append(pd.NA)
            notes.append(None)
        elif ours == theirs:
            flags.append(True)
            notes.append(None)
        else:
            flags.append(False)
            notes.append(_difference_note(row, ref, baseline))
    return (
        pd.Series(flags, index=summary.index, dtype="boolean"),
        pd.Series(notes, index=summary.index, dtype="object"),
    )


def baseline_label(labels: list[str], baseline: str | None) -> str:
    """The label results are compared against: the one `baseline` names (label_named),
    else the first of `labels`; an error when there are none."""
    if not labels:
        raise SsdcompareError("no results to compare")
    return labels[0] if baseline is None else label_named(labels, baseline)


def label_named(labels: list[str], name: str) -> str:
    """The label `name` means: itself, or the one label it is short for: a device named
    without the sweep (`zram1` for `zram1 @20261126-quick`) or without its host. An error
    when it names none, or several (the same device in two sweeps: give the whole label)."""
    if name in labels:
        return name
    short = [label for label in labels if name in _short_names(label)]
    if len(short) == 1:
        return short[0]
    if short:
        raise SsdcompareError(
            f"baseline {name!r} could be {' or '.join(map(repr, short))}: give one of them "
            "whole (the same device in several results folders)"
        )
    raise SsdcompareError(f"baseline {name!r} is not among the devices: {', '.join(labels)}")


def _short_names(label: str) -> set[str]:
    """What a label may be called for short: without " @<sweep>", without "<host>:"."""
    device = label.split(" @", 1)[0]
    return {device, device.split(":")[-1]}


def made_against(summary: pd.DataFrame) -> str | None:
    """The label a summary compared the others to (job_summary's baseline); None when it
    does not say."""
    if "compared_to" not in summary.columns:
        return None
    compared = summary["compared_to"].dropna()
    return str(compared.iloc[0]) if len(compared) else None


def _repeats(summary: pd.DataFrame, metric: str) -> dict[tuple[object, object], list[float]]:
    """(job, label) -> the figures of `metric` in each repeat (`<metric>_per_repeat`); empty
    when the summary does not hold them."""
    per_repeat = f"{metric}_per_repeat"
    if per_repeat not in summary.columns:
        return {}
    keys = zip(summary["job"], summary["label"], strict=True)
    return {key: list(runs or ()) for key, runs in zip(keys, summary[per_repeat], strict=True)}


def compare_repeats(summary: pd.DataFrame, baseline: str) -> None:
    """Each row's repeats against the baseline's for the same job (ssdcompare.judge.stats),
    as each tested metric's comparison columns (`ratio`, `p99_ratio`, ...); NaN and NA
    for the baseline itself, a job it did not run and jobfiles that differ; the rounds of a
    PTS test's window have their ratio and no test (not independent repeats:
    stats.why_untested)."""
    rounds = (summary["pts_group"].notna().tolist() if "pts_group" in summary.columns
              else [False] * len(summary))  # fmt: skip
    for metric, prefix in TESTED_METRICS.items():
        repeats = _repeats(summary, metric)
        found: dict[str, list[object]] = {name: [] for name in _COMPARISON}
        rows = zip(summary["label"], summary["job"], summary["comparable"], rounds, strict=True)
        for label, job, comparable, pts in rows:
            mine, theirs = repeats.get((job, label)), repeats.get((job, baseline))
            result = None
            if (
                label != baseline
                and theirs is not None
                and mine is not None
                and not is_false(comparable)
            ):
                result = compare(mine, theirs)
            values = ((result.ratio, result.ci_low, result.ci_high, result.p_value,
                       result.significant) if result is not None
                      else (float("nan"),) * 4 + (pd.NA,))  # fmt: skip
            if pts:  # the ratio of a PTS window's rounds, never tested
                values = (values[0], *(float("nan"),) * 3, pd.NA)
            for name, value in zip(found, values, strict=True):
                found[name].append(value)
        for name, column in found.items():
            summary[prefix + name] = pd.Series(
                column,
                index=summary.index,
                dtype="boolean" if name == "significant" else "float64",
            )


def side_by_side(
    summary: pd.DataFrame, metric: str = "iops", baseline: str | None = None
) -> pd.DataFrame:
    """Devices side by side for one metric, with each device's ratio to the baseline device.

    Columns: `<label>` (the summary's aggregate of the repeats, the mean unless job_summary
    was asked for another) and `<label> verdict` (what limited the result: drive, cpu,
    host, disturbed, unknown; a ratio of results that are not `drive` on both sides compares
    the CPU or the host, not the drives); for each device but the baseline,
    `<label>/<baseline>` (ratio of the figures), `<label> significant` (Welch's t-test with 3
    or more repeats on both sides, see ssdcompare.judge.stats: for IOPS and p99 latency; NA
    otherwise, and for other metrics) and `<label> comparable` (False when that label ran the
    job with a different jobfile than the baseline: different workload hash). A job that is
    not comparable gets no ratio and no significance, and a `note` column (present only
    then) says which jobfiles differ and how. `baseline` defaults to the device the summary
    was made against (job_summary's baseline), else the first device; against another, the
    significance is tested anew from the summary's repeats.
    """
    summary = frame_given(summary, "side_by_side", "ssdcompare.job_summary")
    column = f"{metric}_value" if f"{metric}_value" in summary.columns else f"{metric}_mean"
    labels = list(dict.fromkeys(summary["label"]))
    baseline = baseline_label(labels, made_against(summary) if baseline is None else baseline)
    jobs = list(dict.fromkeys(summary["job"]))
    table = _pivot(summary, column, jobs, labels)
    out = _figures(summary, table, jobs, labels)
    significance = _significance(summary, metric, baseline)
    flag_of, notes_of = _comparable_by_job(summary, baseline)
    for label in labels:
        if label == baseline:
            continue
        comparable = pd.Series([flag_of.get((job, label), pd.NA) for job in jobs], index=jobs,
                               dtype="boolean")  # fmt: skip
        same = comparable.fillna(True).astype(bool)
        out[f"{label}/{baseline}"] = (table[label] / table[baseline]).where(same)
        out[f"{label} significant"] = pd.Series(
            [significance.get((job, label), pd.NA) for job in jobs], index=jobs, dtype="boolean"
        ).where(same)
        out[f"{label} comparable"] = comparable
    if notes_of:
        out["note"] = [" ".join(notes_of.get(job, [])) or None for job in jobs]
    return out


def _figures(
    summary: pd.DataFrame, table: pd.DataFrame, jobs: list[Any], labels: list[str]
) -> pd.DataFrame:
    """side_by_side's first columns: each label's figures (`table`), each followed by its
    verdicts when the summary has them."""
    verdicts = _pivot(summary, "verdict", jobs, labels) if "verdict" in summary.columns else None
    out = pd.DataFrame(index=jobs)
    out.index.name = "job"
    for label in labels:
        out[label] = table[label]
        if verdicts is not None:
            out[f"{label} verdict"] = verdicts[label].astype(object).where(
                verdicts[label].notna(), None)  # fmt: skip
    return out


def _pivot(summary: pd.DataFrame, values: str, jobs: list[Any], labels: list[str]) -> pd.DataFrame:
    """The summary's column `values` as a table: a row per job, a column per label."""
    found = summary.pivot_table(index="job", columns="label", values=values,
                                aggfunc="first", dropna=False)  # fmt: skip
    return found.reindex(index=jobs, columns=labels)


def _comparable_by_job(
    summary: pd.DataFrame, baseline: str
) -> tuple[dict[tuple[object, object], object], dict[object, list[str]]]:
    """(job, label) -> whether its jobfile is the baseline's (the first row's), and job ->
    the notes saying how the jobfiles that differ do."""
    flags, notes = comparability(summary, baseline)
    flag_of: dict[tuple[object, object], object] = {}
    notes_of: dict[object, list[str]] = {}
    for (job, label), flag, note in zip(
        summary[["job", "label"]].itertuples(index=False), flags, notes, strict=True
    ):
        flag_of.setdefault((job, label), flag)
        if note:
            notes_of.setdefault(job, []).append(note)
    return flag_of, notes_of


def _significance(
    summary: pd.DataFrame, metric: str, baseline: str
) -> dict[tuple[object, object], object]:
    """(job, label) -> whether `metric` differs significantly from `baseline`'s: the
    summary's own test when it was made against `baseline`, else tested anew from its
    repeats (`<metric>_per_repeat`). Nothing for metrics that are not tested."""
    if metric not in TESTED_METRICS:
        return {}
    tested = f"{TESTED_METRICS[metric]}significant"
    same = "compared_to" not in summary.columns or (summary["compared_to"] == baseline).all()
    if same and tested in summary.columns:
        keys = zip(summary["job"], summary["label"], strict=True)
        return dict(zip(keys, summary[tested], strict=True))
    values = _repeats(summary, metric)
    found: dict[tuple[object, object], object] = {}
    for (job, label), mine in values.items():
        theirs = values.get((job, baseline))
        result = compare(mine, theirs) if label != baseline and theirs is not None else None
        found[(job, label)] = result.significant if result is not None else pd.NA
    return found
