"""A reranking stage over a fused run (titan's ``reranker``), failing open.

A reranker is anything with ``score(query, texts) -> scores`` (higher is more relevant), or
``score_docs(dataset, query, docids)`` when it can use what is cached for the dataset:

* :class:`BiEncoderReranker`: cosine between the query and each candidate with a
  sentence-transformers bi-encoder (the packaged all-MiniLM-L6-v2 by default), using the
  dataset's cached corpus embeddings: real and measurable here;
* :class:`CrossEncoderReranker`: a sentence-transformers ``CrossEncoder`` loaded from a local
  model folder (titan ships ``Xenova/ms-marco-MiniLM-L-6-v2``; no cross-encoder weights can be
  installed from the package registry here, so the tests wire up a small model built locally).

:func:`rerank` reorders each query's top ``top`` candidates by the reranker's scores (fewer than
two candidates are left alone, as titan does). A reranker that raises costs the reordering and
nothing else: that query keeps its fused order and the failure is listed in ``degraded`` (titan's
``RERANK_STAGE``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ...core.runs import Run
from ...fusion.functions import order_to_scores
from ..dense import DEFAULT_BACKEND, DenseRetriever
from ..vectors import exact_cosines

RERANK_STAGE = "rerank"


class BiEncoderReranker:
    """Cosine similarity of query and text embeddings (a dense retriever's encoder)."""

    def __init__(self, model: str = "all-MiniLM-L6-v2", backend: str | None = None):
        backend = backend or DEFAULT_BACKEND
        self.encoder = DenseRetriever(model=model, backend=backend, show_progress=False)
        self.model = f"bi-encoder {model} ({backend})"
        self._corpus = None  # (dataset fingerprint, embeddings, docid -> row)

    def score(self, query: str, texts: list[str]) -> list[float]:
        """Cosines between the query and the texts, encoded together."""
        q = self.encoder.encode([query], "query")
        d = self.encoder.encode(list(texts), "document")
        return exact_cosines(q, d)[0].tolist()

    def score_docs(self, dataset, query: str, docids: list[str]) -> list[float]:
        """Cosines against the corpus embeddings the dense retriever cached for ``dataset``
        (each document encoded once, in its fixed shard), so a document's score does not depend
        on which other candidates it was reranked with (int8 dynamic quantisation would make
        it depend on the batch) and a 300-query top-100 rerank encodes nothing but queries."""
        key = dataset.fingerprint
        if self._corpus is None or self._corpus[0] != key:
            emb = np.asarray(self.encoder.corpus_embeddings(dataset), dtype=np.float32)
            rows = {d: i for i, d in enumerate(dataset.corpus.docid)}
            self._corpus = (key, emb, rows)
        _, emb, rows = self._corpus
        q = self.encoder.encode([query], "query")
        return exact_cosines(q, emb[[rows[d] for d in docids]])[0].tolist()


class CrossEncoderReranker:
    """A sentence-transformers CrossEncoder from a local model folder (``max_chars`` per text,
    as titan's ``maxChars``)."""

    def __init__(self, path: str, max_chars: int = 500):
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from sentence_transformers import CrossEncoder

        self.ce = CrossEncoder(str(path), device="cpu")
        self.model, self.max_chars = f"cross-encoder {path}", max_chars

    def score(self, query: str, texts: list[str]) -> list[float]:
        pairs = [(query, t[: self.max_chars]) for t in texts]
        return np.asarray(self.ce.predict(pairs, show_progress_bar=False), dtype=float).ravel().tolist()


@dataclass
class RerankOutcome:
    run: Run
    degraded: list = field(default_factory=list)   # {"qid", "retriever", "reason", "message"}


def rerank(run: Run, dataset, reranker, top: int = 100, queries: pd.DataFrame | None = None,
           name: str | None = None) -> RerankOutcome:
    """Rerank each query's top ``top`` documents of ``run`` (see the module docstring)."""
    qtext = dict(zip((queries if queries is not None else dataset.queries).qid,
                     (queries if queries is not None else dataset.queries).text, strict=True))
    texts = dict(zip(dataset.corpus.docid, dataset.doc_texts(), strict=True))
    rows, degraded = [], []
    for qid, g in run.cut(top).df.groupby("qid", sort=False):
        docs = g.docid.tolist()
        fused = g.score.to_numpy()
        if len(docs) < 2:
            scores = [1.0] * len(docs)
        else:
            try:
                if hasattr(reranker, "score_docs"):
                    scores = list(reranker.score_docs(dataset, qtext.get(qid, ""), docs))
                else:
                    scores = list(reranker.score(qtext.get(qid, ""),
                                                 [texts.get(d, "") for d in docs]))
                if len(scores) != len(docs) or not np.all(np.isfinite(scores)):
                    raise ValueError(f"reranker returned {len(scores)} scores for {len(docs)} "
                                     "texts or non-finite values")
            except Exception as exc:  # fail open: keep the fused order
                degraded.append({"qid": qid, "retriever": RERANK_STAGE, "reason": "error",
                                 "message": f"{type(exc).__name__}: {exc}"})
                scores = list(fused)
        order = sorted(range(len(docs)), key=lambda i: -scores[i])  # stable: fused order on ties
        for d, s in zip([docs[i] for i in order], order_to_scores([scores[i] for i in order]),
                        strict=True):
            rows.append((qid, d, float(s)))
    out = Run(pd.DataFrame(rows, columns=["qid", "docid", "score"]),
              name or f"rerank({run.name};top={top})")
    return RerankOutcome(out, degraded)
