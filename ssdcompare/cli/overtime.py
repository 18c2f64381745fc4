"""The commands that compare results over time: `ssdcompare compare BASE NEW` (with the
gate's exit status) and `ssdcompare history FOLDER...`."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from ssdcompare.errors import SsdcompareError

_folder = click.Path(path_type=Path)  # what a folder is not is said by load_side, in one line


# how compare and history print what they found: for a terminal, a pull request, or tools
_format_option = click.option(
    "--format",
    "output_format",
    type=click.Choice(["text", "markdown", "json"]),
    default="text",
    show_default=True,
)


def _pairs_option(values: tuple[str, ...]) -> list[tuple[str, str]]:
    """`--match nvme0n1=nvme1n1` as (BASE's name, NEW's name)."""
    found = []
    for value in values:
        one, sep, other = value.partition("=")
        if not sep or not one.strip() or not other.strip():
            raise SsdcompareError(f"--match {value!r}: write BASE-DRIVE=NEW-DRIVE, e.g. "
                                  "--match nvme0n1=nvme1n1")  # fmt: skip
        found.append((one.strip(), other.strip()))
    return found


@click.command("compare")
@click.argument("folders", nargs=-1, type=_folder)
@click.option("--base", "base_folders", multiple=True, type=_folder,
              help="A BASE results folder; give several for repeats made as separate sweeps "
              "(then give NEW's with --new).")  # fmt: skip
@click.option(
    "--new",
    "new_folders",
    multiple=True,
    type=_folder,
    help="A NEW results folder (several: repeats made as separate sweeps).",
)
@click.option("--fail-if", "fail_if", multiple=True, metavar="'METRIC < CHANGE%'",
              help="A regression: e.g. 'iops < -5%' or 'p99 > +10%' (metrics: iops, bw, "
              "mean, p99, p99.9, slo). Default: 'iops < -5%' and 'p99 > +10%'.")  # fmt: skip
@click.option(
    "--alpha",
    type=float,
    default=0.05,
    show_default=True,
    help="A change is significant when Welch's p-value is below this.",
)
@click.option(
    "--strict", is_flag=True, help="Also fail when a job could not be compared or judged."
)
@click.option(
    "--match",
    "matches",
    multiple=True,
    metavar="BASE-DRIVE=NEW-DRIVE",
    help="Pair these drives (default: by serial, else by name).",
)
@click.option(
    "--device",
    "devices",
    multiple=True,
    metavar="NAME[,NAME]",
    help="Compare only these drives of BASE.",
)
@click.option("--allow-change", "allow_change", multiple=True, metavar="WHAT[,WHAT]",
              help="A recorded change that is what you measure (kernel, governor, firmware, "
              "link, placement, scheduler, queue, device, machine, drive): compare across "
              "it instead of calling the results not comparable.")  # fmt: skip
@click.option("--judge", "judge", multiple=True, metavar="VERDICT[,VERDICT]",
              help="Also judge results limited by these (cpu, host, disturbed, throttled): "
              "e.g. disturbed on a shared CI runner.")  # fmt: skip
@click.option("--slo", multiple=True, metavar="LATENCY=TARGET",
              help="Also compare each curve's IOPS within this latency (e.g. p99=1ms) as the "
              "metric slo ('slo < -10%').")  # fmt: skip
@_format_option
def compare_command(
    folders: tuple[Path, ...],
    base_folders: tuple[Path, ...],
    new_folders: tuple[Path, ...],
    fail_if: tuple[str, ...],
    alpha: float,
    strict: bool,
    matches: tuple[str, ...],
    devices: tuple[str, ...],
    allow_change: tuple[str, ...],
    judge: tuple[str, ...],
    slo: tuple[str, ...],
    output_format: str,
) -> None:
    """Compare NEW results with BASE ones, job by job; exit 1 on a regression.

    BASE and NEW are results folders. Exit status: 0 no regression, 1 a regression (each
    named), 2 nothing could be compared. Given more than two folders, shows their history.
    """
    from ssdcompare.analysis.overtime import compare_results, parse_fail_if
    from ssdcompare.analysis.sides import load_side
    from ssdcompare.report.changes import json_document, markdown, text_lines

    base, new = _sides(folders, base_folders, new_folders)
    if base is None:
        _refuse_gate_options(click.get_current_context())
        _history(folders, devices, output_format)
        return
    gate = [parse_fail_if(t) for t in fail_if] or None
    changes = compare_results(
        load_side("BASE", base), load_side("NEW", new), gate, alpha=alpha, strict=strict,
        matches=_pairs_option(matches), allow_change=list(allow_change),
        judge=list(judge), drives=list(devices), slo=list(slo),
    )  # fmt: skip
    _show(output_format, changes, json_document, markdown, text_lines)
    sys.exit(changes.exit_status)


def _show(
    output_format: str,
    found: Any,
    json_document: Callable[[Any], str],
    markdown: Callable[[Any], str],
    text_lines: Callable[[Any], list[str]],
) -> None:
    """`found` on stdout in the format asked for, by its renderers. A reader that goes away
    (`| head -1`) loses the rest, and the exit status stays the gate's: a closed pipe must
    not read as a regression."""
    if output_format == "json":
        text = json_document(found)
    elif output_format == "markdown":
        text = markdown(found)
    else:
        text = "".join(f"{line}\n" for line in text_lines(found))
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


# compare's options that judge: given with more than two folders (a history), they would
# be ignored, and a gate meant to fail would pass
_GATE_OPTIONS = ("fail_if", "alpha", "strict", "matches", "allow_change", "judge", "slo")


def _refuse_gate_options(ctx: click.Context) -> None:
    from click.core import ParameterSource

    given = [name for name in _GATE_OPTIONS
             if ctx.get_parameter_source(name) is not ParameterSource.DEFAULT]  # fmt: skip
    if given:
        options = ", ".join("--" + name.replace("_", "-").replace("matches", "match")
                            for name in given)  # fmt: skip
        raise SsdcompareError(
            f"{options}: compare judges two result sets, and more than two folders were given "
            "(their history has no gate). Give BASE NEW, or several folders a side with "
            "--base and --new"
        )


def _sides(
    folders: tuple[Path, ...], base: tuple[Path, ...], new: tuple[Path, ...]
) -> tuple[list[Path], list[Path]] | tuple[None, None]:
    """BASE's and NEW's folders as given (two folders, or --base and --new); (None, None)
    for more than two folders: a history."""
    if base or new:
        if folders or not (base and new):
            raise SsdcompareError("give BASE and NEW as two folders (BASE NEW), or each "
                                  "side's folders with --base and --new: both options, and "
                                  "no folder without one")  # fmt: skip
        return list(base), list(new)
    if len(folders) < 2:
        raise SsdcompareError("give two results folders: BASE NEW (or --base and --new)")
    if len(folders) > 2:
        return None, None
    return [folders[0]], [folders[1]]


def _history(
    folders: tuple[Path, ...],
    devices: tuple[str, ...],
    output_format: str,
    metric: str = "iops",
    output: Path | None = None,
) -> None:
    """Show the history of drives over `folders` in `output_format`, and write its HTML
    page to `output` when given."""
    from ssdcompare.analysis.history import history
    from ssdcompare.analysis.overtime import names_given
    from ssdcompare.report.history import json_document, markdown, text_lines, write_html
    from ssdcompare.results.outputs import check_output_folder

    check_output_folder(output)
    found = history(list(folders), metric, names_given(devices))
    if output is not None:
        write_html(found, output)
    _show(output_format, found, json_document, markdown, text_lines)
    if output is not None:
        click.echo(f"history: {output}", err=True)


@click.command("history")
# not click's exists=True: a missing folder is said in one line, as any other that is not one
@click.argument("folders", nargs=-1, type=click.Path(path_type=Path))
@click.option(
    "--device",
    "devices",
    multiple=True,
    metavar="NAME[,NAME]",
    help="Show only these drives, as the first folder that has each names it (default: all).",
)
@click.option(
    "--metric",
    default="iops",
    show_default=True,
    metavar="iops|bw|mean|p99|p99.9",
    help="The figure followed over the dates.",
)
@_format_option
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also write an HTML page (a table and a trend line per job), ending in .html; only "
    "a page ssdcompare made is ever replaced.",
)
def history_command(
    folders: tuple[Path, ...],
    devices: tuple[str, ...],
    metric: str,
    output_format: str,
    output: Path | None,
) -> None:
    """Show drives' results over two or more results folders, in date order.

    Each folder is one date (when its sweep started); a drive is followed by its serial,
    WWID or loop backing file, else its name. Per job: each date's figure, its change from
    the first date, and what changed between dates (kernel, firmware, fio, ...).
    """
    _history(folders, devices, output_format, metric, output)
