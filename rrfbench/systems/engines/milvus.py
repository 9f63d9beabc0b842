"""Milvus ``hybrid_search`` over a dense and a sparse (BM25) field: ``RRFRanker`` and
``WeightedRanker``.

From pymilvus 3.0 (``RRFRanker(k=60)``, ``WeightedRanker(*weights, norm_score=True)``) and
Milvus's documentation: each ``AnnSearchRequest`` returns its top ``limit`` (``window``); RRF
adds ``1 / (k + rank)``, rank 1-based; the weighted ranker adds ``w x norm(score)``, with a
COSINE score mapped to ``(1 + s) / 2`` and a BM25 score to ``2 arctan(s) / pi``; scores in
float32; ties: the smaller primary key. Round-tripped against Milvus Lite 3.2.2 (pymilvus's
local server, a Python re-implementation of Milvus) in ``tests/systems/engines/test_engines_live.py``: the same
top 10 in order, scores equal to float32 precision (Lite sums in float64). Milvus's own server
was not run.
"""

from __future__ import annotations

import math

from ...core.literals import comment_block, num
from .base import (
    ASSUMED,
    EXACT,
    EngineSpace,
    Fidelity,
    convex_valid,
    f32,
    fidelity_common,
    knobs_convex,
    knobs_rrf,
    rrf_contributions,
)

VERSION = "pymilvus 3.0.2 / milvus-lite 3.2.2"


def _export(params: dict, prov: list[str]) -> str:
    lim = int(params["window"])
    ranker = (f"RRFRanker(k={int(params['k'])})" if params.get("mode") == "rrf" else
              f"WeightedRanker({num(params['vector_weight'])}, {num(params['keyword_weight'])}, "
              "norm_score=True)")
    return (comment_block("#", ["Tuned by rrfbench.", f"verified against {VERSION}"] + prov)
            + "from pymilvus import AnnSearchRequest, RRFRanker, WeightedRanker\n\n"
            "requests = [\n"
            f"    AnnSearchRequest(data=[dense_vector], anns_field=\"dense\", "
            f"param={{\"metric_type\": \"COSINE\"}}, limit={lim}),\n"
            f"    AnnSearchRequest(data=[query_text], anns_field=\"sparse\", "
            f"param={{\"metric_type\": \"BM25\"}}, limit={lim}),\n"
            "]\n"
            f"result = client.hybrid_search(COLLECTION, requests, ranker={ranker}, limit=10)\n")


class MilvusRRF(EngineSpace):
    engine, mode, version, live, ties = "milvus", "rrf", VERSION, True, "docid"
    round32 = sum32 = True

    def contributions(self, lists, params, limit):
        k = float(params["k"])
        return rrf_contributions(self, lists, params, lambda p, w, _: f32(1.0 / (k + p + 1)))


class MilvusWeighted(EngineSpace):
    engine, mode, version, live, ties = "milvus", "weighted", VERSION, True, "docid"
    round32 = sum32 = True

    def valid(self, params):
        return convex_valid(params)

    def contributions(self, lists, params, limit):
        out: dict[str, dict[str, float]] = {}
        for role in self.order(params):
            w = float(params[f"{role}_weight"])
            for h in lists.get(role, []):
                s = float(h.score)
                n = (1.0 + s) / 2.0 if role == "vector" else 2.0 * math.atan(s) / math.pi
                out.setdefault(h.docid, {})[role] = f32(w * f32(n))
        return out


COMMON = fidelity_common(True, "BM25 (bm25s) for Milvus's BM25 function")
DOCS = Fidelity("rank base, score maps and tie order", EXACT,
                "from Milvus's documentation; equal in Milvus Lite 3.2.2 (round trip)")
SERVER = Fidelity("float32 scores", ASSUMED,
                  "Milvus's server, not run here; Milvus Lite sums in float64")
RRF_SRC = Fidelity("RRF: 1 / (k + rank), rank 1-based (idx + 1), k in (0, 16384), summed in "
                   "float32, no weights", EXACT, "milvus-io/milvus@0779fc686cf8 internal/util/"
                   "function/rerank/rrf_function.go processOneSearchData")
WEIGHTED_SRC = Fidelity("weighted: weight x norm(score) summed in float32, weights in [0, 1]",
                        EXACT, "milvus-io/milvus@055a3a3ec815 internal/util/function/rerank/"
                        "weighted_function.go processOneSearchData; the norms (COSINE (1 + s) / "
                        "2, BM25 2 atan(s) / pi) from the documentation and Milvus Lite")
RRF = MilvusRRF(
    name="milvus-rrf", system=f"Milvus hybrid_search + RRFRanker ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"},
    knobs=knobs_rrf("k", 60, 10, weights=False), fidelity=(RRF_SRC, DOCS, SERVER, *COMMON),
    default_limit=10,
    exports={"milvus": _export}, extra_defaults={"mode": "rrf"})
WEIGHTED = MilvusWeighted(
    name="milvus-weighted", system=f"Milvus hybrid_search + WeightedRanker ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"}, knobs=knobs_convex(10, 0.5),
    fidelity=(WEIGHTED_SRC, DOCS, SERVER, *COMMON), default_limit=10,
    exports={"milvus": _export}, extra_defaults={"mode": "weighted"})
SPACES = (RRF, WEIGHTED)
