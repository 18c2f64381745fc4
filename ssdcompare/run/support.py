"""Whether this machine can run each job as written, checked before a sweep starts: what fio's
parser does not look at (`fio --parse-only` skips CPU masks and NUMA nodes) and what only the
kernel or the device can answer (polled completions, io_uring's options).

Each problem is said for a job on a target, with what to do, so that a sweep stops before the
first run rather than failing job by job: fio run with `hipri` on a device without poll
queues fails every I/O with "Operation not supported" (io_uring), or is silently not polled
(pvsync2), which would record interrupt-driven figures as polled ones.
"""

from __future__ import annotations

import functools
import os
import subprocess
import tempfile
from pathlib import Path

from ssdcompare.fio.binary import FioInfo
from ssdcompare.fio.jobfile import RenderedJob, span_bytes
from ssdcompare.suite.realism import ENGINE_FLAGS, given, number_list, zoned_abs_bytes
from ssdcompare.target.devices import Target
from ssdcompare.units import format_bytes

NODES = Path("/sys/devices/system/node")
SYS_DEV_BLOCK = Path("/sys/dev/block")
# io_uring's options that a probe of a scratch file can tell apart (hipri needs the device)
PROBED_FLAGS = ("sqthread_poll", "fixedbufs", "registerfiles")


def job_problems(job: RenderedJob, fio: FioInfo | None) -> list[str]:
    """Why this machine cannot run `job` as written (empty: it can). Targets on other hosts
    are answered by their own fio when the run starts."""
    workload = job.workload
    found = []
    flags = [flag for flag in ENGINE_FLAGS if given(workload, flag)]
    for flag in flags:
        if job.ioengine not in ENGINE_FLAGS[flag]:
            engines = " or ".join(ENGINE_FLAGS[flag])
            found.append(f"{flag} is an option of the {engines} engine, and this job runs on "
                         f"{job.ioengine}" + _engine_advice(workload))  # fmt: skip
    found += _band_problems(job) + _engine_device_problems(job)
    if found or any(part.host or part.remote for part in job.target.parts):
        return found
    if "hipri" in flags:
        found += [problem for part in job.target.parts if (problem := _poll_problem(part))]
    probed = tuple(flag for flag in flags if flag in PROBED_FLAGS)
    if probed and fio is not None:
        complaint = _probe(fio, job.ioengine, probed)
        if complaint:
            found.append(f"fio cannot use {', '.join(probed)} here: {complaint}")
    found += _placement_problems(
        given(workload, "cpus_allowed"), given(workload, "numa_cpu_nodes"),
        given(workload, "numa_mem_policy"), fio,
    )  # fmt: skip
    if "sqthread_poll" in flags:  # without it fio ignores the CPU
        found += _poll_cpu_problems(workload.extra.get("sqthread_poll_cpu"))
    return found


def _poll_cpu_problems(cpu: object) -> list[str]:
    """The CPU the io_uring submission thread is pinned to (`sqthread_poll_cpu`, an option
    given through `extra`): fio fails the job at its start ("io_queue_init ... Invalid
    argument") when this machine lacks it."""
    if cpu is None:
        return []
    try:
        number = int(str(cpu).strip())
    except ValueError:
        return [f"sqthread_poll_cpu {cpu!r}: give the number of one CPU"]
    allowed = _allowed_cpus()
    if number in allowed:
        return []
    return [f"sqthread_poll_cpu {cpu}: fio may not run on CPU {number} here (the CPUs online "
            f"and allowed: {_spans(allowed)})"]  # fmt: skip


def _band_problems(job: RenderedJob) -> list[str]:
    """zoned_abs bands that reach past the span the job runs over: fio then does no I/O at
    all (and reports it as a job that ran)."""
    bands = zoned_abs_bytes(job.workload.random_distribution)
    span = span_bytes(job.workload, job.target)
    if bands is None or span is None or bands <= span:
        return []
    return [f"random_distribution {job.workload.random_distribution}: its bands cover "
            f"{format_bytes(bands)}, and the span this job runs over on {job.target.name} is "
            f"{format_bytes(span)}: give bands that fit it, or shares of it with "
            "zoned:"]  # fmt: skip


def _engine_device_problems(job: RenderedJob) -> list[str]:
    """Engines that talk to one kind of device only: io_uring_cmd to an NVMe namespace's
    generic character device (/dev/ngXnY), sg to a SCSI generic device or SCSI disk."""
    found = []
    for part in job.target.parts:
        if part.host or part.remote:
            continue
        name = Path(part.path).name
        if job.ioengine == "io_uring_cmd" and not name.startswith("ng"):
            found.append(f"ioengine io_uring_cmd sends NVMe commands through a namespace's "
                         f"generic device (/dev/ngXnY); {part.path} is not one")  # fmt: skip
        scsi = Path(f"/sys/class/block/{name}/device/scsi_disk").exists()
        if job.ioengine == "sg" and not (name.startswith("sg") or scsi):
            found.append(f"ioengine sg sends SCSI commands; {part.path} is neither a SCSI "
                         "generic device (/dev/sgN) nor a SCSI disk")  # fmt: skip
    return found


def _engine_advice(workload: object) -> str:
    if getattr(workload, "ioengine", None) is None:
        return (" (the sweep's engine: io_uring does not work here); give the workload "
                "ioengine: io_uring, or drop the option")  # fmt: skip
    return ""


def _queue_of(target: Target) -> Path | None:
    """The sysfs queue folder of the block device that serves `target` (a device, or the
    file system holding a file); a partition's is its disk's. None when not found."""
    try:
        stat = os.stat(target.path)
    except OSError:
        return None
    device = stat.st_rdev if target.kind == "block" else stat.st_dev
    folder = SYS_DEV_BLOCK / f"{os.major(device)}:{os.minor(device)}"
    for candidate in (folder / "queue", folder.resolve().parent / "queue"):
        if candidate.is_dir():
            return candidate
    return None


def _poll_problem(target: Target) -> str | None:
    """Why `target`'s device cannot poll for completions (hipri), or None."""
    queue = _queue_of(target)
    if queue is None:
        return (f"hipri needs a block device that polls for completions, and {target.path} "
                "is on none this machine shows (a network or memory file system?)")  # fmt: skip
    try:
        polls = (queue / "io_poll").read_text().strip() == "1"
    except OSError:
        polls = False
    if polls:
        return None
    disk = queue.resolve().parent.name
    return (f"hipri polls for completions, and {disk} (serving {target.name}) has no poll "
            f"queues (/sys/block/{disk}/queue/io_poll is 0): io_uring would fail every I/O "
            "with 'Operation not supported', pvsync2 would not poll. NVMe drives get poll "
            "queues from the driver's poll_queues setting (nvme.poll_queues=4 on the kernel "
            "command line); drop hipri for other devices")  # fmt: skip


@functools.lru_cache(maxsize=32)
def _probe(fio: FioInfo, engine: str, flags: tuple[str, ...]) -> str | None:
    """fio's complaint when a short read of a scratch file with `flags` fails; None when it
    works (the kernel may lack an io_uring feature, or refuse it to this user)."""
    with tempfile.TemporaryDirectory(prefix="ssdcompare-probe-") as scratch:
        command = [fio.path, "--name=probe", f"--ioengine={engine}",
                   f"--filename={Path(scratch) / 'probe'}", "--size=64k", "--bs=4k",
                   "--rw=read", "--output-format=terse",
                   *(f"--{flag}=1" for flag in flags)]  # fmt: skip
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=30,
                                  check=False)  # fmt: skip
        except (OSError, subprocess.TimeoutExpired) as err:
            return str(err)
    fields = done.stdout.split("\n", 1)[0].split(";")
    if done.returncode == 0 and len(fields) > 4 and fields[4] == "0":  # terse: error 5th
        return None
    said = [line for line in done.stderr.splitlines() if line.strip()]
    return said[0] if said else f"fio exited with status {done.returncode}"


def _allowed_cpus() -> set[int]:
    return set(os.sched_getaffinity(0))


def _spans(numbers: set[int]) -> str:
    """{0, 1, 2, 5} as "0-2,5"."""
    ordered = sorted(numbers)
    runs: list[list[int]] = []
    for number in ordered:
        if runs and number == runs[-1][-1] + 1:
            runs[-1].append(number)
        else:
            runs.append([number])
    return ",".join(f"{r[0]}-{r[-1]}" if len(r) > 1 else str(r[0]) for r in runs)


def _placement_problems(
    cpus: str | None, nodes: str | None, policy: str | None, fio: FioInfo | None
) -> list[str]:
    """Why fio could not run on the CPUs and NUMA nodes asked for here."""
    found = []
    allowed = _allowed_cpus()
    if cpus is not None:
        try:
            missing = set(number_list(cpus)) - allowed
        except ValueError as err:  # a list given through extra, never checked as a key's
            return [f"cpus_allowed {cpus!r}: {err}"]
        if missing:
            which = "CPUs" if len(missing) > 1 else "CPU"
            found.append(f"cpus_allowed {cpus}: fio may not run on {which} {_spans(missing)} "
                         f"here (the CPUs online and allowed: {_spans(allowed)})")  # fmt: skip
    policy_nodes = policy.split(":", 1)[1] if policy and ":" in policy else None
    asked = (("numa_cpu_nodes", nodes, nodes), ("numa_mem_policy", policy_nodes, policy))
    for key, value, written in asked:
        if value is None:
            continue
        if fio is not None and not numa_built(fio):
            found.append(f"{key}: this fio was built without NUMA support (libnuma); install a "
                         "fio package built with it, or drop the key")  # fmt: skip
            break
        online = _online_nodes()
        try:
            missing = set(number_list(value)) - online
        except ValueError as err:
            found.append(f"{key} {written!r}: {err}")
            continue
        if missing:
            which = f"nodes {_spans(missing)} are" if len(missing) > 1 else (
                f"node {_spans(missing)} is")  # fmt: skip
            found.append(f"{key} {written}: NUMA {which} not on this machine (its nodes: "
                         f"{_spans(online) or 'none'})")  # fmt: skip
    return found


def _online_nodes() -> set[int]:
    try:
        return set(number_list((NODES / "online").read_text().strip()))
    except (OSError, ValueError):
        return set()


@functools.lru_cache(maxsize=8)
def numa_built(fio: FioInfo) -> bool:
    """Whether this fio takes NUMA options (built with libnuma): a build without it lists
    them as unsupported, asking to be built with libnuma."""
    try:
        done = subprocess.run([fio.path, "--cmdhelp=numa_cpu_nodes"], capture_output=True,
                              text=True, timeout=20, check=False)  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return False
    said = done.stdout + done.stderr
    return "numa_cpu_nodes" in said and "libnuma" not in said
