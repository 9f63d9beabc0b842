"""nexusAI's fuseEpisodeResults, reproduced on hand-made lists."""

import pandas as pd
import pytest

from rrfbench.core.errors import InputError
from rrfbench.core.runs import Run
from rrfbench.systems.presets import get_preset

NEXUSAI = get_preset("nexusai")


def fuse(lists, sw=1.0, kw=1.0, limit=10):
    return NEXUSAI.fuse_query(lists, {"semanticWeight": sw, "keywordWeight": kw, "RRF_K": 60}, limit)


def test_keyword_weight_zero_is_exactly_semantic():
    sem, kw = ["s1", "s2", "s3"], ["k1", "s2", "k2"]
    out = fuse({"semantic": sem, "keyword": kw}, 1.0, 0.0)
    assert [d for d, _ in out] == sem  # no FTS-only documents
    assert [s for _, s in out] == pytest.approx([1 / 61, 1 / 62, 1 / 63])


def test_formula_depth_and_stable_semantic_first_ties():
    out = fuse({"semantic": ["a", "b"], "keyword": ["c", "a"]})
    assert out[0] == ("a", pytest.approx(1 / 61 + 1 / 62))
    assert [d for d, _ in out] == ["a", "c", "b"]  # c (1/61) beats b (1/62)
    tie = fuse({"semantic": ["z"], "keyword": ["a"]})
    assert [d for d, _ in tie] == ["z", "a"]  # equal scores: semantic first, not docid order
    assert NEXUSAI.depth("keyword", {}, 10) == 20 and NEXUSAI.depth("semantic", {}, 10) == 10


def test_all_stopword_message_fts_sits_out(tiny_beir):
    from rrfbench import load_dataset
    from rrfbench.retrievers.fts5 import FTS5Retriever

    ds = load_dataset(str(tiny_beir))
    kw = FTS5Retriever().retrieve(ds, pd.DataFrame({"qid": ["q"], "text": ["how do I do it?"]}), 20)
    assert len(kw) == 0
    sem = Run.from_dict({"q": {"d3": 0.9, "d1": 0.5}}, "dense")
    out = NEXUSAI.run({"semantic": sem, "keyword": kw}, {"semanticWeight": 1.0, "keywordWeight": 1.0})
    assert out.df.docid.tolist() == ["d3", "d1"]


def test_knob_ranges_and_parse():
    with pytest.raises(InputError, match="outside"):
        NEXUSAI.check({"semanticWeight": 6.0})
    with pytest.raises(InputError, match="fixed"):
        NEXUSAI.check({"RRF_K": 20})
    assert NEXUSAI.parse_settings(["keywordWeight=1.5"]) == {"keywordWeight": 1.5}
    with pytest.raises(InputError, match="--set keywordWeight: 'x' is not a number"):
        NEXUSAI.parse_settings(["keywordWeight=x"])
    with pytest.raises(InputError, match="no knob 'k'"):
        NEXUSAI.parse_settings(["k=1"])


def test_run_keeps_system_tie_order():
    sem = Run.from_dict({"q": {"z": 0.9}}, "dense")
    kw = Run.from_dict({"q": {"a": 5.0}}, "fts5")
    out = NEXUSAI.run({"semantic": sem, "keyword": kw}, {"semanticWeight": 1.0, "keywordWeight": 1.0})
    assert out.df.docid.tolist() == ["z", "a"]  # nexusAI's order survives rrfbench's docid rule
    assert out.df.score.iloc[0] == pytest.approx(1 / 61, abs=1e-15)


def test_exports():
    js = NEXUSAI.exports["nexusai"]({"semanticWeight": 1.5, "keywordWeight": 2.0, "RRF_K": 60}, ["p"])
    assert "export const RETRIEVAL" in js and "KEYWORD_WEIGHT: 2," in js


# --------------------------------------------------------------------------- found by mutmut
def test_valid_grid_points_and_contributions_by_stream():
    from rrfbench.systems.presets.base import Hit

    assert not NEXUSAI.valid({"semanticWeight": 0.0, "keywordWeight": 0.0})
    assert NEXUSAI.valid({"semanticWeight": 0.5, "keywordWeight": 0.0})
    assert NEXUSAI.valid({"semanticWeight": 0.0, "keywordWeight": 0.5})
    p = {"semanticWeight": 1.0, "keywordWeight": 2.0}
    c = NEXUSAI.contributions({"semantic": [Hit("a", 0.9)], "keyword": [Hit("a", 5), Hit("b", 4)]},
                              p, 10)
    assert c == {"a": {"semantic": 1 / 61, "keyword": 2 / 61}, "b": {"keyword": 2 / 62}}
    assert NEXUSAI.contributions({"keyword": [Hit("b", 4)]}, p, 10) == {"b": {"keyword": 2 / 61}}
    assert NEXUSAI.contributions({"semantic": [Hit("a", 0.9)]}, p, 10) == {"a": {"semantic": 1 / 61}}
