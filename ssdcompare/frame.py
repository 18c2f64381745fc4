"""Results as a tidy pandas frame: one row per (host, device, job, repeat, direction).

Every number in the frame is read from a stored fio JSON file or CPU trace (the `fio_json`
column names the file), so any cell can be traced back and recomputed.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ssdcompare.cpu import CpuTrace
from ssdcompare.cpubound import Thresholds, judge
from ssdcompare.errors import SsdcompareError
from ssdcompare.fioresult import FioOutputError, JobResult, parse_fio_file
from ssdcompare.matrix import Workload
from ssdcompare.runner import CPU_JSON, FIO_JSON
from ssdcompare.store import ResultsDir, RunStatus, write_atomic
from ssdcompare.units import parse_size

DIRECTIONS = ("read", "write", "trim", "sync", "mixed")  # mixed: unified_rw_reporting

# The column order of every frame; numeric columns stay numeric (NaN when unknown).
COLUMNS = [
    "host", "device", "job", "repeat", "direction", "status", "error",
    "rw", "bs_bytes", "iodepth", "numjobs", "rwmixread", "fsync", "runtime_s",
    "iops", "bw_bytes", "io_bytes", "total_ios",
    "lat_mean_us", "lat_stddev_us", "lat_min_us", "lat_p50_us", "lat_p99_us", "lat_p999_us",
    "lat_max_us", "lat_source",
    "fio_cpu_usr_pct", "fio_cpu_sys_pct",
    "cpu_bound", "cpu_bound_reason",
    "cpu_busy_pct", "cpu_max_busy_pct", "irq_softirq_max_pct", "fio_worker_max_pct",
    "fio_workers_total_cores", "cpu_count", "sampler_cpu_pct",
    "suite", "workload_hash", "model", "firmware", "size_bytes", "transport", "rotational",
    "scheduler", "target_kind", "fio_version", "started_at", "sweep", "fio_json",
]  # fmt: skip

_FLOAT_COLUMNS = [
    "iops", "bw_bytes", "io_bytes", "total_ios", "lat_mean_us", "lat_stddev_us", "lat_min_us",
    "lat_p50_us", "lat_p99_us", "lat_p999_us", "lat_max_us", "fio_cpu_usr_pct",
    "fio_cpu_sys_pct", "cpu_busy_pct", "cpu_max_busy_pct", "irq_softirq_max_pct",
    "fio_worker_max_pct", "fio_workers_total_cores", "sampler_cpu_pct", "size_bytes",
]  # fmt: skip
_INT_COLUMNS = ["repeat", "bs_bytes", "iodepth", "numjobs", "rwmixread", "fsync", "runtime_s",
                "cpu_count"]  # fmt: skip


def _direction_values(job: JobResult, direction: str) -> dict[str, object]:
    result = job.directions.get(direction)
    if result is None:
        return {}
    lat = result.latency
    values: dict[str, object] = {
        "iops": result.iops,
        "bw_bytes": result.bw_bytes,
        "io_bytes": result.io_bytes,
        "total_ios": result.total_ios,
    }
    if lat is not None:
        values.update(
            lat_mean_us=lat.mean_us,
            lat_stddev_us=lat.stddev_us,
            lat_min_us=lat.min_us,
            lat_max_us=lat.max_us,
            lat_p50_us=lat.percentile_us(50),
            lat_p99_us=lat.percentile_us(99),
            lat_p999_us=lat.percentile_us(99.9),
            lat_source=result.latency_source,
        )
    return values


def _workload_columns(workload: Workload | None) -> dict[str, object]:
    if workload is None:
        return {}
    return {
        "rw": workload.rw,
        "bs_bytes": workload.bs_bytes,
        "iodepth": workload.iodepth,
        "numjobs": workload.numjobs,
        "rwmixread": workload.rwmixread,
        "fsync": workload.fsync,
        "runtime_s": workload.runtime_s,
    }


def _run_rows(
    results: ResultsDir,
    status: RunStatus,
    workload: Workload | None,
    device: dict[str, object],
    thresholds: Thresholds,
) -> list[dict[str, object]]:
    manifest = results.manifest
    folder = results.run_dir(status.target, status.job, status.repeat)
    base: dict[str, object] = {
        "host": manifest.host.hostname,
        "device": status.target,
        "job": status.job,
        "repeat": status.repeat,
        "status": status.status,
        "error": status.error,
        "suite": manifest.suite.name,
        "workload_hash": status.workload_hash,
        "fio_version": manifest.host.fio_version,
        "started_at": status.started_at,
        "sweep": str(results.path),
        "sampler_cpu_pct": status.sampler_cpu_pct,
        "cpu_count": manifest.host.cpu_threads,
        **_workload_columns(workload),
        **device,
    }
    directions = list(workload.directions) if workload is not None else ["read"]
    fio_path = folder / FIO_JSON
    job: JobResult | None = None
    if status.status == "ok" and fio_path.exists():
        base["fio_json"] = str(fio_path)
        try:
            output = parse_fio_file(fio_path)
        except FioOutputError as err:
            base.update(status="failed", error=str(err))
        else:
            job = output.jobs[0] if output.jobs else None
    cpu_summary = None
    cpu_path = folder / CPU_JSON
    if cpu_path.exists():
        try:
            trace = CpuTrace.model_validate_json(cpu_path.read_text())
            skip = workload.ramp_s + 0.5 if workload is not None else 0.5
            cpu_summary = trace.summary(skip_s=skip)
        except (OSError, ValueError):
            cpu_summary = None
    if cpu_summary is not None:
        base.update(
            cpu_busy_pct=cpu_summary.cpu_busy_pct,
            cpu_max_busy_pct=cpu_summary.cpu_max_busy_pct,
            irq_softirq_max_pct=cpu_summary.irq_softirq_max_pct,
            fio_worker_max_pct=cpu_summary.fio_worker_max_pct,
            fio_workers_total_cores=cpu_summary.fio_workers_total_cores,
        )
    if job is not None:
        base.update(fio_cpu_usr_pct=job.usr_cpu_pct, fio_cpu_sys_pct=job.sys_cpu_pct)
        verdict = judge(
            cpu_summary, job.usr_cpu_pct, job.sys_cpu_pct, manifest.host.cpu_threads, thresholds
        )
        base.update(cpu_bound=verdict.cpu_bound, cpu_bound_reason=verdict.reason)
    rows = []
    for direction in directions:
        row = dict(base, direction=direction)
        if job is not None:
            row.update(_direction_values(job, direction))
        rows.append(row)
    return rows


def _typed(rows: list[dict[str, object]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=COLUMNS)
    for column in _FLOAT_COLUMNS:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("float64")
    for column in _INT_COLUMNS:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").astype("Int64")
    frame["cpu_bound"] = frame["cpu_bound"].astype("boolean")
    frame["rotational"] = frame["rotational"].astype("boolean")
    return frame


def load_results(results: ResultsDir, thresholds: Thresholds | None = None) -> pd.DataFrame:
    """The frame of one results folder, failed and interrupted runs included (numbers NaN)."""
    thresholds = thresholds or Thresholds()
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
    rows: list[dict[str, object]] = []
    order = {w.job_id: i for i, w in enumerate(manifest.suite.workloads)}
    targets = {t.name: i for i, t in enumerate(manifest.targets)}
    statuses = sorted(
        results.statuses(),
        key=lambda s: (s.repeat, targets.get(s.target, 99), order.get(s.job, 10**6)),
    )
    for status in statuses:
        rows.extend(
            _run_rows(
                results,
                status,
                workloads.get(status.job),
                devices.get(status.target, {}),
                thresholds,
            )
        )
    return _typed(rows)


def load(
    paths: str | Path | Iterable[str | Path], thresholds: Thresholds | None = None
) -> pd.DataFrame:
    """Load one or more sweep results folders into one tidy frame."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    frames = [load_results(ResultsDir.open(Path(p)), thresholds) for p in paths]
    if not frames:
        raise SsdcompareError("no results folders given")
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    return _label_devices(frame)


def read_fio(path: str | Path, thresholds: Thresholds | None = None) -> pd.DataFrame:
    """A frame from one raw fio JSON output made outside ssdcompare.

    Columns fio's output cannot tell (device metadata, CPU samples) are null; the CPU-bound
    judgement uses fio's own usr/sys figures and stays null unless they show a saturated worker.
    """
    thresholds = thresholds or Thresholds()
    output = parse_fio_file(Path(path))
    rows = []
    for job in output.jobs:
        options = {**output.global_options, **job.job_options}
        verdict = judge(None, job.usr_cpu_pct, job.sys_cpu_pct, None, thresholds)
        base: dict[str, object] = {
            "host": job.hostname,
            # what was measured: the filename, else the host (client/server), else the file
            "device": options.get("filename") or job.hostname or Path(path).stem,
            "job": job.name,
            "repeat": 1,
            "status": "ok" if job.ok else "failed",
            "error": None if job.ok else f"fio job error {job.error}",
            "rw": options.get("rw") or options.get("readwrite"),
            "iodepth": options.get("iodepth"),
            "numjobs": job.processes,
            "rwmixread": options.get("rwmixread"),
            "fsync": options.get("fsync"),
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
        directions = [d for d in DIRECTIONS if d in job.directions] or ["read"]
        for direction in directions:
            rows.append(dict(base, direction=direction, **_direction_values(job, direction)))
    return _label_devices(_typed(rows))



def _label_devices(frame: pd.DataFrame) -> pd.DataFrame:
    """A `label` per compared unit: the device, qualified by host or sweep when ambiguous."""
    frame = frame.copy()
    label = frame["device"].astype("string")
    if frame["host"].nunique(dropna=True) > 1:
        label = frame["host"].astype("string") + ":" + label
    pairs = frame[["host", "device", "sweep"]].drop_duplicates()
    if pairs.duplicated(["host", "device"]).any():
        # the same device in several sweeps (e.g. before/after a firmware update)
        sweep_name = frame["sweep"].map(lambda p: Path(p).name if isinstance(p, str) else "")
        label = label + " @" + sweep_name.astype("string")
    frame["label"] = label
    return frame


_PER_RUN_KEYS = ["sweep", "host", "device", "label", "job", "repeat"]
_WORKLOAD_KEYS = ["rw", "bs_bytes", "iodepth", "numjobs", "rwmixread", "fsync", "workload_hash"]


def _per_run(frame: pd.DataFrame) -> pd.DataFrame:
    """Read, write and trim of one run combined: IOPS and bandwidth add up, the mean latency
    is weighted by each direction's I/O count, the p99 is the worst direction's."""
    data = frame[frame["direction"] != "sync"].copy()
    data["lat_weighted"] = data["lat_mean_us"] * data["total_ios"]
    keys = [k for k in _PER_RUN_KEYS if k in data.columns]
    grouped = data.groupby(keys, sort=False, dropna=False)
    runs = grouped.agg(
        status=("status", "first"),
        error=("error", "first"),
        **{k: (k, "first") for k in _WORKLOAD_KEYS},
        iops=("iops", lambda s: s.sum(min_count=1)),
        bw_bytes=("bw_bytes", lambda s: s.sum(min_count=1)),
        total_ios=("total_ios", lambda s: s.sum(min_count=1)),
        lat_weighted=("lat_weighted", lambda s: s.sum(min_count=1)),
        lat_p99_us=("lat_p99_us", "max"),
        lat_max_us=("lat_max_us", "max"),
        cpu_bound=("cpu_bound", lambda s: bool(s.fillna(False).any()) if s.notna().any()
                   else pd.NA),
        cpu_bound_reason=("cpu_bound_reason", "first"),
    ).reset_index()  # fmt: skip
    runs["lat_mean_us"] = runs["lat_weighted"] / runs["total_ios"]
    return runs.drop(columns=["lat_weighted"])


def job_summary(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per (device, job): repeats aggregated to mean, stddev, min, max and coefficient
    of variation (cv_pct = stddev / mean x 100; 10 % or more means the runs disagree).

    Failed or interrupted repeats are left out of the figures and counted in `failed_runs`;
    a job with no successful repeat keeps its status and NaN figures, never zeros.
    """
    frame = _label_devices(frame) if "label" not in frame.columns else frame
    runs = _per_run(frame)
    rows = []
    keys = ["sweep", "host", "device", "label", "job"]
    for key, group in runs.groupby(keys, sort=False, dropna=False):
        ok = group[group["status"] == "ok"]
        row: dict[str, object] = dict(zip(keys, key, strict=True))
        first = group.iloc[0]
        row.update({k: first[k] for k in _WORKLOAD_KEYS})
        row["repeats"] = len(ok)
        row["failed_runs"] = len(group) - len(ok)
        row["status"] = "ok" if len(ok) else str(group["status"].iloc[-1])
        row["error"] = None if len(ok) else group["error"].iloc[-1]
        for metric in ("iops", "bw_bytes", "lat_mean_us", "lat_p99_us", "lat_max_us"):
            values = ok[metric].astype("float64")
            mean = values.mean() if len(values) else float("nan")
            std = values.std(ddof=1) if len(values) > 1 else float("nan")
            row[f"{metric}_mean"] = mean
            row[f"{metric}_std"] = std
            row[f"{metric}_min"] = values.min() if len(values) else float("nan")
            row[f"{metric}_max"] = values.max() if len(values) else float("nan")
            row[f"{metric}_cv_pct"] = std / mean * 100 if mean else float("nan")
        bound = ok["cpu_bound"].dropna()
        row["cpu_bound"] = bool(bound.astype(bool).any()) if len(bound) else pd.NA
        reasons = ok.loc[ok["cpu_bound"].fillna(False).astype(bool), "cpu_bound_reason"]
        row["cpu_bound_reason"] = reasons.iloc[0] if len(reasons) else None
        rows.append(row)
    summary = pd.DataFrame(rows)
    if not summary.empty:
        summary["cpu_bound"] = summary["cpu_bound"].astype("boolean")
    return summary


def side_by_side(
    summary: pd.DataFrame, metric: str = "iops", baseline: str | None = None
) -> pd.DataFrame:
    """Devices side by side for one metric, with each device's ratio to the baseline device.

    Columns: `<label>` (mean), `<label>/<baseline>` (ratio) and `<label> significant` (False
    when the min-max ranges of the repeats overlap, so the difference may be noise; NA with
    fewer than two repeats on either side). `baseline` defaults to the first device.
    """
    column = f"{metric}_mean"
    labels = list(dict.fromkeys(summary["label"]))
    if not labels:
        raise SsdcompareError("no results to compare")
    baseline = baseline or labels[0]
    if baseline not in labels:
        raise SsdcompareError(
            f"baseline {baseline!r} is not among the devices: {', '.join(labels)}"
        )
    jobs = list(dict.fromkeys(summary["job"]))
    table = summary.pivot_table(
        index="job", columns="label", values=column, aggfunc="first", dropna=False
    ).reindex(index=jobs, columns=labels)
    lows = summary.pivot_table(index="job", columns="label", values=f"{metric}_min",
                               aggfunc="first", dropna=False).reindex(index=jobs, columns=labels)
    highs = summary.pivot_table(index="job", columns="label", values=f"{metric}_max",
                                aggfunc="first", dropna=False).reindex(index=jobs, columns=labels)
    counts = summary.pivot_table(index="job", columns="label", values="repeats",
                                 aggfunc="first", dropna=False).reindex(index=jobs, columns=labels)
    out = pd.DataFrame(index=jobs)
    out.index.name = "job"
    for label in labels:
        out[label] = table[label]
    for label in labels:
        if label == baseline:
            continue
        out[f"{label}/{baseline}"] = table[label] / table[baseline]
        enough = (counts[label] >= 2) & (counts[baseline] >= 2)
        overlap = (lows[label] <= highs[baseline]) & (lows[baseline] <= highs[label])
        out[f"{label} significant"] = (~overlap).where(enough).astype("boolean")
    return out


def export(paths: Iterable[str | Path], output: str | Path, summary: bool = False) -> int:
    """Write the frame (or the per-job summary) of results folders to CSV or Parquet.

    Returns the number of rows written.
    """
    frame = load(list(paths))
    if summary:
        frame = job_summary(frame)
    target = Path(output)
    suffix = target.suffix.lower()
    if suffix == ".csv":
        text = frame.to_csv(index=False)
        write_atomic(target, text)
    elif suffix == ".parquet":
        try:
            data = frame.to_parquet(index=False)
        except ImportError:
            raise SsdcompareError(
                "Parquet export needs pyarrow: `pip install pyarrow`, or export to .csv"
            ) from None
        write_atomic(target, data)
    else:
        raise SsdcompareError(f"cannot export to {target.name}: use a .csv or .parquet name")
    return len(frame)
