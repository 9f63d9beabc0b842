"""ai-memory ``memory_query`` (Rust): FTS5 + entity-match + graph-neighbour + vector.

Unweighted ``1 / (60 + rank)`` (rank 1-based), k hard-coded; the PageAuthority multiplier is
applied after fusion (here a per-document prior file, identity by default); sort, cut to limit.
"""

from __future__ import annotations

from ..literals import comment_block
from .base import ASSUMED, EXACT, NOT_MODELLED, Fidelity, Knob, Preset, ranked

ROLES = ("fts5", "entity_match", "graph", "vector")


def _export(params: dict, prov: list[str]) -> str:
    return (comment_block("//", ["Tuned by rrfbench."] + prov)
            + "// crates/ai-memory-store/src/reader.rs\n"
            f"pub const RRF_K: f64 = {float(params.get('k', 60))!r};\n"
            f"pub const STREAM_FTS5: bool = {str(bool(params['fts5'])).lower()};\n"
            f"pub const STREAM_VECTOR: bool = {str(bool(params['vector'])).lower()};\n")


class AIMemory(Preset):
    def valid(self, params):
        return bool(params["fts5"] or params["vector"])

    def fuse_query(self, lists, params, limit, prior=None):
        scores: dict[str, float] = {}
        for role in ROLES:
            if not params.get(role, role in lists):
                continue
            for rank, d in enumerate(lists.get(role, []), 1):
                scores[d] = scores.get(d, 0.0) + 1.0 / (60 + rank)
        if prior:  # PageAuthority::adjust_rank: a multiplier applied after fusion
            scores = {d: s * prior.get(d, 1.0) for d, s in scores.items()}
        return ranked(scores, "docid")[:limit]


PRESET = AIMemory(
    name="ai-memory", system="ai-memory memory_query (Rust): FTS5 + entity + graph + vector",
    streams={"fts5": "fts5", "vector": "dense"},
    knobs=(Knob("fts5", True, grid=(True, False)), Knob("vector", True, grid=(True, False)),
           Knob("k", 60, fixed=True, note="hard-coded in reader.rs")),
    fidelity=(
        Fidelity("RRF 1 / (60 + rank), unweighted", EXACT),
        Fidelity("PageAuthority multiplier after fusion", ASSUMED,
                 "a per-document prior file (identity by default)"),
        Fidelity("tie order", ASSUMED, "docid ascending"),
        Fidelity("candidates per stream", ASSUMED, "each stream contributes its top limit"),
        Fidelity("entity-match stream", NOT_MODELLED),
        Fidelity("graph-neighbour stream", NOT_MODELLED),
        Fidelity("LLM reranker", NOT_MODELLED),
    ),
    exports={"ai-memory": _export},
)
