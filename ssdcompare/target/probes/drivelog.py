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

Only the tools' JSON is read, never their text. Every tool runs without a shell and with a
time limit; whatever keeps a reading from being made is a `Unavailable` saying why, in words
("nvme-cli is not installed"), never an error of the run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
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
_MAX_OUTPUT = 1 << 20  # a health log is a few KiB; more is not one


class Unavailable(Exception):
    """Why a drive's health cannot be read, in words."""


def nvme_log(device: str) -> dict[str, Any]:
    """The health log of the NVMe drive at `device` (/dev/nvme0n1): NVME_KEYS as integers,
    those the log lacks left out, and the tool that read them. Unavailable: why not."""
    data = _run_json("nvme", "nvme-cli", ["smart-log", device, "-o", "json"], NVME_TIMEOUT_S)
    log = nvme_fields(data)
    if "temperature" not in log and not any(key.startswith("thm_") for key in log):
        raise Unavailable("nvme-cli gave a JSON object that is no health log")
    return {"tool": "nvme-cli", "log": log}


def nvme_fields(data: object) -> dict[str, int]:
    """NVME_KEYS of nvme-cli's JSON health log as integers (a number, or digits in a string:
    nvme-cli prints its 128-bit counters so); what is missing or no whole number is left out."""
    found = {}
    for key in NVME_KEYS:
        value = _whole(data.get(key)) if isinstance(data, dict) else None
        if value is not None:
            found[key] = value
    return found


def smartctl_log(device: str) -> dict[str, Any]:
    """The temperature (and a SAS drive's bytes written and read) of the drive at `device`
    from smartctl's JSON. Unavailable: why not."""
    data = _run_json("smartctl", "smartctl", ["-j", "-a", device], SMARTCTL_TIMEOUT_S,
                     answers_on_failure=True)  # fmt: skip
    return {"tool": "smartctl", "log": smartctl_fields(data)}


def smartctl_fields(data: object) -> dict[str, Any]:
    """What ssdcompare reads of smartctl's JSON: `temperature_c` (temperature.current),
    `bytes_written` and `bytes_read` (a SAS drive's error counter log, gigabytes_processed
    × 10^9). Unavailable when smartctl could not read the drive (its messages say why)."""
    if not isinstance(data, dict):
        raise Unavailable("smartctl printed no JSON object")
    status = _whole((data.get("smartctl") or {}).get("exit_status"))
    if status is not None and status & 0b11:  # bit 0: command line, bit 1: device open
        raise Unavailable(f"smartctl could not read the drive: {_smartctl_message(data)}")
    found: dict[str, Any] = {}
    temperature = data.get("temperature")
    if isinstance(temperature, dict) and _number(temperature.get("current")):
        found["temperature_c"] = float(temperature["current"])
    counters = data.get("scsi_error_counter_log")
    for direction, key in (("write", "bytes_written"), ("read", "bytes_read")):
        entry = counters.get(direction) if isinstance(counters, dict) else None
        gigabytes = _decimal(entry.get("gigabytes_processed")) if isinstance(entry, dict) else None
        if gigabytes is not None:
            found[key] = round(gigabytes * 1e9)
    if not found:
        raise Unavailable("smartctl gave neither a temperature nor counters for this drive")
    return found


def _smartctl_message(data: dict[str, Any]) -> str:
    messages = (data.get("smartctl") or {}).get("messages")
    texts = [m.get("string") for m in messages or [] if isinstance(m, dict)]
    words = [t for t in texts if isinstance(t, str)]
    return _short(words[-1]) if words else "no reason given"


def _run_json(
    command: str, tool: str, args: list[str], timeout_s: float, answers_on_failure: bool = False
) -> Any:
    """`command args` run without a shell, its output read as JSON. Unavailable when it is
    not installed, cannot run, takes too long, fails (unless it `answers_on_failure` in its
    JSON, as smartctl does) or prints no JSON."""
    path = shutil.which(command)
    if path is None:
        raise Unavailable(f"{tool} is not installed")
    try:
        done = subprocess.run([path, *args], capture_output=True, timeout=timeout_s,
                              check=False, stdin=subprocess.DEVNULL)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise Unavailable(f"{tool} did not answer within {timeout_s:.0f} s") from None
    except OSError as err:
        raise Unavailable(f"{tool} could not be started: {err.strerror or err}") from None
    if done.returncode != 0 and not answers_on_failure:
        said = done.stderr.decode(errors="replace").strip().splitlines()
        why = _short(said[-1]) if said else f"exit status {done.returncode}"
        raise Unavailable(f"{tool} failed: {why}")
    try:
        return json.loads(done.stdout[:_MAX_OUTPUT])
    except ValueError:
        raise Unavailable(f"{tool} printed no JSON (exit status {done.returncode})") from None


def _short(text: str) -> str:
    """A tool's message kept short and printable for a table."""
    printable = "".join(c if c.isprintable() else " " for c in text).strip()
    return printable[:200]


def _whole(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _decimal(value: object) -> float | None:
    """smartctl prints SAS gigabytes as a decimal string ("1234.567")."""
    try:
        number = float(value) if isinstance(value, str | int | float) else None
    except ValueError:
        return None
    return number if number is not None and number >= 0 else None


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
            if (folder / "temp1_input").exists():
                found.append(folder / "temp1_input")
    return found


def hwmon_celsius(path: Path) -> float | None:
    """One hwmon temperature in °C (None when it cannot be read: the drive asleep, gone)."""
    text = _read_text(path)
    value = _whole(text) if text is not None else None
    return value / 1000 if value is not None else None


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
