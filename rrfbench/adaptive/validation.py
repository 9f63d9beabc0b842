"""Query-adaptive fusion, validated the way static defaults are (:mod:`rrfbench.tuning.transfer`).

Per held-out collection C of a suite (leave-one-collection-out), on the *other* collections'
tuning splits only:

1. the **static default** is selected by the suite rule (:func:`rrfbench.tuning.selection.select`);
2. **candidates** (:func:`rrfbench.adaptive.policies.candidates`): the static default and K-1 grid points
   that most raise the per-query oracle over the training queries;
3. a **policy** (:mod:`rrfbench.adaptive.policies`) learns from the training queries' features
   (:mod:`rrfbench.adaptive.features`, no qrels) which candidate to fuse each query with (select /
   ridge / gbm), or regresses the weight vector and snaps it to the static default's weight
   family (wridge / wgbm: :func:`rrfbench.adaptive.policies.weight_family`); its kind and its hedge
   threshold are chosen by an inner leave-one-collection-out
   over the training collections, and when no kind gains there the policy is the static default.

Then C's evaluation queries are fused each with its chosen candidate and scored. C's qrels, and
every evaluation split, reach nothing but that last step (``tests/adaptive/test_validation.py`` poisons
them). Reported per collection against the fold's static default and RRF k=60, with the tests of
:mod:`rrfbench.tuning.transfer` (sign flips per collection with Holm's adjustment, the macro
randomisation test, the hierarchical bootstrap) and its verdict rule, plus the **headroom**: the
per-query oracle over the whole grid and over the K candidates, and the share of the candidates'
oracle gain the policy captures. The saved policy is the same procedure run on all collections.

Called from: ``workflows.commands``, ``workflows.suite``.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import InputError
from ..core.parallel import process_map
from ..core.runs import Run, content_digest, run_frame
from ..core.stats import (
    bootstrap_ci,
    hierarchical_bootstrap,
    macro_randomisation_test,
    permutation_test,
)
from ..core.store import provenance, results_dir, write_parquet
from ..fusion.config import Config
from ..results.suite import AdaptiveResult
from ..results.values import TESTS
from ..tuning.decisions import DEFAULT_DECISION, Evidence, Fold, decision_record, grade, refused
from ..tuning.holdout import preset_matrix, rrf60_config
from ..tuning.selection import fusion_distance, knob_distance, neighbourhoods, select
from ..tuning.stability import STABILITY_RESAMPLES, verdict_stability
from ..tuning.suite_data import CollectionData, suite_matrices
from ..tuning.verdicts import VERDICTS, _stable_verdict, collection_outcomes, verdict_code
from . import features as qfeatures
from .features import corpus_stats, feature_names, query_features, select_features
from .policies import (
    KINDS,
    N_CANDIDATES,
    WEIGHT_KINDS,
    Policy,
    candidates,
    fit_hedged,
    fit_model,
    weight_family,
)

IMPORTANCE_SEED = 0


def _fit(train: Sequence[CollectionData], XT: Mapping[str, np.ndarray], static: int,
         k: int, kinds: Sequence[str], configs: Sequence[dict]
         ) -> tuple[dict, str, dict, float, dict]:
    """Candidates and the hedged policy from ``train`` collections' tuning queries:
    ({"select"|...: candidate indices}, kind, model, tau, notes). The K candidates serve
    select/ridge/gbm, the static default's weight family the weight kinds."""
    cands = candidates([c.T for c in train], static, k)
    fam, points = weight_family(configs, static)
    X = np.vstack([XT[c.name] for c in train])
    Y = np.hstack([c.T[cands] for c in train]).T
    YW = np.hstack([c.T[fam] for c in train]).T
    groups = np.concatenate([np.full(c.T.shape[1], i) for i, c in enumerate(train)])
    kind, model, tau, notes = fit_hedged(X, Y, groups, kinds, YW=YW, points=points)
    sets = {kd: (fam if kd in WEIGHT_KINDS else cands) for kd in (*kinds, "constant")}
    return sets, kind, model, tau, notes


def _policy(kind, model, tau, cands, configs, runs, features, feature_set, notes=None) -> Policy:
    return Policy(kind=kind, runs=list(runs), features=list(features),
                  candidates=[dict(configs[i]) for i in cands], model=model,
                  tau=float(tau), feature_set=feature_set, notes=dict(notes or {}))


def _importances(policy: Policy, X: np.ndarray, E: np.ndarray, seed: int) -> np.ndarray:
    """Permutation importance on a held-out collection: the drop of the policy's mean metric
    when one feature's column is shuffled (one permutation per feature, fixed seed)."""
    rng = np.random.default_rng(seed)
    base = E[policy.choose(X), np.arange(len(X))].mean()
    out = np.zeros(X.shape[1])
    if policy.kind == "constant":
        return out
    for j in range(X.shape[1]):
        Xp = X.copy()
        Xp[:, j] = Xp[rng.permutation(len(X)), j]
        out[j] = base - E[policy.choose(Xp), np.arange(len(X))].mean()
    return out


def _inner_evidence(train: Sequence[CollectionData], XT: Mapping[str, np.ndarray],
                    XE: Mapping[str, np.ndarray], kind: str, tau: float, k: int,
                    configs: Sequence[dict], features: Sequence[str], rule: str, distances,
                    neighbours) -> list[np.ndarray]:
    """The nested grading's LOCO evidence inside one fold's training collections ``train``:
    per collection c of them, a policy of the fold's ``kind`` and threshold ``tau`` fitted on
    the others' tuning queries (static default and candidates re-selected there) and scored on
    c's evaluation queries against that static default: c's per-query differences. The kind and
    threshold are the ones the fold chose on all of ``train`` (not re-chosen per inner fold,
    which would cost an inner LOCO per fit); nothing outside ``train`` is read."""
    out = []
    for i, c in enumerate(train):
        rest = [o for j, o in enumerate(train) if j != i]
        static = select(rest, "macro", rule, distances, neighbours)
        if kind == "constant":
            out.append(np.zeros(c.E.shape[1]))
            continue
        if kind in WEIGHT_KINDS:
            used, points = weight_family(configs, static)
        else:
            used, points = candidates([o.T for o in rest], static, k), None
        X = np.vstack([XT[o.name] for o in rest])
        Y = np.hstack([o.T[used] for o in rest]).T
        model = fit_model(kind, X, Y, points)
        pol = Policy(kind=kind, runs=[], features=list(features),
                     candidates=[dict(configs[j]) for j in used], model=model, tau=float(tau))
        ch = pol.choose(XE[c.name])
        out.append(c.E[used][ch, np.arange(len(ch))] - c.E[static])
    return out


def _significant(deltas: Sequence[np.ndarray], moved, stability_resamples: int) -> bool:
    """Whether the significance verdict on these LOCO differences (with its stability check,
    choices held fixed) is *transfers* or *likely transfers*."""
    gain = float(np.mean([d.mean() for d in deltas]))
    _, outcomes = collection_outcomes([float(d.mean()) for d in deltas],
                                      [permutation_test(d, np.zeros_like(d)) for d in deltas])
    code = int(verdict_code(gain, macro_randomisation_test(deltas),
                            hierarchical_bootstrap(deltas)["p_value"], "loss" in outcomes))
    if code == 2:
        return False
    if stability_resamples <= 0:
        return True
    stab = verdict_stability(deltas, code, moved=moved, n_resamples=stability_resamples)
    return _stable_verdict(code, "", stab)[0] in VERDICTS[:2]


def adaptive_result(suite: str, colls: list[CollectionData], XT: Mapping[str, np.ndarray],
                    XE: Mapping[str, np.ndarray], *, configs: Sequence[dict], labels: Sequence[str],
                    runs: Sequence[str], specs: Sequence[str] = (), metric: str = "nDCG@10",
                    rule: str = "nbr", distances=None, neighbours=None,
                    k: int = N_CANDIDATES, kinds: Sequence[str] = KINDS,
                    feature_set: str = "portable", features: Sequence[str] | None = None,
                    default: dict | None = None,
                    static_recommended: dict | None = None, provenance: dict | None = None,
                    assumptions: Sequence[str] = (), preset: str | None = None,
                    stability_resamples: int = STABILITY_RESAMPLES,
                    decision: str = DEFAULT_DECISION) -> AdaptiveResult:
    """The LOCO table, verdict, headroom and the policy trained on all collections.

    ``XT[name]`` / ``XE[name]``: feature matrices of a collection's tuning / evaluation queries,
    rows in ``c.tune_qids`` / ``c.eval_qids`` order. ``default``: the RRF k=60 configuration
    (``c.default_E``); ``features``: the column names (default: :func:`feature_names` of
    ``runs`` and ``feature_set``); ``static_recommended``: what the static suite result recommends (the
    fallback when the policy's evidence is not there). ``stability_resamples``: replicates of
    :func:`rrfbench.tuning.stability.verdict_stability` (0: none); a verdict below 80% stability is
    weakened or becomes *unstable* (:func:`rrfbench.tuning.verdicts._stable_verdict`). ``decision``:
    the rule that turns the LOCO evidence into the recommendation, graded by nested LOCO
    (:mod:`rrfbench.tuning.decisions`; :func:`_inner_evidence` for the folds' evidence)."""
    if len(colls) < 3:
        raise InputError("adaptive fusion needs at least three collections (a policy's threshold "
                         "is chosen leave-one-collection-out inside each training fold)")
    features = list(features) if features is not None else feature_names(list(runs), feature_set)
    for name, X in (*XT.items(), *XE.items()):
        if np.shape(X)[1] != len(features):
            raise InputError(f"{name}: {np.shape(X)[1]} feature columns, expected {len(features)}")
    rows, deltas, deltas_rrf, imps, moved = [], [], [], [], []
    per_kind = {kd: [] for kd in kinds}
    # every fold's fit (and the final one, on all collections) is independent: on all cores
    trains = [[o for j, o in enumerate(colls) if j != i] for i in range(len(colls))] + [list(colls)]
    statics = [select(t, "macro", rule, distances, neighbours) for t in trains]
    fits = process_map(_fit, [(t, {o.name: XT[o.name] for o in t}, s, k, tuple(kinds), configs)
                              for t, s in zip(trains, statics, strict=True)])
    for i, c in enumerate(colls):
        static = statics[i]
        sets, kind, model, tau, notes = fits[i]
        used = sets[kind]
        cands = sets["constant"]
        pol = _policy(kind, model, tau, used, configs, runs, features, feature_set)
        ch = pol.choose(XE[c.name])
        q = np.arange(len(ch))
        Ec = c.E[used]
        ada, stat = Ec[ch, q], c.E[static]
        d, d_rrf = ada - stat, ada - c.default_E
        deltas.append(d)
        deltas_rrf.append(d_rrf)
        moved.append(np.asarray(used)[ch] != static)
        for kd in kinds:
            m_k, tau_k = notes["fitted"][kd]
            ch_k = _policy(kd, m_k, tau_k, sets[kd], configs, runs, features,
                           feature_set).choose(XE[c.name])
            per_kind[kd].append(c.E[sets[kd]][ch_k, q] - stat)
        oracle_k, oracle_g = c.E[cands].max(axis=0), c.E.max(axis=0)
        head = float((oracle_k - stat).mean())
        imps.append(_importances(pol, XE[c.name], Ec, IMPORTANCE_SEED + i))
        rows.append({
            "collection": c.name, "n_queries": int(len(ch)), "policy": kind,
            "tau": float(tau), "candidates": [labels[j] for j in used],
            "chosen_share": [float(np.mean(ch == j)) for j in range(len(used))],
            "switched": float(np.mean(ch != 0)),
            "adaptive": {"value": float(ada.mean()), "ci95": list(bootstrap_ci(ada))},
            "static": {"label": labels[static], "value": float(stat.mean()),
                       "delta": float(d.mean()), "delta_ci95": list(bootstrap_ci(d)),
                       "p_value": permutation_test(ada, stat)},
            "default": {"value": float(c.default_E.mean()), "delta": float(d_rrf.mean()),
                      "p_value": permutation_test(ada, c.default_E)},
            "oracle": {"candidates": float(oracle_k.mean()), "grid": float(oracle_g.mean()),
                       "captured": float(d.mean() / head) if head > 1e-12 else 0.0},
            "wins_ties_losses": [int((d > 1e-12).sum()), int((np.abs(d) <= 1e-12).sum()),
                                 int((d < -1e-12).sum())],
            "inner": {kd: v for kd, v in notes.items() if kd != "fitted"},
            "per_query": {"qids": list(c.eval_qids), "adaptive": ada.tolist(),
                          "static": stat.tolist(), "chosen": ch.tolist()},
        })
    adj, outcomes = collection_outcomes([r["static"]["delta"] for r in rows],
                                        [r["static"]["p_value"] for r in rows])
    for r, a, o in zip(rows, adj, outcomes, strict=True):
        r["static"]["p_value_holm"] = float(a)
        r["static"]["outcome"] = o
    gain = float(np.mean([d.mean() for d in deltas]))
    p_q = macro_randomisation_test(deltas)
    hb = hierarchical_bootstrap(deltas)
    losses = [r["collection"] for r in rows if r["static"]["outcome"] == "loss"]
    code = int(verdict_code(gain, p_q, hb["p_value"], bool(losses)))
    why = (f"LOCO macro gain {gain:+.4f} over the static default (selected on the same training "
           f"collections); p={p_q:.4f} over queries, hierarchical bootstrap p={hb['p_value']:.4f}"
           f" (95% CI {hb['ci95'][0]:+.4f} to {hb['ci95'][1]:+.4f}); "
           + (f"significant losses on {', '.join(losses)}" if losses else
              f"no collection loses significantly (Holm over {len(rows)} tests)"))
    if code == 2:
        why += ": keep the static default"
    stab = (verdict_stability(deltas, code, moved=moved, n_resamples=stability_resamples)
            if stability_resamples > 0 else {})
    verdict, why = _stable_verdict(code, why, stab) if stab else (VERDICTS[code], why)
    mean = lambda key, sub: float(np.mean([r[key][sub] for r in rows]))  # noqa: E731
    static_macro = mean("static", "value")
    head_k = mean("oracle", "candidates") - static_macro
    summary = {
        "macro": {"adaptive": mean("adaptive", "value"), "static": static_macro,
                  "default": mean("default", "value"), "oracle_candidates": mean("oracle", "candidates"),
                  "oracle_grid": mean("oracle", "grid")},
        "gain": gain, "gain_vs_default": float(np.mean([d.mean() for d in deltas_rrf])),
        "p_value_queries": p_q, "p_value_collections": hb["p_value"],
        "gain_ci95_collections": list(hb["ci95"]),
        "p_value_queries_vs_default": macro_randomisation_test(deltas_rrf),
        "headroom_candidates": head_k, "headroom_grid": mean("oracle", "grid") - static_macro,
        "captured": gain / head_k if head_k > 1e-12 else 0.0,
        "wins": outcomes.count("win"), "ties": outcomes.count("tie"),
        "losses": outcomes.count("loss"),
        "target": "macro LOCO >= static + 0.010 with no collection significantly worse",
        "target_met": bool(gain >= 0.010 and not losses),
    }
    kinds_table = {kd: {"gain": float(np.mean([d.mean() for d in v])),
                        "p_value_queries": macro_randomisation_test(v),
                        "per_collection": {c.name: float(d.mean()) for c, d in zip(colls, v, strict=True)}}
                   for kd, v in per_kind.items()}
    # the policy to use: the same procedure on every collection
    static_all = statics[-1]
    sets, kind, model, tau, notes = fits[-1]
    notes.pop("fitted")
    policy = _policy(kind, model, tau, sets[kind], configs, runs, features, feature_set, notes)
    imp = np.mean(imps, axis=0)
    importances = dict(sorted(zip(features, imp.tolist(), strict=True), key=lambda kv: -kv[1]))
    seconds = time.perf_counter()
    grading = refused(len(colls))
    if grading is None:
        jobs = [([o for j, o in enumerate(colls) if j != i], {o.name: XT[o.name] for o in colls},
                 {o.name: XE[o.name] for o in colls}, fits[i][1], fits[i][3], k, configs,
                 features, rule, distances, neighbours) for i in range(len(colls))]
        inner = process_map(_inner_evidence, jobs)
        folds = []
        for i, c in enumerate(colls):
            rest = [o.name for j, o in enumerate(colls) if j != i]
            moved = [np.abs(d) > 0 for d in inner[i]]
            folds.append(Fold(c.name, Evidence(tuple(rest), tuple(inner[i]),
                                               _significant(inner[i], moved,
                                                            stability_resamples)),
                              np.asarray(rows[i]["per_query"]["adaptive"]),
                              np.asarray(rows[i]["per_query"]["static"])))
        grading = grade(folds)
    seconds = round(time.perf_counter() - seconds, 2)
    dec = decision_record(decision, Evidence(tuple(c.name for c in colls), tuple(deltas),
                                             verdict in VERDICTS[:2]), deltas, grading, verdict)
    transfers = dec["take_change"]
    because = f"rule {decision}: {'take the policy' if transfers else 'keep the static default'}"
    if "track_record" in dec:
        tr = dec["track_record"]
        because += f" (right on {tr['right']} of {tr['of']} left-out collections in nested LOCO)"
    because += f"; significance verdict: {verdict}"
    static_rec = static_recommended or {"config": dict(configs[static_all]), "label": labels[static_all]}
    recommended = ({"policy": True, "label": policy.describe(), "reason": because}
                   if transfers else
                   {"policy": False, "config": static_rec["config"], "label": static_rec["label"],
                    "reason": because})
    tests = dict(TESTS) | {
        "p_value_queries": "randomisation test of the macro mean (sign flips within each "
                           "collection), 10000 resamples, seed 0",
        "p_value_collections": "hierarchical bootstrap: collections, then queries, 10000 "
                               "resamples, seed 0; two-sided",
        "multiplicity": "Holm's step-down over the per-collection sign-flip tests, family-wise "
                        "alpha 0.05",
        **({"stability": f"{stab['B']} query bootstraps and {stab['B']} CPU-size noise "
                         f"perturbations of each collection's evaluation comparison, the "
                         f"choices held fixed; {stab['rule']}"} if stab else {}),
        "importance": "permutation importance on each LOCO fold's held-out collection (one "
                      "shuffle per feature, seed = fold index), averaged over folds",
    }
    return AdaptiveResult(
        suite=suite, collections=tuple(c.name for c in colls), metric=metric, runs=tuple(runs),
        specs=tuple(specs), feature_set=feature_set, n_candidates=k, kinds=tuple(kinds),
        rule=rule, policy=policy.to_json(), static={"config": dict(configs[static_all]),
                                                     "label": labels[static_all]},
        default=dict(default or {}), recommended=recommended, verdict=verdict,
        verdict_reason=why, loco=tuple(rows), summary=summary, kinds_table=kinds_table,
        stability=stab, decision=dec,
        importances=importances, protocols={c.name: c.protocol.to_json() for c in colls},
        assumptions=tuple(assumptions), tests=tests,
        provenance=dict(provenance or {}) | {"nested_grading_s": seconds},
        preset=preset)


# --------------------------------------------------------------------------- applying a policy
def apply_policy(policy: Policy, runs: Sequence[Run], queries: Mapping[str, str],
                 qids: Sequence[str] | None = None, stats=None,
                 fuse: Callable[[dict], Run] | None = None) -> tuple[Run, pd.DataFrame]:
    """Fuse each query with the candidate ``policy`` chooses for it: (fused run, per query its
    chosen candidate and features). ``runs`` in ``policy.runs`` order (their names are the
    features' run names); ``fuse(candidate)`` fuses every query with one candidate (default:
    the candidate as a fusion :class:`~rrfbench.fusion.config.Config`; a preset passes its own)."""
    names = [r.name for r in runs]
    if names != list(policy.runs):
        raise InputError(f"the policy fuses runs {policy.runs}, got {names}")
    if qids is None:
        qids = sorted(set().union(*(set(r.df.qid.astype(str)) for r in runs)))
    X = select_features(query_features(runs, queries, qids, policy.feature_set, stats,
                                       policy.depth, policy.rbo_p), policy.features)
    ch = policy.choose(X.to_numpy())
    fuse = fuse or (lambda cand: Config.from_json(cand).fuse(list(runs)))
    frames = []
    for j in np.unique(ch):
        fused = fuse(policy.candidates[int(j)]).df
        keep = set(np.asarray(qids, dtype=object)[ch == j])
        frames.append(fused[fused.qid.astype(str).isin(keep)])
    df = pd.concat(frames, ignore_index=True)
    run = Run(run_frame(df.qid.to_numpy(dtype=object), df.docid.to_numpy(dtype=object),
                        df.score.to_numpy(), df["rank"].to_numpy()),
              f"adaptive({policy.kind}: {'+'.join(names)})", _ranked=True)
    X.insert(0, "candidate", ch)
    X.insert(1, "label", [policy.candidates[int(j)]["label"] for j in ch])
    return run, X


def role_runs(runs: Mapping[str, Run]) -> list[Run]:
    """A preset's runs by role as a list of runs named by their roles (the feature names)."""
    return [Run(r.df, role, meta=r.meta, _ranked=True) for role, r in runs.items()]


def knob_params(candidate: dict) -> dict:
    """A preset candidate's knob values (its ``label`` dropped)."""
    return {k: v for k, v in candidate.items() if k != "label"}


# --------------------------------------------------------------------------- a suite
def suite_features(ds, runs: Sequence[Run], qids: Sequence[str], feature_set: str,
                   split: str | None = None) -> pd.DataFrame:
    """The feature matrix of ``qids`` (rows in that order) of dataset ``ds``; with ``split``,
    cached beside the runs (``results/runs/<dataset>/<split>/features/<key>.parquet``), keyed
    on the runs' content digests, the queries, the feature set and qfeatures' source."""
    path = None
    if split is not None:
        h = hashlib.sha256(Path(qfeatures.__file__).read_bytes())
        for r in runs:
            h.update(f"{r.name}={r.meta.get('content_digest') or content_digest(r)};".encode())
        h.update(f"{feature_set}|{ds.fingerprint}|".encode() + "\0".join(map(str, qids)).encode())
        path = results_dir() / "runs" / ds.name / split / "features" / f"{h.hexdigest()[:16]}.parquet"
        if path.exists():
            return pd.read_parquet(path)
    queries = dict(zip(ds.queries.qid.astype(str), ds.queries.text, strict=True))
    stats = corpus_stats(ds.corpus) if feature_set == "all" else None
    X = query_features(runs, queries, qids, feature_set, stats)
    if path is not None:
        write_parquet(path, X)
    return X


def _as_matrices(XT: Mapping[str, pd.DataFrame], XE: Mapping[str, pd.DataFrame]
                 ) -> tuple[dict, dict, list[str]]:
    """The feature frames as matrices and their shared column names (every collection must
    give the same features: e.g. a BM25 bound needs every collection's BM25 manifest)."""
    names = list(next(iter(XT.values())).columns)
    for name, X in (*XT.items(), *XE.items()):
        if list(X.columns) != names:
            raise InputError(f"{name}: features {list(X.columns)} differ from {names}")
    return ({k: v.to_numpy() for k, v in XT.items()}, {k: v.to_numpy() for k, v in XE.items()},
            names)


def adaptive_suite(suite: str, datasets_protocols: list, load, grid, metric: str,
                   metrics: Sequence[str], *, specs: Sequence[str] = (), out=None,
                   k: int = N_CANDIDATES, kinds: Sequence[str] = KINDS,
                   feature_set: str = "portable", rule: str = "nbr",
                   static_recommended: dict | None = None, progress: bool = True,
                   log=lambda _m: None) -> AdaptiveResult:
    """Matrices from the suite sweep (resumed from ``out``, the static suite's folder), features
    of every collection's tuning and evaluation queries, then :func:`adaptive_result`."""
    sm = suite_matrices(datasets_protocols, load, grid, metric, metrics, out, progress,
                        log=log, suite=suite)
    XT, XE = {}, {}
    for (ds, p), c in zip(datasets_protocols, sm.colls, strict=True):
        XT[c.name] = suite_features(ds, load(ds, p.tune_split), c.tune_qids, feature_set,
                                    p.tune_split)
        XE[c.name] = (XT[c.name] if p.eval_split == p.tune_split and c.eval_qids == c.tune_qids
                      else suite_features(ds, load(ds, p.eval_split), c.eval_qids, feature_set,
                                          p.eval_split))
    log(f"adaptive {suite}: features of {sum(len(x) for x in XT.values())} tuning and "
        f"{sum(len(x) for x in XE.values())} evaluation queries; {len(sm.colls)} LOCO folds")
    n = len(sm.names)
    default = rrf60_config(n)
    XT, XE, names = _as_matrices(XT, XE)
    return adaptive_result(
        suite, sm.colls, XT, XE, configs=sm.configs, labels=sm.labels, runs=sm.names,
        specs=specs, metric=metric, rule=rule, features=names,
        distances=np.array([fusion_distance(c, n) for c in sm.cfgs]),
        neighbours=neighbourhoods(sm.configs) if rule == "nbr" else None, k=k, kinds=kinds,
        feature_set=feature_set,
        default={"config": {**default.to_json(), "label": default.label(sm.names)},
                 "label": "RRF k=60, equal weights"},
        static_recommended=static_recommended,
        provenance=provenance(suite=suite, collections=[ds.name for ds, _ in datasets_protocols],
                              fingerprints={ds.name: ds.fingerprint for ds, _ in datasets_protocols}),
        assumptions=[f"{c.name}: {c.protocol.describe()}" for c in sm.colls]
        + [f"features: {feature_set} (rrfbench.adaptive.features), each run read to depth "
           f"{100} results; a system's lists shorter than that give different features"])


def preset_adaptive_suite(suite: str, datasets_protocols: list, preset, load, metric: str, *,
                          k: int = N_CANDIDATES, kinds: Sequence[str] = KINDS,
                          feature_set: str = "portable", rule: str = "nbr",
                          static_recommended: dict | None = None, progress: bool = True,
                          log=lambda _m: None) -> AdaptiveResult:
    """A per-query policy inside a studied system's own knobs: candidates are settings of its
    grid, the comparator is its shipped values, the features come from its own streams (named
    by role). ``load(dataset, split)``: the preset's runs by role."""
    grid = preset.grid()
    shipped = preset.defaults()
    tunable = [kb.name for kb in preset.knobs if not kb.fixed and kb.grid]
    labels = [", ".join(f"{n}={g[n]}" for n in tunable) for g in grid]
    configs = [{**g, "label": lab} for g, lab in zip(grid, labels, strict=True)]
    colls, XT, XE, roles = [], {}, {}, None
    for ds, p in datasets_protocols:
        log(f"{preset.name}: {len(grid)} settings on {ds.name} (per query)")
        rt = load(ds, p.tune_split)
        roles = roles or list(rt)
        qt = ds.qrels(p.tune_split)
        T = preset_matrix(preset, rt, qt, grid + [shipped], [metric], progress,
                          f"{preset.name} on {ds.name}")[:, 0]
        same = p.eval_split == p.tune_split
        re_ = rt if same else load(ds, p.eval_split)
        qe = ds.qrels(p.eval_split)
        E = T if same else preset_matrix(preset, re_, qe, grid + [shipped], [metric])[:, 0]
        colls.append(CollectionData(ds.name, p, T[:-1], E[:-1], T[-1], E[-1], list(qe.qids),
                                    list(qt.qids)))
        XT[ds.name] = suite_features(ds, role_runs(rt), list(qt.qids), feature_set, p.tune_split)
        XE[ds.name] = XT[ds.name] if same else suite_features(ds, role_runs(re_), list(qe.qids),
                                                              feature_set, p.eval_split)
    shipped_label = "shipped: " + ", ".join(f"{n}={shipped[n]}" for n in tunable)
    XT, XE, names = _as_matrices(XT, XE)
    return adaptive_result(
        suite, colls, XT, XE, configs=configs, labels=labels, runs=roles, specs=(),
        metric=metric, rule=rule, features=names,
        distances=np.array([knob_distance(g, shipped, preset.knobs) for g in grid]),
        neighbours=neighbourhoods(grid) if rule == "nbr" else None, k=k, kinds=kinds,
        feature_set=feature_set, default={"config": shipped, "label": shipped_label},
        static_recommended=static_recommended, preset=preset.name,
        provenance=provenance(suite=suite, collections=[ds.name for ds, _ in datasets_protocols],
                              fingerprints={ds.name: ds.fingerprint for ds, _ in datasets_protocols}),
        assumptions=[f"{c.name}: {c.protocol.describe()}" for c in colls]
        + [f"features: {feature_set} (rrfbench.adaptive.features) of the system's streams by role "
           f"({', '.join(roles or [])}), each read to depth 100"]
        + [f"fidelity: {line}" for line in preset.fidelity_lines()])
