"""Weaviate hybrid search: ``alpha`` weighs the vector search against BM25, fused by
``rankedFusion`` or ``relativeScoreFusion`` (the default since 1.24).

From Weaviate's documentation (``collection.query.hybrid(query=..., vector=..., alpha=...,
fusion_type=HybridFusion.RANKED | RELATIVE_SCORE)``): the vector list weighs ``alpha``, the BM25
list ``1 - alpha`` (alpha 0.75 by default); ranked fusion adds ``w / (60 + p)`` with p the
0-based position; relative score fusion min-max normalises each list (no spread: 1) and adds
``w x`` the normalised score; a document missing from a list adds 0; scores in float32. Each
search's window: the query's limit (10).
"""

from __future__ import annotations

import json

from ..literals import num
from .base import (
    ASSUMED,
    EngineSpace,
    Fidelity,
    Knob,
    f32,
    fidelity_common,
    minmax,
    rrf_contributions,
    score_contributions,
)

VERSION = "Weaviate 1.3x, weaviate-client 4.x (not run against a live engine)"
ALPHAS = tuple(round(0.1 * i, 1) for i in range(11))


def _export(params: dict, prov: list[str]) -> str:
    fusion = "RANKED" if params.get("mode") == "ranked" else "RELATIVE_SCORE"
    args = {"query": "<query text>", "vector": "<dense query vector>",
            "alpha": num(params["alpha"]), "fusion_type": f"HybridFusion.{fusion}",
            "limit": int(params["window"])}
    python = ("from weaviate.classes.query import HybridFusion\n\n"
              "response = collection.query.hybrid(\n"
              + "".join(f"    {k}={v if k in ('fusion_type', 'limit', 'alpha') else k.upper()},\n"
                        for k, v in args.items()) + ")\n")
    return json.dumps({"_comment": [f"verified against {VERSION}", *prov],
                       "hybrid_arguments": args, "python": python}, indent=2) + "\n"


class _Weaviate(EngineSpace):
    engine, version, ties = "weaviate", VERSION, "docid"
    round32 = sum32 = True

    def weight(self, role, params):
        a = float(params["alpha"])
        return a if role == "vector" else 1.0 - a


class WeaviateRanked(_Weaviate):
    mode = "ranked"

    def contributions(self, lists, params, limit):
        return rrf_contributions(self, lists, params, lambda p, w, _: f32(w / (60.0 + p)))


class WeaviateRelative(_Weaviate):
    mode = "relative"

    def contributions(self, lists, params, limit):
        out = score_contributions(self, lists, params, lambda s: minmax(s, equal=1.0))
        return {d: {r: f32(v) for r, v in c.items()} for d, c in out.items()}


COMMON = fidelity_common(False)
DOCS = Fidelity("rank base, edge cases and tie order", ASSUMED,
                "from Weaviate's documentation; rrfbench breaks ties by docid")
KNOBS = (Knob("alpha", 0.75, 0.0, 1.0, ALPHAS),
         Knob("window", 10, 1, 10000, (10, 20, 50, 100), integer=True))
RANKED = WeaviateRanked(
    name="weaviate-ranked", system=f"Weaviate hybrid, rankedFusion ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"}, knobs=KNOBS, fidelity=(DOCS, *COMMON),
    default_limit=10, exports={"weaviate": _export}, extra_defaults={"mode": "ranked"})
RELATIVE = WeaviateRelative(
    name="weaviate-relative", system=f"Weaviate hybrid, relativeScoreFusion ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"}, knobs=KNOBS, fidelity=(DOCS, *COMMON),
    default_limit=10, exports={"weaviate": _export}, extra_defaults={"mode": "relative"})
SPACES = (RANKED, RELATIVE)
