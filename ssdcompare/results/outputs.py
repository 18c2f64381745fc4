"""Where ssdcompare writes what it makes for people: a report (`report -o`), an export
(`export -o`), a plan's jobfiles (`plan --out`). Each is written whole, under a name of its
kind, never among a results folder's runs, and never over a file but one of the same kind
that ssdcompare made itself.

An output replaces the file at its path. A mistyped `-o` (`-o DIR/manifest.json`, a run's
`fio.json`, someone's `payroll.csv`) would otherwise put a report or a table where data was.
ssdcompare knows what it made: a report by the generator named in its head
(templates/report.html.j2), an export by its columns, a jobfile by its first line. Files are
written through store.write_atomic: under a temporary name, then renamed into place, so a
symbolic link at the path is replaced, never followed, and nothing is written under /dev.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from ssdcompare.errors import SsdcompareError
from ssdcompare.pathwalk import where_others_control
from ssdcompare.results.files import write_atomic
from ssdcompare.results.store import REPORT, check_own_folder, own_writes
from ssdcompare.target.devices import in_device_tree

if TYPE_CHECKING:
    from ssdcompare.fio.jobfile import RenderedJob

SUFFIXES = (".html", ".htm")
# the first line of every report's head that names its maker (templates/report.html.j2)
GENERATOR = '<meta name="generator" content="ssdcompare '
_HEAD_BYTES = 4096  # the generator comes within the first lines of the head


def check_report_path(path: Path, folders: Iterable[Path] = ()) -> None:
    """Raise SsdcompareError, saying what to do instead, unless a report may be written to
    `path`: an .html or .htm name, not below the top of one of the results `folders` (the
    top is fine: the sweep writes report.html there), and nothing there yet but a report of
    ssdcompare's."""
    if path.suffix.lower() not in SUFFIXES:
        raise SsdcompareError(
            f"refusing to write the report to {path}: a report is an HTML file; give a name "
            "ending in .html, e.g. report.html"
        )
    _refuse_folder_others_control(path.parent, "the report")
    _not_among_runs(path, folders, "the report", REPORT)
    if not os.path.lexists(path):
        return
    if not is_report(path):
        raise SsdcompareError(
            f"refusing to write the report over {path}: it is not a report ssdcompare made "
            "(its head does not name ssdcompare as its generator), so it may be someone's "
            "data; give a new name, or move that file away first"
        )


def _refuse_folder_others_control(folder: Path, what: str) -> None:
    """Refuse to write `what` into `folder` when it is reached through a link someone else
    made, or someone else controls it (see pathwalk.where_others_control)."""
    problem = where_others_control(folder)  # ForeignLinkError for a link of someone else's
    if problem is not None:
        raise SsdcompareError(
            f"refusing to write {what} into {folder}: {problem}, so whoever controls it could "
            "swap it for a link to any place while it is written. Write it into a folder of "
            "your own (e.g. -o ~/report.html)"
        )


def is_report(path: Path) -> bool:
    """Whether `path` is a regular file (followed through links) whose head names ssdcompare
    as its generator: a report ssdcompare wrote."""
    head = _head(path).decode("utf-8", errors="replace").partition("</head>")[0]
    return head.lstrip().lower().startswith("<!doctype html") and GENERATOR in head


def _head(path: Path, size: int = _HEAD_BYTES) -> bytes:
    """The first bytes of a regular file (followed through links); b"" for anything else (a
    folder, a device, a FIFO, whose opening would block, a loose link)."""
    if not path.is_file():
        return b""
    try:
        with open(path, "rb") as handle:
            return handle.read(size)
    except OSError:
        return b""


def _not_among_runs(path: Path, folders: Iterable[Path], what: str, example: str) -> None:
    folder = _results_folder_above(path, folders)
    if folder is not None:
        raise SsdcompareError(
            f"refusing to write {what} to {path}: that is inside the results folder "
            f"{folder}, among its runs; write it at the folder's top ({folder / example}) or "
            "elsewhere"
        )


EXPORT_SUFFIXES = (".csv", ".parquet")
# what an export's first line starts with: the frame's first columns, or the summary's
_EXPORT_HEADS = (b"host,port,remote,device,", b"sweep,host,device,label,job,")
_PARQUET = b"PAR1"


def check_export_path(path: Path, folders: Iterable[Path] = ()) -> None:
    """Raise SsdcompareError, saying what to do instead, unless an export may be written to
    `path`: a .csv or .parquet name, not among a results folder's runs, and nothing there yet
    but an export of ssdcompare's (a CSV of its columns, a Parquet file naming them)."""
    if path.suffix.lower() not in EXPORT_SUFFIXES:
        raise SsdcompareError(f"cannot export to {path.name}: use a .csv or .parquet name")
    _refuse_folder_others_control(path.parent, "the export")
    _not_among_runs(path, folders, "the export", "results.csv")
    if not os.path.lexists(path) or _is_export(path):
        return
    raise SsdcompareError(
        f"refusing to write the export over {path}: it is not an export ssdcompare made, so "
        "it may be someone's data; give a new name, or move that file away first"
    )


def _is_export(path: Path) -> bool:
    head = _head(path, 64)
    if path.suffix.lower() == ".csv":
        return head.startswith(_EXPORT_HEADS)
    if not head.startswith(_PARQUET):
        return False
    try:  # pandas names the columns in the file's footer
        with open(path, "rb") as handle:
            handle.seek(max(os.fstat(handle.fileno()).st_size - (1 << 16), 0))
            tail = handle.read()
    except OSError:
        return False
    return b'"fio_json"' in tail or b'"compared_to"' in tail


JOBFILE_HEAD = "; ssdcompare "  # every jobfile ssdcompare renders starts so (templates/)


def write_jobfiles(jobs: Iterable[RenderedJob], out_dir: Path) -> list[Path]:
    """Write every rendered jobfile as OUT/<target>/<job id>.fio (`plan --out`); return the
    paths. The folder, when it exists, must be the user's own and writable by no one else
    (store.check_own_folder); a file already there is replaced only when it is a jobfile
    ssdcompare rendered."""
    paths = []
    if in_device_tree(out_dir):
        raise SsdcompareError(
            f"refusing to write jobfiles under {out_dir}: it is under /dev, "
            "where files are kept in memory; give a folder on a filesystem"
        )
    _refuse_folder_others_control(out_dir, "jobfiles")
    if out_dir.exists():
        check_own_folder(out_dir, "--out")
    with own_writes():
        for job in jobs:
            path = out_dir / job.target.name / job.file_name
            head = _head(path, len(JOBFILE_HEAD)).decode("utf-8", "replace")
            if os.path.lexists(path) and head != JOBFILE_HEAD:
                raise SsdcompareError(
                    f"refusing to write over {path}: it is not a jobfile ssdcompare rendered; "
                    "choose another --out, or move it away first"
                )
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as err:
                raise SsdcompareError(
                    f"cannot write {path}: {err.strerror or err}; choose another --out"
                ) from None
            write_atomic(path, job.text)
            paths.append(path)
    return paths


def _results_folder_above(path: Path, folders: Iterable[Path]) -> Path | None:
    """The one of `folders` that `path` lies in below its top (in runs/, ceiling/, ...), or
    None."""
    # the folder the file would be in, as the filesystem resolves it (links, ..)
    parent = Path(os.path.realpath(path.parent))
    for folder in folders:
        top = Path(os.path.realpath(folder))
        if parent != top and parent.is_relative_to(top):
            return folder
    return None


def check_output_folder(output: Path | None) -> None:
    """An output file goes into a folder that exists: a typo must not create folders."""
    if output is not None and not output.absolute().parent.is_dir():
        raise SsdcompareError(f"folder {output.absolute().parent} does not exist; create it first")
