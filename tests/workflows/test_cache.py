"""The cache rule's keys held against the committed results.

A preset's or engine mode's result is reused while its key is unchanged: the content of the runs
it read, its grid and protocol, and the source of the modules that computed it
(``rrfbench/workflows/dataset.py``'s ``_preset_inputs``: the system's module, the preset base,
an engine mode's shared engine base, the tuning and fusion modules). Editing one of those files,
even without changing a number, makes every command that made such a result recompute and
rewrite it in a user's clone. This test
recomputes each committed key with this checkout's code and the run digests the result recorded,
so such an edit fails here first (it did on 2026-12-07: a speed-up in the preset base).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from tests.conftest import ROOT, _have


def _systems() -> set[str]:
    from rrfbench.systems import engines, presets

    return set(presets.PRESETS) | set(engines.SPACES)


# a studied system's or an engine mode's result on one dataset (engines/free-*: the free fusion)
COMMITTED = sorted(p for pattern in ("results/*/presets/*/best.json",
                                     "results/*/engines/*/best.json")
                   for p in ROOT.glob(pattern) if p.parent.name in _systems())


@cache
def _dataset(name: str):
    from rrfbench.workflows.dataset import as_dataset

    return as_dataset(name)


def test_there_are_committed_results_to_check():
    assert len(COMMITTED) >= 20


def _key_now(path, monkeypatch):
    """The key this checkout's code gives a committed result, with the run digests it recorded."""
    from rrfbench.results.dataset import load_result
    from rrfbench.systems.registry import get_system
    from rrfbench.workflows import cache as cache_rule
    from rrfbench.workflows.dataset import _preset_inputs

    r = load_result(path)
    runs_read = r.provenance["runs_read"]
    # the digests the result recorded stand in for the run files (not committed)
    monkeypatch.setattr(cache_rule, "run_path", lambda name, split, run: f"{name}/{split}/{run}")
    monkeypatch.setattr(cache_rule, "run_content_digest", runs_read.get)
    now = _preset_inputs(get_system(r.preset), [(_dataset(r.dataset), r.protocol)], r.metric)
    assert now.runs == runs_read
    return now.key


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(ROOT / "results")))
def test_this_code_reuses_each_committed_preset_and_engine_result(path, monkeypatch):
    from rrfbench.results.dataset import load_result

    r = load_result(path)
    if not _have(r.dataset):
        pytest.skip(f"{r.dataset} not on RRFBENCH_DATA")
    now = _key_now(path, monkeypatch)
    assert now == r.provenance["cache_key"], (
        f"{path.relative_to(ROOT)} would be recomputed by this code (its key {now} is not "
        f"the recorded {r.provenance['cache_key']}): an edit to a module its key covers "
        "(the system's module, presets/base.py, engines/base.py for an engine mode, "
        "tuning/holdout.py, fusion/functions.py, fusion/config.py, the version); revert it or "
        "recompute and commit the results")


@pytest.mark.skipif(not _have("scifact"), reason="scifact not on RRFBENCH_DATA")
def test_an_edit_to_the_engine_base_recomputes_engine_results_only(tmp_path, monkeypatch):
    """engines/base.py (every engine mode's hits, RRF position scores and float32 rounding) is
    in an engine mode's key, not in a studied system's (it was in no key until 2026-12-07)."""
    from rrfbench.systems.engines import base as engine_base

    engine = ROOT / "results/scifact/engines/qdrant-rrf/best.json"
    preset = ROOT / "results/scifact/presets/zeus/best.json"
    before = _key_now(engine, monkeypatch), _key_now(preset, monkeypatch)
    edited = tmp_path / "base.py"
    edited.write_bytes(Path(engine_base.__file__).read_bytes() + b"# an edit\n")
    monkeypatch.setattr(engine_base, "__file__", str(edited))
    after = _key_now(engine, monkeypatch), _key_now(preset, monkeypatch)
    assert after[0] != before[0]
    assert after[1] == before[1]


SUITE_COMMITTED = sorted(p for pattern in ("results/transfer/*/presets/*/best.json",
                                           "results/transfer/*/engines/*/best.json")
                         for p in ROOT.glob(pattern) if p.parent.name in _systems())


@pytest.mark.parametrize("path", SUITE_COMMITTED,
                         ids=lambda p: str(p.relative_to(ROOT / "results")))
def test_this_code_reuses_each_committed_suite_result(path, monkeypatch):
    """The same for a system tuned across a suite (rrfbench tune --suite, rrfbench engines
    --suite): its key adds the suite's modules (rrfbench/workflows/suite.py's SUITE_CODE)."""
    import json

    from rrfbench.systems.registry import get_system
    from rrfbench.workflows import cache as cache_rule
    from rrfbench.workflows.suite import preset_suite_inputs, suite_members

    r = json.loads(path.read_text())
    if not all(_have(c) for c in r["collections"]):
        pytest.skip(f"a collection of {r['suite']} is not on RRFBENCH_DATA")
    runs_read = r["provenance"]["runs_read"]
    monkeypatch.setattr(cache_rule, "run_path", lambda name, split, run: f"{name}/{split}/{run}")
    monkeypatch.setattr(cache_rule, "run_content_digest", runs_read.get)
    now = preset_suite_inputs(get_system(r["preset"]), suite_members(r["suite"]), r["metric"],
                              r["objective"], r["rule"])
    assert now.runs == runs_read
    assert now.key == r["provenance"]["cache_key"], (
        f"{path.relative_to(ROOT)} would be recomputed by this code: an edit to a module its key "
        "covers (those above, and rrfbench/workflows/suite.py's SUITE_CODE); revert it or "
        "recompute and commit the results")
