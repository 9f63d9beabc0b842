"""The notebooks: committed with their outputs (executed against the committed results, so a
reader on the web sees the tables and plots), current (executed afresh they show the same
text), and each one's computing path runs on small cuts of the real collections.

Committed outputs: ``make notebooks`` (``python -m tests.nbrun --write``) executes them with
their default parameters (cranfield; the English suite's committed results) in a copy of
``results/``. On cuts: the README test's data (``cut_data`` in conftest), cranfield for the
single-collection notebooks, the ``small`` suite recomputed for 05 and 07."""

import os
from pathlib import Path

import nbformat
import pytest

from tests.conftest import _have
from tests.nbrun import NOTEBOOKS, copy_results, environment, execute, images, text_outputs


def test_there_are_nine_notebooks():
    assert [p.name[:2] for p in NOTEBOOKS] == ["01", "02", "03", "04", "05", "06", "07", "08", "09"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_with_outputs(path):
    """Every code cell ran (in order) and shows something; every plot is a non-empty PNG."""
    nb = nbformat.read(path, as_version=4)
    cells = [c for c in nb.cells if c.cell_type == "code"]
    assert [c.execution_count for c in cells] == list(range(1, len(cells) + 1)), path.name
    assert not [o for c in cells for o in c.outputs if o.output_type == "error"]
    shown = [i for i, c in enumerate(cells) if c.outputs]
    assert len(shown) >= len(cells) - 2, f"{path.name}: cells without outputs"
    for c in cells:
        for o in c.outputs:
            if "image/png" in o.get("data", {}):
                assert len(o["data"]["image/png"]) > 1000


@pytest.fixture(scope="module")
def committed_results(tmp_path_factory):
    return copy_results(tmp_path_factory.mktemp("committed") / "results")


@pytest.mark.skipif(not _have("cranfield"), reason="the notebooks read cranfield")
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_outputs_are_current(path, committed_results):
    """Executed afresh against the committed results, each code cell shows the same text as
    the committed notebook, and the same images (present, not empty). A changed result, an
    edited cell or a changed table fails here: run `make notebooks` and review the diff."""
    committed = nbformat.read(path, as_version=4)
    with environment(committed_results):
        fresh = execute(path)
    want, got = text_outputs(committed), text_outputs(fresh)
    assert len(want) == len(got)
    for i, (w, g) in enumerate(zip(want, got, strict=True)):
        assert g == w, f"{path.name}, code cell {i + 1}: text differs from the committed output"
    assert images(fresh) == images(committed)


@pytest.fixture(scope="module")
def notebook_results(tmp_path_factory):
    """One results folder for the notebooks of this worker (later ones reuse earlier runs)."""
    return tmp_path_factory.mktemp("notebook-results")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_runs_top_to_bottom_on_cuts(path, monkeypatch, cut_data, notebook_results):
    monkeypatch.setenv("RRFBENCH_DATA", str(cut_data))
    monkeypatch.setenv("RRFBENCH_RESULTS", str(notebook_results))
    monkeypatch.setenv("RRFBENCH_NB_DATASET", "cranfield")
    monkeypatch.setenv("RRFBENCH_NB_SUITE", "small")
    monkeypatch.setenv("RRFBENCH_NB_FAST", "1")
    monkeypatch.setenv("RRFBENCH_NB_RECOMPUTE", "1")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = execute(Path(path))
    errors = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs
              if o.output_type == "error"]
    assert not errors
    assert os.environ["RRFBENCH_NB_DATASET"] == "cranfield"


def test_a_changed_output_is_seen():
    """The comparison reads what a reader sees: a changed number in a printed line or in a
    table differs; stderr (progress, warnings) and image bytes do not count."""
    import copy

    nb = nbformat.read(NOTEBOOKS[0], as_version=4)
    base = text_outputs(nb)
    for kind in ("stream", "execute_result"):
        other = copy.deepcopy(nb)
        cell = next(c for c in other.cells if c.cell_type == "code"
                    and any(o.output_type == kind for o in c.outputs))
        out = next(o for o in cell.outputs if o.output_type == kind)
        if kind == "stream":
            out.text = out.text.replace("1400", "1401")
        else:
            out.data["text/plain"] = out.data["text/plain"].replace("0.", "9.", 1)
        assert text_outputs(other) != base
    quiet = copy.deepcopy(nb)
    quiet.cells[2].outputs.append(nbformat.v4.new_output("stream", name="stderr", text="x"))
    assert text_outputs(quiet) == base
    # a progress widget (tqdm's notebook bar while a cold cache encodes) is not a result
    bar = {"text/plain": "dense: encode 1400 document texts in 1 shards:   0%|          | 0/1400",
           "application/vnd.jupyter.widget-view+json": {"model_id": "ab12", "version_major": 2,
                                                        "version_minor": 0}}
    quiet.cells[2].outputs.insert(0, nbformat.v4.new_output("display_data", data=bar))
    assert text_outputs(quiet) == base
