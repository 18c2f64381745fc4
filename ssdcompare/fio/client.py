"""fio's client/server mode: jobs on other machines, driven from this one as a fio client.

Every host (`--hosts`, ssdcompare.target.hosts) runs `fio --server`; a job on one of its
devices runs as `fio --client=ADDRESS,PORT ... jobfile` here. fio sends the jobfile to the
server, the server runs it, and its results and per-second logs come back to the client:
fio.json is written here, and the logs too, with the server's address appended to their
names (which `collect_logs` takes off again, so a remote run's folder looks like a local
one's).

`check_hosts` asks every host before the first job, in one short fio run per host that reads
4 KiB of each of its devices with fio's --readonly (fio then refuses to write, create or
extend anything): whether a server answers, whether it speaks this fio's client/server
protocol, and whether each device exists there. Each problem is one line saying what to do.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.binary import FioInfo, command_line
from ssdcompare.fio.result.models import FioOutputError
from ssdcompare.fio.result.reader import FIO_OUTPUT_LIMIT, parse_fio_text
from ssdcompare.regularfile import RefusedFile, read_regular
from ssdcompare.target.devices import Target
from ssdcompare.target.hosts import Host

PROBE_TIMEOUT_S = 30.0
SERVER_HINT = "start one there with `fio --server` (or `ssdcompare serve`), the same fio version"

# what fio's client prints when it cannot reach a server, or loses it
_UNREACHABLE = re.compile(r"failed to connect|connect: |Connection refused|No route to host|"
                          r"Name or service not known|timed out", re.I)  # fmt: skip
# fio says both; the second names the two versions
_MISMATCH = (re.compile(r"client/server version mismatch[^\n]*", re.I),
             re.compile(r"bad server cmd version[^\n]*", re.I))  # fmt: skip
_LOST = re.compile(r"client: host=\S+ disconnected|connection reset", re.I)


def host_problem(text: str, host: Host, probing: bool = False, alone: bool = True) -> str | None:
    """What fio's client said went wrong with the server itself (None: nothing). Only the
    client's own lines count ("fio: ...", "client: ..."): not the JSON, not the servers'.
    Of a run with several servers (`alone` False) only the lines naming this host's address
    count: one server lost is not all of them lost."""
    text = "\n".join(line for line in text.splitlines()
                     if line.startswith(("fio: ", "client: ")))  # fmt: skip
    if not alone:
        address = re.escape(host.address)
        text = "\n".join(
            line
            for line in text.splitlines()
            if re.search(rf"(host=|to ){address}(\b|:{host.port}\b)", line)
        )
    mismatch = _MISMATCH[0].search(text) or _MISMATCH[1].search(text)
    if mismatch:
        return (f"host {host.where} runs a fio that speaks another client/server protocol "
                f"than this one ({mismatch.group(0).strip()}): install the same fio version "
                "on both")  # fmt: skip
    if _UNREACHABLE.search(text):
        why = _first_line(text, _UNREACHABLE)
        return f"no fio server answers on host {host.where} ({why}): {SERVER_HINT}"
    if _LOST.search(text) and probing:
        return (f"no fio server answers on host {host.where} (something there took the "
                f"connection and hung up): {SERVER_HINT}")  # fmt: skip
    if _LOST.search(text):
        return f"host {host.where} went away: its fio server disconnected mid-run"
    return None


def server_answers(host: Host, timeout_s: float = 3.0) -> bool:
    """Whether something accepts connections on the host's fio port now."""
    try:
        with socket.create_connection((host.address, host.port), timeout=timeout_s):
            return True
    except OSError:
        return False


def _first_line(text: str, pattern: re.Pattern[str]) -> str:
    for line in text.splitlines():
        if pattern.search(line):
            return line.strip().removeprefix("fio: ")
    return "no answer"


def check_hosts(fio: FioInfo, targets: Sequence[Target]) -> None:
    """Ask each host of `targets` (see the module): raise one SsdcompareError listing every
    problem, or return when every server answers and every device exists."""
    by_host: dict[Host, list[Target]] = {}
    for target in targets:
        # a new file a local host's fio is to create is not there yet: nothing to read
        if target.host is not None and target.exists:
            by_host.setdefault(target.host, []).append(target)
    problems = [p for host, mine in by_host.items() for p in _probe(fio, host, mine)]
    if problems:
        raise SsdcompareError("\n".join(problems))


def _probe(fio: FioInfo, host: Host, targets: list[Target]) -> list[str]:
    sections = ["[global]", "rw=read", "bs=4k", "size=4k", "ioengine=psync", ""]
    for number, target in enumerate(targets):
        sections += [f"[probe{number}]", f"filename={target.path}", ""]
    with tempfile.TemporaryDirectory(prefix="ssdcompare-probe-") as folder:
        jobfile = Path(folder) / "probe.fio"
        jobfile.write_text("\n".join(sections), encoding="utf-8")
        output_file = Path(folder) / "probe.json"
        command = command_line(fio.path, jobfile, output_file, readonly=True, client=host.client)
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False,
                cwd=folder, stdin=subprocess.DEVNULL, errors="replace",
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            return [f"host {host.where} did not answer within {PROBE_TIMEOUT_S:.0f} s: is a "
                    f"fio server running there? {SERVER_HINT}"]  # fmt: skip
        except OSError as err:
            return [f"cannot run fio to reach host {host.where}: {err}"]
        try:
            written = read_regular(output_file, FIO_OUTPUT_LIMIT).decode(errors="replace")
        except RefusedFile:
            written = ""  # fio wrote no output (or more than any fio output may be)
    text = f"{written}\n{done.stdout}\n{done.stderr}"
    problem = host_problem(text, host, probing=True)
    if problem is not None:
        return [problem]
    try:
        output = parse_fio_text(written, f"the probe of host {host.where}")
    except FioOutputError:
        last = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
        return [f"host {host.where} gave no usable answer (fio exited with status "
                f"{done.returncode}: {last[0]})"]  # fmt: skip
    errors = {job.name: job.error for job in output.jobs}
    problems = []
    for number, target in enumerate(targets):
        code = errors.get(f"probe{number}")
        if code is None:
            problems.append(f"host {host.where} did not report on {target.path}")
        elif code:
            why = "no such device or file there" if code == 2 else os.strerror(code)
            problems.append(f"{target.name}: {target.path} cannot be opened on host "
                            f"{host.where}: {why}")  # fmt: skip
    return problems


def collect_logs(folder: Path, hosts: Sequence[Host]) -> None:
    """fio's client writes a server's logs with the server's address appended
    ("timeseries_iops.1.log.10.0.0.5"): give them the names a local run's logs have. Logs of
    several servers (a group that spans hosts) are numbered on, one server after the other,
    as fio numbers the processes of one run."""
    taken: dict[str, int] = {}  # log kind ("timeseries_iops") -> numbers given so far
    for host in hosts:
        suffix = f".{host.address}"
        mine: dict[str, int] = {}
        for path in sorted(folder.glob(f"*.log{suffix}")):
            name = path.name.removesuffix(suffix)  # timeseries_iops.1.log
            kind, _, rest = name.partition(".")
            number = rest.removesuffix(".log")
            if len(hosts) > 1 and number.isdigit():
                mine[kind] = max(mine.get(kind, 0), int(number))
                name = f"{kind}.{int(number) + taken.get(kind, 0)}.log"
            os.replace(path, path.with_name(name))
        for kind, count in mine.items():
            taken[kind] = taken.get(kind, 0) + count


def local_server_pids(host: Host) -> list[int]:
    """The pid of the fio server listening on `host`'s port, when the host is this machine
    (its job processes are that server's descendants: the CPU sampler watches them)."""
    if not host.local:
        return []
    import psutil

    try:
        connections = psutil.net_connections(kind="inet")
    except (psutil.Error, OSError):
        return []
    listening = {
        c.pid for c in connections
        if c.pid and c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == host.port
    }  # fmt: skip
    # the server's children share its listening socket, and any of them may be the one
    # reported: go up to the first process of the same command line
    roots = set()
    for pid in listening:
        try:
            proc = psutil.Process(pid)
            command = proc.cmdline()
            while (parent := proc.parent()) is not None and parent.cmdline() == command:
                proc = parent
        except (psutil.Error, OSError):
            continue
        roots.add(proc.pid)
    return sorted(roots)
