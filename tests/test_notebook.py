"""examples/quickstart.ipynb runs headless (nbclient) without error, steers a crawl and plots; and the copy in the
repository is saved with outputs that this run reproduces (cell by cell, the same kinds of output), so a reader
sees what it does without running it.

To store fresh outputs after changing the notebook or what it prints: ``RAYCRAWL_REFRESH_NOTEBOOK=1 pytest
tests/test_notebook.py``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient

NOTEBOOK = Path(__file__).resolve().parent.parent / "examples" / "quickstart.ipynb"
# What only raycrawl's own output may contain: no Ray log line, no warning about missing widgets.
NOISE = re.compile(r"\b(INFO|WARNING|WARN)\b|ipywidgets|IProgress|_node_ip_address|Traceback")


def _shape(nb: Any) -> list[list[str]]:
    """Per code cell, the kinds of its outputs (stream names, result, display): what must stay the same."""
    return [
        [o.get("name", o.output_type) if o.output_type == "stream" else o.output_type for o in cell.get("outputs", [])]
        for cell in nb.cells
        if cell.cell_type == "code"
    ]


def _text(nb: Any) -> str:
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    return "\n".join(str(o.get("text", "")) + str(o.get("data", {}).get("text/plain", "")) for o in outputs)


def test_quickstart_notebook_executes_and_its_stored_outputs_are_fresh(tmp_path: Path) -> None:
    stored = nbformat.read(NOTEBOOK, as_version=4)
    nb = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3", resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.get("outputs", [])]
    assert not [o for o in outputs if o.output_type == "error"]
    text = _text(nb)
    assert "while paused: paused" in text
    assert "frontier exhausted" in text
    assert "fetched" in text  # the outcome counts from the Ray Dataset
    assert any("image/png" in o.get("data", {}) for o in outputs)  # the pages/s plot
    assert "harvest rate" in text and "text_chars" in text  # items: issue 47
    assert not NOISE.search(text), NOISE.search(text)
    assert not [o for o in outputs if o.output_type == "stream" and o.get("name") == "stderr"]
    if os.environ.get("RAYCRAWL_REFRESH_NOTEBOOK"):
        nbformat.write(nb, NOTEBOOK)
        return
    # The repository's copy shows what a run shows: every code cell has its outputs, of the same kinds.
    assert all(cell.get("execution_count") for cell in stored.cells if cell.cell_type == "code")
    assert _shape(stored) == _shape(nb)
    stored_text = _text(stored)
    assert "frontier exhausted" in stored_text and not NOISE.search(stored_text)
    assert "_node_ip_address" not in NOTEBOOK.read_text()
