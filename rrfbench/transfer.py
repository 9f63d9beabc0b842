"""Defaults that transfer: tune across collections, validate leave-one-collection-out (LOCO).

A default is only good if it holds on collections it was not tuned on. Given, for every
collection of a suite, the per-query values of the tuning metric for every grid point on its
tuning split (``T``) and its evaluation split (``E``), plus the same for the *default* (RRF k=60
with equal weights for free fusion; the system's shipped values for a preset):

* **Objectives across collections** (computed on tuning splits): ``macro`` (mean of the
  collections' means: each collection weighs the same), ``worst`` (the worst collection's
  difference to the default) and ``meanrank`` (the mean rank of the configuration among the grid
  on each collection; lower is better).
* **Selection rules**: ``best`` (the best objective; ties: the earliest grid point), ``1se``,
  the one-standard-error rule: among the grid points whose macro mean is within one standard
  error of the best one's, the one closest to the default, and ``nbr`` (the default), among
  the same points the one with the best objective averaged over its grid neighbourhood
  (:func:`neighbourhoods`: the same non-numeric settings, at most one grid step on every
  numeric one). The standard error is that of the paired macro-mean difference to the best
  point, from the per-query differences: ``se = sqrt(sum_c var_c / n_c) / C`` (``var_c``:
  variance of the per-query differences on collection c, ``n_c`` its tuning queries, ``C``
  collections). Why ``nbr``: ``best`` follows whichever near-tied point a CPU difference puts
  on top (the en suite's pick moved from ``convex tmm w=0.1,0.2,0.7 missing=zero`` to its
  neighbour ``w=0,0.3,0.7 missing=min``); averaging over neighbours picks the middle of a
  plateau, and staying within one standard error keeps it no worse than the best by more than
  the noise. Measured with :func:`stability` on cranfield + time + adi (bm25 + fts5 + dense,
  the 1285-point default grid): the configuration selected on all collections was the same in
  92% of noise replicates with ``nbr`` (``best`` 69%, ``1se`` 82%) and 37% of query bootstraps
  (30%, 33%); the LOCO picks 77% / 35% (``best`` 73% / 28%, ``1se`` 44% / 13%: closest to the
  default is not stable), at the same LOCO gain (+0.0274, +0.0273, +0.0275).
* **LOCO**: for each collection C, select on the others, evaluate on C's evaluation split
  against the default, the best single retriever (chosen on the others; fusion only) and
  in-domain tuning on C (holdout on C's splits, or cross-validation when C has one split: the
  optimistic upper bound). Paired randomisation p-values and bootstrap CIs on C, and the
  p-values adjusted for testing every collection: Holm's step-down over the C per-collection
  tests (family-wise alpha 0.05). A collection wins or loses significantly only when its
  Holm-adjusted p-value is below 0.05 (one of six at raw p = 0.03 is not a loss; the raw
  outcome stays in the row as ``outcome_unadjusted``).
* **Verdict**: *transfers* when the LOCO gain over the default is significant over queries (a
  randomisation test of the macro mean, sign flips within each collection) **and** over
  collections (a hierarchical bootstrap: collections, then queries) and no collection loses
  significantly (after Holm); *likely transfers, weak evidence* when the gain is positive and
  significant over queries only, with no significant loss; otherwise *no evidence that it
  transfers*, and the recommended default stays the default.
* **Stability** (:func:`stability`): selection and verdict redone on 200 bootstraps of the
  queries of each collection and on 200 perturbations of the per-query values of the size of
  a CPU difference (each configuration's mean on a collection moved by N(0, 0.001^2) through 2%
  of its queries), with cheaper tests inside (1000 sign flips; a hierarchical bootstrap whose
  query level is a normal approximation). The share of replicates supporting the verdict (the
  smaller of the two schemes'; *likely transfers* is also supported by *transfers*) must be at
  least 80%: below it, *transfers* is reported as *likely transfers, weak evidence* when that
  has 80% support, and any other verdict as *unstable*, which keeps the default.

:func:`transfer_result` builds the :class:`TransferResult`; :func:`fusion_suite` and
:func:`preset_suite` gather the matrices for free fusion and for a studied system.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .engine import FusionEngine, configs_from_table, run_sweep
from .errors import InputError, choice
from .results import TESTS, Protocol, TransferResult
from .runs import Qrels, Run, run_frame
from .stats import (
    bootstrap_ci,
    hierarchical_bootstrap,
    holm,
    macro_randomisation_test,
    permutation_test,
)
from .store import provenance
from .tuning import best_index, cross_validate, preset_matrix, rrf60_config, single_run_configs

OBJECTIVES = ("macro", "worst", "meanrank")
RULES = ("best", "1se", "nbr")
DEFAULT_RULE = "nbr"  # the stable pick among near-ties (see the module docstring)
VERDICTS = ("transfers", "likely transfers, weak evidence", "no evidence that it transfers",
            "unstable")
SEP = "\x1f"  # collection / query id separator inside a combined engine
ALPHA = 0.05
STABILITY_RESAMPLES = 200      # B: replicates per perturbation scheme
STABILITY_SEED = 0
STABILITY_MIN = 0.80           # below this share of replicates agreeing: "unstable"
NOISE_SHIFT = 0.001            # sd of the shift of a configuration's mean on a collection
NOISE_SHARE = 0.02             # share of a collection's queries whose values change (>= 1)
STABILITY_FLIPS = 1000         # sign flips of each test inside a replicate (10000 outside)
STABILITY_HB_DRAWS = 1000      # collection draws of the hierarchical bootstrap inside one


# --------------------------------------------------------------------------- inputs
@dataclass
class CollectionData:
    """One collection's matrices: grid points x queries of the tuning metric."""

    name: str
    protocol: Protocol
    T: np.ndarray                  # (grid, tuning queries)
    E: np.ndarray                  # (grid, evaluation queries)
    default_T: np.ndarray          # the default on the tuning queries
    default_E: np.ndarray          # ... and on the evaluation queries
    eval_qids: list
    tune_qids: list = field(default_factory=list)
    singles_T: dict = field(default_factory=dict)   # run name -> values (fusion only)
    singles_E: dict = field(default_factory=dict)
    stats: dict = field(default_factory=dict)       # collection characteristics


def objective_values(colls: Sequence[CollectionData], objective: str) -> np.ndarray:
    """One value per grid point (higher is better) over ``colls``' tuning queries."""
    if objective not in OBJECTIVES:
        raise choice("--objective", objective, OBJECTIVES)
    means = np.stack([c.T.mean(axis=1) for c in colls])            # (C, G)
    if objective == "macro":
        return means.mean(axis=0)
    if objective == "worst":
        default = np.array([c.default_T.mean() for c in colls])[:, None]
        return (means - default).min(axis=0)
    ranks = np.stack([_rank_desc(m) for m in means])               # 1 = best, ties averaged
    return -ranks.mean(axis=0)


def _rank_desc(values: np.ndarray) -> np.ndarray:

    return pd.Series(values).rank(ascending=False, method="average").to_numpy()


def one_se_set(colls: Sequence[CollectionData], best: int) -> tuple[np.ndarray, np.ndarray]:
    """(tied, se): grid points whose macro mean is within one paired standard error of
    ``best``'s, and that standard error per grid point (see the module docstring)."""
    gap = np.zeros(colls[0].T.shape[0])
    var = np.zeros_like(gap)
    for c in colls:
        d = c.T[best][None, :] - c.T
        gap += d.mean(axis=1)
        if d.shape[1] > 1:
            var += d.var(axis=1, ddof=1) / d.shape[1]
    gap /= len(colls)
    se = np.sqrt(var) / len(colls)
    return gap <= se + 1e-15, se


def neighbourhoods(configs: Sequence[dict]):
    """(grid x grid) sparse matrix whose row g averages over g's grid neighbourhood.

    Two grid points are neighbours when they have numbers in the same settings, agree on every
    non-numeric one (method, normalisation, missing-score rule, a boolean...; ``None`` counts as
    a value) and are at most one grid step apart on every numeric one (each entry of a list
    counts; steps are counted in the sorted distinct values the setting takes, so an uneven k
    grid 1, 2, 5, 10 has steps too). A point is its own neighbour; a point with no other
    neighbour (combsum, combmnz: nothing numeric varies) takes instead the points with the same
    numbers that differ in one non-numeric setting, so it is averaged too.
    """
    import scipy.sparse as sp

    groups: dict = {}
    parts = []
    for i, cfg in enumerate(configs):
        cat, num, names = [], [], []
        for key, v in cfg.items():
            if key == "label":
                continue
            for j, x in enumerate(v if isinstance(v, list | tuple) else [v]):
                if isinstance(x, int | float) and not isinstance(x, bool) and np.isfinite(x):
                    names.append(f"{key}[{j}]")
                    num.append(float(x))
                else:
                    names.append(f"{key}[{j}]?")
                    cat.append(repr(x))
        groups.setdefault(tuple(names), []).append(i)
        parts.append((num, cat))
    rows, cols = [], []
    for members in groups.values():
        idx = np.asarray(members)
        X = np.array([parts[i][0] for i in idx], dtype=np.float64).reshape(len(idx), -1)
        K = np.array([parts[i][1] for i in idx], dtype=object).reshape(len(idx), -1)
        ranks = ([np.unique(x, return_inverse=True)[1].ravel() for x in X.T]
                 + [np.unique(k.astype(str), return_inverse=True)[1].ravel() for k in K.T])
        R = np.stack(ranks, axis=1) if ranks else np.zeros((len(idx), 0), dtype=int)
        nx = X.shape[1]
        for lo in range(0, len(idx), 256):                  # bounded memory on big grids
            step = np.abs(R[lo:lo + 256, None, :nx] - R[None, :, :nx]).max(axis=2, initial=0)
            other = (R[lo:lo + 256, None, nx:] != R[None, :, nx:]).sum(axis=2)
            near = (step <= 1) & (other == 0)
            alone = near.sum(axis=1) == 1                   # no numeric neighbour
            near[alone] |= (step[alone] == 0) & (other[alone] == 1)
            a, b = np.nonzero(near)
            rows.append(idx[lo + a])
            cols.append(idx[b])
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    count = np.bincount(rows, minlength=len(configs)).astype(np.float64)
    return sp.csr_matrix((1.0 / count[rows], (rows, cols)), shape=(len(configs),) * 2)


def select(colls: Sequence[CollectionData], objective: str = "macro", rule: str = "best",
           distances: np.ndarray | None = None, neighbours=None) -> int:
    """The grid point chosen on ``colls`` by ``objective`` and ``rule`` (``neighbours``: the
    matrix of :func:`neighbourhoods`, for ``nbr``; without it each point is alone)."""
    if rule not in RULES:
        raise choice("--rule", rule, RULES)
    obj = objective_values(colls, objective)
    best = best_index(obj)
    if rule == "best":
        return best
    tied, _ = one_se_set(colls, best)
    cand = np.flatnonzero(tied)
    if rule == "nbr":
        smooth = obj if neighbours is None else neighbours @ obj
        # the best neighbourhood average; then the better objective; then grid order
        order = np.lexsort((cand, -obj[cand], -smooth[cand]))
        return int(cand[order[0]])
    dist = distances[cand] if distances is not None else np.zeros(len(cand))
    # closest to the default; then the better objective; then grid order
    order = np.lexsort((cand, -obj[cand], dist))
    return int(cand[order[0]])


def in_domain(c: CollectionData) -> tuple[np.ndarray, int]:
    """Tuned on the collection itself: (per-query values on its evaluation queries, index
    chosen on all its tuning queries). Cross-validated when it tunes and evaluates on the same
    queries."""
    idx = best_index(c.T.mean(axis=1))
    if c.protocol.kind == "cv":
        cv, _ = cross_validate(c.T, c.protocol.folds or 5, c.protocol.seed)
        return cv, idx
    return c.E[idx], idx


# --------------------------------------------------------------------------- the result


def _sig(p: float, delta: float) -> str:
    if p < ALPHA and delta > 0:
        return "win"
    if p < ALPHA and delta < 0:
        return "loss"
    return "tie"


def verdict_code(gain, p_queries, p_collections, loss):
    """The verdict rule as an index into :data:`VERDICTS` (arrays broadcast): 0 *transfers*
    (gain > 0, p_queries and p_collections < ALPHA, no loss), 1 *likely transfers, weak
    evidence* (the same without p_collections), 2 *no evidence that it transfers*. ``loss``:
    some collection loses significantly after Holm's adjustment."""
    ok = (np.asarray(gain) > 0) & (np.asarray(p_queries) < ALPHA) & ~np.asarray(loss, dtype=bool)
    return np.where(ok & (np.asarray(p_collections) < ALPHA), 0, np.where(ok, 1, 2))


def collection_outcomes(deltas, p_values) -> tuple[np.ndarray, list[str]]:
    """(Holm-adjusted p-values, win/tie/loss per collection at family-wise ALPHA)."""
    adj = holm(np.asarray(p_values, dtype=np.float64))
    return adj, [_sig(float(a), float(d)) for a, d in zip(adj, deltas, strict=True)]


def _stable_verdict(code: int, why: str, stab: dict) -> tuple[str, str]:
    """The verdict the stability figure supports (see :func:`stability`'s ``rule``) and its
    reason; records ``verdict_before`` (the data's verdict) in ``stab``."""
    stab["verdict_before"] = VERDICTS[code]
    sup = stab["share_supporting"]
    if sup[VERDICTS[code]] >= STABILITY_MIN:
        return VERDICTS[code], why
    held = " and ".join(f"{stab['schemes'][k]['share_supporting'][VERDICTS[code]]:.0%} of the "
                        f"{stab['B']} {what}" for k, what in (("bootstrap", "query bootstraps"),
                                                              ("noise", "noise perturbations")))
    why += (f". Stability: '{VERDICTS[code]}' holds in {held}; the smaller is below "
            f"{STABILITY_MIN:.0%}")
    if code == 0 and sup[VERDICTS[1]] >= STABILITY_MIN:
        return VERDICTS[1], why + (f", '{VERDICTS[0]}' or '{VERDICTS[1]}' in at least "
                                   f"{sup[VERDICTS[1]]:.0%} of both: reported as "
                                   f"'{VERDICTS[1]}'")
    return VERDICTS[3], why + ": unstable, keep the default"


def _rule_text(rule: str) -> str:
    if rule == "nbr":
        return ("nbr: among the grid points whose macro mean on the tuning queries is within one "
                "paired standard error of the best one's, the one with the best objective "
                "averaged over its grid neighbourhood (rrfbench.transfer.neighbourhoods: the "
                "same non-numeric settings, at most one grid step on every numeric one); then "
                "the better objective, then grid order. The default: on near-ties it picks the "
                "middle of a plateau, which a resample or a CPU difference moves less than the "
                "single best point")
    if rule == "1se":
        return ("1se: among the grid points whose macro mean on the tuning queries is within one "
                "paired standard error of the best one's, the one closest to the default (then "
                "the better objective, then grid order)")
    return ("best: the best objective on the tuning queries (ties: the earliest grid point); "
            "follows near-ties, so it may change on noise (see stability)")


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
                    stability_seed: int = STABILITY_SEED) -> TransferResult:
    """The LOCO table, summary, verdict, stability, transfer matrix and selections (module
    docstring). ``stability_resamples=0`` skips the stability figure (and its rule)."""

    if len(colls) < 2:
        raise InputError("leave-one-collection-out needs at least two collections")
    if objective not in OBJECTIVES:
        raise choice("--objective", objective, OBJECTIVES)
    if rule not in RULES:
        raise choice("--rule", rule, RULES)
    nbrs = neighbourhoods(configs) if rule == "nbr" else None
    rows, deltas, loco_idx = [], [], []
    for i, c in enumerate(colls):
        others = [o for j, o in enumerate(colls) if j != i]
        idx = select(others, objective, rule, distances, nbrs)
        loco_idx.append(idx)
        loco = c.E[idx]
        d = loco - c.default_E
        p = permutation_test(loco, c.default_E)
        deltas.append(d)
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
    adj, outcomes = collection_outcomes([r["default"]["delta"] for r in rows],
                                        [r["default"]["p_value"] for r in rows])
    for r, a, o in zip(rows, adj, outcomes, strict=True):
        r["default"]["p_value_holm"] = float(a)
        r["default"]["outcome"] = o
    p_queries = macro_randomisation_test(deltas)
    hb = hierarchical_bootstrap(deltas)
    gain = float(np.mean([d.mean() for d in deltas]))
    losses = [r["collection"] for r in rows if r["default"]["outcome"] == "loss"]
    raw_losses = [r["collection"] for r in rows if r["default"]["outcome_unadjusted"] == "loss"]
    code = int(verdict_code(gain, p_queries, hb["p_value"], bool(losses)))
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
    transfers = verdict in VERDICTS[:2]
    recommended = ({"config": configs[idx_all], "label": labels[idx_all],
                    "reason": f"verdict: {verdict}"} if transfers else
                   {**default, "reason": f"verdict: {verdict}; the default stays"})
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
                             stability_seed=stability_seed)
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
        assumptions=tuple(assumptions), provenance=dict(provenance or {}), tests=tests,
        stability=stab)


# --------------------------------------------------------------------------- stability
class _Replicates:
    """B replicates of a matrix ``X`` (rows x queries), without building them all.

    Either a bootstrap: ``idx`` (B x n) the queries each replicate draws, ``W`` the counts
    (B x n, how often replicate b draws query q); or a noise draw: ``cols`` (B x m) the queries
    whose values change by ``noise`` (rows x B x m). Gives the replicates' sums, sums of squares
    and cross products of rows from matmuls, and one row's replicated differences to another.
    """

    def __init__(self, X: np.ndarray, idx: np.ndarray | None = None,
                 cols: np.ndarray | None = None, noise: np.ndarray | None = None):
        self.X, self.idx, self.cols, self.noise = X, idx, cols, noise
        self.n = X.shape[1]
        self._s1 = self._s2 = None
        if idx is not None:
            B, n = idx.shape
            self.W = np.bincount((idx + n * np.arange(B)[:, None]).ravel(),
                                 minlength=B * n).reshape(B, n).astype(np.float64)
        else:
            self.W = None
            self.Xc = X[:, cols]                        # (rows, B, m) before the change
            self.Xp = self.Xc + noise                   # ... and after

    def like(self, X: np.ndarray) -> _Replicates:
        """The same draw applied to another matrix over the same queries."""
        return _Replicates(X, self.idx, self.cols, self.noise)

    @property
    def B(self) -> int:
        return len(self.idx) if self.idx is not None else self.cols.shape[0]

    def s1(self) -> np.ndarray:
        """(rows, B): sum over the replicate's queries."""
        if self._s1 is None:
            if self.W is not None:
                self._s1 = self.X @ self.W.T
            else:
                self._s1 = self.X.sum(axis=1)[:, None] + self.noise.sum(axis=2)
        return self._s1

    def s2(self) -> np.ndarray:
        """(rows, B): sum of squares."""
        if self._s2 is None:
            if self.W is not None:
                self._s2 = (self.X * self.X) @ self.W.T
            else:
                self._s2 = ((self.X * self.X).sum(axis=1)[:, None]
                            + (self.Xp ** 2 - self.Xc ** 2).sum(axis=2))
        return self._s2

    def cross(self, rows: np.ndarray, reps: np.ndarray | None = None) -> np.ndarray:
        """(rows of X, P): sum over the queries of X[r] * X[rows[p]] in replicate reps[p]
        (``reps`` defaults to 0..B-1)."""
        reps = np.arange(self.B) if reps is None else reps
        if self.W is not None:
            return self.X @ (self.W[reps] * self.X[rows]).T
        uniq, inv = np.unique(rows, return_inverse=True)
        out = (self.X @ self.X[uniq].T)[:, inv]
        for j in range(self.cols.shape[1]):
            out += (self.Xp[:, reps, j] * self.Xp[rows, reps, j]
                    - self.Xc[:, reps, j] * self.Xc[rows, reps, j])
        return out

    def diffs(self, rows: np.ndarray, base: int) -> np.ndarray:
        """(B, n): replicate b's per-query values of row ``rows[b]`` minus row ``base``."""
        if self.idx is not None:
            return self.X[rows[:, None], self.idx] - self.X[base][self.idx]
        d = self.X[rows] - self.X[base][None, :]
        b = np.arange(self.B)[:, None]
        d[b, self.cols] += (self.noise[rows[:, None], b, np.arange(self.cols.shape[1])]
                            - self.noise[base][b, np.arange(self.cols.shape[1])])
        return d


def _first_max(obj: np.ndarray) -> np.ndarray:
    """Per column, the first row within 1e-12 of the column's maximum."""
    return np.argmax(obj >= obj.max(axis=0) - 1e-12, axis=0)


def _random_subsets(rng, B: int, n: int, m: int) -> np.ndarray:
    """``B`` random subsets of ``m`` of ``n`` columns, each in a fixed order. A stable argsort
    of uniform draws, not ``np.argpartition``: the partition returns the same subset in an order
    that depends on the SIMD sort NumPy dispatches to (AVX-512 vs AVX2), and the noise drawn
    next is assigned in that order, so the stability figures moved with the CPU."""
    return np.argsort(rng.random((B, n)), axis=1, kind="stable")[:, :m]


def _draw(scheme: str, colls: Sequence[CollectionData], B: int, rng,
          noise_shift: float, noise_share: float) -> list[tuple[_Replicates, _Replicates]]:
    """Per collection (tuning, evaluation) replicates, the default as the last row; when one
    split serves both, one draw (each query resampled or perturbed once for both)."""
    out = []
    for c in colls:
        XT = np.vstack([c.T, c.default_T[None, :]])
        same = c.protocol.tune_split == c.protocol.eval_split and c.T.shape == c.E.shape
        XE = np.vstack([c.E, c.default_E[None, :]])
        reps = []
        for X in ((XT,) if same else (XT, XE)):
            n = X.shape[1]
            if scheme == "data":
                reps.append(_Replicates(X, idx=np.arange(n)[None, :]))
            elif scheme == "bootstrap":
                reps.append(_Replicates(X, idx=rng.integers(0, n, size=(B, n))))
            else:
                m = min(n, max(1, int(np.ceil(noise_share * n))))
                cols = _random_subsets(rng, B, n, m)
                sd = noise_shift * n / np.sqrt(m)
                reps.append(_Replicates(X, cols=cols,
                                        noise=rng.normal(0.0, sd, size=(X.shape[0], B, m))))
        if same:
            rt = reps[0]
            out.append((rt, rt if np.array_equal(XE, XT) else rt.like(XE)))
        else:
            out.append((reps[0], reps[1]))
    return out


def _objective_replicates(fold: Sequence[int], objective: str, cache: dict) -> np.ndarray:
    """(grid, B): the objective of every replicate on the collections ``fold``."""
    if objective == "macro":
        return np.mean([cache["means"][c] for c in fold], axis=0)
    if objective == "worst":
        return np.min([cache["means"][c] - cache["dmeans"][c] for c in fold], axis=0)
    return -np.mean([cache["ranks"][c] for c in fold], axis=0)


def _select_replicates(folds: Sequence[Sequence[int]], reps, objective: str, rule: str,
                       dist: np.ndarray, cache: dict, neighbours=None) -> np.ndarray:
    """(folds, B): the grid point each replicate selects on the collections of each fold (as
    :func:`select`). The 1se rule's cross products are computed once per (collection,
    replicate, best point) however many folds share them."""
    G = len(dist)
    objs = [_objective_replicates(f, objective, cache) for f in folds]
    bests = np.stack([_first_max(o) for o in objs])                    # (folds, B)
    if rule == "best":
        return bests
    B = bests.shape[1]
    b = np.arange(B)
    gaps = [np.zeros_like(o) for o in objs]
    var = [np.zeros_like(o) for o in objs]
    for c in sorted({c for f in folds for c in f}):
        rt = reps[c][0]
        m = cache["means"][c]
        which = [k for k, f in enumerate(folds) if c in f]
        if rt.n > 1:
            keys = bests[which] * B + b                                # (folds with c, B)
            uniq, inv = np.unique(keys, return_inverse=True)
            cross = rt.cross(uniq // B, uniq % B)[:G]                  # (G, unique pairs)
            inv = inv.reshape(keys.shape)
            s2 = rt.s2()[:G]
        for w, k in enumerate(which):
            best = bests[k]
            g = m[best, b][None, :] - m                                # mean differences
            gaps[k] += g
            if rt.n > 1:
                sd2 = s2[best, b][None, :] - 2 * cross[:, inv[w]] + s2  # sum of squared diffs
                var[k] += np.maximum(sd2 - rt.n * g * g, 0.0) / (rt.n - 1) / rt.n
    out = np.empty_like(bests)
    for k, f in enumerate(folds):
        tied = gaps[k] / len(f) <= np.sqrt(var[k]) / len(f) + 1e-15
        if rule == "nbr":
            sm = objs[k] if neighbours is None else neighbours @ objs[k]
            sm = np.where(tied, sm, -np.inf)
            tied &= sm >= sm.max(axis=0) - 1e-12
        else:
            d = np.where(tied, dist[:, None], np.inf)
            tied &= d == d.min(axis=0)
        o = np.where(tied, objs[k], -np.inf)
        out[k] = np.argmax(tied & (o >= o.max(axis=0) - 1e-12), axis=0)
    return out


def _replicate_outcomes(colls, reps, objective: str, rule: str, dist: np.ndarray, rng,
                        flips: int, hb_draws: int, neighbours=None) -> dict:
    """Selections, tests and verdict codes of every replicate (see :func:`stability`)."""
    from scipy.stats import rankdata

    G = len(dist)
    cache = {"means": [rt.s1()[:G] / rt.n for rt, _ in reps],
             "dmeans": [rt.s1()[G] / rt.n for rt, _ in reps]}
    if objective == "meanrank":
        cache["ranks"] = [rankdata(-m, axis=0, method="average") for m in cache["means"]]
    C = len(colls)
    folds = [[j for j in range(C) if j != i] for i in range(C)] + [list(range(C))]
    sel = _select_replicates(folds, reps, objective, rule, dist, cache, neighbours)
    loco, full = sel[:C], sel[C]                                                # (C, B), (B,)
    out = _diff_verdicts([reps[i][1].diffs(loco[i], G) for i in range(C)], rng, flips, hb_draws)
    return {"loco": loco, "full": full, **out}


def _diff_verdicts(diffs: Sequence[np.ndarray], rng, flips: int, hb_draws: int) -> dict:
    """Verdict codes and cheap tests of B replicates from each collection's (B x n) per-query
    differences to the comparator (see :func:`stability`)."""
    C, B = len(diffs), diffs[0].shape[0]
    means, var_means, p_coll = np.zeros((C, B)), np.zeros((C, B)), np.ones((C, B))
    null_macro = np.zeros((flips, B))
    for i in range(C):
        d = diffs[i]                                                            # (B, n)
        n = d.shape[1]
        means[i] = d.mean(axis=1)
        var_means[i] = d.var(axis=1) / n
        null = rng.choice(np.array([-1.0, 1.0]), size=(flips, n)) @ d.T / n     # (flips, B)
        null_macro += null
        hits = (np.abs(null) >= np.abs(means[i]) - 1e-15).sum(axis=0)
        zero = np.abs(d).max(axis=1) <= 1e-8
        p_coll[i] = np.where(zero, 1.0, (1 + hits) / (flips + 1))
    gain = means.mean(axis=0)
    hits = (np.abs(null_macro / C) >= np.abs(gain) - 1e-15).sum(axis=0)
    p_q = np.where(np.abs(means).max(axis=0) <= 1e-8, 1.0, (1 + hits) / (flips + 1))
    # as hierarchical_bootstrap: a collection drawn twice in one draw has the same query
    # resample (here: the same normal deviate) both times
    picks = rng.integers(0, C, size=(hb_draws, C))
    z = rng.standard_normal((hb_draws, C, B))[np.arange(hb_draws)[:, None], picks]
    boot = (means[picks] + np.sqrt(var_means[picks]) * z).mean(axis=1)          # (draws, B)
    p_c = np.minimum(1.0, 2 * np.minimum((boot <= 0).mean(axis=0), (boot >= 0).mean(axis=0)))
    p_c = np.where(np.abs(boot).max(axis=0) <= 1e-8, 1.0, p_c)
    p_holm = holm(p_coll.T).T                                                  # (C, B)
    loss = ((p_holm < ALPHA) & (means < 0)).any(axis=0)
    return {"code": verdict_code(gain, p_q, p_c, loss), "p_queries": p_q, "p_collections": p_c,
            "gain": gain, "means": means, "p_holm": p_holm}


def verdict_stability(deltas: Sequence[np.ndarray], code: int, *,
                      moved: Sequence[np.ndarray] | None = None,
                      n_resamples: int = STABILITY_RESAMPLES, seed: int = STABILITY_SEED,
                      noise_shift: float = NOISE_SHIFT, noise_share: float = NOISE_SHARE,
                      flips: int = STABILITY_FLIPS, hb_draws: int = STABILITY_HB_DRAWS) -> dict:
    """How often a verdict comes out the same when the *comparison* is perturbed and the
    choices are held fixed: ``deltas[c]``, per collection, the per-query differences of what
    was chosen (e.g. a per-query policy's LOCO choices) to its comparator; ``code`` the data's
    verdict. The two schemes of :func:`stability` with its cheap tests: ``bootstrap`` resamples
    each collection's queries; ``noise`` moves a share ``noise_share`` of them by the size of a
    CPU difference, ``N(0, 2 s^2)`` on a difference of two configurations (each moves by
    ``N(0, s^2)``, ``s = noise_shift * n / sqrt(m)``) and nothing where ``moved[c]`` is False
    (the query was fused with the comparator itself, so its difference stays 0). Returns what
    :func:`stability` does for the verdict (``share_supporting``, ``stability``, ``schemes``),
    for :func:`_stable_verdict`."""
    rng = np.random.default_rng(seed)
    deltas = [np.asarray(d, dtype=np.float64) for d in deltas]
    moved = [np.ones(len(d), bool) for d in deltas] if moved is None else [np.asarray(m, bool) for m in moved]
    B = int(n_resamples)
    schemes = {}
    for scheme in ("bootstrap", "noise"):
        diffs = []
        for d, mv in zip(deltas, moved, strict=True):
            n = len(d)
            if scheme == "bootstrap":
                diffs.append(d[rng.integers(0, n, size=(B, n))])
                continue
            m = min(n, max(1, int(np.ceil(noise_share * n))))
            cols = _random_subsets(rng, B, n, m)
            sd = noise_shift * n / np.sqrt(m) * np.sqrt(2.0)
            rep = np.repeat(d[None, :], B, axis=0)
            b = np.arange(B)[:, None]
            rep[b, cols] += rng.normal(0.0, sd, size=(B, m)) * mv[cols]
            diffs.append(rep)
        out = _diff_verdicts(diffs, rng, flips, hb_draws)
        counts = np.bincount(out["code"], minlength=3)
        schemes[scheme] = {
            "share_same_verdict": float(np.mean(out["code"] == code)),
            "share_supporting": {VERDICTS[0]: float(np.mean(out["code"] == 0)),
                                 VERDICTS[1]: float(np.mean(out["code"] <= 1)),
                                 VERDICTS[2]: float(np.mean(out["code"] == 2))},
            "verdict_counts": {VERDICTS[k]: int(counts[k]) for k in range(3)}}
    sup = {v: min(schemes[s]["share_supporting"][v] for s in schemes) for v in VERDICTS[:3]}
    return {"B": B, "seed": int(seed), "min_share": STABILITY_MIN,
            "share_same_verdict": min(schemes[s]["share_same_verdict"] for s in schemes),
            "share_supporting": sup, "stability": sup[VERDICTS[code]], "schemes": schemes,
            "held_fixed": "the choices (each fold's policy and static default, fitted on the "
                          "real training data): only the evaluation comparison is resampled "
                          "or perturbed, since refitting every fold's policy per replicate "
                          "would cost B times the whole LOCO",
            "rule": f"stability = the share of replicates supporting the data's verdict (the "
                    f"same verdict, or for '{VERDICTS[1]}' also '{VERDICTS[0]}'), the smaller "
                    f"of the two schemes' shares; below {STABILITY_MIN:.0%} a '{VERDICTS[0]}' "
                    f"verdict becomes '{VERDICTS[1]}' when that has {STABILITY_MIN:.0%} support, "
                    f"otherwise the verdict is '{VERDICTS[3]}' and the default stays",
            "tests": f"sign-flip tests with {flips} flips on each replicate's queries (per "
                     f"collection with Holm, and of the macro mean); hierarchical bootstrap "
                     f"with {hb_draws} draws of collections, its query level the normal "
                     "approximation of each collection's query-bootstrap mean"}


def stability(colls: Sequence[CollectionData], objective: str = "macro", rule: str = DEFAULT_RULE,
              distances: np.ndarray | None = None, *, neighbours=None,
              reference: dict | None = None,
              labels: Sequence[str] | None = None, family_of: np.ndarray | None = None,
              n_resamples: int = STABILITY_RESAMPLES, seed: int = STABILITY_SEED,
              noise_shift: float = NOISE_SHIFT, noise_share: float = NOISE_SHARE,
              flips: int = STABILITY_FLIPS, hb_draws: int = STABILITY_HB_DRAWS) -> dict:
    """How often selection and verdict come out the same on perturbed data.

    Two schemes, ``n_resamples`` replicates each, one ``numpy`` generator seeded ``seed``:

    * ``bootstrap``: the queries of each collection resampled with replacement (tuning and
      evaluation queries separately; the same draw when a collection tunes and evaluates on
      one split), the same resample for every configuration and the default;
    * ``noise``: on each collection a share ``noise_share`` of the queries (at least one, drawn
      per replicate) changes value by independent N(0, s^2) per configuration and query (the
      default too), ``s = noise_shift * n / sqrt(m)`` for m changed queries of n, so each
      configuration's mean on the collection moves by N(0, noise_shift^2): a CPU difference in
      the dense encoder moves a mean by about 0.001 through a few queries whose near-tied
      documents swap. Independent across configurations: a worst case for near-ties (real
      changes move similar configurations together). Values are not clipped to [0, 1].

    Each replicate redoes LOCO selection (``objective``, ``rule``), the selection on all
    collections and the verdict, with cheaper tests than the real ones: sign-flip tests (per
    collection, Holm over them, and of the macro mean) with ``flips`` sign flips instead of
    10000, on the replicate's own queries; and a hierarchical bootstrap with ``hb_draws``
    draws of collections whose query level is the normal approximation of each collection's
    query-bootstrap mean. ``reference``: {"code": verdict index, "config": index selected on
    all collections, "loco": LOCO indices, "outcomes": win/tie/loss per collection} of the real
    data (without it: the cheap tests on the data). Returns a JSON-ready dict; the
    ``share_same_*`` at the top and under ``per_collection`` are the smaller of the two
    schemes' shares.
    """
    G = colls[0].T.shape[0]
    dist = np.zeros(G) if distances is None else np.asarray(distances, dtype=np.float64)
    rng = np.random.default_rng(seed)
    data = _replicate_outcomes(colls, _draw("data", colls, 1, None, 0, 0), objective, rule, dist,
                               rng, flips, hb_draws, neighbours)
    cheap_out = [_sig(p, d) for p, d in zip(data["p_holm"][:, 0], data["means"][:, 0],
                                            strict=True)]
    ref = reference or {"code": int(data["code"][0]), "config": int(data["full"][0]),
                        "loco": list(data["loco"][:, 0]), "outcomes": cheap_out}
    code, idx_all, loco_idx = ref["code"], ref["config"], np.asarray(ref["loco"])
    ref_sign = np.array([{"win": 1, "loss": -1, "tie": 0}[o] for o in ref["outcomes"]])
    schemes, per_coll = {}, {c.name: {} for c in colls}
    for scheme in ("bootstrap", "noise"):
        reps = _draw(scheme, colls, n_resamples, rng, noise_shift, noise_share)
        out = _replicate_outcomes(colls, reps, objective, rule, dist, rng, flips, hb_draws,
                                  neighbours)
        outcome = np.where(out["p_holm"] < ALPHA, np.sign(out["means"]), 0)   # (C, B)
        for i, c in enumerate(colls):
            pc = per_coll[c.name]
            for key, v in (("share_same_selection", np.mean(out["loco"][i] == loco_idx[i])),
                           ("share_same_outcome", np.mean(outcome[i] == ref_sign[i]))):
                pc[key] = min(pc.get(key, 1.0), float(v))
        counts = np.bincount(out["code"], minlength=3)
        picks, freq = np.unique(out["full"], return_counts=True)
        top = np.argsort(-freq, kind="stable")[:3]
        row = {"share_same_verdict": float(np.mean(out["code"] == code)),
               "share_supporting": {VERDICTS[0]: float(np.mean(out["code"] == 0)),
                                    VERDICTS[1]: float(np.mean(out["code"] <= 1)),
                                    VERDICTS[2]: float(np.mean(out["code"] == 2))},
               "share_same_config": float(np.mean(out["full"] == idx_all)),
               "share_same_loco_selection": float(np.mean(out["loco"] == loco_idx[:, None])),
               "verdict_counts": {VERDICTS[k]: int(counts[k]) for k in range(3)},
               "most_selected": [{"label": labels[picks[t]] if labels else int(picks[t]),
                                  "share": float(freq[t] / n_resamples)} for t in top]}
        if family_of is not None:
            row["share_same_family"] = float(np.mean(family_of[out["full"]]
                                                     == family_of[idx_all]))
        schemes[scheme] = row
    res = {"B": int(n_resamples), "seed": int(seed), "min_share": STABILITY_MIN}
    for key in ("share_same_verdict", "share_same_config", "share_same_loco_selection",
                "share_same_family"):
        if key in schemes["bootstrap"]:
            res[key] = min(schemes[s][key] for s in schemes)
    res["share_supporting"] = {v: min(schemes[s]["share_supporting"][v] for s in schemes)
                               for v in VERDICTS[:3]}
    res["stability"] = res["share_supporting"][VERDICTS[code]]
    res |= {
        "rule": f"stability = the share of replicates supporting the data's verdict (the same "
                f"verdict, or for '{VERDICTS[1]}' also '{VERDICTS[0]}'), the smaller of the two "
                f"schemes' shares; below {STABILITY_MIN:.0%} a '{VERDICTS[0]}' verdict becomes "
                f"'{VERDICTS[1]}' when that has {STABILITY_MIN:.0%} support, otherwise the "
                f"verdict is '{VERDICTS[3]}' and the default stays",
        "schemes": schemes,
        "perturbation": {
            "bootstrap": "bootstrap of the queries within each collection (tuning and "
                         "evaluation queries separately, one draw when one split serves both), "
                         "the same resample for every configuration and the default",
            "noise": f"per collection {noise_share:.0%} of the queries (at least one, drawn "
                     "per replicate) change by independent N(0, s^2) for every configuration "
                     f"and the default, s = {noise_shift} * n / sqrt(m) (m changed of n "
                     f"queries): each configuration's mean moves by N(0, {noise_shift}^2), the "
                     "size of a CPU difference in the dense encoder; independent across "
                     "configurations (a worst case for near-ties); not clipped to [0, 1]"},
        "tests": f"sign-flip tests with {flips} flips (not 10000) on each replicate's queries: "
                 "per collection (Holm over them) and of the macro mean; hierarchical "
                 f"bootstrap with {hb_draws} draws of collections, its query level the normal "
                 "approximation of each collection's query-bootstrap mean",
        "per_collection": per_coll,
        "cheap_tests_on_data": {"verdict": VERDICTS[int(data["code"][0])],
                                "agrees": bool(int(data["code"][0]) == code),
                                "outcomes": cheap_out,
                                "p_value_queries": float(data["p_queries"][0]),
                                "p_value_collections": float(data["p_collections"][0])},
    }
    return res


# --------------------------------------------------------------------------- distances
def fusion_distance(cfg, n_runs: int) -> float:
    """How far a fusion configuration is from RRF k=60 with equal weights (0 = the same).

    RRF: mean |ln((k+1)/61)| + L1 distance of the weight shares to equal shares, +1 each for a
    depth cut, a rank base other than 1 and a result limit. Score fusion: 10 more (another
    family) plus the weight-share distance.
    """
    w = np.asarray(cfg.weights, dtype=np.float64)
    share = w / w.sum() if w.sum() > 0 else w
    d = float(np.abs(share - 1.0 / n_runs).sum())
    if cfg.method != "rrf":
        return 10.0 + d
    k = np.asarray(cfg.k, dtype=np.float64)
    d += float(np.mean(np.abs(np.log((k + 1) / 61.0))))
    d += float(any(x is not None for x in cfg.depth)) + float(cfg.rank_base != 1)
    return d + float(bool(cfg.limit))


def knob_distance(params: dict, shipped: dict, knobs) -> float:
    """How far preset knob values are from the shipped ones: sum of |difference| / range."""
    d = 0.0
    for k in knobs:
        if k.fixed or k.name not in params:
            continue
        a, b = params[k.name], shipped[k.name]
        if a is None or b is None:  # "off" vs a value: one step away
            d += float(a is not b)
        elif isinstance(k.default, bool):
            d += float(a != b)
        elif k.lo is not None and k.hi is not None and k.hi > k.lo:
            d += abs(float(a) - float(b)) / (k.hi - k.lo)
        else:
            d += float(a != b)
    return d


# --------------------------------------------------------------------------- gathering
def combine(parts: list[tuple[str, list, object]]):
    """One engine input over several collections: runs per retriever and qrels, with query ids
    prefixed ``<collection>\\x1f``; returns (runs, qrels)."""


    n = len(parts[0][1])
    runs = []
    for r in range(n):
        frames, floors = [], set()
        for name, rs, _ in parts:
            df = rs[r].df
            frames.append(run_frame(name + SEP + df.qid.to_numpy(dtype=object),
                                    df.docid.to_numpy(dtype=object), df.score.to_numpy(),
                                    df["rank"].to_numpy()))
            floors.add(rs[r].score_floor)
        if len(floors) != 1:
            raise InputError(f"run {parts[0][1][r].name!r} declares different score floors "
                             f"across collections: {sorted(map(str, floors))}")
        runs.append(Run(pd.concat(frames, ignore_index=True), parts[0][1][r].name,
                        meta={"score_floor": floors.pop()}, _ranked=True))
    qr = []
    for name, _, qrels in parts:
        df = qrels.df
        qr.append(pd.DataFrame({"qid": name + SEP + df.qid.astype(str), "docid": df.docid,
                                "relevance": df.relevance}))
    return runs, Qrels(pd.concat(qr, ignore_index=True), "suite")


def slices(qids: Sequence[str]) -> dict[str, np.ndarray]:
    """Per collection, the positions of its queries in a combined engine's query list."""
    names = np.array([q.split(SEP, 1)[0] for q in qids], dtype=object)
    return {n: np.flatnonzero(names == n) for n in dict.fromkeys(names)}


def collection_stats(ds, protocol: Protocol) -> dict:
    """What may explain which constants a collection prefers."""
    qr = ds.qrels(protocol.eval_split).df
    rel = qr[qr.relevance > 0].groupby("qid").size()
    q = ds.split_queries(protocol.eval_split)
    doc_len = ds.corpus.text.str.split().str.len() + ds.corpus.title.str.split().str.len()
    return {"docs": int(len(ds.corpus)), "eval_queries": int(len(q)),
            "relevant_per_query": float(rel.mean()) if len(rel) else 0.0,
            "query_words": float(q.text.str.split().str.len().mean()) if len(q) else 0.0,
            "doc_words": float(doc_len.mean())}


def spearman(x, y) -> float:
    """Rank correlation (average ranks for ties)."""

    rx, ry = pd.Series(x).rank().to_numpy(), pd.Series(y).rank().to_numpy()
    if rx.std() == 0 or ry.std() == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


@dataclass
class SuiteMatrices:
    """What a free-fusion suite sweep gives: per collection its matrices, the grid as labels,
    configurations (JSON) and :class:`~rrfbench.engine.Config` objects, and the sweep tables."""

    colls: list
    names: list
    labels: list
    configs: list
    cfgs: list
    tables: dict
    k_curves: dict


def suite_matrices(datasets_protocols: list, load: Callable, grid, metric: str,
                   metrics: Sequence[str], out=None, progress: bool = True, map_chunks=None,
                   log: Callable[[str], None] = lambda _m: None, suite: str = "") -> SuiteMatrices:
    """One combined engine per split role, one sweep each (resumed from ``out``), sliced back
    into per-collection matrices (``load(dataset, split)``: the runs to fuse)."""
    names = None
    parts_t, parts_e = [], []
    same = all(p.tune_split == p.eval_split for _, p in datasets_protocols)
    for ds, p in datasets_protocols:
        rt = load(ds, p.tune_split)
        names = names or [r.name for r in rt]
        parts_t.append((ds.name, rt, ds.qrels(p.tune_split)))
        re_ = rt if p.eval_split == p.tune_split else load(ds, p.eval_split)
        parts_e.append((ds.name, re_, ds.qrels(p.eval_split)))
    te = FusionEngine(*combine(parts_t), tuple(metrics))
    ee = te if same else FusionEngine(*combine(parts_e), tuple(metrics))
    log(f"suite {suite}: {len(grid)} configurations x {len(datasets_protocols)} collections "
        f"({len(te.qids)} tuning queries, {len(ee.qids)} evaluation queries)")
    tt = run_sweep(te, grid, out, progress=progress, name="sweep_tune", map_chunks=map_chunks)
    et = tt if same else run_sweep(ee, grid, out, progress=progress, name="sweep_eval",
                                   map_chunks=map_chunks)
    m = te.metric_names.index(metric)
    if m != 0:
        raise InputError(f"the tuning metric must be the engine's first metric ({te.metric_names[0]})")
    pq_t = np.stack(tt.per_query.to_numpy())
    pq_e = np.stack(et.per_query.to_numpy())
    n = len(names)
    refs = single_run_configs(n) + [rrf60_config(n)]
    ref_t = te.evaluate(refs)[:, m]
    ref_e = ref_t if same else ee.evaluate(refs)[:, m]
    st, se = slices(te.qids), slices(ee.qids)
    colls = []
    for ds, p in datasets_protocols:
        a, b = st[ds.name], se[ds.name]
        colls.append(CollectionData(
            name=ds.name, protocol=p, T=pq_t[:, a], E=pq_e[:, b], default_T=ref_t[n, a],
            default_E=ref_e[n, b], eval_qids=[ee.qids[i].split(SEP, 1)[1] for i in b],
            tune_qids=[te.qids[i].split(SEP, 1)[1] for i in a],
            singles_T={nm: ref_t[i, a] for i, nm in enumerate(names)},
            singles_E={nm: ref_e[i, b] for i, nm in enumerate(names)},
            stats=collection_stats(ds, p)))
    labels = list(tt.label)
    cfgs = configs_from_table(tt, names)
    configs = [{**c.to_json(), "label": lab} for c, lab in zip(cfgs, labels, strict=True)]
    return SuiteMatrices(colls, names, labels, configs, cfgs, {"tune": tt, "eval": et},
                         _k_curves(tt, et, names, colls, metric, st, se))


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


def _k_curves(tt, et, names, colls, metric, st, se) -> dict:
    """Per collection, the metric of RRF with equal weights at every k of the grid (evaluation
    queries), and the k each collection prefers on its tuning queries."""
    eq = (tt.method == "rrf") & (tt.rank_base == 1) & (tt.limit == 0)
    for nm in names:
        eq &= tt[f"depth_{nm}"] == 0
    w = tt[[f"w_{nm}" for nm in names]].to_numpy()
    k = tt[[f"k_{nm}" for nm in names]].to_numpy()
    eq &= np.isclose(w, w[:, :1]).all(axis=1) & (w[:, 0] > 0) & np.isclose(k, k[:, :1]).all(axis=1)
    rows = np.flatnonzero(eq.to_numpy())
    if not len(rows):
        return {}
    ks = k[rows, 0]
    order = np.argsort(ks, kind="stable")
    rows, ks = rows[order], ks[order]
    pq_e = np.stack(et.per_query.to_numpy()[rows])
    pq_t = np.stack(tt.per_query.to_numpy()[rows])
    curves, best = {}, {}
    for c in colls:
        curves[c.name] = pq_e[:, se[c.name]].mean(axis=1).tolist()
        best[c.name] = float(ks[best_index(pq_t[:, st[c.name]].mean(axis=1))])
    return {"k": ks.tolist(), "eval": curves, "best_k": best}


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
