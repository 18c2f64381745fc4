"""The `ssdcompare` command: parses options, calls core functions, prints results.

Core code raises SsdcompareError with a message that says what to do; this module turns it into
"error: ..." on stderr and exit status 2. Nothing here measures or decides anything.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ssdcompare import __version__
from ssdcompare.devices import describe
from ssdcompare.errors import SsdcompareError
from ssdcompare.units import format_bytes, format_duration, parse_size

if TYPE_CHECKING:
    from ssdcompare.sweep import Progress

EXIT_ERROR = 2
EXIT_INTERRUPTED = 130


def _size_option(
    ctx: click.Context, param: click.Parameter, value: str | None
) -> int | None:
    """Click callback: "--size 4g" -> bytes, with the option named in the error."""
    if value is None:
        return None
    try:
        return parse_size(value)
    except ValueError as err:
        raise click.BadParameter(str(err), ctx=ctx, param=param) from None


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 99})
@click.version_option(__version__, prog_name="ssdcompare")
def cli() -> None:
    """Compare storage devices with fio, and say which numbers to trust."""


@cli.command("suites")
def suites_command() -> None:
    """List the bundled suites with their job counts and measuring time per device."""
    from ssdcompare.suites import list_suites

    infos = list_suites()
    width = max(len(i.name) for i in infos)
    for info in infos:
        kind = "writes" if info.writes else "read-only"
        click.echo(
            f"{info.name:<{width}}  {info.jobs:>3} jobs  "
            f"{format_duration(info.duration_s):>11} per device  {kind}"
        )
        for line in textwrap.wrap(info.description, 96 - width):
            click.echo(f"{'':<{width}}  {line}")
        if info.source:
            click.echo(f"{'':<{width}}  source: {info.source}")
        click.echo()
    click.echo("Use one with --suite NAME, or give the path of your own suite file.")


@cli.command("plan")
@click.option("--suite", "suite_name", required=True, help="Bundled suite name or suite file.")
@click.option("--devices", required=True, help="Comma-separated: nvme0n1,/dev/sdb,./file.img")
@click.option("--runtime", type=click.IntRange(min=1), help="Seconds per job (overrides suite).")
@click.option("--size", callback=_size_option,
              help="Span of each target to use, e.g. 10g; size of new file targets.")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True)
@click.option("--read-only", is_flag=True, help="Keep only jobs that do not write or trim.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Write the jobfiles to this folder instead of printing them.")
@click.option("--brief", is_flag=True, help="Print the job list only, not the jobfiles.")
@click.option("--no-validate", is_flag=True, help="Skip `fio --parse-only` on the jobfiles.")
def plan_command(
    suite_name: str,
    devices: str,
    runtime: int | None,
    size: int | None,
    repeat: int,
    read_only: bool,
    out: Path | None,
    brief: bool,
    no_validate: bool,
) -> None:
    """Show what a sweep would run: jobs, jobfiles and the estimated duration."""
    from ssdcompare.plan import make_plan, validate, write_jobfiles

    plan = make_plan(
        suite_name, devices, runtime_s=runtime, size_bytes=size, repeat=repeat,
        read_only=read_only,
    )  # fmt: skip
    suite = plan.suite
    click.echo(f"suite {suite.name}: {suite.description}")
    click.echo("targets:")
    for target in plan.targets:
        click.echo(f"  {describe(target)}")
    click.echo()
    header = f"{'job':<32} {'rw':<9} {'bs':>6} {'qd':>4} {'jobs':>4} {'read%':>5} " \
             f"{'fsync':>5} {'time':>7}"  # fmt: skip
    click.echo(header)
    for w in suite.workloads:
        mix = "" if w.rwmixread is None else str(w.rwmixread)
        click.echo(
            f"{w.job_id:<32} {w.rw:<9} {format_bytes(w.bs_bytes):>6} {w.iodepth:>4} "
            f"{w.numjobs:>4} {mix:>5} {w.fsync or '':>5} {format_duration(w.duration_s):>7}"
        )
    click.echo()
    if out is not None:
        for path in write_jobfiles(plan, out):
            click.echo(str(path))
        click.echo()
    elif not brief:
        for job in plan.jobs:
            click.echo(f"----- {job.target.name}/{job.file_name}")
            click.echo(job.text)
    for warning in plan.warnings:
        click.echo(f"warning: {warning}", err=True)
    rejected = 0
    if plan.fio is not None and not no_validate:
        rejections = validate(plan)
        rejected = len(rejections)
        for rejection in rejections:
            click.echo(
                f"fio rejects {rejection.job.target.name}/{rejection.job.file_name}:\n"
                f"  {rejection.reason}",
                err=True,
            )
        if not rejections:
            click.echo(f"{plan.fio.version} accepts all {len(plan.jobs)} jobfiles.")
    click.echo(
        f"{len(suite.workloads)} jobs x {len(plan.targets)} target(s) x {plan.repeat} "
        f"repeat(s) = {len(plan.jobs) * plan.repeat} fio runs, estimated "
        f"{format_duration(plan.estimated_s)}."
    )
    if rejected:
        raise SsdcompareError(f"fio rejected {rejected} jobfile(s); see above")


class _ProgressLine:
    """One updating status line on a terminal; silent when output is not a terminal."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty()
        self.width = 0

    def __call__(self, event: Progress) -> None:
        if not self.enabled:
            return
        eta = f", ETA {format_duration(event.eta_s)}" if event.eta_s is not None else ""
        if event.state == "start":
            line = (
                f"[{event.index}/{event.total}] {event.target}: {event.job}"
                f" (repeat {event.repeat}){eta}"
            )
            self._show(line)
        elif event.state != "ok":
            self._show("")
            click.echo(
                f"[{event.index}/{event.total}] {event.target}: {event.job} {event.state}"
                f"{': ' + event.error if event.error else ''}",
                err=True,
            )

    def _show(self, line: str) -> None:
        pad = max(self.width - len(line), 0)
        click.echo("\r" + line + " " * pad, nl=False, err=True)
        self.width = len(line)

    def close(self) -> None:
        if self.enabled and self.width:
            self._show("")
            click.echo("\r", nl=False, err=True)


@cli.command("sweep")
@click.option("--devices", help="Comma-separated: nvme0n1,/dev/sdb,./file.img")
@click.option("--suite", "suite_name", default="quick", show_default=True,
              help="Bundled suite name or suite file.")
@click.option("--runtime", type=click.IntRange(min=1), help="Seconds per job (overrides suite).")
@click.option("--size", callback=_size_option,
              help="Span of each target to use, e.g. 10g; size of new file targets.")
@click.option("--repeat", type=click.IntRange(min=1), default=1, show_default=True,
              help="Run the whole suite N times (each repeat stored apart).")
@click.option("--read-only", is_flag=True, help="Keep only jobs that do not write or trim.")
@click.option("--destroy-data", is_flag=True,
              help="Allow writing to devices that hold partitions or filesystem signatures.")
@click.option("--out", type=click.Path(file_okay=False, path_type=Path),
              help="Results folder (default: ./results/<time>-<suite>).")
@click.option("--resume", "resume_dir", type=click.Path(file_okay=False, path_type=Path),
              help="Continue an interrupted sweep: run only what is not finished.")
def sweep_command(
    devices: str | None,
    suite_name: str,
    runtime: int | None,
    size: int | None,
    repeat: int,
    read_only: bool,
    destroy_data: bool,
    out: Path | None,
    resume_dir: Path | None,
) -> None:
    """Run a suite on each device in turn, sampling the CPU, keeping every raw result."""
    from ssdcompare import sweep
    from ssdcompare.plan import make_plan

    if resume_dir is not None:
        plan, results, findings = sweep.reopen(resume_dir, destroy_data=destroy_data)
    else:
        if not devices:
            raise SsdcompareError("say which devices to test: --devices nvme0n1,nvme1n1")
        plan = make_plan(
            suite_name, devices, runtime_s=runtime, size_bytes=size,
            repeat=repeat, read_only=read_only, require_fio=True,
        )  # fmt: skip
        results, findings = sweep.start(
            plan, out, destroy_data=destroy_data, command_line=["ssdcompare", *sys.argv[1:]],
            read_only=read_only,
        )  # fmt: skip
    for finding in findings:
        click.echo(f"warning: overwriting {finding.device}: {finding.detail} (--destroy-data)",
                   err=True)  # fmt: skip
    for warning in plan.warnings:
        click.echo(f"warning: {warning}", err=True)
    runs = len(plan.jobs) * plan.repeat
    click.echo(
        f"{plan.suite.name}: {len(plan.suite.workloads)} jobs x {len(plan.targets)} device(s) x "
        f"{plan.repeat} repeat(s) = {runs} runs, about {format_duration(plan.estimated_s)}; "
        f"results in {results.path}",
        err=True,
    )
    progress = _ProgressLine()
    try:
        outcome = sweep.run(plan, results, progress=progress)
    except KeyboardInterrupt:
        # Ctrl-C between two fio runs: every finished run is already on disk
        progress.close()
        click.echo(f"interrupted: finished runs are kept. Continue with: ssdcompare sweep "
                   f"--resume {results.path}", err=True)  # fmt: skip
        sys.exit(EXIT_INTERRUPTED)
    finally:
        progress.close()
    _print_summary(results.path)
    report = _write_report(results.path)
    done = outcome.count("ok") + outcome.skipped_existing
    click.echo(
        f"{done}/{runs} runs ok, {outcome.count('failed')} failed, "
        f"{outcome.count('skipped')} skipped. Results: {results.path}"
    )
    if report is not None:
        click.echo(f"Report: {report}")
    if outcome.interrupted:
        click.echo(
            f"interrupted: finished runs are kept. Continue with: ssdcompare sweep --resume "
            f"{results.path}",
            err=True,
        )
        sys.exit(EXIT_INTERRUPTED)
    if outcome.count("failed") or outcome.count("skipped"):
        sys.exit(1)


def _write_report(path: Path) -> Path | None:
    """The HTML report of a finished (or interrupted) sweep; a failure here is only a warning,
    since every result is already safe on disk."""
    from ssdcompare.report import write_report

    try:
        return write_report([path], path / "report.html")
    except SsdcompareError as err:
        click.echo(f"warning: no report written: {err}", err=True)
        return None


def _print_summary(path: Path) -> None:
    """Per job: IOPS, MB/s and latency per device, with CPU-bound marks."""
    from ssdcompare.summary import summary_lines

    for line in summary_lines(path):
        click.echo(line)


@cli.command("report")
@click.argument("results", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("-o", "--output", type=click.Path(dir_okay=False, path_type=Path),
              help="HTML file to write (default: report.html in the first results folder).")
@click.option("--baseline", help="Device the ratios are relative to (default: the first).")
def report_command(results: tuple[Path, ...], output: Path | None, baseline: str | None) -> None:
    """Write a self-contained HTML comparison report from one or more results folders."""
    from ssdcompare.report import write_report

    target = write_report(results, output or results[0] / "report.html", baseline)
    click.echo(f"report: {target}")


@cli.command("export")
@click.argument("results", nargs=-1, required=True,
                type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, path_type=Path),
              help="results.csv or results.parquet (parquet needs pyarrow).")
@click.option("--summary", is_flag=True, help="One row per device and job (repeats averaged).")
def export_command(results: tuple[Path, ...], output: Path, summary: bool) -> None:
    """Export the results frame for spreadsheets and other tools."""
    from ssdcompare.frame import export

    rows = export(results, output, summary=summary)
    click.echo(f"{rows} rows written to {output}")


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI and turn project errors into clean messages."""
    try:
        cli.main(args=argv, prog_name="ssdcompare", standalone_mode=False)
    except SsdcompareError as err:
        click.echo(f"error: {err}", err=True)
        sys.exit(EXIT_ERROR)
    except click.exceptions.Abort:
        click.echo("interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except KeyboardInterrupt:
        click.echo("interrupted", err=True)
        sys.exit(EXIT_INTERRUPTED)
    except click.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
