"""rank-bm25's BM25Okapi as Zeus calls it: library defaults, regex or jieba tokens."""

import numpy as np
import pandas as pd
import pytest

from rrfbench.datasets import load_dataset
from rrfbench.errors import InputError
from rrfbench.retrievers.rank_bm25 import RankBM25Retriever, jieba_tokenize, regex_tokenize
from tests.conftest import needs_cranfield


def test_tokenizers():
    assert regex_tokenize("Red CARS, fast!") == ["red", "cars", "fast"]
    assert jieba_tokenize("我爱北京 天安门") == ["我", "爱", "北京", "天安门"]
    assert "Red" in jieba_tokenize("Red cars")  # jieba keeps case, as a Zeus deployment does
    with pytest.raises(InputError, match="tokenizer: 'x' is not one of"):
        RankBM25Retriever(tokenizer="x")


def test_scores_are_bm25okapi_and_only_matched(tiny_beir):
    from rank_bm25 import BM25Okapi

    ds = load_dataset(str(tiny_beir))
    run = RankBM25Retriever().retrieve(ds, pd.DataFrame({"qid": ["q"], "text": ["green apples"]}), 10)
    ref = BM25Okapi([regex_tokenize(t) for t in ds.doc_texts()]).get_scores(["green", "apples"])
    got = dict(zip(run.df.docid, run.df.score, strict=True))
    assert set(got) == {"d1", "d2"}  # documents sharing no token are not in the run
    assert got["d1"] == pytest.approx(ref[0]) and got["d2"] == pytest.approx(ref[1])
    assert np.all(run.df.score.to_numpy() >= RankBM25Retriever.score_floor)


@pytest.mark.parametrize("terms", [["green"], ["green", "apples"], ["apples", "green", "apples"],
                                   ["red", "cars", "fast", "green"]])
def test_postings_scores_equal_get_scores_bit_for_bit(tiny_beir, terms):
    ds = load_dataset(str(tiny_beir))
    r = RankBM25Retriever()
    model, _, postings, norm = r.index(ds)
    terms = [t for t in terms if t in model.idf]
    assert terms
    assert np.array_equal(r.scores(model, postings, norm, terms), model.get_scores(terms))


@needs_cranfield
def test_postings_scores_equal_get_scores_on_real_queries(cranfield):
    r = RankBM25Retriever()
    model, _, postings, norm = r.index(cranfield)
    for text in cranfield.queries.text[:40]:
        qt = [t for t in regex_tokenize(text) if t in model.idf]
        assert np.array_equal(r.scores(model, postings, norm, qt), model.get_scores(qt))


def test_index_shared_by_content_and_parameters(tiny_beir, tmp_path):
    """Retrievers of one process share an index when corpus content and parameters agree; other
    parameters or another corpus build their own."""
    import shutil

    ds = load_dataset(str(tiny_beir))
    a, b = RankBM25Retriever(), RankBM25Retriever()
    assert a.index(ds)[0] is b.index(ds)[0]
    assert RankBM25Retriever(k1=1.2).index(ds)[0] is not a.index(ds)[0]
    other = tmp_path / "other"
    shutil.copytree(tiny_beir, other)
    with open(other / "corpus.jsonl", "a") as fh:
        fh.write('{"_id": "d5", "title": "", "text": "green pears"}\n')
    model = RankBM25Retriever().index(load_dataset(str(other)))[0]
    assert model is not a.index(ds)[0] and model.corpus_size == 5
