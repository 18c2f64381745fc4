"""What a sweep shows on the terminal: a progress line, notices, messages that survive a
closed terminal, and the summary at the end.

On a terminal, one status line updates in place and failures get lines of their own. When
stderr is not a terminal (a pipe, a log file, cron), every finished run gets one plain line,
so a FAILED or skipped run is never lost from the log.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ssdcompare.judge.steady import FILL_RATE_WORST, MAX_ROUNDS
from ssdcompare.judge.verdict import limit_word
from ssdcompare.suite.options import OPT_IN
from ssdcompare.target.devices import describe
from ssdcompare.units import (
    format_bytes,
    format_count,
    format_duration,
    format_latency,
    format_rate,
)

if TYPE_CHECKING:
    import pandas as pd

    from ssdcompare.results.models import RoundsRecord
    from ssdcompare.results.store import ResultsDir
    from ssdcompare.run.plan import Plan
    from ssdcompare.run.sweep import Progress
    from ssdcompare.suite.files import SuiteInfo
    from ssdcompare.suite.pts import RoundGroup
    from ssdcompare.target.guard import Finding


def say(text: str, stream: TextIO | None = None, end: str = "\n") -> None:
    """Print to stderr (or `stream`), ignoring a terminal that has gone away (SIGHUP, a closed
    pipe): results are on disk already, and losing a message must not lose them."""
    target = stream if stream is not None else sys.stderr
    if target is None:  # started with the stream closed (2>&-)
        return
    try:
        target.write(text + end)
        target.flush()
    except (OSError, ValueError):
        pass


def suite_lines(infos: list[SuiteInfo]) -> list[str]:
    """The bundled suites: job count, measuring time per device, whether they write, what
    they are and where they come from."""
    lines = []
    width = max(len(i.name) for i in infos)
    for info in infos:
        kind = "writes" if info.writes else "read-only"
        if info.precondition:
            kind += f", preconditions first ({' then '.join(info.precondition)})"
        if info.states:
            kind += f", runs on an {' then a '.join(info.states)} drive"
        lines.append(f"{info.name:<{width}}  {info.jobs:>3} jobs  "
                     f"{format_duration(info.duration_s):>11} per device  {kind}")  # fmt: skip
        if info.rounds_s or info.fills:
            lines += [f"{'':<{width}}  {line}" for line in textwrap.wrap(_preparing(info),
                                                                          96 - width)]  # fmt: skip
        lines += [f"{'':<{width}}  {line}" for line in textwrap.wrap(info.description, 96 - width)]
        if info.source:
            lines.append(f"{'':<{width}}  source: {info.source}")
        lines.append("")
    lines.append("Use one with --suite NAME, or give the path of your own suite file.")
    return lines


def _preparing(info: SuiteInfo) -> str:
    """What a suite spends besides measuring, per device: its rounds until steady state at
    most, and its fills (twice the span, planned at FILL_RATE_WORST)."""
    parts = []
    if info.rounds_s:
        parts.append(f"up to {format_duration(info.duration_s + info.rounds_s)} in all with its "
                     f"rounds until steady state ({MAX_ROUNDS} per job at most)")  # fmt: skip
    if info.fills:
        per_gib = 2 * (1 << 30) / FILL_RATE_WORST
        fills = "a fill" if info.fills == 1 else f"{info.fills} fills"
        parts.append(f"plus {fills} of the span (about {format_duration(per_gib)} per GiB "
                     "of span at 100 MB/s; `ssdcompare plan` tells for a device)")  # fmt: skip
    return "; ".join(parts)


def plan_lines(plan: Plan) -> list[str]:
    """A plan's suite, targets and one line per job."""
    suite = plan.suite
    lines = [f"suite {suite.name}: {suite.description}", "targets:"]
    lines += [f"  {describe(target)}" for target in plan.targets]
    lines += ["", f"{'job':<32} {'rw':<9} {'bs':>6} {'qd':>4} {'jobs':>4} {'read%':>5} "
              f"{'fsync':>5} {'time':>7}"]  # fmt: skip
    for w in suite.workloads:
        mix = "" if w.rwmixread is None else str(w.rwmixread)
        lines.append(
            f"{w.job_id:<32} {w.rw:<9} {format_bytes(w.bs_bytes):>6} {w.iodepth:>4} "
            f"{w.numjobs:>4} {mix:>5} {w.fsync or '':>5} {format_duration(w.duration_s):>7}"
        )
    if plan.precondition:
        lines += ["", f"preconditioning: {' then '.join(plan.precondition)}, at most "
                  f"{format_duration(plan.precondition_s)} (a fill at 100 MB/s, every job's "
                  "rounds to the limit)"]  # fmt: skip
    lines += _states_lines(plan)
    lines += _curve_lines(plan)
    lines += _pts_lines(plan)
    return [*lines, ""]


def _pts_lines(plan: Plan) -> list[str]:
    """How a PTS test runs its groups: back to back in one fio run a round, rounds until the
    tracking variable is steady (or once); scaled or not."""
    pts = plan.suite.pts
    if pts is None:
        return []
    from ssdcompare.suite.pts import METRIC_WORDS, scale_words

    lines = ["", f"SNIA PTS {pts.test} test, its groups one after the other on each device:"]
    ids = [w.job_id for w in plan.suite.workloads]
    for group in pts.groups:
        count = len(pts.job_ids(group, ids))
        how = "once" if not group.rounds else (
            f"in rounds until {group.track}'s {METRIC_WORDS[group.metric]} is steady (a "
            f"window of {group.window} rounds within {group.range_pct:g} % range and "
            f"{group.slope_pct:g} % slope; at most {group.max_rounds} rounds)")  # fmt: skip
        lines.append(f"  {group.name}: {count} job{'s' if count != 1 else ''} back to back, {how}")
    scaled = scale_words(plan.suite.scale)
    return [*lines, f"  {scaled}"] if scaled else lines


def purge_lines(plan: Plan, consent: bool | list[str]) -> list[str]:
    """What the purge before a PTS test would do to each target, given --destroy-data as
    `consent` (for `plan`)."""
    from ssdcompare.errors import SsdcompareError
    from ssdcompare.run.preflight import consent_names, offered_names
    from ssdcompare.run.purge import intent

    if plan.purge is None:
        return []
    try:
        offered = offered_names(consent_names(consent, plan.devices), plan.devices)
    except SsdcompareError:  # a name that is no device of the sweep: its checks say so
        offered = []
    return [f"purge before the PTS test (--purge {plan.purge}):",
            *[f"  {t.name}: {intent(plan.purge, t, offered)}" for t in plan.targets],
            ""]  # fmt: skip


def _curve_lines(plan: Plan) -> list[str]:
    """What each latency-vs-load curve of the plan paces its points at."""
    found = []
    for w in plan.suite.workloads:
        if w.curve is None or w.point is not None or w.state not in (None, *plan.states[:1]):
            continue  # one line per curve: at its unpaced run, in the first pass
        base = w.curve_base
        of = (f"{base:,} IOPS" if isinstance(base, int) else "the highest maximum of the "
              "devices" if base == "fastest" else "each device's own maximum")  # fmt: skip
        stop = f"; stops past p99 {format_latency(w.stop_p99_us)}" if w.stop_p99_us else ""
        shares = ", ".join(f"{share:g}" for share in w.curve)
        found.append(f"  {w.curve_name}: {w.job_id} unpaced, then paced (Poisson arrivals) "
                     f"at {shares} % of {of}{stop}")  # fmt: skip
    return ["", "latency-vs-load curves:", *found] if found else []


def _states_lines(plan: Plan) -> list[str]:
    """What a --states sweep does to each drive between its passes."""
    if not plan.states:
        return []
    said = {
        "empty": "the span is discarded (TRIM) before every run of the .empty jobs",
        "full": "the span is filled (sequential writes, twice) before the .full jobs",
    }
    return ["", f"drive states: {', then '.join(plan.states)}, a pass over the jobs each:",
            *[f"  {state}: {said[state]}" for state in plan.states],
            f"  fills at most {format_duration(plan.precondition_s)} in all (at 100 MB/s)"
            if "full" in plan.states else "  discards take seconds"]  # fmt: skip


def announce(plan: Plan, results: Path, findings: list[Finding]) -> None:
    """Before a sweep runs: what --destroy-data lets it overwrite, the plan's warnings, the
    opt-in options accepted, and how long it will take where."""
    for finding in findings:
        say(f"warning: overwriting {finding.device}: {finding.detail} (--destroy-data)")
    for warning in plan.warnings:
        say(f"warning: {warning}")
    for option in plan.allowed_options:
        say(f"note: fio option {option} accepted (--allow-option): {OPT_IN[option]}")
    if plan.precondition:
        say(f"preconditioning: {' then '.join(plan.precondition)} (at most "
            f"{format_duration(plan.precondition_s)}, included below)")  # fmt: skip
    if plan.states:
        how = {"empty": "the span discarded before every run", "full": "the span filled first"}
        say(
            "drive states: a pass over the jobs in each of "
            + ", then ".join(f"{state} ({how[state]})" for state in plan.states)
        )
    if plan.suite.pts is not None:
        say(f"{plan.suite.name} on {len(plan.targets)} device(s): {rounds_words(plan)}; at "
            f"most {format_duration(plan.estimated_s)}; results in {results}")  # fmt: skip
        return
    say(
        f"{plan.suite.name}: {len(plan.suite.workloads)} jobs x {len(plan.targets)} device(s) x "
        f"{plan.repeat} repeat(s) = {plan.runs} runs, about {format_duration(plan.estimated_s)}; "
        f"results in {results}"
    )


def rounds_words(plan: Plan) -> str:
    """How a PTS test runs its jobs, group by group: "9 jobs a round, up to 25 rounds until
    steady" (named by group when it has several), or "3 jobs once"."""
    pts = plan.suite.pts
    if pts is None:
        return ""
    ids = [w.job_id for w in plan.suite.workloads]
    said = []
    for group in pts.groups:
        count = len(pts.job_ids(group, ids))
        jobs = f"{count} job{'s' if count != 1 else ''}"
        how = (f"{jobs} a round, up to {group.max_rounds} rounds until steady" if group.rounds
               else f"{jobs} once")  # fmt: skip
        said.append(f"{group.name}: {how}" if len(pts.groups) > 1 else how)
    return "; ".join(said)


def resume_hint(results: Path, reason: str | None) -> None:
    say(f"interrupted{f' by {reason}' if reason else ''}: finished runs are kept. Continue "
        f"with: ssdcompare sweep --resume {results}")  # fmt: skip


def _describe(event: Progress) -> str:
    return f"[{event.index}/{event.total}] {event.target}: {event.job} (repeat {event.repeat})"


def _apart(event: Progress) -> str:
    """A line of its own for what a sweep does besides its runs: a job's run on the RAM disk
    (--ceiling), the purge before a PTS test."""
    if event.state == "purge":
        if event.error:
            return f"purge: {event.target} FAILED: {event.error} (its test is skipped)"
        return f"purge: {event.target}: {event.detail}"
    what = f"FAILED, {event.error}" if event.error else "on a RAM disk"
    return f"ceiling: {event.job} {what}"


class ProgressLine:
    """Receives sweep progress events; see the module docstring for what it prints where."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        try:
            self.interactive = self.stream.isatty()
        except (OSError, ValueError, AttributeError):  # closed, or None
            self.interactive = False
        self.width = 0

    def __call__(self, event: Progress) -> None:
        eta = f", ETA {format_duration(event.eta_s)}" if event.eta_s is not None else ""
        if event.state in ("ceiling", "purge"):
            self._show("")
            say(f"\r{_apart(event)}", self.stream)
            self.width = 0
            return
        if event.state == "start":
            if self.interactive:
                self._show(_describe(event) + eta)
            return
        problem = f": {event.error}" if event.error and event.state != "ok" else ""
        line = f"{_describe(event)} {event.state.upper() if event.state != 'ok' else 'ok'}"
        if self.interactive:
            if event.state != "ok":
                self._show("")
                say("\r" + line + problem, self.stream)
                self.width = 0
        else:
            say(line + problem + (eta if event.state == "ok" else ""), self.stream)

    def _show(self, line: str) -> None:
        pad = max(self.width - len(line), 0)
        say("\r" + line + " " * pad, self.stream, end="")
        self.width = len(line)

    def close(self) -> None:
        if self.interactive and self.width:
            self._show("")
            say("\r", self.stream, end="")
            self.width = 0


def _summary_cell(row: pd.Series, wrong: bool = False) -> str:
    """One device's figures for one job: IOPS, MB/s, mean and p99 latency, repeats averaged;
    `wrong`: data came back wrong in one of its runs, which no figure may hide."""
    if row["status"] != "ok":
        return "FAILED: DATA CAME BACK WRONG" if wrong else str(row["status"]).upper()
    if wrong:
        return _figures_cell(row) + " [DATA CAME BACK WRONG in a repeat]"
    return _figures_cell(row)


def _figures_cell(row: pd.Series) -> str:
    """A finished result's figures, with what limited them."""
    text = (
        f"{format_count(row['iops_value'])} IOPS {format_rate(row['bw_bytes_value'])}"
        f" lat {format_latency(row['lat_mean_us_value'])}"
        f" p99 {format_latency(row['lat_p99_us_value'])}"
    )
    cv = float(row["iops_cv_pct"])
    if row["repeats"] > 1 and cv == cv:  # NaN for repeats without I/O
        text += f" (CV {cv:.0f} %)"
    from ssdcompare.analysis.frame import is_true
    from ssdcompare.analysis.pacing import reach_words

    if row.get("cliff_runs", 0):
        before, after = (format_count(row[f"cliff_{w}_iops"]) for w in ("before", "after"))
        text += f" [write cliff at {row['cliff_s']:.0f} s: {before} -> {after} IOPS]"
    short = reach_words(row)
    if short:  # a curve point whose latency is no point of the curve
        text += f" [{short}]"
    limit = limit_word(row.get("verdict"), cpu_bound=is_true(row["cpu_bound"]))
    return f"{text} [{limit}]" if limit else text


def _search_lines(frame: pd.DataFrame) -> list[str]:
    """A line per run in which fio searched for a latency target: what it found, in words."""
    from ssdcompare.analysis.frame import label_devices
    from ssdcompare.analysis.latencytarget import search_words

    searched = frame["latency_depth"].notna()
    if not searched.any():
        return []
    # labels are made over the whole frame: they tell its hosts and sweeps apart
    labelled = frame if "label" in frame.columns else label_devices(frame)
    runs = labelled[searched].drop_duplicates(["sweep", "label", "job", "repeat"])
    return [f"  {run['job']} on {run['label']}, run {run['repeat']}: {search_words(run)}"
            for run in runs.to_dict("records")]  # fmt: skip


# what the end of the summary lists, by verdict: its heading and the rows' reasons
_NOT_DRIVE = (
    (
        "host",
        "Host-bound: these numbers measure the host (at its ceiling for the job, or its "
        "page cache or filesystem answered instead of the device):",
    ),
    ("cpu", "CPU-bound: these numbers measure the CPU, not the drive:"),
    ("throttled", "Throttled: the drive slowed itself to cool down while these ran:"),
    ("disturbed", "Disturbed: something besides the workload perturbed these numbers:"),
)


def summary_lines(path: Path, slo: list[str] | None = None) -> list[str]:
    """Per job, one line per device; results that did not measure the drive marked (CPU- or
    host-bound, throttled, disturbed) with their reasons listed at the end; what fio's search
    for a latency target found, a line per run that had one; then, with several devices, the
    answer (ssdcompare.headline) in a line per device; last, each run in which data came back
    wrong.

    A job that sets fio options beyond the typed fields names them after its id, e.g.
    "randread-4k-qd1+rate_iops200  (+ rate_iops=200)". With latency targets (`slo`), the
    answer of each curve at each of them, a line per curve and target.
    """

    from ssdcompare.analysis.answer import headline
    from ssdcompare.analysis.frame import io_mismatches, known_true, load
    from ssdcompare.analysis.summary import job_summary

    frame = load(path)
    if frame.empty:
        return ["no results recorded"]
    summary = job_summary(frame)
    lines = _job_lines(summary, frame)
    cpu = known_true(summary["cpu_bound"]) & (summary["verdict"] != "host")
    for verdict, heading in _NOT_DRIVE:
        chosen = summary[(summary["verdict"] == verdict) | (cpu if verdict == "cpu" else False)]
        if chosen.empty:
            continue
        lines += ["", heading]
        for _, row in chosen.iterrows():
            reason = row["verdict_reason"] or row["cpu_bound_reason"]
            lines.append(f"  {row['job']} on {row['label']}: {reason}")
    searches = _search_lines(frame)
    if searches:
        lines += ["", "fio's search for a latency target:", *searches]
    mismatched = io_mismatches(frame)
    if mismatched:
        lines += ["", "The device did not see what fio counted (the block layer's count):",
                  *(f"  {run}" for run in mismatched)]  # fmt: skip
    if summary["label"].nunique() >= 2:
        lines += ["", *(h.sentence for h in headline(summary))]
    return lines + _slo_lines(frame, slo) + _unchecked_lines(frame) + _data_wrong_lines(frame)


def _job_lines(summary: pd.DataFrame, frame: pd.DataFrame) -> list[str]:
    """Per job its id (with the fio options it sets beyond the typed fields), then a line
    per device with its figures, or why it has none."""
    from ssdcompare.analysis.integrity import data_wrong_results, result_key
    from ssdcompare.analysis.summary import options_line

    wrong = data_wrong_results(frame)
    lines = []
    width = max(len(str(label)) for label in summary["label"])
    for job, rows in summary.groupby("job", sort=False):
        # options beyond the typed fields (rate limits, buffer contents...) change what the
        # numbers mean: say so next to the job, not only in the jobfile
        found = map(options_line, rows.to_dict("records"))
        extras = [e for e in dict.fromkeys(found) if e is not None]
        lines.append(f"{job}  (+ {'; '.join(extras)})" if extras else str(job))
        for _, row in rows.iterrows():
            cell = _summary_cell(row, result_key(row) in wrong)
            lines.append(f"  {row['label']:<{width}}  {cell}")
    return lines


def _data_wrong_lines(frame: pd.DataFrame) -> list[str]:
    """Last, where it cannot be missed: each run in which data came back wrong, with fio's
    words."""
    from ssdcompare.analysis.integrity import data_wrong_runs

    runs = data_wrong_runs(frame)
    if not runs:
        return []
    return ["", "DATA CAME BACK WRONG: fio read back blocks that did not hold what was written "
            "(a data-integrity failure of the device, not a performance figure):",
            *(f"  {run}" for run in runs)]  # fmt: skip


def _unchecked_lines(frame: pd.DataFrame) -> list[str]:
    """Each finished run of a job with verify in which fio checked nothing, and why."""
    from ssdcompare.analysis.integrity import unchecked_runs

    runs = unchecked_runs(frame)
    if not runs:
        return []
    return ["", "Verify checked nothing in these runs (their figures stand, unchecked):",
            *(f"  {run}" for run in runs)]  # fmt: skip


def _slo_lines(frame: pd.DataFrame, slo: list[str] | None) -> list[str]:
    """The answers at latency targets, after a blank line; none without targets or curves."""
    from ssdcompare.analysis.slo import parse_slos, slo_sentences, slo_summary

    targets = parse_slos(slo)
    found = slo_sentences(slo_summary(frame, targets, None)) if targets else []
    if targets and not found:
        found = [
            f"no latency-vs-load curve to answer {', '.join(t.label for t in targets)} "
            "with: give a job a curve (curve: [10, 50, 70, 80, 90, 100]) in its suite"
        ]
    return ["", *found] if found else []


def rounds_lines(results: ResultsDir) -> list[str]:
    """A PTS test's groups on each target, a line each: steady after how many rounds (the
    window's mean, range and slope excursion), or not steady in how many."""
    manifest = results.manifest
    pts = manifest.suite.pts
    if pts is None:
        return []
    lines = []
    if manifest.suite.scale is not None:
        lines.append(f"scaled by {manifest.suite.scale:g}: a first look, not a PTS result")
    for target in manifest.targets:
        purge, unreadable = results.purge_reading(target.name)
        if unreadable is not None:
            lines.append(f"{target.name} purge: purge record unreadable: {unreadable}")
        elif purge is not None:
            said = f"{purge.how}, {purge.detail}" if purge.purged else purge.detail
            lines.append(f"{target.name} purge: {said}")
    from ssdcompare.run.rounds import group_record  # the runner's: only at a PTS sweep's end

    for target in manifest.targets:
        for group in pts.groups:
            record = group_record(results, target.name, group)
            if record is None or not group.rounds:
                continue
            lines.append(f"{target.name} {group.name}: {_rounds_words(record, group)}")
    return lines


def _rounds_words(record: RoundsRecord, group: RoundGroup) -> str:
    ran = len(record.rounds)
    if record.window_mean is None:
        return f"{ran} round{'s' if ran != 1 else ''}, no window yet" + (
            f" ({record.error})" if record.error else "")  # fmt: skip
    shown = {"iops": lambda v: f"{format_count(v)} IOPS", "bw": format_rate,
             "lat_mean": format_latency}[group.metric](record.window_mean)  # fmt: skip
    window = (f"rounds {record.window[0]}-{record.window[-1]}: {group.track} {shown}, range "
              f"{record.window_range_pct or 0:.1f} %, slope "
              f"{record.window_slope_pct or 0:.1f} %")  # fmt: skip
    if record.attained:
        return f"steady after {ran} rounds ({window})"
    if not record.done:  # the sweep stopped before the group was done: no verdict yet
        return (f"not steady yet after {ran} round{'s' if ran != 1 else ''}: the sweep stopped "
                f"before the group was done, and --resume goes on ({window})")  # fmt: skip
    why = record.error or (f"the window is not within {group.range_pct:g} % range and "
                           f"{group.slope_pct:g} % slope")  # fmt: skip
    return f"NOT steady in {ran} rounds: {why} ({window})"
