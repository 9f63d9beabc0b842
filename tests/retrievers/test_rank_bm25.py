"""rank-bm25's BM25Okapi as Zeus calls it: library defaults, regex or jieba tokens."""

import numpy as np
import pandas as pd
import pytest

from rrfbench.core.errors import InputError
from rrfbench.data.datasets import load_dataset
from rrfbench.retrievers.rank_bm25 import (
    JiebaSegmenter,
    RankBM25Retriever,
    jieba_module,
    jieba_tokenize,
    regex_tokenize,
)
from tests.conftest import needs_cranfield


def test_tokenizers():
    assert regex_tokenize("Red CARS, fast!") == ["red", "cars", "fast"]
    assert jieba_tokenize("我爱北京 天安门") == ["我", "爱", "北京", "天安门"]
    assert "Red" in jieba_tokenize("Red cars")  # jieba keeps case, as a Zeus deployment does
    with pytest.raises(InputError, match="tokenizer: 'x' is not one of"):
        RankBM25Retriever(tokenizer="x")


MIXED = ["我爱北京 天安门", "Red CARS, fast! red cars", "", "   ", "C++ 和 Python3.11 的 BM25Okapi",
         "GPT-4o 与 e-mail 地址 a.b@c.d 50% 的人", "上海是一个大城市。上海是一个大城市。", "x" * 300,
         "Ünïcode naïve café 東京", "北京大学生前来应聘"]


def test_memoised_segmenter_equals_jieba_lcut():
    """Every text, on first sight and again from the memo, gets jieba.lcut's tokens."""
    jieba = jieba_module()
    seg = JiebaSegmenter()
    assert seg.memoised
    for rnd in range(2):
        for text in MIXED:
            assert seg.lcut(text) == jieba.lcut(text), (rnd, text)
    assert "上海是一个大城市" in seg.memo and "cars" in seg.memo


def test_memoised_segmenter_equals_jieba_lcut_on_real_corpora():
    from tests.conftest import _have

    jieba = jieba_module()
    names = [n for n in ("cranfield", "cmrc2018-zh") if _have(n)]
    if not names:
        pytest.skip("needs cranfield or cmrc2018-zh")
    seg = JiebaSegmenter()
    for name in names:
        texts = load_dataset(name).doc_texts()[:300]
        assert [seg.lcut(t) for t in texts] == [jieba.lcut(t) for t in texts], name


def test_memo_starts_over_when_full(monkeypatch):
    seg = JiebaSegmenter()
    monkeypatch.setattr(JiebaSegmenter, "MAX_BLOCKS", 3)
    assert seg.lcut("alpha beta gamma delta") == jieba_module().lcut("alpha beta gamma delta")
    assert len(seg.memo) <= 3


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
