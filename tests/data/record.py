#!/usr/bin/env python3
"""Re-create the recorded fio outputs in tests/data/ with the installed fio.

Usage (as root, with fio 3.33 on PATH; takes about half a minute):

    python3 tests/data/record.py            # every recording
    python3 tests/data/record.py NAME ...   # only these outputs, e.g. trim-loopdev-jsonplus.json

Each job runs in a fresh temporary directory ($REC_DIR in the jobfiles under jobs/). The trim
and latency-target recordings attach a 16 MiB sparse image as a new loop device ($REC_DEV) and
detach it after; the client/server recordings start `fio --server` bound to 127.0.0.1 on a free
port (two servers, on two ports, for the recordings that name CLIENT2) and stop them after. In
`args`, "JOB:NAME" stands for the path of jobs/NAME, for a jobfile that goes to one client only.
Outputs are stored exactly as fio wrote them. The synthetic-*.json files are hand-written and
not touched by this script, except the one it derives from a recording in a layout this fio
cannot write (`options_list`); README.md says which file is which.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

DATA = Path(__file__).resolve().parent
JOBS = DATA / "jobs"
CLIENT = "--client=127.0.0.1,PORT"
CLIENT2 = "--client=127.0.0.1,PORT2"  # a second server on the same IP


@dataclass
class Recording:
    output: str  # file name in tests/data
    jobfile: str  # file name in tests/data/jobs
    args: list[str]  # fio options before the jobfile (CLIENT: where --client=... goes)
    how: str = "output"  # output: --output=FILE; stdout: fio's stdout; client; sigint; sigkill
    needs_loop: bool = False
    extra: list[str] = field(default_factory=list)  # files derived from the output
    # a synthetic file derived from a client/server output with several servers: the same
    # output with "global options" as the per-server list newer fio writes
    options_list: str | None = None


RECORDINGS = [
    Recording("randread-libaio-jsonplus-normal.json", "randread-libaio.fio",
              ["--output-format=json+,normal"]),
    Recording("randrw-latpct-json.json", "randrw-lat-percentiles.fio", ["--output-format=json"]),
    Recording("note-psync-iodepth-jsonplus.json", "psync-iodepth.fio",
              ["--output-format=json+"], how="stdout"),
    Recording("job-error-enotdir-jsonplus.json", "job-error.fio", ["--output-format=json+"]),
    Recording("numjobs2-group-reporting-jsonplus.json", "numjobs2-group.fio",
              ["--output-format=json+"]),
    Recording("numjobs2-separate-jsonplus.json", "numjobs2.fio", ["--output-format=json+"]),
    Recording("numjobs2-separate-json.json", "numjobs2.fio", ["--output-format=json"]),
    Recording("stonewall-three-jobs-jsonplus.json", "stonewall.fio", ["--output-format=json+"]),
    Recording("fdatasync-write-jsonplus.json", "fdatasync.fio", ["--output-format=json+"]),
    Recording("trim-loopdev-jsonplus.json", "trim-loop.fio", ["--output-format=json+"],
              needs_loop=True),
    Recording("latency-target-loopdev-jsonplus.json", "latency-target-loop.fio",
              ["--output-format=json+"], needs_loop=True),
    Recording("client-server-numjobs2-json.json", "client-server.fio",
              [CLIENT, "--output-format=json"], how="client"),
    Recording("client-server-format-first-json.json", "client-server.fio",
              ["--output-format=json", CLIENT], how="client"),
    Recording("sigint-interrupted-jsonplus.json", "sigint.fio", ["--output-format=json+"],
              how="sigint",
              extra=["truncated-by-hand-first-half-of-sigint-interrupted-jsonplus.json"]),
    Recording("sigkill-empty-jsonplus.json", "sigint.fio", ["--output-format=json+"],
              how="sigkill"),
    Recording("status-interval-3-reports-json.json", "status-interval.fio",
              ["--output-format=json", "--status-interval=1"]),
    Recording("unified-rw-mixed-json.json", "unified-mixed.fio", ["--output-format=json"]),
    Recording("steadystate-json.json", "steadystate.fio", ["--output-format=json"]),
    Recording("terse-output.txt", "terse.fio", ["--output-format=terse"]),
    Recording("dup-section-names-json.json", "dup-section-names.fio", ["--output-format=json"]),
    Recording("brace-jobnames-json-normal.json", "brace-jobnames.fio",
              ["--output-format=json,normal"]),
    Recording("client-server-two-servers-one-ip-json.json", "two-servers-b.fio",
              ["--output-format=json", CLIENT, "JOB:two-servers-a.fio", CLIENT2], how="client",
              options_list="synthetic-fio-3.43-client-global-options-list.json"),
    Recording("client-server-status-interval-numjobs2-json.json", "cs-status-interval-nj2.fio",
              [CLIENT, "--output-format=json", "--status-interval=1"], how="client"),
    Recording("client-server-status-interval-one-job-json.json", "cs-status-interval.fio",
              [CLIENT, "--output-format=json", "--status-interval=1"], how="client"),
    Recording("client-server-status-interval-two-servers-json.json", "cs-status-interval.fio",
              [CLIENT, CLIENT2, "--output-format=json", "--status-interval=1"], how="client"),
]  # fmt: skip


def _default_sigint() -> None:
    # a shell that starts us in the background ignores SIGINT, and children inherit that
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def fio_server() -> Iterator[int]:
    """A fio server listening on 127.0.0.1 only; yields its port and stops it after."""
    port = _free_port()
    server = subprocess.Popen(
        ["fio", f"--server=ip:127.0.0.1,{port}"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if time.monotonic() > deadline or server.poll() is not None:
                raise RuntimeError(f"fio --server did not listen on 127.0.0.1:{port}")
            time.sleep(0.1)
        yield port
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


@contextlib.contextmanager
def loop_device(image: Path) -> Iterator[str]:
    """A new loop device over a 16 MiB sparse image; detached after."""
    with open(image, "wb") as handle:
        handle.truncate(16 * 2**20)
    device = subprocess.run(
        ["losetup", "--find", "--show", "--direct-io=on", str(image)],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    try:
        yield device
    finally:
        subprocess.run(["losetup", "--detach", device], check=False)


def _run(command: list[str], env: dict[str, str], stdout: Path | None = None) -> int:
    print("  $", " ".join(command), f"> {stdout.name}" if stdout else "")
    if stdout is None:
        return subprocess.run(command, env=env, timeout=120, check=False).returncode
    with open(stdout, "wb") as handle:
        return subprocess.run(command, env=env, stdout=handle, timeout=120, check=False).returncode


def _children(pid: int) -> list[int]:
    """Processes whose parent is `pid` (fio's job processes run in sessions of their own)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        with contextlib.suppress(OSError, ValueError, IndexError):
            # the command name in parentheses may hold spaces: the ppid follows the last ")"
            if int(stat.read_text().rpartition(")")[2].split()[1]) == pid:
                found.append(int(stat.parent.name))
    return found


def _signalled(command: list[str], env: dict[str, str], sig: int, after_s: float) -> int:
    print("  $", " ".join(command), f"  # {signal.Signals(sig).name} after {after_s} s")
    proc = subprocess.Popen(command, env=env, start_new_session=True, preexec_fn=_default_sigint)
    time.sleep(after_s)
    if sig == signal.SIGKILL:
        # killed outright, fio's job processes would run on, orphaned: kill them with it
        for child in _children(proc.pid):
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, sig)
    os.killpg(proc.pid, sig)  # the whole group, as Ctrl-C in a terminal would
    return proc.wait(timeout=60)


def record(rec: Recording, workdir: Path, device: str | None) -> None:
    out = DATA / rec.output
    jobfile = str(JOBS / rec.jobfile)
    env = dict(os.environ, REC_DIR=str(workdir))
    if device is not None:
        env["REC_DEV"] = device
    fio = ["fio", *rec.args]
    print(rec.output)
    status: int
    if rec.how == "output":
        status = _run([*fio, f"--output={out}", jobfile], env)
    elif rec.how == "stdout":
        status = _run([*fio, jobfile], env, stdout=out)
    elif rec.how == "client":
        with contextlib.ExitStack() as servers:
            port = servers.enter_context(fio_server())
            # the second server only for recordings that address one
            port2 = servers.enter_context(fio_server()) if CLIENT2 in fio else None
            command = []
            jobs_by_port: dict[int | None, Path] = {}  # the jobfile each server was given
            server: int | None = None
            for arg in fio:
                if arg in (CLIENT, CLIENT2):
                    server = port if arg == CLIENT else port2
                    arg = f"--client=127.0.0.1,{server}"
                    jobs_by_port[server] = Path(jobfile)  # unless a JOB: follows
                elif arg.startswith("JOB:"):
                    arg = str(JOBS / arg.removeprefix("JOB:"))
                    jobs_by_port[server] = Path(arg)
                command.append(arg)
            status = _run([*command, jobfile], env, stdout=out)
        if rec.options_list is not None:
            _global_options_list(out, DATA / rec.options_list, jobs_by_port)
    elif rec.how in ("sigint", "sigkill"):
        sig = signal.SIGINT if rec.how == "sigint" else signal.SIGKILL
        status = _signalled([*fio, f"--output={out}", jobfile], env, sig, 1.5)
    else:
        raise ValueError(rec.how)
    print(f"  exit status {status}, {out.stat().st_size} bytes")
    for derived in rec.extra:
        data = out.read_bytes()
        (DATA / derived).write_bytes(data[: len(data) // 2])
        print(f"  {derived}: first {len(data) // 2} of {len(data)} bytes")


def _global_section(jobfile: Path) -> list[tuple[str, str]]:
    """The name=value lines of a jobfile's [global] section, in order."""
    options, in_global = [], False
    for line in jobfile.read_text().splitlines():
        line = line.strip()
        if line.startswith("["):
            in_global = line == "[global]"
        elif in_global and "=" in line and not line.startswith((";", "#")):
            name, _, value = line.partition("=")
            options.append((name.strip(), value.strip()))
    return options


def _global_options_list(out: Path, derived: Path, jobs_by_port: dict[int | None, Path]) -> None:
    """Write `out` as newer fio (3.43) writes it with several servers: "global options" a list.

    fio 3.33 cannot write that layout. Following fio's client.c: one object per server, made
    when the server sends its first global option, holding the server's "hostname" and "port"
    and then its options (handle_job_opt); the objects are listed in the order the servers
    first report results (handle_ts). The options are each jobfile's [global] assignments with
    a value, which are what fio 3.33 printed for them. Everything else is the recording.
    """
    text = out.read_text()
    start = text.index("\n{\n") + 1
    doc = json.loads(text[start:])
    ports = list(dict.fromkeys(e["port"] for e in doc["client_stats"]
                               if e["jobname"] != "All clients"))  # fmt: skip
    objects = []
    for port in ports:
        host = next(e["hostname"] for e in doc["client_stats"] if e["port"] == port)
        pairs = [("hostname", json.dumps(host)), ("port", str(port))]
        pairs += [(name, json.dumps(value)) for name, value in _global_section(jobs_by_port[port])]
        body = ",\n".join(f'      "{name}" : {value}' for name, value in pairs)
        objects.append(f"    {{\n{body}\n    }}")
    listed = '  "global options" : [\n' + ",\n".join(objects) + "\n  ],\n"
    begin = text.index('  "global options" : {')
    end = text.index("  },\n", begin) + len("  },\n")
    result = text[:begin] + listed + text[end:]
    result = result.replace('"fio version" : "fio-3.33"', '"fio version" : "fio-3.43"', 1)
    derived.write_text(result)
    print(f"  {derived.name}: the same with one global options object per server")


def main(argv: list[str]) -> int:
    if shutil.which("fio") is None:
        print("fio is not on PATH", file=sys.stderr)
        return 2
    wanted = set(argv)
    chosen = [r for r in RECORDINGS if not wanted or r.output in wanted]
    if wanted - {r.output for r in RECORDINGS}:
        print(f"unknown recordings: {sorted(wanted - {r.output for r in RECORDINGS})}")
        return 2
    print(subprocess.run(["fio", "--version"], capture_output=True, text=True).stdout.strip())
    for rec in chosen:
        with tempfile.TemporaryDirectory(prefix="ssdcompare-rec-") as tmp:
            workdir = Path(tmp)
            # the job-error recording needs a regular file where a directory is expected
            (workdir / "not-a-directory").write_bytes(b"")
            if rec.needs_loop:
                with loop_device(workdir / "loop.img") as device:
                    record(rec, workdir, device)
            else:
                record(rec, workdir, None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
