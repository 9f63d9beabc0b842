"""OpenSearch search pipelines over a ``hybrid`` query (a ``knn`` and a ``match`` clause):
the ``normalization-processor`` and, for RRF, the ``score-ranker-processor``.

From the documentation (2.19 / 3.x) and the neural-search plugin's techniques as documented:
each clause returns its top ``size`` (``window``, 10); ``min_max`` maps a clause's scores to
``(s - min) / (max - min)``, a 0 to 0.001 and a lone score to 1; ``l2`` to ``s / sqrt(sum
s^2)``; ``arithmetic_mean`` is ``sum w s / sum w`` over the clauses (a missing clause scores 0
and still counts), ``geometric_mean`` ``exp(sum w ln s / sum w)`` and ``harmonic_mean``
``sum w / sum w / s`` over the clauses a document has a positive score in; weights default to
equal. RRF: ``1 / (rank_constant + rank)``, rank 1-based, rank_constant 60. Scores in float32;
a ``knn`` cosinesimil score is ``(1 + cos) / 2`` (Lucene engine); ties: the smaller doc id.

Read in the neural-search plugin's source (``opensearch-project/neural-search``):
``z_score`` normalization (since 2025-03; ``src/main/java/org/opensearch/neuralsearch/processor/
normalization/ZScoreNormalizationTechnique.java`` at 00be31218415): per clause the mean and the
sample standard deviation of its scores (commons-math ``DescriptiveStatistics``, as float32);
a score equal to the mean becomes the clause's raw maximum, a clause without spread gives its
raw minimum, otherwise ``(s - mean) / sd``, and a result <= 0 becomes 0.001. RRF takes
``parameters.weights`` (since 2025-05, 3.1+): ``sum w / (rank_constant + rank)``
(``combination/RRFScoreCombinationTechnique.java``, cited in ``../shared/engines-source-check.md``
at 936d3c4d7feb).
"""

from __future__ import annotations

import json
import math

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
)

VERSION = "OpenSearch 3.x (search pipelines; not run against a live engine)"
NORMS = ("min_max", "l2", "z_score")
COMBOS = ("arithmetic_mean", "geometric_mean", "harmonic_mean")


def os_minmax(scores: list[float]) -> list[float]:
    if not scores:
        return []
    s = [f32(x) for x in scores]
    lo, hi = min(s), max(s)
    out = []
    for x in s:
        if hi == lo and x == hi:
            out.append(1.0)
            continue
        v = f32((x - lo) / (hi - lo)) if hi > lo else 0.0
        out.append(0.001 if v == 0.0 else v)
    return out


def os_zscore(scores: list[float]) -> list[float]:
    """``ZScoreNormalizationTechnique`` on one clause's scores (see the module docstring)."""
    if not scores:
        return []
    s = [f32(x) for x in scores]
    n = len(s)
    mean64 = sum(s) / n
    mean = f32(mean64)
    sd = f32(math.sqrt(sum((x - mean64) ** 2 for x in s) / (n - 1))) if n > 1 else 0.0
    hi, lo = max(s), min(s)
    out = []
    for x in s:
        if x == mean:
            out.append(hi)
        elif sd == 0.0:
            out.append(lo)
        else:
            z = f32(f32(x - mean) / sd)
            out.append(0.001 if z <= 0.0 else z)
    return out


def _pipeline(params: dict) -> dict:
    if params.get("mode") == "rrf":
        return {"phase_results_processors": [{"score-ranker-processor": {"combination": {
            "technique": "rrf", "rank_constant": int(params["rank_constant"]),
            "parameters": {"weights": [num(params["vector_weight"]),
                                       num(params["keyword_weight"])]}}}}]}
    return {"phase_results_processors": [{"normalization-processor": {
        "normalization": {"technique": params["normalization"]},
        "combination": {"technique": params["combination"], "parameters": {
            "weights": [num(params["vector_weight"]), num(params["keyword_weight"])]}}}}]}


def _export(params: dict, prov: list[str]) -> str:
    size = int(params["window"])
    query = {"size": size, "query": {"hybrid": {"queries": [
        {"knn": {"embedding": {"vector": "<dense query vector>", "k": size}}},
        {"match": {"text": {"query": "<query text>"}}}]}}}
    return json.dumps({"_comment": [f"verified against {VERSION}", *prov],
                       "search_pipeline": {"PUT /_search/pipeline/rrfbench-hybrid":
                                           _pipeline(params)},
                       "search": {"GET /<index>/_search?search_pipeline=rrfbench-hybrid": query}},
                      indent=2) + "\n"


class OSNormalization(EngineSpace):
    engine, mode, version, ties = "opensearch", "normalization", VERSION, "docid"
    round32 = sum32 = True

    def vector_score(self, cos):
        return (1.0 + cos) / 2.0

    def valid(self, params):
        return convex_valid(params)

    def contributions(self, lists, params, limit):
        norm = {"min_max": os_minmax, "z_score": os_zscore,
                "l2": lambda s: [f32(x) for x in l2([f32(v) for v in s])]}[params["normalization"]]
        out: dict[str, dict[str, float]] = {}
        for role in self.order(params):
            hits = lists.get(role, [])
            for h, s in zip(hits, norm(self.role_scores(role, hits)), strict=True):
                out.setdefault(h.docid, {})[role] = s
        return out

    def combine(self, contribs, params):
        ws = {r: float(params[f"{r}_weight"]) for r in self.order(params)}
        tech = params["combination"]
        if tech == "arithmetic_mean":
            total = sum(ws.values())
            return f32(sum(ws[r] * contribs.get(r, 0.0) for r in ws) / total) if total else 0.0
        present = [r for r in ws if contribs.get(r, 0.0) > 0]
        wsum = sum(ws[r] for r in present)
        if not present or wsum == 0:
            return 0.0
        if tech == "geometric_mean":
            return f32(math.exp(sum(ws[r] * math.log(contribs[r]) for r in present) / wsum))
        return f32(wsum / sum(ws[r] / contribs[r] for r in present))


class OSRRF(EngineSpace):
    engine, mode, version, ties = "opensearch", "rrf", VERSION, "docid"
    round32 = sum32 = True

    def valid(self, params):
        return convex_valid(params)   # weights in [0, 1] summing to 1, as OpenSearch checks

    def contributions(self, lists, params, limit):
        k = int(params["rank_constant"])
        return rrf_contributions(self, lists, params,
                                 lambda p, w, _: f32(w * f32(1.0 / (k + p + 1))))


COMMON = fidelity_common(False)
DOCS = Fidelity("the techniques' formulas and edge cases", ASSUMED,
                "min_max, l2 and the means from OpenSearch's documentation (matching "
                "opensearch-project/neural-search@936d3c4d7feb per ../shared/engines-source-check.md)")
ZS = Fidelity("z_score: sample sd, mean -> raw max, no spread -> raw min, <= 0 -> 0.001", EXACT,
              "opensearch-project/neural-search@00be31218415 src/main/java/org/opensearch/"
              "neuralsearch/processor/normalization/ZScoreNormalizationTechnique.java")
RRF_W = Fidelity("rrf: sum w / (rank_constant + rank), weights in [0, 1] summing to 1 (3.1+)",
                 ASSUMED, "RRFScoreCombinationTechnique per ../shared/engines-source-check.md "
                 "(neural-search@936d3c4d7feb); with equal weights the ranking of older versions")
TIES = Fidelity("ties: the smaller doc id", ASSUMED, "rrfbench breaks them by docid")
NORMALIZATION = OSNormalization(
    name="opensearch-normalization",
    system=f"OpenSearch hybrid query + normalization-processor ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"},
    knobs=knobs_convex(10, 0.5, "window", (
        Knob("normalization", "min_max", grid=NORMS),
        Knob("combination", "arithmetic_mean", grid=COMBOS))),
    fidelity=(DOCS, ZS, TIES, *COMMON), default_limit=10, exports={"opensearch": _export},
    extra_defaults={"mode": "normalization"})
RRF = OSRRF(
    name="opensearch-rrf", system=f"OpenSearch hybrid query + score-ranker-processor rrf ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"},
    knobs=(knobs_rrf("rank_constant", 60, 10, weights=False)[0],
           *knobs_convex(10, 0.5, "window")),
    fidelity=(DOCS, RRF_W, TIES, *COMMON), default_limit=10, exports={"opensearch": _export},
    extra_defaults={"mode": "rrf"})
SPACES = (NORMALIZATION, RRF)
