"""The results frame, or the per-job summary, written to CSV or Parquet (`ssdcompare export`).

An export is never written among a results folder's runs, nor over a file but an export of
ssdcompare's (ssdcompare.results.outputs). In CSV, a text cell a spreadsheet would take for a
formula is quoted (OWASP: CSV injection).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from ssdcompare.analysis.frame import load
from ssdcompare.analysis.summary import job_summary
from ssdcompare.errors import SsdcompareError
from ssdcompare.results.files import write_atomic
from ssdcompare.results.outputs import check_export_path
from ssdcompare.results.store import given_paths


def export(paths: Iterable[str | Path], output: str | Path, summary: bool = False) -> int:
    """Write the frame (or the per-job summary) of results folders to CSV or Parquet.

    Parquet needs pyarrow (`pip install 'ssdcompare[parquet]'`). Returns the number of rows
    written.
    """
    folders = given_paths(paths)
    return export_frame(load(folders), output, summary, folders)


def export_frame(
    frame: pd.DataFrame,
    output: str | Path,
    summary: bool = False,
    folders: Iterable[str | Path] = (),
) -> int:
    """`export` of a frame already loaded (from the results `folders`: the export is never
    written among their runs, nor over anything but an export of ssdcompare's)."""
    check_export_path(Path(output), [Path(f) for f in folders])
    if summary:
        frame = job_summary(frame)
    target = Path(output)
    suffix = target.suffix.lower()
    if suffix == ".csv":
        text = _formula_safe(frame).to_csv(index=False)
        write_atomic(target, text)
    elif suffix == ".parquet":
        try:
            # pyarrow named, not pandas' "auto": the extra installs it, and the file's types
            # (Int64, boolean, string) do not depend on which engine happens to be present
            data = frame.to_parquet(index=False, engine="pyarrow")
        except ImportError:
            raise SsdcompareError(
                "Parquet export needs pyarrow, which is not installed: "
                "pip install 'ssdcompare[parquet]' (or export to .csv)"
            ) from None
        write_atomic(target, data)
    else:
        raise SsdcompareError(f"cannot export to {target.name}: use a .csv or .parquet name")
    return len(frame)


# what makes a spreadsheet read a cell as a formula (OWASP: CSV injection)
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _formula_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """The frame with every text cell that a spreadsheet would take for a formula (a
    hostname of "=cmd|..." in someone else's manifest) prefixed with a single quote, as
    OWASP advises; numeric columns are left as they are (a negative number stays one)."""
    safe = frame.copy()
    for column in safe.columns:
        if pd.api.types.is_numeric_dtype(safe[column]) or pd.api.types.is_bool_dtype(safe[column]):
            continue
        values = safe[column].tolist()
        if any(isinstance(v, str) and v.startswith(_FORMULA_START) for v in values):
            safe[column] = pd.array(
                ["'" + v if isinstance(v, str) and v.startswith(_FORMULA_START) else v
                 for v in values], dtype=safe[column].dtype,
            )  # fmt: skip
    return safe
