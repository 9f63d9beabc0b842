"""Defaults that transfer: tune across collections, validate leave-one-collection-out (LOCO).

A default is only good if it holds on collections it was not tuned on. Given, for every
collection of a suite, the per-query values of the tuning metric for every grid point on its
tuning split (``T``) and its evaluation split (``E``), plus the same for the *default* (RRF k=60
with equal weights for free fusion; the system's shipped values for a preset):

* **Objectives across collections** (computed on tuning splits): ``macro`` (mean of the
  collections' means: each collection weighs the same), ``worst`` (the worst collection's
  difference to the default) and ``meanrank`` (the mean rank of the configuration among the grid
  on each collection; lower is better).
* **Selection rules**: ``best`` (the best objective; ties: the earliest grid point) or ``1se``,
  the one-standard-error rule: among the grid points whose macro mean is within one standard
  error of the best one's, the one closest to the default. The standard error is that of the
  paired macro-mean difference to the best point, from the per-query differences:
  ``se = sqrt(sum_c var_c / n_c) / C`` (``var_c``: variance of the per-query differences on
  collection c, ``n_c`` its tuning queries, ``C`` collections).
* **LOCO**: for each collection C, select on the others, evaluate on C's evaluation split
  against the default, the best single retriever (chosen on the others; fusion only) and
  in-domain tuning on C (holdout on C's splits, or cross-validation when C has one split: the
  optimistic upper bound). Paired randomisation p-values and bootstrap CIs on C.
* **Verdict**: *transfers* when the LOCO gain over the default is significant over queries (a
  randomisation test of the macro mean, sign flips within each collection) **and** over
  collections (a hierarchical bootstrap: collections, then queries) and no collection loses
  significantly; *likely transfers, weak evidence* when the gain is positive and significant
  over queries only, with no significant loss; otherwise *no evidence that it transfers*, and
  the recommended default stays the default.

:func:`transfer_result` builds the :class:`TransferResult`; :func:`fusion_suite` and
:func:`preset_suite` gather the matrices for free fusion and for a studied system.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields

import numpy as np

from .errors import InputError, choice
from .results import Protocol, plain, register_result_type
from .stats import bootstrap_ci, hierarchical_bootstrap, macro_randomisation_test, permutation_test
from .tuning import best_index, cross_validate

OBJECTIVES = ("macro", "worst", "meanrank")
RULES = ("best", "1se")
VERDICTS = ("transfers", "likely transfers, weak evidence", "no evidence that it transfers")
SEP = "\x1f"  # collection / query id separator inside a combined engine
ALPHA = 0.05


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
    import pandas as pd

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


def select(colls: Sequence[CollectionData], objective: str = "macro", rule: str = "best",
           distances: np.ndarray | None = None) -> int:
    """The grid point chosen on ``colls`` by ``objective`` and ``rule``."""
    if rule not in RULES:
        raise choice("--rule", rule, RULES)
    obj = objective_values(colls, objective)
    best = best_index(obj)
    if rule == "best":
        return best
    tied, _ = one_se_set(colls, best)
    cand = np.flatnonzero(tied)
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
@dataclass(frozen=True)
class TransferResult:
    """A suite result: LOCO table, verdict, the selected and the recommended configuration."""

    suite: str
    collections: tuple
    family: str                        # "fusion" or a preset's name
    metric: str
    objective: str
    rule: str
    protocols: dict                    # collection -> Protocol (as JSON)
    config: dict                       # selected on all collections (fuse --config applies it)
    label: str
    default: dict                      # {"config", "label"}: RRF k=60 equal, or shipped values
    recommended: dict                  # {"config", "label", "reason"}
    verdict: str
    verdict_reason: str
    loco: tuple                        # one row per collection
    summary: dict
    transfer_matrix: dict              # {"collections", "delta", "value"}
    characteristics: tuple             # per collection: stats and the k it prefers
    grid_size: int
    runs: tuple = ()                   # fusion: the run names the configuration weights
    specs: tuple = ()                  # fusion: the retriever spec of each run
    per_collection: dict = field(default_factory=dict)  # values of config/recommended/default
    preset: str | None = None          # preset: its name
    knobs: dict = field(default_factory=dict)
    k_curves: dict = field(default_factory=dict)
    families: dict = field(default_factory=dict)   # per fusion family: LOCO summary + verdict
    assumptions: tuple = ()
    provenance: dict = field(default_factory=dict)
    tests: dict = field(default_factory=dict)
    kind: str = "transfer"
    schema_version: int = 2

    @property
    def dataset(self) -> str:
        return f"suite {self.suite} ({', '.join(self.collections)})"

    def config_obj(self, which: str = "config"):
        from .engine import Config

        cfg = self.config if which == "config" else self.recommended["config"]
        return Config.from_json(cfg)

    def to_json(self) -> dict:
        return plain({f.name: getattr(self, f.name) for f in fields(self)})

    @classmethod
    def from_json(cls, d: dict) -> TransferResult:
        d = dict(d)
        for key in ("collections", "loco", "characteristics", "runs", "assumptions", "specs"):
            d[key] = tuple(d.get(key, ()))
        return cls(**d)


register_result_type("transfer", TransferResult)


def _sig(p: float, delta: float) -> str:
    if p < ALPHA and delta > 0:
        return "win"
    if p < ALPHA and delta < 0:
        return "loss"
    return "tie"


def transfer_result(suite: str, colls: list[CollectionData], *, family: str, metric: str,
                    labels: Sequence[str], configs: Sequence[dict], default: dict,
                    objective: str = "macro", rule: str = "best",
                    distances: np.ndarray | None = None, runs: Sequence[str] = (),
                    specs: Sequence[str] = (), preset: str | None = None,
                    knobs: dict | None = None,
                    k_curves: dict | None = None, provenance: dict | None = None,
                    assumptions: Sequence[str] = (),
                    families: dict[str, np.ndarray] | None = None) -> TransferResult:
    """The LOCO table, summary, verdict, transfer matrix and selections (module docstring)."""
    from .results import TESTS

    if len(colls) < 2:
        raise InputError("leave-one-collection-out needs at least two collections")
    if objective not in OBJECTIVES:
        raise choice("--objective", objective, OBJECTIVES)
    if rule not in RULES:
        raise choice("--rule", rule, RULES)
    rows, deltas = [], []
    for i, c in enumerate(colls):
        others = [o for j, o in enumerate(colls) if j != i]
        idx = select(others, objective, rule, distances)
        loco = c.E[idx]
        d = loco - c.default_E
        p = permutation_test(loco, c.default_E)
        deltas.append(d)
        ind, ind_idx = in_domain(c)
        row = {"collection": c.name, "n_queries": int(len(loco)), "selected": labels[idx],
               "loco": {"value": float(loco.mean()), "ci95": list(bootstrap_ci(loco))},
               "default": {"value": float(c.default_E.mean()), "delta": float(d.mean()),
                           "delta_ci95": list(bootstrap_ci(d)), "p_value": p,
                           "outcome": _sig(p, float(d.mean()))},
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
    p_queries = macro_randomisation_test(deltas)
    hb = hierarchical_bootstrap(deltas)
    outcomes = [r["default"]["outcome"] for r in rows]
    gain = float(np.mean([d.mean() for d in deltas]))
    losses = [r["collection"] for r in rows if r["default"]["outcome"] == "loss"]
    if gain > 0 and p_queries < ALPHA and hb["p_value"] < ALPHA and not losses:
        verdict = VERDICTS[0]
        why = (f"LOCO macro gain {gain:+.4f} over the default is significant over queries "
               f"(p={p_queries:.4f}) and over collections (hierarchical bootstrap p="
               f"{hb['p_value']:.4f}), with no significant loss on any collection")
    elif gain > 0 and p_queries < ALPHA and not losses:
        verdict = VERDICTS[1]
        why = (f"LOCO macro gain {gain:+.4f} is significant over queries (p={p_queries:.4f}) "
               f"but not over collections (hierarchical bootstrap p={hb['p_value']:.4f}, 95% CI "
               f"{hb['ci95'][0]:+.4f} to {hb['ci95'][1]:+.4f}); no collection loses significantly")
    else:
        verdict = VERDICTS[2]
        parts = [f"LOCO macro gain {gain:+.4f} over the default"]
        parts.append(f"p={p_queries:.4f} over queries")
        parts.append(f"hierarchical bootstrap p={hb['p_value']:.4f}")
        if losses:
            parts.append(f"significant losses on {', '.join(losses)}")
        why = "; ".join(parts) + ": keep the default"
    summary = {
        "macro": {"loco": float(np.mean([r["loco"]["value"] for r in rows])),
                  "default": float(np.mean([r["default"]["value"] for r in rows])),
                  "in_domain": float(np.mean([r["in_domain"]["value"] for r in rows]))},
        "gain": gain, "p_value_queries": p_queries, "p_value_collections": hb["p_value"],
        "gain_ci95_collections": list(hb["ci95"]),
        "wins": outcomes.count("win"), "ties": outcomes.count("tie"),
        "losses": outcomes.count("loss"),
    }
    if all("best_single" in r for r in rows):
        summary["macro"]["best_single"] = float(np.mean([r["best_single"]["value"] for r in rows]))
    idx_all = select(colls, objective, rule, distances)
    transfers = verdict != VERDICTS[2]
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
                             distances=None if distances is None else distances[idx])
        fam_rows[fam] = {"selected": fr.label, "verdict": fr.verdict,
                         "gain": fr.summary["gain"], "macro_loco": fr.summary["macro"]["loco"],
                         "p_value_queries": fr.summary["p_value_queries"],
                         "p_value_collections": fr.summary["p_value_collections"],
                         "wins": fr.summary["wins"], "ties": fr.summary["ties"],
                         "losses": fr.summary["losses"],
                         "selected_per_collection": {r["collection"]: r["selected"]
                                                     for r in fr.loco}}
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
        assumptions=tuple(assumptions), provenance=dict(provenance or {}), tests=dict(TESTS) | {
            "p_value_queries": "randomisation test of the macro mean: sign flips of per-query "
                               "differences within each collection, 10000 resamples, seed 0",
            "p_value_collections": "hierarchical bootstrap: collections, then queries, 10000 "
                                   "resamples, seed 0; two-sided"})


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
    import pandas as pd

    from .runs import Qrels, Run, run_frame

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
    import pandas as pd

    rx, ry = pd.Series(x).rank().to_numpy(), pd.Series(y).rank().to_numpy()
    if rx.std() == 0 or ry.std() == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])


def fusion_suite(suite: str, datasets_protocols: list, load: Callable, grid, metric: str,
                 metrics: Sequence[str], out=None, progress: bool = True,
                 objective: str = "macro", rule: str = "best", specs: Sequence[str] = (),
                 client=None, log: Callable[[str], None] = lambda _m: None):
    """Free fusion over a suite: one combined engine per split role, one sweep each, then LOCO.

    ``datasets_protocols`` is [(Dataset, Protocol)]; ``load(dataset, split)`` returns the runs
    to fuse. Returns (TransferResult, {"tune": table, "eval": table}).
    """
    from .engine import FusionEngine, run_sweep
    from .store import provenance
    from .tuning import rrf60_config, single_run_configs

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
    tt = run_sweep(te, grid, out, progress=progress, name="sweep_tune", client=client)
    et = tt if same else run_sweep(ee, grid, out, progress=progress, name="sweep_eval",
                                   client=client)
    m = te.metric_names.index(metric)
    pq_t = np.stack(tt.per_query.to_numpy()) if m == 0 else None
    pq_e = np.stack(et.per_query.to_numpy()) if m == 0 else None
    if pq_t is None:
        raise InputError(f"the tuning metric must be the engine's first metric ({te.metric_names[0]})")
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
            singles_T={nm: ref_t[i, a] for i, nm in enumerate(names)},
            singles_E={nm: ref_e[i, b] for i, nm in enumerate(names)},
            stats=collection_stats(ds, p)))
    labels = list(tt.label)
    from .engine import configs_from_table

    cfgs = configs_from_table(tt, names)
    configs = [{**c.to_json(), "label": lab} for c, lab in zip(cfgs, labels, strict=True)]
    dist = np.array([fusion_distance(c, n) for c in cfgs])
    default = rrf60_config(n)
    kc = _k_curves(tt, et, names, colls, metric, st, se)
    result = transfer_result(
        suite, colls, family="fusion", metric=metric, labels=labels, configs=configs,
        default={"config": {**default.to_json(), "label": default.label(names)},
                 "label": "RRF k=60, equal weights"},
        objective=objective, rule=rule, distances=dist, runs=names, specs=specs, k_curves=kc,
        families={m: np.flatnonzero(tt.method.to_numpy() == m) for m in dict.fromkeys(tt.method)},
        provenance=provenance(suite=suite, collections=[ds.name for ds, _ in datasets_protocols],
                              fingerprints={ds.name: ds.fingerprint for ds, _ in datasets_protocols}),
        assumptions=[f"{c.name}: {c.protocol.describe()}" for c in colls])
    return result, {"tune": tt, "eval": et}


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
    order = np.argsort(ks)
    rows, ks = rows[order], ks[order]
    pq_e = np.stack(et.per_query.to_numpy()[rows])
    pq_t = np.stack(tt.per_query.to_numpy()[rows])
    curves, best = {}, {}
    for c in colls:
        curves[c.name] = pq_e[:, se[c.name]].mean(axis=1).tolist()
        best[c.name] = float(ks[best_index(pq_t[:, st[c.name]].mean(axis=1))])
    return {"k": ks.tolist(), "eval": curves, "best_k": best}


def preset_suite(suite: str, datasets_protocols: list, preset, load: Callable, metric: str,
                 progress: bool = True, objective: str = "macro", rule: str = "best",
                 log: Callable[[str], None] = lambda _m: None) -> TransferResult:
    """A studied system over a suite, within its own knobs; the default is its shipped values.

    ``load(dataset, split)`` returns the preset's runs by role.
    """
    from .store import provenance
    from .tuning import preset_matrix

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
