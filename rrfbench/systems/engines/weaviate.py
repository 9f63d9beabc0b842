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
* ``rankedFusion`` (``hybrid/hybrid_fusion.go`` at f90bfd0ff173, ``FusionRanked``): each list
  adds ``weight / (i + 60 + 1)`` with ``i`` its 0-based position, in float64, added to the
  float32 score kept so far, the sum stored as float32 (the vector list first).
* ``relativeScoreFusion`` (``FusionRelativeScore``): each list min-max normalised over its
  hits' raw scores (BM25; the vector leg's ``1 - distance``, the cosine), in float32; no
  spread gives the full weight; ``weight x normalised`` added in float32.
* Ties: ranked fusion sorts exact ties, relative fusion scores within 1e-7, by the raw score of
  the list the document was last seen in (BM25 when it is in both) descending, then in no fixed
  order (``sort.Slice`` over a map): rrfbench breaks the rest by docid.
"""

from __future__ import annotations

import json

from ...core.literals import num
from .base import (
    ASSUMED,
    EXACT,
    EngineSpace,
    Fidelity,
    Knob,
    f32,
    fidelity_common,
    rrf_contributions,
)

VERSION = "Weaviate 1.3x source, weaviate-client 4.x (not run against a live engine)"
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


class WeaviateRanked(_Weaviate):
    mode = "ranked"

    def contributions(self, lists, params, limit):
        # float64 w / (i + 61), added to the float32 sum kept so far (combine, sum32)
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
SRC = "weaviate/weaviate@0026fd477f00"
WINDOW = Fidelity("each leg fetches max(maximum_results, limit) candidates (100 by default)",
                  EXACT, f"{SRC} usecases/traverser/explorer_hybrid.go sparseSearch, denseSearch; "
                  "hybrid/searcher.go DefaultLimit = 100; QUERY_HYBRID_MAXIMUM_RESULTS since 1.32")
LEGS = Fidelity("alpha 0 or 1 runs one leg only", EXACT,
                f"{SRC} usecases/traverser/explorer_hybrid.go Hybrid")
RANKED_F = Fidelity("weight / (i + 61), i 0-based, float64 added to a float32 sum", EXACT,
                    "weaviate/weaviate@f90bfd0ff173 usecases/traverser/hybrid/hybrid_fusion.go "
                    "FusionRanked (rank_fusion.go FusionReciprocal the same)")
RELATIVE_F = Fidelity("min-max per list in float32 over BM25 and 1 - distance; no spread: the "
                      "full weight", EXACT, "weaviate/weaviate@f90bfd0ff173 "
                      "usecases/traverser/hybrid/hybrid_fusion.go FusionRelativeScore")
TIES = Fidelity("ties (ranked: equal; relative: within 1e-7) by the last list's raw score, then "
                "in map order", ASSUMED, "rrfbench breaks them by docid")
KNOBS = (Knob("alpha", 0.75, 0.0, 1.0, ALPHAS),
         Knob("maximum_results", 100, 1, 10000, (10, 20, 50, 100, 200), integer=True,
              note="server setting QUERY_HYBRID_MAXIMUM_RESULTS (1.32+); fixed at 100 before"))
RANKED = WeaviateRanked(
    name="weaviate-ranked", system=f"Weaviate hybrid, rankedFusion ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"}, knobs=KNOBS,
    fidelity=(WINDOW, LEGS, RANKED_F, TIES, *COMMON),
    default_limit=QUERY_LIMIT, exports={"weaviate": _export}, extra_defaults={"mode": "ranked"})
RELATIVE = WeaviateRelative(
    name="weaviate-relative", system=f"Weaviate hybrid, relativeScoreFusion ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"}, knobs=KNOBS,
    fidelity=(WINDOW, LEGS, RELATIVE_F, TIES, *COMMON),
    default_limit=QUERY_LIMIT, exports={"weaviate": _export},
    extra_defaults={"mode": "relative"})
SPACES = (RANKED, RELATIVE)
