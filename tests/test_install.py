"""The wheel is complete: installed (not editable) into a fresh venv, it runs from anywhere.

Suites (jobs/) and templates live at the top of the repository and are copied into the package
by the build; a checkout hides a missing copy, so this test runs the installed command from a
folder far from the checkout. Dependencies come from the environment running the tests (a .pth
file), so nothing is downloaded; every step has a timeout so the test ends within a minute or so.
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STEP_TIMEOUT_S = 90


def run(command: list[str | Path], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [str(part) for part in command],
        capture_output=True, text=True, timeout=STEP_TIMEOUT_S, check=False, cwd=cwd,
    )  # fmt: skip
    assert done.returncode == 0, f"{command} failed:\n{done.stdout}\n{done.stderr}"
    return done


def package_folders() -> list[str]:
    """The site-packages folders this Python imports from: its own, and any it borrows from
    another environment (the checkout itself, also on sys.path, is no such folder)."""
    folders = [*sysconfig.get_paths().values(), *sys.path]
    return [
        folder for folder in dict.fromkeys(folders)
        if Path(folder).name in ("site-packages", "dist-packages") and Path(folder).is_dir()
    ]  # fmt: skip


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", out, REPO]
    if importlib.util.find_spec("hatchling") is not None:
        command.insert(4, "--no-build-isolation")  # build offline with the hatchling we have
    run(command, cwd=out)
    wheels = list(out.glob("ssdcompare-*.whl"))
    assert len(wheels) == 1
    return wheels[0]


@pytest.fixture(scope="module")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv with the wheel installed; dependencies borrowed from this environment."""
    root = tmp_path_factory.mktemp("venv")
    run([sys.executable, "-m", "venv", "--without-pip", root], cwd=root)
    python = root / "bin" / "python"
    site = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                    cwd=root).stdout.strip())  # fmt: skip
    # appended after the venv's own site-packages, and without running those folders' .pth
    # files: an editable ssdcompare there stays out of the way
    (site / "borrowed-dependencies.pth").write_text("".join(f"{p}\n" for p in package_folders()))
    run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index",
         wheel], cwd=root)  # fmt: skip
    return root


def test_wheel_holds_every_suite_and_template(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    for folder in ("jobs", "templates"):
        for path in (REPO / folder).iterdir():
            assert f"ssdcompare/{folder}/{path.name}" in names
    assert "ssdcompare/cli/commands.py" in names
    assert not any(name.startswith("tests/") for name in names)


def test_installed_package_finds_its_data_in_site_packages(venv: Path, tmp_path: Path) -> None:
    probe = (
        "import json, ssdcompare, ssdcompare.resources as r\n"
        "print(json.dumps({'module': ssdcompare.__file__, 'jobs': str(r.jobs_dir()),"
        " 'templates': str(r.templates_dir()),"
        " 'suites': sorted(p.name for p in r.jobs_dir().iterdir())}))"
    )
    found = json.loads(run([venv / "bin" / "python", "-c", probe], cwd=tmp_path).stdout)
    for key in ("module", "jobs", "templates"):
        assert Path(found[key]).is_relative_to(venv), f"{key} comes from {found[key]}"
    assert found["suites"] == sorted(p.name for p in (REPO / "jobs").glob("*.yaml"))
    assert (Path(found["templates"]) / "job.fio.j2").is_file()


def test_installed_command_lists_suites(venv: Path, tmp_path: Path) -> None:
    listing = run([venv / "bin" / "ssdcompare", "suites"], cwd=tmp_path).stdout
    for path in (REPO / "jobs").glob("*.yaml"):
        assert any(line.startswith(f"{path.stem} ") for line in listing.splitlines())


@pytest.mark.fio
def test_installed_command_plans_with_fio(venv: Path, tmp_path: Path) -> None:
    result = run(
        [venv / "bin" / "ssdcompare", "plan", "--suite", "optane-vs-nand", "--devices",
         "./scratch.img", "--size", "64m", "--brief"],
        cwd=tmp_path,
    )  # fmt: skip
    assert "accepts all 6 jobfiles." in result.stdout
    assert f"scratch.img (file {tmp_path / 'scratch.img'}" in result.stdout
