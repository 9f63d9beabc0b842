"""titan's fuseByRRF, minScore and dropoff, reproduced on hand-made lists."""

import pytest

from rrfbench.systems.presets import get_preset
from rrfbench.systems.presets.titan import dropoff_cut

TITAN = get_preset("titan")
P = {"k": 60, "vector_weight": 1.0, "fts_weight": 1.0, "minScore": None, "dropoff": None,
     "overfetch": 3, "minSimilarity": None, "retriever_order": ("fts", "vector", "graph")}


def test_dropoff_and_minscore():
    assert dropoff_cut([1.0, 0.9, 0.3, 0.25], 0.5) == 2  # largest drop 0.9 -> 0.3 (67%)
    assert dropoff_cut([1.0, 0.9, 0.3, 0.25], None) == 4  # off
    assert dropoff_cut([1.0, 0.9, 0.3, 0.25], 0.7) == 4  # largest drop below threshold
    assert dropoff_cut([1.0, 0.01], 0.5) == 1  # the first result always stays
    lists = {"fts": ["a", "b", "c"], "vector": ["a", "d"]}
    full = TITAN.fuse_query(lists, P, 10)
    assert [d for d, _ in full] == ["a", "b", "d", "c"]
    trimmed = TITAN.fuse_query(lists, P | {"minScore": 1 / 62.5}, 10)
    assert [d for d, _ in trimmed] == ["a", "b", "d"]
    cut = TITAN.fuse_query(lists, P | {"dropoff": 0.4}, 10)
    assert [d for d, _ in cut] == ["a"]  # 2/61 -> 1/62 is a ~49% drop
    assert TITAN.depth("vector", {}, 10) == 30


def test_ties_first_seen_over_retriever_order_not_docid():
    # z (fts rank 1) and a (vector rank 1) tie at 1/61; fts comes first in titan's list, so z
    # is seen first and stays first although "a" < "z"
    out = TITAN.fuse_query({"fts": ["z"], "vector": ["a"]}, P, 10)
    assert [d for d, _ in out] == ["z", "a"]
    out = TITAN.fuse_query({"fts": ["b", "z"], "vector": ["y", "a"]}, P, 10)
    assert [d for d, _ in out] == ["b", "y", "z", "a"]


def test_weights_and_k():
    out = dict(TITAN.fuse_query({"fts": ["a"], "vector": ["a", "b"]},
                                P | {"k": 10, "vector_weight": 0.7, "fts_weight": 0.3}, 10))
    assert out["a"] == pytest.approx(0.3 / 11 + 0.7 / 11)
    assert out["b"] == pytest.approx(0.7 / 12)


def test_dropoff_zero_is_not_off():
    """titan applies dropoff whenever it is set: 0 still cuts at the largest drop."""
    scores = [1.0, 0.95, 0.5, 0.45]
    assert dropoff_cut(scores, None) == 4
    assert dropoff_cut(scores, 0.0) == 2
    assert dropoff_cut([0.5, 0.5, 0.5], 0.0) == 3  # no positive drop: nothing is cut
    lists = {"fts": ["a", "b", "c"], "vector": ["a", "d"]}
    assert len(TITAN.fuse_query(lists, P | {"dropoff": 0.0}, 10)) == 1
    assert len(TITAN.fuse_query(lists, P, 10)) == 4
    assert len(TITAN.fuse_query(lists, P | {"minScore": 0.0}, 10)) == 4  # set, keeps all >= 0


def test_retriever_order_is_a_setting():
    tie = {"fts": ["z"], "vector": ["a"]}
    assert [d for d, _ in TITAN.fuse_query(tie, P, 10)] == ["z", "a"]
    flipped = P | {"retriever_order": ("vector", "fts", "graph")}
    assert [d for d, _ in TITAN.fuse_query(tie, flipped, 10)] == ["a", "z"]
    import pytest as _p

    from rrfbench.core.errors import InputError

    with _p.raises(InputError, match="retriever_order"):
        TITAN.check(P | {"retriever_order": ("fts", "vector")})


def test_overfetch_min_similarity_and_empty_query():
    from rrfbench.core.runs import Run

    assert TITAN.depth("fts", P, 10) == 30 and TITAN.depth("fts", P | {"overfetch": 5}, 10) == 50
    vec = Run.from_dict({"q": {"a": 0.9, "b": 0.2, "c": 0.1}, "e": {"a": 0.9}}, "dense")
    fts = Run.from_dict({"q": {"b": 3.0}, "e": {"a": 1.0}}, "fts5")
    out = TITAN.run({"vector": vec, "fts": fts}, P | {"minSimilarity": 0.15},
                    queries={"q": "some words", "e": "   "})
    assert set(out.df.qid) == {"q"}  # the whitespace query returns nothing
    q = out.df[out.df.qid == "q"]
    assert set(q.docid) == {"a", "b"}  # c (similarity 0.1) dropped by minSimilarity
    assert q.score.max() == pytest.approx(1 / 61 + 1 / 62)  # b: fts rank 1, vector rank 2


# --------------------------------------------------------------------------- found by mutmut
def test_dropoff_boundaries_equal_drop_cuts_and_zero_scores_are_skipped():
    assert dropoff_cut([1.0, 0.5, 0.45], 0.5) == 1     # a drop of exactly the threshold cuts
    assert dropoff_cut([1.0, 0.9, 0.0, 0.0], 0.5) == 2  # 0.9 -> 0 is 100%; 0 -> 0 is skipped
    assert dropoff_cut([0.5], 0.1) == 1


def test_valid_needs_one_positive_weight():
    assert not TITAN.valid(P | {"vector_weight": 0.0, "fts_weight": 0.0})
    assert TITAN.valid(P | {"vector_weight": 0.5, "fts_weight": 0.0})
    assert TITAN.valid(P | {"vector_weight": 0.0, "fts_weight": 0.5})


def test_min_similarity_filters_the_vector_stream_only_and_keeps_equals():
    from rrfbench.systems.presets.base import Hit

    hits = [Hit("a", 0.5), Hit("b", 0.3), Hit("c", 0.2)]
    assert [h.docid for h in TITAN.filter_hits("vector", hits, P | {"minSimilarity": 0.3})] == \
        ["a", "b"]
    assert TITAN.filter_hits("fts", hits, P | {"minSimilarity": 0.3}) == hits
    assert TITAN.filter_hits("vector", hits, P) == hits


def test_retriever_order_is_checked_with_a_message_and_graph_has_weight_one():
    from rrfbench.core.errors import InputError

    with pytest.raises(InputError) as err:
        TITAN.check(P | {"retriever_order": ("fts", "vector")})
    assert str(err.value) == ("retriever_order: ('fts', 'vector') must order fts, vector, graph")
    c = TITAN.contributions({"graph": [TITAN_HIT("g")], "fts": [TITAN_HIT("a")]}, P, 10)
    assert c == {"a": {"fts": 1 / 61}, "g": {"graph": 1 / 61}}
    c = TITAN.contributions({"graph": [TITAN_HIT("g")]}, P | {"graph_weight": 2.0}, 10)
    assert c == {"g": {"graph": 2 / 61}}


def TITAN_HIT(docid):
    from rrfbench.systems.presets.base import Hit

    return Hit(docid, 1.0)


def test_every_cut_is_named_in_explain_and_equal_scores_survive_min_score():
    lists = {"fts": [TITAN_HIT(d) for d in "abc"], "vector": [TITAN_HIT(d) for d in "ad"]}
    # a 2/61, b 1/62, d 1/62, c 1/63
    rows = TITAN.explain_query(lists, P | {"minScore": 1 / 63 + 1e-9, "dropoff": 0.4}, 10)
    assert {r["docid"]: r["stage"] for r in rows} == {
        "a": "kept", "b": "cut: dropoff", "d": "cut: dropoff", "c": "cut: minScore"}
    kept = TITAN.fuse_query(lists, P | {"minScore": 1 / 63}, 10)
    assert [d for d, _ in kept] == ["a", "b", "d", "c"]  # a score equal to minScore stays
    rows = TITAN.explain_query(lists, P, 2)
    assert [r["stage"] for r in rows] == ["kept", "kept", "cut: limit", "cut: limit"]
