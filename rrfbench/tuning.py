"""Honest tuning: choose on one set of queries, report on another.

* :func:`tune_holdout`: sweep the grid on a tuning split (e.g. scifact train), pick the best
  configuration, and report it on the evaluation split (e.g. scifact test).
* :func:`tune_folds`: k-fold cross-validation over queries when a dataset has one split
  (cranfield): each fold's queries are scored by the configuration chosen on the other folds;
  the exported configuration is the one chosen on all queries.

Either way the report holds the eval metric with a 95% bootstrap CI, paired t-test and
randomisation-test p-values against (a) the best single run (chosen on the tuning queries) and
(b) RRF k=60 with equal weights, and the optimism gap: where the chosen configuration would
rank, and what the best value would be, had the grid been tuned on the evaluation queries
themselves.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .stats import bootstrap_ci, paired_t, permutation_test
from .sweep import Config, FusionEngine, configs_from_table, run_sweep


def single_run_configs(n: int) -> list[Config]:
    """One configuration per run that reproduces that run's own ranking."""
    out = []
    for i in range(n):
        w = tuple(1.0 if j == i else 0.0 for j in range(n))
        out.append(Config("rrf", (60.0,) * n, w, (None,) * n, 1))
    return out


def rrf60_config(n: int) -> Config:
    return Config("rrf", (60.0,) * n, (1.0,) * n, (None,) * n, 1)


def best_index(values) -> int:
    """Position of the largest value; ties -> the earliest (grid order decides, stably)."""
    values = np.asarray(values)
    return int(np.flatnonzero(values == values.max())[0])


def _pick(table: pd.DataFrame, metric: str) -> int:
    """Row position of the best mean ``metric`` in a sweep table."""
    return best_index(table[metric].to_numpy())


def cross_validate(per_query: np.ndarray, folds: int = 5, seed: int = 0):
    """k-fold selection over queries: ``per_query`` is (configurations, queries).

    Each fold's queries get the values of the configuration with the best mean on the other
    folds. Returns (cross-validated per-query values, chosen configuration index per fold).
    """
    from sklearn.model_selection import KFold

    nq = per_query.shape[1]
    cv = np.zeros(nq)
    chosen = []
    for train_idx, test_idx in KFold(folds, shuffle=True, random_state=seed).split(np.arange(nq)):
        best = best_index(per_query[:, train_idx].mean(axis=1))
        chosen.append(best)
        cv[test_idx] = per_query[best, test_idx]
    return cv, chosen


def _comparison(tuned: np.ndarray, other: np.ndarray) -> dict:
    return {"value": float(other.mean()), "p_value": permutation_test(tuned, other),
            "p_value_t": paired_t(tuned, other), "delta": float(tuned.mean() - other.mean())}


def _summarise(names, metric, cfg, tuned_pq, singles_pq, singles_choice, rrf60_pq,
               eval_table, extra) -> dict:
    lo, hi = bootstrap_ci(tuned_pq)
    best_single = names[singles_choice]
    eval_vals = eval_table[metric].to_numpy()
    tuned_val = float(tuned_pq.mean())
    rank = int(1 + np.sum(eval_vals > tuned_val + 1e-12))
    out = {
        "runs": names,
        "metric": metric,
        "config": {**cfg.to_json(), "label": cfg.label(names)},
        "eval": {"value": tuned_val, "ci95": [lo, hi], "n_queries": int(len(tuned_pq))},
        "baselines": {
            "best_single": {"name": best_single, **_comparison(tuned_pq, singles_pq[singles_choice]),
                            "ci95": list(bootstrap_ci(singles_pq[singles_choice]))},
            "rrf60_equal": {**_comparison(tuned_pq, rrf60_pq), "ci95": list(bootstrap_ci(rrf60_pq))},
        },
        "singles": {n: float(singles_pq[i].mean()) for i, n in enumerate(names)},
        "optimism": {"rank_on_eval_grid": rank, "grid_size": int(len(eval_vals)),
                     "best_on_eval": float(eval_vals.max()),
                     "best_on_eval_label": str(eval_table.label.iloc[int(np.argmax(eval_vals))]),
                     "gap": float(eval_vals.max() - tuned_val)},
        "tests": {"ci": "percentile bootstrap, 10000 resamples, seed 0",
                  "p_value": "paired randomisation (sign-flip) test, 10000 resamples, seed 0",
                  "p_value_t": "paired t-test"},
    }
    out.update(extra)
    return out


def tune_holdout(tune_engine: FusionEngine, eval_engine: FusionEngine, configs: list[Config],
                 metric: str, out=None, progress: bool = True) -> tuple[dict, pd.DataFrame, pd.DataFrame]:
    """Tune on ``tune_engine``'s queries, report on ``eval_engine``'s (same run names)."""
    names = tune_engine.names
    if eval_engine.names != names:
        raise ValueError("tune and eval engines must fuse the same runs in the same order")
    tune_table = run_sweep(tune_engine, configs, out, progress=progress, name="sweep")
    eval_table = run_sweep(eval_engine, configs, out, progress=progress, name="sweep_eval")
    m = tune_engine.metric_names.index(metric)
    best_pos = _pick(tune_table, metric)
    cfg = configs_from_table(tune_table.iloc[[best_pos]], names)[0]
    refs = single_run_configs(len(names)) + [rrf60_config(len(names)), cfg]
    pq_tune = tune_engine.evaluate(refs)[:, m]
    pq_eval = eval_engine.evaluate(refs)[:, m]
    n = len(names)
    singles_choice = int(np.argmax(pq_tune[:n].mean(axis=1)))
    summary = _summarise(names, metric, cfg, pq_eval[-1], pq_eval[:n], singles_choice, pq_eval[n],
                         eval_table, {"tune": {"value": float(pq_tune[-1].mean())}})
    summary["per_query"] = {"qids": eval_engine.qids, "tuned": pq_eval[-1].tolist(),
                            "best_single": pq_eval[singles_choice].tolist(),
                            "rrf60_equal": pq_eval[n].tolist()}
    return summary, tune_table, eval_table


def tune_folds(engine: FusionEngine, configs: list[Config], metric: str, folds: int = 5,
               seed: int = 0, out=None, progress: bool = True) -> tuple[dict, pd.DataFrame]:
    """k-fold cross-validated tuning over one split's queries (see module docstring)."""
    names = engine.names
    table = run_sweep(engine, configs, out, progress=progress, name="sweep")
    m = engine.metric_names.index(metric)
    pq_all = np.stack(table.per_query.to_numpy()) if m == 0 else engine.evaluate(
        configs_from_table(table, names))[:, m]
    cv, chosen_idx = cross_validate(pq_all, folds, seed)
    chosen = [str(table.label.iloc[i]) for i in chosen_idx]
    best_pos = _pick(table, metric)
    cfg = configs_from_table(table.iloc[[best_pos]], names)[0]
    n = len(names)
    refs = single_run_configs(n) + [rrf60_config(n)]
    pq_refs = engine.evaluate(refs)[:, m]
    singles_choice = int(np.argmax(pq_refs[:n].mean(axis=1)))
    summary = _summarise(names, metric, cfg, cv, pq_refs[:n], singles_choice, pq_refs[n], table,
                         {"tune": {"folds": folds, "seed": seed, "chosen_per_fold": chosen,
                                   "value_all_queries": float(table[metric].iloc[best_pos])}})
    summary["eval"]["note"] = ("cross-validated: each query scored by the configuration tuned "
                               "on the other folds")
    summary["per_query"] = {"qids": engine.qids, "tuned": cv.tolist(),
                            "best_single": pq_refs[singles_choice].tolist(),
                            "rrf60_equal": pq_refs[n].tolist()}
    return summary, table
