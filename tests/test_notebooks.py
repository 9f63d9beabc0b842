"""Every notebook runs top to bottom and is committed clean.

They run on small cuts of the real collections under their real names (the README test's data,
``cut_data`` in conftest): cranfield for the single-collection notebooks, the ``small`` suite
(cranfield, time, adi) for 05 and 07, with their own results folder. What they compute on the
full collections is what the CLI computes (tests/test_workflows.py, tests/test_transfer.py and
tests/test_adaptive.py check that on real data); this test checks that each one runs."""

import os
from pathlib import Path

import nbformat
import pytest

NOTEBOOKS = sorted((Path(__file__).resolve().parents[1] / "notebooks").glob("*.ipynb"))


def test_there_are_four_notebooks():
    assert [p.name[:2] for p in NOTEBOOKS] == ["01", "02", "03", "04", "05", "06", "07"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: clear outputs"


@pytest.fixture(scope="module")
def notebook_results(tmp_path_factory):
    """One results folder for the notebooks of this worker (later ones reuse earlier runs)."""
    return tmp_path_factory.mktemp("notebook-results")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_runs_top_to_bottom(path, monkeypatch, cut_data, notebook_results):
    from nbclient import NotebookClient

    monkeypatch.setenv("RRFBENCH_DATA", str(cut_data))
    monkeypatch.setenv("RRFBENCH_RESULTS", str(notebook_results))
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
