"""BM25 on bm25s + PyStemmer (Lucene's BM25 by default: k1=1.2, b=0.75).

Document text is ``title + " " + text``. Tokenizers (the spec's variant): ``en`` (default:
bm25s's lowercased words, minus English stopwords, Snowball-stemmed) and ``jieba`` (Chinese word
segmentation with jieba; every token with a letter or digit kept, lowercased, no stopwords, no
stemming: what a Chinese collection needs, where ``en`` sees whole sentences as one token). bm25s precomputes every document's term scores into a sparse
matrix, so retrieval is a sparse sum and a top-k.

Only matched documents enter a run: bm25s's ``retrieve(k)`` pads a query's list with
zero-score documents that share no term with it (in no defined order) when fewer than k
match, and those would corrupt recall and any fusion. Lucene's idf is positive, so a matched
document always scores > 0 and the padding is exactly the zero-score tail.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import Stemmer

from ..core.errors import choice
from ..core.runs import Run, docid_keys, top_k
from .base import lib_versions
from .rank_bm25 import jieba_lcut


def _bm25s():
    """bm25s, imported when first needed (it costs ~0.8 s) and quiet: it sets its own logger to
    DEBUG, so its 'Building index from IDs objects' lines would reach whatever handler the root
    logger has (one appears as soon as any library calls ``logging.warning``)."""
    import bm25s

    logging.getLogger("bm25s").setLevel(logging.WARNING)
    return bm25s

BM25_METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")
BM25S_DELTA = 0.5  # bm25s's delta of BM25L and BM25+ (BM25Retriever leaves it at its default)
# sup over tf of each method's term-frequency component (bm25s.scoring's formulas): Lucene's and
# Robertson's tf / (tf + k1 (1 - b + b dl/avgdl)) tend to 1; ATIRE's and BM25L's carry k1 + 1;
# BM25+ adds delta
TF_LIMIT = {"lucene": lambda k1: 1.0, "robertson": lambda k1: 1.0, "atire": lambda k1: k1 + 1.0,
            "bm25l": lambda k1: k1 + 1.0, "bm25+": lambda k1: k1 + 1.0 + BM25S_DELTA}
QUERY_BATCH = 1000
SCORE_CELLS = 1 << 25  # query x document scores held at once (128 MB of float32)


def _stemmer(language: str | None):
    if not language:
        return None
    return Stemmer.Stemmer(language)


def jieba_segment(texts: list[str]) -> list[str]:
    """Each text as jieba tokens (with a letter or digit) joined by spaces, lowercased."""
    return [" ".join(t for t in jieba_lcut(x.lower()) if any(c.isalnum() for c in t))
            for x in texts]


class BM25Retriever:
    score_floor = 0.0  # Lucene idf is positive: a matched document scores > 0

    def __init__(self, k1: float = 1.2, b: float = 0.75, method: str = "lucene",
                 stopwords: str | None = "en", stemmer: str | None = "english",
                 tokenizer: str = "en"):
        if method not in BM25_METHODS:
            raise choice("bm25 method", method, BM25_METHODS)
        if tokenizer not in ("en", "jieba"):
            raise choice("bm25 tokenizer", tokenizer, ("en", "jieba"))
        self.k1, self.b, self.method = float(k1), float(b), method
        self.tokenizer = tokenizer
        if tokenizer == "jieba":
            stopwords, stemmer = None, None
        self.stopwords, self.stemmer = stopwords, stemmer
        self.name = "bm25" if tokenizer == "en" else f"bm25-{tokenizer}"
        self._index = None  # (fingerprint, bm25s.BM25, docids)

    def params(self) -> dict:
        out = {"k1": self.k1, "b": self.b, "method": self.method, "stopwords": self.stopwords,
               "stemmer": self.stemmer, "text": "title + ' ' + text"}
        if self.tokenizer != "en":
            out["tokenizer"] = self.tokenizer
        return out

    def versions(self) -> dict:
        out = lib_versions("bm25s", "PyStemmer")
        if self.tokenizer == "jieba":
            out.update(lib_versions("jieba"))
        return out

    @classmethod
    def from_params(cls, params: dict) -> BM25Retriever:
        """The retriever a run's manifest ``params`` describe."""
        keys = ("k1", "b", "method", "stopwords", "stemmer", "tokenizer")
        return cls(**{k: params[k] for k in keys if k in params})

    def idf_table(self, doc_texts: list[str]) -> dict[str, float]:
        """Each corpus token's idf as bm25s computes it: the method's formula
        (``bm25s.scoring``) of the token's document frequency over ``doc_texts`` tokenised as
        the index tokenises them."""
        from bm25s.scoring import _select_idf_scorer

        df: dict[str, int] = {}
        for doc in self.tokenize(doc_texts):
            for t in set(doc):
                df[t] = df.get(t, 0) + 1
        idf = _select_idf_scorer(self.method)
        return {t: float(idf(n, N=len(doc_texts))) for t, n in df.items()}

    def score_bounds(self, idf: dict[str, float], query_texts: list[str]) -> np.ndarray:
        """Per query, the largest score any document could get (the theoretical bound of its
        top-1): the sum over the query's tokens of ``idf(t) * sup_tf tfc``, with tokens
        tokenised as :meth:`retrieve` does, repeats counted (bm25s scores a repeated token
        twice) and tokens not in the corpus dropped; ``sup_tf tfc`` is :data:`TF_LIMIT`."""
        limit = TF_LIMIT[self.method](self.k1)
        return np.array([limit * sum(idf.get(t, 0.0) for t in toks)
                         for toks in self.tokenize(list(query_texts))], dtype=np.float64)

    def tokenize(self, texts: list[str]) -> list[list[str]]:
        bm25s = _bm25s()

        if self.tokenizer == "jieba":
            return bm25s.tokenize(jieba_segment(texts), stopwords=None, stemmer=None,
                                  token_pattern=r"(?u)\S+", return_ids=False,
                                  show_progress=False)
        return bm25s.tokenize(texts, stopwords=self.stopwords, stemmer=_stemmer(self.stemmer),
                              return_ids=False, show_progress=False)

    def index(self, dataset):
        """Build (or reuse, for the same dataset content) the bm25s index."""
        bm25s = _bm25s()

        if self._index is not None and self._index[0] == dataset.fingerprint:
            return self._index[1], self._index[2]
        model = bm25s.BM25(method=self.method, k1=self.k1, b=self.b)
        texts = dataset.doc_texts()
        if self.tokenizer == "jieba":
            corpus = bm25s.tokenize(jieba_segment(texts), stopwords=None, stemmer=None,
                                    token_pattern=r"(?u)\S+", show_progress=False)
        else:
            corpus = bm25s.tokenize(texts, stopwords=self.stopwords,
                                    stemmer=_stemmer(self.stemmer), show_progress=False)
        model.index(corpus, show_progress=False)
        docids = np.asarray(dataset.corpus.docid, dtype=object)
        self._index = (dataset.fingerprint, model, docids)
        return model, docids

    def retrieve(self, dataset, queries: pd.DataFrame, depth: int) -> Run:
        """Each query's ``depth`` best documents by the rank rule. bm25s scores every document
        (``get_scores``, its own numpy path); the cut is :func:`rrfbench.core.runs.top_k`, not
        bm25s's ``argpartition``, whose choice among documents tied at the cut differs between
        AVX2 and AVX-512 CPUs."""
        model, docids = self.index(dataset)
        k = min(depth, len(docids))
        keys = docid_keys(docids)
        qtoks = self.tokenize(list(queries.text))
        vocab = model.vocab_dict
        qtoks = [[t for t in toks if t in vocab] for toks in qtoks]
        nonempty = [i for i, t in enumerate(qtoks) if t]
        qids = np.asarray(queries.qid, dtype=object)
        if not nonempty or k == 0:
            return Run(pd.DataFrame(columns=["qid", "docid", "score"]), self.name)
        batch_rows = max(1, min(QUERY_BATCH, SCORE_CELLS // len(docids)))  # bounded memory
        parts_i, parts_s = [], []
        for a in range(0, len(nonempty), batch_rows):
            S = np.stack([model.get_scores(qtoks[i]) for i in nonempty[a:a + batch_rows]])
            idx = top_k(S, k, keys)
            parts_i.append(idx)
            parts_s.append(np.take_along_axis(S, idx, 1))
        idx, scores = np.concatenate(parts_i), np.concatenate(parts_s)
        q_index = np.repeat(np.asarray(nonempty, dtype=np.int64), k)
        flat_idx, flat_s = idx.ravel(), scores.ravel().astype(np.float64)
        keep = flat_s > 0  # documents that match no query term score 0: not retrieved
        return Run.from_indexed(qids, q_index[keep], docids, flat_idx[keep], flat_s[keep],
                                self.name)
