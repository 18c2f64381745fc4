"""The answer at a latency target (`--slo p99=1ms`): for each device and latency-vs-load curve,
the highest IOPS at which that latency stays within the target.

A curve's points are its paced runs that reached their load (`rate_reached`), in the order
of their share of the maximum; a run's IOPS are its directions added, its latency the worst
direction's (the I/O-weighted mean for `mean`). Walking up the curve, the first point past
the target and the one before it bracket the answer, interpolated between them linearly in
IOPS and logarithmically in latency (latency grows about exponentially as load nears what a
drive can take). A curve whose lowest point is already past the target never meets it; one
whose every point meets it meets it "at least" at its highest point.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import pandas as pd

from ssdcompare.analysis.frame import frame_given, is_true, label_devices
from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.result.models import DISTRIBUTION_PERCENTILES
from ssdcompare.judge.stats import compare
from ssdcompare.units import format_count, format_latency, parse_latency_us

# the latencies a target may be set on, and the frame column each is read from
METRICS = {"p50": "lat_p50_us", "p99": "lat_p99_us", "p99.9": "lat_p999_us",
           "p99.99": "lat_dist_us", "mean": "lat_mean_us"}  # fmt: skip
_SLO_RE = re.compile(r"^\s*([a-z0-9.]+)\s*(?:=|<=|≤|<)\s*(.+?)\s*$", re.IGNORECASE)
_P9999 = DISTRIBUTION_PERCENTILES.index(99.99)

# the state of an answer: within the target up to an interpolated load, at every point,
# at no point, or no curve point to tell from
MET, AT_LEAST, NEVER, NO_POINTS = "met", "at least", "never", "no points"
VARIES = "varies"  # repeats that answered differently


@dataclass(frozen=True)
class Slo:
    """A latency target: a latency (METRICS) that must stay at or below `limit_us`."""

    metric: str
    limit_us: float

    @property
    def label(self) -> str:
        """ "p99 ≤ 1.00 ms"."""
        return f"{self.metric} ≤ {format_latency(self.limit_us)}"


def parse_slo(text: str) -> Slo:
    """`p99=1ms`, `p99.9<=500us`, `mean=200us` as an Slo; SsdcompareError saying what a
    target looks like for anything else."""
    match = _SLO_RE.match(text)
    metric = match.group(1).lower() if match else ""
    metric = {"p999": "p99.9", "p9999": "p99.99", "avg": "mean", "median": "p50"}.get(
        metric, metric
    )
    if match is None or metric not in METRICS:
        raise SsdcompareError(
            f"--slo {text!r}: give a latency and its target, e.g. p99=1ms; the latency is one "
            f"of {', '.join(METRICS)}"
        )
    try:
        limit = parse_latency_us(match.group(2))
    except ValueError as err:
        raise SsdcompareError(f"--slo {text!r}: {err}") from None
    return Slo(metric, limit)


def parse_slos(given: str | Slo | list[str | Slo] | tuple[str | Slo, ...] | None) -> list[Slo]:
    """Targets as given to the API or the command line: one, or several, each a string or
    an Slo; a string may hold several, comma-separated."""
    if given is None:
        return []
    items = [given] if isinstance(given, str | Slo) else list(given)
    found: list[Slo] = []
    for item in items:
        if isinstance(item, Slo):
            found.append(item)
        else:
            parts = str(item).split(",")
            if not any(part.strip() for part in parts):
                raise SsdcompareError(f"--slo {item!r}: give a latency and its target, e.g. "
                                      "p99=1ms")  # fmt: skip
            found += [parse_slo(part) for part in parts if part.strip()]
    return list(dict.fromkeys(found))


# a run, and (without job and repeat) a curve: its drive state's pass is a curve of its own
_RUN_KEYS = ["sweep", "host", "device", "label", "curve", "state", "job", "repeat"]


def curve_points(frame: pd.DataFrame) -> pd.DataFrame:
    """Every paced run of a curve as one row (its directions combined, see run_points)."""
    if "curve" not in frame.columns:
        return pd.DataFrame(columns=[*_RUN_KEYS, "curve_pct", "iops"])
    return run_points(frame[frame["curve"].notna() & frame["curve_pct"].notna()])


def run_points(frame: pd.DataFrame) -> pd.DataFrame:
    """Every finished run of `frame` as one row (its directions combined): IOPS added, each
    latency of METRICS the worst direction's (mean: weighted by I/O count), with its queue
    depth, share, load, the share of it reached and whether that reached it, its verdict
    and whether any direction was CPU-bound. Group members' own rows are left out."""
    rows = frame[(frame["direction"] != "sync") & (frame["status"] == "ok")]
    if "member" in rows.columns:
        rows = rows[rows["member"].isna()]
    runs = []
    present = [k for k in _RUN_KEYS if k in rows.columns]
    for keys, run in rows.groupby(present, sort=False, dropna=False):
        runs.append(_combined(dict(zip(present, keys, strict=True)), run))
    return pd.DataFrame(runs, columns=None if runs else [*_RUN_KEYS, "curve_pct", "iops"])


def _combined(keys: dict[str, object], run: pd.DataFrame) -> dict[str, object]:
    ios = run["total_ios"].astype("float64")
    first = run.iloc[0]
    found: dict[str, object] = dict(keys)
    found.update(
        iodepth=first.get("iodepth"),
        curve_pct=float(first["curve_pct"]),
        iops=float(run["iops"].sum(min_count=1)),
        rate_asked_iops=first["rate_asked_iops"],
        rate_reached_pct=first.get("rate_reached_pct"),
        rate_reached=first["rate_reached"],
        verdict=first.get("verdict"),
        cpu_bound=bool(run.get("cpu_bound", pd.Series(dtype="boolean")).eq(True).any()),
        lat_mean=float((run["lat_mean_us"] * ios).sum() / ios.sum()) if ios.sum() else math.nan,
    )
    for metric, column in METRICS.items():
        if metric == "mean":
            continue
        values = run[column].map(_p9999) if column == "lat_dist_us" else run[column]
        found[f"lat_{metric}"] = float(pd.to_numeric(values, errors="coerce").max())
    return found


def _p9999(distribution: object) -> float:
    if isinstance(distribution, tuple | list) and len(distribution) > _P9999:
        return float(distribution[_P9999])
    return math.nan


@dataclass(frozen=True)
class Answer:
    """One curve's answer at one target."""

    iops: float  # NaN when it never met it
    status: str  # MET, AT_LEAST, NEVER or NO_POINTS
    below: str | None  # the bracketing points in words: "50 %: 33.8k IOPS, p99 432 µs"
    above: str | None
    below_pct: float
    above_pct: float
    note: str | None = None  # what the answer rests on that is not the drive's own


def answer(points: pd.DataFrame, slo: Slo) -> Answer:
    """The highest IOPS at which one curve's `points` (one device, curve and repeat; see
    curve_points) stay within `slo`: see the module."""
    ordered = points.sort_values("curve_pct")
    usable = ordered[ordered["rate_reached"].map(is_true)]
    latency = usable[f"lat_{slo.metric}"].to_numpy(dtype="float64")
    iops = usable["iops"].to_numpy(dtype="float64")
    known = [i for i in range(len(usable)) if latency[i] == latency[i] and latency[i] > 0]
    if not known:
        return Answer(math.nan, NO_POINTS, None, None, math.nan, math.nan)
    words = [_point_words(usable.iloc[i], slo) for i in range(len(usable))]
    shares = usable["curve_pct"].to_numpy(dtype="float64")
    for step, index in enumerate(known):
        if latency[index] <= slo.limit_us:
            continue
        if step == 0:
            return Answer(math.nan, NEVER, None, words[index], math.nan, shares[index],
                          _limited(usable, [index]))  # fmt: skip
        low = known[step - 1]
        found = _interpolated(iops[low], latency[low], iops[index], latency[index], slo.limit_us)
        return Answer(found, MET, words[low], words[index], shares[low], shares[index],
                      _limited(usable, [low, index]))  # fmt: skip
    top = known[-1]
    short = ordered[(ordered["curve_pct"] > shares[top]) & ~ordered["rate_reached"].map(is_true)]
    note = "; ".join(filter(None, [
        _limited(usable, [top]),
        f"the points above ({', '.join(f'{p:g} %' for p in short['curve_pct'])}) could not "
        "reach their load" if len(short) else None,
    ]))  # fmt: skip
    return Answer(float(iops[known].max()), AT_LEAST, words[top], None, shares[top], math.nan,
                  note or None)  # fmt: skip


def _limited(points: pd.DataFrame, positions: list[int]) -> str | None:
    """The answer's points that measured something besides the drive, in words: "the 90 %
    point was cpu-limited"; None when every one measured the drive."""
    said = []
    for position in positions:
        point = points.iloc[position]
        verdict = point.get("verdict")
        if isinstance(verdict, str) and verdict not in ("drive", "unknown"):
            said.append(f"the {point['curve_pct']:g} % point was {verdict}-limited"
                        if verdict in ("cpu", "host") else
                        f"the {point['curve_pct']:g} % point was {verdict}")  # fmt: skip
    return "; ".join(said) or None


def _interpolated(x1: float, y1: float, x2: float, y2: float, limit: float) -> float:
    """The IOPS between (x1, y1) and (x2, y2) at which the latency reaches `limit`: linear in
    IOPS, logarithmic in latency. A higher point that gave fewer IOPS (noise) adds nothing."""
    if x2 <= x1 or y2 <= y1:
        return x1
    share = (math.log(limit) - math.log(y1)) / (math.log(y2) - math.log(y1))
    return x1 + (x2 - x1) * min(max(share, 0.0), 1.0)


def _point_words(point: pd.Series, slo: Slo) -> str:
    """ "50 %: 33.8k IOPS, p99 432 µs"."""
    latency = point[f"lat_{slo.metric}"]
    return (f"{point['curve_pct']:g} %: {format_count(point['iops'])} IOPS, {slo.metric} "
            f"{format_latency(latency)}")  # fmt: skip


SLO_COLUMNS = ("slo", "slo_iops", "slo_status", "slo_below", "slo_above", "slo_below_pct",
               "slo_above_pct", "slo_note")  # fmt: skip


def slo_table(frame: pd.DataFrame, slos: list[Slo]) -> pd.DataFrame:
    """Every device's answer for every curve, repeat and target: one row each, with the
    bracketing points named (SLO_COLUMNS); empty when the frame holds no curve."""
    points = curve_points(frame)
    if "state" not in points.columns:
        points["state"] = None
    rows = []
    if len(points):
        keys = [k for k in _RUN_KEYS if k != "job"]
        for group, curve in points.groupby(keys, sort=False, dropna=False):
            for slo in slos:
                found = answer(curve, slo)
                rows.append({**dict(zip(keys, group, strict=True)), "slo": slo.label,
                             "slo_iops": found.iops, "slo_status": found.status,
                             "slo_below": found.below, "slo_above": found.above,
                             "slo_below_pct": found.below_pct,
                             "slo_above_pct": found.above_pct,
                             "slo_note": found.note})  # fmt: skip
    columns = [k for k in _RUN_KEYS if k != "job"] + list(SLO_COLUMNS)
    return pd.DataFrame(rows, columns=columns)


def slo_summary(frame: pd.DataFrame, slos: list[Slo], baseline: str | None) -> pd.DataFrame:
    """slo_table with its repeats taken together: a row per device, curve (and drive state)
    and target. When the repeats agree: their state, the mean of their answers (`slo_iops`)
    and the first one's bracketing points; when they do not, state "varies", no figure, and
    `slo_note` says how many met the target. Against the baseline label, the ratio and what
    it is (`slo_ratio_kind`; see _against), with its confidence interval and p-value where
    both have 3 or more repeats."""
    table = slo_table(frame, slos)
    keys = ["sweep", "host", "device", "label", "curve", "state", "slo"]
    rows = [_repeats_together(dict(zip(keys, group, strict=True)), runs.sort_values("repeat"))
            for group, runs in table.groupby(keys, sort=False, dropna=False)]  # fmt: skip
    columns = [
        *keys,
        "slo_iops",
        "slo_status",
        "slo_repeats",
        "slo_iops_repeats",
        "slo_below",
        "slo_above",
        "slo_below_pct",
        "slo_above_pct",
        "slo_note",
    ]
    summary = pd.DataFrame(rows, columns=columns)
    _against(summary, baseline)
    return summary


def _repeats_together(keys: dict[str, object], runs: pd.DataFrame) -> dict[str, object]:
    """One device's answers of every repeat at one target as one row (see slo_summary)."""
    states = list(runs["slo_status"])
    values = [float(v) for v in runs["slo_iops"] if v == v]
    first = runs.iloc[0]
    found = {**keys, "slo_repeats": len(runs), "slo_iops_repeats": tuple(runs["slo_iops"])}
    if len(set(states)) > 1:
        counts = ", ".join(f"{states.count(s)} {s}" for s in dict.fromkeys(states))
        return {**found, "slo_iops": math.nan, "slo_status": VARIES,
                "slo_below": None, "slo_above": None, "slo_below_pct": math.nan,
                "slo_above_pct": math.nan,
                "slo_note": f"its {len(states)} repeats disagree: {counts}"}  # fmt: skip
    notes = [n for n in dict.fromkeys(runs["slo_note"]) if isinstance(n, str)]
    return {**found, "slo_status": states[0],
            "slo_iops": sum(values) / len(values) if values else math.nan,
            **{c: first[c] for c in ("slo_below", "slo_above", "slo_below_pct",
                                     "slo_above_pct")},
            "slo_note": "; ".join(notes) or None}  # fmt: skip


# what a ratio of two answers is: a ratio, a bound on one ("at least" on one side), or none
_RATIO_KINDS = {(MET, MET): "=", (AT_LEAST, MET): "≥", (MET, AT_LEAST): "≤"}


def _against(summary: pd.DataFrame, baseline: str | None) -> None:
    """The ratio of each row's answer to the baseline label's for the same curve, state and
    target. Both answers exact: the ratio, and where repeats allow (3 or more a side) its
    confidence interval and p-value. One side "at least": the ratio is a bound (`≥`, `≤` in
    `slo_ratio_kind`), untested; both "at least", "never" or repeats that vary: none."""
    names = ("slo_ratio", "slo_ratio_ci_low", "slo_ratio_ci_high", "slo_p_value")
    found: dict[str, list[float]] = {name: [] for name in names}
    significant: list[object] = []
    kinds: list[str | None] = []
    labels = list(dict.fromkeys(summary["label"]))
    base = baseline if baseline in labels else (labels[0] if labels else None)
    index = {(r["label"], r["curve"], _state(r), r["slo"]): r for _, r in summary.iterrows()}
    for _, row in summary.iterrows():
        theirs = index.get((base, row["curve"], _state(row), row["slo"]))
        kind = None if theirs is None or row["label"] == base else _RATIO_KINDS.get(
            (row["slo_status"], theirs["slo_status"]))  # fmt: skip
        values, tested = (math.nan,) * 4, pd.NA
        if kind is not None and theirs is not None and theirs["slo_iops"] > 0:
            values = (row["slo_iops"] / theirs["slo_iops"],) + (math.nan,) * 3
            result = compare(list(row["slo_iops_repeats"]), list(theirs["slo_iops_repeats"]))
            if kind == "=" and result is not None:
                values = (result.ratio, result.ci_low, result.ci_high, result.p_value)
                tested = result.significant
        for name, value in zip(names, values, strict=True):
            found[name].append(value)
        significant.append(tested)
        kinds.append(kind if values[0] == values[0] else None)
    for name, column in found.items():
        summary[name] = pd.Series(column, index=summary.index, dtype="float64")
    summary["slo_significant"] = pd.Series(significant, index=summary.index, dtype="boolean")
    summary["slo_ratio_kind"] = kinds
    summary["slo_compared_to"] = base


def _state(row: pd.Series) -> str | None:
    """A row's drive state, None (not NaN) when it has none: a key that equals itself."""
    state = row.get("state")
    return state if isinstance(state, str) else None


def slo_sentences(answers: pd.DataFrame) -> list[str]:
    """slo_summary's rows in words, a line per curve and target: "randread-4k-qd32, p99 ≤
    1.00 ms: nvme0n1 sustains 412k IOPS (between ...); nvme1n1 291k IOPS, 0.71× nvme0n1
    (between ...)", each device's answer with the points it lies between, what never met
    the target, "at least", repeats that disagree, and what the answer rests on that is not
    the drive's own."""
    lines = []
    keys = ["curve", "state", "slo"] if "state" in answers.columns else ["curve", "slo"]
    for group, rows in answers.groupby(keys, sort=False, dropna=False):
        curve, slo = group[0], group[-1]
        state = group[1] if len(group) == 3 and isinstance(group[1], str) else None
        where = f"{curve} ({state} drive)" if state else str(curve)
        parts = [_device_words(row, first=n == 0) for n, (_, row) in enumerate(rows.iterrows())]
        lines.append(f"{where}, {slo}: " + "; ".join(parts))
    return lines


def _device_words(row: pd.Series, first: bool) -> str:
    """One device's answer in a sentence of slo_sentences."""
    label, status = row["label"], row["slo_status"]
    note = row.get("slo_note") if isinstance(row.get("slo_note"), str) else None
    if status == VARIES:
        return f"{label}: no answer ({note})"
    if status == NEVER:
        extra = f"; {note}" if note else ""
        return f"{label} never meets it (already {row['slo_above']}{extra})"
    if status == NO_POINTS or row["slo_iops"] != row["slo_iops"]:
        metric = str(row["slo"]).split(" ")[0]
        return (f"{label}: no answer (no point of its curve reached its load with a known "
                f"{metric})")  # fmt: skip
    figure = format_count(row["slo_iops"])
    if status == AT_LEAST:
        where, figure = f"every reached point meets it, up to {row['slo_below']}", (
            f"at least {figure}")  # fmt: skip
    else:
        where = f"between {row['slo_below']} and {row['slo_above']}"
    if note:
        where += f"; {note}"
    return f"{label} {'sustains ' if first else ''}{figure} IOPS{_versus(row)} ({where})"


def _versus(row: pd.Series) -> str:
    """ ", 1.42× nvme0n1, p = 0.003", ", ≥ 1.20× nvme0n1" or nothing."""
    ratio, kind = row.get("slo_ratio"), row.get("slo_ratio_kind")
    if ratio is None or ratio != ratio or not isinstance(kind, str):
        return ""
    p_value = row.get("slo_p_value")
    tested = f", p = {p_value:.2g}" if p_value is not None and p_value == p_value else ""
    bound = "" if kind == "=" else f"{kind} "
    return f", {bound}{ratio:.2f}× {row['slo_compared_to']}{tested}"


def latency_targets(
    frame: pd.DataFrame,
    slo: str | Slo | list[str | Slo],
    baseline: str | None = None,
) -> pd.DataFrame:
    """Every curve's answer at latency targets (`ssdcompare.latency_targets`): a row per
    device, curve and target ("p99=1ms", or several), with the repeats' mean answer
    (`slo_iops`), its state, the bracketing points and the ratio to `baseline` (default: the
    first device) with its significance from 3 repeats a side; see slo_summary."""
    frame = frame_given(frame, "latency_targets", "ssdcompare.load (or read_fio)")
    targets = parse_slos(slo)
    if not targets:
        raise SsdcompareError("give a latency target, e.g. slo='p99=1ms'")
    frame = label_devices(frame) if "label" not in frame.columns else frame
    if baseline is not None and baseline not in set(frame["label"]):
        raise SsdcompareError(f"baseline {baseline!r} is not one of: "
                              f"{', '.join(dict.fromkeys(frame['label']))}")  # fmt: skip
    return slo_summary(frame, targets, baseline)
