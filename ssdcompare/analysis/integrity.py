"""Data that came back wrong: the runs in which fio's checks of the data it read back failed
(`verify_failed`), in words for the terminal and the report, and the results they belong to;
and the finished runs of jobs with verify in which fio checked nothing (`verified_bytes` 0).

A run in which data came back wrong is a failed one, never a figure: what it found is a
data-integrity failure of the device for that job, and is said apart from every performance
figure. A run that checked nothing is said too, so that no result claims a check it did not
make.
"""

from __future__ import annotations

import pandas as pd

from ssdcompare.analysis.frame import known_true
from ssdcompare.suite.realism import VERIFY_BACKLOG

RESULT_KEYS = ("sweep", "label", "job")  # a result: one job on one device of one sweep
RUN_KEYS = ("sweep", "device", "job", "repeat")
NOTHING_READ_BACK = "verify: nothing was read back"


def _wrong_runs(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per run in which data came back wrong, in the frame's order."""
    if frame.empty or "verify_failed" not in frame.columns:
        return frame.iloc[0:0]
    labelled = frame if "label" in frame.columns else frame.assign(label=frame["device"])
    chosen = known_true(labelled["verify_failed"])
    return labelled[chosen].drop_duplicates(list(RUN_KEYS))


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


def unchecked_runs(frame: pd.DataFrame) -> list[str]:
    """Each finished run of a job with verify in which fio read nothing back to check
    (`verified_bytes` 0), in words with what to do: "write-4k-qd1-io1m-verifycrc32c on loop0,
    run 1: verify: nothing was read back: the runtime ended before the write phase did; ..."."""
    if frame.empty or "verified_bytes" not in frame.columns:
        return []
    labelled = frame if "label" in frame.columns else frame.assign(label=frame["device"])
    nothing = (labelled["verified_bytes"] == 0).fillna(False).astype(bool)
    runs = labelled[nothing & (labelled["status"] == "ok")]
    runs = runs.drop_duplicates(list(RUN_KEYS))
    said = zip(runs["job"], runs["label"], runs["repeat"], runs["io_size_bytes"], strict=True)
    return [f"{job} on {label}, run {repeat}: {NOTHING_READ_BACK}: {_why_unchecked(capped)}"
            for job, label, repeat, capped in said]  # fmt: skip


def _why_unchecked(io_size: object) -> str:
    """Why a verified write read nothing back, and what to do: a size-capped one (`io_size`)
    reads back only after its write phase."""
    if pd.notna(io_size):  # type: ignore[call-overload]
        return ("the runtime ended before the write phase did; give a longer runtime or a "
                "smaller io_size")  # fmt: skip
    return (f"the run ended before fio checked any block it wrote (it checks them "
            f"{VERIFY_BACKLOG:,} at a time); give a longer runtime")  # fmt: skip
