"""Weaviate hybrid search: ``alpha`` weighs the vector search against BM25, fused by
``rankedFusion`` or ``relativeScoreFusion`` (the default since 1.24).

From Weaviate's source (``weaviate/weaviate``; the paths below at commit 0026fd477f00 unless
said otherwise):

* Candidates: each leg fetches at least ``hybrid.DefaultLimit`` = 100 hits, whatever the query's
  ``limit`` (``usecases/traverser/explorer_hybrid.go``: ``sparseSearch`` asks for
  ``max(offset + DefaultLimit, limit)``, ``denseSearch`` raises a smaller limit to
  ``DefaultLimit``; ``usecases/traverser/hybrid/searcher.go``: ``const DefaultLimit = 100``).
  Since 1.32 the floor is the server setting ``QUERY_HYBRID_MAXIMUM_RESULTS`` (default 100;
  ``usecases/config/environment.go`` at adcffc5432aa): the knob ``maximum_results``. The fused
  list is then cut to the query's limit (10).
* Legs: alpha 0 searches BM25 only, alpha 1 the vector index only (``Hybrid``: a leg runs only
  when its weight is above 0). Weights: the vector leg ``alpha``, BM25 ``1 - alpha``.
* ``rankedFusion`` (``usecases/traverser/hybrid/hybrid_fusion.go`` ``FusionRanked``): each list
  adds ``float32(weight / (i + 60))`` with ``i`` its 0-based position (rank + 59), the sum kept
  in float32 (the vector list first), since 1.24.0 (weaviate#4127 "remove unwanted +1",
  131c2c9510, 2024-02-05); before 1.24 ``weight / (i + 61)`` in float64 added to the float32
  score so far (``--set engine_version=before-1.24``; read at tag v1.23.0).
* ``relativeScoreFusion`` (``FusionRelativeScore``): each list min-max normalised over its
  hits' raw scores (BM25; the vector leg's ``1 - distance``, the cosine), in float32; no
  spread gives the full weight; ``weight x normalised`` added in float32.
* Ties (``sort.Slice`` in both, at adcffc5432aa): scores within 1e-7 (``a_b*a_b < 1e-14`` on
  the float32 difference) go to the larger ``SecondarySortValue`` (the raw score of the list
  the document was last seen in: BM25 when it is in both, else the cosine), and those within
  1e-7 too to the smaller object UUID (rrfbench: the docid; ASSUMED). Before 1.24 ranked
  fusion broke only exact ties, by the secondary value.
"""

from __future__ import annotations

import json
from functools import cmp_to_key

import numpy as np

from ...core.literals import num
from .base import (
    ASSUMED,
    EXACT,
    EngineSpace,
    Fidelity,
    Hit,
    Knob,
    f32,
    fidelity_common,
    rrf_contributions,
)

VERSION = "Weaviate 1.3x source, weaviate-client 4.x (not run against a live engine)"
RANKED_VERSIONS = ("1.24+", "before-1.24")   # FusionRanked: weight / (i + 60) / (i + 61)
NEAR = 1e-14     # hybrid_fusion.go: two float32 scores are tied when their squared gap is below
ALPHAS = tuple(round(0.1 * i, 1) for i in range(11))


QUERY_LIMIT = 10


def _export(params: dict, prov: list[str]) -> str:
    fusion = "RANKED" if params.get("mode") == "ranked" else "RELATIVE_SCORE"
    args = {"query": "<query text>", "vector": "<dense query vector>",
            "alpha": num(params["alpha"]), "fusion_type": f"HybridFusion.{fusion}",
            "limit": QUERY_LIMIT}
    python = ("from weaviate.classes.query import HybridFusion\n\n"
              "response = collection.query.hybrid(\n"
              + "".join(f"    {k}={v if k in ('fusion_type', 'limit', 'alpha') else k.upper()},\n"
                        for k, v in args.items()) + ")\n")
    server = {"QUERY_HYBRID_MAXIMUM_RESULTS": str(int(params["maximum_results"]))}
    return json.dumps({"_comment": [f"verified against {VERSION}", *prov,
                                    "server_environment: each leg's candidates (Weaviate 1.32+; "
                                    "older servers fetch 100 whatever it says)"],
                       "hybrid_arguments": args, "server_environment": server,
                       "python": python}, indent=2) + "\n"


class _Weaviate(EngineSpace):
    engine, version, ties = "weaviate", VERSION, "docid"
    round32 = sum32 = True

    def depth(self, role, params, limit):
        """Each leg's candidates: at least ``maximum_results``, at least the query's limit."""
        return max(int(params["maximum_results"]), int(limit))

    def weight(self, role, params):
        a = float(params["alpha"])
        return a if role == "vector" else 1.0 - a

    def searched(self, lists: dict, params: dict) -> dict:
        """The legs Weaviate runs: those whose weight is above 0 (alpha 0 or 1: one leg)."""
        return {r: hits for r, hits in lists.items() if self.weight(r, params) > 0}

    def fuse_query(self, lists, params, limit, prior=None):
        lists = {role: [h if isinstance(h, Hit) else Hit(h, 0.0) for h in hits]
                 for role, hits in lists.items()}
        contribs = self.contributions(lists, params, limit)
        scores = {d: f32(self.combine(c, params)) for d, c in contribs.items()}
        near = not (self.mode == "ranked" and self.version_of(params) != RANKED_VERSIONS[0])
        return weaviate_order(scores, self.secondary(lists, params), near)[:limit]

    def secondary(self, lists: dict, params: dict) -> dict[str, float]:
        """Each document's ``SecondarySortValue``: the raw score (float32) of the last list it
        is in, in the order Weaviate merges them (vector, then BM25)."""
        out: dict[str, float] = {}
        for role, hits in self.searched(lists, params).items():
            for h, v in zip(hits, self.role_scores(role, hits), strict=True):
                out[h.docid] = f32(v)
        return out


def weaviate_order(scores: dict[str, float], secondary: dict[str, float],
                   near: bool = True) -> list[tuple[str, float]]:
    """``sort.Slice``'s order in ``FusionRanked`` / ``FusionRelativeScore``: score descending;
    scores within 1e-7 (``near``; else only equal ones) by the secondary value descending, and
    secondary values within 1e-7 by id ascending (the docid stands in for the UUID)."""
    def tied(a: float, b: float) -> bool:
        gap = float(np.float32(b) - np.float32(a))
        return gap * gap < NEAR if near else a == b

    def cmp(x, y) -> int:
        (dx, sx), (dy, sy) = x, y
        if tied(sx, sy):
            ax, ay = secondary.get(dx, 0.0), secondary.get(dy, 0.0)
            if tied(ax, ay):
                return (dx > dy) - (dx < dy)
            return -1 if ax > ay else 1
        return -1 if sx > sy else 1
    return sorted(scores.items(), key=cmp_to_key(cmp))


class WeaviateRanked(_Weaviate):
    mode = "ranked"
    versions = RANKED_VERSIONS

    def contributions(self, lists, params, limit):
        if self.version_of(params) == RANKED_VERSIONS[0]:
            # float32(w / (i + 60)), added in float32 (combine, sum32)
            return rrf_contributions(self, self.searched(lists, params), params,
                                     lambda p, w, _: f32(w / (p + 60.0)))
        # before 1.24: float64 w / (i + 61), added to the float32 sum kept so far
        return rrf_contributions(self, self.searched(lists, params), params,
                                 lambda p, w, _: w / (p + 60.0 + 1.0))


def relative_norm(scores: list[float]) -> list[float]:
    """``FusionRelativeScore``'s normalisation, in float32: ``(s - min) / (max - min)``; no
    spread: 1 (the full weight)."""
    s = [f32(x) for x in scores]
    if not s:
        return []
    lo, hi = min(s), max(s)
    if hi == lo:
        return [1.0] * len(s)
    return [f32(f32(x - lo) / f32(hi - lo)) for x in s]


class WeaviateRelative(_Weaviate):
    mode = "relative"

    def contributions(self, lists, params, limit):
        out: dict[str, dict[str, float]] = {}
        for role, hits in self.searched(lists, params).items():
            w = f32(self.weight(role, params))
            for h, n in zip(hits, relative_norm(self.role_scores(role, hits)), strict=True):
                out.setdefault(h.docid, {})[role] = f32(w * n)
        return out


COMMON = fidelity_common(False)
SRC = "weaviate/weaviate@adcffc5432aa"
WINDOW = Fidelity("each leg fetches max(maximum_results, limit) candidates (100 by default)",
                  EXACT, f"{SRC} usecases/traverser/explorer_hybrid.go sparseSearch, denseSearch; "
                  "hybrid/searcher.go DefaultLimit = 100; QUERY_HYBRID_MAXIMUM_RESULTS since 1.32")
LEGS = Fidelity("alpha 0 or 1 runs one leg only", EXACT,
                f"{SRC} usecases/traverser/explorer_hybrid.go Hybrid")
RANKED_F = Fidelity("engine_version 1.24+: float32(weight / (i + 60)), i 0-based, summed in "
                    "float32; before-1.24: weight / (i + 61) in float64 added to the float32 "
                    "sum", EXACT, f"{SRC} usecases/traverser/hybrid/hybrid_fusion.go "
                    "FusionRanked; weaviate#4127 (131c2c9510, in v1.24.0); tag v1.23.0")
RELATIVE_F = Fidelity("min-max per list in float32 over BM25 and 1 - distance; no spread: the "
                      "full weight", EXACT, "weaviate/weaviate@f90bfd0ff173 "
                      "usecases/traverser/hybrid/hybrid_fusion.go FusionRelativeScore")
TIES = Fidelity("scores within 1e-7 by the last list's raw score (BM25, else the cosine) "
                "descending, those within 1e-7 too by id (before 1.24, ranked: exact ties by the "
                "raw score only)", EXACT, f"{SRC} usecases/traverser/hybrid/hybrid_fusion.go "
                "sort.Slice in FusionRanked and FusionRelativeScore; explorer_hybrid.go "
                "SecondarySortValue")
UUID = Fidelity("the id order among full ties: the object UUID", ASSUMED,
                "rrfbench's docid stands in for the UUID (Weaviate's own UUIDs are random "
                "unless derived from the docid); a chain of near ties (a~b, b~c, not a~c) "
                "sorts as Python's sort orders it, not Go's pdqsort")
KNOBS = (Knob("alpha", 0.75, 0.0, 1.0, ALPHAS),
         Knob("maximum_results", 100, 1, 10000, (10, 20, 50, 100, 200), integer=True,
              note="server setting QUERY_HYBRID_MAXIMUM_RESULTS (1.32+); fixed at 100 before"))
RANKED = WeaviateRanked(
    name="weaviate-ranked", system=f"Weaviate hybrid, rankedFusion ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"}, knobs=KNOBS,
    fidelity=(WINDOW, LEGS, RANKED_F, TIES, UUID, *COMMON),
    default_limit=QUERY_LIMIT, exports={"weaviate": _export},
    extra_defaults={"mode": "ranked", "engine_version": RANKED_VERSIONS[0]})
RELATIVE = WeaviateRelative(
    name="weaviate-relative", system=f"Weaviate hybrid, relativeScoreFusion ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"}, knobs=KNOBS,
    fidelity=(WINDOW, LEGS, RELATIVE_F, TIES, UUID, *COMMON),
    default_limit=QUERY_LIMIT, exports={"weaviate": _export},
    extra_defaults={"mode": "relative"})
SPACES = (RANKED, RELATIVE)
