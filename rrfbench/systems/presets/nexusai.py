"""nexusAI (JavaScript services): Qdrant vectors + SQLite FTS5, ``fuseEpisodeResults``.

``w / (k + i + 1)`` with i 0-based (so 1-based ranks), k = ``RETRIEVAL.RRF_K`` = 60 (not
exposed); semantic = dense top ``limit``, keyword = FTS5 ``or_tokens`` top ``2 x limit``;
``keywordWeight`` 0 skips the FTS call, and the ``contrib > 0`` guard keeps FTS-only episodes
out at weight 0; an all-stopword message makes FTS sit out; a stable sort with semantic results
first (Map insertion order); cut to ``limit``. Shipped: semanticWeight 1.0, keywordWeight 0.
"""

from __future__ import annotations

import json

from ...core.literals import comment_block, js_value, num
from .base import ASSUMED, EXACT, NOT_MODELLED, Fidelity, Knob, Preset


def _js_export(params: dict, prov: list[str]) -> str:
    body = {"RRF_K": num(params.get("RRF_K", 60)), "SEMANTIC_WEIGHT": num(params["semanticWeight"]),
            "KEYWORD_WEIGHT": num(params["keywordWeight"])}
    return (comment_block("//", ["Tuned by rrfbench."] + prov)
            + "// packages/shared/src/config/constants.js\n"
            f"export const RETRIEVAL = {js_value(body)};\n")


def _settings_export(params: dict, prov: list[str]) -> str:
    return json.dumps({"semanticWeight": num(params["semanticWeight"]),
                       "keywordWeight": num(params["keywordWeight"]),
                       "_provenance": prov}, indent=2) + "\n"


class NexusAI(Preset):
    def depth(self, role, params, limit):
        return limit if role == "semantic" else 2 * limit

    def valid(self, params):
        return params["semanticWeight"] > 0 or params["keywordWeight"] > 0

    def contributions(self, lists, params, limit):
        k = 60
        sw, kw = float(params["semanticWeight"]), float(params["keywordWeight"])
        out: dict[str, dict[str, float]] = {}
        for i, h in enumerate(lists.get("semantic", [])):
            out[h.docid] = {"semantic": sw / (k + i + 1)}
        if kw == 0:  # keywordWeight 0: the FTS call is skipped
            return out
        for i, h in enumerate(lists.get("keyword", [])):
            contrib = kw / (k + i + 1)
            if h.docid in out:
                out[h.docid]["keyword"] = contrib
            elif contrib > 0:  # the guard: FTS-only episodes never enter with score 0
                out[h.docid] = {"keyword": contrib}
        return out


PRESET = NexusAI(
    name="nexusai", system="nexusAI (JavaScript services): Qdrant + SQLite FTS5",
    streams={"semantic": "dense", "keyword": "fts5"},
    knobs=(Knob("semanticWeight", 1.0, 0.0, 5.0, (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0)),
           Knob("keywordWeight", 0.0, 0.0, 5.0, (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 5.0)),
           Knob("RRF_K", 60, fixed=True, note="RETRIEVAL.RRF_K, not exposed in settings")),
    fidelity=(
        Fidelity("RRF formula w / (60 + i + 1), weights, 0-weight guard", EXACT),
        Fidelity("candidate depths: semantic top limit, FTS top 2 x limit", EXACT),
        Fidelity("tie order: stable sort, semantic results first", EXACT),
        Fidelity("FTS query builder (OR-joined quoted tokens, 1-char tokens dropped)", EXACT),
        Fidelity("FTS_STOPWORDS list", ASSUMED,
                 "the real list is not public; rrfbench uses a small list of English "
                 "function words"),
        Fidelity("semantic search", ASSUMED,
                 "rrfbench's dense retriever (all-MiniLM-L6-v2) stands in for Qdrant"),
        Fidelity("recentIds filtering and session scoping", NOT_MODELLED,
                 "no analogue in a test collection"),
    ),
    exports={"nexusai": _js_export, "nexusai-settings": _settings_export},
)
