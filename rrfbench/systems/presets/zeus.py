"""Zeus knowledge base (Python): pgvector + BM25Okapi (rank-bm25 with jieba).

``weight / (rank + 60)`` with rank 0-based (Python ``enumerate``); vector top ``top_k x 3`` and
BM25Okapi top ``top_k x 3``; sort, top_k (5). The result limit *is* ``top_k``: a separate limit
would be a configuration Zeus cannot have, so it is refused. ``score_threshold`` (off by
default) drops vector matches below that cosine similarity. Vector-only fallback when BM25 is
unavailable (rank-bm25 or jieba not installed, or ``bm25_available=False``) or when
``use_rerank`` is off: the vector results, top_k. Several knowledge bases: the dual-path fusion
runs per base, then all results merge by fused score (:meth:`Zeus.run_bases`). Shipped: vector
0.6, keyword 0.4.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import yaml

from ...core.errors import InputError
from ...core.literals import comment_block, num
from ...core.runs import Run
from ...fusion.functions import order_to_scores
from .base import ASSUMED, EXACT, NOT_MODELLED, Fidelity, Knob, Preset


def bm25_available() -> bool:
    try:
        import jieba  # noqa: F401
        import rank_bm25  # noqa: F401
    except ImportError:
        return False
    return True


def _body(params):
    body = {"top_k": int(params["top_k"]), "vector_weight": num(params["vector_weight"]),
            "keyword_weight": num(params["keyword_weight"])}
    if params.get("score_threshold") is not None:
        body["score_threshold"] = num(params["score_threshold"])
    return body


def _yaml_export(params: dict, prov: list[str]) -> str:
    return comment_block("#", ["Tuned by rrfbench."] + prov) + yaml.safe_dump(
        _body(params), sort_keys=False)


def _python_export(params: dict, prov: list[str]) -> str:
    return comment_block("#", ["Tuned by rrfbench."] + prov) + f"RETRIEVAL_PARAMS = {_body(params)!r}\n"


class Zeus(Preset):
    def depth(self, role, params, limit):
        return 3 * int(params["top_k"])

    def valid(self, params):
        return params["vector_weight"] > 0 or params["keyword_weight"] > 0

    def limit_for(self, params, limit):
        top_k = int(params["top_k"])
        if limit and int(limit) != top_k:
            raise InputError(f"--limit: Zeus's result limit is top_k ({top_k}); a separate limit "
                             "is a configuration Zeus cannot have: use --set top_k=N")
        return top_k

    def roles_available(self):
        return {r: s for r, s in self.streams.items() if r != "keyword" or bm25_available()}

    def filter_hits(self, role, hits, params):
        t = params.get("score_threshold")
        if role == "vector" and t is not None:
            return [h for h in hits if h.score >= t]
        return hits

    def _vector_only(self, lists, params) -> bool:
        return (not params.get("use_rerank", True) or not params.get("bm25_available", True)
                or "keyword" not in lists)

    def contributions(self, lists, params, limit):
        vector = lists.get("vector", [])
        out: dict[str, dict[str, float]] = {}
        if self._vector_only(lists, params):
            for i, h in enumerate(vector[:limit]):  # vector-only mode keeps the vector order
                out[h.docid] = {"vector": 1.0 / (i + 1)}
            return out
        vw, kw = float(params["vector_weight"]), float(params["keyword_weight"])
        for rank, h in enumerate(vector):
            out.setdefault(h.docid, {})["vector"] = vw / (rank + 60)
        for rank, h in enumerate(lists.get("keyword", [])):
            out.setdefault(h.docid, {})["keyword"] = kw / (rank + 60)
        return out

    def knowledge_bases(self, dataset, split: str, n_bases: int, retrieve, seed: int = 0
                        ) -> list[dict[str, Run]]:
        """Zeus's multi-knowledge-base search, simulated: the corpus partitioned into
        ``n_bases`` (documents assigned at random with ``seed``), each base with its own keyword
        index (the keyword stream over the base's documents only) and its vector results (the
        global cosine ranking restricted to the base: exact, cosine does not depend on other
        documents). ``retrieve(dataset, spec, split)`` gives a run (the workflow hands in its
        cached retrieval). Returns the per-base runs by role, for :meth:`run_bases`."""
        if n_bases < 1:
            raise InputError(f"--bases: {n_bases} must be >= 1")
        rng = np.random.default_rng(seed)
        base_of = rng.integers(0, n_bases, len(dataset.corpus))
        vector = retrieve(dataset, self.streams["vector"], split)
        bases = []
        for b in range(n_bases):
            docs = dataset.corpus.docid[base_of == b].tolist()
            sub = dataset.subset(docs, f"{dataset.name}-kb{b}of{n_bases}-s{seed}")
            keep = set(docs)
            runs = {"vector": Run(vector.df[vector.df.docid.isin(keep)], vector.name,
                                  meta=vector.meta)}
            if "keyword" in self.roles_available():
                runs["keyword"] = retrieve(sub, self.streams["keyword"], split)
            bases.append(runs)
        return bases

    def run_bases(self, bases: list[dict[str, Run]], params: dict | None = None,
                  name: str | None = None) -> Run:
        """Multi-knowledge-base search: fuse within each base (its own BM25 index and vector
        results), then merge every base's results sorted by fused score (stable: earlier bases
        first on ties) and keep top_k."""
        params = self.defaults() | (params or {})
        self.check(params)
        top_k = self.limit_for(params, None)
        qids = sorted({q for runs in bases for run in runs.values() for q in run.qids})
        merged_q, merged_d, merged_s = [], [], []
        for q in qids:
            items = []
            for b, runs in enumerate(bases):
                lists = self.query_lists(runs, q, params, top_k)
                contribs = self.contributions(lists, params, top_k)
                fused, _ = self.finish({d: sum(c.values()) for d, c in contribs.items()},
                                       params, top_k)
                items += [(b, d, s) for d, s in fused]
            items = sorted(items, key=lambda x: -x[2])[:top_k]  # stable: base order on ties
            merged_q += [q] * len(items)
            merged_d += [d for _, d, _ in items]
            merged_s += list(order_to_scores([s for _, _, s in items]))
        return Run(pd.DataFrame({"qid": merged_q, "docid": merged_d, "score": merged_s}),
                   name or f"preset:{self.name}:{len(bases)}-bases")


PRESET = Zeus(
    name="zeus", system="Zeus knowledge base (Python): pgvector + BM25Okapi (rank-bm25, jieba)",
    streams={"vector": "dense", "keyword": "rank_bm25:jieba"},
    knobs=(Knob("vector_weight", 0.6, 0.0, 1.0, (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)),
           Knob("keyword_weight", 0.4, 0.0, 1.0, (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)),
           Knob("top_k", 5, 1, 50, (5, 10, 20), integer=True, note="also the result limit"),
           Knob("score_threshold", None, -1.0, 1.0, (None,), optional=True,
                note="RAGService.search(score_threshold)")),
    default_limit=5,
    extra_defaults={"use_rerank": True, "bm25_available": True},
    fidelity=(
        Fidelity("RRF weight / (rank + 60), rank 0-based", EXACT),
        Fidelity("top_k x 3 candidates per path; top_k is the limit; vector-only fallback", EXACT),
        Fidelity("BM25Okapi (rank-bm25 defaults) over jieba tokens", EXACT),
        Fidelity("multi-knowledge-base search: per-base fusion, then merge by score", EXACT,
                 "Zeus.run_bases; bases simulated by partitioning a corpus"),
        Fidelity("tie order", ASSUMED, "stable sort, vector results first (not documented)"),
        Fidelity("rank base", ASSUMED, "0-based enumerate, as the formula `rank + 60` implies"),
        Fidelity("score_threshold", ASSUMED, "applied to the vector path's cosine similarity"),
        Fidelity("rank-bm25 get_top_n zero-score padding", NOT_MODELLED,
                 "rrfbench runs hold matched documents only"),
        Fidelity("user_id / knowledge_base_id filters", NOT_MODELLED),
    ),
    exports={"zeus-yaml": _yaml_export, "zeus-python": _python_export},
)
