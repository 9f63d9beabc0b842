"""Azure AI Search hybrid query: a full-text ``search`` and a ``vectorQueries`` entry in one
request, fused by Reciprocal Rank Fusion. A cloud service: not run here, modelled from its
public reference.

Read in the reference (MicrosoftDocs/azure-ai-docs, ``articles/search/``) and the REST API's
TypeSpec (Azure/azure-rest-api-specs ``specification/search/Azure.Search/models-index.tsp``):

- RRF: every result set gives a document ``1 / (rank + k)``, the scores are summed over the
  result sets it is in, and the sum orders the response (``hybrid-search-ranking.md`` at
  43dc14ea, dated 2026-01-21). The reference names k = 60 as the small value the algorithm
  works best with; no request field sets it (the REST spec has none), so rrfbench fixes it at
  60. The rank base is not stated: rrfbench reads "position in the list" as 1-based.
- ``vectorQueries[].weight``: "a multiplier of the weight value against the rank score of the
  document within its respective result set", default 1.0, "a positive number larger than
  zero", typed float32 in the REST spec (``VectorQuery.weight``). The text query has "an
  implicit neutral weight of 1.0" that no field changes (``vector-search-how-to-query.md`` at
  d1eea4c2, "Vector weighting"); the text side's share moves only through its window.
- Windows: the vector query contributes its ``k`` nearest neighbours (``kNearestNeighborsCount``
  in the .NET SDK, ``k_nearest_neighbors`` in Python; 50 results when ``k`` and ``top`` are
  unspecified); the text query its top ``hybridSearch.maxTextRecallSize`` BM25 matches (1 to
  10,000, default 1,000; preview API versions since 2025-03-01-preview, the docs recommend
  2025-11-01-preview; without it full-text search stops at 1,000 matches).
  ``top`` (default 50, at most 1,000 a page) cuts the fused list.

Not stated anywhere (rrfbench's guesses, marked so in the fidelity list): the rank base, the
float width of the sum, and the order of exact ties (the smaller doc id, as in Lucene).
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

VERSION = ("Azure AI Search REST 2025-09-01 (hybridSearch: 2025-11-01-preview), reference "
           "dated 2026-01-21; not run against a live engine")
GA_API = "2025-09-01"
PREVIEW_API = "2025-11-01-preview"
RRF_K = 60
TEXT_RECALL_DEFAULT = 1000
DOCS = "MicrosoftDocs/azure-ai-docs"
RANKING = f"{DOCS}@43dc14ea7c30 articles/search/hybrid-search-ranking.md (2026-01-21)"
VECTOR_QUERY = f"{DOCS}@d1eea4c228b8 articles/search/vector-search-how-to-query.md"
HYBRID_QUERY = f"{DOCS}@8f2b68ee82f4 articles/search/hybrid-search-how-to-query.md (2026-01-20)"
SPEC = ("Azure/azure-rest-api-specs@0052cf3d1a9c specification/search/Azure.Search/"
        "models-index.tsp (VectorQuery.weight float32, HybridSearch.maxTextRecallSize)")


def _export(params: dict, prov: list[str]) -> str:
    recall = int(params["maxTextRecallSize"])
    body: dict = {
        "search": "<query text>",
        "vectorQueries": [{"kind": "vector", "vector": "<dense query vector>",
                           "fields": "embedding", "k": int(params["k"]),
                           "weight": num(float(params["vector_weight"]))}],
        "top": 10,
    }
    if recall != TEXT_RECALL_DEFAULT:   # a preview parameter: sent only when it changes something
        body["hybridSearch"] = {"maxTextRecallSize": recall,
                                "countAndFacetMode": "countAllResults"}
    api = PREVIEW_API if "hybridSearch" in body else GA_API
    return json.dumps({"_comment": [
        f"POST https://<service>.search.windows.net/indexes/<index>/docs/search"
        f"?api-version={api}",
        f"verified against {VERSION}",
        f"RRF constant k = {RRF_K}: fixed by the service, not a request field; the text query's "
        "weight is fixed at 1.0",
        *prov], **body}, indent=2) + "\n"


class AzureRRF(EngineSpace):
    engine, mode, version, live, ties = "azure", "rrf", VERSION, False, "docid"

    def depth(self, role, params, limit):
        return int(params["k"] if role == "vector" else params["maxTextRecallSize"])

    def weight(self, role, params):
        # the vector query's weight travels as float32; the text query's is 1.0, not settable
        return f32(float(params["vector_weight"])) if role == "vector" else 1.0

    def contributions(self, lists, params, limit):
        k = int(params["rrf_k"])
        return rrf_contributions(self, lists, params, lambda p, w, _: w * (1.0 / (p + 1 + k)))


COMMON = fidelity_common(False)
RRF = AzureRRF(
    name="azure-rrf", system=f"Azure AI Search hybrid query, RRF ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"},
    knobs=(Knob("rrf_k", RRF_K, RRF_K, RRF_K, (), fixed=True, integer=True,
                note="the service's RRF constant; no request field sets it"),
           Knob("vector_weight", 1.0, 0.01, 100.0, (0.25, 0.5, 1.0, 2.0, 4.0),
                note="vectorQueries[].weight: > 0 (rrfbench's range 0.01-100; the reference "
                     "sets no upper bound); the text query's weight is 1.0"),
           Knob("k", 50, 1, 10000, (10, 20, 50, 100), integer=True,
                note="vectorQueries[].k (kNearestNeighborsCount, k_nearest_neighbors): the "
                     "vector query's candidates"),
           Knob("maxTextRecallSize", TEXT_RECALL_DEFAULT, 1, 10000, (10, 20, 50, 100, 1000),
                integer=True, note="hybridSearch.maxTextRecallSize (preview API): the text "
                                   "query's candidates, 1-10,000, default 1,000")),
    fidelity=(
        Fidelity("RRF: 1 / (rank + k) per result set, summed over the sets a document is in; "
                 "a document missing from a set gets nothing from it", EXACT, RANKING),
        Fidelity("k = 60, fixed", ASSUMED,
                 f"{RANKING} names 60 as the value RRF works best with and says k is a "
                 "constant of the algorithm; no request field sets it (" + SPEC + ")"),
        Fidelity("rank 1-based (the first result contributes 1 / 61)", ASSUMED,
                 "the reference says 'position in the list' without a base"),
        Fidelity("vector weight multiplies the vector query's reciprocal-rank score; default "
                 "1.0, > 0, float32", EXACT, f"{RANKING} 'Weighted scores'; {VECTOR_QUERY} "
                 f"'Vector weighting'; {SPEC}"),
        Fidelity("windows: the vector query's k nearest neighbours, the text query's top "
                 "maxTextRecallSize (1-10,000, default 1,000) matches; top cuts the fused list",
                 EXACT, f"{HYBRID_QUERY} 'Set maxTextRecallSize and countAndFacetMode'; {SPEC}"),
        Fidelity("k defaults to 50 when unspecified", ASSUMED,
                 f"{VECTOR_QUERY}: 'Both k and top are optional. When unspecified, the default "
                 "number of results in a response is 50'; the REST spec gives k no default"),
        Fidelity("cannot express: the RRF constant (fixed at 60), a text-side weight (implicit "
                 "1.0; only the vector weight and maxTextRecallSize move the balance), a weight "
                 "of 0 (weights must be > 0), and below the 2025-03-01-preview API a text "
                 "window other than 1,000", EXACT, f"{VECTOR_QUERY} 'Vector weighting'; {SPEC}"),
        Fidelity("the fused sum in float64", ASSUMED,
                 "the response's @search.score is float64 in the REST spec; the arithmetic is "
                 "not documented"),
        Fidelity("ties: the smaller doc id", ASSUMED,
                 "not documented; rrfbench breaks them by docid (Lucene's order when documents "
                 "are indexed in docid order)"),
        *COMMON),
    default_limit=10, exports={"azure": _export}, extra_defaults={"mode": "rrf"})
SPACES = (RRF,)
