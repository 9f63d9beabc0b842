"""Zeus: weight / (rank + 60) with 0-based ranks, top_k x 3 candidates, vector-only fallback."""

import pytest

from rrfbench.core.errors import InputError
from rrfbench.systems.presets import get_preset

ZEUS = get_preset("zeus")
P = {"vector_weight": 0.6, "keyword_weight": 0.4, "top_k": 5}


def test_zero_based_rank_depth_and_fallback():
    lists = {"vector": ["a", "b"], "keyword": ["b", "c"]}
    out = dict(ZEUS.fuse_query(lists, P, 5))
    assert out["a"] == pytest.approx(0.6 / 60)  # rank 0 -> weight / (0 + 60)
    assert out["b"] == pytest.approx(0.6 / 61 + 0.4 / 60)
    assert out["c"] == pytest.approx(0.4 / 61)
    assert ZEUS.depth("vector", P, 5) == 15 and ZEUS.depth("keyword", P | {"top_k": 10}, 10) == 30
    fb = ZEUS.fuse_query(lists, P | {"bm25_available": False}, 5)
    assert [d for d, _ in fb] == ["a", "b"]  # vector-only mode


def test_ties_vector_results_first_not_docid():
    # equal weights: z (vector rank 0) and a (keyword rank 0) tie; the vector path is merged
    # first, so a stable sort keeps z first although "a" < "z"
    out = ZEUS.fuse_query({"vector": ["z"], "keyword": ["a"]},
                          P | {"vector_weight": 0.5, "keyword_weight": 0.5}, 5)
    assert [d for d, _ in out] == ["z", "a"]


def test_top_k_is_whole_number():
    with pytest.raises(InputError, match="whole number"):
        ZEUS.parse_settings(["top_k=2.5"])
    with pytest.raises(InputError, match="'abc' is not a whole number"):
        ZEUS.parse_settings(["top_k=abc"])


def test_limit_is_top_k_and_a_separate_limit_is_refused():
    assert ZEUS.limit_for(P, None) == 5 and ZEUS.limit_for(P, 5) == 5
    with pytest.raises(InputError, match="Zeus's result limit is top_k"):
        ZEUS.limit_for(P, 10)


def test_score_threshold_filters_vector_matches():
    from rrfbench.systems.presets.base import Hit

    hits = [Hit("a", 0.9), Hit("b", 0.3)]
    assert ZEUS.filter_hits("vector", hits, P | {"score_threshold": 0.5}) == [Hit("a", 0.9)]
    assert ZEUS.filter_hits("keyword", hits, P | {"score_threshold": 0.5}) == hits
    assert ZEUS.filter_hits("vector", hits, P | {"score_threshold": None}) == hits


def test_multi_knowledge_base_fuses_per_base_then_merges():
    from rrfbench.core.runs import Run

    # base 0 holds a, b; base 1 holds c, d; each base has its own vector and BM25 lists
    b0 = {"vector": Run.from_dict({"q": {"a": 0.9, "b": 0.5}}, "dense"),
          "keyword": Run.from_dict({"q": {"b": 4.0}}, "bm25")}
    b1 = {"vector": Run.from_dict({"q": {"c": 0.95, "d": 0.1}}, "dense"),
          "keyword": Run.from_dict({"q": {"d": 9.0, "c": 1.0}}, "bm25")}
    p = P | {"top_k": 3}
    out = ZEUS.run_bases([b0, b1], p)
    want = {"a": 0.6 / 60, "b": 0.6 / 61 + 0.4 / 60, "c": 0.6 / 60 + 0.4 / 61,
            "d": 0.6 / 61 + 0.4 / 60}
    top3 = sorted(want, key=lambda d: -want[d])[:3]
    assert out.df.docid.tolist() == top3
    # per-base fusion differs from one fused list over both bases' streams merged
    assert len(out) == 3


def test_multi_knowledge_base_on_a_partitioned_corpus(tiny_beir, results_root):
    from rrfbench import load_dataset
    from rrfbench.core.runs import Run
    from rrfbench.workflows.dataset import retrieve as real

    ds = load_dataset(str(tiny_beir))
    vec = Run.from_dict({"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.1, "d4": 0.05},
                         "q2": {"d3": 0.9, "d1": 0.2}}, "dense")

    def retrieve(d, spec, split):
        return vec if spec == "dense" else real(d, spec, split)

    bases = ZEUS.knowledge_bases(ds, "test", 2, retrieve, seed=1)
    assert len(bases) == 2
    docs = [set(b["vector"].df.docid) for b in bases]
    assert not (docs[0] & docs[1])  # a document lives in one base
    kw = [set(b["keyword"].df.docid) for b in bases]
    assert all(k <= d for k, d in zip(kw, docs, strict=True))  # each base's own index
    merged = ZEUS.run_bases(bases, P | {"top_k": 3})
    single = ZEUS.run({"vector": vec, "keyword": real(ds, "rank_bm25:jieba", "test")},
                      P | {"top_k": 3})
    assert set(merged.qids) == set(single.qids)
    # per-base BM25 statistics differ from one index over the whole corpus
    assert len(merged) <= 2 * 3


# --------------------------------------------------------------------------- found by mutmut
def test_valid_limit_threshold_and_contributions_by_stream():
    from rrfbench.core.errors import InputError
    from rrfbench.systems.presets.base import Hit

    assert not ZEUS.valid(P | {"vector_weight": 0.0, "keyword_weight": 0.0})
    assert ZEUS.valid(P | {"vector_weight": 0.5, "keyword_weight": 0.0})
    assert ZEUS.valid(P | {"vector_weight": 0.0, "keyword_weight": 0.5})
    with pytest.raises(InputError) as err:
        ZEUS.limit_for(P, 7)
    assert str(err.value) == ("--limit: Zeus's result limit is top_k (5); a separate limit is a "
                              "configuration Zeus cannot have: use --set top_k=N")
    hits = [Hit("a", 0.5), Hit("b", 0.3), Hit("c", 0.2)]
    assert [h.docid for h in ZEUS.filter_hits("vector", hits, P | {"score_threshold": 0.3})] == \
        ["a", "b"]  # a score equal to the threshold stays
    assert ZEUS.filter_hits("keyword", hits, P | {"score_threshold": 0.3}) == hits
    lists = {"vector": [Hit("a", 0.9), Hit("b", 0.8)], "keyword": [Hit("b", 3.0), Hit("c", 2.0)]}
    assert ZEUS.contributions(lists, P, 5) == {
        "a": {"vector": 0.6 / 60}, "b": {"vector": 0.6 / 61, "keyword": 0.4 / 60},
        "c": {"keyword": 0.4 / 61}}
    # vector-only mode (no rerank, no BM25, or no keyword stream): the vector order, 1 / (i + 1)
    only = {"a": {"vector": 1.0}, "b": {"vector": 0.5}}
    assert ZEUS.contributions(lists, P | {"use_rerank": False}, 5) == only
    assert ZEUS.contributions(lists, P | {"bm25_available": False}, 5) == only
    assert ZEUS.contributions({"vector": lists["vector"]}, P, 5) == only
    assert ZEUS.contributions({"keyword": lists["keyword"]}, P | {"use_rerank": False}, 5) == {}


def test_without_rank_bm25_or_jieba_zeus_has_no_keyword_stream(monkeypatch):
    import sys

    from rrfbench.systems.presets.zeus import bm25_available

    assert bm25_available() and "keyword" in ZEUS.roles_available()
    monkeypatch.setitem(sys.modules, "rank_bm25", None)  # import fails
    assert not bm25_available()
    assert ZEUS.roles_available() == {"vector": ZEUS.streams["vector"]}


def test_knowledge_bases_partition_by_seed_and_ask_for_the_right_runs(tiny_beir, results_root):
    from rrfbench import load_dataset
    from rrfbench.core.errors import InputError
    from rrfbench.core.runs import Run

    ds = load_dataset(str(tiny_beir))
    vec = Run.from_dict({"q1": {"d1": 0.9, "d2": 0.8, "d3": 0.1, "d4": 0.05}}, "dense")
    vec = vec.with_meta(score_floor=-1.0)
    asked = []

    def retrieve(d, spec, split):
        asked.append((d.name, spec, split))
        if spec == "dense":
            return vec
        return Run.from_dict({"q1": {x: 1.0 for x in d.corpus.docid}}, "kw")

    one = ZEUS.knowledge_bases(ds, "test", 1, retrieve)
    assert set(one[0]["vector"].df.docid) == {"d1", "d2", "d3", "d4"}
    assert one[0]["vector"].name == "dense" and one[0]["vector"].score_floor == -1.0
    assert asked[0] == (ds.name, "dense", "test") and asked[1][1:] == ("rank_bm25:jieba", "test")
    seeded = ZEUS.knowledge_bases(ds, "test", 3, retrieve)
    again = ZEUS.knowledge_bases(ds, "test", 3, retrieve, seed=0)
    split = [set(b["vector"].df.docid) for b in seeded]
    assert split == [set(b["vector"].df.docid) for b in again]  # the default seed is 0
    assert set().union(*split) == {"d1", "d2", "d3", "d4"} and sum(map(len, split)) == 4
    assert [set(b["keyword"].df.docid) for b in seeded] == split  # each base's own corpus
    with pytest.raises(InputError) as err:
        ZEUS.knowledge_bases(ds, "test", 0, retrieve)
    assert str(err.value) == "--bases: 0 must be >= 1"
    merged = ZEUS.run_bases(seeded, P | {"top_k": 2})
    assert merged.name == "preset:zeus:3-bases" and len(merged) == 2
    assert ZEUS.run_bases(seeded, P, name="mine").name == "mine"
