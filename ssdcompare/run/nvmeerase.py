"""NVMe erases through nvme-cli, for the purge before a PTS test (ssdcompare.run.purge): a
Format NVM with user-data erase of one namespace (`nvme format DEV --ses=1`), or a Sanitize
block erase through its controller (`nvme sanitize CTRL --sanact=2`), waited for by reading
the drive's sanitize log until it says the sanitize ended.

Which device may be erased is decided before (ssdcompare.target.nvme): these run only on a
namespace alone on its controller. No test of ssdcompare sends them to a drive (that needs a
spare NVMe drive): the commands are nvme-cli's documented ones, and the sanitize log is read
in the layouts nvme-cli 1.x and 2.x print.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import time
from collections.abc import Callable

from ssdcompare.errors import SsdcompareError
from ssdcompare.target.nvme import NvmeNamespace
from ssdcompare.target.probes.drivelog import run_bounded, short

NVME_INSTALL = "install it (apt-get install nvme-cli)"
FORMAT_LIMIT_S = 2 * 3600.0  # a user-data erase of a large namespace may take many minutes
SANITIZE_LIMIT_S = 12 * 3600.0  # a block erase estimated in hours is rare, not unheard of
_COMMAND_S = 120.0  # starting a sanitize, reading its log
_POLL_S = 5.0
_OUTPUT = 1 << 20

# the sanitize log's status of the most recent sanitize (SSTAT bits 2:0)
_NEVER, _DONE, _RUNNING, _FAILED, _DONE_NO_DEALLOCATE = range(5)
_STATUS_WORDS = {
    _NEVER: "never sanitized", _DONE: "completed", _RUNNING: "in progress", _FAILED: "failed",
    _DONE_NO_DEALLOCATE: "completed without deallocating",
}  # fmt: skip


def nvme_cli() -> str:
    """The nvme program's path; SsdcompareError saying how to install it when missing."""
    path = shutil.which("nvme")
    if path is None:
        raise SsdcompareError(f"nvme-cli is not installed (no nvme program on PATH): "
                              f"{NVME_INSTALL}")  # fmt: skip
    return path


def nvme_format(namespace: NvmeNamespace) -> str:
    """Format NVM with user-data erase (Secure Erase Settings 1) of the namespace, its LBA
    format kept; what was done, in words. SsdcompareError when nvme-cli fails."""
    limit_ms = int(FORMAT_LIMIT_S * 1000)
    _run([nvme_cli(), "format", namespace.device, "--ses=1", "--force",
          f"--timeout={limit_ms}"], FORMAT_LIMIT_S + _COMMAND_S)  # fmt: skip
    return f"NVMe Format NVM with user-data erase (nvme format {namespace.device} --ses=1)"


def nvme_sanitize(
    namespace: NvmeNamespace,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> str:
    """A Sanitize block erase through the namespace's controller, waited for until the
    sanitize log says it ended; what was done, in words. A sanitize already in progress (one
    an interrupted purge started) is waited for, not started again. SsdcompareError when
    nvme-cli fails, the sanitize fails, or it runs past SANITIZE_LIMIT_S."""
    nvme, controller = nvme_cli(), namespace.controller
    started = clock()
    if _status(nvme, controller) != _RUNNING:
        _run([nvme, "sanitize", controller, "--sanact=2"], _COMMAND_S)
    status = _status(nvme, controller)
    while status == _RUNNING:
        if clock() - started > SANITIZE_LIMIT_S:
            raise SsdcompareError(f"the sanitize of {controller} was still in progress after "
                                  f"{SANITIZE_LIMIT_S / 3600:g} h")  # fmt: skip
        sleep(_POLL_S)
        status = _status(nvme, controller)
    if status not in (_DONE, _DONE_NO_DEALLOCATE):
        raise SsdcompareError(f"the sanitize of {controller} did not complete: its sanitize log "
                              f"says {_STATUS_WORDS.get(status, f'status {status}')}")  # fmt: skip
    return (f"NVMe Sanitize, block erase (nvme sanitize {controller} --sanact=2), the sanitize "
            f"log saying it {_STATUS_WORDS[status]}")  # fmt: skip


def sanitize_status(data: object) -> int | None:
    """The status of the most recent sanitize (SSTAT bits 2:0) in nvme-cli's JSON sanitize
    log, or None: nvme-cli 2.x nests the log under the device's name and gives the status as
    "(1) ..." in an object; 1.x gives `sstat` as a number."""
    if isinstance(data, dict) and "sstat" not in data and len(data) == 1:
        data = next(iter(data.values()))
    sstat = data.get("sstat") if isinstance(data, dict) else None
    if isinstance(sstat, dict):
        sstat = sstat.get("status", sstat.get("value"))
    if isinstance(sstat, int) and not isinstance(sstat, bool):
        return sstat & 0x7
    if isinstance(sstat, str):
        found = re.match(r"\s*\((\d+)\)", sstat) or re.fullmatch(r"\s*(\d+)\s*", sstat)
        return int(found.group(1)) & 0x7 if found else None
    return None


def _status(nvme: str, controller: str) -> int:
    """The controller's sanitize status, read from its sanitize log now."""
    out = _run([nvme, "sanitize-log", controller, "-o", "json"], _COMMAND_S)
    try:
        status = sanitize_status(json.loads(out))
    except (ValueError, RecursionError):
        status = None
    if status is None:
        raise SsdcompareError(f"nvme sanitize-log {controller} gave no sanitize status")
    return status


def _run(argv: list[str], timeout_s: float) -> bytes:
    """nvme-cli run without a shell; what it printed. SsdcompareError (its own last words)
    when it fails, cannot start or takes longer than `timeout_s`."""
    what = " ".join(["nvme", *argv[1:3]])
    try:
        code, out, err = run_bounded(argv, timeout_s, _OUTPUT)
    except subprocess.TimeoutExpired:
        raise SsdcompareError(f"{what} did not finish within {timeout_s:.0f} s") from None
    except OSError as error:
        raise SsdcompareError(f"{what} could not be started: {error.strerror or error}") from None
    if code != 0:
        said = err.decode(errors="replace").strip().splitlines()
        raise SsdcompareError(f"{what} failed: {short(said[-1]) if said else f'exit {code}'}")
    return out
