"""A drive's own health log, read through the tools that speak to it, and its temperature
from hwmon (for ssdcompare.target.probes.health).

- NVMe: nvme-cli's `nvme smart-log DEV -o json` (the SMART / Health Information log page,
  02h). Its key names are the same from nvme-cli 1.16 through 2.x; a counter may come as a
  number or, for the 128-bit ones, as a string of digits, both read here.
- SATA and SAS: smartmontools' `smartctl -j -a DEV`: the temperature, and for SAS the bytes
  the drive wrote and read (its error counter log, in 10^9 bytes). ATA drives give their
  bytes written only as a vendor's attribute in units of its own, which is not used.
- While a run goes on: the drive's temperature from hwmon (`temp1_input`, milli-°C, of the
  hwmon whose `name` is `nvme` or `drivetemp` and whose device is the drive's), found by name
  since where the kernel puts it has moved between versions.

Only the tools' JSON is read, never their text. Every tool runs without a shell, in a session
of its own, with a time limit (NVME_TIMEOUT_S, SMARTCTL_TIMEOUT_S) and at most MAX_OUTPUT of its
output read; whatever keeps a reading from being made is a `Unavailable` saying why, in words
("nvme-cli is not installed"), never an error of the run. A tool that did not answer a drive in
time is not asked about that drive again while the process lives: a drive that hangs its tool
would otherwise cost the timeout twice on every run.

Every figure is checked as it is read: a counter is a whole number from 0 to below 2**63 (what
the results files hold), a temperature lies between 0 K and MAX_CELSIUS, percent_used is one
byte; anything else is left out (unknown), never shown as a figure.
"""

from __future__ import annotations

import json
import math
import os
import selectors
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

NVME_TIMEOUT_S = 10.0
SMARTCTL_TIMEOUT_S = 20.0
HWMON_NAMES = ("nvme", "drivetemp")  # the drivers that report a drive's own temperature
KELVIN = 273.15
# the log page's keys ssdcompare keeps (nvme-cli's names): temperature in Kelvin, thermal
# management transitions and seconds at each level, minutes above the warning and critical
# temperatures, data units of 512,000 bytes, the share of rated life used, media errors
NVME_KEYS = ("temperature", "thm_temp1_trans_count", "thm_temp2_trans_count",
             "thm_temp1_total_time", "thm_temp2_total_time", "warning_temp_time",
             "critical_comp_time", "data_units_written", "data_units_read", "percent_used",
             "media_errors", "critical_warning")  # fmt: skip
MAX_OUTPUT = 1 << 20  # a health log is a few KiB; more is not one
_MAX_MESSAGES = 64 << 10  # of a tool's stderr, kept for the last line of why it failed
_CHUNK = 64 << 10
_REAP_S = 2.0  # a killed tool stuck in the kernel (a hung drive) is not waited for longer
COUNTER_LIMIT = 1 << 63  # no drive counts this far; a stored file holds no larger number
MAX_CELSIUS = 200.0  # no drive reports this hot: a figure at or past it is a misreading
PERCENT_USED_MAX = 255  # NVMe's percentage used is one byte (255: 255 % or more)
# the bounds of the log page's keys that are no plain counter
_NVME_MOST = {"temperature": math.ceil(KELVIN + MAX_CELSIUS) - 1,
              "percent_used": PERCENT_USED_MAX, "critical_warning": 255}  # fmt: skip
# (command, device) whose tool did not answer in time: the timeout it had
_UNANSWERED: dict[tuple[str, str], float] = {}


class Unavailable(Exception):
    """Why a drive's health cannot be read, in words."""


def nvme_log(device: str) -> dict[str, Any]:
    """The health log of the NVMe drive at `device` (/dev/nvme0n1): NVME_KEYS as integers,
    those the log lacks left out, and the tool that read them. Unavailable: why not."""
    data = _run_json("nvme", "nvme-cli", device, ["smart-log", device, "-o", "json"],
                     NVME_TIMEOUT_S)  # fmt: skip
    if not isinstance(data, dict) or not any(
        key == "temperature" or key.startswith("thm_") for key in data
    ):
        raise Unavailable("nvme-cli gave a JSON object that is no health log")
    return {"tool": "nvme-cli", "log": nvme_fields(data)}


def nvme_fields(data: object) -> dict[str, int]:
    """NVME_KEYS of nvme-cli's JSON health log as integers (a number, or digits in a string:
    nvme-cli prints its 128-bit counters so); what is missing, no whole number or out of its
    range (a counter past COUNTER_LIMIT, a temperature of 0 K, no sensor, or past
    MAX_CELSIUS, percent_used past 255) is left out."""
    found = {}
    for key in NVME_KEYS:
        value = counter(data.get(key), _NVME_MOST.get(key)) if isinstance(data, dict) else None
        if value is not None and not (key == "temperature" and value == 0):
            found[key] = value
    return found


def smartctl_log(device: str) -> dict[str, Any]:
    """The temperature (and a SAS drive's bytes written and read) of the drive at `device`
    from smartctl's JSON. Unavailable: why not."""
    data = _run_json("smartctl", "smartctl", device, ["-j", "-a", device], SMARTCTL_TIMEOUT_S,
                     answers_on_failure=True)  # fmt: skip
    return {"tool": "smartctl", "log": smartctl_fields(data)}


def smartctl_fields(data: object) -> dict[str, Any]:
    """What ssdcompare reads of smartctl's JSON: `temperature_c` (temperature.current),
    `bytes_written` and `bytes_read` (a SAS drive's error counter log, gigabytes_processed
    × 10^9), each left out when out of its range. Unavailable when smartctl could not read
    the drive (its messages say why)."""
    if not isinstance(data, dict):
        raise Unavailable("smartctl printed no JSON object")
    own = data.get("smartctl") if isinstance(data.get("smartctl"), dict) else {}
    status = counter(own.get("exit_status"))
    if status is not None and status & 0b11:  # bit 0: command line, bit 1: device open
        raise Unavailable(f"smartctl could not read the drive: {_smartctl_message(own)}")
    found: dict[str, Any] = {}
    temperature = data.get("temperature")
    current = celsius(temperature.get("current")) if isinstance(temperature, dict) else None
    if current is not None:
        found["temperature_c"] = current
    counters = data.get("scsi_error_counter_log")
    for direction, key in (("write", "bytes_written"), ("read", "bytes_read")):
        entry = counters.get(direction) if isinstance(counters, dict) else None
        gigabytes = _decimal(entry.get("gigabytes_processed")) if isinstance(entry, dict) else None
        if gigabytes is not None and gigabytes * 1e9 < COUNTER_LIMIT:
            found[key] = round(gigabytes * 1e9)
    if not found:
        raise Unavailable("smartctl gave neither a temperature nor counters for this drive")
    return found


def _smartctl_message(own: dict[str, Any]) -> str:
    messages = own.get("messages")
    texts = [m.get("string") for m in messages if isinstance(m, dict)] if isinstance(
        messages, list) else []  # fmt: skip
    words = [t for t in texts if isinstance(t, str)]
    return short(words[-1]) if words else "no reason given"


def _run_json(
    command: str,
    tool: str,
    device: str,
    args: list[str],
    timeout_s: float,
    answers_on_failure: bool = False,
) -> Any:
    """`command args` (about `device`) run without a shell, its output read as JSON.
    Unavailable when it is not installed, cannot run, takes too long (now or earlier for this
    device), prints more than MAX_OUTPUT, fails (unless it `answers_on_failure` in its JSON,
    as smartctl does) or prints no JSON."""
    path = shutil.which(command)
    if path is None:
        raise Unavailable(f"{tool} is not installed")
    if (command, device) in _UNANSWERED:
        raise Unavailable(f"{tool} did not answer within {_UNANSWERED[command, device]:.0f} s "
                          "earlier in this sweep")  # fmt: skip
    try:
        returncode, out, err = run_bounded([path, *args], timeout_s, MAX_OUTPUT)
    except subprocess.TimeoutExpired:
        _UNANSWERED[command, device] = timeout_s
        raise Unavailable(f"{tool} did not answer within {timeout_s:.0f} s") from None
    except OSError as error:
        raise Unavailable(f"{tool} could not be started: {error.strerror or error}") from None
    if len(out) > MAX_OUTPUT:
        raise Unavailable(f"{tool} printed more than {MAX_OUTPUT >> 20} MiB: no health log")
    if returncode != 0 and not answers_on_failure:
        said = err.decode(errors="replace").strip().splitlines()
        why = short(said[-1]) if said else f"exit status {returncode}"
        raise Unavailable(f"{tool} failed: {why}")
    try:
        return json.loads(out)
    except ValueError:
        raise Unavailable(f"{tool} printed no JSON (exit status {returncode})") from None
    except RecursionError:
        raise Unavailable(f"{tool} printed JSON nested too deeply to be read") from None


def run_bounded(argv: list[str], timeout_s: float, limit: int) -> tuple[int, bytes, bytes]:
    """`argv` run in a session of its own: its exit status, what it printed (at most `limit`
    + 1 bytes: longer means it printed more, and it was killed then) and the start of its
    messages (stderr). subprocess.TimeoutExpired when it, and whatever it started that holds its
    output, have not finished within `timeout_s`: all of them are killed."""
    deadline = time.monotonic() + timeout_s
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, start_new_session=True)  # fmt: skip
    try:
        out, err = _read_until_closed(process, deadline, limit)
        if len(out) > limit:
            return -1, out, err
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise subprocess.TimeoutExpired(argv, timeout_s)
        return process.wait(timeout=remaining), out, err
    finally:
        if process.returncode is None:
            _kill_session(process)
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()


def _read_until_closed(
    process: subprocess.Popen[bytes], deadline: float, limit: int
) -> tuple[bytes, bytes]:
    """The process's output until both its pipes close, read in chunks as it comes: stdout
    until it passes `limit`, stderr's first _MAX_MESSAGES (the rest read and dropped, so that
    the tool never blocks writing it). subprocess.TimeoutExpired at the deadline."""
    if process.stdout is None or process.stderr is None:
        raise ValueError("the tool's output is not piped")
    out, err = process.stdout.fileno(), process.stderr.fileno()
    room = {out: limit + 1, err: _MAX_MESSAGES}
    kept = {out: bytearray(), err: bytearray()}
    with selectors.DefaultSelector() as selector:
        for fd in room:
            selector.register(fd, selectors.EVENT_READ)
        while selector.get_map() and len(kept[out]) <= limit:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise subprocess.TimeoutExpired(process.args, 0)
            for key, _ in selector.select(remaining):
                chunk = os.read(key.fd, _CHUNK)
                if not chunk:
                    selector.unregister(key.fd)
                kept[key.fd] += chunk[: room[key.fd] - len(kept[key.fd])]
    return bytes(kept[out]), bytes(kept[err])


def _kill_session(process: subprocess.Popen[bytes]) -> None:
    """The tool and everything it started killed (its session is its process group, and its
    own pid cannot be taken by another while it is not reaped), and the tool reaped."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except OSError:
        pass  # gone already
    try:
        process.wait(timeout=_REAP_S)
    except subprocess.TimeoutExpired:
        pass  # stuck in the kernel: Popen reaps it later


def short(text: str, most: int = 200) -> str:
    """A tool's message kept short and printable for a table."""
    printable = "".join(c if c.isprintable() else " " for c in text).strip()
    return printable[:most]


def counter(value: object, most: int | None = None) -> int | None:
    """A whole number from 0 to `most` (at most below COUNTER_LIMIT) from a tool's JSON: an
    integer (not a boolean), an integral float, or ASCII digits in a string; None otherwise."""
    highest = min(most, COUNTER_LIMIT - 1) if most is not None else COUNTER_LIMIT - 1
    number: int | None = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, str):
        digits = value.strip()
        # isdigit alone takes "²"; 20 digits are past any counter (int() of a long one is slow)
        if digits.isascii() and digits.isdigit() and len(digits) <= 20:
            number = int(digits)
    return number if number is not None and 0 <= number <= highest else None


def celsius(value: object) -> float | None:
    """A temperature in °C from a tool or a stored reading: a finite number above absolute
    zero and below MAX_CELSIUS; None otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not (math.isfinite(value) and -KELVIN < value < MAX_CELSIUS):
        return None
    return float(value)


def failure_words(error: BaseException) -> str:
    """An unexpected failure in a few words: its kind and the start of its message."""
    said = short(str(error), 120)
    return f"{type(error).__name__}: {said}" if said else type(error).__name__


def _decimal(value: object) -> float | None:
    """smartctl prints SAS gigabytes as a decimal string ("1234.567"): a finite, non-negative
    number or None."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        return None
    try:
        number = float(value)
    except (ValueError, OverflowError):
        return None
    return number if math.isfinite(number) and number >= 0 else None


def hwmon_inputs(disk: str, sys_root: Path = Path("/sys")) -> list[Path]:
    """The hwmon temperature inputs (`temp1_input`) that belong to the whole disk `disk`
    (a kernel name): an hwmon named in HWMON_NAMES whose device is the disk's device (an NVMe
    controller, a SCSI device) or that device's parent (newer kernels register an NVMe
    drive's hwmon on its PCI function). Empty when there is none."""
    device = sys_root / "class" / "block" / disk / "device"
    owners = {_real(device), _real(device / "device")} - {None}
    found = []
    try:
        entries = sorted(os.scandir(sys_root / "class" / "hwmon"), key=lambda e: e.name)
    except OSError:
        return []
    for entry in entries:
        folder = Path(entry.path)
        name = _read_text(folder / "name")
        if name in HWMON_NAMES and _real(folder / "device") in owners:
            if os.path.exists(folder / "temp1_input"):  # never raises, unlike Path's
                found.append(folder / "temp1_input")
    return found


def hwmon_celsius(path: Path) -> float | None:
    """One hwmon temperature in °C (its file holds milli-°C); None when it cannot be read
    (the drive asleep, gone) or holds no temperature a drive reports."""
    text = _read_text(path) or ""
    digits = text.removeprefix("-")
    if not (digits.isascii() and digits.isdigit() and len(digits) <= 9):
        return None
    return celsius(int(text) / 1000)


def _real(path: Path) -> Path | None:
    try:
        return path.resolve(strict=True)
    except (OSError, RuntimeError):
        return None


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(errors="replace").strip()
    except OSError:
        return None
