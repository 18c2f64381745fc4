"""Which fio options a suite may pass through `extra`, and why the others are refused.

fio has some 300 options. ssdcompare writes the ones that define the measurement itself (target,
pattern, block size, depth, time) from typed suite fields, so that ids, estimates, the safety
guard and the results frame see the truth. Of the rest:

- REFUSED options touch files other than the target, run programs, or change the system
  (`opendir`, `exec_prerun`, `write_iolog`, `ioscheduler`, ...): never allowed.
- OPT_IN options make a column of the results lie or hide failures (`bssplit` makes the `bs`
  column nominal, `continue_on_error` hides errors): refused unless the person running the sweep
  names them with `--allow-option`; the manifest records them and the report shows them.
- Everything else passes through to fio as written; it changes the workload hash and is shown
  next to the job in tables.

Names are matched after resolving fio's aliases (`timeout` is `runtime`, `iomem` is `mem`), as
fio itself does; fio matches option names case-sensitively.
"""

from __future__ import annotations

import re
from collections.abc import Collection

# fio's option aliases (alias -> option), as `fio --cmdhelp=<option>` lists them (fio 3.33)
ALIASES: dict[str, str] = {
    "readwrite": "rw", "blocksize": "bs", "blockalign": "ba", "blocksize_range": "bsrange",
    "blocksize_unaligned": "bs_unaligned", "iodepth_batch_submit": "iodepth_batch",
    "iodepth_batch_complete": "iodepth_batch_complete_min", "io_limit": "io_size",
    "fill_fs": "fill_device", "fileoffset": "offset", "nr_files": "nrfiles",
    "timeout": "runtime", "iomem": "mem", "ratemin": "rate_min", "ratecycle": "rate_cycle",
    "wait_for_previous": "stonewall", "disable_bw": "disable_bw_measurement",
    "ss": "steadystate", "ss_dur": "steadystate_duration", "ss_ramp": "steadystate_ramp_time",
}  # fmt: skip

# Options ssdcompare renders itself -> the suite field that controls them, the command-line
# option that does ("--devices"), or why none does ("(always on)"); see _owned.
OWNED: dict[str, str] = {
    "name": "id", "description": "description", "filename": "--devices",
    "rw": "rw", "bs": "bs", "iodepth": "iodepth", "numjobs": "numjobs",
    "rwmixread": "rwmixread", "rwmixwrite": "rwmixread", "fsync": "fsync",
    "runtime": "runtime", "ramp_time": "ramp_time",
    "time_based": "runtime and io_size (a job is time-based unless io_size caps it)",
    "io_size": "io_size", "size": "size",
    "filesize": "size", "ioengine": "ioengine", "direct": "direct", "buffered": "direct",
    "thinktime": "thinktime", "thinktime_blocks": "thinktime_blocks",
    "group_reporting": "(always on)", "lat_percentiles": "(always on)",
    "log_avg_msec": "(always on, for the per-second time series)",
    "log_offset": "(always on, for the per-second time series)",
    "log_unix_epoch": "(always on, for the per-second time series)",
    "log_compression": "(always on, for the per-second time series)",
    "per_job_logs": "(always on, for the per-second time series)",
}  # fmt: skip

# The per-second logs every job writes into its run folder (fio runs there): these options
# are refused in a suite, and accepted in a rendered jobfile only with exactly this prefix.
TIMESERIES_LOGS = ("write_iops_log", "write_bw_log", "write_lat_log")
TIMESERIES_PREFIX = "timeseries"
# Options that decide what fio records, not what it does: they leave the workload hash alone.
RECORDING_ONLY = frozenset({*TIMESERIES_LOGS, "log_avg_msec"})

# Never allowed: each would let a suite file reach beyond the target it was given.
REFUSED: dict[str, str] = {
    "directory": "makes fio create files in a folder of its choosing",
    "opendir": "makes fio overwrite every file under a folder",
    "filename_format": "makes fio name its own files",
    "unique_filename": "makes fio name its own files",
    "nrfiles": "makes fio create several files of its own",
    "openfiles": "goes with nrfiles, which creates files of its own",
    "unlink": "deletes the target (for a device: its /dev node)",
    "unlink_each_loop": "deletes the target (for a device: its /dev node)",
    "exec_prerun": "runs a shell command as root",
    "exec_postrun": "runs a shell command as root",
    "write_iolog": "writes a file anywhere, as root",
    "read_iolog": "replays I/O onto the files named in a log",
    "replay_redirect": "redirects replayed I/O to another device",
    "merge_blktrace_file": "writes a file anywhere, as root",
    "write_bw_log": "writes files anywhere, as root",
    "write_lat_log": "writes files anywhere, as root",
    "write_iops_log": "writes files anywhere, as root",
    "write_hist_log": "writes files anywhere, as root",
    "verify_dump": "writes dump files into the working folder",
    "ioscheduler": "changes the device's I/O scheduler in sysfs and leaves it changed",
    "cgroup": "creates control groups on the host",
    "cgroup_weight": "creates control groups on the host",
    "cgroup_nodelete": "leaves control groups behind on the host",
    "allow_mounted_write": "turns off fio's own refusal to write to mounted devices",
}

# Allowed only when the person running the sweep names them (--allow-option).
OPT_IN: dict[str, str] = {
    "bsrange": "fio then uses a range of block sizes: the bs column shows only the nominal one",
    "bssplit": "fio then mixes block sizes: the bs column shows only the nominal one",
    "bs_is_seq_rand": "fio then uses different block sizes for sequential and random I/O",
    "kb_base": "changes what sizes like 4k mean to fio, so bs and size columns may lie",
    "unit_base": "changes the units fio reports bandwidth in",
    "continue_on_error": "fio then hides I/O errors and reports the job as fine",
    "ignore_error": "fio then hides I/O errors and reports the job as fine",
    "stats": "stats=0 removes the numbers the comparison is made of",
    "unified_rw_reporting": "fio then merges reads and writes into one 'mixed' figure",
    "startdelay": "the delay counts into the CPU samples and dilutes the CPU-bound judgement",
    "disable_lat": "fio then measures no total latency, and its submission latency counts from "
    "a start it never took (hundreds of ms where the truth is µs): both are left out",
    "disable_clat": "fio then measures no completion latency: it is left out",
    "disable_slat": "fio then measures no submission latency: it is left out",
    "disable_bw_measurement": "fio then samples bandwidth and IOPS only in part: seconds of the "
    "per-second series can be missing or shifted",
    "gtod_reduce": "turns on disable_lat, disable_clat, disable_slat and disable_bw_measurement "
    "at once: fio then measures no latency at all, and they are left out",
}

# Latency objects (fio's lat, clat, slat) that an OPT_IN option leaves unmeasured: whatever fio
# prints for them then is no figure, and is read as unknown
UNMEASURED: dict[str, tuple[str, ...]] = {
    "disable_lat": ("lat", "slat"),
    "disable_clat": ("clat",),
    "disable_slat": ("slat",),
    "gtod_reduce": ("lat", "clat", "slat"),
}

# Options whose presence means data is written even when rw does not say so.
WRITE_IMPLYING = frozenset({"fill_device", "trim_percentage"})

# rw values that write or trim (fio also accepts a ":<n>" suffix, e.g. write:4k)
WRITING_RW = frozenset(
    {"write", "randwrite", "rw", "readwrite", "randrw", "trim", "randtrim", "trimwrite",
     "randtrimwrite"}
)  # fmt: skip

OPTION_NAME_RE = re.compile(r"^[a-z][a-z0-9_-]*\Z")
# A file path inside a value: at its start or after fio's list separators (mem=mmaphuge:/x)
# a path starts a value or follows a separator or a quote (fio's pattern options take a file
# in quotes: buffer_pattern='/etc/shadow' copies that file onto the target)
_PATH_RE = re.compile(r"(?:^|[:,=\s'\"])(?:/|\./|\.\./|~)")
# fio cuts a line at ';' or '#' and expands ${VAR} and $keywords: a value must contain none
_UNSAFE_CHARS = {";": "fio cuts the line there", "#": "fio cuts the line there",
                 "$": "fio would expand it as a variable"}  # fmt: skip


def canonical(name: str) -> str:
    """The option fio means by `name` (its aliases resolved)."""
    return ALIASES.get(name, name)


def control_character(text: str) -> str | None:
    """A description of the first control character in `text` (newline, CR, tab...) or None.

    One newline in a value rendered into a jobfile would let it start a section of its own.
    """
    for char in text:
        if ord(char) < 32 or ord(char) == 127:
            return {"\n": "a newline", "\r": "a carriage return", "\t": "a tab"}.get(
                char, f"control character {ord(char):#04x}"
            )
    return None


# mem=mmap:FILE (and shmhuge, mmaphuge...) makes fio create and fill FILE with I/O buffers
_MEM_TYPES = frozenset(
    {"malloc", "shm", "shmhuge", "mmap", "mmapshared", "mmaphuge", "cudamalloc"}
)


def value_problem(name: str, value: object) -> str | None:
    """Why a value cannot be rendered safely as `name=value`, or None."""
    if value is None or isinstance(value, (bool, int, float)):
        return None
    text = str(value)
    if text.lower() == "null":
        # the suite reader keeps the word null (it names fio's null engine, `ioengine: null`)
        return (
            f"value of {name!r} is the word null: in a suite it is a word (fio's null engine), "
            f"not 'no value'. For an option without a value write {{{name}: ~}}"
        )
    if canonical(name) == "mem" and text not in _MEM_TYPES:
        return (
            f"value of {name!r} ({text!r}) must be one of {', '.join(sorted(_MEM_TYPES))} without "
            "a file: with one, fio creates and fills that file"
        )
    bad = control_character(text)
    if bad:
        return f"value of {name!r} contains {bad}, which would end the jobfile line"
    for char, why in _UNSAFE_CHARS.items():
        if char in text:
            return f"value of {name!r} contains {char!r}: {why}"
    if text != text.strip():
        return f"value of {name!r} starts or ends with blanks, which fio drops"
    if _PATH_RE.search(text):
        return (
            f"value of {name!r} ({text!r}) looks like a file path: ssdcompare lets fio open "
            "only the target given with --devices"
        )
    return None


def extra_option_problem(name: str, allowed: Collection[str] | None = None) -> str | None:
    """Why `name` cannot be given through `extra` (None when it can).

    `allowed` holds the OPT_IN options the person running the sweep has accepted; None leaves
    OPT_IN options unjudged (a suite file is validated before anyone has accepted anything).
    """
    if not OPTION_NAME_RE.match(name):
        return f"{name!r} is not a fio option name (lower case, digits, _ and -)"
    if name.startswith("include"):
        return (
            f"{name!r} is refused: fio reads any line starting with 'include' as a file to pull in"
        )
    option = canonical(name)
    alias = f" (fio's alias of {option})" if option != name else ""
    if option in OWNED:
        return f"fio option {name!r} is set by ssdcompare{alias}; {_owned(OWNED[option])}"
    if option in REFUSED:
        return f"fio option {name!r} is refused{alias}: it {REFUSED[option]}"
    if option in OPT_IN and allowed is not None and option not in allowed:
        return (
            f"fio option {name!r} is refused unless you accept it{alias}: {OPT_IN[option]}. "
            f"To run it anyway, add --allow-option {option} (recorded in the results and shown "
            "in the report)"
        )
    return None


def _owned(control: str) -> str:
    """What to do instead of setting an option ssdcompare sets (OWNED's value `control`)."""
    if control.startswith("("):
        return f"it is {control[1:-1]}: leave it out of extra"
    if control.startswith("--"):
        return f"{control} sets it (the target of each run): leave it out of extra"
    fields = "fields" if " and " in control else "field"
    return f"use the suite {fields} {control} instead of extra"


def option_names(values: str | Collection[str]) -> list[str]:
    """Option names given as a list, as one string "a,b", or both (as --allow-option takes
    them on the command line: repeated, each comma-separated)."""
    items = [values] if isinstance(values, str) else list(values)
    return [name.strip() for item in items for name in item.split(",") if name.strip()]
