"""Vertex AI Vector Search hybrid queries: one ``FindNeighbors`` query with a dense and a sparse
embedding, fused by Reciprocal Rank Fusion with a weight ``alpha``. A cloud service: not run
here, modelled from its public reference, and much of it is not stated there.

What the reference says (API ``FindNeighborsRequest.Query.RRF``, v1, updated 2026-04-01; the
Python SDK googleapis/python-aiplatform@ce65eab2fd41
``google/cloud/aiplatform/matching_engine/matching_engine_index_endpoint.py``):

- ``rrf.alpha`` (``HybridQuery.rrf_ranking_alpha`` in the SDK), a float (float32 on the wire):
  "Users can provide an alpha value to give more weight to dense vs sparse results. For
  example, if the alpha is 0, we only return sparse and if the alpha is 1, we only return
  dense." The API marks it Required inside ``rrf``; the SDK's docstring calls it "the ratio for
  sparse v.s. dense embeddings returned in the query result" and sends no ``rrf`` at all when
  ``rrf_ranking_alpha`` is None *or 0* (``if query.rrf_ranking_alpha:``).
- ``neighbor_count`` (the SDK's ``num_neighbors``, default 10) is the number of neighbours the
  query returns; there is no per-leg count.

What it does not say, and rrfbench assumes (each marked in the fidelity list): the formula
between the endpoints, read as the weighted RRF ``alpha / (60 + dense rank) + (1 - alpha) /
(60 + sparse rank)`` with 1-based ranks and the customary constant 60; that each leg
contributes its top ``neighbor_count``; alpha 0.5 when none is given (the default Vertex AI
RAG Engine documents for its own hybrid search); the sum in float64; ties in the order the
lists are read (dense first). At alpha 1 (0) only the dense (sparse) list is fused, as the
reference states.
"""

from __future__ import annotations

import json

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

VERSION = ("Vertex AI Vector Search v1 FindNeighbors hybrid query (API reference updated "
           "2026-04-01; google-cloud-aiplatform@ce65eab2); not run against a live engine")
RRF_K = 60
API_REF = ("https://cloud.google.com/python/docs/reference/aiplatform/latest/"
           "google.cloud.aiplatform_v1.types.FindNeighborsRequest.Query.RRF")
SDK = ("googleapis/python-aiplatform@ce65eab2fd41 google/cloud/aiplatform/matching_engine/"
       "matching_engine_index_endpoint.py")
RAG_ALPHA = ("https://cloud.google.com/dotnet/docs/reference/Google.Cloud.AIPlatform.V1Beta1/"
             "latest/Google.Cloud.AIPlatform.V1Beta1.RagRetrievalConfig.Types.HybridSearch")
ALPHA_GRID = tuple(round(0.1 * i, 1) for i in range(1, 11))   # 0 left out: the SDK drops it


def alpha_of(params: dict) -> float:
    """The query's alpha as the service receives it (a float32)."""
    return f32(float(params["rrf_ranking_alpha"]))


def _export(params: dict, prov: list[str]) -> str:
    a, n = float(params["rrf_ranking_alpha"]), int(params["num_neighbors"])
    rest = {"deployedIndexId": "<deployed index id>", "queries": [{
        "datapoint": {"featureVector": "<dense query vector>",
                      "sparseEmbedding": {"values": "<term weights>",
                                          "dimensions": "<term ids>"}},
        "neighborCount": n, "rrf": {"alpha": a}}]}
    python = {"HybridQuery": {"dense_embedding": "<dense query vector>",
                              "sparse_embedding_values": "<term weights>",
                              "sparse_embedding_dimensions": "<term ids>",
                              "rrf_ranking_alpha": a},
              "find_neighbors": {"deployed_index_id": "<deployed index id>",
                                 "queries": ["<the HybridQuery>"], "num_neighbors": n}}
    notes = [f"verified against {VERSION}",
             f"RRF constant: not a request field (rrfbench assumes {RRF_K})"]
    if a == 0.0:
        notes.append("rrf_ranking_alpha 0: the Python SDK sends no rrf for a falsy alpha; send "
                     "the REST body (rrf.alpha 0) to get sparse-only results")
    return json.dumps({
        "_comment": ["POST https://<public endpoint domain>/v1/projects/<project>/locations/"
                     "<region>/indexEndpoints/<endpoint>:findNeighbors", *notes, *prov],
        "findNeighbors": rest,
        "python_sdk": python}, indent=2) + "\n"


class VertexRRF(EngineSpace):
    engine, mode, version, live, ties = "vertex", "rrf", VERSION, False, "stable"

    def depth(self, role, params, limit):
        return int(params["num_neighbors"])

    def weight(self, role, params):
        a = alpha_of(params)
        return a if role == "vector" else 1.0 - a

    def order(self, params):
        a = alpha_of(params)
        if a >= 1.0:
            return ("vector",)        # "if the alpha is 1, we only return dense"
        if a <= 0.0:
            return ("keyword",)       # "if the alpha is 0, we only return sparse"
        return ("vector", "keyword")

    def contributions(self, lists, params, limit):
        k = int(params["rrf_k"])
        return rrf_contributions(self, lists, params, lambda p, w, _: w / (k + p + 1))

    def finish(self, scores, params, limit, prior=None):
        # the query returns neighbor_count neighbours; rrfbench scores at most `limit` of them
        return super().finish(scores, params, min(limit, int(params["num_neighbors"])), prior)


COMMON = fidelity_common(False, "BM25 (bm25s, Lucene's formula), standing in for a sparse "
                                "embedding with BM25 weights")
RRF = VertexRRF(
    name="vertex-rrf", system=f"Vertex AI Vector Search hybrid query, RRF ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"},
    knobs=(Knob("rrf_k", RRF_K, RRF_K, RRF_K, (), fixed=True, integer=True,
                note="not a request field; its value is not documented (60 assumed)"),
           Knob("rrf_ranking_alpha", 0.5, 0.0, 1.0, ALPHA_GRID,
                note="rrf.alpha: 1 dense only, 0 sparse only; 0.5 assumed when none is sent"),
           Knob("num_neighbors", 10, 1, 10000, (10, 20, 50, 100), integer=True,
                note="neighbor_count (find_neighbors num_neighbors, default 10): the results "
                     "and, assumed, each leg's candidates")),
    fidelity=(
        Fidelity("alpha weighs dense against sparse; alpha 1 returns dense results only, "
                 "alpha 0 sparse only", EXACT, f"{API_REF}; {SDK} HybridQuery"),
        Fidelity("between the endpoints: alpha / (60 + dense rank) + (1 - alpha) / (60 + sparse "
                 "rank), rank 1-based, a document missing from a list adds nothing", ASSUMED,
                 "the reference gives neither the formula nor the constant; the SDK's "
                 "docstring ('the ratio for sparse v.s. dense embeddings returned') also reads "
                 "as alpha setting each leg's share of the results, which is not modelled"),
        Fidelity("each leg contributes its top neighbor_count; the response holds "
                 "neighbor_count neighbours", ASSUMED,
                 f"{SDK} find_neighbors sends one neighbor_count per query (default 10); how "
                 "many candidates each leg fuses is not documented"),
        Fidelity("alpha 0.5 when none is given", ASSUMED,
                 f"the API marks rrf.alpha Required and {SDK} sends no rrf when "
                 f"rrf_ranking_alpha is None or 0; 0.5 is the documented default of Vertex AI "
                 f"RAG Engine's hybrid alpha ({RAG_ALPHA})"),
        Fidelity("alpha as a float32; the sum in float64", ASSUMED,
                 "alpha is a proto float; the service's arithmetic is not documented"),
        Fidelity("cannot express: the RRF constant, separate weights for the two legs (one "
                 "alpha, the other leg gets 1 - alpha), a window per leg, and alpha 0 through "
                 "the Python SDK (dropped as falsy)", EXACT, f"{API_REF}; {SDK}"),
        Fidelity("ties: dense list first, then position (a stable sort)", ASSUMED,
                 "not documented"),
        *COMMON),
    default_limit=10, exports={"vertex": _export}, extra_defaults={"mode": "rrf"})
SPACES = (RRF,)
