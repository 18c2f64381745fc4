"""Fixtures shared by the test modules (the installed fio, the CLI run in-process) and the
markers that select tests by what they need:

- `root`: makes loop devices or zram RAM disks, mounts filesystems, or gives files to another
  user;
- `fio`: runs the real fio binary (every test using the `fio` fixture is marked automatically).

Where the need cannot be met, the test is skipped with the reason; `-m "not root and not fio"`
leaves them out altogether.
"""

from __future__ import annotations

import functools
import os
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from blockdevs import why_no_devices
from fioservers import two_hosts_with_loops

from ssdcompare.cli.commands import main
from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.binary import FioInfo, find_fio

# The tests make filesystems and partition tables of their own (mkfs.*, sfdisk, wipefs, all
# installed by scripts/install.sh in /usr/sbin). A user other than root often has no sbin
# folder on PATH (Debian's default for users): the tools are there all the same.
for _folder in ("/usr/sbin", "/sbin"):
    if _folder not in os.environ.get("PATH", "").split(os.pathsep) and os.path.isdir(_folder):
        os.environ["PATH"] = os.environ.get("PATH", "") + os.pathsep + _folder


@functools.cache
def why_no_fio() -> str | None:
    """Why fio cannot be used here (as ssdcompare looks for it: $SSDCOMPARE_FIO, then PATH)."""
    try:
        find_fio()
    except SsdcompareError as err:
        return str(err)
    return None


@pytest.hookimpl(tryfirst=True)  # before -m deselects, so auto-marked tests are deselected too
def pytest_configure(config: pytest.Config) -> None:
    # started in the background by a shell without job control (`cmd &` in a script, some CI
    # runners), every process inherits SIGINT ignored, and the sweeps the tests stop with
    # Ctrl-C would never see it: take it back, so the processes the tests start get it too
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark tests that use the `fio` fixture; skip `root` and `fio` tests this run cannot serve."""
    for item in items:
        if "fio" in getattr(item, "fixturenames", ()) and item.get_closest_marker("fio") is None:
            item.add_marker(pytest.mark.fio)
    no_devices = why_no_devices() if any(i.get_closest_marker("root") for i in items) else None
    no_fio = why_no_fio() if any(i.get_closest_marker("fio") for i in items) else None
    for item in items:
        if no_devices and item.get_closest_marker("root"):
            item.add_marker(pytest.mark.skip(reason=f"needs root to make devices: {no_devices}"))
        elif no_fio and item.get_closest_marker("fio"):
            item.add_marker(pytest.mark.skip(reason=f"needs the fio binary: {no_fio}"))
    _longest_first(items)


def _longest_first(items: list[pytest.Item]) -> None:
    """The files holding the longest tests (marked `slow`, or a group whose module fixture
    is a sweep: xdist_group) first, each file kept together (its module fixtures are made
    once): the workers of scripts/test.sh then start them early, instead of one of them
    starting a minute-long test when the others are nearly done."""
    early = {
        item.module
        for item in items
        if item.get_closest_marker("slow") or item.get_closest_marker("xdist_group")
    }
    items[:] = sorted(items, key=lambda item: getattr(item, "module", None) not in early)


@pytest.fixture(scope="session", autouse=True)
def own_cache_key(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Kept frames are signed with a key in the user's cache folder ($XDG_CACHE_HOME): the
    tests keep theirs in a folder of their own (also for the commands they start), never in
    the home folder of whoever runs them."""
    folder = tmp_path_factory.mktemp("xdg-cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(folder))
        yield folder


@pytest.fixture(scope="session")
def fio() -> FioInfo:
    """The fio ssdcompare would use; tests using it are `fio` tests, skipped without fio."""
    reason = why_no_fio()
    if reason is not None:
        pytest.skip(f"needs the fio binary: {reason}")
    return find_fio()


@dataclass(frozen=True)
class CliResult:
    """What a user sees from one `ssdcompare ...` command."""

    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run `ssdcompare ARGS...` through the real entry point (error handling included)."""

    def run(*args: str) -> CliResult:
        code = 0
        capsys.readouterr()  # drop anything printed before the command
        try:
            main(list(args))
        except SystemExit as done:
            code = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
        out, err = capsys.readouterr()
        return CliResult(exit_code=code, stdout=out, stderr=err)

    return run


@pytest.fixture
def two_hosts(fio: FioInfo, tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    """Two fio servers (127.0.0.1 and 127.0.0.2) and a loop device each: the --hosts value
    and the two --devices entries."""
    with two_hosts_with_loops(fio.path, tmp_path) as (first, second, dev_a, dev_b):
        hosts = f"a={first.spec},b={second.spec}"
        yield hosts, [f"a:{Path(dev_a).name}", f"b:{Path(dev_b).name}"]
