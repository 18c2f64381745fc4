"""The example notebook runs from top to bottom on the example results, so it cannot rot."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

EXAMPLES = Path(__file__).parent.parent / "examples"


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
    assert "CPU-bound" in text and "fio worker" in text
    assert any("image/png" in o.get("data", {}) for o in outputs)  # the IOPS vs QD plot
    assert "frame:" in text and "fio:" in text  # a number traced back to its raw file
