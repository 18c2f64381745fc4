"""Links planted by another user (nobody), as an attacker would plant them, in a sticky folder
anyone may add files to (as /tmp is)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

NOBODY = 65534  # uid and gid of `nobody`/`nogroup`


def as_nobody(*command: str) -> None:
    """Run `command` as nobody, with no groups (setpriv; the caller is root)."""
    subprocess.run(["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                    *command], check=True)  # fmt: skip


def plant_link(dest: Path | str, link: Path) -> None:
    """`link` -> `dest`, made by nobody."""
    as_nobody("ln", "-s", str(dest), str(link))
    assert os.lstat(link).st_uid == NOBODY


@contextmanager
def shared_folder() -> Iterator[Path]:
    """A sticky folder anyone may add files to, reachable by every user, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="ssdcompare-shared-", dir="/tmp"))
    folder.chmod(0o1777)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
