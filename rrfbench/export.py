"""Tuned constants in the exact configuration shape of the system that will load them.

``render(best, fmt)`` takes a ``best.json`` (from ``rrfbench sweep`` or ``rrfbench tune``) and
returns text. Generic formats: ``json``, ``toml``, ``yaml``, ``python`` (a module of
constants), ``js`` and ``ts`` (an exported object). System formats:

* ``nexusai``: the ``RETRIEVAL`` block of ``packages/shared/src/config/constants.js``
  (``RRF_K``, ``SEMANTIC_WEIGHT``, ``KEYWORD_WEIGHT``); ``nexusai-settings``: the JSON body
  for ``PATCH /settings`` (``semanticWeight``, ``keywordWeight``).
* ``titan``: the ``createRetrievalEngine`` options ``fusion: { k, weights: { vector, fts } }``
  (plus ``minScore`` / ``dropoff`` when tuned to non-zero values).
* ``zeus-yaml`` / ``zeus-python``: ``top_k``, ``vector_weight``, ``keyword_weight``.
* ``ai-memory``: Rust ``const`` items.

Every output carries its provenance (dataset, fingerprint, metric and value, rrfbench version,
git commit) as comments, or as a ``_provenance`` field where the format has no comments (JSON).
A configuration a system cannot express (e.g. k != 60 for nexusAI) is refused, not rounded.
"""

from __future__ import annotations

import json
from pathlib import Path

from .errors import InputError

GENERIC = ("json", "toml", "yaml", "python", "js", "ts")
SYSTEM = ("nexusai", "nexusai-settings", "titan", "zeus-yaml", "zeus-python", "ai-memory")
FORMATS = GENERIC + SYSTEM


def load_best(path: str | Path) -> dict:
    path = Path(path)
    if not path.exists():
        raise InputError("best.json not found", path)
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON ({exc.msg})", path, exc.lineno) from None


def provenance_lines(best: dict) -> list[str]:
    prov = best.get("provenance", {})
    ev = best.get("eval", {})
    ds = prov.get("dataset") or best.get("dataset", "?")
    fp = prov.get("fingerprint") or best.get("fingerprint", "?")
    tune = best.get("tune", {})
    how = f"tuned on split {tune['split']}" if tune.get("split") else f"{tune.get('folds', '?')}-fold CV"
    ci = ev.get("ci95", [float("nan")] * 2)
    return [
        f"rrfbench {prov.get('rrfbench', best.get('rrfbench', '?'))} "
        f"(git {str(prov.get('git_commit', best.get('git_commit', '?')))[:12]})",
        f"dataset {ds} (fingerprint {fp}); {how}; evaluated on split {ev.get('split', '?')}",
        f"{best.get('metric', '?')} = {ev.get('value', float('nan')):.4f} "
        f"(95% CI {ci[0]:.4f}-{ci[1]:.4f})",
    ]


def constants(best: dict) -> dict:
    """The tuned values as a flat, format-neutral mapping."""
    cfg = best["config"]
    if "preset" in best:
        return {k: v for k, v in cfg.items() if k not in ("bm25_available",)}
    runs = best["runs"]
    out = {"method": cfg["method"]}
    if cfg["method"] == "rrf":
        ks = cfg["k"]
        out["k"] = ks[0] if len(set(ks)) == 1 else dict(zip(runs, ks, strict=True))
        out["rank_base"] = cfg.get("rank_base", 1)
    else:
        out["norm"] = cfg["norm"]
        out["missing"] = cfg["missing"]
    out["weights"] = dict(zip(runs, cfg["weights"], strict=True))
    depths = cfg.get("depth") or [None] * len(runs)
    if any(d is not None for d in depths):
        out["depth"] = {r: d for r, d in zip(runs, depths, strict=True) if d is not None}
    if cfg.get("limit"):
        out["limit"] = cfg["limit"]
    return out


def _num(v):
    return int(v) if isinstance(v, float) and v.is_integer() and abs(v) < 1e15 else v


def _js_value(v, indent=0) -> str:
    pad = "  " * (indent + 1)
    if isinstance(v, dict):
        inner = ",\n".join(f"{pad}{_js_key(k)}: {_js_value(x, indent + 1)}" for k, x in v.items())
        return "{\n" + inner + ",\n" + "  " * indent + "}"
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return repr(_num(v))
    if isinstance(v, list):
        return "[" + ", ".join(_js_value(x, indent) for x in v) + "]"
    return json.dumps(v)


def _js_key(k: str) -> str:
    return k if k.replace("_", "a").isalnum() and not k[0].isdigit() else json.dumps(k)


def _comment(prefix: str, best: dict) -> str:
    return "\n".join(f"{prefix} {ln}" for ln in ["Tuned by rrfbench."] + provenance_lines(best)) + "\n"


def _require(best: dict, preset: str) -> dict:
    if best.get("preset") != preset:
        raise InputError(f"format for {preset} needs a best.json from `rrfbench tune DATASET "
                         f"--preset {preset}` (got {best.get('preset') or 'a fusion sweep'}); a "
                         "free fusion configuration may not be expressible in that system's knobs")
    return best["config"]


def render(best: dict, fmt: str) -> str:
    """The text of ``best`` in format ``fmt`` (see module docstring)."""
    if fmt not in FORMATS:
        raise InputError(f"unknown export format {fmt!r}; choose from {', '.join(FORMATS)}")
    c = {k: _num(v) if not isinstance(v, dict) else {a: _num(b) for a, b in v.items()}
         for k, v in constants(best).items()}
    prov = provenance_lines(best)
    if fmt == "json":
        return json.dumps({**c, "_provenance": prov}, indent=2) + "\n"
    if fmt == "toml":
        import tomli_w

        return _comment("#", best) + tomli_w.dumps(c)
    if fmt == "yaml":
        import yaml

        return _comment("#", best) + yaml.safe_dump(c, sort_keys=False)
    if fmt == "python":
        lines = [f"{k.upper()} = {v!r}" for k, v in c.items()]
        return '"""Fusion constants tuned by rrfbench."""\n' + _comment("#", best) + "\n".join(lines) + "\n"
    if fmt in ("js", "ts"):
        tail = " as const;" if fmt == "ts" else ";"
        return _comment("//", best) + f"export const RRF_CONFIG = {_js_value(c)}{tail}\n"
    if fmt in ("nexusai", "nexusai-settings"):
        p = _require(best, "nexusai")
        if fmt == "nexusai-settings":
            return json.dumps({"semanticWeight": _num(p["semanticWeight"]),
                               "keywordWeight": _num(p["keywordWeight"]),
                               "_provenance": prov}, indent=2) + "\n"
        body = {"RRF_K": _num(p.get("RRF_K", 60)), "SEMANTIC_WEIGHT": _num(p["semanticWeight"]),
                "KEYWORD_WEIGHT": _num(p["keywordWeight"])}
        return (_comment("//", best) + "// packages/shared/src/config/constants.js\n"
                f"export const RETRIEVAL = {_js_value(body)};\n")
    if fmt == "titan":
        p = _require(best, "titan")
        opts = {"fusion": {"k": _num(p["k"]), "weights": {"vector": _num(p["vector_weight"]),
                                                         "fts": _num(p["fts_weight"])}}}
        if p.get("minScore"):
            opts["minScore"] = _num(p["minScore"])
        if p.get("dropoff"):
            opts["dropoff"] = _num(p["dropoff"])
        return (_comment("//", best) + "// options for createRetrievalEngine({ retrievers, ...retrievalOptions })\n"
                f"export const retrievalOptions = {_js_value(opts)};\n")
    if fmt in ("zeus-yaml", "zeus-python"):
        p = _require(best, "zeus")
        body = {"top_k": int(p["top_k"]), "vector_weight": _num(p["vector_weight"]),
                "keyword_weight": _num(p["keyword_weight"])}
        if fmt == "zeus-yaml":
            import yaml

            return _comment("#", best) + yaml.safe_dump(body, sort_keys=False)
        return _comment("#", best) + f"RETRIEVAL_PARAMS = {body!r}\n"
    if fmt == "ai-memory":
        p = _require(best, "ai-memory")
        return (_comment("//", best) + "// crates/ai-memory-store/src/reader.rs\n"
                f"pub const RRF_K: f64 = {float(p.get('k', 60))!r};\n"
                f"pub const STREAM_FTS5: bool = {str(bool(p['fts5'])).lower()};\n"
                f"pub const STREAM_VECTOR: bool = {str(bool(p['vector'])).lower()};\n")
    raise AssertionError(fmt)
