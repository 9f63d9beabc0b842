"""Query features against values computed by hand on two tiny runs."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from rrfbench.adaptive.features import (
    corpus_stats,
    feature_names,
    query_features,
    rbo_suffixes,
    tokens,
)
from rrfbench.core.errors import InputError
from rrfbench.core.runs import Run


def _run(name, rows):
    return Run(pd.DataFrame(rows, columns=["qid", "docid", "score"]), name)


A = _run("a", [("q1", "d1", 4.0), ("q1", "d2", 2.0), ("q1", "d3", 1.0), ("q2", "d9", -2.0)])
B = _run("b", [("q1", "d3", 0.9), ("q1", "d1", 0.5), ("q1", "d7", 0.1)])
Q = {"q1": "What is Fusion, really?", "q2": "", "q3": "nothing retrieved"}


def test_names_follow_run_order_and_sets():
    names = feature_names(["a", "b"])
    assert names[:2] == ["q.len", "a.n"] and "a~b.rbo" in names and "b~a.rbo" not in names
    assert {"a.top1_in.b", "b.top1_in.a"} <= set(names)
    assert feature_names(["a", "b"], "all")[-4:] == ["q.idf_mean", "q.idf_max", "q.idf_min", "q.oov"]
    with pytest.raises(InputError, match="--features"):
        feature_names(["a"], "most")


def test_hand_computed_values():
    X = query_features([A, B], Q, ["q1", "q2", "q3"], depth=100, p=0.9)
    q1, q2, q3 = X.loc["q1"], X.loc["q2"], X.loc["q3"]
    assert tokens(Q["q1"]) == ["what", "is", "fusion", "really"] and q1["q.len"] == 4
    assert q1["a.n"] == 0.03 and q1["a.top1"] == 4.0
    assert q1["a.gap10"] == pytest.approx((4 - 1) / (4 + 1e-9))
    assert q1["a.sd10"] == pytest.approx(np.std([4, 2, 1]) / 4)
    assert q2["a.top1"] == -2.0 and q2["a.gap10"] == 0.0 and q2["a.sd10"] == 0.0
    assert q3["a.n"] == 0 and q3["a.top1"] == 0 and q3["b.top1"] == 0
    # overlaps: d1 and d3 in both top 10s
    assert q1["a~b.ov10"] == 0.2 and q1["a~b.ov100"] == 0.02
    # RBO: d1 at ranks 1/2 -> from depth 2, d3 at 3/1 -> from depth 3
    s = sum(0.9 ** (d - 1) / d for d in range(2, 101)) + sum(0.9 ** (d - 1) / d for d in range(3, 101))
    assert q1["a~b.rbo"] == pytest.approx(0.1 * s, abs=1e-12)
    # Spearman on the shared d1, d3: a orders d1 < d3, b orders d3 < d1 -> rho = -1
    assert q1["a~b.rho"] == -1.0 and q2["a~b.rho"] == 0.0
    assert q1["a.top1_in.b"] == 1.0 and q1["b.top1_in.a"] == 1.0 and q2["a.top1_in.b"] == 0.0


def test_suffix_table_and_corpus_features():
    s = rbo_suffixes(3, 0.5)
    assert s.tolist() == pytest.approx([1 + 0.5 / 2 + 0.25 / 3, 0.5 / 2 + 0.25 / 3, 0.25 / 3])
    corpus = pd.DataFrame({"docid": ["1", "2", "3"], "title": ["fusion", "", None],
                           "text": ["rank fusion", "rank", "other words"]})
    st = corpus_stats(corpus)
    assert st["N"] == 3 and st["df"]["fusion"] == 1 and st["df"]["rank"] == 2
    X = query_features([A, B], Q, ["q1"], features="all", stats=st)
    idf = math.log1p((3 - 1 + 0.5) / (1 + 0.5))           # "fusion"; "what", "is", "really" unseen
    assert X.loc["q1", "q.idf_mean"] == pytest.approx(idf) == X.loc["q1", "q.idf_max"]
    assert X.loc["q1", "q.oov"] == 0.75
    with pytest.raises(InputError, match="corpus"):
        query_features([A, B], Q, ["q1"], features="all")
    with pytest.raises(InputError, match="no text"):
        query_features([A, B], {"q1": "x"}, ["q1", "q2"])


def test_bm25_top1_over_its_theoretical_bound(tmp_path):
    """The bound is sum_t idf(t) (Lucene's tf component tends to 1): every BM25 score lies
    below it, a document repeating the query's rare term comes close, and it is a corpus
    feature of BM25 runs only (named by their manifests)."""
    from rrfbench.data.datasets import Dataset
    from rrfbench.retrievers.bm25 import BM25Retriever

    docs = ["fusion " * 200 + "rank", "rank fusion of lists", "dense vectors", "lists of lists",
            "sparse words only", "other text here"]
    texts = {"q1": "fusion", "q2": "rank fusion fusion", "q3": "zebra"}
    d = tmp_path / "toy"
    (d / "qrels").mkdir(parents=True)
    (d / "corpus.jsonl").write_text("".join(json.dumps({"_id": f"d{i}", "title": "", "text": t}) + "\n"
                                            for i, t in enumerate(docs)))
    (d / "queries.jsonl").write_text("".join(json.dumps({"_id": q, "text": t}) + "\n"
                                             for q, t in texts.items()))
    (d / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td0\t1\n")
    ds = Dataset("toy", path=d)
    corpus, queries = ds.corpus, ds.queries
    ret = BM25Retriever()
    run = ret.retrieve(ds, queries, 10).with_meta(retriever="bm25", params=ret.params())
    dense = _run("dense", [("q1", "d2", 0.7)])
    X = query_features([run, dense], dict(zip(queries.qid, queries.text, strict=True)), ["q1", "q2", "q3"],
                       "all", corpus_stats(corpus))
    assert list(X.columns)[-1] == "bm25.top1_bound" and "dense.top1_bound" not in X.columns
    idf = ret.idf_table(ds.doc_texts())
    n, df = len(docs), 2
    assert idf["fusion"] == pytest.approx(math.log(1 + (n - df + 0.5) / (df + 0.5)))
    b = X["bm25.top1_bound"]
    assert 0.9 < b["q1"] < 1.0          # tf = 200 in a long document: close to the bound
    bound_q2 = ret.score_bounds(idf, ["rank fusion fusion"])[0]
    assert bound_q2 == pytest.approx(idf["rank"] + 2 * idf["fusion"])  # repeats count, as in bm25s
    assert run.df.score.max() <= bound_q2 + 1e-6 and 0 < b["q2"] < 1
    assert b["q3"] == 0.0               # no corpus token: no bound, no score
    # without the manifest the run is not known to be BM25: no bound column
    bare = Run(run.df, "bm25")
    assert "bm25.top1_bound" not in query_features([bare], {"q1": "fusion"}, ["q1"], "all",
                                                   corpus_stats(corpus)).columns
