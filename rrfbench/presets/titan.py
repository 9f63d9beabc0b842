"""@titan-design/retrieval (TypeScript): FTS5 spans + vector + graph, ``fuseByRRF``.

``w / (k + rank)`` (rank 1-based) over [fts, vector, graph] with ``3 x limit`` candidates from
every retriever; a stable sort, so ties keep first-seen order over the lists in the order
given; then the ``minScore`` filter, then ``dropoff`` (cut after the largest relative drop
between neighbours when it is >= the threshold; the first result always stays), then the cut
to ``limit`` (10). Shipped: the README example, weights {vector 0.7, fts 0.3}, k 60 (the
library default is weight 1 each).
"""

from __future__ import annotations

import numpy as np

from ..literals import comment_block, js_value, num
from .base import ASSUMED, EXACT, NOT_MODELLED, Fidelity, Knob, Preset, ranked


def dropoff_cut(scores: list[float], threshold: float | None) -> int:
    """How many results survive titan's dropoff: cut after the largest relative drop between
    neighbours, ``(s[i] - s[i+1]) / s[i]``, when it is >= ``threshold``; never below 1."""
    if threshold is None or threshold <= 0 or len(scores) < 2:
        return len(scores)
    drops = [(scores[i] - scores[i + 1]) / scores[i] if scores[i] > 0 else 0.0
             for i in range(len(scores) - 1)]
    i = int(np.argmax(drops))
    return i + 1 if drops[i] >= threshold else len(scores)


def _export(params: dict, prov: list[str]) -> str:
    opts = {"fusion": {"k": num(params["k"]), "weights": {"vector": num(params["vector_weight"]),
                                                          "fts": num(params["fts_weight"])}}}
    if params.get("minScore"):
        opts["minScore"] = num(params["minScore"])
    if params.get("dropoff"):
        opts["dropoff"] = num(params["dropoff"])
    return (comment_block("//", ["Tuned by rrfbench."] + prov)
            + "// options for createRetrievalEngine({ retrievers, ...retrievalOptions })\n"
            f"export const retrievalOptions = {js_value(opts)};\n")


class Titan(Preset):
    ORDER = ("fts", "vector", "graph")  # the README's retrievers list

    def depth(self, role, params, limit):
        return 3 * limit

    def valid(self, params):
        return params["vector_weight"] > 0 or params["fts_weight"] > 0

    def fuse_query(self, lists, params, limit, prior=None):
        k = float(params["k"])
        weights = {"fts": float(params["fts_weight"]), "vector": float(params["vector_weight"]),
                   "graph": float(params.get("graph_weight", 1.0))}
        scores: dict[str, float] = {}
        for role in self.ORDER:  # the retrievers, in the order given: first seen wins ties
            for rank, d in enumerate(lists.get(role, []), 1):
                scores[d] = scores.get(d, 0.0) + weights[role] / (k + rank)
        out = ranked(scores, "stable")
        if params.get("minScore"):
            out = [x for x in out if x[1] >= params["minScore"]]
        if params.get("dropoff"):
            out = out[:dropoff_cut([s for _, s in out], params["dropoff"])]
        return out[:limit]


PRESET = Titan(
    name="titan", system="@titan-design/retrieval (TypeScript): FTS5 spans + vector + graph",
    streams={"fts": "fts5", "vector": "dense"},
    knobs=(Knob("k", 60, 1, 1000, (1, 10, 20, 40, 60, 100)),
           Knob("vector_weight", 0.7, 0.0, 5.0, (0.0, 0.3, 0.5, 0.7, 1.0)),
           Knob("fts_weight", 0.3, 0.0, 5.0, (0.0, 0.3, 0.5, 0.7, 1.0)),
           Knob("minScore", 0.0, 0.0, 1.0, (0.0,)),
           Knob("dropoff", 0.0, 0.0, 1.0, (0.0,))),
    fidelity=(
        Fidelity("fuseByRRF w / (k + rank), weights, k", EXACT),
        Fidelity("3 x limit candidates per retriever; minScore, dropoff, limit", EXACT),
        Fidelity("tie order: stable sort, first seen over fts, vector, graph", EXACT),
        Fidelity("shipped weights {vector 0.7, fts 0.3}", ASSUMED,
                 "the README example; the library default is weight 1 each"),
        Fidelity("FTS over spans", NOT_MODELLED, "each document is one span here"),
        Fidelity("graph retriever", NOT_MODELLED),
        Fidelity("cross-encoder rerank", NOT_MODELLED),
        Fidelity("fail-open timeouts", NOT_MODELLED),
    ),
    exports={"titan": _export},
)
