"""Parquet export: pyarrow is an optional extra; without it the message says how to get it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from ssdcompare.errors import SsdcompareError
from ssdcompare.frame import export, load

ROOT = Path(__file__).parent.parent
EXAMPLE = ROOT / "examples" / "results" / "ramdisk-vs-loop"
INSTALL = "pip install 'ssdcompare[parquet]'"


@pytest.fixture
def without_pyarrow(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the Parquet writers fail to import, as when pyarrow is not installed.

    Where pyarrow is installed pandas has already imported it for its string columns, so only
    its Parquet module is blocked there; otherwise pyarrow itself is.
    """
    blocked = ["pyarrow.parquet", "fastparquet"]
    if "pyarrow" not in sys.modules:
        blocked.append("pyarrow")
    for name in blocked:
        monkeypatch.setitem(sys.modules, name, None)


@pytest.mark.usefixtures("without_pyarrow")
def test_parquet_without_pyarrow_names_the_extra(tmp_path: Path) -> None:
    target = tmp_path / "results.parquet"
    with pytest.raises(SsdcompareError) as caught:
        export([EXAMPLE], target)
    assert INSTALL in str(caught.value) and "pyarrow" in str(caught.value)
    assert not target.exists() and list(tmp_path.iterdir()) == []


@pytest.mark.usefixtures("without_pyarrow")
def test_the_command_line_says_it_too(tmp_path: Path, run_cli: Callable[..., object]) -> None:
    done = run_cli("export", str(EXAMPLE), "-o", str(tmp_path / "results.parquet"))
    assert done.exit_code != 0  # type: ignore[attr-defined]
    assert INSTALL in done.stderr  # type: ignore[attr-defined]
    assert "Traceback" not in done.stderr  # type: ignore[attr-defined]


def test_parquet_with_pyarrow_keeps_every_row_and_column(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    target = tmp_path / "results.parquet"
    rows = export([EXAMPLE], target)
    back = pd.read_parquet(target)
    frame = load(EXAMPLE)
    assert rows == len(back) == len(frame)
    assert list(back.columns) == list(frame.columns)


def test_the_parquet_extra_is_declared() -> None:
    tomllib = pytest.importorskip("tomllib")  # Python 3.11 and later
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extra = project["optional-dependencies"]["parquet"]
    assert any(requirement.startswith("pyarrow>=") for requirement in extra)
