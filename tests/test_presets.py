"""Each studied system's documented behaviour, reproduced on hand-made lists."""

import pytest

from rrfbench.errors import InputError
from rrfbench.presets import (
    AIMEMORY,
    NEXUSAI,
    PRESETS,
    TITAN,
    ZEUS,
    aimemory_fuse,
    dropoff_cut,
    nexusai_fuse,
    titan_fuse,
    zeus_fuse,
)
from rrfbench.runs import Run
from tests.conftest import needs_cranfield


def test_nexusai_keyword_weight_zero_is_exactly_semantic():
    sem = ["s1", "s2", "s3"]
    kw = ["k1", "s2", "k2"]
    out = nexusai_fuse({"semantic": sem, "keyword": kw},
                       {"semanticWeight": 1.0, "keywordWeight": 0.0}, 10)
    assert [d for d, _ in out] == sem  # no FTS-only documents
    assert [s for _, s in out] == pytest.approx([1 / 61, 1 / 62, 1 / 63])


def test_nexusai_formula_depth_and_stable_semantic_first_ties():
    out = nexusai_fuse({"semantic": ["a", "b"], "keyword": ["c", "a"]},
                       {"semanticWeight": 1.0, "keywordWeight": 1.0}, 10)
    assert out[0] == ("a", pytest.approx(1 / 61 + 1 / 62))
    # b (semantic rank 2) and c (keyword rank 1): 1/62 vs 1/61 -> c first
    assert [d for d, _ in out] == ["a", "c", "b"]
    tie = nexusai_fuse({"semantic": ["z"], "keyword": ["a"]},
                       {"semanticWeight": 1.0, "keywordWeight": 1.0}, 10)
    assert [d for d, _ in tie] == ["z", "a"]  # equal scores: semantic first (not docid order)
    assert NEXUSAI.depth("keyword", {}, 10) == 20 and NEXUSAI.depth("semantic", {}, 10) == 10


def test_nexusai_all_stopword_message_fts_sits_out(tiny_beir):
    import pandas as pd

    from rrfbench import load_dataset
    from rrfbench.retrievers.fts5 import FTS5Retriever

    ds = load_dataset(str(tiny_beir))
    q = pd.DataFrame({"qid": ["q"], "text": ["how do I do it?"]})
    kw = FTS5Retriever().retrieve(ds, q, 20)
    assert len(kw) == 0
    sem = Run.from_dict({"q": {"d3": 0.9, "d1": 0.5}}, "dense")
    out = NEXUSAI.run({"semantic": sem, "keyword": kw},
                      {"semanticWeight": 1.0, "keywordWeight": 1.0})
    assert out.df.docid.tolist() == ["d3", "d1"]


def test_nexusai_knob_ranges():
    with pytest.raises(InputError, match="outside"):
        NEXUSAI.check({"semanticWeight": 6.0})
    with pytest.raises(InputError, match="fixed"):
        NEXUSAI.check({"RRF_K": 20})


def test_titan_dropoff_and_minscore():
    assert dropoff_cut([1.0, 0.9, 0.3, 0.25], 0.5) == 2  # largest drop 0.9 -> 0.3 (67%)
    assert dropoff_cut([1.0, 0.9, 0.3, 0.25], 0.7) == 4  # largest drop below threshold
    assert dropoff_cut([1.0, 0.01], 0.5) == 1  # first result always stays
    lists = {"fts": ["a", "b", "c"], "vector": ["a", "d"]}
    p = {"k": 60, "vector_weight": 1.0, "fts_weight": 1.0, "minScore": 0.0, "dropoff": 0.0}
    full = titan_fuse(lists, p, 10)
    assert [d for d, _ in full] == ["a", "b", "d", "c"]  # b,d tie at 1/62: first seen (fts) first
    trimmed = titan_fuse(lists, p | {"minScore": 1 / 62.5}, 10)
    assert [d for d, _ in trimmed] == ["a", "b", "d"]
    cut = titan_fuse(lists, p | {"dropoff": 0.4}, 10)
    assert [d for d, _ in cut] == ["a"]  # 2/61 -> 1/62 is a ~49% drop
    assert TITAN.depth("vector", {}, 10) == 30


def test_zeus_zero_based_rank_depth_and_fallback():
    lists = {"vector": ["a", "b"], "keyword": ["b", "c"]}
    p = {"vector_weight": 0.6, "keyword_weight": 0.4, "top_k": 5}
    out = dict(zeus_fuse(lists, p, 5))
    assert out["a"] == pytest.approx(0.6 / 60)  # rank 0 -> weight / (0 + 60)
    assert out["b"] == pytest.approx(0.6 / 61 + 0.4 / 60)
    assert out["c"] == pytest.approx(0.4 / 61)
    assert ZEUS.depth("vector", p, 5) == 15 and ZEUS.depth("keyword", p | {"top_k": 10}, 10) == 30
    fb = zeus_fuse(lists, p | {"bm25_available": False}, 5)
    assert [d for d, _ in fb] == ["a", "b"]  # vector-only mode


def test_aimemory_multiplier_after_fusion():
    lists = {"fts5": ["a", "b"], "vector": ["b", "a"]}
    p = {"fts5": True, "vector": True}
    plain = aimemory_fuse(lists, p, 10)
    assert plain[0][1] == pytest.approx(1 / 61 + 1 / 62)
    boosted = aimemory_fuse(lists, p, 10, prior={"b": 1.5})
    assert boosted[0] == ("b", pytest.approx(1.5 * (1 / 61 + 1 / 62)))
    only_fts = aimemory_fuse(lists, {"fts5": True, "vector": False}, 10)
    assert [d for d, _ in only_fts] == ["a", "b"]
    assert AIMEMORY.missing_streams == ["entity-match", "graph-neighbour"]


def test_preset_run_keeps_system_tie_order():
    sem = Run.from_dict({"q": {"z": 0.9}}, "dense")
    kw = Run.from_dict({"q": {"a": 5.0}}, "fts5")
    out = NEXUSAI.run({"semantic": sem, "keyword": kw}, {"semanticWeight": 1.0, "keywordWeight": 1.0})
    assert out.df.docid.tolist() == ["z", "a"]  # tie kept in nexusAI's order, not docid order
    assert out.df.score.iloc[0] == pytest.approx(1 / 61, abs=1e-15)


def test_grids_respect_ranges():
    for p in PRESETS.values():
        for params in p.grid():
            p.check(params)
        assert len(p.grid()) > 1


@needs_cranfield
def test_cranfield_presets_run(cranfield):
    from rrfbench.presets import evaluate_preset, preset_runs

    for name in ("nexusai", "zeus"):
        p = PRESETS[name]
        runs = preset_runs(p, cranfield, "test")
        pq = evaluate_preset(p, runs, cranfield.qrels("test"))
        assert 0.2 < pq["nDCG@10"].mean() < 0.6
