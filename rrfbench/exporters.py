"""Tuned constants in the exact configuration shape of the system that will load them.

``render(result, fmt)`` takes a result object (:class:`~rrfbench.results.SweepResult` or
:class:`~rrfbench.results.PresetResult`, as loaded from a ``best.json``) and returns text.

Generic formats: ``json``, ``toml``, ``yaml``, ``python`` (a module of constants), ``js`` and
``ts`` (an exported object). System formats come from the presets registry (each system module
declares its own shapes: ``nexusai``, ``nexusai-settings``, ``titan``, ``zeus-yaml``,
``zeus-python``, ``ai-memory``); a system format needs that system's tuning result, because a
free fusion configuration may not be expressible in the system's knobs.

Every output carries its provenance (dataset, fingerprint, protocol, metric and value with its
CI, rrfbench version, git commit) as comments, or as a ``_provenance`` field where the format
has no comments (JSON), plus a line saying what it was validated on: a configuration validated
on one collection only says so (and :func:`render` warns).
"""

from __future__ import annotations

import json
import warnings

from .errors import InputError, ValidationWarning
from .literals import comment_block, js_value, num

GENERIC = ("json", "toml", "yaml", "python", "js", "ts")


def formats() -> tuple[str, ...]:
    from .presets import export_formats

    return GENERIC + tuple(export_formats())


def validation_line(result) -> str | None:
    """What the configuration was validated on, or ``None`` when that was several collections."""
    collections = getattr(result, "collections", None)
    if collections:
        return None
    return (f"validated on one collection only ({result.dataset}); not cross-validated on "
            "other collections: a default for unseen data needs a suite result "
            "(rrfbench sweep --suite)")


def provenance_lines(result) -> list[str]:
    prov = result.provenance or {}
    ev = result.tuned
    lines = [
        f"rrfbench {prov.get('rrfbench', '?')} (git {str(prov.get('git_commit', '?'))[:12]})",
        f"dataset {result.dataset} (fingerprint {result.fingerprint}); "
        f"{result.protocol.describe()}",
        f"{result.metric} = {ev.value:.4f} (95% CI {ev.ci95[0]:.4f}-{ev.ci95[1]:.4f})",
    ]
    extra = validation_line(result)
    if extra:
        lines.append(extra)
    return lines


def constants(result) -> dict:
    """The tuned values as a flat, format-neutral mapping."""
    cfg = result.config
    if result.kind == "preset":
        return {k: v for k, v in cfg.items() if k in result.knobs}
    runs = list(result.runs)
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


def render(result, fmt: str, warn: bool = True) -> str:
    """The text of ``result`` in format ``fmt`` (see module docstring)."""
    from .presets import export_formats

    systems = export_formats()
    if fmt not in GENERIC and fmt not in systems:
        raise InputError(f"--to: unknown export format {fmt!r}; choose from "
                         f"{', '.join(GENERIC + tuple(systems))}")
    prov = provenance_lines(result)
    if warn and validation_line(result):
        warnings.warn(validation_line(result), ValidationWarning, stacklevel=2)
    if fmt in systems:
        owner = systems[fmt]
        if result.kind != "preset" or result.preset != owner.name:
            got = f"preset {result.preset!r}" if result.kind == "preset" else "a fusion sweep"
            raise InputError(f"--to {fmt} needs a result of `rrfbench tune DATASET --preset "
                             f"{owner.name}` (got {got}); a free fusion configuration may not "
                             "be expressible in that system's knobs")
        return owner.exports[fmt](dict(result.config), prov)
    c = {k: num(v) if not isinstance(v, dict) else {a: num(b) for a, b in v.items()}
         for k, v in constants(result).items()}
    header = comment_block("#", ["Tuned by rrfbench."] + prov)
    if fmt == "json":
        return json.dumps({**c, "_provenance": prov}, indent=2) + "\n"
    if fmt == "toml":
        import tomli_w

        return header + tomli_w.dumps(c)
    if fmt == "yaml":
        import yaml

        return header + yaml.safe_dump(c, sort_keys=False)
    if fmt == "python":
        lines = [f"{k.upper()} = {v!r}" for k, v in c.items()]
        return '"""Fusion constants tuned by rrfbench."""\n' + header + "\n".join(lines) + "\n"
    tail = " as const;" if fmt == "ts" else ";"
    return (comment_block("//", ["Tuned by rrfbench."] + prov)
            + f"export const RRF_CONFIG = {js_value(c)}{tail}\n")
