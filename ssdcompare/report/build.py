"""The HTML comparison report: one self-contained file built from result frames.

It never runs fio: everything comes from the stored results through `frame.load`.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd

from ssdcompare.analysis.answer import headline
from ssdcompare.analysis.compare import side_by_side
from ssdcompare.analysis.frame import damaged_runs, io_mismatches, known_true, load
from ssdcompare.analysis.integrity import (
    RESULT_KEYS,
    data_wrong_results,
    data_wrong_runs,
    result_key,
    unchecked_runs,
)
from ssdcompare.analysis.likeness import like_for_like, pcie_words
from ssdcompare.analysis.outliers import group_outliers, outlier_lines
from ssdcompare.analysis.pts import pts_results
from ssdcompare.analysis.slo import Slo, parse_slos, slo_sentences, slo_summary
from ssdcompare.analysis.summary import in_windows, job_summary
from ssdcompare.errors import SsdcompareError
from ssdcompare.judge.verdict import VERDICTS
from ssdcompare.report import svg as charts
from ssdcompare.report.advice import advice, pinned_runs
from ssdcompare.report.health import health_section
from ssdcompare.report.jobfiles import quoted_jobfiles
from ssdcompare.report.pts import pts_sections, results_note, scaled_banners
from ssdcompare.report.sections import chart_sections
from ssdcompare.report.table import (
    Footnotes,
    first_rows,
    records,
    sort_key,
    table_groups,
    workload_words,
)
from ssdcompare.resources import templates
from ssdcompare.results.files import write_atomic
from ssdcompare.results.outputs import check_report_path
from ssdcompare.results.store import ResultsDir, unique_folders
from ssdcompare.suite.options import OPT_IN
from ssdcompare.suite.workload import Workload
from ssdcompare.units import format_bytes, format_count, format_duration, format_rate
from ssdcompare.version import __version__

TEMPLATE = "report.html.j2"
CV_WARN_PCT = 10.0
DAMAGED_LISTED = 10  # damaged runs named one by one in the warnings, the rest counted
OPEN_UP_TO = 60  # jobs: a larger report opens with its sections folded (the filter opens them)


def _sweep_choices(results: ResultsDir) -> list[str]:
    """What the person running a sweep accepted that a reader must know about."""
    manifest = results.manifest
    found = []
    for option in manifest.allowed_options:
        found.append(
            f"{results.path.name}: fio option {option} was accepted with --allow-option: "
            f"{OPT_IN.get(option, 'it changes what the figures mean')}."
        )
    if manifest.guard_overrides:
        found.append(
            f"{results.path.name}: --destroy-data overwrote {'; '.join(manifest.guard_overrides)}."
        )
    return found


def _missing_ceilings(results: ResultsDir) -> list[str]:
    """A --ceiling sweep's reading jobs whose RAM-disk run did not finish: no ceiling."""
    manifest = results.manifest
    if not manifest.ceiling:
        return []
    missing = [w.job_id for w in manifest.suite.workloads
               if not w.writes and results.ceiling_iops(w.job_id) is None]  # fmt: skip
    if not missing:
        return []
    return [f"No ceiling for {', '.join(missing)}: the run on the RAM disk did not finish "
            f"(see ceiling/<job>/status.json in {results.path}); resume the sweep to measure "
            "it again. Their results are judged without one."]  # fmt: skip


def _warnings(frame: pd.DataFrame, summary: pd.DataFrame, sweeps: list[ResultsDir]) -> list[str]:
    """What a reader must know before trusting the figures: of the sweeps, the drives'
    states, the results, and the runs left out."""
    found = [said for results in sweeps for said in _sweep_warnings(results)]
    found += _state_warnings(frame, sweeps)
    found += _result_warnings(summary)
    found += _io_check_warnings(frame)
    found += [f"Verify checked nothing in {run}" for run in unchecked_runs(frame)]
    damaged = damaged_runs(frame)
    if damaged:
        shown = "; ".join(damaged[:DAMAGED_LISTED])
        more = len(damaged) - DAMAGED_LISTED
        found.append(
            f"{len(damaged)} run(s) whose stored files cannot be used (damaged, refused, "
            f"holding impossible values, or not of this sweep) are left out of the figures: "
            f"{shown}" + (f"; and {more} more" if more > 0 else "")
        )
    return found


def _sweep_warnings(results: ResultsDir) -> list[str]:
    """What one sweep's settings and host mean for its figures."""
    found = _sweep_choices(results) + _missing_ceilings(results)
    remote = sorted({h.where for t in results.manifest.targets for p in t.parts
                     if p.remote and p.host is not None for h in [p.host]})  # fmt: skip
    if remote:
        found.append(
            f"Not CPU-sampled: host {', '.join(remote)} is another machine. Its results "
            "are judged on fio's own CPU figures only: verdict unknown unless fio's worker "
            "was saturated. Devices here and on hosts at this machine's addresses were "
            "sampled in full."
        )
    host = results.manifest.host
    odd = [g for g in host.cpu_governors if g != "performance"]
    if odd:
        found.append(
            f"{host.hostname}: CPU frequency governor is {', '.join(odd)}, not "
            "performance: clock changes add noise and can lower QD1 results "
            "(set it with `cpupower frequency-set -g performance`)."
        )
    return found


def _result_warnings(summary: pd.DataFrame) -> list[str]:
    """What the results themselves call for: repeats that differ or none, results from
    another jobfile than the baseline's, jobs that did not complete."""
    noisy = summary[(summary["repeats"] >= 2) & (summary["iops_cv_pct"] >= CV_WARN_PCT)]
    found = [_noisy_words(row) for row in records(noisy, ["job", "label", "iops_cv_pct",
                                                          "repeats", "pts_test"])]  # fmt: skip
    if (summary["repeats"] < 2).all():
        found.append(
            "Each job ran once: run-to-run spread is unknown (use --repeat 3 to measure it)."
        )
    differing = summary[~summary["comparable"].fillna(True).astype(bool)]
    if not differing.empty:
        found.append(
            f"{len(differing)} result(s) ran a different jobfile than the baseline for the same "
            "job (other runtime, span, engine or options): marked ≠ jobfile and given no ratio; "
            "the notes say what differs."
        )
    bad = summary[summary["status"] != "ok"]
    if not bad.empty:
        found.append(
            f"{len(bad)} job(s) did not complete on some device: shown as FAILED, "
            "INTERRUPTED or DAMAGED, never as numbers."
        )
    return found


def _noisy_words(row: dict[str, object]) -> str:
    """A result whose repeats differ, in words: a PTS job's repeats are its window's rounds."""
    spread = f"{row['iops_cv_pct']:.0f} % (coefficient of variation)"
    if isinstance(row.get("pts_test"), str):
        return (f"{row['job']} on {row['label']}: the {row['repeats']} rounds of its "
                f"measurement window differ by {spread}.")  # fmt: skip
    return (f"{row['job']} on {row['label']}: repeats differ by {spread}: run more repeats or "
            "longer jobs before trusting it.")  # fmt: skip


def _io_check_warnings(frame: pd.DataFrame) -> list[str]:
    """Runs whose device did not see what fio counted (ssdcompare.judge.iocount): a line
    saying so, then one per run with its reason."""
    runs = io_mismatches(frame)
    if not runs:
        return []
    more = len(runs) - DAMAGED_LISTED
    return [
        f"The block layer's count disagrees with fio's for {len(runs)} run(s): their figures "
        "do not describe the drive alone, and their verdicts say so:",
        *(f"{run}." for run in runs[:DAMAGED_LISTED]),
        *([f"And {more} more run(s) like them."] if more > 0 else []),
    ]


def _placed(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The rows the report can place (their workload is known), and a warning naming each
    run it cannot: a run folder that is not part of its sweep's plan (copied in from another
    sweep) has no workload, so no table or chart to be in."""
    known = frame["rw"].notna()
    runs = frame[~known].drop_duplicates(["sweep", "device", "job", "repeat"])
    said = [f"Not shown: {row['job']} on {row['label']} (repeat {row['repeat']}), "
            f"{str(row['status']).upper()}: {row['error'] or 'no result'}"
            for _, row in runs.iterrows()]  # fmt: skip
    return frame[known], said


def _seconds(value: float) -> str:
    """A job's time: a scaled PTS run's fraction of a second as it is, not rounded to 0 s."""
    return format_duration(value) if value >= 10 or value == int(value) else f"{value:g} s"


def _rounds_words(results: ResultsDir) -> str | None:
    """How a PTS test's jobs ran instead of repeats: in rounds until steady, by group."""
    pts = results.manifest.suite.pts
    if pts is None:
        return None
    tracked = [group for group in pts.groups if group.rounds]
    once = len(pts.groups) - len(tracked)
    ran_once = f"{once} group(s) run once, in order" if once else ""
    if not tracked:
        return ran_once
    most = max(group.most_rounds for group in tracked)
    rounds = (f"in rounds until steady ({len(tracked)} group(s), at most {most} rounds), each "
              "figure the mean of its group's measurement window")  # fmt: skip
    return f"{rounds}; {ran_once}" if once else rounds


def _runtime_words(workloads: list[Workload]) -> str:
    """The jobs' runtimes; a size-capped job's is the most it runs (it ends at its cap)."""
    capped: dict[float, bool] = {}  # runtime -> every job of it is size-capped
    for w in workloads:
        mine = w.io_size_bytes is not None or w.io_size_spans is not None
        capped[w.runtime_s] = capped.get(w.runtime_s, True) and mine
    words = [f"at most {_seconds(r)}" if c else _seconds(r) for r, c in sorted(capped.items())]
    # a size-capped job ends when its bytes are moved: its runtime is only its limit
    return ", ".join(words) + (" measured, or until the size cap" if all(capped.values())
                               else " measured")  # fmt: skip


def _sweep_info(results: ResultsDir) -> dict[str, object]:
    manifest = results.manifest
    ramps = sorted({w.ramp_s for w in manifest.suite.workloads})
    return {
        "path": str(results.path),
        "name": results.path.name,
        "suite": manifest.suite.name,
        "description": manifest.suite.description,
        "created_at": manifest.created_at,
        "host": manifest.host,
        "memory": format_bytes(manifest.host.memory_bytes),
        "runtime": _runtime_words(manifest.suite.workloads),
        "ramp": ", ".join(_seconds(r) for r in ramps),
        "repeat": manifest.repeat,
        "rounds": _rounds_words(results),
        "jobs": len(manifest.suite.workloads),
        "ioengine": manifest.ioengine,
        "targets": ", ".join(t.name for t in manifest.targets),
        "precondition": (" then ".join(manifest.precondition) + " (SNIA PTS)")
        if manifest.precondition
        else _states_words(manifest.states)
        if manifest.states
        else "none: each drive as found",
    }


def _devices(sweeps: list[ResultsDir], labels: list[str], frame: pd.DataFrame) -> list[dict]:
    rows = []
    seen = set()
    for results in sweeps:
        parts = {p.name: p for t in results.manifest.targets for p in t.parts}
        for info in results.manifest.devices:
            part = parts.get(info.name)
            mine = frame["sweep"] == str(results.path)
            if part is not None and part.host is not None:  # "a:nvme0n1": nvme0n1 on host a
                mine &= (frame["device"] == part.device) & (frame["host"] == part.host.name)
            else:
                mine &= frame["device"] == info.name
            match = frame[mine]
            label = match["label"].iloc[0] if not match.empty else info.name
            if label in seen or label not in labels:
                continue
            seen.add(label)
            rows.append({
                "label": label,
                "model": info.model or "-",
                "firmware": info.firmware or "-",
                "size": format_bytes(info.size_bytes),
                "sort_size": sort_key(info.size_bytes),
                "interface": info.transport or "-",
                "rotational": "-" if info.rotational is None else (
                    "yes" if info.rotational else "no"),
                "scheduler": info.scheduler or "-",
                "host": (part.host.where if part is not None and part.host is not None
                         else results.manifest.host.hostname),  # fmt: skip
                "path": info.path,
                "extra": ", ".join(
                    f"{k}={v}" for k, v in (
                        ("backing file", info.loop_backing_file),
                        ("compression", info.zram_comp_algorithm),
                        ("filesystem", info.filesystem),
                        ("PCIe", pcie_words(info)),
                        ("NUMA node", info.numa_node),
                        ("nr_requests", info.nr_requests),
                        ("write cache", info.write_cache),
                        ("max_sectors_kb", info.max_sectors_kb),
                    ) if v is not None and v != ""
                ),
            })  # fmt: skip
    return rows


def build_context(
    frame: pd.DataFrame,
    sweeps: list[ResultsDir],
    baseline: str | None = None,
    aggregate: str = "mean",
    slo: list[Slo] | None = None,
) -> dict[str, object]:
    """Everything the template shows, computed from the frame (no fio, no sysfs); `slo`:
    the latency targets curves are answered at."""
    frame, unplaced = _placed(frame)
    summary, labels, baseline = _summary(frame, baseline, aggregate)
    footnotes = Footnotes()
    ratios = side_by_side(summary, "iops", baseline)
    rows_of = first_rows(summary)
    groups = table_groups(summary, rows_of, ratios, labels, baseline, footnotes)
    # outside the main table one mark stands for both: the CPU or the host was the limit; a
    # PTS job's runs are its window's rounds, as its figures are
    limited, limited_runs = _limited(summary), _limited(in_windows(frame))
    order = [row.job for group in groups for row in group.rows]
    answers = headline(summary, baseline)
    drawn = chart_sections(limited_runs, limited, rows_of, labels, baseline, ratios, order, slo)
    return {
        **_page(labels, baseline, aggregate),
        **_pts_context(frame, sweeps, baseline, labels),
        "sweeps": [_sweep_info(s) for s in sweeps],
        "devices": _devices(sweeps, labels, frame),
        "warnings": _warnings(frame, summary, sweeps) + unplaced,
        "data_wrong": data_wrong_runs(frame),
        "groups": groups,
        "footnotes": footnotes,
        "headline": [h.sentence for h in answers],
        "slo_answers": _slo_answers(frame, slo, baseline),
        "likeness": _likeness(frame, sweeps),
        "outliers": outlier_lines(group_outliers(summary)),
        "advice": advice(answers, summary, frame, sweeps),
        "verdict_counts": _verdict_counts(summary),
        "state_pairs": _state_pairs(limited, labels),
        "burst_rows": _burst_rows(limited_runs, labels),
        "health": health_section(frame),
        "chart_sections": drawn.sections,
        "charts": [chart for section in drawn.sections for chart in section.charts],
        "chart_notes": drawn.notes,
        "chart_parts": drawn.shared.definitions(),
        "jobfiles": quoted_jobfiles(frame, sweeps, order, labels),
        "open_all": len(order) <= OPEN_UP_TO,
        "drive_states": _has_drive_states(summary),
        "latency_targets": _has_latency_targets(summary),
        "pinned": pinned_runs(frame),
        "cpu_bound_count": _bound_count(summary),
    }


def _bound_count(summary: pd.DataFrame) -> int:
    """How many results measured the CPU or the host rather than the drive."""
    return int((known_true(summary["cpu_bound"]) | summary["verdict"].isin(["cpu", "host"])).sum())


def _pts_context(frame: pd.DataFrame, sweeps: list[ResultsDir], baseline: str,
                 labels: list[str]) -> dict[str, object]:  # fmt: skip
    """A SNIA PTS test's parts of the page: the banner of a scaled run, a section per test,
    and what the Results table's figures of its jobs are."""
    pts = pts_results(frame, sweeps, baseline)
    return {"scaled": scaled_banners(pts), "pts_sections": pts_sections(pts, labels),
            "pts_note": results_note(pts)}  # fmt: skip


def _slo_answers(frame: pd.DataFrame, slo: list[Slo] | None, baseline: str) -> list[str]:
    """Each curve's answer at each latency target in words; a line saying there is none to
    give when the results hold no curve."""
    if not slo:
        return []
    found = slo_sentences(slo_summary(frame, slo, baseline))
    return found or [f"{', '.join(t.label for t in slo)}: these results hold no latency-vs-load "
                     "curve to answer it with (a job with curve: [10, 50, 70, 80, 90, 100] in "
                     "its suite, e.g. the latency-curve suite)"]  # fmt: skip


def _likeness(frame: pd.DataFrame, sweeps: list[ResultsDir]) -> dict[str, object]:
    """What the devices differ in besides the drive, for the block at the top: the
    differences that matter, what follows from devices of different kinds, the notes."""
    found = like_for_like(frame, sweeps)
    return {
        "differences": [d.words() for d in found.differences],
        "kinds": found.kind_line(),
        "notes": found.notes,
    }


def _summary(frame: pd.DataFrame, baseline: str | None,
             aggregate: str) -> tuple[pd.DataFrame, list[str], str]:  # fmt: skip
    """The results per job and device against the baseline (the first device unless named),
    the devices in the report's order, and the baseline."""
    if frame.empty:
        raise SsdcompareError("no results to report: the sweep recorded no runs yet")
    labels = list(dict.fromkeys(frame["label"]))
    baseline = labels[0] if baseline is None else baseline
    if baseline not in labels:
        raise SsdcompareError(f"--baseline {baseline!r} is not one of: {', '.join(labels)}")
    summary = _with_rounds(job_summary(frame, baseline, aggregate), frame)
    # a result some run of which found data that came back wrong says so on its cell
    wrong = data_wrong_results(frame)
    summary["data_wrong"] = [wrong.get(result_key(row)) for row in records(summary, RESULT_KEYS)]
    return summary, list(dict.fromkeys(summary["label"])), baseline


def _limited(results: pd.DataFrame) -> pd.DataFrame:
    """`results` with cpu_bound set where the CPU or the host was the limit: one mark for
    both outside the main table."""
    return results.assign(cpu_bound=known_true(results["cpu_bound"])
                          | results["verdict"].eq("host"))  # fmt: skip


def _page(labels: list[str], baseline: str, aggregate: str) -> dict[str, object]:
    """What the page says of itself and draws alike everywhere: version, time, title, the
    devices' legend, styles and marks."""
    return {
        "version": __version__,
        "generated_at": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "labels": labels,
        "baseline": baseline,
        "aggregate": {
            "mean": "means",
            "median": "medians",
            "best": "the best run (highest IOPS and MB/s, lowest latency)",
        }[aggregate],
        "chart_legend": charts.legend(labels),
        "device_styles": charts.device_styles(len(labels)),
        "marks": {
            "grey": charts.BOUND_GREY,
            "stripe": charts.DISTURBED_STRIPE,
            "slower": charts.ratio_colour(0.5),
            "faster": charts.ratio_colour(2.0),
        },
        "title": " vs ".join(labels),
    }


def _state_warnings(frame: pd.DataFrame, sweeps: list[ResultsDir]) -> list[str]:
    """What state the drives were measured in, and where that was not the state asked for."""
    found = []
    # a PTS test prepares its drives as it prescribes, and its section says how
    bare = [s.path.name for s in sweeps if not s.manifest.precondition
            and not s.manifest.states and s.manifest.suite.pts is None]  # fmt: skip
    if bare:
        found.append(
            f"Devices were not preconditioned ({', '.join(bare)}): results show each drive "
            "in the state it was in (fresh drives score above spec; SLC caches flatter short "
            "runs). Use --precondition fill,workload for steady-state figures."
        )
    if "steady_state" in frame.columns:
        drifting = frame[known_true(~frame["steady_state"].astype("boolean"))]
        if "pts_group" in drifting.columns:  # a PTS group's rounds: its section says them
            drifting = drifting[drifting["pts_group"].isna()]
        for (job, label), rows in drifting.groupby(["job", "label"], sort=False):
            rounds = rows["ss_rounds"].dropna()
            found.append(
                f"{job} on {label}: not steady after {int(rounds.max()) if len(rounds) else '?'} "
                "rounds of preconditioning (SNIA PTS): its figures may still be drifting."
            )
    lost = frame[frame["state"].notna() & (frame["drive_state"] == "unknown")]
    for (job, label), _ in lost.groupby(["job", "label"], sort=False):
        found.append(
            f"{job} on {label}: the drive state before the run is not recorded "
            "(no state step in its results): it may not be the state its name says."
        )
    return found


def _states_words(states: list[str]) -> str:
    said = {"empty": "empty (the span discarded, TRIM, before every run)",
            "full": "full (the span filled before the pass)"}  # fmt: skip
    return "a pass over the jobs in each drive state: " + ", then ".join(said[s] for s in states)


def _burst_rows(frame: pd.DataFrame, labels: list[str]) -> list[dict[str, object]]:
    """Each bursty job's figures while bursting, per device (means over repeats), next to
    fio's own IOPS, which count the idle gaps."""
    bursty = frame[(frame["status"] == "ok") & frame["bursts"].notna()]
    rows = []
    for job, group in bursty.groupby("job", sort=False):
        cells = []
        for label in labels:
            runs = group[group["label"] == label].drop_duplicates(["sweep", "repeat"])
            if runs.empty:
                cells.append(None)
                continue
            cells.append({
                "bursts": f"{runs['bursts'].mean():.0f}",
                "iops": format_count(runs["burst_iops"].mean()),
                "bw": format_rate(runs["burst_bw_bytes"].mean()),
                "duty": f"{runs['burst_duty_pct'].mean():.0f} %",
                "fio_iops": format_count(group.loc[group["label"] == label, "iops"].sum()
                                         / len(runs)),
                "cpu": bool(known_true(runs["cpu_bound"]).any()),
                "sort": sort_key(runs["burst_iops"].mean()),
                "sort_bursts": sort_key(runs["bursts"].mean()),
                "sort_bw": sort_key(runs["burst_bw_bytes"].mean()),
                "sort_duty": sort_key(runs["burst_duty_pct"].mean()),
                "sort_fio_iops": sort_key(
                    group.loc[group["label"] == label, "iops"].sum() / len(runs)
                ),
            })  # fmt: skip
        rows.append({"job": job, "what": workload_words(group.iloc[0]), "cells": cells})
    return rows


_RESULT_KEYS = ["sweep", "host", "device", "label", "job"]


def _with_rounds(summary: pd.DataFrame, frame: pd.DataFrame) -> pd.DataFrame:
    """The summary with each result's preconditioning rounds (ss_rounds, from the frame: one
    record serves all of a job's repeats on a device) and its PTS test (pts_test)."""
    if summary.empty:
        return summary
    by = frame.groupby(_RESULT_KEYS, sort=False, dropna=False)
    rounds = by["ss_rounds"].max().to_frame().join(by["pts_test"].first())
    return summary.merge(rounds.reset_index(), on=_RESULT_KEYS, how="left")


def _has_drive_states(summary: pd.DataFrame) -> bool:
    """Whether any result was measured in a state preconditioning put its drive in: then
    the table says every result's state under its figures."""
    ok = summary[summary["status"] == "ok"]
    return bool(ok["drive_state"].notna().any() and (ok["drive_state"] != "as found").any())


def _has_latency_targets(summary: pd.DataFrame) -> bool:
    """Whether fio searched for a latency target in any result: then the table's legend says
    what the mark beside such a result means."""
    return bool("latency_search" in summary and summary["latency_search"].notna().any())


def _verdict_counts(summary: pd.DataFrame) -> list[tuple[str, int]]:
    """How many results got each verdict, in VERDICTS order."""
    counts = summary["verdict"].value_counts()
    return [(v, int(counts[v])) for v in VERDICTS if v in counts.index]


def _state_pairs(summary: pd.DataFrame, labels: list[str]) -> list[dict[str, object]]:
    """Each job of a --states sweep on the empty drive next to the full one, per device:
    IOPS in both states and full / empty (below 1: the full drive is slower)."""
    ok = summary[(summary["status"] == "ok") & summary["state"].notna()]
    if ok["state"].nunique() < 2:
        return []
    ok = ok.assign(
        base=[j.removesuffix(f".{s}") for j, s in zip(ok["job"], ok["state"], strict=True)]
    )
    rows = []
    for base, group in ok.groupby("base", sort=False):
        cells = []
        for label in labels:
            mine = group[group["label"] == label].set_index("state")
            if not {"empty", "full"} <= set(mine.index):
                cells.append(
                    {
                        "empty": "-",
                        "full": "-",
                        "ratio": "",
                        "cpu": False,
                        "sort": -1,
                        "sort_empty": -1,
                        "sort_full": -1,
                    }
                )
                continue
            # a bursty job's own IOPS count its idle gaps: compare it while bursting
            column = "burst_iops_mean" if mine["burst_iops_mean"].notna().all() else "iops_value"
            empty, full = mine.at["empty", column], mine.at["full", column]
            ratio = full / empty if empty else float("nan")
            cells.append({
                "empty": format_count(empty), "full": format_count(full),
                "ratio": f"{ratio:.2f}×" if pd.notna(ratio) else "-",
                "cpu": bool(known_true(mine["cpu_bound"]).any()),
                "sort": ratio if pd.notna(ratio) else -1,
                "sort_empty": sort_key(empty), "sort_full": sort_key(full),
            })  # fmt: skip
        rows.append({"job": base, "what": workload_words(group.iloc[0]), "cells": cells})
    return rows


def render_report(frame: pd.DataFrame, sweeps: list[ResultsDir], baseline: str | None = None,
                  aggregate: str = "mean", slo: list[Slo] | None = None) -> str:  # fmt: skip
    """The report as one HTML string."""
    context = build_context(frame, sweeps, baseline, aggregate, slo)
    return templates().get_template(TEMPLATE).render(**context)


def write_report(paths: Iterable[str | Path], output: str | Path, baseline: str | None = None,
                 aggregate: str = "mean", slo: str | list[str] | None = None) -> Path:  # fmt: skip
    """Load results folders, render the report and write it atomically to `output`: an
    .html name, never over a results file or a file that is not a report of ssdcompare's
    (ssdcompare.results.outputs). `slo`: latency targets ("p99=1ms") curves are answered at."""
    targets = parse_slos(slo)  # a bad target is said before anything is read
    # one folder named twice (./A and A/, a symlink) is read once, or it would count double
    folders = unique_folders(paths)
    if not folders:
        raise SsdcompareError("give at least one results folder")
    target = Path(output)
    check_report_path(target, folders)
    sweeps = [ResultsDir.open(p) for p in folders]
    frame = load(folders)
    text = render_report(frame, sweeps, baseline, aggregate, targets)
    check_report_path(target, folders)  # rendering takes a while: look again just before
    write_atomic(target, text)
    return target
