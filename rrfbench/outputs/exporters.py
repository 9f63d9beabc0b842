"""Tuned constants in the exact configuration shape of the system that will load them.

``render(result, fmt)`` takes a result object (:class:`~rrfbench.results.dataset.SweepResult` or
:class:`~rrfbench.results.dataset.PresetResult`, as loaded from a ``best.json``) and returns text.

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
from pathlib import Path

import tomli_w
import yaml

from ..core.errors import InputError, ValidationWarning
from ..core.literals import comment_block, js_value, num
from ..core.store import results_dir
from ..results.dataset import load_result
from ..systems.engines import SPACES
from ..systems.registry import export_formats, get_system, owners

GENERIC = ("json", "toml", "yaml", "python", "js", "ts")


def formats() -> tuple[str, ...]:
    return GENERIC + tuple(export_formats())


def validation_line(result) -> str | None:
    """What the configuration was validated on, or ``None`` when that was several collections."""
    if result.validated_on() is None:
        return None
    return (f"validated on one collection only ({result.validated_on()}); not cross-validated on "
            "other collections: a default for unseen data needs a suite result "
            "(rrfbench sweep --suite)")


def provenance_lines(result, which: str = "recommended") -> list[str]:
    prov = result.provenance or {}
    head = f"rrfbench {prov.get('rrfbench', '?')} (git {str(prov.get('git_commit', '?'))[:12]})"
    if getattr(result, "kind", None) == "adaptive":
        s = result.summary
        pol = result.policy_for(which)
        return [head,
                f"suite {result.suite}: {', '.join(result.collections)}; query-adaptive policy "
                "validated leave-one-collection-out against the static suite default",
                f"verdict: {result.verdict}; LOCO macro {result.metric} "
                f"{s['macro']['adaptive']:.4f} vs static {s['macro']['static']:.4f} (gain "
                f"{s['gain']:+.4f}, p {s['p_value_queries']:.4f} over queries)",
                f"exported: the {which} " + (f"policy ({pol.describe()})" if pol else
                                              f"static configuration ({result.label_for(which)})")]
    if result.validated_on() is None:  # a suite result
        s = result.summary
        chosen = result.recommended if which == "recommended" else {"label": result.label}
        return [head,
                f"suite {result.suite}: {', '.join(result.collections)}; leave-one-collection-out "
                f"validated ({result.objective}, rule {result.rule})",
                f"verdict: {result.verdict}; LOCO macro {result.metric} {s['macro']['loco']:.4f} "
                f"vs default {s['macro']['default']:.4f} (gain {s['gain']:+.4f}, p "
                f"{s['p_value_queries']:.4f} over queries)",
                f"exported: the {which} configuration ({chosen['label']})"]
    ev = result.tuned
    lines = [
        head,
        f"dataset {result.dataset} (fingerprint {result.fingerprint}); "
        f"{result.protocol.describe()}",
        f"{result.metric} = {ev.value:.4f} (95% CI {ev.ci95[0]:.4f}-{ev.ci95[1]:.4f})",
    ]
    extra = validation_line(result)
    if extra:
        lines.append(extra)
    return lines


def constants(result, which: str = "recommended") -> dict:
    """The tuned values as a flat, format-neutral mapping."""
    cfg = result.config_for(which)
    if result.preset:
        # a knob set to None is "off": left out, as the system's own config would leave it
        return {k: v for k, v in cfg.items() if k in result.knobs and v is not None}
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


def render(result, fmt: str, warn: bool = True, which: str = "recommended",
           path: str | Path | None = None, engine_version: str | None = None) -> str:
    """The text of ``result`` in format ``fmt`` (see module docstring).

    For a suite result ``which`` picks the ``recommended`` configuration (the default when the
    verdict is "no evidence that it transfers") or the ``config`` selected on all collections.
    ``engine_version``: for an engine mode with version ranges, the one the export targets
    (default: the one the result was tuned for, else the newest verified); a target other than
    the tuned one is exported with a warning, since its formula differs.
    """
    systems = export_formats()
    if fmt not in GENERIC and fmt not in systems:
        raise InputError(f"--to: unknown export format {fmt!r}; choose from "
                         f"{', '.join(GENERIC + tuple(systems))}")
    prov = provenance_lines(result, which)
    policy = result.policy_for(which)
    if policy is not None:
        return render_policy(policy, fmt, prov)
    owner_name = getattr(result, "preset", None)
    if fmt in systems and owner_name not in owners(fmt):
        raise InputError(not_expressible(result, fmt, owners(fmt), path))
    if engine_version is not None and fmt not in systems:
        raise InputError(f"--engine-version: {fmt!r} is not an engine's format")
    if engine_version is not None:          # refused before any warning is printed
        _version_lines(get_system(owner_name), {}, engine_version, check_only=True)
    if warn and validation_line(result):
        warnings.warn(validation_line(result), ValidationWarning, stacklevel=2)
    if fmt in systems:
        owner = get_system(owner_name)
        params = dict(owner.defaults() | result.config_for(which))
        prov = prov + _version_lines(owner, params, engine_version)
        if engine_version is not None:
            params["engine_version"] = engine_version
        return owner.exports[fmt](params, prov)
    c = {k: num(v) if not isinstance(v, dict) else {a: num(b) for a, b in v.items()}
         for k, v in constants(result, which).items()}
    header = comment_block("#", ["Tuned by rrfbench."] + prov)
    if fmt == "json":
        return json.dumps({**c, "_provenance": prov}, indent=2) + "\n"
    if fmt == "toml":
        return header + tomli_w.dumps(c)
    if fmt == "yaml":
        return header + yaml.safe_dump(c, sort_keys=False)
    if fmt == "python":
        lines = [f"{k.upper()} = {v!r}" for k, v in c.items()]
        return '"""Fusion constants tuned by rrfbench."""\n' + header + "\n".join(lines) + "\n"
    tail = " as const;" if fmt == "ts" else ";"
    return (comment_block("//", ["Tuned by rrfbench."] + prov)
            + f"export const RRF_CONFIG = {js_value(c)}{tail}\n")


def _version_lines(owner, params: dict, target: str | None, check_only: bool = False) -> list[str]:
    """The engine version an export targets (engine modes with version ranges only)."""
    versions = getattr(owner, "versions", ())
    if target is not None:
        if not hasattr(owner, "check_version"):
            raise InputError(f"--engine-version: {owner.name} is a studied system, not an engine")
        owner.check_version(target)
    if not versions or check_only:
        return []
    tuned = owner.version_of(params)
    target = target or tuned
    if target != tuned:
        warnings.warn(f"--engine-version {target}: these constants were tuned under "
                      f"{owner.name}'s {tuned} formula, which differs; measure them under "
                      f"{target} with `rrfbench preset DATASET -p {owner.name} --set "
                      f"engine_version={target}`", ValidationWarning, stacklevel=3)
    others = ", ".join(v for v in versions if v != target)
    return [f"targets {owner.engine} {target} (formulas differ in {others}: --engine-version)"]


POLICY_FORMATS = ("python", "js", "ts", "json")
PORTABLE = Path(__file__).resolve().parents[1] / "adaptive" / "portable"


def render_policy(policy, fmt: str, prov: list[str]) -> str:
    """A per-query policy as code a system runs at query time: the dependency-free module of
    ``rrfbench/portable`` (Python, or JavaScript; TypeScript is the same code unchecked) with
    the policy filled in, or its JSON. ``weights(query_text, lists)`` returns the configuration
    for a query from the system's own result lists."""
    if fmt not in POLICY_FORMATS:
        raise InputError(f"--to {fmt}: a per-query policy exports as one of "
                         f"{', '.join(POLICY_FORMATS)} (use --which recommended for the static "
                         "configuration in a system's own shape)")
    data = policy.to_json()
    head = ["Query-adaptive fusion policy learned by rrfbench."] + prov
    if fmt == "json":
        return json.dumps({**data, "_provenance": prov}, indent=1) + "\n"
    if fmt == "python":
        code = (PORTABLE / "adaptive_policy.py").read_text()
        marker = "POLICY = None  # filled in by the exporter"
        line = next(x for x in code.splitlines() if x.startswith(marker))
        return comment_block("#", head) + code.replace(line, f"POLICY = {data!r}", 1)
    code = (PORTABLE / "adaptive_policy.js").read_text()
    marker = "const POLICY = null; // filled in by the exporter"
    if marker not in code:
        raise InputError("rrfbench/adaptive/portable/adaptive_policy.js lacks its POLICY line")
    body = code.replace(marker, f"const POLICY = {json.dumps(data)};", 1)
    top = "// @ts-nocheck\n" if fmt == "ts" else ""
    return top + comment_block("//", head) + body


def not_expressible(result, fmt: str, allowed: set[str], path=None) -> str:
    """Why ``result`` cannot be exported as ``fmt``, naming what can: for an engine, its mode
    tuned on the same data with what it scored there when rrfbench has tuned it (the nearest
    configuration the engine can express), else the command that tunes it."""
    owner_name = getattr(result, "preset", None)
    got = f"preset {owner_name!r}" if owner_name else f"a free fusion result ({result.label})"
    spaces = sorted(n for n in allowed if n in SPACES)
    if not spaces:
        return (f"--to {fmt} needs a result of `rrfbench tune DATASET --preset "
                f"{sorted(allowed)[0]}` (got {got}); a free fusion configuration may not be "
                "expressible in that system's knobs")
    engine = SPACES[spaces[0]].engine
    # the engine's modes tuned on the same data: beside the result's file, else in results/
    wheres = ([Path(path).parent / "engines"] if path is not None else []) + [
        results_dir() / "transfer" / result.suite / "engines" if hasattr(result, "suite")
        else results_dir() / result.dataset / "engines"]
    found = []
    for name in spaces:
        best = next((w / name / "best.json" for w in wheres
                     if (w / name / "best.json").exists()), None)
        if best is not None:
            r = load_result(best)
            value = r.summary["macro"]["loco"] if r.kind == "transfer" else r.tuned.value
            found.append((value, name, r, best))
    text = (f"--format {fmt}: {got} is not expressible in {engine}'s fusion (it fuses one "
            f"vector and one keyword list by {' or '.join(SPACES[n].mode for n in spaces)})")
    if found:
        value, name, r, path = max(found, key=lambda x: (x[0], x[1]))
        return (text + f"; the nearest it can express: {name} "
                f"{SPACES[name].knob_label(r.config_for('recommended'))}, which scores "
                f"{r.metric} {value:.4f} on the same data ({path}); export that")
    scope = f"--suite {result.suite}" if hasattr(result, "suite") else result.dataset
    return text + (f"; tune within its knobs first: `rrfbench engines {scope} --engine "
                   f"{engine}`, then export that result")
