"""Data that came back wrong: the runs in which fio's checks of the data it read back failed
(`verify_failed`), in words for the terminal and the report, and the results they belong to.

Such a run is a failed one, never a figure: what it found is a data-integrity failure of the
device for that job, and is said apart from every performance figure.
"""

from __future__ import annotations

import pandas as pd

from ssdcompare.analysis.frame import known_true

RESULT_KEYS = ("sweep", "label", "job")  # a result: one job on one device of one sweep


def _wrong_runs(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per run in which data came back wrong, in the frame's order."""
    if frame.empty or "verify_failed" not in frame.columns:
        return frame.iloc[0:0]
    labelled = frame if "label" in frame.columns else frame.assign(label=frame["device"])
    chosen = known_true(labelled["verify_failed"])
    return labelled[chosen].drop_duplicates(["sweep", "device", "job", "repeat"])


def data_wrong_runs(frame: pd.DataFrame) -> list[str]:
    """Each run in which data came back wrong, in words: "read-64k-qd4 on loop0, run 1: data
    came back wrong: crc32c mismatch at offset 1 MiB. fio said: ..." (its error, which holds
    fio's own words)."""
    runs = _wrong_runs(frame)
    said = zip(runs["job"], runs["label"], runs["repeat"], runs["error"], strict=True)
    return [f"{job} on {label}, run {repeat}: {error}" for job, label, repeat, error in said]


def data_wrong_results(frame: pd.DataFrame) -> dict[tuple[object, ...], str]:
    """The results (sweep, label, job) some run of which found data that came back wrong,
    each with its first such run's error."""
    runs = _wrong_runs(frame)
    found: dict[tuple[object, ...], str] = {}
    for key, error in zip(zip(*(runs[k] for k in RESULT_KEYS), strict=True), runs["error"],
                          strict=True):  # fmt: skip
        found.setdefault(key, str(error))
    return found


def result_key(row: dict[str, object] | pd.Series) -> tuple[object, ...]:
    """A summary row's result, as data_wrong_results keys them."""
    return tuple(row[k] for k in RESULT_KEYS)
