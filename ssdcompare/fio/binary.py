"""The installed fio: where it is, its version, its engines, jobfile validation, and the one
command line every run uses."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ssdcompare.errors import SsdcompareError

INSTALL_HINT = "install it with `apt-get install fio` (Debian/Ubuntu) or `dnf install fio`"
_VERSION_RE = re.compile(r"fio-(\d+)\.(\d+)")


@dataclass(frozen=True)
class FioInfo:
    """An fio binary that answered `--version`."""

    path: str
    version: str  # as printed, e.g. "fio-3.33"

    @property
    def version_tuple(self) -> tuple[int, int]:
        match = _VERSION_RE.search(self.version)
        return (int(match.group(1)), int(match.group(2))) if match else (0, 0)


def command_line(
    fio_path: str,
    jobfile: str | Path,
    output: str | Path,
    readonly: bool = False,
    client: str | None = None,
) -> list[str]:
    """The command line of every measuring fio run (stored with each result as it ran).

    `readonly` adds fio's --readonly: fio then refuses to write, trim, create or extend any
    file itself, whatever the jobfile says (on a server too). `client` ("10.0.0.5,8765") runs
    the job on that fio server (ssdcompare.fio.client). The runner passes absolute paths, so
    none can pass for an option.
    """
    readonly_flag = ["--readonly"] if readonly else []
    client_flag = [f"--client={client}"] if client else []
    return [fio_path, *client_flag, "--output-format=json+", f"--output={output}",
            *readonly_flag, str(jobfile)]  # fmt: skip


def clients_command_line(
    fio_path: str, clients: Sequence[tuple[str, str | Path]], output: str | Path, readonly: bool
) -> list[str]:
    """The command line of a run on several fio servers at once (a group that spans hosts):
    each server with its own jobfile. fio's client takes --readonly per server, after that
    server's jobfile (given before the first --client it reaches no server)."""
    command = [fio_path, "--output-format=json+", f"--output={output}"]
    for client, jobfile in clients:
        command += [f"--client={client}", str(jobfile), *(["--readonly"] if readonly else [])]
    return command


def server_command_line(fio_path: str, kind: str, address: str, port: int) -> list[str]:
    """The command line of a fio server (`ssdcompare serve`): `kind` is "ip" or "ip6"."""
    return [fio_path, f"--server={kind}:{address},{port}"]


def find_fio(fio_bin: str | None = None) -> FioInfo:
    """Locate fio (the `fio_bin` argument, $SSDCOMPARE_FIO, then PATH) and read its version."""
    wanted = fio_bin or os.environ.get("SSDCOMPARE_FIO") or "fio"
    path = shutil.which(wanted)
    if path is None:
        raise SsdcompareError(f"fio not found ({wanted!r} is not on PATH): {INSTALL_HINT}")
    return _version(path)


@functools.lru_cache(maxsize=8)
def _version(path: str) -> FioInfo:
    try:
        done = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=20, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        raise SsdcompareError(f"{path} does not run ({err}); {INSTALL_HINT}") from None
    version = done.stdout.strip()
    if done.returncode != 0 or not version.startswith("fio"):
        raise SsdcompareError(
            f"{path} --version answered {version or done.stderr.strip()!r}: not a working fio;"
            f" {INSTALL_HINT}"
        )
    return FioInfo(path=path, version=version)


@functools.lru_cache(maxsize=8)
def engines(fio: FioInfo) -> frozenset[str]:
    """The I/O engines this fio build has (from `fio --enghelp`)."""
    done = subprocess.run(
        [fio.path, "--enghelp"], capture_output=True, text=True, timeout=20, check=False
    )
    return frozenset(
        line.strip() for line in done.stdout.splitlines()[1:] if line.startswith(("\t", " "))
    )


@functools.lru_cache(maxsize=8)
def io_uring_works(fio: FioInfo) -> bool:
    """Whether io_uring is in this fio and allowed by this kernel (containers often block it).

    Runs a 64 KiB read of a scratch file; any failure means "use libaio instead".
    """
    if "io_uring" not in engines(fio):
        return False
    with tempfile.TemporaryDirectory(prefix="ssdcompare-probe-") as scratch:
        target = Path(scratch) / "probe"
        try:
            done = subprocess.run(
                [
                    fio.path, "--name=probe", "--ioengine=io_uring", f"--filename={target}",
                    "--size=64k", "--bs=4k", "--rw=read", "--output-format=terse",
                ],
                capture_output=True, text=True, timeout=30, check=False,
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            return False
    return done.returncode == 0


def default_ioengine(fio: FioInfo | None) -> str:
    """io_uring where the installed fio and kernel support it, else libaio.

    Without fio (e.g. planning on a laptop) the answer is io_uring, fio's best engine on Linux.
    """
    if fio is None:
        return "io_uring"
    return "io_uring" if io_uring_works(fio) else "libaio"


def parse_only(fio: FioInfo, jobfile: Path | Sequence[Path]) -> str | None:
    """Ask fio to parse jobfiles without running them; None if accepted, else fio's complaint.

    Several jobfiles can be checked in one fio start (each start spends ~0.15 s calibrating
    its clock); the complaint then does not say which file it is about.
    `--parse-only` checks option names and values but not whether the engine exists: callers
    check the engine against `engines()` themselves.
    """
    files = [jobfile] if isinstance(jobfile, Path) else list(jobfile)
    done = subprocess.run(
        [fio.path, "--parse-only", *map(str, files)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    if done.returncode == 0:
        return None
    complaint = (done.stderr + done.stdout).strip()
    return complaint or f"fio --parse-only exited with status {done.returncode}"
