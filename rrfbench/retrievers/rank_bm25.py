"""BM25Okapi from rank-bm25, the keyword side of systems built on it (Zeus uses it with jieba).

rank-bm25 scores every document in Python/NumPy (k1=1.5, b=0.75, epsilon=0.25 by default:
the library's own defaults, which is what a system calling ``BM25Okapi(corpus)`` gets).
Tokenisers:

* ``regex``: lowercased ``\\w+`` runs;
* ``jieba``: ``jieba.lcut(text)`` with whitespace-only tokens dropped and no lowercasing,
  what a ``BM25Okapi([jieba.lcut(doc) ...])`` deployment does to English text.

Only documents sharing at least one token with the query enter the run.
"""

from __future__ import annotations

import logging
import re

import numpy as np
import pandas as pd

from ..core.errors import choice
from ..core.runs import Run
from .base import lib_versions

_WORD = re.compile(r"\w+")


def regex_tokenize(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def jieba_module():
    """jieba, its start-up chatter silenced once (setLogLevel clears logging caches: calling it
    per text made tokenisation many times slower)."""
    import jieba

    if not getattr(jieba, "_rrfbench_quiet", False):
        jieba.setLogLevel(logging.WARNING)
        jieba._rrfbench_quiet = True
    return jieba


class JiebaSegmenter:
    """``jieba.lcut`` (accurate mode, HMM on), remembering each block's words.

    jieba splits a text into blocks (runs of Han characters, letters, digits and ``+#&._%-``)
    and segments each block on its own through its dictionary DAG and HMM, a pure function of
    the block. English text is mostly one block per word, so a corpus repeats the same few
    thousand blocks: remembering their words gives ``jieba.lcut``'s output, token for token
    (checked against it in the tests), 4.9x faster on scifact's corpus
    (``python benchmarks/bench_jieba.py``). The memo hooks jieba's own
    per-block step on a private :class:`jieba.Tokenizer` instance (the module's default one is
    left alone); a jieba without that step is used as it is.
    """

    MAX_BLOCKS = 1 << 20  # then the memo starts over

    def __init__(self):
        jieba = jieba_module()
        self.tokenizer = jieba.Tokenizer()
        self.memo: dict[str, tuple[str, ...]] = {}
        self.memoised = hasattr(self.tokenizer, "_Tokenizer__cut_DAG")
        if self.memoised:
            segment = self.tokenizer._Tokenizer__cut_DAG
            memo = self.memo

            def cut_block(block: str):
                words = memo.get(block)
                if words is None:
                    if len(memo) >= self.MAX_BLOCKS:
                        memo.clear()
                    words = memo[block] = tuple(segment(block))
                return iter(words)

            self.tokenizer._Tokenizer__cut_DAG = cut_block

    def lcut(self, text: str) -> list[str]:
        return self.tokenizer.lcut(text)


_SEGMENTER: JiebaSegmenter | None = None


def jieba_lcut(text: str) -> list[str]:
    """``jieba.lcut(text)``, through one process-wide :class:`JiebaSegmenter`."""
    global _SEGMENTER
    if _SEGMENTER is None:
        _SEGMENTER = JiebaSegmenter()
    return _SEGMENTER.lcut(text)


def jieba_tokenize(text: str) -> list[str]:
    return [t for t in jieba_lcut(text) if t.strip()]


TOKENIZERS = {"regex": regex_tokenize, "jieba": jieba_tokenize}
_INDEXES: dict[tuple, tuple] = {}  # (corpus fingerprint, parameters) -> index, newest last
_KEEP = 2


class RankBM25Retriever:
    score_floor = 0.0  # BM25Okapi floors idf at epsilon x mean idf (> 0)

    def __init__(self, tokenizer: str = "regex", k1: float = 1.5, b: float = 0.75,
                 epsilon: float = 0.25):
        if tokenizer not in TOKENIZERS:
            raise choice("rank_bm25 tokenizer", tokenizer, sorted(TOKENIZERS))
        self.tokenizer, self.k1, self.b, self.epsilon = tokenizer, float(k1), float(b), float(epsilon)
        self.name = "rank_bm25" if tokenizer == "regex" else f"rank_bm25-{tokenizer}"
        self._index = None

    def params(self) -> dict:
        return {"tokenizer": self.tokenizer, "k1": self.k1, "b": self.b, "epsilon": self.epsilon,
                "text": "title + ' ' + text"}

    def versions(self) -> dict:
        out = lib_versions("rank-bm25")
        if self.tokenizer == "jieba":
            out.update(lib_versions("jieba"))
        return out

    def index(self, dataset):
        """BM25Okapi over the tokenised corpus, plus postings (term -> document rows and term
        frequencies) and each document's length-normalisation term. Shared by the retrievers
        of one process with the same parameters and corpus content (:data:`_INDEXES`): jieba
        segments scifact's corpus in ~40 s, and each split's retrieval asked for it again."""
        from rank_bm25 import BM25Okapi

        key = (dataset.fingerprint, self.tokenizer, self.k1, self.b, self.epsilon)
        if self._index is None or self._index[0] != dataset.fingerprint:
            self._index = _INDEXES.get(key)
        if self._index is None:
            tok = TOKENIZERS[self.tokenizer]
            model = BM25Okapi([tok(t) for t in dataset.doc_texts()], k1=self.k1, b=self.b,
                              epsilon=self.epsilon)
            rows: dict[str, list[int]] = {}
            freqs: dict[str, list[int]] = {}
            for i, doc in enumerate(model.doc_freqs):
                for t, f in doc.items():
                    rows.setdefault(t, []).append(i)
                    freqs.setdefault(t, []).append(f)
            postings = {t: (np.asarray(r), np.asarray(freqs[t])) for t, r in rows.items()}
            doc_len = np.array(model.doc_len)
            norm = model.k1 * (1 - model.b + model.b * doc_len / model.avgdl)
            self._index = (dataset.fingerprint, model,
                           np.asarray(dataset.corpus.docid, dtype=object), postings, norm)
            _INDEXES[key] = self._index
            while len(_INDEXES) > _KEEP:
                _INDEXES.pop(next(iter(_INDEXES)))
        return self._index[1:]

    def scores(self, model, postings, norm, terms: list[str]) -> np.ndarray:
        """``BM25Okapi.get_scores(terms)``, bit for bit, touching only the documents that hold
        a term: rank-bm25 adds ``idf * f * (k1 + 1) / (f + norm)`` for every document, which
        is exactly 0.0 where ``f`` is 0, and the same elementwise arithmetic on the others
        gives the same floats (checked against ``get_scores`` in the tests)."""
        score = np.zeros(model.corpus_size)
        for t in terms:  # a repeated query term counts again, as in get_scores
            idx, f = postings[t]
            score[idx] += (model.idf.get(t) or 0) * (f * (model.k1 + 1) / (f + norm[idx]))
        return score

    def retrieve(self, dataset, queries: pd.DataFrame, depth: int) -> Run:
        model, docids, postings, norm = self.index(dataset)
        tok = TOKENIZERS[self.tokenizer]
        frames = []
        for qid, text in zip(queries.qid, queries.text, strict=True):
            qt = [t for t in tok(text) if t in model.idf]
            if not qt:
                continue
            scores = self.scores(model, postings, norm, qt)
            idx = np.unique(np.concatenate([postings[t][0] for t in qt]))
            top = idx[np.lexsort((docids[idx], -scores[idx]))][:depth]
            frames.append(pd.DataFrame({"qid": qid, "docid": docids[top], "score": scores[top]}))
        df = pd.concat(frames) if frames else pd.DataFrame(columns=["qid", "docid", "score"])
        return Run(df, self.name)
