"""Issue 6: examples/quickstart.ipynb runs headless (nbclient) without error, steers a crawl and plots."""

from __future__ import annotations

from pathlib import Path

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parent.parent / "examples" / "quickstart.ipynb"


def test_quickstart_notebook_executes_and_plots(tmp_path: Path) -> None:
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = "\n".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in outputs)
    assert "while paused: paused" in text
    assert "frontier exhausted" in text
    assert "fetched" in text  # the outcome counts from the Ray Dataset
    assert any("image/png" in o.get("data", {}) for o in outputs)  # the pages/s plot
