"""The `ssdcompare` command: parses options, calls core functions, prints results.

Core code raises SsdcompareError with a message that says what to do; this module turns it into
"error: ..." on stderr and exit status 2. Nothing here measures or decides anything.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

import click

from ssdcompare.cli.terminal import (
    ProgressLine,
    announce,
    plan_lines,
    purge_lines,
    resume_hint,
    rounds_lines,
    rounds_words,
    say,
    suite_lines,
    summary_lines,
)
from ssdcompare.errors import SsdcompareError, Stopped, interrupted, stop_reason
from ssdcompare.units import format_duration, parse_size
from ssdcompare.version import __version__

if TYPE_CHECKING:
    from ssdcompare.cli.api import SweepChoices
    from ssdcompare.results.store import ResultsDir
    from ssdcompare.run.plan import Plan

EXIT_ERROR = 2
EXIT_BUG = 3
EXIT_INTERRUPTED = 130


def _size_option(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """Click callback: "--size 4g" -> bytes, with the option named in the error."""
    if value is None:
        return None
    try:
        return parse_size(value)
    except ValueError as err:
        raise click.BadParameter(str(err), ctx=ctx, param=param) from None


def _seconds_option(
    ctx: click.Context, param: click.Parameter, value: float | None
) -> float | None:
    """Click callback: a time limit is a finite number of seconds; "nan" and "inf" read as
    numbers but would let a hung job hold the device for ever."""
    if value is not None and not math.isfinite(value):
        raise click.BadParameter(
            f"{value} is not a time limit; give seconds, e.g. 600", ctx=ctx, param=param
        )
    return value


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 99})
@click.version_option(__version__, prog_name="ssdcompare")
def cli() -> None:
    """Compare storage devices with fio, and say which numbers to trust."""


@cli.command("suites")
def suites_command() -> None:
    """List the bundled suites with their job counts and measuring time per device."""
    from ssdcompare.suite.files import list_suites

    for line in suite_lines(list_suites()):
        click.echo(line)


LOOPBACK = "127.0.0.1"
EVERY_INTERFACE = ("0.0.0.0", "::")


def _check_every_interface_is_meant(address: str) -> None:
    """An address that means every interface, spelled otherwise than 0.0.0.0 or :: ("0",
    "0x0", "0.0"), is refused: listening on every interface must be asked for plainly."""
    import ipaddress
    import socket

    try:
        found = socket.getaddrinfo(address, None, proto=socket.IPPROTO_TCP)
    except (OSError, UnicodeError):
        return  # not an address this machine resolves: binding to it says so
    if address not in EVERY_INTERFACE and any(
        ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_unspecified for info in found
    ):
        raise SsdcompareError(
            f"--address {address} means every interface of this machine: anyone who reaches "
            f"the port could run jobs here. Give {' or '.join(EVERY_INTERFACE)} if that is "
            f"what you mean, or an address of this machine ({LOOPBACK}, the default, serves "
            "this machine only)"
        )


@cli.command("serve")
@click.option("--address", default=LOOPBACK, show_default=True,
              help="Address to listen on: this machine's on a management network, ideally; "
              "0.0.0.0 or :: for every interface.")  # fmt: skip
@click.option("--port", type=click.IntRange(1, 65535), default=8765, show_default=True)
@click.option("--allow-root", is_flag=True,
              help="Serve as root although every user who reaches the port can then run "
              "commands as root (fio's server has no authentication).")  # fmt: skip
def serve_command(address: str, port: int, allow_root: bool) -> None:
    """Run a fio server here for a sweep on another machine (`sweep --hosts`)."""
    from ssdcompare.fio.binary import find_fio, server_command_line
    from ssdcompare.run.runner import start_server, stop_server

    _check_serving(address, allow_root)
    fio = find_fio()
    kind = "ip6" if ":" in address else "ip"
    _check_port_free(address, port, kind)
    _say_serving(fio.version, address, port, kind)
    server = start_server(server_command_line(fio.path, kind, address, port))
    try:
        with _stop_on_signals():  # SIGTERM and SIGHUP stop the server too
            code = server.wait()
    except KeyboardInterrupt as stop:
        stop_server(server)
        say("fio server stopped")
        sys.exit(_exit_code(stop))
    # a server ends only when stopped: ending by itself, it could not serve
    say(
        f"error: fio --server ended by itself (status {code}): is {address} an address of "
        "this machine?"
    )
    sys.exit(EXIT_ERROR)


def _check_serving(address: str, allow_root: bool) -> None:
    """Refuse an address that is empty or means every interface unasked, and serving as root
    without --allow-root."""
    if not address.strip():  # fio and the kernel would take it for every interface
        raise SsdcompareError(
            f"--address is empty: give an address of this machine to listen on ({LOOPBACK} "
            f"is the default; {' or '.join(EVERY_INTERFACE)} for every interface)"
        )
    _check_every_interface_is_meant(address)
    if os.geteuid() == 0 and not allow_root:
        raise SsdcompareError(
            "refusing to serve as root: fio's server has no authentication and runs every job "
            "it is sent, with options that run commands (exec_prerun) and write any device, as "
            "the user running it. Every user of this machine can reach it on 127.0.0.1, and "
            "anyone who reaches the port on other addresses. Run it as a user allowed to use "
            "the devices to measure (e.g. a member of the disk group), or give --allow-root on "
            "a machine whose users and network you trust"
        )


def _check_port_free(address: str, port: int, kind: str) -> None:
    """Bind the address and port once: fio's server would share a port in use, or fail to
    bind without a word."""
    import socket

    try:
        with socket.socket(socket.AF_INET6 if kind == "ip6" else socket.AF_INET) as probe:
            probe.bind((address, port))
    except OSError as err:
        raise SsdcompareError(f"cannot listen on {address}:{port}: {err.strerror}") from None


def _say_serving(version: str, address: str, port: int, kind: str) -> None:
    """Where the server listens, how the other machine reaches it, and who else can."""
    import getpass

    spot = f"[{address}]:{port}" if kind == "ip6" else f"{address}:{port}"
    if address in EVERY_INTERFACE:
        spot = f"THIS-HOST'S-ADDRESS:{port}"
    reach = ("every user of this machine" if address == LOOPBACK
             else "every user of this machine and anyone who reaches this port")  # fmt: skip
    say(f"fio server ({version}) for ssdcompare on {address}:{port}; on the other machine: "
        f"ssdcompare sweep --hosts NAME={spot} --devices NAME:DEVICE. No authentication: "
        f"{reach} can run any fio job here, and with it any command, as {getpass.getuser()}. "
        "Ctrl-C stops it.")  # fmt: skip
    if address == LOOPBACK:
        say(f"listening on {LOOPBACK} only: sweeps on this machine reach it, other machines "
            "do not; give --address this machine's address on their network (or 0.0.0.0 for "
            "every interface) to serve them")  # fmt: skip


# The options `plan` and `sweep` take alike, each under the name run_sweep gives it (SweepChoices,
# plan.PLANNED_CHOICES), so that both commands pass them on the same way (_planned).
_SHARED_OPTIONS = (
    click.option(
        "--runtime",
        "runtime_s",
        type=click.IntRange(min=1),
        help="Seconds per job (overrides suite).",
    ),
    click.option(
        "--size",
        callback=_size_option,
        help="Span of each target to use, e.g. 10g; size of new file targets.",
    ),
    click.option(
        "--repeat",
        type=click.IntRange(min=1, max=1000),
        default=1,
        show_default=True,
        help="Run the whole suite N times (each repeat stored apart).",
    ),
    click.option("--read-only", is_flag=True, help="Keep only jobs that do not write or trim."),
    click.option(
        "--destroy-data",
        is_flag=False,
        flag_value="*",
        default=None,
        metavar="[DEVICE,...]",
        help="Allow writing to devices that hold partitions or filesystem signatures; with "
        "names, only to those. A device on a remote host must be named: --destroy-data "
        "a:nvme0n1.",
    ),
    click.option(
        "--hosts",
        metavar="NAME=ADDRESS[:PORT],...",
        help="Hosts running `fio --server` (port 8765 unless given); devices on them are named "
        "NAME:DEVICE in --devices, e.g. --hosts a=10.0.0.5 --devices a:nvme0n1,nvme0n1.",
    ),
    click.option(
        "--allow-option",
        "allow_options",
        multiple=True,
        metavar="NAME[,NAME]",
        help="Accept a fio option that makes results harder to read (e.g. bssplit); "
        "recorded in the results and shown in the report.",
    ),
    click.option(
        "--precondition",
        metavar="none|fill|workload|fill,workload",
        help="Put each drive in a known state first: fill it (sequential writes over the span, "
        "twice), and/or run each job until steady (SNIA PTS). Writes; recorded in the results. "
        "Default: what the suite asks for (storagereview: fill,workload), none otherwise.",
    ),
    click.option(
        "--states",
        metavar="none|empty|full|empty,full",
        help="Measure each drive in these states, a pass over the jobs each: empty (the span "
        "discarded, TRIM, before every run) and full (the span filled before the pass). Writes; "
        "every result says its state. Default: what the suite asks for (anandtech: empty,full).",
    ),
    click.option(
        "--scale",
        type=float,
        metavar="FACTOR",
        help="Shorten a PTS test (the pts-* suites) for a first look: every runtime and idle "
        "time times FACTOR (0.01: a minute-long round job runs 0.6 s), its rounds, rules and "
        "size caps as written. Every result and the report say it was scaled.",
    ),
    click.option(
        "--purge",
        metavar="discard|nvme-format|nvme-sanitize|none",
        help="How a PTS test (the pts-* suites) purges each drive --destroy-data offers before "
        "its first round: discard (BLKDISCARD of the whole device, holes punched through a "
        "file; the default), nvme-format (nvme format --ses=1: user-data erase), "
        "nvme-sanitize (nvme sanitize --sanact=2: block erase, waited for), none. The NVMe "
        "ones need nvme-cli and an NVMe namespace alone on its controller. Drives not offered "
        "are not purged; every result says which were.",
    ),
)

_Command = TypeVar("_Command", bound=Callable[..., None])


# sweep and report: latency targets the curves are answered at
_slo_option = click.option(
    "--slo",
    multiple=True,
    metavar="LATENCY=TARGET",
    help="A latency target that the curves are answered at, e.g. p99=1ms (also p50, p99.9, "
    "p99.99, mean; give several, or comma-separate them): per device, the highest IOPS "
    "that keeps that latency within it.",
)


def _shared_options(command: _Command) -> _Command:
    """Give a command the options `plan` and `sweep` share, in the order listed."""
    for option in reversed(_SHARED_OPTIONS):
        command = option(command)
    return command


def _planned(values: dict[str, Any]) -> SweepChoices:
    """The planning choices a command was given, as run_sweep takes them: those not given
    (None) left out, so that the sweep's own defaults apply."""
    return cast("SweepChoices", {name: v for name, v in values.items() if v is not None})


def _consent(destroy_data: str | None) -> bool | str:
    """--destroy-data as given: True (bare), the names, or False."""
    return True if destroy_data == "*" else destroy_data or False


@cli.command("plan")
@click.option("--suite", required=True, help="Bundled suite name or suite file.")
@click.option(
    "--devices",
    required=True,
    help="Comma-separated: nvme0n1,/dev/sdb,./file.img; "
    "a+b a group; host:device on a --hosts host",
)
@_shared_options
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Write the jobfiles to this folder instead of printing them.",
)
@click.option("--brief", is_flag=True, help="Print the job list only, not the jobfiles.")
@click.option("--no-validate", is_flag=True, help="Skip `fio --parse-only` on the jobfiles.")
def plan_command(
    suite: str,
    devices: str,
    out: Path | None,
    brief: bool,
    no_validate: bool,
    destroy_data: str | None,
    **planned: Any,
) -> None:
    """Show what a sweep would run (jobs, jobfiles, the estimated duration) and what it would
    refuse, after the same checks the sweep makes, without writing anything."""
    from ssdcompare.cli.api import consent_given, plan_options
    from ssdcompare.run.plan import make_plan

    plan = make_plan(suite, devices, plan_options(_planned(planned)))
    for line in [*plan_lines(plan), *purge_lines(plan, consent_given(_consent(destroy_data)))]:
        click.echo(line)
    _show_jobfiles(plan, out, brief)
    for warning in plan.warnings:
        click.echo(f"warning: {warning}", err=True)
    rejected = _rejection_lines(plan) if plan.fio is not None and not no_validate else 0
    refused = _preflight_lines(plan, consent_given(_consent(destroy_data)))
    click.echo(_size_line(plan))
    if rejected:
        raise SsdcompareError(f"{rejected} jobfile(s) cannot run; see above")
    if refused:
        raise SsdcompareError("the sweep would be refused as planned; see above")


def _size_line(plan: Plan) -> str:
    """How many runs the plan makes, and how long it takes; a PTS test's at most (its rounds
    stop once steady)."""
    if plan.suite.pts is not None:
        return (f"On {len(plan.targets)} target(s): {rounds_words(plan)}; at most "
                f"{format_duration(plan.estimated_s)}.")  # fmt: skip
    return (f"{len(plan.suite.workloads)} jobs x {len(plan.targets)} target(s) x {plan.repeat} "
            f"repeat(s) = {plan.runs} fio runs, estimated "
            f"{format_duration(plan.estimated_s)}.")  # fmt: skip


def _show_jobfiles(plan: Plan, out: Path | None, brief: bool) -> None:
    """The plan's jobfiles: written into `out` (their paths said), or printed unless brief."""
    from ssdcompare.results.outputs import write_jobfiles

    if out is not None:
        for path in write_jobfiles(plan.jobs, out):
            click.echo(str(path))
        click.echo()
    elif not brief:
        for job in plan.jobs:
            click.echo(f"----- {job.target.name}/{job.file_name}")
            click.echo(job.text)


def _rejection_lines(plan: Plan) -> int:
    """Have fio read every jobfile and say what it rejects; how many it rejected."""
    from ssdcompare.run.plan import validate

    assert plan.fio is not None
    rejections = validate(plan)
    for rejection in rejections:
        click.echo(
            f"{rejection.said}:\n  {rejection.reason}",
            err=True,
        )
    if not rejections:
        click.echo(f"{plan.fio.version} accepts all {len(plan.jobs)} jobfiles.")
    return len(rejections)


def _preflight_lines(plan: Plan, consent: bool | list[str]) -> bool:
    """The sweep's own checks before it writes (ssdcompare.run.sweep.preflight), said for the
    plan: what it would refuse and why, or what --destroy-data lets it overwrite. True when
    it would be refused."""
    from ssdcompare.run.preflight import preflight

    try:
        _, findings = preflight(plan, consent)
    except SsdcompareError as err:
        click.echo(f"the sweep would refuse: {err}", err=True)
        return True
    for finding in findings:
        click.echo(f"warning: the sweep would overwrite {finding.device}: {finding.detail} "
                   "(--destroy-data)", err=True)  # fmt: skip
    if plan.written_targets:
        click.echo("The safety checks for writing pass on every target.")
    return False


def _refuse_resume_conflicts(ctx: click.Context) -> None:
    """--resume with options that would change the sweep: say so instead of ignoring them."""
    from ssdcompare.run.plan import PLANNED_CHOICES

    given = [
        flag for name, flag in PLANNED_CHOICES
        if ctx.get_parameter_source(name) not in (None, click.core.ParameterSource.DEFAULT)
    ]  # fmt: skip
    if given:
        raise SsdcompareError(
            f"--resume continues a sweep exactly as it was planned; {', '.join(given)} would "
            "change it, so the results would not be comparable. Drop them, or start a new "
            "sweep with --out. (--devices picks which targets to resume; --destroy-data must "
            "be given again where needed.)"
        )


@contextlib.contextmanager
def _stop_on_signals() -> Iterator[None]:
    """SIGTERM and SIGHUP stop a sweep the way Ctrl-C does: fio is stopped cleanly, finished
    runs are kept, and the resume command is printed."""

    def stop(signum: int, frame: object) -> None:
        raise Stopped(signum)

    # a signal ignored on purpose stays ignored (e.g. SIGHUP under nohup)
    wanted = [s for s in (signal.SIGTERM, signal.SIGHUP) if signal.getsignal(s) != signal.SIG_IGN]
    previous = {sig: signal.signal(sig, stop) for sig in wanted}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _exit_code(stop: BaseException | str | None) -> int:
    if isinstance(stop, Stopped):
        return 128 + stop.signum
    if isinstance(stop, str) and stop.startswith("SIG"):
        return 128 + signal.Signals[stop].value
    return EXIT_INTERRUPTED


@cli.command("sweep")
@click.option(
    "--devices",
    help="Comma-separated: nvme0n1,/dev/sdb,./file.img; "
    "a+b measures a and b as one group; host:device a device on a --hosts host",
)
@click.option(
    "--suite",
    default="quick",
    show_default=True,
    help="Bundled suite name or suite file.",
)
@_shared_options
@click.option(
    "--parallel-hosts",
    is_flag=True,
    help="Run each job on one device of every host at the same time (a fio client per host, "
    "each with its own time limit), instead of one device after another; each device's "
    "results are kept apart, and a host that hangs or goes away costs only its own runs.",
)
@click.option(
    "--ceiling",
    is_flag=True,
    help="First run each job once on a RAM disk made for the purpose (zram, root, removed "
    "after): results at 80 % or more of it measure the host, not the drive (verdict host). "
    "Jobs that write get no ceiling (zram compresses: its writes can be slower than a drive).",
)
@click.option(
    "--job-timeout",
    type=click.FloatRange(min=1),
    callback=_seconds_option,
    metavar="SECONDS",
    help="Give up on a job after this long (default: twice its time + 2 min); the "
    "rest of that device's jobs are then skipped.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    help="Results folder (default: ./results/<time>-<suite>).",
)
@_slo_option
@click.option(
    "--resume",
    "resume_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Continue an interrupted sweep: run only what is not finished.",
)
@click.pass_context
def sweep_command(
    ctx: click.Context,
    devices: str | None,
    suite: str,
    destroy_data: str | None,
    job_timeout: float | None,
    resume_dir: Path | None,
    slo: tuple[str, ...],
    **planned: Any,
) -> None:
    """Run a suite on each device in turn, sampling the CPU, keeping every raw result."""
    from ssdcompare.analysis.slo import parse_slos
    from ssdcompare.cli.api import prepare_sweep

    parse_slos(list(slo))  # a mistyped target is said before anything runs
    with _stop_on_signals():
        choices: SweepChoices = {"destroy_data": _consent(destroy_data)}
        if resume_dir is not None:
            _refuse_resume_conflicts(ctx)
            choices["resume"] = resume_dir
        else:
            choices.update(_planned(planned))
        plan, results, findings = prepare_sweep(
            devices, None if resume_dir else suite, ["ssdcompare", *sys.argv[1:]], **choices
        )
        announce(plan, results.path, findings)
        if slo and not any(w.curve for w in plan.suite.workloads):
            say(
                "note: --slo answers latency-vs-load curves, and this suite has none: give a "
                "job a curve (curve: [10, 50, 70, 80, 90, 100]), or use --suite latency-curve"
            )
        _run_and_report(plan, results, job_timeout, list(slo))


def _count_lines(plan: Plan, results: ResultsDir, outcome: Any) -> list[str]:
    """How many runs ended how; for a PTS test first how each group's rounds ended, and the
    runs counted as made (rounds until steady make as many runs as rounds were needed)."""
    done, planned, lines = outcome.count("ok") + outcome.skipped_existing, plan.runs, []
    if plan.suite.pts is not None:
        lines = rounds_lines(results)
        done, planned = outcome.count("ok"), len(outcome.statuses)
    cut = outcome.count("interrupted")
    cut_short = f", {cut} interrupted (--resume runs them again)" if cut else ""
    return [*lines, f"{done}/{planned} runs ok, {outcome.count('failed')} failed, "
            f"{outcome.count('skipped')} skipped{cut_short}. Results: {results.path}"]  # fmt: skip


def _run_and_report(
    plan: Plan, results: ResultsDir, job_timeout: float | None, slo: list[str]
) -> None:
    from ssdcompare.run import sweep

    progress = ProgressLine()
    try:
        outcome = sweep.run(plan, results, progress=progress, job_timeout_s=job_timeout)
    except KeyboardInterrupt as stop:
        # stopped between two fio runs: every finished run is already on disk
        progress.close()
        resume_hint(results.path, stop_reason(stop))
        sys.exit(_exit_code(stop))
    except SsdcompareError as err:  # e.g. the results disk filled up
        progress.close()
        say(f"error: {err}")
        say(f"finished runs are kept in {results.path}; once that is fixed, continue with: "
            f"ssdcompare sweep --resume {results.path}")  # fmt: skip
        sys.exit(EXIT_ERROR)
    finally:
        progress.close()
    for note in outcome.notes:
        say(f"note: {note}")
    try:
        # the report first: a closed or broken stdout must not cost it
        report = _write_report(results.path, slo)
        for line in summary_lines(results.path, slo):
            say(line, sys.stdout)
    except KeyboardInterrupt:
        say(f"interrupted while summing up; every run is on disk. The report: ssdcompare "
            f"report {results.path}")  # fmt: skip
        sys.exit(EXIT_INTERRUPTED)
    for line in _count_lines(plan, results, outcome):
        say(line, sys.stdout)
    if report is not None:
        say(f"Report: {report}", sys.stdout)
    if outcome.interrupted:
        resume_hint(results.path, outcome.stop_reason)
        sys.exit(_exit_code(outcome.stop_reason))
    lost = sorted({h for s in outcome.statuses if s.host_lost for h in s.lost_hosts})
    if lost:
        say(f"host {', '.join(lost)} stopped answering: its jobs did not run. Once it is "
            f"back: ssdcompare sweep --resume {results.path}")  # fmt: skip
    if outcome.count("failed") or outcome.count("skipped"):
        sys.exit(1)


def _write_report(path: Path, slo: list[str]) -> Path | None:
    """The HTML report of a finished (or interrupted) sweep; a failure here is only a warning,
    since every result is already safe on disk."""
    from ssdcompare.report.build import write_report
    from ssdcompare.results.store import default_report

    try:
        return write_report([path], default_report(path), slo=slo)
    except SsdcompareError as err:
        click.echo(f"warning: no report written: {err}", err=True)
        return None


# results folders named on the command line (report, export)
_results_folders = click.argument(
    "results", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False,
                                                         path_type=Path),
)  # fmt: skip


@cli.command("report")
@_results_folders
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="HTML file to write, ending in .html (default: report.html in the first results "
    "folder); only a report ssdcompare made is ever replaced.",
)
@click.option("--baseline", help="Device the ratios are relative to (default: the first).")
@click.option("--aggregate", type=click.Choice(["mean", "median", "best"]), default="mean",
              show_default=True,
              help="What the tables show for several repeats: their mean, median, or the best "
              "run (as CrystalDiskMark shows the best of 5).")  # fmt: skip
@_slo_option
def report_command(
    results: tuple[Path, ...],
    output: Path | None,
    baseline: str | None,
    aggregate: str,
    slo: tuple[str, ...],
) -> None:
    """Write a self-contained HTML comparison report from one or more results folders."""
    from ssdcompare.analysis.frame import damaged_runs, load
    from ssdcompare.report.build import write_report
    from ssdcompare.results.outputs import check_output_folder
    from ssdcompare.results.store import default_report

    check_output_folder(output)
    target = write_report(results, output or default_report(results[0]), baseline, aggregate,
                          list(slo))  # fmt: skip
    _say_damaged(damaged_runs(load(results)))
    click.echo(f"report: {target}")


def _say_damaged(damaged: list[str]) -> None:
    """Name each run whose stored files could not be used (the report and the export show
    it as DAMAGED): a results folder from someone else may hold such files."""
    for line in damaged:
        click.echo(f"warning: damaged, left out: {line}", err=True)


@cli.command("export")
@_results_folders
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="results.csv or results.parquet (parquet needs pyarrow).",
)
@click.option("--summary", is_flag=True, help="One row per device and job (repeats averaged).")
def export_command(results: tuple[Path, ...], output: Path, summary: bool) -> None:
    """Export the results frame for spreadsheets and other tools."""
    from ssdcompare.analysis.export import export_frame
    from ssdcompare.analysis.frame import damaged_runs, load
    from ssdcompare.results.outputs import check_output_folder

    check_output_folder(output)
    frame = load(results)
    rows = export_frame(frame, output, summary=summary, folders=results)
    _say_damaged(damaged_runs(frame))
    click.echo(f"{rows} rows written to {output}")


def _over_time() -> None:
    from ssdcompare.cli.overtime import compare_command, history_command

    cli.add_command(compare_command)
    cli.add_command(history_command)


_over_time()


def _crash_report(err: BaseException) -> str:
    """Write the traceback of an unexpected error to a file; return its path."""
    with tempfile.NamedTemporaryFile(
        "w", prefix="ssdcompare-crash-", suffix=".txt", delete=False
    ) as handle:
        handle.write(f"ssdcompare {__version__}, {' '.join(sys.argv)}\n\n")
        handle.write("".join(traceback.format_exception(err)))
        return handle.name


def _flush_standard_streams() -> None:
    """Flush what is left for stdout and stderr now. A reader that went away (a closed pipe)
    loses it, and the exit code stays what the work made it: at exit Python would fail to
    flush and end with 120, as if the work had failed."""
    for stream in (sys.stdout, sys.stderr):
        if stream is None:  # started without it (`2>&-`): nothing to flush
            continue
        try:
            stream.flush()
        except (OSError, ValueError):
            with contextlib.suppress(OSError, ValueError):
                os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the CLI and turn every failure into one clear line and an exit code."""
    try:
        _run(argv)
    finally:
        _flush_standard_streams()


def _run(argv: list[str] | None) -> None:
    try:
        cli.main(args=argv, prog_name="ssdcompare", standalone_mode=False)
    except SsdcompareError as err:
        say(f"error: {err}")
        sys.exit(EXIT_ERROR)
    except (click.exceptions.Abort, KeyboardInterrupt) as err:
        say(f"interrupted{f' by {err.name}' if isinstance(err, Stopped) else ''}")
        sys.exit(_exit_code(err))
    except click.ClickException as err:
        err.show()
        sys.exit(err.exit_code)
    except BrokenPipeError:
        # the reader went away (e.g. `ssdcompare suites | head`): nothing left to tell it
        sys.stderr.close()
        sys.exit(EXIT_ERROR)
    except OSError as err:
        where = f"{err.filename}: " if err.filename else ""
        say(f"error: {where}{err.strerror or err}")
        sys.exit(EXIT_ERROR)
    except Exception as err:
        if interrupted(err):  # Ctrl-C inside an import comes wrapped in another exception
            say("interrupted")
            sys.exit(EXIT_INTERRUPTED)
        # a bug: say so in one line, keep the details for a report
        try:
            details = f"; details in {_crash_report(err)}"
        except OSError:
            details = ""
        say(f"internal error (a bug in ssdcompare): {type(err).__name__}: {err}{details}")
        sys.exit(EXIT_BUG)
