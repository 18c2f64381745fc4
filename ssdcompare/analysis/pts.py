"""SNIA PTS tests read back (ssdcompare.suite.pts): how each drive was prepared (purged,
filled), each group's rounds until steady (`rounds.json`), and the tables each test reports,
made of its measurement window's figures (`ssdcompare.pts_tables`).

A job's figure is the mean over its group's window rounds (the frame's `ss_window`, as
`job_summary` averages them): IOPS, bandwidth, mean latency, p99.9 and p99.99 (each round's
worst direction, then the mean of the rounds); its maximum latency is the highest of the
window's rounds. A group that never got steady has its last rounds as its window, and says
so.

    tables = ssdcompare.pts_tables("results/20261127-pts-iops")
    tables.steady()        # a row per device and group: steady after N rounds, the window
    tables.iops()          # IOPS test: block size x read/write mix, per device
    tables.throughput()    # MB/s written and read per block size
    tables.latency()       # mean, p99.9, p99.99 and maximum latency per block size and mix
    tables.dirth()         # DIRTH: threads x queue depth of IOPS (or mean latency)
    tables.dirth_answers() # the most IOPS with a mean latency under 5 ms, per device
    tables.saturation()    # WSAT: fresh and settled IOPS, and the drop, per device
    tables.recovery()      # HIR: each idle time's bursts against the baseline before it
    tables.settled()       # XSR: each segment's settled bandwidth and how long it took

The tests read over time (wsat, hir, xsr) keep each device's series (`series`: its group that
runs once, from fio's time-series logs: ssdcompare.analysis.ptstime).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ssdcompare.analysis.compare import baseline_label
from ssdcompare.analysis.frame import known_true, load
from ssdcompare.analysis.ptstime import (
    TIME_TESTS,
    DeviceSeries,
    Recovery,
    Saturation,
    Settled,
    device_series,
    recovery,
    saturation,
    settled,
)
from ssdcompare.analysis.runrows import checked_rounds_record
from ssdcompare.analysis.summary import in_windows, job_summary
from ssdcompare.errors import SsdcompareError
from ssdcompare.results.models import FillRecord, PurgeRecord, RoundsRecord
from ssdcompare.results.store import ResultsDir, unique_folders
from ssdcompare.suite.pts import PtsSpec, RoundGroup
from ssdcompare.target.devices import Target
from ssdcompare.units import format_bytes, format_count, format_latency, format_rate

# the PTS's ceiling for a useful mean response time in the DIRTH test
DIRTH_LIMIT_US = 5000.0
DIRTH_LIMIT_WORDS = f"{DIRTH_LIMIT_US / 1000:g} ms"
# the fewest I/Os, in the direction a latency percentile is taken from, that back it: below
# 1/(1 - p) I/Os the p-th percentile is about the largest latency seen, not a percentile
TAIL_IOS = {"lat_p999_us": 1000, "lat_p9999_us": 10000}
# rw values whose read share is rwmixread (fio's default 50 where none is given)
_MIXED = {"randrw", "rw", "readwrite"}
_ALL_READ = {"read", "randread"}
_ALL_WRITE = {"write", "randwrite"}


@dataclass(frozen=True)
class GroupRounds:
    """A PTS group's rounds on one device (its `rounds.json`), with the rule they were judged
    by (`limits`: the window's size, the range and slope excursion allowed, the most rounds).
    `rounds` are the tracking variable's figures: IOPS, bytes/s (`bw`) or µs (`lat_mean`)."""

    sweep: str
    target: str
    label: str
    test: str
    group: str
    limits: RoundGroup
    record: RoundsRecord | None  # None: no record of its rounds (not run yet, or lost)
    # why the device's test did not run: its purge failed (the purge record's words)
    skipped: str | None = None
    # why its record is not used: refused, damaged, or at odds with itself (its runs are
    # damaged in the frame: no figure of them is shown)
    unusable: str | None = None

    @property
    def rounds(self) -> list[float | None]:
        return list(self.record.rounds) if self.record is not None else []

    @property
    def window(self) -> list[int]:
        return list(self.record.window) if self.record is not None else []

    @property
    def attained(self) -> bool:
        return self.record is not None and self.record.attained

    @property
    def words(self) -> str:
        """Where the group stands: steady after N rounds, NOT steady in N rounds, ran once..."""
        record, count = self.record, len(self.rounds)
        if record is None and self.skipped is not None:
            return f"not run: {self.skipped}"
        if record is None and self.unusable is not None:
            return f"its rounds cannot be told apart: {self.unusable}; its runs are left out"
        if not self.limits.rounds:
            return "ran once (no tracking variable)" if record is not None else "not run yet"
        if record is None:
            return "no record of its rounds (not run yet, or rounds.json is missing)"
        if record.error:
            return f"stopped after {count} rounds: {record.error}"
        if record.attained:
            return f"steady after {count} rounds"
        if record.done:
            return f"NOT steady in {count} rounds"
        return f"not steady yet after {count} rounds (the sweep stopped before its last round)"

    def window_words(self) -> str | None:
        """The window's rounds, mean, range and slope excursion against the limits; None
        without a window."""
        record = self.record
        if record is None or not record.window or record.window_mean is None:
            return None
        first, last = record.window[0], record.window[-1]
        mean = metric_words(self.metric, record.window_mean)
        return (f"window rounds {first}–{last}: mean {mean}, range "
                f"{_pct(record.window_range_pct)} (at most {self.limits.range_pct:g} %), "
                f"slope excursion {_pct(record.window_slope_pct)} (at most "
                f"{self.limits.slope_pct:g} %)")  # fmt: skip

    @property
    def metric(self) -> str:
        return self.record.metric if self.record is not None else self.limits.metric

    @property
    def track(self) -> str | None:
        return self.limits.track


def _pct(value: float | None) -> str:
    return "unknown" if value is None else f"{value:.1f} %"


def metric_words(metric: str, value: float | None) -> str:
    """A tracking variable's figure for people: IOPS, MB/s or a latency."""
    if value is None or not math.isfinite(value):
        return "unknown"
    if metric == "bw":
        return format_rate(value)
    if metric == "lat_mean":
        return format_latency(value)
    return f"{format_count(value)} IOPS"


@dataclass(frozen=True)
class DevicePrep:
    """How a device was prepared for a PTS test: purged (or why not), filled; the scale."""

    sweep: str
    target: str
    label: str
    test: str
    scale: float | None
    purge: PurgeRecord | None  # None: no record, so not purged (or an unreadable one)
    fill_asked: bool
    fill: FillRecord | None
    purge_unreadable: str | None = None  # why its purge.json is there but cannot be read

    @property
    def purge_words(self) -> str:
        record = self.purge
        if self.purge_unreadable is not None:  # whether it was purged is not known
            return f"purge record unreadable: {self.purge_unreadable}"
        if record is None:
            return "not purged"
        if record.purged:
            return f"purged ({record.how}): {record.detail}"
        said = record.detail if record.detail.startswith("not purged") else (
            f"not purged: {record.detail}")  # fmt: skip
        return said + (f" ({record.error})" if record.error else "")

    @property
    def skipped(self) -> str | None:
        """Why the device's test did not run, when its purge failed (the purge record's
        words: "the purge before the test failed: ..."); None otherwise."""
        record = self.purge
        if record is None or record.error is None:
            return None
        return f"the purge before the test failed: {record.error}"

    @property
    def fill_words(self) -> str:
        record = self.fill
        if not self.fill_asked:
            return "not filled (the suite asks for no fill)"
        if record is None:
            return "not filled: no record of the fill"
        if not record.ok:
            return f"fill failed: {record.error or 'see precondition/<device>/fill/'}"
        over = f"its first {record.size}" if record.size else "the whole device"
        written = f", {format_bytes(record.io_bytes)} written" if record.io_bytes else ""
        return f"filled: sequential 128 KiB writes over {over}, twice{written}"


@dataclass
class PtsTables:
    """Every PTS test in some results: the devices' preparation, each group's rounds and each
    job's window figures (`figures`: a row per device and job), with the tables each test
    reports made from them. `baseline` is the device ratios are against, first in `labels`
    (the order of devices in every table, as the report's)."""

    devices: list[DevicePrep]
    groups: list[GroupRounds]
    figures: pd.DataFrame
    labels: list[str]
    baseline: str
    # the time tests' series (wsat, hir, xsr: ssdcompare.analysis.ptstime), per device
    series: list[DeviceSeries] = field(default_factory=list)

    @property
    def tests(self) -> list[str]:
        """The PTS tests held, in the order first met."""
        return list(dict.fromkeys(d.test for d in self.devices))

    def of_test(self, test: str) -> PtsTables:
        """The part of these tables that is one PTS test's."""
        devices = [d for d in self.devices if d.test == test]
        figures = self.figures[self.figures["pts_test"] == test]
        labels = [label for label in self.labels if label in {d.label for d in devices}]
        return PtsTables(devices, [g for g in self.groups if g.test == test], figures, labels,
                         self.baseline, [s for s in self.series if s.test == test])  # fmt: skip

    def steady(self) -> pd.DataFrame:
        """A row per device and group: its rounds, whether and where it was steady, the
        window's mean, range and slope excursion with their limits."""
        return pd.DataFrame([_steady_row(g) for g in self.groups], columns=_STEADY_COLUMNS)

    def prepared(self) -> pd.DataFrame:
        """A row per device: how it was purged and filled, and the scale."""
        return pd.DataFrame([{"label": d.label, "test": d.test, "purge": d.purge_words,
                              "fill": d.fill_words, "scale": d.scale}
                             for d in self.devices])  # fmt: skip

    def iops(self) -> pd.DataFrame:
        """The IOPS test's table: a row per device and block size (largest first), a column
        per read/write mix (100/0 first), the window's mean IOPS."""
        return _pivot(self._jobs("iops"), "block size", "mix", "iops", self.labels)

    def throughput(self) -> pd.DataFrame:
        """The throughput test's table: a row per device and block size, MB/s written and
        read (the window's means)."""
        data = self._jobs("throughput")
        data = data.assign(direction=data["read_pct"].map({0: "write MB/s", 100: "read MB/s"}),
                           mb_s=data["bw_bytes"] / 1e6)  # fmt: skip
        return _pivot(data.dropna(subset=["direction"]), "block size", "direction", "mb_s",
                      self.labels, ascending=True)  # fmt: skip

    def latency(self) -> pd.DataFrame:
        """The latency test's table: a row per device, block size and read/write mix; the
        window's mean, p99.9 and p99.99 latency (means of its rounds) and its maximum, µs;
        for each percentile the fewest I/Os a window round had in the direction it was taken
        from, and whether they back it (TAIL_IOS: False, and the figure is about the largest
        latency seen rather than that percentile; NA when the count is unknown)."""
        data = ordered(self._jobs("latency"), self.labels)
        table = data.set_index(["label", "block size", "mix"])[list(LATENCY_COLUMNS)]
        return table.rename(columns=LATENCY_COLUMNS)

    def dirth(self, value: str = "iops") -> pd.DataFrame:
        """The DIRTH test's table of `value` ("iops" or "lat_mean_us"): a row per device and
        thread count, a column per queue depth."""
        if value not in ("iops", "lat_mean_us"):
            raise SsdcompareError(f"dirth({value!r}): give 'iops' or 'lat_mean_us'")
        data = self._jobs("dirth").rename(columns={"numjobs": "threads", "iodepth": "QD"})
        return _pivot(data, "threads", "QD", value, self.labels, ascending=True,
                      rows_ascending=True)  # fmt: skip

    def dirth_answers(self) -> list[DirthAnswer]:
        """Per device, the most IOPS whose mean latency stays under 5 ms (DIRTH_LIMIT_US)."""
        data = self._jobs("dirth")
        return [dirth_answer(label, data[data["label"] == label]) for label in self.labels
                if (data["label"] == label).any()]  # fmt: skip

    def saturation(self) -> list[Saturation]:
        """Write saturation per device: fresh and settled IOPS, the drop, what was written."""
        return [saturation(device) for device in self.series_of("wsat")]

    def recovery(self) -> dict[str, list[Recovery]]:
        """Host idle recovery per device: each idle-time segment's bursts against the
        baseline before it."""
        return {d.label: recovery(d, self.steady_mean(d)) for d in self.series_of("hir")}

    def settled(self) -> dict[str, list[Settled]]:
        """Cross stimulus recovery per device: each segment's settled bandwidth and when."""
        return {device.label: settled(device) for device in self.series_of("xsr")}

    def steady_mean(self, device: DeviceSeries) -> float | None:
        """The window mean of the device's group in rounds (HIR's steady group), if any."""
        found = [g.record.window_mean for g in self.groups
                 if g.sweep == device.sweep and g.label == device.label and g.test == device.test
                 and g.limits.rounds and g.record is not None]  # fmt: skip
        return found[0] if found else None

    def series_of(self, test: str) -> list[DeviceSeries]:
        """The devices' series of one time test (wsat, hir, xsr)."""
        found = [device for device in self.series if device.test == test]
        if not found:
            held = ", ".join(self.tests) or "none"
            raise SsdcompareError(f"no PTS {test} test in these results (held: {held}): "
                                  f"give the results of a pts-{test} suite")  # fmt: skip
        return found

    def _jobs(self, test: str) -> pd.DataFrame:
        """The window figures of one test's finished jobs."""
        data = self.figures[(self.figures["pts_test"] == test) & (self.figures["status"] == "ok")]
        if data.empty:
            held = ", ".join(self.tests) or "none"
            raise SsdcompareError(f"no finished job of a PTS {test} test in these results "
                                  f"(PTS tests held: {held})")  # fmt: skip
        return data


LATENCY_COLUMNS = {"lat_mean_us": "mean µs", "lat_p999_us": "p99.9 µs",
                   "lat_p999_ios": "p99.9 I/Os", "lat_p999_backed": "p99.9 backed",
                   "lat_p9999_us": "p99.99 µs", "lat_p9999_ios": "p99.99 I/Os",
                   "lat_p9999_backed": "p99.99 backed", "lat_max_us": "max µs"}  # fmt: skip
_STEADY_COLUMNS = ["label", "test", "group", "track", "metric", "rounds", "steady", "words",
                   "window", "window_mean", "range_pct", "range_limit_pct", "slope_pct",
                   "slope_limit_pct", "max_rounds"]  # fmt: skip


def _steady_row(group: GroupRounds) -> dict[str, object]:
    record = group.record
    return {
        "label": group.label, "test": group.test, "group": group.group,
        "track": group.track, "metric": group.metric, "rounds": len(group.rounds),
        "steady": group.attained if group.limits.rounds and record is not None else pd.NA,
        "words": group.words,
        "window": (f"{group.window[0]}-{group.window[-1]}" if group.window else None),
        "window_mean": record.window_mean if record else None,
        "range_pct": record.window_range_pct if record else None,
        "range_limit_pct": group.limits.range_pct,
        "slope_pct": record.window_slope_pct if record else None,
        "slope_limit_pct": group.limits.slope_pct, "max_rounds": group.limits.max_rounds,
    }  # fmt: skip


def _pivot(data: pd.DataFrame, rows: str, columns: str, value: str, labels: list[str],
           ascending: bool = False, rows_ascending: bool = False) -> pd.DataFrame:  # fmt: skip
    """`value` per device (in the order of `labels`, the baseline first) and `rows`, a
    column per `columns`, rows and columns in the order of their numbers (block sizes
    largest first, mixes from all reads: `_order`)."""
    row_order = _order(data, rows, rows_ascending)
    column_order = _order(data, columns, ascending)
    table = data.pivot_table(index=["label", rows], columns=columns, values=value,
                             aggfunc="first", sort=False)  # fmt: skip
    held = set(data["label"])
    wanted = [(label, r) for label in [*labels, *sorted(held - set(labels))] if label in held
              for r in row_order if (label, r) in table.index]  # fmt: skip
    table = table.reindex(index=pd.MultiIndex.from_tuples(wanted, names=["label", rows]),
                          columns=column_order)  # fmt: skip
    table.columns.name = columns
    return table


def ordered(data: pd.DataFrame, labels: list[str]) -> pd.DataFrame:
    """Window figures in the order tables show them: device by device (as `labels`), block
    sizes largest first, then from all reads to all writes, then threads and depths rising."""
    position = {label: n for n, label in enumerate(labels)}
    keys = data.assign(_device=data["label"].map(position), _bs=-data["block size key"],
                       _mix=-data["mix key"])  # fmt: skip
    return data.loc[keys.sort_values(["_device", "_bs", "_mix", "numjobs", "iodepth"],
                                     kind="stable").index]  # fmt: skip


def _order(data: pd.DataFrame, name: str, ascending: bool) -> list[object]:
    """The values of column `name` in the order of their sort key (`<name> key` where the
    shown value is a label: block sizes by bytes, mixes by read share)."""
    key = f"{name} key" if f"{name} key" in data.columns else name
    pairs = data[list(dict.fromkeys([name, key]))].drop_duplicates(subset=[name])
    return pairs.sort_values(key, ascending=ascending)[name].tolist()


@dataclass(frozen=True)
class DirthAnswer:
    """A device's answer in the DIRTH test: its most IOPS at a mean latency under 5 ms, with
    the threads and queue depth that gave them; without one, its lowest mean latency."""

    label: str
    iops: float | None
    threads: int | None
    qd: int | None
    lat_mean_us: float | None
    verdict: str | None
    lowest_us: float | None  # the lowest mean latency of any point (when none stayed under)

    @property
    def words(self) -> str:
        limit = DIRTH_LIMIT_WORDS
        if self.iops is None:
            lowest = (
                ""
                if self.lowest_us is None
                else (f" (the lowest was {format_latency(self.lowest_us)})")
            )
            return f"{self.label}: no point stayed under {limit} mean latency{lowest}"
        said = (f"{self.label}: the most IOPS with mean latency under {limit}: "
                f"{format_count(self.iops)} IOPS at {self.threads} "
                f"thread{'s' if self.threads != 1 else ''} × QD {self.qd} "
                f"({format_latency(self.lat_mean_us)} mean)")  # fmt: skip
        if self.verdict and self.verdict != "drive":
            said += f"; that point's verdict: {self.verdict}"
        return said


def dirth_answer(label: str, points: pd.DataFrame) -> DirthAnswer:
    """The answer of one device's DIRTH points (its finished jobs' window figures)."""
    known = points.dropna(subset=["iops", "lat_mean_us"])
    under = known[known["lat_mean_us"] < DIRTH_LIMIT_US]
    if under.empty:
        lowest = float(known["lat_mean_us"].min()) if not known.empty else None
        return DirthAnswer(label, None, None, None, None, None, lowest)
    best = under.loc[under["iops"].idxmax()]
    verdict = best.get("verdict")
    return DirthAnswer(label, float(best["iops"]), int(best["numjobs"]), int(best["iodepth"]),
                       float(best["lat_mean_us"]), verdict if isinstance(verdict, str) else None,
                       None)  # fmt: skip


def pts_tables(
    results: pd.DataFrame | str | Path | Iterable[str | Path], baseline: str | None = None
) -> PtsTables:
    """The PTS tests in results folders, or in a frame of `ssdcompare.load` (whose folders
    are read for the rounds' records): the devices' preparation, each group's rounds and the
    tables of the window figures (see the module), ratios against `baseline` (the first
    device unless named).

        tables = ssdcompare.pts_tables("results/20261127-pts-latency")
        tables.latency()
    """
    if isinstance(results, pd.DataFrame):
        frame = results
        folders = unique_folders([p for p in dict.fromkeys(frame.get("sweep", [])) if
                                  isinstance(p, str)])  # fmt: skip
    else:
        folders = unique_folders(results)
        frame = load(folders) if folders else pd.DataFrame()
    if not folders:
        raise SsdcompareError("give at least one results folder (or the frame ssdcompare.load "
                              "made of them): a PTS test's rounds are recorded there")  # fmt: skip
    sweeps = [ResultsDir.open(folder) for folder in folders]
    found = pts_results(frame, sweeps, baseline)
    if found is None:
        suites = ", ".join(dict.fromkeys(s.manifest.suite.name for s in sweeps))
        raise SsdcompareError(f"these results hold no SNIA PTS test (suites: {suites}): give "
                              "the results of a pts-* suite")  # fmt: skip
    return found


def pts_results(frame: pd.DataFrame, sweeps: list[ResultsDir],
                baseline: str | None = None) -> PtsTables | None:  # fmt: skip
    """The PTS tests among `sweeps` (whose runs `frame` holds, labelled), or None without
    any: what the report's PTS sections and `pts_tables` are made of."""
    devices: list[DevicePrep] = []
    groups: list[GroupRounds] = []
    series: list[DeviceSeries] = []
    for results in sweeps:
        pts = results.manifest.suite.pts
        if pts is None:
            continue
        for target in results.manifest.targets:
            label = _label_of(frame, results, target)
            if label is None:
                continue
            prep = _prep(results, target, label, pts)
            devices.append(prep)
            groups += [_group_rounds(results, target.name, label, pts, group, prep.skipped)
                       for group in pts.groups]  # fmt: skip
            if pts.test in TIME_TESTS:
                series.append(device_series(results, target, label, pts))
    if not devices:
        return None
    mine = frame[frame["pts_test"].notna()] if "pts_test" in frame.columns else frame.iloc[:0]
    labels = list(dict.fromkeys(d.label for d in devices))
    chosen = baseline_label(labels, baseline)
    labels = [chosen, *[label for label in labels if label != chosen]]  # the baseline first
    return PtsTables(devices, groups, window_figures(mine, chosen, groups), labels, chosen,
                     series)  # fmt: skip


def _label_of(frame: pd.DataFrame, results: ResultsDir, target: Target) -> str | None:
    """The label the frame gives a sweep's target; None when it has no run there."""
    mine = frame[frame["sweep"] == str(results.path)]
    if target.host is not None and not target.host.local:
        rows = mine[(mine["device"] == target.device) & (mine["host"] == target.host.name)]
    else:
        rows = mine[mine["device"].isin({target.name, target.device})]
    return str(rows["label"].iloc[0]) if not rows.empty else None


def _prep(results: ResultsDir, target: Target, label: str, pts: PtsSpec) -> DevicePrep:
    manifest = results.manifest
    asked = "fill" in manifest.precondition
    purge, unreadable = results.purge_reading(target.name)
    return DevicePrep(
        sweep=str(results.path), target=target.name, label=label, test=pts.test,
        scale=manifest.suite.scale, purge=purge, fill_asked=asked,
        fill=results.fill_record(target.name) if asked else None, purge_unreadable=unreadable,
    )  # fmt: skip


def _group_rounds(results: ResultsDir, target: str, label: str, pts: PtsSpec,
                  group: RoundGroup, skipped: str | None) -> GroupRounds:  # fmt: skip
    record, unusable = checked_rounds_record(results, target, group)
    return GroupRounds(str(results.path), target, label, pts.test, group.name, group,
                       record, skipped, unusable)  # fmt: skip


def window_figures(frame: pd.DataFrame, baseline: str, groups: list[GroupRounds]) -> pd.DataFrame:
    """A row per device and job of the PTS runs in `frame`: how the job was made (block size,
    read share, threads, queue depth), its window figures (see the module), what limited it,
    and IOPS and bandwidth against `baseline`'s same job (where the jobfiles are the same)."""
    if frame.empty:
        return pd.DataFrame(columns=_FIGURE_COLUMNS)
    summary = job_summary(frame, baseline)
    keys = ["sweep", "label", "job"]
    tails = _p9999(frame).rename("lat_p9999_us")
    summary = summary.merge(tails.reset_index(), on=keys, how="left")
    firsts = frame.drop_duplicates(keys).set_index(keys)
    summary["pts_test"] = [firsts.at[tuple(k), "pts_test"] for k in summary[keys].to_numpy()]
    figures = pd.DataFrame({
        "pts_test": summary["pts_test"], "pts_group": summary["pts_group"],
        "sweep": summary["sweep"], "label": summary["label"], "job": summary["job"],
        "rw": summary["rw"], "bs_bytes": summary["bs_bytes"], "numjobs": summary["numjobs"],
        "iodepth": summary["iodepth"], "status": summary["status"], "error": summary["error"],
        "rounds": summary["repeats"], "iops": summary["iops_mean"],
        "bw_bytes": summary["bw_bytes_mean"], "lat_mean_us": summary["lat_mean_us_mean"],
        "lat_p999_us": summary["lat_p999_us_mean"], "lat_p9999_us": summary["lat_p9999_us"],
        "lat_max_us": summary["lat_max_us_max"], "verdict": summary["verdict"],
        "verdict_reason": summary["verdict_reason"], "comparable": summary["comparable"],
    })  # fmt: skip
    figures["read_pct"] = [read_share(rw, mix) for rw, mix in zip(summary["rw"],
                           summary["rwmixread"], strict=True)]  # fmt: skip
    figures["window"] = _windows(figures, groups)
    _with_tail_counts(figures, frame)
    return _described(_with_ratios(figures, baseline))


_FIGURE_COLUMNS = ["pts_test", "pts_group", "sweep", "label", "job", "rw", "bs_bytes",
                   "numjobs", "iodepth", "status", "error", "rounds", "iops", "bw_bytes",
                   "lat_mean_us", "lat_p999_us", "lat_p9999_us", "lat_max_us", "verdict",
                   "verdict_reason", "comparable", "read_pct", "window", "lat_p999_ios",
                   "lat_p999_backed", "lat_p9999_ios", "lat_p9999_backed", "iops_ratio",
                   "bw_ratio", "block size", "block size key", "mix", "mix key"]  # fmt: skip


def read_share(rw: object, rwmixread: object) -> float | None:
    """A job's share of reads in %: its rwmixread for a mix (fio's 50 without one), 100 for
    reads, 0 for writes; None for anything else (trims, ...)."""
    if rw in _MIXED:
        return 50.0 if rwmixread is None or pd.isna(rwmixread) else float(rwmixread)
    if rw in _ALL_READ:
        return 100.0
    return 0.0 if rw in _ALL_WRITE else None


def _p9999(frame: pd.DataFrame) -> pd.Series:
    """Each job's p99.99 latency over its window: each finished run's worst direction
    (unknown when a direction that did I/O has none), then the mean of the runs."""
    data = in_windows(frame)
    data = data[(data["status"] == "ok") & (data["direction"] != "sync")]
    busy = data["total_ios"].fillna(1) != 0
    unknown = data["lat_p9999_us"].isna() & busy
    runs = ["sweep", "label", "job", "repeat"]
    worst = data["lat_p9999_us"].groupby([data[k] for k in runs], sort=False).max()
    gaps = unknown.groupby([data[k] for k in runs], sort=False).any()
    worst = worst.where(~gaps)
    return worst.groupby(level=["sweep", "label", "job"], sort=False).mean()


def _with_tail_counts(figures: pd.DataFrame, frame: pd.DataFrame) -> None:
    """Each job's I/Os behind its p99.9 and p99.99 (`<column>_ios`: the fewest of its window
    rounds, each round's in the direction its figure is taken from) and whether they back
    the figure (`<column>_backed`, TAIL_IOS; NA when the count is unknown). Each round's
    percentile comes from that round's I/Os alone, so the rounds' mean is backed no better
    than its thinnest round."""
    keys = ["sweep", "label", "job"]
    for column, needed in TAIL_IOS.items():
        fewest = _tail_ios(frame, column)
        counts = [fewest.get(tuple(k), math.nan) for k in figures[keys].to_numpy()]
        ios = pd.Series(counts, index=figures.index, dtype="float64")
        figures[column.replace("_us", "_ios")] = ios.round().astype("Int64")
        figures[column.replace("_us", "_backed")] = (ios >= needed).astype("boolean").where(
            ios.notna(), pd.NA)  # fmt: skip


def _tail_ios(frame: pd.DataFrame, column: str) -> pd.Series:
    """Per job, the fewest I/Os of a finished window round in the direction whose `column`
    is the round's figure (its worst: the highest)."""
    data = in_windows(frame)
    data = data[(data["status"] == "ok") & (data["direction"] != "sync")]
    data = data[data[column].notna() & (data["total_ios"].fillna(1) != 0)]
    runs = ["sweep", "label", "job", "repeat"]
    worst = data.sort_values(column, ascending=False, kind="stable").drop_duplicates(runs)
    return worst.groupby(["sweep", "label", "job"], sort=False)["total_ios"].min()


def _windows(figures: pd.DataFrame, groups: list[GroupRounds]) -> list[str | None]:
    """Each job's window rounds in words ("17–21"), from its group's record."""
    found = {(g.sweep, g.label, g.group): g.window for g in groups}
    said = []
    for sweep, label, group in figures[["sweep", "label", "pts_group"]].to_numpy():
        window = found.get((sweep, label, group))
        said.append(f"{window[0]}–{window[-1]}" if window else None)
    return said


def _with_ratios(figures: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """IOPS and bandwidth against the baseline's same job of the same test, where the two
    ran the same jobfile (`comparable`); NaN elsewhere."""
    base = figures[figures["label"] == baseline].set_index(["pts_test", "job"])
    for metric, ratio in (("iops", "iops_ratio"), ("bw_bytes", "bw_ratio")):
        theirs = [base[metric].get((test, job), math.nan) for test, job in
                  figures[["pts_test", "job"]].to_numpy()]  # fmt: skip
        values = figures[metric].astype("float64") / pd.Series(theirs, index=figures.index,
                                                                dtype="float64")  # fmt: skip
        same = known_true(figures["comparable"].astype("boolean"))
        figures[ratio] = values.where(same & (figures["label"] != baseline))
    return figures


def _described(figures: pd.DataFrame) -> pd.DataFrame:
    """The figures with the words tables show for their block size and mix, and the keys
    they sort by."""
    figures["block size"] = figures["bs_bytes"].map(
        lambda size: format_bytes(size) if pd.notna(size) else "?"
    )
    figures["block size key"] = figures["bs_bytes"].astype("float64")
    figures["mix"] = figures["read_pct"].map(
        lambda share: f"{share:g}/{100 - share:g}" if share is not None and pd.notna(share)
        else "?")  # fmt: skip
    figures["mix key"] = figures["read_pct"].astype("float64")
    return figures
