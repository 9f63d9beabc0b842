"""Zeus knowledge base (Python): pgvector + BM25Okapi (rank-bm25 with jieba).

``weight / (rank + 60)`` with rank 0-based (Python ``enumerate``); vector top ``top_k x 3`` and
BM25Okapi top ``top_k x 3``; sort, top_k (5). Vector-only fallback when BM25 is unavailable
(rank-bm25 or jieba not installed, or ``bm25_available=False``), or when ``use_rerank`` is off:
the vector results, top_k. Shipped: vector 0.6, keyword 0.4.
"""

from __future__ import annotations

from ..literals import comment_block, num
from .base import ASSUMED, EXACT, NOT_MODELLED, Fidelity, Knob, Preset, ranked


def bm25_available() -> bool:
    try:
        import jieba  # noqa: F401
        import rank_bm25  # noqa: F401
    except ImportError:
        return False
    return True


def _body(params):
    return {"top_k": int(params["top_k"]), "vector_weight": num(params["vector_weight"]),
            "keyword_weight": num(params["keyword_weight"])}


def _yaml_export(params: dict, prov: list[str]) -> str:
    import yaml

    return comment_block("#", ["Tuned by rrfbench."] + prov) + yaml.safe_dump(
        _body(params), sort_keys=False)


def _python_export(params: dict, prov: list[str]) -> str:
    return comment_block("#", ["Tuned by rrfbench."] + prov) + f"RETRIEVAL_PARAMS = {_body(params)!r}\n"


class Zeus(Preset):
    def depth(self, role, params, limit):
        return 3 * int(params.get("top_k") or limit)

    def valid(self, params):
        return params["vector_weight"] > 0 or params["keyword_weight"] > 0

    def limit_for(self, params, limit):
        return int(limit or params.get("top_k") or self.default_limit)

    def roles_available(self):
        return {r: s for r, s in self.streams.items() if r != "keyword" or bm25_available()}

    def fuse_query(self, lists, params, limit, prior=None):
        vector = lists.get("vector", [])
        if not params.get("use_rerank", True) or not params.get("bm25_available", True) \
                or "keyword" not in lists:
            return [(d, 1.0 / (i + 1)) for i, d in enumerate(vector[:limit])]  # vector-only
        vw, kw = float(params["vector_weight"]), float(params["keyword_weight"])
        scores: dict[str, float] = {}
        for rank, d in enumerate(vector):
            scores[d] = scores.get(d, 0.0) + vw / (rank + 60)
        for rank, d in enumerate(lists.get("keyword", [])):
            scores[d] = scores.get(d, 0.0) + kw / (rank + 60)
        return ranked(scores, "stable")[:limit]


PRESET = Zeus(
    name="zeus", system="Zeus knowledge base (Python): pgvector + BM25Okapi (rank-bm25, jieba)",
    streams={"vector": "dense", "keyword": "rank_bm25:jieba"},
    knobs=(Knob("vector_weight", 0.6, 0.0, 1.0, (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)),
           Knob("keyword_weight", 0.4, 0.0, 1.0, (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)),
           Knob("top_k", 5, 1, 50, (5, 10, 20), integer=True)),
    default_limit=5,
    extra_defaults={"use_rerank": True, "bm25_available": True},
    fidelity=(
        Fidelity("RRF weight / (rank + 60), rank 0-based", EXACT),
        Fidelity("top_k x 3 candidates per path; vector-only fallback", EXACT),
        Fidelity("BM25Okapi (rank-bm25 defaults) over jieba tokens", EXACT),
        Fidelity("tie order", ASSUMED, "stable sort, vector results first (not documented)"),
        Fidelity("rank base", ASSUMED, "0-based enumerate, as the formula `rank + 60` implies"),
        Fidelity("rank-bm25 get_top_n zero-score padding", NOT_MODELLED,
                 "rrfbench runs hold matched documents only"),
        Fidelity("user_id / knowledge_base_id filters", NOT_MODELLED),
    ),
    exports={"zeus-yaml": _yaml_export, "zeus-python": _python_export},
)
