"""Vespa: a global-phase rank expression over ``bm25(text)`` and ``closeness(field,
embedding)``: ``reciprocal_rank_fusion(...)`` or ``normalize_linear(...)``.

From Vespa's source (``vespa-engine/vespa``):

* The window: the global phase re-ranks the first phase's best ``rerank-count`` hits (100)
  and computes *both* features for every one of them (``container-search/.../ranking/
  ResultReranker.java`` at 1f79d33dd014; ``closeness`` is computed for a hit the
  nearestNeighbor operator did not return, ``searchlib/.../features/closenessfeature.cpp``).
  No hit is missing from a list: a hit with no text match has ``bm25`` 0.
* The first phase, as the exported rank profile writes it: ``bm25(text) + closeness(field,
  embedding)`` over the hits the query matches: every BM25 match (rrfbench: the keyword run,
  1000 deep) and the nearestNeighbor's ``targetHits`` (100).
* ``closeness`` with the angular distance is ``1 / (1 + acos(cos))``
  (``searchlib/src/vespa/searchlib/tensor/angular_distance.cpp`` at 0136f58e6c3f,
  ``to_rawscore``); rrfbench knows the cosine of the dense run's top 1000, and gives a hit
  below it the 1000th cosine (an upper bound; ASSUMED).
* ``reciprocal_rank_fusion(a, b)``: each input sorted over the window, best first, ties in
  window order (a stable sort), ``1 / (k + 1 + i)`` with k 60 and ``i`` 0-based, summed
  (``ReciprocalRankNormalizer.java`` at 54c1885ae2c0).
* ``normalize_linear(x)``: ``0.5 + (x - midpoint) / (max - min)`` over the window, and 0.5 each
  when there is no spread (``LinearNormalizer.java`` at 54c1885ae2c0).
"""

from __future__ import annotations

import math

from ...core.literals import comment_block, num
from .base import (
    ASSUMED,
    EXACT,
    EngineSpace,
    Fidelity,
    Knob,
    convex_valid,
    fidelity_common,
    knobs_convex,
)

VERSION = "Vespa 8 source (rank profiles; not run against a live engine)"


def _export(params: dict, prov: list[str]) -> str:
    n = int(params["rerank_count"])
    if params.get("mode") == "rrf":
        expr = "reciprocal_rank_fusion(bm25(text), closeness(field, embedding))"
    else:
        expr = (f"{num(params['vector_weight'])} * normalize_linear(closeness(field, embedding)) "
                f"+ {num(params['keyword_weight'])} * normalize_linear(bm25(text))")
    query = ("select * from sources * where userQuery() or "
             f"({{targetHits:{TARGET_HITS}}}nearestNeighbor(embedding, q))")
    return (comment_block("#", ["Tuned by rrfbench.", f"verified against {VERSION}"] + prov
                          + [f"query: {query}", "field embedding: distance-metric angular"])
            + "rank-profile hybrid inherits default {\n"
            "    inputs { query(q) tensor<float>(x[384]) }\n"
            "    first-phase { expression: bm25(text) + closeness(field, embedding) }\n"
            "    global-phase {\n"
            f"        rerank-count: {n}\n"
            f"        expression: {expr}\n"
            "    }\n}\n")


TARGET_HITS = 100        # the nearestNeighbor operator's targetHits in the exported query
FEATURE_DEPTH = 1000     # how deep rrfbench reads each run for the features


def closeness(cos: float) -> float:
    """Vespa's angular ``closeness``: ``1 / (1 + acos(cos))``, the cosine clamped to [-1, 1]."""
    return 1.0 / (1.0 + math.acos(min(1.0, max(-1.0, cos))))


def normalize_linear(values: list[float]) -> list[float]:
    """``LinearNormalizer``: ``0.5 + scale * (x - midpoint)``; no spread: 0.5 each."""
    lo, hi = min(values), max(values)
    scale = mid = 0.0
    if hi > lo:
        scale, mid = 1.0 / (hi - lo), (lo + hi) * 0.5
    return [0.5 + scale * (x - mid) for x in values]


def reciprocal_ranks(values: list[float], k: float = 60.0) -> list[float]:
    """``ReciprocalRankNormalizer``: ``1 / (k + 1 + i)`` by value, best first, ties in window
    order."""
    order = sorted(range(len(values)), key=lambda i: -values[i])   # stable
    out = [0.0] * len(values)
    for i, idx in enumerate(order):
        out[idx] = 1.0 / (k + 1.0 + i)
    return out


class _Vespa(EngineSpace):
    engine, version, ties, window_knob = "vespa", VERSION, "docid", "rerank_count"

    def depth(self, role, params, limit):
        return FEATURE_DEPTH

    def window(self, lists: dict, params: dict) -> tuple[list[str], dict, dict]:
        """The global phase's hits (first-phase order) with their closeness and bm25."""
        keyword = lists.get("keyword", [])
        vector = lists.get("vector", [])
        bm25 = {h.docid: float(h.score) for h in keyword}
        cos = {h.docid: float(h.score) for h in vector}
        floor = min(cos.values()) if cos else -1.0
        hits = list(dict.fromkeys([h.docid for h in keyword]
                                  + [h.docid for h in vector[:TARGET_HITS]]))
        close = {d: closeness(cos.get(d, floor)) for d in hits}
        first = {d: bm25.get(d, 0.0) + close[d] for d in hits}
        hits = sorted(hits, key=lambda d: (-first[d], d))[:int(params["rerank_count"])]
        return hits, {d: close[d] for d in hits}, {d: bm25.get(d, 0.0) for d in hits}


class VespaRRF(_Vespa):
    mode = "rrf"

    def contributions(self, lists, params, limit):
        hits, close, bm25 = self.window(lists, params)
        if not hits:
            return {}
        rv = reciprocal_ranks([close[d] for d in hits])
        rk = reciprocal_ranks([bm25[d] for d in hits])
        return {d: {"vector": a, "keyword": b} for d, a, b in zip(hits, rv, rk, strict=True)}


class VespaLinear(_Vespa):
    mode = "linear"

    def valid(self, params):
        return convex_valid(params)

    def contributions(self, lists, params, limit):
        hits, close, bm25 = self.window(lists, params)
        if not hits:
            return {}
        wv, wk = self.weight("vector", params), self.weight("keyword", params)
        nv = normalize_linear([close[d] for d in hits])
        nk = normalize_linear([bm25[d] for d in hits])
        return {d: {"vector": wv * a, "keyword": wk * b}
                for d, a, b in zip(hits, nv, nk, strict=True)}


COMMON = fidelity_common(False)
WINDOW = Fidelity("the global phase: the first phase's best rerank-count hits, both features "
                  "for every hit (bm25 0 without a text match)", EXACT,
                  "vespa-engine/vespa@1f79d33dd014 container-search/src/main/java/com/yahoo/"
                  "search/ranking/ResultReranker.java; searchlib/src/vespa/searchlib/features/"
                  "closenessfeature.cpp")
FIRST = Fidelity("the first phase bm25 + closeness over every BM25 match and the "
                 f"nearestNeighbor's {TARGET_HITS} targetHits", ASSUMED,
                 "the exported rank profile's first phase; rrfbench reads BM25 1000 deep, and a "
                 "hit below the dense run's top 1000 gets the 1000th cosine")
CLOSE = Fidelity("closeness (angular) 1 / (1 + acos(cos))", EXACT,
                 "vespa-engine/vespa@0136f58e6c3f searchlib/src/vespa/searchlib/tensor/"
                 "angular_distance.cpp to_rawscore")
RR = Fidelity("reciprocal_rank_fusion: 1 / (61 + i) per input over the window, ties in window "
              "order", EXACT, "vespa-engine/vespa@54c1885ae2c0 container-search/src/main/java/"
              "com/yahoo/search/ranking/ReciprocalRankNormalizer.java")
LIN = Fidelity("normalize_linear: 0.5 + (x - midpoint) / (max - min) over the window; no "
               "spread: 0.5", EXACT, "vespa-engine/vespa@54c1885ae2c0 container-search/src/"
               "main/java/com/yahoo/search/ranking/LinearNormalizer.java")
TIES = Fidelity("ties of the global-phase score", ASSUMED, "rrfbench breaks them by docid")
RRF = VespaRRF(
    name="vespa-rrf", system=f"Vespa global-phase reciprocal_rank_fusion ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"},
    knobs=(Knob("rerank_count", 100, 1, 10000, (10, 20, 50, 100), integer=True),),
    fidelity=(WINDOW, FIRST, CLOSE, RR, TIES, *COMMON), default_limit=10,
    exports={"vespa": _export}, extra_defaults={"mode": "rrf"})
LINEAR = VespaLinear(
    name="vespa-linear", system=f"Vespa global-phase normalize_linear ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"}, knobs=knobs_convex(100, 0.5, "rerank_count"),
    fidelity=(WINDOW, FIRST, CLOSE, LIN, TIES, *COMMON), default_limit=10,
    exports={"vespa": _export}, extra_defaults={"mode": "linear"})
SPACES = (RRF, LINEAR)
