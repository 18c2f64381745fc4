"""The example notebook runs from top to bottom on the example results, so it cannot rot."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

EXAMPLES = Path(__file__).parent.parent / "examples"


@pytest.mark.slow  # seconds of its own: left out of the unprivileged rerun (test_markers)
def test_example_notebook_executes() -> None:
    notebook = nbformat.read(EXAMPLES / "explore.ipynb", as_version=4)
    client = NotebookClient(
        notebook, timeout=300, kernel_name="python3",
        resources={"metadata": {"path": str(EXAMPLES)}},
    )  # fmt: skip
    client.execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "\n".join(str(o.get("data", {}).get("text/plain", o.get("text", ""))) for o in outputs)
    assert "fio worker" in text  # the reasons of CPU-bound results
    # the report's charts drawn by ssdcompare.plot: IOPS against queue depth, and over time
    code = "\n".join(cell.source for cell in notebook.cells if cell.cell_type == "code")
    assert "ssdcompare.plot.queue_depth(" in code and "ssdcompare.plot.timeseries(" in code
    assert sum("image/png" in o.get("data", {}) for o in outputs) >= 2
    assert "frame:" in text and "fio:" in text  # a number traced back to its raw file
    # what the side-by-side table shows: verdicts, and differences tested (three repeats a
    # device), some of them significant, against the baseline the notebook asked for
    table = next(str(o["data"]["text/plain"]) for o in outputs
                 if "significant" in str(o.get("data", {}).get("text/plain", "")))  # fmt: skip
    assert "zram1/loop1" in table and "zram1 verdict" in table and "cpu" in table
    assert "True" in table
    # what its text says of the results holds for them
    words = " ".join(cell.source for cell in notebook.cells if cell.cell_type == "markdown")
    manifest = json.loads((EXAMPLES / "results" / "ramdisk-vs-loop" / "manifest.json").read_text())
    assert manifest["repeat"] == 3 and "three repeats each" in words
    assert "Welch's t-test" in words and "do not overlap" not in words
