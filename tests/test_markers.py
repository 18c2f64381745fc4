"""The `root` and `fio` markers select: without root and without fio, the suite skips exactly
the marked tests (with the reason) and everything else passes; `-m` leaves them out.

Each case runs pytest in a subprocess, as an unprivileged user (uid 65534, `nobody`) when the
tests run as root, with a PATH on which fio cannot be found.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

# not `serial`: the suites it runs leave out what judges CPU use or timing (they run without
# root and fio), so it runs beside the other tests, its subprocesses overlapping theirs

REPO = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
NOBODY = 65534  # uid and gid of `nobody`/`nogroup` (`nobody` on some systems)
RUN_TIMEOUT_S = 1800  # the whole suite without root: the wheel build and notebook take longest
MARKED = "root or fio"
UNMARKED = "not root and not fio"
SKIP_REASON = re.compile(r"\b(fio|root)\b", re.IGNORECASE)
_DESELECTED = re.compile(r"\((\d+) deselected\)")


@dataclass
class Outcomes:
    """What one pytest run did to each test, by node id (from its junit XML)."""

    passed: set[str] = field(default_factory=set)
    failed: dict[str, str] = field(default_factory=dict)  # node id -> first line of the failure
    skipped: dict[str, str] = field(default_factory=dict)  # node id -> skip reason


@dataclass
class Sandbox:
    """A folder the unprivileged user owns, and the environment a pytest run gets there."""

    root: Path
    env: dict[str, str]
    prefix: list[str]  # the command prefix that drops root (empty when not root)
    python: str  # a Python with this environment's packages that the unprivileged user runs

    def pytest(
        self, *args: str | Path, env: dict[str, str] | None = None, as_root: bool = False
    ) -> subprocess.CompletedProcess[str]:
        """Run `python -m pytest ARGS` from the checkout (so pyproject's settings apply)."""
        options = ["-m", "pytest", "-p", "no:cacheprovider", *map(str, args)]
        command = [sys.executable, *options] if as_root else [*self.prefix, self.python, *options]
        return subprocess.run(
            command, cwd=REPO, env=env or self.env, capture_output=True, text=True, check=False,
            timeout=RUN_TIMEOUT_S,
        )  # fmt: skip


def unprivileged_prefix() -> list[str] | None:
    """A command prefix that runs a program without root, or None when there is none."""
    if os.geteuid() != 0:
        return []
    if shutil.which("setpriv"):
        return ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
    if shutil.which("runuser"):
        return ["runuser", "-u", "nobody", "--"]
    return None


def path_without_fio(folder: Path) -> str:
    """A PATH of one folder linking every program on this PATH except fio."""
    folder.mkdir()
    sources = [str(Path(sys.executable).parent), *os.environ.get("PATH", "").split(os.pathsep)]
    for source in sources:
        if not source or not os.path.isdir(source):
            continue
        for entry in os.scandir(source):
            link = folder / entry.name
            if entry.name.startswith("fio") or link.exists() or link.is_symlink():
                continue
            link.symlink_to(entry.path)
    return str(folder)


def runs_unprivileged(python: str, prefix: list[str], env: dict[str, str]) -> str | None:
    """None when the unprivileged user can run `python`, with ssdcompare and pytest, and that
    Python can start itself again (the tests do); otherwise what went wrong."""
    probe = (
        "import subprocess, sys\n"
        "subprocess.run([sys.executable, '-c', 'import pytest, ssdcompare'], check=True)\n"
    )
    try:
        done = subprocess.run(
            [*prefix, python, "-c", probe], cwd=REPO, env=env, capture_output=True, text=True,
            check=False, timeout=120,
        )  # fmt: skip
    except OSError as err:
        return str(err)
    return None if done.returncode == 0 else (done.stderr.strip().splitlines() or ["?"])[-1]


def borrowing_venvs(folder: Path) -> list[Path]:
    """Venvs in `folder` on each other Python of this version, using this environment's
    packages: for an interpreter the unprivileged user cannot reach (e.g. under /root)."""
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    ours = os.path.realpath(sys.executable)
    candidates = {
        os.path.realpath(found)
        for place in [*os.environ.get("PATH", "").split(os.pathsep), "/usr/local/bin", "/usr/bin"]
        if (found := shutil.which(version, path=place))
    } - {ours}  # fmt: skip
    # site.addsitedir also reads the .pth files there (the editable install of ssdcompare)
    sites = dict.fromkeys(sysconfig.get_paths()[key] for key in ("purelib", "platlib"))
    borrow = "import site; " + "; ".join(f"site.addsitedir({p!r})" for p in sites) + "\n"
    venvs = []
    for index, python in enumerate(sorted(candidates)):
        venv = folder / f"venv-{index}"
        made = subprocess.run(
            [python, "-m", "venv", "--without-pip", venv], capture_output=True, check=False,
            timeout=120,
        )  # fmt: skip
        if made.returncode != 0:
            continue
        site_dir = subprocess.run(
            [venv / "bin" / "python", "-c", "import sysconfig; print(sysconfig.get_paths()"
             "['purelib'])"], capture_output=True, text=True, check=True, timeout=120,
        ).stdout.strip()  # fmt: skip
        Path(site_dir, "borrowed.pth").write_text(borrow)
        venvs.append(venv)
    return venvs


@pytest.fixture(scope="module")
def sandbox() -> Iterator[Sandbox]:
    """A writable HOME, temp and PATH without fio, owned by the unprivileged user."""
    prefix = unprivileged_prefix()
    if prefix is None:
        pytest.skip("needs setpriv or runuser to drop root")
    root = Path(tempfile.mkdtemp(prefix="ssdcompare-markers-"))
    try:
        for name in ("home", "tmp"):
            (root / name).mkdir()
        env = {
            key: value for key, value in os.environ.items()
            # the parent pytest's settings and root's own folders stay out
            if not key.startswith(("PYTEST_", "SSDCOMPARE_", "XDG_", "JUPYTER", "PIP_"))
        }  # fmt: skip
        env.update(
            PATH=path_without_fio(root / "bin"), HOME=str(root / "home"),
            TMPDIR=str(root / "tmp"), PYTHONDONTWRITEBYTECODE="1", LC_ALL="C.UTF-8",
        )  # fmt: skip
        if os.geteuid() == 0:
            os.chown(root, NOBODY, NOBODY)  # its own folder: the user may enter it
        python = sys.executable
        problem = runs_unprivileged(python, prefix, env)
        if problem is not None:
            for venv in borrowing_venvs(root / "venvs"):
                if runs_unprivileged(str(venv / "bin" / "python"), prefix, env) is None:
                    python, problem = str(venv / "bin" / "python"), None
                    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env['PATH']}"
                    break
        if problem is not None:
            pytest.skip(f"the unprivileged user (not root) cannot run {python}: {problem}")
        if os.geteuid() == 0:
            for path in [root, *root.rglob("*")]:
                os.lchown(path, NOBODY, NOBODY)
        yield Sandbox(root=root, env=env, prefix=prefix, python=python)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def node_id(case: ElementTree.Element) -> str:
    """The pytest node id of a junit <testcase>: classname is the module path with dots, then
    any test classes (named Test*, pytest's rule)."""
    parts = case.get("classname", "").split(".")
    classes: list[str] = []
    while len(parts) > 1 and parts[-1].startswith("Test"):
        classes.insert(0, parts.pop())
    return "::".join(["/".join(parts) + ".py", *classes, case.get("name", "")])


def read_junit(path: Path) -> Outcomes:
    outcomes = Outcomes()
    for case in ElementTree.parse(path).getroot().iter("testcase"):
        name = node_id(case)
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        skipped = case.find("skipped")
        if problem is not None:
            outcomes.failed[name] = (problem.get("message") or "").splitlines()[0][:200]
        elif skipped is not None:
            outcomes.skipped[name] = skipped.get("message") or ""
        else:
            outcomes.passed.add(name)
    return outcomes


def collect(box: Sandbox, *args: str | Path, env: dict[str, str] | None = None,
            as_root: bool = False) -> tuple[set[str], int]:  # fmt: skip
    """The node ids a collect-only run selects, and how many it deselected."""
    done = box.pytest("--collect-only", "-q", *args, env=env, as_root=as_root)
    assert done.returncode in (0, 5), done.stdout + done.stderr  # 5: nothing selected
    listing = done.stdout.split("\n\n", 1)[0]  # the ids, before any summary or warning
    ids = {line for line in listing.splitlines() if "::" in line}
    deselected = _DESELECTED.search(done.stdout)
    return ids, int(deselected.group(1)) if deselected else 0


# ---- the conftest alone, on a small suite: fast --------------------------------------------

SAMPLE_TESTS = """
import pytest


def test_plain():
    pass


@pytest.mark.root
def test_needs_root():
    pass


def test_uses_the_fio_fixture(fio):
    assert fio.path


@pytest.mark.fio
def test_marked_fio():
    pass
"""


@pytest.fixture
def sample(sandbox: Sandbox) -> Path:
    """A folder with the real conftest and helpers and one small test file."""
    folder = sandbox.root / "sample"
    if folder.exists():
        return folder
    folder.mkdir()
    for name in ("conftest.py", "blockdevs.py", "fioservers.py"):
        shutil.copy(TESTS / name, folder / name)
    (folder / "test_sample.py").write_text(SAMPLE_TESTS)
    if os.geteuid() == 0:
        for path in [folder, *folder.iterdir()]:
            os.lchown(path, NOBODY, NOBODY)
    return folder


def run_sample(box: Sandbox, folder: Path, *args: str, env: dict[str, str] | None = None,
               as_root: bool = False) -> Outcomes:  # fmt: skip
    junit = folder / f"junit-{len(list(folder.glob('junit-*')))}.xml"
    done = box.pytest(
        "-c", REPO / "pyproject.toml", "--rootdir", folder, "--strict-markers", "-rs",
        "--basetemp", box.root / "tmp" / "sample-basetemp", "--junitxml", junit,
        *args, folder / "test_sample.py", env=env, as_root=as_root,
    )  # fmt: skip
    assert done.returncode in (0, 5), done.stdout + done.stderr
    return read_junit(junit)


def test_without_root_and_fio_marked_tests_skip_with_the_reason(
    sandbox: Sandbox, sample: Path
) -> None:
    outcomes = run_sample(sandbox, sample)
    assert outcomes.passed == {"test_sample.py::test_plain"}
    assert not outcomes.failed
    assert set(outcomes.skipped) == {
        "test_sample.py::test_needs_root", "test_sample.py::test_uses_the_fio_fixture",
        "test_sample.py::test_marked_fio",
    }  # fmt: skip
    assert outcomes.skipped["test_sample.py::test_needs_root"] == (
        "needs root to make devices: not running as root"
    )
    for name in ("test_uses_the_fio_fixture", "test_marked_fio"):
        assert outcomes.skipped[f"test_sample.py::{name}"].startswith(
            "needs the fio binary: fio not found"
        )


@pytest.mark.fio  # needs a fio on PATH to hide
def test_ssdcompare_fio_is_respected(sandbox: Sandbox, sample: Path) -> None:
    """$SSDCOMPARE_FIO naming a missing program hides fio even when one is on PATH."""
    missing = str(sandbox.root / "no-fio-here")
    env = dict(sandbox.env, PATH=os.environ["PATH"], SSDCOMPARE_FIO=missing)
    outcomes = run_sample(sandbox, sample, env=env)
    reason = outcomes.skipped["test_sample.py::test_uses_the_fio_fixture"]
    assert missing in reason and reason.startswith("needs the fio binary")
    assert "test_sample.py::test_marked_fio" in outcomes.skipped
    found = run_sample(sandbox, sample, env=dict(sandbox.env, PATH=os.environ["PATH"]))
    assert {"test_sample.py::test_uses_the_fio_fixture", "test_sample.py::test_marked_fio"} <= (
        found.passed
    )


def test_dash_m_deselects_tests_marked_or_using_the_fio_fixture(
    sandbox: Sandbox, sample: Path
) -> None:
    common = ["-c", REPO / "pyproject.toml", "--rootdir", sample, sample / "test_sample.py"]
    kept, deselected = collect(sandbox, *common, "-m", UNMARKED, as_root=True)
    assert kept == {"test_sample.py::test_plain"} and deselected == 3
    marked, deselected = collect(sandbox, *common, "-m", MARKED, as_root=True)
    assert deselected == 1
    assert marked == {
        "test_sample.py::test_needs_root", "test_sample.py::test_uses_the_fio_fixture",
        "test_sample.py::test_marked_fio",
    }  # fmt: skip


# ---- the whole suite ------------------------------------------------------------------------


@pytest.mark.slow
def test_whole_suite_without_root_or_fio_skips_exactly_the_marked_tests(
    sandbox: Sandbox,
) -> None:
    ignore = ["--ignore", Path(__file__)]
    # as root (when it is), as CI runs: -m splits the suite into marked and unmarked tests,
    # each test in one of them (what one deselects, the other keeps); each collection of the
    # whole suite takes seconds, so the split is checked on three of them
    marked, deselected_marked = collect(sandbox, TESTS, *ignore, "-m", MARKED, as_root=True)
    unmarked, deselected_unmarked = collect(sandbox, TESTS, *ignore, "-m", UNMARKED, as_root=True)
    assert deselected_unmarked == len(marked) and deselected_marked == len(unmarked)
    assert not marked & unmarked
    assert "tests/test_cpubound.py::test_ground_truth_with_real_fio" in marked
    assert "tests/test_devices.py::test_real_loop_device" in marked
    # the slow tests (reports of stored results, the longest sweeps) need neither root nor fio
    # beyond their marks; leaving them out of the unprivileged run keeps it short
    fast = ["-m", "not slow"]
    quick, deselected_slow = collect(sandbox, TESTS, *ignore, *fast, as_root=True)
    assert len(quick) + deselected_slow == len(marked | unmarked)
    marked, unmarked = marked & quick, unmarked & quick
    # unprivileged, without fio: nothing fails, and what is skipped is what is marked, in every
    # file that holds a test needing root or fio (its other tests are the ones that could need
    # them without saying so); the files without any are rules and parsing on recorded data
    files = sorted({name.split("::")[0] for name in marked})
    unmarked = {name for name in unmarked if name.split("::")[0] in files}
    junit = sandbox.root / "suite.xml"
    # the unmarked tests run here a second time (the first, as root, is the suite itself): on
    # both CPUs, as they touch no device
    workers = ["-n", "2"] if importlib.util.find_spec("xdist") else []
    done = sandbox.pytest(
        "--strict-markers", "-q", "-rs", "--basetemp", sandbox.root / "tmp" / "suite-basetemp",
        "--junitxml", junit, *workers, *fast, *ignore, *(REPO / name for name in files),
    )  # fmt: skip
    assert junit.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    outcomes = read_junit(junit)
    problems = [f"failed without root or fio: {n}: {why}" for n, why in outcomes.failed.items()]
    problems += [
        f"skipped for a reason naming neither fio nor root: {name}: {reason}"
        for name, reason in outcomes.skipped.items() if not SKIP_REASON.search(reason)
    ]  # fmt: skip
    problems += [f"skipped but not marked: {n}" for n in sorted(set(outcomes.skipped) - marked)]
    problems += [f"marked but not skipped: {n}" for n in sorted(marked - set(outcomes.skipped))]
    assert not problems, "\n".join(sorted(problems))
    assert outcomes.passed and outcomes.passed == unmarked
    assert done.returncode == 0, done.stdout[-3000:]


# ---- a part of the suite without root, and without fio, each on its own ------------------

# one test of each kind: needing nothing, root, fio, and both
PART = [
    "tests/test_units.py",
    "tests/test_guard.py::test_real_partition_table",
    "tests/test_safety_process.py::test_a_closed_output_stream_costs_no_result_and_no_report",
    "tests/test_precondition.py::test_preconditioning_a_device_with_data_needs_destroy_data",
]


def run_part(box: Sandbox, env: dict[str, str], as_root: bool, wrap: list[str] = ()) -> Outcomes:
    """The PART of the suite, run as the sandbox's user (or root), read from its junit XML."""
    junit = box.root / f"part-{len(list(box.root.glob('part-*')))}.xml"
    options = ["-m", "pytest", "-p", "no:cacheprovider", "-q", "--strict-markers", "-rs",
               "--basetemp", str(box.root / "tmp" / junit.stem), "--junitxml", str(junit),
               *PART]  # fmt: skip
    python = sys.executable if as_root else box.python
    command = [*wrap, python, *options] if as_root else [*box.prefix, python, *options]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True,
                          check=False, timeout=RUN_TIMEOUT_S)  # fmt: skip
    assert junit.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    if not as_root and os.geteuid() == 0:
        os.lchown(junit, NOBODY, NOBODY)
    return read_junit(junit)


def marked_in_part(box: Sandbox, marker: str) -> set[str]:
    return collect(box, *PART, "-m", marker, as_root=True)[0]


def assert_skipped_exactly(outcomes: Outcomes, marked: set[str], reason: str) -> None:
    assert not outcomes.failed, outcomes.failed
    assert set(outcomes.skipped) == marked, (outcomes.skipped, marked)
    assert all(why.startswith(reason) for why in outcomes.skipped.values()), outcomes.skipped
    assert outcomes.passed  # the rest ran, and passed


@pytest.mark.fio  # fio stays: only root is missing
def test_a_part_of_the_suite_runs_without_root(sandbox: Sandbox) -> None:
    if os.geteuid() != 0:
        pytest.skip("runs as root and drops it: here the whole suite runs without root")
    env = dict(sandbox.env, PATH=f"{Path(sandbox.python).parent}{os.pathsep}{os.environ['PATH']}")
    outcomes = run_part(sandbox, env, as_root=False)
    assert_skipped_exactly(outcomes, marked_in_part(sandbox, "root"), "needs root")


@pytest.mark.root  # hides fio with a bind mount in a mount namespace of its own
@pytest.mark.fio
def test_a_part_of_the_suite_runs_without_fio(sandbox: Sandbox) -> None:
    if shutil.which("unshare") is None:
        pytest.skip("needs unshare (util-linux) for a mount namespace of its own")
    fio = os.path.realpath(shutil.which("fio") or "fio")
    stand_in = sandbox.root / "not-fio"  # bound over fio: a file that cannot be run
    stand_in.write_text("")
    stand_in.chmod(0o644)
    hide = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount --bind "$0" "$1" && shift && exec "$@"', str(stand_in), fio]  # fmt: skip
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("PYTEST_", "SSDCOMPARE_"))}  # fmt: skip
    outcomes = run_part(sandbox, env, as_root=True, wrap=hide)
    assert_skipped_exactly(outcomes, marked_in_part(sandbox, "fio"), "needs the fio binary")
    assert os.access(fio, os.X_OK)  # hidden only inside that namespace
