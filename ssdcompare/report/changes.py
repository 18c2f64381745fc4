"""A comparison over time (ssdcompare.analysis.overtime) for people and machines: text for
a terminal, Markdown for a pull request's comment, JSON for other tools. Each starts with
the same summary line and names every regression (drive, job, metric, change, p) and every
job that was not compared or not judged, and why.
"""

from __future__ import annotations

import json
import math
from typing import Any

from ssdcompare.analysis.overtime import METRICS, Changes, Problem, Row
from ssdcompare.judge.stats import MIN_REPEATS
from ssdcompare.units import format_count, format_latency, format_rate

# the problems in the order they are listed, with their heading
_PROBLEMS = (("not comparable", "Not comparable"), ("not judged", "Not judged"),
             ("no result", "No result"), ("no figure", "No figure for the gate"),
             ("incomplete", "Runs missing"),
             ("only in BASE", "Only in BASE"),
             ("only in NEW", "Only in NEW"))  # fmt: skip
_COLUMNS = ("job", "drive", "metric", "base", "new", "change", "p", "verdict", "limited by")


def figure(metric: str, value: float) -> str:
    """A metric's figure in its unit: "2.00k IOPS", "8.2 MB/s", "97.0 ms"."""
    if value != value:
        return "-"
    if metric == "iops":
        return f"{format_count(value)} IOPS"
    if metric == "bw":
        return format_rate(value)
    return format_latency(value)


def change_words(row: Row) -> str:
    """ "-50.0 %" (with its 95 % interval where tested: "-50.0 % (-50.3 … -49.7)")."""
    if math.isnan(row.ratio):
        return "-"
    said = f"{row.change_pct:+.1f} %"
    if row.tested and row.ci_low != row.ci_high:
        said += f" ({(row.ci_low - 1) * 100:+.1f} … {(row.ci_high - 1) * 100:+.1f})"
    return said


def p_words(row: Row) -> str:
    if not row.tested:
        if min(row.base_repeats, row.new_repeats) < MIN_REPEATS:
            return f"untested (<{MIN_REPEATS} repeats)"
        return "untested (a zero)"  # a repeat that did no I/O: no logarithm to test
    return "< 0.001" if row.p_value < 0.001 else f"{row.p_value:.3f}"


def limited_words(row: Row) -> str:
    one, other = row.base_verdict or "?", row.new_verdict or "?"
    return one if one == other else f"{one} → {other}"


def regression_words(row: Row) -> str:
    """One regression in a line: drive, job, metric, change, p and the threshold."""
    # an IOPS figure says what it is ("2.00k IOPS"); the others need their name
    what = "" if row.metric == "iops" else f"{METRICS[row.metric].words} "
    return (f"{row.drive} {row.job}: {what}"
            f"{figure(row.metric, row.base)} → {figure(row.metric, row.new)}, "
            f"{change_words(row)}, p {p_words(row)} (fails {row.threshold})")  # fmt: skip


def problem_words(problem: Problem) -> str:
    where = problem.drive if problem.job is None else f"{problem.drive} {problem.job}"
    return f"{where}: {problem.why}"


def summary_line(changes: Changes) -> str:
    """The verdict of the whole comparison in one line."""
    counts = _counts(changes)
    if changes.exit_status == 2:
        head = f"COULD NOT COMPARE: {changes.nothing_judged()}"
    elif changes.regressions:
        head = f"FAIL: {len(changes.regressions)} regression{'s' * (len(changes.regressions) > 1)}"
    elif changes.exit_status == 1:
        head = "FAIL (--strict): not every job was judged"
    else:
        head = "PASS: no regression"
    said = ", ".join(f"{n} {what}" for what, n in counts.items() if n)
    gate = ", ".join(t.words() for t in changes.gate) or "none"
    if changes.judge:
        gate += f" (judging {', '.join(changes.judge)} results too)"
    size = "; untested changes (fewer than 3 repeats a side) judged on size alone" if (
        changes.untested) else ""  # fmt: skip
    return f"{head}. {said or 'nothing compared'}. Gate: {gate}, p < {changes.alpha:g}{size}."


# how the summary line counts each outcome of a figure and each kind of problem: the words
# for one and for several
_COUNTED = {
    "regression": ("regression", "regressions"),
    "not significant": ("change beyond the gate but not significant",
                        "changes beyond the gate but not significant"),
    "worse": ("worse figure", "worse figures"), "better": ("better figure", "better figures"),
    "same": ("same figure", "same figures"), "untested": ("untested figure", "untested figures"),
    "not comparable": ("job not comparable", "jobs not comparable"),
    "not judged": ("job not judged", "jobs not judged"),
    "no result": ("job without a result", "jobs without a result"),
    "no figure": ("figure missing for the gate", "figures missing for the gate"),
    "incomplete": ("job with runs missing", "jobs with runs missing"),
    "only in BASE": ("only in BASE", "only in BASE"),
    "only in NEW": ("only in NEW", "only in NEW"),
}  # fmt: skip


def _counts(changes: Changes) -> dict[str, int]:
    """How many figures had each outcome, and how many jobs had each problem, in words."""
    numbers = {outcome: sum(1 for r in changes.rows if r.outcome == outcome)
               for outcome in ("regression", "not significant", "worse", "better", "same",
                               "untested")}  # fmt: skip
    numbers.update({kind: len(changes.problems_of(kind)) for kind, _ in _PROBLEMS})
    return {_COUNTED[what][n != 1]: n for what, n in numbers.items()}


def _sides(changes: Changes) -> list[str]:
    lines = []
    for side in (changes.base, changes.new):
        dated = ", ".join(f"{s.path} ({s.created_at[:16].replace('T', ' ')})" for s in side.sweeps)
        lines.append(f"{side.role}: {dated}")
    return lines


def _pairs(changes: Changes) -> list[str]:
    lines = []
    for pair in changes.pairs:
        changed = changes.changed.get(pair.name) or []
        what = f"; changed: {'; '.join(changed)}" if changed else ""
        lines.append(f"{pair.name}: paired {pair.how}{what}")
    return lines


def shown_rows(changes: Changes) -> list[Row]:
    """The rows worth a line: every figure the gate looks at, and any other that changed
    significantly."""
    gated = {t.metric for t in changes.gate}
    return [r for r in changes.rows
            if r.metric in gated or r.outcome in ("better", "worse")]  # fmt: skip


def _cells(row: Row) -> list[str]:
    return [row.job, row.drive, row.metric, figure(row.metric, row.base),
            figure(row.metric, row.new), change_words(row), p_words(row),
            row.outcome.upper() if row.outcome == "regression" else row.outcome,
            limited_words(row)]  # fmt: skip


def text_lines(changes: Changes) -> list[str]:
    """For a terminal: the summary line, the sides and pairs, the regressions, a table of
    the figures shown, and the jobs not compared or judged."""
    lines = [summary_line(changes), *_sides(changes), *_pairs(changes)]
    lines += [f"note: {n}" for n in changes.base.notes + changes.new.notes]
    if changes.regressions:
        lines += ["", "Regressions:"] + [f"  {regression_words(r)}" for r in changes.regressions]
    rows = [_cells(r) for r in shown_rows(changes)]
    if rows:
        widths = [max(len(c) for c in column) for column in zip(_COLUMNS, *rows, strict=True)]
        lines.append("")
        for cells in [list(_COLUMNS), *rows]:
            lines.append(
                "  ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)).rstrip()
            )
    for kind, heading in _PROBLEMS:
        found = changes.problems_of(kind)
        if found:
            lines += ["", f"{heading}:"] + [f"  {problem_words(p)}" for p in found]
    return lines


def _escaped(text: str) -> str:
    return text.replace("|", "\\|")


def markdown(changes: Changes) -> str:
    """For a pull request's comment: the summary line, a table (job, drive, metric, base,
    new, change, p, verdict, limited by) and the jobs not compared or judged."""
    lines = [f"**{summary_line(changes)}**", ""]
    lines += [f"- {_escaped(line)}" for line in _sides(changes) + _pairs(changes)]
    rows = [_cells(r) for r in shown_rows(changes)]
    if rows:
        lines += ["", "| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
        lines += ["| " + " | ".join(_escaped(c) for c in cells) + " |" for cells in rows]
    for kind, heading in _PROBLEMS:
        found = changes.problems_of(kind)
        if found:
            lines += ["", f"**{heading}**", ""] + [f"- {_escaped(problem_words(p))}"
                                                     for p in found]  # fmt: skip
    return "\n".join(lines) + "\n"


def json_document(changes: Changes) -> str:
    """Everything, for machines: the sides, pairs, gate, every row, every problem and the
    exit status."""
    document: dict[str, Any] = {
        "summary": summary_line(changes),
        "exit_status": changes.exit_status,
        "gate": [t.words() for t in changes.gate],
        "alpha": changes.alpha,
        "strict": changes.strict,
        "allowed_changes": changes.allowed,
        "judged_too": changes.judge,
        "sides": {side.role: [{"folder": str(s.path), "created_at": s.created_at}
                              for s in side.sweeps]
                  for side in (changes.base, changes.new)},
        "pairs": [{"base": p.base, "new": p.new, "paired": p.how, "note": p.note,
                   "changed": changes.changed.get(p.name, [])}
                  for p in changes.pairs],
        "rows": [_row_document(r) for r in changes.rows],
        "problems": [vars(p) for p in changes.problems],
        "notes": changes.base.notes + changes.new.notes,
    }  # fmt: skip
    return json.dumps(document, indent=2, ensure_ascii=False) + "\n"


def _row_document(row: Row) -> dict[str, Any]:
    found = dict(vars(row), drive=row.drive, change_pct=row.change_pct, tested=row.tested)
    # JSON has no NaN: an unknown figure is null
    return {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in found.items()}
