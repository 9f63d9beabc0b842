"""Engine rules read from the engines' source code, each with a case the older model got wrong:
Weaviate's rank + 59 and its tie order, Elasticsearch's and LanceDB's version ranges, and the
tie-aware agreement a server that breaks ties in no fixed order (Qdrant) is checked with."""

import warnings

import numpy as np
import pytest

from rrfbench.core.errors import InputError, ValidationWarning
from rrfbench.systems.engines import elasticsearch, lancedb, weaviate
from rrfbench.systems.engines.base import agrees_up_to_ties, f32, tie_groups
from rrfbench.systems.presets.base import Hit


def _w(space, **kw):
    return space.defaults() | kw


# --------------------------------------------------------------------------- Weaviate
def test_weaviate_ranked_is_rank_plus_59_since_1_24_and_rank_plus_60_before():
    lists = {"vector": [Hit("a", 0.9), Hit("b", 0.8)], "keyword": [Hit("c", 7.0)]}
    new = dict(weaviate.RANKED.fuse_query(lists, _w(weaviate.RANKED, alpha=0.5), 10))
    assert new["a"] == f32(f32(0.5 / 60)) and new["b"] == f32(0.5 / 61)
    old = dict(weaviate.RANKED.fuse_query(
        lists, _w(weaviate.RANKED, alpha=0.5, engine_version="before-1.24"), 10))
    assert old["a"] == f32(0.5 / 61) and old["b"] == f32(0.5 / 62)


def test_weaviate_breaks_near_ties_by_the_raw_score_then_the_id():
    # a (vector only) and c (BM25 only) tie at 0.5 / 60: the larger raw score (BM25 7.0 over
    # the cosine 0.9) goes first, not the smaller id
    lists = {"vector": [Hit("a", 0.9)], "keyword": [Hit("c", 7.0)]}
    got = weaviate.RANKED.fuse_query(lists, _w(weaviate.RANKED, alpha=0.5), 10)
    assert [d for d, _ in got] == ["c", "a"]
    # within 1e-7 but not equal: still a tie (relative fusion, weights 0.5 each)
    order = weaviate.weaviate_order({"a": 0.5, "b": float(np.float32(0.5) - np.float32(6e-8))},
                                    {"a": 0.1, "b": 0.2})
    assert [d for d, _ in order] == ["b", "a"]
    # secondary values tied too: the id decides; a real gap: the score decides
    assert [d for d, _ in weaviate.weaviate_order({"b": 0.5, "a": 0.5}, {"a": 1.0, "b": 1.0})] \
        == ["a", "b"]
    assert [d for d, _ in weaviate.weaviate_order({"a": 0.5, "b": 0.6}, {"a": 9.0})] == ["b", "a"]
    # before 1.24, ranked fusion: only exact ties go to the raw score
    old = weaviate.weaviate_order({"a": 0.5, "b": float(np.float32(0.5) - np.float32(6e-8))},
                                  {"a": 0.1, "b": 0.2}, near=False)
    assert [d for d, _ in old] == ["a", "b"]


# --------------------------------------------------------------------------- Elasticsearch
def test_elasticsearch_minmax_without_spread_by_version():
    lists = {"vector": [Hit("a", 0.5), Hit("b", 0.1)], "keyword": [Hit("c", 7.3)]}
    p = _w(elasticsearch.LINEAR, normalizer="minmax")
    new = dict(elasticsearch.LINEAR.fuse_query(lists, p, 10))
    assert new["c"] == f32(0.5 * 1.0)                     # one hit: 1.0 (PR #128689)
    old = dict(elasticsearch.LINEAR.fuse_query(
        lists, p | {"engine_version": "8.18.0-8.18.2"}, 10))
    assert old["c"] == f32(0.5 * f32(7.3))                # one hit: the minimum, the raw score


# --------------------------------------------------------------------------- LanceDB
def test_lancedb_linear_before_0_33_inverts_the_ranking():
    lists = {"vector": [Hit("best", 0.9), Hit("mid", 0.5), Hit("worst", 0.1)],
             "keyword": [Hit("best", 9.0), Hit("mid", 4.0), Hit("worst", 1.0)]}
    new = [d for d, _ in lancedb.LINEAR.fuse_query(lists, lancedb.LINEAR.defaults(), 10)]
    old = [d for d, _ in lancedb.LINEAR.fuse_query(
        lists, lancedb.LINEAR.defaults() | {"engine_version": "before-0.33"}, 10)]
    assert new == ["best", "mid", "worst"] and old == ["worst", "mid", "best"]


# --------------------------------------------------------------------------- versions
def test_engine_versions_are_checked_and_exported(tmp_path):
    assert elasticsearch.LINEAR.parse_settings(["engine_version=8.18.0-8.18.2"]) == \
        {"engine_version": "8.18.0-8.18.2"}
    with pytest.raises(InputError, match="not a version range of elasticsearch-linear; known: "
                                         "8.18.3\\+, 8.18.0-8.18.2"):
        elasticsearch.LINEAR.parse_settings(["engine_version=7.0"])
    with pytest.raises(InputError, match="one formula for every version"):
        elasticsearch.RRF.check_version("9.1")
    from rrfbench.outputs.exporters import _version_lines
    p = elasticsearch.LINEAR.defaults()
    assert _version_lines(elasticsearch.LINEAR, p, None) == [
        "targets elasticsearch 8.18.3+ (formulas differ in 8.18.0-8.18.2: --engine-version)"]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        lines = _version_lines(elasticsearch.LINEAR, p, "8.18.0-8.18.2")
    assert lines[0].startswith("targets elasticsearch 8.18.0-8.18.2")
    assert any(issubclass(x.category, ValidationWarning) and "tuned under" in str(x.message)
               for x in w)
    assert _version_lines(elasticsearch.RRF, elasticsearch.RRF.defaults(), None) == []


# --------------------------------------------------------------------------- ties
def test_agreement_up_to_ties_accepts_exactly_the_permutations_of_tied_documents():
    ours = [("a", 3.0), ("b", 2.0), ("c", 2.0), ("d", 1.0), ("e", 1.0), ("f", 1.0), ("g", 0.5)]
    assert tie_groups(ours) == [["a"], ["b", "c"], ["d", "e", "f"], ["g"]]
    assert agrees_up_to_ties(ours, ["a", "c", "b", "d", "e"], k=5)
    assert agrees_up_to_ties(ours, ["a", "b", "c", "f", "d"], k=5)      # the cut's group: any
    assert not agrees_up_to_ties(ours, ["a", "b", "d", "c", "e"], k=5)  # across groups
    assert not agrees_up_to_ties(ours, ["b", "a", "c", "d", "e"], k=5)
    assert not agrees_up_to_ties(ours, ["a", "b", "c", "d", "g"], k=5)  # a lower document in
    assert not agrees_up_to_ties(ours, ["a", "b", "b", "d", "e"], k=5)  # a duplicate


def test_every_engine_modes_fidelity_list_cites_its_source():
    """A formula read from code names the repository and commit (``owner/repo@abc1234``), a
    formula read from a reference its address; SQLite's statement is rrfbench's own file."""
    import re

    from rrfbench.systems.engines import SPACES

    cite = re.compile(r"[\w.-]+/[\w.-]+@[0-9a-f]{7,}|https?://|rrfbench/systems/engines/\w+\.py")
    for name, space in SPACES.items():
        assert any(cite.search(f"{f.item} {f.note}") for f in space.fidelity), name


def test_export_engine_version_from_the_console_script():
    from tests.conftest import ROOT
    from tests.test_cli import console, one_line_error

    best = str(ROOT / "results" / "scifact" / "engines" / "elasticsearch-linear" / "best.json")
    code, out, err = console("export", best, "--format", "elasticsearch", "--engine-version",
                             "8.18.0-8.18.2")
    assert code == 0, err
    assert "targets elasticsearch 8.18.0-8.18.2" in out and "tuned under" in err
    code, out, _ = console("export", best, "--format", "elasticsearch")
    assert code == 0 and "targets elasticsearch 8.18.3+" in out
    one_line_error(*console("export", best, "--format", "elasticsearch", "--engine-version",
                            "7.17")[::2], "--engine-version", "'7.17'", "8.18.3+")
    one_line_error(*console("export", best, "--format", "json", "--engine-version",
                            "8.18.3+")[::2], "--engine-version", "not an engine's format")
