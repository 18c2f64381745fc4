"""Results over time: one result set (NEW) against an earlier one (BASE), job by job and
metric by metric, and the gate a CI job acts on (`ssdcompare compare`).

Each drive of BASE is paired with one of NEW (ssdcompare.analysis.sides). For each job both
ran, and each metric (IOPS, bandwidth, mean, p99 and p99.9 latency): the figures of both
sides, their ratio with its 95 % confidence interval and Welch's p-value on the logarithms
of the repeats (ssdcompare.judge.stats, as `job_summary` tests devices), and what limited
each side (its verdict).

Never compared, always said:
- *not comparable*: the jobfiles differ (workload hash), or what the sweeps recorded of the
  machine or the drive differs (kernel, CPU governor, firmware, PCIe link, ...; see
  `CHANGES`), unless the user names that change as the one under test (`allow_change`); a
  different fio version is never compared;
- *not judged*: a side's result was limited by the CPU, the host, a disturbance or the drive's
  thermal throttling: a change there is not the drive's;
- *only in BASE* / *only in NEW*: a job or a drive the other side lacks;
- *no result*: no successful run of the job on a side.

The gate: a regression is a change beyond a threshold (`iops < -5%`) that is also
significant (p < alpha), judged on its size alone where a side has fewer than 3 repeats.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from ssdcompare.analysis.compare import described_differences
from ssdcompare.analysis.likeness import Difference, Unit, compare_units
from ssdcompare.analysis.sides import Pair, Side, load_side, pair_drives
from ssdcompare.analysis.slo import MET, NEVER, parse_slos, slo_table
from ssdcompare.analysis.summary import job_summary
from ssdcompare.errors import SsdcompareError
from ssdcompare.judge.stats import ALPHA, compare, geometric_mean
from ssdcompare.suite.workload import curve_run_id


@dataclass(frozen=True)
class Metric:
    """A figure compared over time: its name in `--fail-if`, the summary's column."""

    name: str
    column: str
    words: str
    higher_is_better: bool


METRICS = {m.name: m for m in (
    Metric("iops", "iops", "IOPS", True),
    Metric("bw", "bw_bytes", "bandwidth", True),
    Metric("mean", "lat_mean_us", "mean latency", False),
    Metric("p99", "lat_p99_us", "p99 latency", False),
    Metric("p99.9", "lat_p999_us", "p99.9 latency", False),
    Metric("slo", "slo_iops", "IOPS within the latency target", True),
)}  # fmt: skip
# the metrics every job has (the answer at a latency target is a curve's, with --slo)
_JOB_METRICS = [m for m in METRICS.values() if m.name != "slo"]
_ALIASES = {"mbps": "bw", "mb/s": "bw", "bandwidth": "bw", "lat": "mean", "latency": "mean",
            "lat_mean": "mean", "p999": "p99.9", "p99_9": "p99.9"}  # fmt: skip

DEFAULT_GATE = ("iops < -5%", "p99 > +10%")
# verdicts whose results are not judged unless asked (`judge`): not the drive's figures
NOT_JUDGED = ("cpu", "host", "disturbed", "throttled")
# what the sweeps record of the machine and drive, by the name --allow-change gives it:
# the likeness facts (ssdcompare.analysis.likeness.FACTS) it covers
CHANGES = {
    "kernel": ("kernel",), "governor": ("CPU governor",), "firmware": ("firmware",),
    "link": ("PCIe link",), "placement": ("NUMA placement",), "scheduler": ("scheduler",),
    "queue": ("nr_requests", "write cache", "max_sectors_kb"),
    "device": ("rotational", "block size"), "machine": ("host", "CPU"),
    "drive": ("drive",),
}  # fmt: skip
_NEVER = ("fio", "ioengine")  # a different fio or engine is another measurement
# a significant change smaller than this is called the same: repeats that hardly vary (a
# rate-limited job) make a 0.2 % difference significant, which no one would act on
NEGLIGIBLE_PCT = 1.0


@dataclass(frozen=True)
class Threshold:
    """One `--fail-if`: a change of `metric` beyond `pct` (above it for ">", below for "<")."""

    metric: str
    above: bool
    pct: float

    def crossed(self, change_pct: float) -> bool:
        return change_pct > self.pct if self.above else change_pct < self.pct

    def words(self) -> str:
        return f"{self.metric} {'>' if self.above else '<'} {self.pct:+g}%"


_THRESHOLD = re.compile(r"^\s*([a-z0-9_./]+)\s*([<>])\s*([+-]?\d+(?:\.\d+)?)\s*%\s*$", re.I)


def parse_fail_if(text: str) -> Threshold:
    """`'iops < -5%'`, `'p99 > +10%'`: a metric, < or >, a change in %."""
    found = _THRESHOLD.match(text)
    if found is None:
        raise SsdcompareError(
            f"--fail-if {text!r}: write METRIC < CHANGE% or METRIC > CHANGE%, e.g. "
            f"'iops < -5%' or 'p99 > +10%'; metrics: {', '.join(METRICS)}"
        )
    name = metric_named(found.group(1), f"--fail-if {text!r}").name
    above, pct = found.group(2) == ">", float(found.group(3))
    if (pct > 0 and not above) or (pct < 0 and above) or pct <= -100:
        raise SsdcompareError(
            f"--fail-if {text!r}: '<' takes a fall (a negative change above -100%, e.g. "
            f"'{name} < -5%'), '>' a rise (a positive one, e.g. '{name} > +10%'); as given "
            "it would fail on results that did not change, or never"
        )
    return Threshold(name, above, pct)


def metric_named(given: str, where: str = "--metric") -> Metric:
    """The metric of METRICS `given` names (or an alias of it: "latency", "p999", "mb/s"),
    or an error, beginning with `where`, that lists them."""
    name = given.strip().lower()
    name = _ALIASES.get(name, name)
    if name not in METRICS:
        named = [m for m in METRICS if m != "slo" or where.startswith("--fail-if")]
        raise SsdcompareError(f"{where}: no metric {given!r}; use one of {', '.join(named)}")
    return METRICS[name]


def parse_changes(names: str | list[str] | None) -> list[str]:
    """`--allow-change kernel,firmware` as names of CHANGES, or an error listing them."""
    found = [n.lower() for n in names_given(names)]
    unknown = [n for n in found if n not in CHANGES]
    if unknown:
        raise SsdcompareError(
            f"--allow-change {', '.join(unknown)}: not a change ssdcompare records; give any "
            f"of {', '.join(CHANGES)} (a different fio or jobfile is never compared)"
        )
    return found


@dataclass
class Row:
    """One job of a pair of drives, one metric: both sides and the change."""

    base_drive: str
    new_drive: str
    job: str
    metric: str
    base: float
    new: float
    base_repeats: int
    new_repeats: int
    ratio: float  # NEW / BASE: the geometric means of their repeats
    ci_low: float  # the ratio's 95 % interval (NaN: untested)
    ci_high: float
    p_value: float  # NaN: untested (fewer than 3 repeats a side)
    base_verdict: str | None
    new_verdict: str | None
    outcome: str = ""  # see OUTCOMES
    threshold: str | None = None  # the --fail-if it crossed

    @property
    def change_pct(self) -> float:
        return (self.ratio - 1) * 100

    @property
    def tested(self) -> bool:
        return not math.isnan(self.p_value)

    @property
    def drive(self) -> str:
        return self.base_drive if self.base_drive == self.new_drive else (
            f"{self.base_drive} → {self.new_drive}")  # fmt: skip


# what a row's change is: a regression (a threshold crossed, significantly or untested),
# crossed but not significant, significantly better or worse within the gate, the same,
# untested within the gate, not judged (a side not limited by its drive), no figure
OUTCOMES = ("regression", "not significant", "better", "worse", "same", "untested",
            "not judged", "no figure")  # fmt: skip


@dataclass(frozen=True)
class Problem:
    """A job (or a whole drive) that was not compared or not judged, and why."""

    kind: str  # "not comparable", "not judged", "no result", "only in BASE", "only in NEW"
    drive: str
    job: str | None
    why: str


@dataclass
class Changes:
    """NEW against BASE: the pairs of drives, what changed between them, each job's
    figures and the gate's findings."""

    base: Side
    new: Side
    pairs: list[Pair]
    gate: list[Threshold]
    alpha: float
    strict: bool
    allowed: list[str]
    judge: list[str] = field(default_factory=list)  # verdicts of NOT_JUDGED judged too
    rows: list[Row] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    changed: dict[str, list[str]] = field(default_factory=dict)  # pair -> what changed

    @property
    def regressions(self) -> list[Row]:
        return [r for r in self.rows if r.outcome == "regression"]

    @property
    def judged(self) -> list[Row]:
        return [r for r in self.rows if r.outcome not in ("not judged", "no figure")]

    def frame(self) -> pd.DataFrame:
        """Every compared row (drive, job, metric, figures, change, p, verdicts, outcome)."""
        return pd.DataFrame([dict(vars(r), drive=r.drive, change_pct=r.change_pct,
                                  tested=r.tested) for r in self.rows])  # fmt: skip

    def problems_of(self, kind: str) -> list[Problem]:
        return [p for p in self.problems if p.kind == kind]

    @property
    def untested(self) -> bool:
        """Whether some judged change had fewer than 3 repeats a side (judged on size)."""
        return any(not r.tested for r in self.judged)

    @property
    def exit_status(self) -> int:
        """0 no regression, 1 a regression (or, strict, a job not judged), 2 nothing
        could be compared or judged."""
        if not self.judged:
            return 2
        if self.regressions or (self.strict and self.problems):
            return 1
        return 0

    def nothing_judged(self) -> str | None:
        """Why exit status 2, in words; None when something was judged."""
        if self.judged:
            return None
        empty = [side.role for side in (self.base, self.new) if not side.drives]
        if empty:
            return f"{' and '.join(empty)} holds no results (no run of any drive in its folders)"
        if not self.pairs:
            return "no drive of BASE matches one of NEW (by serial, name or --match)"
        if not self.rows:
            return "nothing comparable: no job of a drive was run the same way on both sides"
        return "nothing could be judged: no job was limited by its drive on both sides"


def compare_results(
    base: Side,
    new: Side,
    gate: list[Threshold] | None = None,
    *,
    alpha: float = ALPHA,
    strict: bool = False,
    matches: list[tuple[str, str]] | None = None,
    allow_change: list[str] | None = None,
    judge: list[str] | None = None,
    drives: list[str] | None = None,
    slo: list[str] | None = None,
) -> Changes:
    """NEW against BASE (see the module's docstring). `judge`: verdicts of NOT_JUDGED to
    judge nonetheless (a shared CI runner's results are all disturbed); `drives`: BASE's
    drives to compare (default every one); `slo`: latency targets ("p99=1ms") whose answers
    (each curve's IOPS within it, ssdcompare.analysis.slo) are compared as the metric `slo`."""
    if not 0 < alpha < 1:
        raise SsdcompareError(f"--alpha {alpha}: give a probability between 0 and 1, e.g. 0.05")
    judged = [v.lower() for v in names_given(judge)]
    unknown = [v for v in judged if v not in NOT_JUDGED]
    if unknown:
        raise SsdcompareError(f"--judge {', '.join(unknown)}: give any of {', '.join(NOT_JUDGED)}")
    gate = [parse_fail_if(t) for t in DEFAULT_GATE] if gate is None else gate
    if not slo and any(t.metric == "slo" for t in gate):
        raise SsdcompareError("--fail-if slo: slo is each curve's IOPS within a latency "
                              "target; give the target too, e.g. --slo p99=1ms")  # fmt: skip
    _check_overlap(base, new)
    pairs, only_base, only_new = pair_drives(base, new, matches or [])
    if drives:
        wanted = {base.named(name) for name in names_given(drives)}
        pairs = [p for p in pairs if p.base in wanted]
        only_base = [d for d in only_base if d in wanted]
        only_new = []
    found = Changes(base, new, pairs, gate, alpha, strict, parse_changes(allow_change), judged)
    skipped = [v for v in NOT_JUDGED if v not in judged]
    summaries = (job_rows(base), job_rows(new))
    targets = parse_slos(slo)
    answers = (_answers(base, targets), _answers(new, targets))
    for pair in pairs:
        _compare_pair(found, pair, summaries, skipped)
        if targets:
            _compare_answers(found, pair, answers, summaries, skipped)
    for drive in only_base:
        found.problems.append(Problem("only in BASE", drive, None, "no drive of NEW matches it "
                                      "(by serial, name or --match)"))  # fmt: skip
    for drive in only_new:
        found.problems.append(Problem("only in NEW", drive, None, "no drive of BASE matches it"))
    return found


def names_given(value: str | list[str] | tuple[str, ...] | None) -> list[str]:
    """Names as given on the command line or in Python: "a,b", or a list of such."""
    given = [value] if isinstance(value, str) else list(value or ())
    return [name.strip() for item in given for name in str(item).split(",") if name.strip()]


def _check_overlap(base: Side, new: Side) -> None:
    """A folder on both sides is refused (its runs would count as both): unless the two
    sides are the very same folders, whose every change is then none."""
    ours = {s.path.resolve() for s in base.sweeps}
    theirs = {s.path.resolve() for s in new.sweeps}
    if ours & theirs and ours != theirs:
        both = ", ".join(str(p) for p in sorted(ours & theirs))
        raise SsdcompareError(f"{both} is given as BASE and as NEW: give each folder to one "
                              "side")  # fmt: skip


def job_rows(side: Side) -> dict[tuple[str, str], dict[str, Any]]:
    """(drive, job) -> the job's summary row over every repeat of the side, with the set of
    workload hashes its runs had (`hashes`)."""
    # one drive's runs over the side's folders are its repeats, whatever its device's name
    # or its machine's was in each (the drive's name on the side says both)
    frame = side.frame.assign(sweep=str(side.sweeps[0].path), device=side.frame["label"],
                              host=None)  # fmt: skip
    summary = job_summary(frame)
    hashes = side.frame.groupby(["label", "job"], sort=False)["workload_hash"].agg(
        lambda h: sorted({str(v) for v in h.dropna() if v != ""}))  # fmt: skip
    runs = side.frame.drop_duplicates(["sweep", "label", "job", "repeat"])
    unfinished = runs[runs["status"] != "ok"].groupby(["label", "job"], sort=False)[
        "status"].agg(lambda s: dict(Counter(str(v) for v in s)))  # fmt: skip
    rows = {}
    for row in summary.to_dict("records"):
        key = (str(row["label"]), str(row["job"]))
        rows[key] = dict(row, hashes=hashes.get(key, []), unfinished=unfinished.get(key, {}))
    return rows


def _unfinished(found: Changes, name: str, job: str, sides: tuple[dict[str, Any], ...]) -> None:
    """Runs of a job that did not finish ok on a side (failed, interrupted, skipped, or
    damaged: stored files that cannot be used), listed: its figures stand on fewer repeats."""
    said = []
    for role, row in zip(("BASE", "NEW"), sides, strict=True):
        counts = row.get("unfinished") or {}
        if counts:
            total = int(row["repeats"]) + sum(counts.values())
            what = ", ".join(f"{n} {status}" for status, n in counts.items())
            said.append(f"{sum(counts.values())} of {total} runs in {role} not ok ({what})")
    if said:
        found.problems.append(Problem("incomplete", name, job, "; ".join(said)))


_Summaries = tuple[dict[tuple[str, str], dict[str, Any]], dict[tuple[str, str], dict[str, Any]]]


def _compare_pair(found: Changes, pair: Pair, summaries: _Summaries, skipped: list[str]) -> None:
    """One pair of drives, job by job."""
    name = pair.name
    differences = _what_changed(found, pair)
    found.changed[name] = [difference_words(d) for d in differences] + _other_file(found, pair)
    blocking = [d for d in differences if not _allowed(d.fact, found.allowed)]
    for side, drive in ((found.base, pair.base), (found.new, pair.new)):
        if drive in side.mixed:  # its runs there are two drives' runs: no one drive's repeats
            blocking.append(
                Difference(
                    "two drives",
                    {
                        side.role: f"{drive} holds two drives "
                        f"(other serials) in {side.role}'s folders"
                    },
                )
            )
    base_jobs = [job for (drive, job) in summaries[0] if drive == pair.base]
    new_jobs = [job for (drive, job) in summaries[1] if drive == pair.new]
    for job in dict.fromkeys(base_jobs + new_jobs):
        mine, theirs = summaries[1].get((pair.new, job)), summaries[0].get((pair.base, job))
        if theirs is None or mine is None:
            side = "BASE" if mine is None else "NEW"
            found.problems.append(
                Problem(
                    f"only in {side}", name, job, f"not run on {'NEW' if mine is None else 'BASE'}"
                )
            )
            continue
        why = _not_comparable(theirs, mine, blocking)
        if why is not None:
            found.problems.append(Problem("not comparable", name, job, why))
            continue
        _unfinished(found, name, job, (theirs, mine))
        failed = [s for s, row in (("BASE", theirs), ("NEW", mine)) if not row["repeats"]]
        if failed:
            found.problems.append(Problem("no result", name, job, "no successful run in "
                                          + " and ".join(failed)))  # fmt: skip
            continue
        _compare_job(found, pair, name, job, (theirs, mine), skipped)


def _what_changed(found: Changes, pair: Pair) -> list[Difference]:
    """What the sweeps recorded differently of the machine and the drive between the two
    sides of a pair (the likeness facts, the CPU, the drive itself)."""
    differences = what_changed(found.base.drives[pair.base].unit,
                               found.new.drives[pair.new].unit)  # fmt: skip
    if pair.note is not None:
        differences.append(Difference("drive", {"BASE": pair.note, "NEW": pair.note}))
    return differences


def what_changed(before: Unit, after: Unit) -> list[Difference]:
    """What the sweeps recorded differently of a drive and its machine from `before` to
    `after` (the likeness facts, the CPU), each value under "BASE" (before) and "NEW"."""
    one, other = replace(before, label="BASE"), replace(after, label="NEW")
    likeness = compare_units([one, other])
    differences = likeness.differences + likeness.kind_differences
    cpus = [_cpu(u) for u in (one, other)]
    if None not in cpus and cpus[0] != cpus[1]:
        differences.append(Difference("CPU", {"BASE": str(cpus[0]), "NEW": str(cpus[1])}))
    return differences


def _other_file(found: Changes, pair: Pair) -> list[str]:
    """A loop device paired by name that reads another file than before, said (and still
    compared: a test's image is made anew for each run of it)."""
    one, other = found.base.drives[pair.base].identity, found.new.drives[pair.new].identity
    if one is None or other is None or one.hardware or other.hardware or one.key == other.key:
        return []
    return [f"another file under the same name: {one.words} in BASE, {other.words} in NEW"]


def _cpu(unit: Unit) -> str | None:
    host = unit.host
    if host is None or host.cpu_model is None:
        return None
    return f"{host.cpu_model}, {host.cpu_threads or '?'} CPUs"


def _allowed(fact: str, allowed: list[str]) -> bool:
    return fact not in _NEVER and any(fact in CHANGES[name] for name in allowed)


def _option_for(fact: str) -> str | None:
    return next((name for name, facts in CHANGES.items() if fact in facts), None)


def _not_comparable(
    base: dict[str, Any], new: dict[str, Any], blocking: list[Difference]
) -> str | None:
    """Why a job's results on the two sides are not compared; None when they are."""
    if blocking:
        said = "; ".join(_blocked_words(d) for d in blocking)
        return f"what the sweeps recorded differs: {said}"
    for side, row in (("BASE", base), ("NEW", new)):
        if len(row["hashes"]) > 1:
            return f"{side}'s folders ran different jobfiles for it"
    if base["hashes"] and new["hashes"] and base["hashes"] != new["hashes"]:
        how = described_differences(base, new)
        said = ", ".join(f"{d}" for d in how) if how else "compare the jobfile.fio files"
        return (f"the jobfiles differ (workload hash {base['hashes'][0]} in BASE, "
                f"{new['hashes'][0]} in NEW): {said}")  # fmt: skip
    return None


def difference_words(difference: Difference) -> str:
    """What the sweeps recorded differently, in words: "kernel 6.1 in BASE, 6.6 in NEW"."""
    if difference.fact in ("drive", "two drives"):
        return next(iter(difference.values.values()))
    return (f"{difference.fact} {difference.values.get('BASE', '?')} in BASE, "
            f"{difference.values.get('NEW', '?')} in NEW")  # fmt: skip


def _blocked_words(difference: Difference) -> str:
    """A difference that makes a pair not comparable, and how to compare it anyway."""
    words = difference_words(difference)
    option = _option_for(difference.fact)
    if difference.fact in _NEVER or option is None:
        return words
    return f"{words} (if that change is what you measure: --allow-change {option})"


def _compare_job(
    found: Changes,
    pair: Pair,
    name: str,
    job: str,
    sides: tuple[dict[str, Any], dict[str, Any]],
    skipped: list[str],
) -> None:
    """Each metric of one job both sides ran the same way."""
    base, new = sides
    verdicts = (base.get("verdict"), new.get("verdict"))
    limited = [
        f"{row.get('verdict')} in {side}" + (
            f" ({row['verdict_reason']})" if isinstance(row.get("verdict_reason"), str) else "")
        for side, row in (("BASE", base), ("NEW", new)) if row.get("verdict") in skipped
    ]  # fmt: skip
    if limited:
        found.problems.append(Problem("not judged", name, job, "; ".join(limited)))
    for metric in _JOB_METRICS:
        row = _row(pair, job, metric, base, new, verdicts)
        row.outcome, row.threshold = _outcome(row, metric, found, judged=not limited)
        found.rows.append(row)
        _unjudged_figure(found, row, name)


def _unjudged_figure(found: Changes, row: Row, name: str) -> None:
    """A figure the gate looks at that a side does not have is listed: the gate could not
    judge it (an older fio without p99.9, a base that did no I/O)."""
    gated = [t.words() for t in found.gate if t.metric == row.metric]
    if row.outcome != "no figure" or not gated:
        return
    missing = [side for side, figure in (("BASE", row.base), ("NEW", row.new))
               if not figure > 0]  # fmt: skip
    found.problems.append(Problem(
        "no figure", name, row.job, f"no {METRICS[row.metric].words} in "
        f"{' and '.join(missing) or 'BASE'}: {', '.join(gated)} could not judge it"))  # fmt: skip


def _row(
    pair: Pair,
    job: str,
    metric: Metric,
    base: dict[str, Any],
    new: dict[str, Any],
    verdicts: tuple[object, object],
) -> Row:
    """The figures of one metric on both sides, and their comparison."""
    theirs = _known(base.get(f"{metric.column}_per_repeat"))
    mine = _known(new.get(f"{metric.column}_per_repeat"))
    tested = compare(mine, theirs)  # None with fewer than 3 repeats a side, or with a zero
    figures = geometric_mean(theirs), geometric_mean(mine)
    # the ratio of the figures shown (as the test's): 0 when NEW did no I/O at all
    ratio = figures[1] / figures[0] if figures[0] > 0 else math.nan
    nan = math.nan
    return Row(
        base_drive=pair.base, new_drive=pair.new, job=job, metric=metric.name,
        base=figures[0], new=figures[1], base_repeats=len(theirs), new_repeats=len(mine),
        ratio=tested.ratio if tested else ratio,
        ci_low=tested.ci_low if tested else nan, ci_high=tested.ci_high if tested else nan,
        p_value=tested.p_value if tested else nan,
        base_verdict=_text(verdicts[0]), new_verdict=_text(verdicts[1]),
    )  # fmt: skip


def _outcome(row: Row, metric: Metric, found: Changes, judged: bool) -> tuple[str, str | None]:
    """What a row's change is (OUTCOMES), and the threshold it crossed."""
    if math.isnan(row.ratio):
        return "no figure", None
    if not judged:
        return "not judged", None
    significant = row.tested and row.p_value < found.alpha
    for threshold in (t for t in found.gate if t.metric == metric.name):
        if threshold.crossed(row.change_pct):
            if row.tested and not significant:
                return "not significant", threshold.words()
            return "regression", threshold.words()
    if not row.tested:
        return "untested", None
    if not significant or abs(row.change_pct) < NEGLIGIBLE_PCT:
        return "same", None
    return ("better" if (row.ratio > 1) == metric.higher_is_better else "worse"), None


def _answers(
    side: Side, targets: list[Any]
) -> dict[tuple[str, str, str], list[tuple[str, float]]]:
    """(drive, curve run, target) -> each repeat's answer at the target (status, IOPS)."""
    if not targets:
        return {}
    table = slo_table(side.frame, targets)
    found: dict[tuple[str, str, str], list[tuple[str, float]]] = {}
    for row in table.sort_values("repeat").to_dict("records"):
        state = row["state"] if isinstance(row["state"], str) else None
        run = curve_run_id(str(row["curve"]), None, state)
        key = (str(row["label"]), run, str(row["slo"]))
        found.setdefault(key, []).append((str(row["slo_status"]), float(row["slo_iops"])))
    return found


def _compare_answers(
    found: Changes,
    pair: Pair,
    answers: tuple[dict[tuple[str, str, str], list[tuple[str, float]]], ...],
    summaries: _Summaries,
    skipped: list[str],
) -> None:
    """Each curve's answer at each latency target, on both sides: a row of the metric `slo`
    where every repeat of both sides met it (or one side never did: 0 IOPS within it); a
    bound ("at least") or repeats that disagree are said, not judged."""
    name = pair.name
    keys = [(run, slo) for (drive, run, slo) in answers[0] if drive == pair.base]
    for run, target in keys:
        theirs, mine = (
            answers[0][(pair.base, run, target)],
            answers[1].get((pair.new, run, target)),
        )
        base_row, new_row = summaries[0].get((pair.base, run)), summaries[1].get((pair.new, run))
        if mine is None or base_row is None or new_row is None:
            continue  # the curve itself is listed as only in one side, or not comparable
        if any(
            p.drive == name and p.job == run and p.kind != "not judged" for p in found.problems
        ):
            continue
        base_states, new_states = {s for s, _ in theirs}, {s for s, _ in mine}
        if base_states != {MET} or new_states not in ({MET}, {NEVER}):
            said = ", ".join(sorted(base_states | new_states))
            found.problems.append(
                Problem(
                    "not judged",
                    name,
                    f"{run} at {target}",
                    f"its answers are not figures to compare ({said})",
                )
            )
            continue
        row = _row(pair, f"{run} at {target}", METRICS["slo"],
                   {"slo_iops_per_repeat": [v if s == MET else 0.0 for s, v in theirs]},
                   {"slo_iops_per_repeat": [v if s == MET else 0.0 for s, v in mine]},
                   (base_row.get("verdict"), new_row.get("verdict")))  # fmt: skip
        judged = row.base_verdict not in skipped and row.new_verdict not in skipped
        row.outcome, row.threshold = _outcome(row, METRICS["slo"], found, judged=judged)
        found.rows.append(row)


def _known(values: object) -> list[float]:
    """A side's figures of its repeats, those fio gave (a zero is one: no I/O)."""
    if not isinstance(values, (list, tuple)):
        return []
    return [float(v) for v in values if v is not None and v == v]


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def changes(
    base: str | Path | list[str | Path],
    new: str | Path | list[str | Path],
    fail_if: str | list[str] | None = None,
    **options: Any,
) -> Changes:
    """`ssdcompare.changes`: NEW's results folders against BASE's, as `ssdcompare compare`
    makes it (`fail_if` as its --fail-if, e.g. "iops < -5%"; `options` those of
    compare_results: alpha, strict, matches, allow_change, judge, drives, slo). The result
    says `exit_status`, lists `regressions` and `problems`, and gives every row as a frame
    (`frame()`)."""
    given = [fail_if] if isinstance(fail_if, str) else fail_if
    gate = None if given is None else [parse_fail_if(t) for t in given]
    sides = [load_side(role, [Path(p) for p in (f if isinstance(f, list) else [f])])
             for role, f in (("BASE", base), ("NEW", new))]  # fmt: skip
    return compare_results(sides[0], sides[1], gate, **options)
