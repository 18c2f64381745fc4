"""Results as a tidy pandas frame: one row per (host, device, job, repeat, direction).

Every number in the frame is read from a stored fio JSON file or CPU trace (the `fio_json`
column names the file), so any cell can be traced back and recomputed. Unknown values are NaN
(float columns), NA (Int64, boolean) or None (text); a failed or interrupted run keeps its rows
with NaN figures, never zeros.

The columns, their types, units and where each comes from are written once, in
ssdcompare.analysis.columns (the registry the frame's columns are made from; docs/results-format.md
shows it as tables). For a raw fio file (read_fio) a sweep's sources stand for fio's own: the
job's options for the workload, the entry's "jobname" for the job, the last part of its
filename for the device.

What lat_* means: lat_source says which of fio's objects they come from, "lat" (lat_ns:
submission + completion, what the application waits for) or "clat" (clat_ns: completion
only). lat is used when fio printed percentiles for it (lat_percentiles=1), else clat.
ssdcompare's jobfiles set lat_percentiles=1, so new results have lat_* = total latency;
results recorded before that (and raw fio runs with fio's defaults) have lat_* =
completion latency (clat), which leaves out submission. Check lat_source before
comparing lat_* across such results, or compare clat_*, which mean the same in both.

A stored run's rows are made in ssdcompare.analysis.runrows; the frame's repeats are
aggregated in ssdcompare.analysis.summary, devices compared in ssdcompare.analysis.compare.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import glob
from collections import namedtuple
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from ssdcompare.analysis import cache as framecache
from ssdcompare.analysis.columns import (
    BOOLEAN_COLUMNS,
    COLUMNS,
    FLOAT_COLUMNS,
    INT_COLUMNS,
    TEXT_COLUMNS,
)
from ssdcompare.analysis.latencytarget import search_values
from ssdcompare.analysis.runrows import direction_values, run_rows, throttling_of
from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.result.models import DIRECTIONS
from ssdcompare.fio.result.plausibility import job_problem
from ssdcompare.fio.result.reader import parse_fio_file
from ssdcompare.judge.cpu import Thresholds, judge
from ssdcompare.judge.verdict import RunFacts, Verdict, judge_run
from ssdcompare.results.store import ResultsDir, given_paths, unique_folders
from ssdcompare.suite.workload import READING_PATTERNS, WRITING_PATTERNS
from ssdcompare.units import parse_size


def load_results(
    results: ResultsDir, thresholds: Thresholds | None = None, cache: bool = True
) -> pd.DataFrame:
    """The frame of one results folder, failed and interrupted runs included (numbers NaN).

    With `cache`, a copy of the frame is kept in the folder and used again while no file of
    it has changed (ssdcompare.analysis.cache); without, it is always built from the raw files.
    """
    thresholds = thresholds or Thresholds()
    if not cache:
        return _load_results(results, thresholds)
    return framecache.cached(results.path, "frame", repr(thresholds),
                             lambda: _load_results(results, thresholds))  # fmt: skip


def _load_results(results: ResultsDir, thresholds: Thresholds) -> pd.DataFrame:
    manifest = results.manifest
    workloads = {w.job_id: w for w in manifest.suite.workloads}
    devices: dict[str, dict[str, object]] = {}
    for info in manifest.devices:
        devices[info.name] = {
            "model": info.model,
            "firmware": info.firmware,
            "size_bytes": info.size_bytes,
            "transport": info.transport,
            "rotational": info.rotational,
            "scheduler": info.scheduler,
            "target_kind": info.kind,
        }
    for target in manifest.targets:
        # a device on a fio server is named by that host, a group across hosts by its members
        if target.host is not None or len(target.hosts) > 1:
            host, device = results.run_place(target.name)
            port = target.host.port if target.host is not None else None
            devices.setdefault(target.name, {}).update(
                host=host, port=port, device=device, remote=target.remote
            )
    rows: list[dict[str, object]] = []
    order = {w.job_id: i for i, w in enumerate(manifest.suite.workloads)}
    targets = {t.name: i for i, t in enumerate(manifest.targets)}
    units = {t.name: t for t in manifest.targets}
    statuses = sorted(
        results.statuses(),
        key=lambda s: (s.repeat, targets.get(s.target, 99), order.get(s.job, 10**6)),
    )
    for status in statuses:
        # a run folder the plan does not have (copied in) is no run of this workload
        planned = results.planned(status.target, status.job, status.repeat)
        rows.extend(
            run_rows(
                results,
                status,
                workloads.get(status.job) if planned else None,
                devices.get(status.target, {}),
                thresholds,
                units[status.target].members if status.target in units else (),
                devices,
                units[status.target].hosts if status.target in units else (),
            )
        )
    return _typed(rows)


def load(
    paths: str | Path | Iterable[str | Path],
    thresholds: Thresholds | None = None,
    cache: bool = True,
) -> pd.DataFrame:
    """Load one or more sweep results folders into one tidy frame (each folder read once).

    Each folder's frame is kept in its `.cache/` and read from there again while none of its
    files has changed; `cache=False` always builds it from the raw files."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    frames = [load_results(ResultsDir.open(p), thresholds, cache) for p in unique_folders(paths)]
    if not frames:
        raise SsdcompareError("no results folders given")
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    return label_devices(frame)


def read_fio(
    paths: str | Path | Iterable[str | Path], thresholds: Thresholds | None = None
) -> pd.DataFrame:
    """A frame from raw fio JSON outputs made outside ssdcompare: one file, a list of them, or
    a glob ("runs/*.json"), read into one frame (built once, however many files).

    Columns fio's output cannot tell (device metadata, CPU samples) are null; the CPU-bound
    judgement uses fio's own usr/sys figures and stays null unless they show a saturated worker.
    Client/server output gives each server's host and port.
    """
    thresholds = thresholds or Thresholds()
    rows: list[dict[str, object]] = []
    with _cycles_unchecked():
        for path in _fio_paths(paths):
            rows += _fio_file_rows(path, thresholds)
        return label_devices(_typed(rows))


@contextlib.contextmanager
def _cycles_unchecked() -> Iterator[None]:
    """Python's cycle collector paused while many objects are made and kept (a parsed output
    per file, its rows): none of them forms a cycle, and the collector's passes over the
    growing list of rows cost about a fifth of the reading."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _fio_paths(paths: str | Path | Iterable[str | Path]) -> list[Path]:
    if isinstance(paths, Path):
        return [paths]
    if isinstance(paths, str):
        if not any(char in paths for char in "*?["):
            return [Path(paths)]
        found = sorted(Path(p) for p in glob.glob(paths, recursive=True))
        if not found:
            raise SsdcompareError(f"no file matches {paths!r}")
        return found
    found = given_paths(paths, "fio outputs")
    if not found:
        raise SsdcompareError("no fio output files given")
    return found


def _device_name(filename: str | None) -> str | None:
    """A fio `filename` as a sweep names its target: the last part of the path (a list of
    files, "a:b", is left as it is)."""
    if not filename or ":" in filename.replace("\\:", ""):
        return filename
    return Path(filename.replace("\\:", ":")).name or filename


def _fio_file_rows(path: Path, thresholds: Thresholds) -> list[dict[str, object]]:
    output = parse_fio_file(path)
    rows = []
    for job in output.jobs:
        options = job.options  # this job's own server's options in client/server output
        verdict = judge(None, job.usr_cpu_pct, job.sys_cpu_pct, None, thresholds)
        problem = job_problem(job) if job.ok else None
        error = None if job.ok else f"fio job error {job.error}"
        if problem is not None:
            error = f"{path.name} {problem}: impossible for a run, so the file is damaged"
        base: dict[str, object] = {
            "host": job.hostname,
            "port": job.port,
            # what was measured: the filename, named as a sweep names it ("zram1" for
            # /dev/zram1, "test.img" for a file), else the host (client/server), else the file
            "device": _device_name(options.get("filename")) or job.hostname or path.stem,
            "job": job.name,
            "repeat": 1,
            "status": "damaged" if problem is not None else "failed" if error else "ok",
            "error": error,
            "rw": options.get("rw") or options.get("readwrite"),
            "iodepth": options.get("iodepth"),
            "numjobs": job.processes,
            "rwmixread": options.get("rwmixread"),
            "fsync": options.get("fsync"),
            "fdatasync": options.get("fdatasync"),
            "span": options.get("size"),
            "ioengine": options.get("ioengine"),
            "fio_cpu_usr_pct": job.usr_cpu_pct,
            "fio_cpu_sys_pct": job.sys_cpu_pct,
            "cpu_bound": verdict.cpu_bound,
            "cpu_bound_reason": verdict.reason,
            "fio_version": output.fio_version,
            "fio_json": str(path),
            "sweep": None,
            "target_kind": None,
        }
        bs = options.get("bs") or options.get("blocksize")
        if bs:
            try:
                base["bs_bytes"] = parse_size(bs)
            except ValueError:
                pass
        if problem is None:
            base.update(search_values(job))
        directions = [d for d in DIRECTIONS if d in job.directions] or ["read"]
        for direction in directions:
            values = direction_values(job, direction) if problem is None else {}
            rows.append(dict(base, direction=direction, **values))
    return rows


def label_devices(frame: pd.DataFrame) -> pd.DataFrame:
    """A `label` per compared unit: the device, qualified by host (several hosts), host:port
    (several fio servers on one host) or sweep (one device in several sweeps)."""
    frame = frame.copy()
    device = frame["device"].astype("string")
    host = frame["host"].astype("string")
    port = frame["port"] if "port" in frame.columns else pd.Series(pd.NA, index=frame.index)
    port = port.astype("Int64")
    # servers on one host differ only by their port, so such a host is named with it
    ports = frame.assign(port=port).dropna(subset=["host", "port"])
    per_host = ports.groupby("host")["port"].nunique()
    by_port = frame["host"].isin(per_host[per_host > 1].index) & port.notna()
    where = host.where(~by_port, host + ":" + port.astype("string"))
    qualify = by_port.copy()
    if frame["host"].nunique(dropna=True) > 1:
        qualify |= host.notna()
    # a client/server entry without a filename is named after its host: do not repeat it
    qualified = where.where(device == host, where + ":" + device)
    label = device.where(~qualify, qualified)
    units = frame.assign(port=port)[["host", "port", "device", "sweep"]].drop_duplicates()
    if units.duplicated(["host", "port", "device"]).any():
        # the same device in several sweeps (e.g. before/after a firmware update)
        sweep_name = frame["sweep"].map(lambda p: Path(p).name if isinstance(p, str) else "")
        label = label + " @" + sweep_name.astype("string")
    if "member" in frame.columns:
        # a group's member: named with its group ("loop0 in loop0+loop1")
        in_group = frame["member"].notna()
        group_label = label.where(frame["member"].isna()).groupby(
            [frame["sweep"], frame["group"]], dropna=False).transform("first")  # fmt: skip
        label = label.where(~in_group, label + " in " + group_label.fillna(frame["group"]))
    frame["label"] = label
    return frame


def _typed(rows: list[dict[str, object]]) -> pd.DataFrame:
    # the columns the rows hold, then the others (all NaN, as pandas makes them): pandas
    # builds a frame from dicts at half the cost without the columns no row has
    frame = pd.DataFrame(rows).reindex(columns=COLUMNS) if rows else pd.DataFrame(columns=COLUMNS)
    for column in FLOAT_COLUMNS:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    for column in INT_COLUMNS:
        frame[column] = whole_numbers(frame[column])
    for column in BOOLEAN_COLUMNS:
        frame[column] = frame[column].astype("boolean")
    for column in TEXT_COLUMNS:  # a text column no row fills is text too, of None, not NaN
        if frame[column].dtype == "float64":
            frame[column] = pd.Series([None] * len(frame), index=frame.index, dtype=object)
    # one run far above the job's ceiling discredits that ceiling for all its runs
    worst = frame.groupby(["sweep", "job"], dropna=False)["ceiling_pct"].transform("max")
    inputs = [_na_as_none(frame[column]) for column in _VerdictInputs._fields]
    # runs alike in every input share one verdict, judged once
    judged: dict[tuple[Any, ...], Verdict | None] = {}
    verdicts = []
    for values in zip(*inputs, _na_as_none(worst), strict=True):
        if values not in judged:
            judged[values] = _run_verdict(_VerdictInputs._make(values[:-1]), values[-1])
        verdicts.append(judged[values])
    frame["verdict"] = [v.verdict if v else None for v in verdicts]
    frame["verdict_reason"] = [v.reason if v else None for v in verdicts]
    return frame


# the columns a run's verdict is judged on (_run_verdict, _unsampled)
_VerdictInputs = namedtuple("_VerdictInputs", [
    "status", "io_size_bytes", "runtime_s", "measured_s", "cpu_bound", "cpu_bound_reason",
    "steal_pct", "others_pct", "others_top", "ceiling_pct", "remote", "host",
    "fio_cpu_usr_pct", "fio_cpu_sys_pct", "throttle_t1_events", "throttle_t1_s",
    "throttle_t2_events", "throttle_t2_s", "warning_temp_min", "critical_temp_min",
    "temp_after_c", "io_check", "io_check_reason", "latency_target_us", "rw",
    "verify"])  # fmt: skip


def _na_as_none(column: pd.Series) -> list[Any]:
    """A column's values with None for every kind of NA (NaN, pd.NA)."""
    return column.astype(object).where(column.notna(), None).tolist()


def whole_numbers(column: pd.Series) -> pd.Series:
    """An Int64 column: what is no whole number of 64 bits is NA. A raw fio output prints
    options as it was given them, and fio takes iodepth=1.5 or rwmixread=50.5."""
    numbers = pd.to_numeric(column, errors="coerce")
    try:
        return numbers.astype("Int64")
    except (TypeError, ValueError, OverflowError):
        values = [_whole(value) for value in numbers.tolist()]
        return pd.Series(values, index=column.index, dtype="Int64", name=column.name)


def _whole(value: Any) -> int | None:
    try:
        whole = int(value)
    except (TypeError, ValueError, OverflowError):
        return None  # NA, NaN, inf
    return whole if whole == value and -(2**63) <= whole < 2**63 else None


def _run_verdict(row: Any, ceiling_worst_pct: object = None) -> Verdict | None:
    """One row's verdict (ssdcompare.judge.verdict); None for a run that did not finish."""
    if row.status != "ok":
        return None

    def known(value: object) -> float | None:
        return None if value is None or pd.isna(value) else float(value)  # type: ignore[arg-type]

    timed = pd.isna(row.io_size_bytes) and pd.notna(row.runtime_s)
    # a job searching for a latency target ends early by design once fio's search settles:
    # its runtime is no plan such a run falls short of
    timed = timed and pd.isna(row.latency_target_us)
    timed = timed and not verify_sets_the_time(row.verify, row.rw)
    return judge_run(RunFacts(
        cpu_bound=None if pd.isna(row.cpu_bound) else bool(row.cpu_bound),
        cpu_reason=row.cpu_bound_reason, steal_pct=known(row.steal_pct),
        others_pct=known(row.others_pct),
        others_top=row.others_top if isinstance(row.others_top, str) else None,
        runtime_s=known(row.measured_s), planned_s=known(row.runtime_s) if timed else None,
        ceiling_pct=known(row.ceiling_pct), ceiling_worst_pct=known(ceiling_worst_pct),
        unsampled=_unsampled(row),
        throttling=throttling_of(functools.partial(getattr, row)),
        io_check=row.io_check if isinstance(row.io_check, str) else None,
        io_reason=row.io_check_reason if isinstance(row.io_check_reason, str) else None,
    ))  # fmt: skip


def verify_sets_the_time(verify: object, rw: object) -> bool:
    """Whether fio's checks of the data, not the runtime, decide how long a job with `verify`
    runs: a write splits a time-based run's runtime between writing and checking, so neither
    direction's time reaches the plan; a read reads its span once and ends, whatever its
    runtime. A shorter run of either is no run cut short."""
    return isinstance(verify, str) and rw in WRITING_PATTERNS | READING_PATTERNS


def _unsampled(row: Any) -> str | None:
    """Why a run has no CPU samples, when it is on another machine."""
    if pd.isna(row.remote) or not row.remote:
        return None
    worker = [v for v in (row.fio_cpu_usr_pct, row.fio_cpu_sys_pct) if pd.notna(v)]
    figure = f" (its worker at {sum(worker):.0f} % of a core)" if len(worker) == 2 else ""
    return (f"host {row.host} is another machine, not sampled from here: only fio's own CPU "
            f"figures are known{figure}")  # fmt: skip


def known_true(values: pd.Series) -> pd.Series:
    """A flag column (cpu_bound, significant, ...) as plain booleans: True only where it is
    known to be set; NA (cannot tell) reads as False."""
    return values.fillna(False).astype(bool)


def is_true(value: object) -> bool:
    """One flag: True only when known to be set; None and NA (cannot tell) are not True."""
    return value is not None and bool(pd.notna(value)) and bool(value)


def is_false(value: object) -> bool:
    """One flag: True only when known to be unset; None and NA (cannot tell) are not False."""
    return value is not None and bool(pd.notna(value)) and not bool(value)


def frame_given(
    value: object, what: str, made_by: str, needs: tuple[str, ...] = ()
) -> pd.DataFrame:
    """`value` when it is a pandas frame holding the columns `needs`; else SsdcompareError
    saying which frame `what` takes (`made_by` names the call that makes one)."""
    if not isinstance(value, pd.DataFrame):
        raise SsdcompareError(f"{what}: {type(value).__name__} {value!r:.60} is not a frame; "
                              f"give the frame {made_by} made")  # fmt: skip
    missing = [column for column in needs if column not in value.columns]
    if missing and len(value):
        raise SsdcompareError(f"{what}: the frame given has no {', '.join(missing)} column; "
                              f"give the frame {made_by} made")  # fmt: skip
    return value


def damaged_runs(frame: pd.DataFrame) -> list[str]:
    """Each run whose stored files cannot be used (status `damaged`), in words: "loop0
    randread-4k-qd1 r1: runs/loop0/randread-4k-qd1/r1/fio.json is a symbolic link; ..."."""
    return _runs_in_words(frame, frame["status"] == "damaged", "error")


def io_mismatches(frame: pd.DataFrame) -> list[str]:
    """Each run whose device did not see what fio counted (`io_check` other than `ok`), in
    words: "loop0 randread-4k-qd1 r1: the device wrote 64 MiB where fio counted 0 B: ..."."""
    if "io_check" not in frame.columns:
        return []
    chosen = frame["io_check"].notna() & (frame["io_check"] != "ok")
    return _runs_in_words(frame, chosen, "io_check_reason")


def _runs_in_words(frame: pd.DataFrame, chosen: pd.Series, column: str) -> list[str]:
    rows = frame[chosen.fillna(False).astype(bool)].drop_duplicates(["sweep", "device", "job",
                                                                     "repeat"])  # fmt: skip
    label = rows["label"] if "label" in rows.columns else rows["device"]
    # runs for one reason (a PTS group's record: every run of its rounds) are said once
    found: dict[tuple[object, object], list[str]] = {}
    for name, job, repeat, said in zip(label, rows["job"], rows["repeat"], rows[column],
                                       strict=True):  # fmt: skip
        found.setdefault((name, said), []).append(f"{job} r{repeat}")
    return [f"{name} {runs[0]}: {said}" if len(runs) == 1
            else f"{name} {runs[0]} and {len(runs) - 1} more runs: {said}"
            for (name, said), runs in found.items()]  # fmt: skip
