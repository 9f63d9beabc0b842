"""Elasticsearch's retrievers: ``rrf`` and ``linear`` over a ``knn`` and a ``standard`` (BM25)
retriever.

From the public source (``x-pack/plugin/rank-rrf``: ``RRFRetrieverBuilder``,
``LinearRetrieverBuilder``, ``MinMaxScoreNormalizer``, ``L2ScoreNormalizer``) and the 9.x
reference: each inner retriever returns its top ``rank_window_size`` (default: the request's
``size``, 10); ``rrf`` adds ``weight / (rank_constant + rank)`` (rank 1-based, rank_constant
60, weights 1 by default; per-retriever weights since 9.1) in float32; ``linear`` adds
``weight x normalizer(score)`` in float32 (``none``, ``minmax``: ``(s - min) / (max - min)``,
min and max within 1e-6 (one hit, or no spread) -> 1.0 each; ``l2_norm``: ``s / sqrt(sum
s^2)``); a document missing from a retriever adds 0; ties go to the smaller Lucene doc id. A
``knn`` cosine score is ``(1 + cos) / 2``.

``minmax`` with no spread: 1.0 since PR #128689 (merged 2025-06-02; 8.18.3+, 9.0.3+, 9.1+), read
in ``x-pack/plugin/rank-rrf/src/main/java/org/elasticsearch/xpack/rank/linear/
MinMaxScoreNormalizer.java`` at elastic/elasticsearch@a7776012b20a (``minEqualsMax`` ->
``score = 1.0f``; ``EPSILON = 1e-6f``). 8.18.0-8.18.2 and 9.0.0-9.0.2 gave the minimum instead;
that older rule is :func:`es_minmax` with ``no_spread="minimum"``, the mode's version range
``8.18.0-8.18.2`` (``--set engine_version=8.18.0-8.18.2``; ``export --engine-version``); the
default, ``8.18.3+``, stands for 8.18.3-8.19.x, 9.0.3+ and 9.1+.
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
    convex_valid,
    f32,
    fidelity_common,
    knobs_convex,
    knobs_rrf,
    l2,
    rrf_contributions,
    score_contributions,
)

VERSION = "Elasticsearch 9.1 (8.18.3+, 9.0.3+; retriever API; not run against a live engine)"
NORMALIZERS = ("none", "minmax", "l2_norm")


def es_minmax(scores: list[float], no_spread: str = "one") -> list[float]:
    """``MinMaxScoreNormalizer``: float32; min and max within 1e-6: 1.0 each (``no_spread``
    ``"one"``, 8.18.3+ / 9.0.3+ / 9.1+) or the minimum each (``"minimum"``: 8.18.0-8.18.2,
    9.0.0-9.0.2)."""
    if not scores:
        return []
    s = [f32(x) for x in scores]
    lo, hi = min(s), max(s)
    if abs(lo - hi) < 1e-6:
        return [1.0 if no_spread == "one" else lo] * len(s)
    return [f32((x - lo) / (hi - lo)) for x in s]


def es_l2(scores: list[float]) -> list[float]:
    return [f32(x) for x in l2([f32(x) for x in scores])]


def _inner(role: str, window: int) -> dict:
    if role == "vector":
        return {"knn": {"field": "embedding", "query_vector": "<dense query vector>",
                        "k": window, "num_candidates": max(100, window)}}
    return {"standard": {"query": {"match": {"text": "<query text>"}}}}


def _export(params: dict, prov: list[str]) -> str:
    window = int(params["rank_window_size"])
    if params.get("mode", "rrf") == "rrf":
        body = {"rrf": {"retrievers": [
            {"retriever": _inner(r, window), "weight": num(params[f"{r}_weight"])}
            for r in ("vector", "keyword")],
            "rank_constant": int(params["rank_constant"]), "rank_window_size": window}}
    else:
        body = {"linear": {"retrievers": [
            {"retriever": _inner(r, window), "weight": num(params[f"{r}_weight"]),
             "normalizer": params["normalizer"]} for r in ("vector", "keyword")],
            "rank_window_size": window}}
    return json.dumps({"_comment": ["POST /<index>/_search", f"verified against {VERSION}",
                                    *prov], "retriever": body, "size": 10}, indent=2) + "\n"


class ESRRF(EngineSpace):
    engine, mode, version, ties, window_knob = "elasticsearch", "rrf", VERSION, \
        "docid", "rank_window_size"
    round32 = sum32 = True

    def contributions(self, lists, params, limit):
        k = int(params["rank_constant"])
        return rrf_contributions(self, lists, params,
                                 lambda p, w, _: f32(w * f32(1.0 / (k + p + 1))))


LINEAR_VERSIONS = ("8.18.3+", "8.18.0-8.18.2")   # minmax without spread: 1.0 / the minimum


class ESLinear(EngineSpace):
    engine, mode, version, ties, window_knob = "elasticsearch", "linear", VERSION, \
        "docid", "rank_window_size"
    round32 = sum32 = True
    versions = LINEAR_VERSIONS

    def vector_score(self, cos):
        return (1.0 + cos) / 2.0

    def valid(self, params):
        return convex_valid(params)

    def contributions(self, lists, params, limit):
        no_spread = "one" if self.version_of(params) == LINEAR_VERSIONS[0] else "minimum"
        norm = {"none": lambda s: [f32(x) for x in s],
                "minmax": lambda s: es_minmax(s, no_spread),
                "l2_norm": es_l2}[params["normalizer"]]
        out = score_contributions(self, lists, params, norm)
        return {d: {r: f32(v) for r, v in c.items()} for d, c in out.items()}


COMMON = fidelity_common(False)
TIES = Fidelity("ties: the smaller Lucene doc id", ASSUMED,
                "rrfbench breaks them by docid (indexing in docid order gives the same)")
RRF = ESRRF(
    name="elasticsearch-rrf", system=f"Elasticsearch rrf retriever ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"},
    knobs=knobs_rrf("rank_constant", 60, 10, window_name="rank_window_size"),
    fidelity=(Fidelity("weight / (rank_constant + rank), rank 1-based, float32", EXACT,
                       "elastic/elasticsearch x-pack/plugin/rank-rrf/src/main/java/org/"
                       "elasticsearch/xpack/rank/rrf/RRFRetrieverBuilder.java "
                       "combineInnerRetrieverResults ('value.score += weights[findex] * (1.0f / "
                       "(rankConstant + frank))', DEFAULT_RANK_CONSTANT = 60), the version with "
                       "per-retriever weights as the source index holds it (listed at "
                       "elastic/elasticsearch@4b066361dd48; not tied to one commit)"),
              Fidelity("rank_window_size: each retriever's top N (default size 10)", EXACT),
              TIES, *COMMON),
    default_limit=10, exports={"elasticsearch": _export}, extra_defaults={"mode": "rrf"})
LINEAR = ESLinear(
    name="elasticsearch-linear", system=f"Elasticsearch linear retriever ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"},
    knobs=knobs_convex(10, 0.5, "rank_window_size",
                       (Knob("normalizer", "none", grid=NORMALIZERS,
                             note="per retriever; rrfbench uses one for both"),)),
    fidelity=(Fidelity("weight x normalizer(score) summed in float32, missing adds 0", EXACT),
              Fidelity("minmax: min and max within 1e-6 -> 1.0 (engine_version 8.18.3+: 8.18.3+, "
                       "9.0.3+, 9.1+), the minimum (engine_version 8.18.0-8.18.2: also 9.0.0-"
                       "9.0.2); l2_norm: s / sqrt(sum s^2)", EXACT,
                       "elastic/elasticsearch@a7776012b20a x-pack/plugin/rank-rrf/src/main/java/"
                       "org/elasticsearch/xpack/rank/linear/MinMaxScoreNormalizer.java"),
              Fidelity("knn cosine score (1 + cos) / 2", EXACT), TIES, *COMMON),
    default_limit=10, exports={"elasticsearch": _export},
    extra_defaults={"mode": "linear", "engine_version": LINEAR_VERSIONS[0]})
SPACES = (RRF, LINEAR)
