"""Qdrant's Query API: prefetch a dense and a sparse (keyword) list, fuse with ``rrf`` or
``dbsf``.

Read from qdrant-client 1.20's local mode (``qdrant_client/hybrid/fusion.py``), which the
tests run: RRF gives a document at 0-based position p of a list with weight w
``1 / ((p + 1) / w + k - 1)`` (k = 2 by default: ``1 / (rank + 1)``; the weight divides the rank,
it does not multiply the score; weight 0 adds 0 but the document still enters); DBSF scales
each list by its mean +- 3 sample standard deviations (one result, or no spread: 0.5) and sums.
Both sort stably by score (ties: first seen, prefetch order then position) and cut to
``limit``; each prefetch returns its top ``prefetch_limit`` (10 by default). The server
computes the same RRF in float32 (the local mode in float64).
"""

from __future__ import annotations

import json

from ...core.literals import comment_block, num
from .base import (
    ASSUMED,
    EXACT,
    EngineSpace,
    Fidelity,
    Knob,
    fidelity_common,
    knobs_rrf,
    rrf_contributions,
)

VERSION = "qdrant-client 1.20.0 (local mode)"


def _request(params: dict, mode: str) -> dict:
    lim = int(params["prefetch_limit"])
    query = ({"rrf": {"k": int(params["k"]), "weights": [num(params["vector_weight"]),
                                                          num(params["keyword_weight"])]}}
             if mode == "rrf" else {"fusion": "dbsf"})
    return {"prefetch": [{"query": "<dense query vector>", "using": "dense", "limit": lim},
                         {"query": {"indices": "<term ids>", "values": "<term weights>"},
                          "using": "sparse", "limit": lim}],
            "query": query, "limit": 10}


def _json_export(params: dict, prov: list[str]) -> str:
    mode = params.get("mode", "rrf")
    return json.dumps({"_comment": ["POST /collections/{collection_name}/points/query",
                                    f"verified against {VERSION}", *prov],
                       **_request(params, mode)}, indent=2) + "\n"


def _python_export(params: dict, prov: list[str]) -> str:
    mode = params.get("mode", "rrf")
    lim = int(params["prefetch_limit"])
    fusion = (f"models.RrfQuery(rrf=models.Rrf(k={int(params['k'])}, weights=["
              f"{num(params['vector_weight'])}, {num(params['keyword_weight'])}]))"
              if mode == "rrf" else "models.FusionQuery(fusion=models.Fusion.DBSF)")
    return (comment_block("#", ["Tuned by rrfbench.", f"verified against {VERSION}"] + prov)
            + "from qdrant_client import models\n\n"
            "result = client.query_points(\n"
            "    collection_name=COLLECTION,\n"
            "    prefetch=[\n"
            f"        models.Prefetch(query=dense_vector, using=\"dense\", limit={lim}),\n"
            f"        models.Prefetch(query=sparse_vector, using=\"sparse\", limit={lim}),\n"
            "    ],\n"
            f"    query={fusion},\n"
            "    limit=10,\n"
            ")\n")


EXPORTS = {"qdrant": _json_export, "qdrant-python": _python_export}


class QdrantRRF(EngineSpace):
    engine, mode, version, live, ties, window_knob = "qdrant", "rrf", VERSION, True, "stable", \
        "prefetch_limit"

    def contributions(self, lists, params, limit):
        k = float(params["k"])

        def score(p, w, _):
            return 0.0 if w <= 0 else 1.0 / ((p + 1.0) / w + k - 1.0)
        return rrf_contributions(self, lists, params, score)

    def valid(self, params):
        return params["vector_weight"] > 0 or params["keyword_weight"] > 0


def dbsf(scores: list[float]) -> list[float]:
    """Qdrant's DBSF scaling of one list (local mode, float64)."""
    if len(scores) == 1:
        return [0.5]
    mean = sum(scores) / len(scores)
    var = sum((s - mean) ** 2 for s in scores) / (len(scores) - 1)
    if var == 0:
        return [0.5] * len(scores)
    sd = var ** 0.5
    lo, hi = mean - 3 * sd, mean + 3 * sd
    return [(s - lo) / (hi - lo) for s in scores]


class QdrantDBSF(EngineSpace):
    engine, mode, version, live, ties, window_knob = "qdrant", "dbsf", VERSION, True, "stable", \
        "prefetch_limit"

    def contributions(self, lists, params, limit):
        out: dict[str, dict[str, float]] = {}
        for role in self.order(params):
            hits = lists.get(role, [])
            if hits:
                for h, s in zip(hits, dbsf([float(x.score) for x in hits]), strict=True):
                    out.setdefault(h.docid, {})[role] = s
        return out


COMMON = fidelity_common(True)
SERVER_TIES = Fidelity(
    "ties on the Qdrant server: in no fixed order", ASSUMED,
    "qdrant/qdrant@74f3e85b lib/segment/src/common/reciprocal_rank_fusion.rs sorts a hash map "
    "with sort_unstable_by ('does not break ties'); rrfbench scores the local mode's order. At "
    "the defaults on scifact test RRF's nDCG@10 ranges 0.6948-0.7254 over tie orders, DBSF's "
    "not at all (benchmarks/qdrant_ties.py)")
RRF = QdrantRRF(
    name="qdrant-rrf", system=f"Qdrant Query API, prefetch + RRF ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"},
    knobs=(*knobs_rrf("k", 2, 10, window_name="prefetch_limit",
                      note="Rrf(k=...); Fusion.RRF is k=2, equal weights"),),
    fidelity=(Fidelity("RRF 1 / ((p + 1) / w + k - 1), p 0-based, default k 2", EXACT),
              Fidelity("weight divides the rank; weight 0 adds 0, the document still enters",
                       EXACT),
              Fidelity("ties: stable sort, prefetch order (dense, sparse) then position", EXACT,
                       "qdrant-client's local mode (hybrid/fusion.py), the one round-tripped"),
              SERVER_TIES,
              Fidelity("prefetch limit 10 by default, final limit 10", EXACT), *COMMON),
    default_limit=10, exports=EXPORTS, extra_defaults={"mode": "rrf"})
DBSF = QdrantDBSF(
    name="qdrant-dbsf", system=f"Qdrant Query API, prefetch + DBSF ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"},
    knobs=(Knob("prefetch_limit", 10, 1, 10000, (10, 20, 50, 100), integer=True),),
    fidelity=(Fidelity("DBSF: each list scaled by mean +- 3 sample sd (n - 1), one result or "
                       "no spread -> 0.5, summed", EXACT),
              Fidelity("ties: stable sort, prefetch order then position", EXACT,
                       "qdrant-client's local mode"), SERVER_TIES, *COMMON),
    default_limit=10, exports=EXPORTS, extra_defaults={"mode": "dbsf"})
SPACES = (RRF, DBSF)
