"""Where the bundled suites (jobs/) and templates (templates/) are.

In a wheel they are inside the package (ssdcompare/jobs, ssdcompare/templates); in a source
checkout or an editable install they are at the top of the repository.
"""

from __future__ import annotations

import functools
from pathlib import Path

import jinja2

_PACKAGE_DIR = Path(__file__).resolve().parent


def _find(name: str) -> Path:
    for candidate in (_PACKAGE_DIR / name, _PACKAGE_DIR.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(f"ssdcompare is installed without its {name}/ folder")


def jobs_dir() -> Path:
    """The folder of bundled suite files."""
    return _find("jobs")


def templates_dir() -> Path:
    """The folder of jinja2 templates (fio jobfiles, HTML report)."""
    return _find("templates")


@functools.lru_cache(maxsize=1)
def templates() -> jinja2.Environment:
    """The jinja2 environment for templates/: HTML is escaped, fio jobfiles are plain text,
    and a missing variable is an error rather than an empty string."""
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(templates_dir())),
        autoescape=jinja2.select_autoescape(["html", "html.j2"], default_for_string=False),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=True,
        trim_blocks=True,
        lstrip_blocks=True,
    )
