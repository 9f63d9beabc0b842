"""Defaults that transfer: tune across collections, validate leave-one-collection-out (LOCO).

A default is only good if it holds on collections it was not tuned on. The pieces, each in its
own module:

* :mod:`rrfbench.tuning.suite_data`: per collection, the per-query values of the tuning metric for every
  grid point on its tuning and evaluation splits, and the default's (RRF k=60 with equal weights
  for free fusion; the system's shipped values for a preset);
* :mod:`rrfbench.tuning.selection`: objectives across collections and the selection rules
  (``best``, ``1se``, ``nbr``);
* :mod:`rrfbench.tuning.verdicts`: LOCO tests and the verdict (Holm per collection, over queries, over
  collections);
* :mod:`rrfbench.tuning.stability`: the verdict redone on resampled and perturbed queries;
* :mod:`rrfbench.tuning.decisions`: the recommendation, a decision rule graded by its own track record
  (nested LOCO).

Here: :func:`transfer_result` builds the :class:`~rrfbench.results.dataset.TransferResult` from them;
:func:`fusion_suite` and :func:`preset_suite` gather the matrices for free fusion and for a
studied system and call it.

Called from: ``workflows.suite``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import numpy as np

from ..core.errors import InputError, choice
from ..core.stats import (
    bootstrap_ci,
    hierarchical_bootstrap,
    macro_randomisation_test,
    permutation_test,
)
from ..core.store import provenance
from ..results.suite import TransferResult
from ..results.values import TESTS
from .decisions import (
    DEFAULT_DECISION,
    Evidence,
    Fold,
    check_rule,
    decision_record,
    grade,
    refused,
)
from .holdout import best_index, preset_matrix, rrf60_config
from .selection import (
    DEFAULT_RULE,
    OBJECTIVES,
    RULES,
    _rule_text,
    fusion_distance,
    in_domain,
    knob_distance,
    neighbourhoods,
    select,
)
from .stability import STABILITY_RESAMPLES, STABILITY_SEED, stability
from .suite_data import CollectionData, collection_stats, suite_matrices
from .verdicts import ALPHA, VERDICTS, _sig, _stable_verdict, collection_outcomes, verdict_code


def loco_core(colls: Sequence[CollectionData], objective: str, rule: str,
              distances: np.ndarray | None, nbrs) -> dict:
    """Leave-one-collection-out on ``colls``: per collection the grid point selected on the
    others (``idx``), its per-query differences to the default on the collection's evaluation
    queries (``deltas``) and their sign-flip p-values (``p``); Holm over those (``adj``,
    ``outcomes``), the macro randomisation test, the hierarchical bootstrap, the mean gain and
    the verdict code (:func:`rrfbench.tuning.verdicts.verdict_code`)."""
    idx, deltas, p = [], [], []
    for i, c in enumerate(colls):
        g = select([o for j, o in enumerate(colls) if j != i], objective, rule, distances, nbrs)
        idx.append(g)
        deltas.append(c.E[g] - c.default_E)
        p.append(permutation_test(c.E[g], c.default_E))
    adj, outcomes = collection_outcomes([float(d.mean()) for d in deltas], p)
    p_queries = macro_randomisation_test(deltas)
    hb = hierarchical_bootstrap(deltas)
    gain = float(np.mean([d.mean() for d in deltas]))
    code = int(verdict_code(gain, p_queries, hb["p_value"], "loss" in outcomes))
    return {"idx": idx, "deltas": deltas, "p": p, "adj": adj, "outcomes": outcomes,
            "p_queries": p_queries, "hb": hb, "gain": gain, "code": code}


def supports_change(colls: Sequence[CollectionData], core: dict, objective: str, rule: str,
                    distances, nbrs, stability_resamples: int, stability_seed: int) -> bool:
    """Whether the significance verdict on ``colls`` (``core``: :func:`loco_core`), after its
    stability check, is *transfers* or *likely transfers*. The stability check can only weaken
    a verdict, so it runs only when the data's verdict supports the change."""
    if core["code"] == 2:
        return False
    if stability_resamples <= 0:
        return True
    stab = stability(colls, objective, rule, distances, neighbours=nbrs,
                     reference={"code": core["code"],
                                "config": select(colls, objective, rule, distances, nbrs),
                                "loco": core["idx"], "outcomes": core["outcomes"]},
                     n_resamples=stability_resamples, seed=stability_seed)
    return _stable_verdict(core["code"], "", stab)[0] in VERDICTS[:2]


def nested_folds(colls: Sequence[CollectionData], objective: str, rule: str,
                 distances=None, nbrs=None, stability_resamples: int = STABILITY_RESAMPLES,
                 stability_seed: int = STABILITY_SEED, select_fn=None) -> list[Fold]:
    """The nested grading's folds (:mod:`rrfbench.tuning.decisions`): per collection c, the LOCO
    evidence and the significance verdict on the *other* collections only, and on c the change
    selected on the others and the default. ``select_fn(colls)`` replaces the selection (a test
    passes a leaking one)."""
    sel = select_fn or (lambda cs: select(cs, objective, rule, distances, nbrs))
    folds = []
    for i, c in enumerate(colls):
        rest = [o for j, o in enumerate(colls) if j != i]
        if select_fn is None:
            core = loco_core(rest, objective, rule, distances, nbrs)
            sig = supports_change(rest, core, objective, rule, distances, nbrs,
                                  stability_resamples, stability_seed)
            deltas = core["deltas"]
        else:
            deltas = [o.E[sel([r for r in rest if r is not o])] - o.default_E for o in rest]
            sig = False
        folds.append(Fold(c.name, Evidence(tuple(o.name for o in rest), tuple(deltas), sig),
                          c.E[sel(rest)], c.default_E))
    return folds


def transfer_result(suite: str, colls: list[CollectionData], *, family: str, metric: str,
                    labels: Sequence[str], configs: Sequence[dict], default: dict,
                    objective: str = "macro", rule: str = DEFAULT_RULE,
                    distances: np.ndarray | None = None, runs: Sequence[str] = (),
                    specs: Sequence[str] = (), preset: str | None = None,
                    knobs: dict | None = None,
                    k_curves: dict | None = None, provenance: dict | None = None,
                    assumptions: Sequence[str] = (),
                    families: dict[str, np.ndarray] | None = None,
                    stability_resamples: int = STABILITY_RESAMPLES,
                    stability_seed: int = STABILITY_SEED, decision: str = DEFAULT_DECISION,
                    grade_rules: bool = True) -> TransferResult:
    """The LOCO table, summary, verdict, stability, transfer matrix, selections and the
    recommendation (module docstring). ``stability_resamples=0`` skips the stability figure
    (and its rule); ``decision``: the rule that turns the evidence into the recommendation
    (:mod:`rrfbench.tuning.decisions`); ``grade_rules``: grade every rule by nested LOCO (at least
    three collections; otherwise the refusal is recorded)."""

    if len(colls) < 2:
        raise InputError("leave-one-collection-out needs at least two collections")
    if objective not in OBJECTIVES:
        raise choice("--objective", objective, OBJECTIVES)
    if rule not in RULES:
        raise choice("--rule", rule, RULES)
    check_rule(decision)
    nbrs = neighbourhoods(configs) if rule == "nbr" else None
    core = loco_core(colls, objective, rule, distances, nbrs)
    deltas, loco_idx, rows = core["deltas"], core["idx"], []
    for i, c in enumerate(colls):
        others = [o for j, o in enumerate(colls) if j != i]
        idx, d, p = loco_idx[i], deltas[i], core["p"][i]
        loco = c.E[idx]
        ind, ind_idx = in_domain(c)
        row = {"collection": c.name, "n_queries": int(len(loco)), "selected": labels[idx],
               "loco": {"value": float(loco.mean()), "ci95": list(bootstrap_ci(loco))},
               "default": {"value": float(c.default_E.mean()), "delta": float(d.mean()),
                           "delta_ci95": list(bootstrap_ci(d)), "p_value": p,
                           "outcome_unadjusted": _sig(p, float(d.mean()))},
               "in_domain": {"value": float(ind.mean()), "label": labels[ind_idx],
                             "delta_vs_default": float((ind - c.default_E).mean()),
                             "delta_vs_default_ci95": list(bootstrap_ci(ind - c.default_E)),
                             "p_value_vs_loco": permutation_test(ind, loco),
                             "protocol": c.protocol.kind}}
        if c.singles_E:
            names = list(c.singles_E)
            macro = [np.mean([o.singles_T[n].mean() for o in others]) for n in names]
            single = names[best_index(macro)]
            s = c.singles_E[single]
            row["best_single"] = {"name": single, "value": float(s.mean()),
                                  "p_value": permutation_test(loco, s),
                                  "delta": float((loco - s).mean())}
        rows.append(row)
    # the per-collection tests are a family: Holm's step-down over them (family-wise ALPHA)
    adj, outcomes = core["adj"], core["outcomes"]
    for r, a, o in zip(rows, adj, outcomes, strict=True):
        r["default"]["p_value_holm"] = float(a)
        r["default"]["outcome"] = o
    p_queries, hb, gain, code = core["p_queries"], core["hb"], core["gain"], core["code"]
    losses = [r["collection"] for r in rows if r["default"]["outcome"] == "loss"]
    raw_losses = [r["collection"] for r in rows if r["default"]["outcome_unadjusted"] == "loss"]
    verdict = VERDICTS[code]
    n_c = len(colls)
    no_loss = (f"no collection loses significantly (Holm over the {n_c} per-collection tests"
               + (f"; unadjusted p < {ALPHA} on {', '.join(raw_losses)}" if raw_losses else "")
               + ")")
    if code == 0:
        why = (f"LOCO macro gain {gain:+.4f} over the default is significant over queries "
               f"(p={p_queries:.4f}) and over collections (hierarchical bootstrap p="
               f"{hb['p_value']:.4f}); {no_loss}")
    elif code == 1:
        why = (f"LOCO macro gain {gain:+.4f} is significant over queries (p={p_queries:.4f}) "
               f"but not over collections (hierarchical bootstrap p={hb['p_value']:.4f}, 95% CI "
               f"{hb['ci95'][0]:+.4f} to {hb['ci95'][1]:+.4f}); {no_loss}")
    else:
        parts = [f"LOCO macro gain {gain:+.4f} over the default"]
        parts.append(f"p={p_queries:.4f} over queries")
        parts.append(f"hierarchical bootstrap p={hb['p_value']:.4f}")
        if losses:
            parts.append(f"significant losses on {', '.join(losses)} (Holm-adjusted p "
                         + ", ".join(f"{r['default']['p_value_holm']:.4f}" for r in rows
                                     if r["collection"] in losses) + ")")
        why = "; ".join(parts) + ": keep the default"
    summary = {
        "macro": {"loco": float(np.mean([r["loco"]["value"] for r in rows])),
                  "default": float(np.mean([r["default"]["value"] for r in rows])),
                  "in_domain": float(np.mean([r["in_domain"]["value"] for r in rows]))},
        "gain": gain, "p_value_queries": p_queries, "p_value_collections": hb["p_value"],
        "gain_ci95_collections": list(hb["ci95"]),
        "wins": outcomes.count("win"), "ties": outcomes.count("tie"),
        "losses": outcomes.count("loss"), "losses_unadjusted": len(raw_losses),
    }
    if all("best_single" in r for r in rows):
        summary["macro"]["best_single"] = float(np.mean([r["best_single"]["value"] for r in rows]))
    idx_all = select(colls, objective, rule, distances, nbrs)
    fam_of = None
    if families:
        fam_of = np.full(len(labels), "", dtype=object)
        for fam, idx in families.items():
            fam_of[np.asarray(idx, dtype=int)] = fam
    stab = {}
    if stability_resamples > 0:
        stab = stability(colls, objective, rule, distances, neighbours=nbrs,
                         reference={"code": code, "config": idx_all, "loco": loco_idx,
                                    "outcomes": outcomes},
                         labels=labels, family_of=fam_of, n_resamples=stability_resamples,
                         seed=stability_seed)
        verdict, why = _stable_verdict(code, why, stab)
    grading = refused(len(colls)) if grade_rules else {"refused": "not graded"}
    seconds = time.perf_counter()
    if grading is None:
        grading = grade(nested_folds(colls, objective, rule, distances, nbrs,
                                     stability_resamples, stability_seed))
    seconds = round(time.perf_counter() - seconds, 2)
    evidence = Evidence(tuple(c.name for c in colls), tuple(deltas), verdict in VERDICTS[:2])
    dec = decision_record(decision, evidence, deltas, grading, verdict)
    transfers = dec["take_change"]
    because = f"rule {decision}: {'take the change' if transfers else 'keep the default'}"
    if "track_record" in dec:
        tr = dec["track_record"]
        because += (f" (right on {tr['right']} of {tr['of']} left-out collections in nested "
                    f"LOCO)")
    because += f"; significance verdict: {verdict}"
    recommended = ({"config": configs[idx_all], "label": labels[idx_all], "reason": because}
                   if transfers else {**default, "reason": because + "; the default stays"})
    per_collection = {c.name: {"config": float(c.E[idx_all].mean()),
                               "recommended": float((c.E[idx_all] if transfers
                                                     else c.default_E).mean()),
                               "default": float(c.default_E.mean()),
                               "split": c.protocol.eval_split} for c in colls}
    # tune on A, evaluate on B: delta vs the default on B
    names = [c.name for c in colls]
    delta = np.zeros((len(colls), len(colls)))
    value = np.zeros_like(delta)
    for a, ca in enumerate(colls):
        ia = best_index(ca.T.mean(axis=1))
        for b, cb in enumerate(colls):
            v = in_domain(cb)[0] if a == b else cb.E[ia]
            value[a, b] = float(v.mean())
            delta[a, b] = float((v - cb.default_E).mean())
    chars = []
    for c in colls:
        row = {"collection": c.name, **c.stats}
        row["in_domain_label"] = labels[in_domain(c)[1]]
        if k_curves and c.name in k_curves.get("best_k", {}):
            row["best_rrf_k"] = k_curves["best_k"][c.name]
        chars.append(row)
    fam_rows = {}
    for fam, idx in (families or {}).items():
        idx = np.asarray(idx)
        if len(idx) < 2 or len(idx) == len(labels):
            continue
        sub = [CollectionData(c.name, c.protocol, c.T[idx], c.E[idx], c.default_T, c.default_E,
                              c.eval_qids) for c in colls]
        fr = transfer_result(suite, sub, family=fam, metric=metric,
                             labels=[labels[i] for i in idx], configs=[configs[i] for i in idx],
                             default=default, objective=objective, rule=rule,
                             distances=None if distances is None else distances[idx],
                             stability_resamples=stability_resamples,
                             stability_seed=stability_seed, decision=decision,
                             grade_rules=False)
        fam_rows[fam] = {"selected": fr.label, "verdict": fr.verdict,
                         "gain": fr.summary["gain"], "macro_loco": fr.summary["macro"]["loco"],
                         "p_value_queries": fr.summary["p_value_queries"],
                         "p_value_collections": fr.summary["p_value_collections"],
                         "wins": fr.summary["wins"], "ties": fr.summary["ties"],
                         "losses": fr.summary["losses"],
                         "selected_per_collection": {r["collection"]: r["selected"]
                                                     for r in fr.loco}}
        if fr.stability:
            fam_rows[fam]["stability"] = {
                k: fr.stability[k] for k in ("verdict_before", "stability",
                                             "share_same_verdict", "share_same_config")}
    tests = dict(TESTS) | {
        "p_value_queries": "randomisation test of the macro mean: sign flips of per-query "
                           "differences within each collection, 10000 resamples, seed 0",
        "p_value_collections": "hierarchical bootstrap: collections, then queries, 10000 "
                               "resamples, seed 0; two-sided",
        "multiplicity": f"Holm's step-down over the {n_c} per-collection sign-flip tests, "
                        f"family-wise alpha {ALPHA}: a collection wins or loses significantly "
                        "when its Holm-adjusted p-value (loco[].default.p_value_holm) is below "
                        f"{ALPHA}; loco[].default.p_value and outcome_unadjusted are the raw ones",
        "selection_rule": _rule_text(rule),
    }
    if stab:
        tests["stability"] = (
            f"selection and verdict redone on {stab['B']} replicates per scheme (seed "
            f"{stab['seed']}): {stab['perturbation']['bootstrap']}; and "
            f"{stab['perturbation']['noise']}. Inside the replicates: {stab['tests']}. "
            f"{stab['rule']}")
    return TransferResult(
        suite=suite, collections=tuple(names), family=family, metric=metric,
        objective=objective, rule=rule,
        protocols={c.name: c.protocol.to_json() for c in colls},
        config=dict(configs[idx_all]), label=labels[idx_all], default=dict(default),
        recommended=recommended, verdict=verdict, verdict_reason=why, loco=tuple(rows),
        summary=summary,
        transfer_matrix={"collections": names, "delta": delta.tolist(), "value": value.tolist()},
        characteristics=tuple(chars), grid_size=len(labels), runs=tuple(runs),
        specs=tuple(specs), per_collection=per_collection, preset=preset,
        knobs=dict(knobs or {}), k_curves=dict(k_curves or {}), families=fam_rows,
        assumptions=tuple(assumptions),
        provenance=dict(provenance or {}) | {"nested_grading_s": seconds}, tests=tests,
        stability=stab, decision=dec)


def fusion_suite(suite: str, datasets_protocols: list, load: Callable, grid, metric: str,
                 metrics: Sequence[str], out=None, progress: bool = True,
                 objective: str = "macro", rule: str = DEFAULT_RULE, specs: Sequence[str] = (),
                 map_chunks=None, log: Callable[[str], None] = lambda _m: None):
    """Free fusion over a suite: one combined engine per split role, one sweep each, then LOCO.

    ``datasets_protocols`` is [(Dataset, Protocol)]; ``load(dataset, split)`` returns the runs
    to fuse. Returns (TransferResult, {"tune": table, "eval": table}).
    """

    sm = suite_matrices(datasets_protocols, load, grid, metric, metrics, out, progress,
                        map_chunks, log, suite)
    names, tt = sm.names, sm.tables["tune"]
    n = len(names)
    dist = np.array([fusion_distance(c, n) for c in sm.cfgs])
    default = rrf60_config(n)
    result = transfer_result(
        suite, sm.colls, family="fusion", metric=metric, labels=sm.labels, configs=sm.configs,
        default={"config": {**default.to_json(), "label": default.label(names)},
                 "label": "RRF k=60, equal weights"},
        objective=objective, rule=rule, distances=dist, runs=names, specs=specs,
        k_curves=sm.k_curves,
        families={m: np.flatnonzero(tt.method.to_numpy() == m) for m in dict.fromkeys(tt.method)},
        provenance=provenance(suite=suite, collections=[ds.name for ds, _ in datasets_protocols],
                              fingerprints={ds.name: ds.fingerprint for ds, _ in datasets_protocols}),
        assumptions=[f"{c.name}: {c.protocol.describe()}" for c in sm.colls])
    return result, sm.tables


def preset_suite(suite: str, datasets_protocols: list, preset, load: Callable, metric: str,
                 progress: bool = True, objective: str = "macro", rule: str = DEFAULT_RULE,
                 log: Callable[[str], None] = lambda _m: None) -> TransferResult:
    """A studied system over a suite, within its own knobs; the default is its shipped values.

    ``load(dataset, split)`` returns the preset's runs by role.
    """

    grid = preset.grid()
    shipped = preset.defaults()
    colls = []
    for ds, p in datasets_protocols:
        log(f"{preset.name}: {len(grid)} settings on {ds.name}")
        T = preset_matrix(preset, load(ds, p.tune_split), ds.qrels(p.tune_split),
                          grid + [shipped], [metric], progress, f"{preset.name} on {ds.name}")[:, 0]
        E = T if p.eval_split == p.tune_split else preset_matrix(
            preset, load(ds, p.eval_split), ds.qrels(p.eval_split), grid + [shipped], [metric])[:, 0]
        colls.append(CollectionData(
            name=ds.name, protocol=p, T=T[:-1], E=E[:-1], default_T=T[-1], default_E=E[-1],
            eval_qids=list(ds.qrels(p.eval_split).qids), stats=collection_stats(ds, p)))
    tunable = [k.name for k in preset.knobs if not k.fixed and k.grid]
    labels = [", ".join(f"{k}={g[k]}" for k in tunable) for g in grid]
    dist = np.array([knob_distance(g, shipped, preset.knobs) for g in grid])
    return transfer_result(
        suite, colls, family=preset.name, metric=metric, labels=labels, configs=grid,
        default={"config": shipped, "label": "shipped: " + ", ".join(f"{k}={shipped[k]}"
                                                                     for k in tunable)},
        objective=objective, rule=rule, distances=dist, preset=preset.name,
        knobs=preset.knob_table(),
        provenance=provenance(suite=suite, collections=[ds.name for ds, _ in datasets_protocols],
                              fingerprints={ds.name: ds.fingerprint for ds, _ in datasets_protocols}),
        assumptions=[f"{c.name}: {c.protocol.describe()}" for c in colls]
        + [f"fidelity: {line}" for line in preset.fidelity_lines()])
