"""Where a report may be written: a name ending in .html (or .htm), never over a file of a
results folder, and never over any file but a report ssdcompare made itself.

A report replaces the file at its path whole. A mistyped `-o` (`-o DIR/manifest.json`, a
run's `fio.json`) would otherwise put HTML where the results were, and the folder could no
longer be loaded or resumed. ssdcompare knows its own reports by the generator named in
their head (templates/report.html.j2); anything else at the path is someone's data.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from ssdcompare.errors import SsdcompareError

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
    folder = _results_folder_above(path, folders)
    if folder is not None:
        raise SsdcompareError(
            f"refusing to write the report to {path}: that is inside the results folder "
            f"{folder}, among its runs; write it at the folder's top ({folder / 'report.html'}) "
            "or elsewhere"
        )
    if not os.path.lexists(path):
        return
    if not is_report(path):
        raise SsdcompareError(
            f"refusing to write the report over {path}: it is not a report ssdcompare made "
            "(its head does not name ssdcompare as its generator), so it may be someone's "
            "data; give a new name, or move that file away first"
        )


def is_report(path: Path) -> bool:
    """Whether `path` is a regular file (followed through links) whose head names ssdcompare
    as its generator: a report ssdcompare wrote."""
    if not path.is_file():  # a folder, a device, a FIFO (opening one would block), a loose link
        return False
    try:
        with open(path, "rb") as handle:
            head = handle.read(_HEAD_BYTES).decode("utf-8", errors="replace")
    except OSError:
        return False
    head = head.partition("</head>")[0]
    return head.lstrip().lower().startswith("<!doctype html") and GENERATOR in head


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
