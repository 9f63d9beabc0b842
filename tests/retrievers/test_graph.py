"""Graph walks: hops, relations, direction, seeds excluded, rank by hop then discovery."""

import pandas as pd

from rrfbench.retrievers import make_retriever
from rrfbench.retrievers.graph import GraphRetriever

EDGES = pd.DataFrame({"src": ["a", "a", "b", "c", "x"], "dst": ["b", "c", "d", "e", "a"],
                      "relation": ["r1", "r2", "r1", "r1", "r1"], "weight": 1.0})


def walker(**kw):
    g = GraphRetriever(**kw, make_seed=make_retriever)
    g.edges = lambda dataset: EDGES  # a hand-made corpus graph
    return g


def test_hops_direction_relations_and_seeds_excluded():
    both = walker(hops=1)
    assert both.walk(both.adjacency(None), ["a"]) == [("b", 1), ("c", 1), ("x", 1)]
    out = walker(hops=1, direction="out")
    assert out.walk(out.adjacency(None), ["a"]) == [("b", 1), ("c", 1)]
    two = walker(hops=2, direction="out")
    assert two.walk(two.adjacency(None), ["a"]) == [("b", 1), ("c", 1), ("d", 2), ("e", 2)]
    rel = walker(hops=2, direction="out", relations=("r1",))
    assert rel.walk(rel.adjacency(None), ["a"]) == [("b", 1), ("d", 2)]
    seeds = walker(hops=1)
    assert [d for d, _ in seeds.walk(seeds.adjacency(None), ["a", "b"])] == ["c", "x", "d"]


def test_real_corpus_graph_seeded_by_bm25(tiny_beir):
    from rrfbench import load_dataset

    ds = load_dataset(str(tiny_beir))
    g = GraphRetriever(seed="bm25", hops=1, graph="bm25", neighbours=2, seed_limit=1,
                       make_seed=make_retriever)
    e = g.edges(ds)
    assert set(e.columns) == {"src", "dst", "relation", "weight"} and (e.src != e.dst).all()
    run = g.retrieve(ds, ds.split_queries("test"), 10)
    from rrfbench.retrievers.bm25 import BM25Retriever

    top = BM25Retriever().retrieve(ds, ds.split_queries("test"), 1).df.set_index("qid").docid
    assert len(run) > 0
    for qid, grp in run.df.groupby("qid"):
        assert top[qid] not in set(grp.docid)  # the seed itself is never returned
        assert set(grp.docid) <= set(e[e.src == top[qid]].dst) | set(e[e.dst == top[qid]].src)
    assert g.name == "graph-bm25-bm25-h1"
