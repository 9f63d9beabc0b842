"""Every notebook runs top to bottom (on cranfield, to stay fast) and is committed clean."""

import os
from pathlib import Path

import nbformat
import pytest

from tests.conftest import needs_cranfield

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_there_are_four_notebooks():
    assert [p.name[:2] for p in NOTEBOOKS] == ["01", "02", "03", "04", "05", "06", "07"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: clear outputs"


@needs_cranfield
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_runs_top_to_bottom(path, monkeypatch):
    from nbclient import NotebookClient

    monkeypatch.setenv("RRFBENCH_NB_DATASET", "cranfield")
    monkeypatch.setenv("RRFBENCH_NB_SUITE", "small")
    monkeypatch.setenv("RRFBENCH_NB_FAST", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(path, as_version=4)
    NotebookClient(nb, timeout=600, kernel_name="python3",
                   resources={"metadata": {"path": str(path.parent.parent)}}).execute()
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors
    assert os.environ["RRFBENCH_NB_DATASET"] == "cranfield"
