"""Result objects: frozen, round-trip through JSON, and old files fail with a clear message."""

import dataclasses
import json

import pytest

from rrfbench.core.errors import InputError
from rrfbench.results.dataset import PresetResult, SweepResult, load_result, save_result
from rrfbench.results.values import SCHEMA_VERSION, Comparison, Estimate, Protocol
from tests.conftest import ROOT


def sweep_result():
    return SweepResult(
        dataset="d", fingerprint="f", runs=("bm25", "dense"), metric="nDCG@10",
        protocol=Protocol("holdout", "train", "test", 0, 0, "default"),
        config={"method": "rrf", "k": [60.0, 60.0], "weights": [0.5, 0.5], "depth": [None, None],
                "rank_base": 1, "norm": None, "missing": None, "limit": None,
                "label": "rrf k=60 w=0.5,0.5"},
        tuned=Estimate(0.7, (0.65, 0.75), 300), tune_value=0.71,
        baselines={"best_single": Comparison("bm25", 0.6, (0.55, 0.65), 0.1, 0.001, 0.002),
                   "rrf60_equal": Comparison("RRF k=60, equal weights", 0.69, (0.6, 0.7), 0.01,
                                             0.3, 0.31)},
        singles={"bm25": 0.6, "dense": 0.58},
        optimism={"rank_on_eval_grid": 2, "grid_size": 10, "best_on_eval": 0.71,
                  "best_on_eval_label": "x", "gap": 0.01},
        grid_size=10, family_best={}, per_query={"qids": ["1"], "tuned": [0.7]})


def test_roundtrip_and_frozen(tmp_path):
    r = sweep_result()
    path = save_result(r, tmp_path / "best.json")
    back = load_result(path)
    assert back == r and isinstance(back, SweepResult)
    assert json.loads(path.read_text())["schema_version"] == SCHEMA_VERSION
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.metric = "R@100"
    assert r.config_obj().weights == (0.5, 0.5)


def test_preset_result_roundtrip(tmp_path):
    r = PresetResult(preset="zeus", system="Zeus", dataset="d", fingerprint="f", metric="nDCG@10",
                     protocol=Protocol("cv", "test", "test", 5, 0, "one split"),
                     knobs={"top_k": {"default": 5, "range": [1, 50], "fixed": False}},
                     streams={"vector": "dense"}, shipped={"params": {"top_k": 5}, "metrics": {}},
                     config={"top_k": 10}, tuned=Estimate(0.5, (0.4, 0.6), 10),
                     tuned_metrics={"nDCG@10": 0.5},
                     vs_shipped=Comparison("shipped", 0.4, (0.3, 0.5), 0.1, 0.01, 0.02),
                     tune_value=0.55, grid_size=3, per_query={},
                     fidelity=({"item": "x", "status": "exact", "note": ""},))
    assert load_result(save_result(r, tmp_path / "p.json")) == r
    assert r.tuned_knobs() == {"top_k": 10}


def test_old_and_broken_files_fail_in_one_line(tmp_path):
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"runs": ["bm25"], "config": {}, "eval": {"value": 0.5}}))
    with pytest.raises(InputError, match="older rrfbench .* regenerate it with `rrfbench sweep"):
        load_result(old)
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match=r"bad.json:1: not valid JSON"):
        load_result(bad)
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps({"schema_version": SCHEMA_VERSION, "kind": "sweep"}))
    with pytest.raises(InputError, match="not a valid sweep result"):
        load_result(wrong)


def test_reading_a_result_imports_nothing_that_computes():
    """Value types on the ground floor: importing the results module (and loading a saved
    best.json with it) in a fresh interpreter loads no retriever, no engine, no policy fitting
    and no numba; a result's Config is a value (rrfbench.fusion.config), not the engine."""
    import subprocess
    import sys

    best = ROOT / "results" / "scifact" / "best.json"
    code = (
        "import sys\n"
        "import rrfbench.results.dataset as R, rrfbench.tuning.advice\n"
        f"r = R.load_result({str(best)!r}) if {best.exists()} else None\n"
        "heavy = sorted(m for m in sys.modules if m.startswith(('rrfbench.retrievers', "
        "'rrfbench.fusion.sweep', 'rrfbench.adaptive.policies', 'rrfbench.adaptive.features', 'rrfbench.workflows.dataset', "
        "'rrfbench.fusion.kernels', 'numba', 'bm25s', 'sklearn', 'torch')))\n"
        "print(heavy)\n"
        "if r is not None:\n"
        "    print(type(r.config_obj()).__module__, 'rrfbench.fusion.sweep' in sys.modules)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = out.stdout.split("\n")
    assert lines[0] == "[]", out.stdout
    if best.exists():
        assert lines[1] == "rrfbench.fusion.config False"   # the value came, not the engine
