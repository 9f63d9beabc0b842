"""The cache rule's keys held against the committed results.

A preset's or engine mode's result is reused while its key is unchanged: the content of the runs
it read, its grid and protocol, and the source of the modules that computed it
(``rrfbench/workflows/dataset.py``'s ``_preset_inputs``: the system's module, the preset base,
the tuning and fusion modules). Editing one of those files, even without changing a number, makes
every command that made such a result recompute and rewrite it in a user's clone. This test
recomputes each committed key with this checkout's code and the run digests the result recorded,
so such an edit fails here first (it did on 2026-12-07: a speed-up in the preset base).
"""

from __future__ import annotations

from functools import cache

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


@pytest.mark.parametrize("path", COMMITTED, ids=lambda p: str(p.relative_to(ROOT / "results")))
def test_this_code_reuses_each_committed_preset_and_engine_result(path, monkeypatch):
    from rrfbench.results.dataset import load_result
    from rrfbench.systems.registry import get_system
    from rrfbench.workflows import cache as cache_rule
    from rrfbench.workflows.dataset import _preset_inputs

    r = load_result(path)
    if not _have(r.dataset):
        pytest.skip(f"{r.dataset} not on RRFBENCH_DATA")
    runs_read = r.provenance["runs_read"]
    # the digests the result recorded stand in for the run files (not committed)
    monkeypatch.setattr(cache_rule, "run_path", lambda name, split, run: f"{name}/{split}/{run}")
    monkeypatch.setattr(cache_rule, "run_content_digest", runs_read.get)
    now = _preset_inputs(get_system(r.preset), [(_dataset(r.dataset), r.protocol)], r.metric)
    assert now.runs == runs_read
    assert now.key == r.provenance["cache_key"], (
        f"{path.relative_to(ROOT)} would be recomputed by this code (its key {now.key} is not "
        f"the recorded {r.provenance['cache_key']}): an edit to a module its key covers "
        "(the system's module, presets/base.py, tuning/holdout.py, fusion/functions.py, "
        "fusion/config.py, the version); revert it or recompute and commit the results")


# engines/base.py holds what every engine mode shares (the hits, the RRF position scores, the
# float32 rounding) but is in no result's key: adding it would recompute the 38 committed engine
# results (19 modes on scifact and 19 on the English suite: encoding its nine collections, about
# 35 minutes here).
# Until a round does that, its content is pinned: the digest below is the file whose every mode's
# ranked lists and score bits were checked equal to the code that computed the committed results
# (benchmarks/bench_engine_models.py, tests/systems/engines/test_engines.py; 2026-12-07).
ENGINE_BASE_SHA256 = "faf57ec55d1b772cbf7c075ac8f38d833a30fe02f726e679efde10455f13885c"


def test_the_engine_base_no_key_covers_is_the_checked_one():
    import hashlib

    path = ROOT / "rrfbench" / "systems" / "engines" / "base.py"
    now = hashlib.sha256(path.read_bytes()).hexdigest()
    assert now == ENGINE_BASE_SHA256, (
        "rrfbench/systems/engines/base.py changed, and no committed engine result's cache key "
        "covers it, so they would be reused unchanged: show that every mode's lists and score "
        "bits are the same (python benchmarks/bench_engine_models.py against the old code) and "
        f"pin the new digest {now}, or recompute and commit the engine results")
