"""MongoDB Atlas ``$rankFusion``: a ``$vectorSearch`` pipeline and a ``$search`` (Atlas Search,
BM25) pipeline fused by Reciprocal Rank Fusion in one aggregation stage. An Atlas service: not
run here, modelled from the server's public source and reference.

Read in the server's source (mongodb/mongo@94e8e6d56464,
``src/mongo/db/pipeline/document_source_rank_fusion.cpp``): each input pipeline's output gets a
rank by ``$rank`` over its order, then ``weight * (1 / (rank + rankConstant))`` in doubles
(``buildScoreAddFieldsStage``), with "For now, the rankConstant is always 60"; the documents of
all pipelines are grouped by ``_id`` and their scores added (a document missing from a
pipeline adds nothing), then sorted ``{score: descending, _id: 1}``. Weights
(``combination.weights``, one per pipeline name) are non-negative numbers, 1 when left out
(``document_source_hybrid_scoring_util.cpp`` at 5efa5f9ffbc3: ``validateWeights``,
``getPipelineWeight``). The reference's worked example agrees: two pipelines at rank 1 with
weights 0.5 score 0.01639344262295082 = 0.5/61 + 0.5/61, so ranks are 1-based.

Each pipeline's window is its own: ``$vectorSearch``'s ``limit`` (required; ``numCandidates``
the ANN's candidates, at most 10,000) and a ``$limit`` after ``$search`` (without one,
``$search`` returns every match). A ``$limit`` after ``$rankFusion`` cuts the fused list.
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
    fidelity_common,
    rrf_contributions,
)

VERSION = ("MongoDB 8.0+ / Atlas $rankFusion (mongodb/mongo@94e8e6d56464); not run against a "
           "live engine")
RANK_CONSTANT = 60
SOURCE = ("mongodb/mongo@94e8e6d56464 src/mongo/db/pipeline/document_source_rank_fusion.cpp")
UTIL = ("mongodb/mongo@5efa5f9ffbc3 src/mongo/db/pipeline/"
        "document_source_hybrid_scoring_util.cpp")
DOCS = "https://www.mongodb.com/docs/manual/reference/operator/aggregation/rankFusion/"


def _num(v):
    return num(float(v))


def _export(params: dict, prov: list[str]) -> str:
    vec_limit, key_limit = int(params["vector_limit"]), int(params["keyword_limit"])
    pipeline = [
        {"$rankFusion": {
            "input": {"pipelines": {
                "vector": [{"$vectorSearch": {
                    "index": "vector_index", "path": "embedding",
                    "queryVector": "<dense query vector>",
                    "numCandidates": min(10000, 20 * vec_limit), "limit": vec_limit}}],
                "keyword": [{"$search": {"index": "default",
                                         "text": {"query": "<query text>", "path": "text"}}},
                            {"$limit": key_limit}]}},
            "combination": {"weights": {"vector": _num(params["vector_weight"]),
                                        "keyword": _num(params["keyword_weight"])}}}},
        {"$limit": 10},
    ]
    return json.dumps({"_comment": [
        "db.<collection>.aggregate(pipeline)",
        f"verified against {VERSION}",
        f"the RRF constant is always {RANK_CONSTANT} (no field sets it); numCandidates is the "
        "ANN's candidate count, not modelled (rrfbench's dense run is exact)",
        *prov], "pipeline": pipeline}, indent=2) + "\n"


class MongoRankFusion(EngineSpace):
    engine, mode, version, live, ties = "mongodb", "rrf", VERSION, False, "docid"

    def depth(self, role, params, limit):
        return int(params["vector_limit"] if role == "vector" else params["keyword_limit"])

    def contributions(self, lists, params, limit):
        c = int(params["rank_constant"])
        return rrf_contributions(self, lists, params, lambda p, w, _: (1.0 / ((p + 1) + c)) * w)


COMMON = fidelity_common(False, "BM25 (bm25s, Lucene's formula; Atlas Search scores with "
                                "Lucene's BM25)")
RRF = MongoRankFusion(
    name="mongodb-rrf", system=f"MongoDB Atlas $rankFusion ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"},
    knobs=(Knob("rank_constant", RANK_CONSTANT, RANK_CONSTANT, RANK_CONSTANT, (), fixed=True,
                integer=True, note="$rankFusion's RRF constant is always 60; no field sets it"),
           Knob("vector_weight", 1.0, 0.0, 100.0, (0.5, 1.0, 2.0),
                note="combination.weights.vector: >= 0, default 1 (rrfbench's upper end 100)"),
           Knob("keyword_weight", 1.0, 0.0, 100.0, (0.5, 1.0, 2.0),
                note="combination.weights.keyword: >= 0, default 1"),
           Knob("vector_limit", 10, 1, 10000, (10, 20, 50, 100), integer=True,
                note="$vectorSearch.limit (required; <= numCandidates <= 10,000)"),
           Knob("keyword_limit", 10, 1, 10000, (10, 20, 50, 100), integer=True,
                note="the $limit after $search (without one, every match enters)")),
    fidelity=(
        Fidelity("weight x 1 / (60 + rank) per pipeline, summed in doubles; a document missing "
                 "from a pipeline adds nothing", EXACT,
                 f"{SOURCE} buildScoreAddFieldsStage, calculateFinalScoreMetadata"),
        Fidelity("rank 1-based over each pipeline's output order", EXACT,
                 f"{DOCS}: scoreDetails example 0.5/61 + 0.5/61 = 0.01639344262295082 at rank 1"),
        Fidelity("weights: non-negative, 1 for a pipeline left out of combination.weights; "
                 "weight 0 keeps the pipeline's documents at 0", EXACT,
                 f"{UTIL} validateWeights, getPipelineWeight"),
        Fidelity("ties: fused score descending, then _id ascending", EXACT,
                 f"{SOURCE} buildScoreAndMergeStages ($sort score, _id: 1); exact when _id is "
                 "the docid string (BSON compares strings bytewise)"),
        Fidelity("windows: $vectorSearch.limit and the keyword pipeline's $limit; the final "
                 "$limit cuts the fused list", EXACT, f"{SOURCE}; {DOCS}"),
        Fidelity("cannot express: the RRF constant (always 60), a per-pipeline constant, a "
                 "score-based (normalised) fusion (that is $scoreFusion, a different stage)",
                 EXACT, f"{SOURCE}: 'For now, the rankConstant is always 60'"),
        Fidelity("each position in a pipeline's output has its own rank, tied input scores "
                 "included", ASSUMED,
                 f"{SOURCE} ranks by $rank over a placeholder sort key (TODO SERVER-98562); "
                 "how documents with equal $search or $vectorSearch scores are ordered and "
                 "ranked is not documented"),
        *COMMON),
    default_limit=10, exports={"mongodb": _export}, extra_defaults={"mode": "rrf"})
SPACES = (RRF,)
