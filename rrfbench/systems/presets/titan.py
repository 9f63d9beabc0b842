"""@titan-design/retrieval (TypeScript): FTS5 spans + vector + graph, ``fuseByRRF``.

Behaviour reproduced from the public source (HJewkes/titan-platform, ``packages/retrieval/src``:
``engine.ts``, ``fusion.ts``, ``retrievers/*.ts``), re-implemented, not copied:

* an empty or whitespace query returns nothing;
* every retriever is asked for ``limit x overfetch`` results (overfetch 3);
* the vector retriever drops matches below ``minSimilarity`` (off by default) and ranks what is
  left from 1;
* ``fuseByRRF``: ``w / (k + rank)`` (rank 1-based) over the retrievers in the order given
  (``retriever_order``, the README's fts, vector, graph by default); a stable sort, so ties
  keep first-seen order;
* ``minScore`` (when set, even to 0) drops fused results below it, then ``dropoff`` (when set)
  cuts after the largest relative drop between neighbours if that drop is at least the
  threshold: set to 0 it still cuts at the largest drop, so "off" and 0 differ; the first result
  always stays; then the cut to ``limit`` (10);
* the FTS query: runs of letters, digits and underscore, each quoted, OR-joined (``fts5:titan``).

Shipped: the README example, weights {vector 0.7, fts 0.3}, k 60 (the library default is
weight 1 each).
"""

from __future__ import annotations

from ...core.errors import InputError
from ...core.literals import comment_block, js_value, num
from .base import ASSUMED, EXACT, NOT_MODELLED, Fidelity, Knob, Preset, ranked

ORDER = ("fts", "vector", "graph")


def dropoff_cut(scores: list[float], threshold: float | None) -> int:
    """How many results survive titan's dropoff (``None`` = off): find the largest relative
    drop ``(s[i-1] - s[i]) / s[i-1]`` between neighbours (the first one on ties; neighbours
    after a non-positive score are skipped); cut before it when it is positive and at least
    ``threshold``. The first result always stays."""
    if threshold is None or len(scores) <= 1:
        return len(scores)
    best, cut = 0.0, -1
    for i in range(1, len(scores)):
        prev = scores[i - 1]
        if prev <= 0:
            continue
        drop = (prev - scores[i]) / prev
        if drop > best:
            best, cut = drop, i
    return cut if cut > 0 and best >= threshold else len(scores)


def _export(params: dict, prov: list[str]) -> str:
    opts = {"fusion": {"k": num(params["k"]), "weights": {"vector": num(params["vector_weight"]),
                                                          "fts": num(params["fts_weight"])}}}
    if params.get("overfetch", 3) != 3:
        opts["overfetch"] = num(params["overfetch"])
    if params.get("minScore") is not None:
        opts["minScore"] = num(params["minScore"])
    if params.get("dropoff") is not None:
        opts["dropoff"] = num(params["dropoff"])
    text = (comment_block("//", ["Tuned by rrfbench."] + prov)
            + "// options for createRetrievalEngine({ retrievers, ...retrievalOptions })\n"
            f"export const retrievalOptions = {js_value(opts)};\n")
    if params.get("minSimilarity") is not None:
        text += ("// vectorRetriever(embedder, index, { minSimilarity: "
                 f"{num(params['minSimilarity'])} }})\n")
    return text


class Titan(Preset):
    def depth(self, role, params, limit):
        return limit * int(params.get("overfetch", 3))

    def valid(self, params):
        return params["vector_weight"] > 0 or params["fts_weight"] > 0

    def skips_query(self, text):
        return text is not None and not text.strip()

    def filter_hits(self, role, hits, params):
        ms = params.get("minSimilarity")
        if role == "vector" and ms is not None:
            return [h for h in hits if h.score >= ms]
        return hits

    def check(self, params):
        super().check(params)
        order = params.get("retriever_order", ORDER)
        if sorted(order) != sorted(ORDER):
            raise InputError(f"retriever_order: {order!r} must order {', '.join(ORDER)}")

    def contributions(self, lists, params, limit):
        k = float(params["k"])
        weights = {"fts": float(params["fts_weight"]), "vector": float(params["vector_weight"]),
                   "graph": float(params.get("graph_weight", 1.0))}
        out: dict[str, dict[str, float]] = {}
        for role in params.get("retriever_order", ORDER):  # first seen wins ties
            for rank, h in enumerate(lists.get(role, []), 1):
                out.setdefault(h.docid, {})[role] = weights[role] / (k + rank)
        return out

    def finish(self, scores, params, limit, prior=None):
        out = ranked(scores, "stable")
        stage = {}
        if params.get("minScore") is not None:
            stage |= {d: "cut: minScore" for d, s in out if s < params["minScore"]}
            out = [x for x in out if x[1] >= params["minScore"]]
        if params.get("dropoff") is not None:
            keep = dropoff_cut([s for _, s in out], params["dropoff"])
            stage |= {d: "cut: dropoff" for d, _ in out[keep:]}
            out = out[:keep]
        stage |= {d: "cut: limit" for d, _ in out[limit:]}
        stage |= {d: "kept" for d, _ in out[:limit]}
        return out[:limit], stage


PRESET = Titan(
    name="titan", system="@titan-design/retrieval (TypeScript): FTS5 spans + vector + graph",
    streams={"fts": "fts5:titan", "vector": "dense"},
    full_streams={"fts": "fts5:titan;granularity=span", "vector": "dense",
                  "graph": "graph;seed=fts5:titan;hops=1"},
    knobs=(Knob("k", 60, 1, 1000, (1, 10, 20, 40, 60, 100)),
           Knob("vector_weight", 0.7, 0.0, 5.0, (0.0, 0.3, 0.5, 0.7, 1.0)),
           Knob("fts_weight", 0.3, 0.0, 5.0, (0.0, 0.3, 0.5, 0.7, 1.0)),
           Knob("overfetch", 3, 1, 20, (3,), integer=True, note="EngineOptions.overfetch"),
           Knob("minSimilarity", None, -1.0, 1.0, (None,), optional=True,
                note="vectorRetriever option"),
           Knob("minScore", None, 0.0, 1.0, (None,), optional=True),
           Knob("dropoff", None, 0.0, 1.0, (None,), optional=True,
                note="0 still cuts at the largest drop; off is None")),
    extra_defaults={"retriever_order": ORDER},
    fidelity=(
        Fidelity("fuseByRRF w / (k + rank), weights, k; stable first-seen ties over the "
                 "retrievers in the order given (retriever_order)", EXACT),
        Fidelity("limit x overfetch candidates per retriever; minSimilarity; minScore, dropoff "
                 "(0 differs from off), limit; empty query returns nothing", EXACT),
        Fidelity("FTS query: [\\p{L}\\p{N}_]+ runs, quoted, OR-joined (fts5:titan)", EXACT),
        Fidelity("shipped weights {vector 0.7, fts 0.3}", ASSUMED,
                 "the README example; the library default is weight 1 each"),
        Fidelity("FTS over spans, graph retriever", ASSUMED,
                 "modelled by fts5;granularity=span and the graph retriever (full_streams); "
                 "the two-stream form is the default"),
        Fidelity("cross-encoder rerank (Xenova/ms-marco-MiniLM-L-6-v2)", NOT_MODELLED,
                 "no cross-encoder weights can be installed here; the rerank stage is "
                 "modelled with any local model (rrfbench.retrievers.stages.rerank)"),
        Fidelity("fail-open timeouts", ASSUMED, "modelled by rrfbench.retrievers.stages.failopen, not in the preset"),
    ),
    exports={"titan": _export},
)
