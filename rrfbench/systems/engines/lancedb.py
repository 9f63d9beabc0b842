"""LanceDB hybrid search (vector + native full-text search) with ``RRFReranker`` or
``LinearCombinationReranker``.

Read from lancedb 0.40 (``lancedb/rerankers/rrf.py``, ``linear_combination.py``,
``query.py``), which the tests run: both sub-queries return the query's ``limit`` rows (10);
RRF adds ``1 / (rank + K)`` (rank 1-based, K 60; vector list first) in float64, the sum is
cast to float32 and sorted stably (descending), ties keeping the merge order (vector results,
then FTS-only); the linear reranker min-max normalises the vector distances and the FTS scores
over the window (no spread: 0), scores ``weight x (1 - distance) + (1 - weight) x fts``, a
document missing from a list getting 0 from it (``fill`` 1), cast to float32, same sort. The
vector distance is the table's metric (rrfbench's export asks for cosine: ``1 - cos``).
"""

from __future__ import annotations

from ...core.literals import comment_block, num
from .base import (
    EXACT,
    EngineSpace,
    Fidelity,
    Knob,
    fidelity_common,
    rrf_contributions,
)

VERSION = "lancedb 0.40.0"


def lance_minmax(scores: list[float]) -> list[float]:
    """``LanceHybridQueryBuilder._normalize_scores``: min-max; no spread: ``s - min`` (0)."""
    if not scores:
        return []
    lo, hi = min(scores), max(scores)
    rng = hi - lo
    if rng != 0:
        return [(s - lo) / rng for s in scores]
    return [s - lo for s in scores] if hi != 0 else list(scores)


def _export(params: dict, prov: list[str]) -> str:
    lim = int(params["limit"])
    reranker = (f"RRFReranker(K={int(params['K'])})" if params.get("mode") == "rrf" else
                f"LinearCombinationReranker(weight={num(params['weight'])})")
    return (comment_block("#", ["Tuned by rrfbench.", f"verified against {VERSION}"] + prov)
            + "from lancedb.rerankers import LinearCombinationReranker, RRFReranker\n\n"
            "# the table: a vector column \"vector\" (metric cosine) and an FTS index on \"text\"\n"
            "results = (table.search(query_type=\"hybrid\")\n"
            "           .vector(query_vector).text(query_text)\n"
            f"           .limit({lim})\n"
            f"           .rerank(reranker={reranker})\n"
            "           .to_pandas())\n")


class LanceRRF(EngineSpace):
    engine, mode, version, live, ties, window_knob = "lancedb", "rrf", VERSION, True, \
        "stable", "limit"
    round32 = True

    def contributions(self, lists, params, limit):
        k = int(params["K"])
        return rrf_contributions(self, lists, params, lambda p, w, _: 1.0 / (p + 1 + k))

    def limit_for(self, params, limit):
        return int(limit or params["limit"])


# LinearCombinationReranker's formula: since lancedb#3437 (7dba79362, 2026-05-26; first in
# python-v0.33.0) ``w * v + (1 - w) * f`` with a missing FTS score ``1 - fill`` = 0; before it
# ``1 - (w * v + (1 - w) * f)`` with a missing FTS score ``fill`` = 1 (inverted rankings,
# lancedb#3154), read at 7dba79362^ python/python/lancedb/rerankers/linear_combination.py
LINEAR_VERSIONS = ("0.33+", "before-0.33")
FILL = 1.0   # the reranker's default ``fill``


class LanceLinear(EngineSpace):
    engine, mode, version, live, ties, window_knob = "lancedb", "linear", VERSION, True, \
        "stable", "limit"
    round32 = True
    versions = LINEAR_VERSIONS

    def contributions(self, lists, params, limit):
        w = float(params["weight"])
        old = self.version_of(params) != LINEAR_VERSIONS[0]
        vec = lists.get("vector", [])
        fts = lists.get("keyword", [])
        dist = lance_minmax([1.0 - float(h.score) for h in vec])
        ftsn = lance_minmax([float(h.score) for h in fts])
        out: dict[str, dict[str, float]] = {}
        for h, d in zip(vec, dist, strict=True):
            out[h.docid] = {"vector": 1.0 - d, "keyword": FILL if old else 1.0 - FILL}
        for h, f in zip(fts, ftsn, strict=True):
            out.setdefault(h.docid, {"vector": 1.0 - FILL})["keyword"] = f
        return {d: {"vector": w * c["vector"], "keyword": (1.0 - w) * c["keyword"]}
                for d, c in out.items()}

    def combine(self, contribs, params):
        total = super().combine(contribs, params)
        return total if self.version_of(params) == LINEAR_VERSIONS[0] else 1.0 - total

    def limit_for(self, params, limit):
        return int(limit or params["limit"])


COMMON = fidelity_common(True, "BM25 (bm25s) for LanceDB's full-text index")
WINDOW = Knob("limit", 10, 1, 10000, (10, 20, 50, 100), integer=True,
              note="the query's limit: each sub-query's window and the result length")
RRF = LanceRRF(
    name="lancedb-rrf", system=f"LanceDB hybrid search + RRFReranker ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"},
    knobs=(Knob("K", 60, 1, 1000, (1, 2, 5, 10, 20, 40, 60, 100), integer=True), WINDOW),
    fidelity=(Fidelity("1 / (rank + K), rank 1-based, equal weights (none exposed)", EXACT,
                       "lancedb/lancedb@45cd05347 python/python/lancedb/rerankers/rrf.py "
                       "(enumerate(ids, 1), 1 / (i + self.K), K=60); the 0.40.0 round trip"),
              Fidelity("float32 relevance, stable descending sort, vector results first", EXACT),
              Fidelity("both sub-queries fetch the query's limit", EXACT), *COMMON),
    default_limit=10, exports={"lancedb": _export}, extra_defaults={"mode": "rrf"})
LINEAR = LanceLinear(
    name="lancedb-linear",
    system=f"LanceDB hybrid search + LinearCombinationReranker ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"},
    knobs=(Knob("weight", 0.7, 0.0, 1.0, tuple(round(0.1 * i, 1) for i in range(11))), WINDOW),
    fidelity=(Fidelity("engine_version 0.33+: weight x (1 - minmax distance) + (1 - weight) x "
                       "minmax FTS score; missing 0; float32; stable sort", EXACT,
                       "lancedb/lancedb@7dba79362 (#3437, first in python-v0.33.0) python/python/"
                       "lancedb/rerankers/linear_combination.py; the 0.40.0 round trip"),
              Fidelity("engine_version before-0.33: 1 - (weight x (1 - minmax distance) + "
                       "(1 - weight) x minmax FTS score), a missing FTS score 1 (inverted, "
                       "lancedb#3154)", EXACT, "lancedb/lancedb@7dba79362^ python/python/lancedb/"
                       "rerankers/linear_combination.py (the normalisation in query.py "
                       "unchanged by the fix); not round-tripped (the pinned lancedb is 0.40)"),
              *COMMON),
    default_limit=10, exports={"lancedb": _export},
    extra_defaults={"mode": "linear", "engine_version": LINEAR_VERSIONS[0]})
SPACES = (RRF, LINEAR)
