import numpy as np
import pytest

from rrfbench.retrievers import cached_run, make_retriever
from rrfbench.retrievers.bm25 import BM25Retriever
from tests.conftest import needs_cranfield, needs_scifact


def test_tiny_matched_only(tiny_beir):
    from rrfbench import load_dataset

    ds = load_dataset(str(tiny_beir))
    run = BM25Retriever().retrieve(ds, ds.split_queries("test"), 1000)
    q1 = run.df[run.df.qid == "q1"]
    assert q1.docid.tolist()[0] == "d1"
    assert set(q1.docid) == {"d1", "d2"}  # d3, d4 share no term with "green apples"
    assert (run.df.score > 0).all()


@needs_cranfield
def test_cranfield_no_zero_score_padding(cranfield, run_of):
    run = run_of(cranfield, "bm25")
    assert (run.df.score > 0).all()
    per_q = run.df.groupby("qid").size()
    assert (per_q < 1000).sum() > 50  # many queries match fewer than 1000 docs


@needs_cranfield
def test_cache_reuse_and_force(cranfield):
    r = make_retriever("bm25")
    first = cached_run(r, cranfield, "test", 100)
    second = cached_run(r, cranfield, "test", 100)
    assert second.cached and second.run.equals(first.run)
    assert not cached_run(r, cranfield, "test", 100, force=True).cached
    other = cached_run(make_retriever("bm25", k1=0.9), cranfield, "test", 100)
    assert not other.cached and other.manifest["params"]["k1"] == 0.9


@needs_scifact
def test_scifact_bm25_reference_numbers(scifact, run_of):
    from rrfbench import evaluate

    m = evaluate(run_of(scifact, "bm25"), scifact.qrels("test"), ["nDCG@10", "R@100"])
    assert m["nDCG@10"] >= 0.66 and m["R@100"] >= 0.90


def test_bm25s_scores_match_rank_bm25_style_reference(tiny_beir):
    """Lucene BM25 by hand: idf = ln(1 + (N - df + .5)/(df + .5)), tf part tf/(tf + k1(1 - b + b dl/avgdl))."""
    from rrfbench import load_dataset

    ds = load_dataset(str(tiny_beir))
    run = BM25Retriever().retrieve(ds, ds.split_queries("test"), 10)
    r = BM25Retriever()
    toks = r.tokenize(ds.doc_texts())
    avgdl = np.mean([len(t) for t in toks])
    n = len(toks)
    q = r.tokenize(["red cars"])[0]
    d = toks[2]
    score = 0.0
    for t in q:
        df = sum(t in doc for doc in toks)
        idf = np.log(1 + (n - df + 0.5) / (df + 0.5))
        tf = d.count(t)
        score += idf * tf / (tf + 1.2 * (1 - 0.75 + 0.75 * len(d) / avgdl))  # Lucene >= 8: no (k1 + 1)
    got = run.df[(run.df.qid == "q2") & (run.df.docid == "d3")].score.item()
    assert got == pytest.approx(score, rel=1e-5)


def _tied_corpus(root, n_docs=3000, seed=0):
    """A BEIR folder whose documents are two words of six: hundreds score exactly alike."""
    import json

    rng = np.random.default_rng(seed)
    words = ["apple", "pear", "plum", "fig", "lime", "kiwi"]
    d = root / "tied"
    (d / "qrels").mkdir(parents=True)
    ids = [f"d{i}" for i in rng.permutation(n_docs)]  # string order != corpus order
    with open(d / "corpus.jsonl", "w") as fh:
        for i in ids:
            fh.write(json.dumps({"_id": i, "title": "", "text": " ".join(rng.choice(words, 2))}) + "\n")
    with open(d / "queries.jsonl", "w") as fh:
        for q in range(12):
            fh.write(json.dumps({"_id": f"q{q}", "text": " ".join(rng.choice(words, 1 + q % 2))}) + "\n")
    (d / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
        f"q{q}\t{ids[q]}\t1\n" for q in range(12)))
    return d


def test_ties_at_the_depth_cut_keep_the_lowest_docids(tmp_path):
    """The run holds each query's best documents by the rank rule, the cut included: of the
    documents tied at the last kept score, those first in docid string order."""
    from rrfbench import load_dataset

    ds = load_dataset(str(_tied_corpus(tmp_path)))
    r = BM25Retriever()
    run = r.retrieve(ds, ds.split_queries("test"), 100)
    model, docids = r.index(ds)
    for qid, text in zip(ds.split_queries("test").qid, ds.split_queries("test").text, strict=True):
        s = model.get_scores(r.tokenize([text])[0]).astype(np.float64)
        ok = np.flatnonzero(s > 0)
        want = ok[np.lexsort((docids[ok].astype(str), -s[ok]))][:100]
        got = run.df[run.df.qid == qid]
        assert got.docid.tolist() == docids[want].tolist(), qid
        assert (s[want] == s[want][-1]).sum() > 1 and (s == s[want][-1]).sum() > 100 - (s > s[want][-1]).sum()  # a real tie at the cut


def test_bm25_run_is_the_same_at_every_simd_level(tmp_path):
    """The whole BM25 path (bm25s scores, the cut, the run) in fresh processes running NumPy as
    CPUs with fewer vector units do: one content digest. With bm25s's own top-k the digest
    differed between the AVX-512 and AVX2 levels (scifact's committed runs did too)."""
    from tests.conftest import at_every_simd_level

    code = """
import sys
from rrfbench import load_dataset
from rrfbench.retrievers.bm25 import BM25Retriever
from rrfbench.core.runs import content_digest
ds = load_dataset(sys.argv[1])
print(content_digest(BM25Retriever().retrieve(ds, ds.split_queries("test"), 100)))
"""
    out = at_every_simd_level(code, str(_tied_corpus(tmp_path)))
    assert len(set(out.values())) == 1, out
