"""Vespa: a global-phase rank expression over ``bm25(text)`` and ``closeness(field,
embedding)``: ``reciprocal_rank_fusion(...)`` or ``normalize_linear(...)``.

From Vespa's documentation: the global phase re-ranks the ``rerank-count`` best documents of
the first phase (100); ``reciprocal_rank_fusion(a, b)`` adds ``1 / (60 + rank)`` of each input
over those documents (rank 1-based); ``normalize_linear(x)`` min-max normalises x over them; the
rank profile weighs them. rrfbench models the window as each list's top ``rerank_count`` and a
document missing from a list as adding nothing.
"""

from __future__ import annotations

from ..literals import comment_block, num
from .base import (
    ASSUMED,
    EngineSpace,
    Fidelity,
    Knob,
    convex_valid,
    fidelity_common,
    knobs_convex,
    minmax,
    rrf_contributions,
    score_contributions,
)

VERSION = "Vespa 8 (rank profiles; not run against a live engine)"


def _export(params: dict, prov: list[str]) -> str:
    n = int(params["rerank_count"])
    if params.get("mode") == "rrf":
        expr = "reciprocal_rank_fusion(bm25(text), closeness(field, embedding))"
    else:
        expr = (f"{num(params['vector_weight'])} * normalize_linear(closeness(field, embedding)) "
                f"+ {num(params['keyword_weight'])} * normalize_linear(bm25(text))")
    return (comment_block("#", ["Tuned by rrfbench.", f"verified against {VERSION}"] + prov)
            + "rank-profile hybrid inherits default {\n"
            "    inputs { query(q) tensor<float>(x[384]) }\n"
            "    first-phase { expression: bm25(text) + closeness(field, embedding) }\n"
            "    global-phase {\n"
            f"        rerank-count: {n}\n"
            f"        expression: {expr}\n"
            "    }\n}\n")


class VespaRRF(EngineSpace):
    engine, mode, version, ties, window_knob = "vespa", "rrf", VERSION, "docid", "rerank_count"

    def contributions(self, lists, params, limit):
        return rrf_contributions(self, lists, params, lambda p, w, _: 1.0 / (60 + p + 1))


class VespaLinear(EngineSpace):
    engine, mode, version, ties, window_knob = "vespa", "linear", VERSION, "docid", \
        "rerank_count"

    def valid(self, params):
        return convex_valid(params)

    def contributions(self, lists, params, limit):
        return score_contributions(self, lists, params, minmax)


COMMON = fidelity_common(False)
DOCS = Fidelity("the global-phase window as each list's top rerank-count; missing adds 0; "
                "ties", ASSUMED, "Vespa ranks every document of the window on both features")
RRF = VespaRRF(
    name="vespa-rrf", system=f"Vespa global-phase reciprocal_rank_fusion ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"},
    knobs=(Knob("rerank_count", 100, 1, 10000, (10, 20, 50, 100), integer=True),),
    fidelity=(DOCS, *COMMON), default_limit=10, exports={"vespa": _export},
    extra_defaults={"mode": "rrf"})
LINEAR = VespaLinear(
    name="vespa-linear", system=f"Vespa global-phase normalize_linear ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"}, knobs=knobs_convex(100, 0.5, "rerank_count"),
    fidelity=(DOCS, *COMMON), default_limit=10, exports={"vespa": _export},
    extra_defaults={"mode": "linear"})
SPACES = (RRF, LINEAR)
