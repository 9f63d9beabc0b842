"""ai-memory ``memory_query`` (Rust): FTS5 + entity-match + graph-neighbour + vector.

From the public source (akitaonrails/ai-memory, ``crates/ai-memory-store/src/reader.rs``,
``hybrid_search_inner``; re-implemented, not copied):

* every stream is asked for ``max(20, min(4 x limit, limit + 300))`` candidates
  (``authority_candidate_limit``: 40 at limit 10);
* unweighted ``1 / (60 + rank)`` (rank 1-based) over the FTS5, entity-match, graph-neighbour
  and (with an embedder) vector streams; the FTS stream is always on;
* the PageAuthority factor multiplies the fused score after fusion and is clamped to
  [0.55, 1.50] (``PageAuthority::from_stored``); here it comes from a per-document prior file
  (identity by default: collections have no page metadata);
* sort, ties by page path ascending (here: docid ascending), cut to the limit.
"""

from __future__ import annotations

from ...core.literals import comment_block
from .base import ASSUMED, EXACT, NOT_MODELLED, Fidelity, Knob, Preset, ranked

ROLES = ("fts5", "entity_match", "graph", "vector")
CLAMP = (0.55, 1.50)


def candidate_limit(limit: int) -> int:
    """``authority_candidate_limit``: max(20, min(4 x limit, limit + 300)); 0 for limit 0."""
    if limit <= 0:
        return 0
    return max(20, min(4 * limit, limit + 300))


def _export(params: dict, prov: list[str]) -> str:
    return (comment_block("//", ["Tuned by rrfbench."] + prov)
            + "// crates/ai-memory-store/src/reader.rs (the FTS5 stream is always on)\n"
            f"pub const RRF_K: f64 = {float(params.get('k', 60))!r};\n"
            f"pub const STREAM_VECTOR: bool = {str(bool(params['vector'])).lower()};\n"
            f"pub const STREAM_ENTITY_MATCH: bool = {str(bool(params.get('entity_match', True))).lower()};\n"
            f"pub const STREAM_GRAPH: bool = {str(bool(params.get('graph', True))).lower()};\n")


class AIMemory(Preset):
    def depth(self, role, params, limit):
        return candidate_limit(limit)

    def contributions(self, lists, params, limit):
        out: dict[str, dict[str, float]] = {}
        for role in ROLES:
            if role != "fts5" and not params.get(role, True):
                continue
            for rank, h in enumerate(lists.get(role, []), 1):
                out.setdefault(h.docid, {})[role] = 1.0 / (60 + rank)
        return out

    def finish(self, scores, params, limit, prior=None):
        stage = {}
        if prior:  # PageAuthority::adjust_rank: a clamped multiplier after fusion
            adj = {}
            for d, s in scores.items():
                f = min(max(prior.get(d, 1.0), CLAMP[0]), CLAMP[1])
                adj[d] = s * f
                if f != 1.0:
                    stage[d] = f"authority x{f:g}"
            scores = adj
        out = ranked(scores, "docid")
        for d, _ in out[:limit]:
            stage[d] = "kept" if d not in stage else f"kept ({stage[d]})"
        for d, _ in out[limit:]:
            stage[d] = "cut: limit"
        return out[:limit], stage


PRESET = AIMemory(
    name="ai-memory", system="ai-memory memory_query (Rust): FTS5 + entity + graph + vector",
    streams={"fts5": "fts5", "vector": "dense"},
    full_streams={"fts5": "fts5", "entity_match": "entity", "graph": "graph;seed=fts5+dense+entity;hops=1",
                  "vector": "dense"},
    knobs=(Knob("vector", True, grid=(True, False), note="on with an embedder configured"),
           Knob("entity_match", True, grid=(True,), note="used when the stream is given"),
           Knob("graph", True, grid=(True,), note="used when the stream is given"),
           Knob("k", 60, fixed=True, note="hard-coded in reader.rs")),
    fidelity=(
        Fidelity("RRF 1 / (60 + rank), unweighted; FTS5 always on", EXACT),
        Fidelity("candidates per stream max(20, min(4 x limit, limit + 300))", EXACT),
        Fidelity("PageAuthority multiplier after fusion, clamped to [0.55, 1.50]", EXACT),
        Fidelity("PageAuthority values", ASSUMED,
                 "a per-document prior file (identity by default): collections carry no page "
                 "kind, tier or tags"),
        Fidelity("tie order: page path ascending", ASSUMED, "docid ascending stands for the path"),
        Fidelity("entity-match and graph-neighbour streams", ASSUMED,
                 "modelled by the entity and graph retrievers (full_streams); the default "
                 "form fuses FTS5 and vector only"),
        Fidelity("LLM reranker", NOT_MODELLED),
    ),
    exports={"ai-memory": _export},
)
