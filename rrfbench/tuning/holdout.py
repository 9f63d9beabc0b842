"""Honest tuning: choose on one set of queries, report on another. The one protocol rule.

:func:`choose_protocol` decides, in one place, how a dataset is tuned and evaluated:

* a **holdout** when it has a tuning split and a different evaluation split (scifact: train ->
  test; nfcorpus: dev -> test; cmrc2018-zh: dev -> trial);
* **k-fold cross-validation** over the evaluation split's queries otherwise (cranfield, lisa,
  ...), or when the tuning and evaluation splits are the same: each query is scored by the
  configuration chosen on the other folds.

Both fusion sweeps and preset tuning go through :func:`run_protocol` on a (configurations x
queries) matrix of the tuning metric, so they cannot disagree. The chosen configuration is
always the best on *all* tuning queries (ties: the earliest in grid order); under CV the
reported value is the cross-validated one.

Every result carries the tuned value with a 95% bootstrap CI and paired randomisation and
t-test p-values against its baselines: for a sweep the best single run (chosen on the tuning
queries) and RRF k=60 with equal weights; for a preset its shipped values. A sweep also reports
the optimism gap: where the choice would rank, and what the best value would be, had the grid
been tuned on the evaluation queries themselves.

The result objects (:mod:`rrfbench.results.dataset`) are built here and nowhere else.

Called from: ``adaptive.validation``, ``tuning.selection``, ``tuning.suite_data``,
``tuning.transfer``, ``workflows.dataset``, ``workflows.demo``, ``workflows.suite``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..core.errors import InputError
from ..core.parallel import n_jobs, process_imap
from ..core.progress import progress as bar
from ..core.stats import bootstrap_ci, paired_t, permutation_test
from ..core.store import provenance
from ..fusion.config import Config
from ..fusion.sweep import JudgedLists, configs_from_table, family_labels, run_sweep
from ..results.dataset import PresetResult, SweepResult
from ..results.values import Comparison, Estimate, Protocol

TUNE_SPLITS = ("train", "dev")
EVAL_SPLITS = ("test", "trial", "dev")
DEFAULT_FOLDS = 5


# --------------------------------------------------------------------------- the protocol rule
def choose_protocol(splits: Sequence[str], tune_split: str | None = None,
                    eval_split: str | None = None, folds: int | None = None,
                    seed: int = 0) -> Protocol:
    """The one rule for holdout vs cross-validation (see the module docstring).

    * ``folds`` given: cross-validation on ``eval_split`` (or ``tune_split``, or the default
      evaluation split); a different ``tune_split`` and ``eval_split`` with it is an error.
    * ``tune_split`` and ``eval_split`` given: holdout if they differ, else cross-validation.
    * only one given: the other is the dataset's default split of that role, if there is a
      different one; else cross-validation on the given split.
    * none given: the default tuning split (train, dev) and evaluation split (test, trial,
      dev); cross-validation when there is no pair.

    The reason is recorded in :attr:`Protocol.reason`, so the choice is never silent.
    """
    splits = list(splits)
    for name, s in (("--tune-split", tune_split), ("--eval-split", eval_split)):
        if s is not None and s not in splits:
            raise InputError(f"{name}: no split {s!r}; available: {', '.join(splits) or '(none)'}")
    if folds is not None and folds != 0 and folds < 2:
        raise InputError(f"--folds: {folds} must be >= 2 (or 0 for the default protocol)")
    default_eval = next((s for s in EVAL_SPLITS if s in splits), splits[0] if splits else None)
    if default_eval is None:
        raise InputError("the dataset has no qrels splits")

    def default_tune(avoid):
        return next((s for s in TUNE_SPLITS if s in splits and s != avoid), None)

    if folds:
        if tune_split and eval_split and tune_split != eval_split:
            raise InputError(f"--folds cross-validates on one split, but --tune-split "
                             f"{tune_split!r} and --eval-split {eval_split!r} differ: drop "
                             "--folds for a holdout, or give one split")
        split = eval_split or tune_split or default_eval
        return Protocol("cv", split, split, folds, seed, "asked for --folds")
    if tune_split and eval_split:
        if tune_split == eval_split:
            return Protocol("cv", eval_split, eval_split, DEFAULT_FOLDS, seed,
                            "tuning and evaluation split are the same: cross-validation")
        return Protocol("holdout", tune_split, eval_split, 0, seed, "asked for both splits")
    if tune_split:
        ev = next((s for s in EVAL_SPLITS if s in splits and s != tune_split), None)
        if ev is None:
            return Protocol("cv", tune_split, tune_split, DEFAULT_FOLDS, seed,
                            f"no split other than {tune_split!r} to evaluate on: "
                            "cross-validation")
        return Protocol("holdout", tune_split, ev, 0, seed,
                        f"evaluation split {ev!r} is the dataset's default")
    if eval_split:
        tu = default_tune(eval_split)
        if tu is None:
            return Protocol("cv", eval_split, eval_split, DEFAULT_FOLDS, seed,
                            f"no split other than {eval_split!r} to tune on: cross-validation")
        return Protocol("holdout", tu, eval_split, 0, seed,
                        f"tuning split {tu!r} is the dataset's default")
    tu = default_tune(default_eval)
    if tu is None:
        return Protocol("cv", default_eval, default_eval, DEFAULT_FOLDS, seed,
                        "one split only: cross-validation")
    return Protocol("holdout", tu, default_eval, 0, seed, "the dataset's default splits")


# --------------------------------------------------------------------------- selection
def best_index(values) -> int:
    """Position of the largest value; ties -> the earliest (grid order decides, stably)."""
    values = np.asarray(values)
    return int(np.flatnonzero(values == values.max())[0])


def cross_validate(per_query: np.ndarray, folds: int = DEFAULT_FOLDS, seed: int = 0):
    """k-fold selection over queries: ``per_query`` is (configurations, queries).

    Each fold's queries get the values of the configuration with the best mean on the other
    folds. Returns (cross-validated per-query values, chosen configuration index per fold).
    """
    from sklearn.model_selection import KFold

    nq = per_query.shape[1]
    if nq < folds:
        raise InputError(f"--folds: {folds} folds need at least {folds} judged queries; "
                         f"there are {nq}")
    cv = np.zeros(nq)
    chosen = []
    for train_idx, test_idx in KFold(folds, shuffle=True, random_state=seed).split(np.arange(nq)):
        best = best_index(per_query[:, train_idx].mean(axis=1))
        chosen.append(best)
        cv[test_idx] = per_query[best, test_idx]
    return cv, chosen


@dataclass(frozen=True)
class Selection:
    """What :func:`run_protocol` chose, and the chosen configuration's evaluation values."""

    index: int                  # best on all tuning queries (the configuration to ship)
    eval_values: np.ndarray     # per evaluation query (cross-validated under CV)
    tune_value: float           # mean of the chosen configuration on the tuning queries
    chosen_per_fold: tuple = ()


def run_protocol(protocol: Protocol, pq_tune: np.ndarray, pq_eval=None) -> Selection:
    """Select on ``pq_tune`` (configurations x tuning queries) and score on the evaluation
    queries: for a holdout ``pq_eval`` (a matrix, or a function from a configuration's index
    to its per-query values); for CV, cross-validation over ``pq_tune``.

    Selection never looks at ``pq_eval``.
    """
    index = best_index(pq_tune.mean(axis=1))
    tune_value = float(pq_tune[index].mean())
    if protocol.kind == "holdout":
        if pq_eval is None:
            raise ValueError("a holdout needs the evaluation values")
        row = pq_eval(index) if callable(pq_eval) else pq_eval[index]
        return Selection(index, np.asarray(row, dtype=np.float64), tune_value)
    cv, chosen = cross_validate(pq_tune, protocol.folds, protocol.seed)
    return Selection(index, cv, tune_value, tuple(int(c) for c in chosen))


def estimate(values) -> Estimate:
    v = np.asarray(values, dtype=np.float64)
    lo, hi = bootstrap_ci(v)
    return Estimate(float(v.mean()) if v.size else 0.0, (lo, hi), int(v.size))


def comparison(name: str, tuned, other) -> Comparison:
    """``other`` as a baseline of ``tuned`` on the same queries (paired)."""
    tuned, other = np.asarray(tuned, dtype=np.float64), np.asarray(other, dtype=np.float64)
    lo, hi = bootstrap_ci(other)
    return Comparison(name, float(other.mean()), (lo, hi), float(tuned.mean() - other.mean()),
                      permutation_test(tuned, other), paired_t(tuned, other))


# --------------------------------------------------------------------------- fusion sweeps
def single_run_configs(n: int):
    """One configuration per run that reproduces that run's own ranking."""
    return [Config("rrf", (60.0,) * n, tuple(1.0 if j == i else 0.0 for j in range(n)),
                   (None,) * n, 1) for i in range(n)]


def rrf60_config(n: int):
    return Config("rrf", (60.0,) * n, (1.0,) * n, (None,) * n, 1)


def _metric_matrix(engine, table, metric: str) -> np.ndarray:
    """(configurations, queries) values of ``metric`` for a sweep table's rows."""
    if engine.metric_names[0] == metric:
        return np.stack(table.per_query.to_numpy())
    m = engine.metric_names.index(metric)
    return engine.evaluate(configs_from_table(table, engine.names))[:, m]


def tune_fusion(dataset, protocol: Protocol, tune_engine, eval_engine, grid, metric: str,
                out=None, progress: bool = True, assumptions: Sequence[str] = (),
                specs: Sequence[str] = (), map_chunks=None):
    """Sweep ``grid`` and choose by ``protocol``; returns (SweepResult, tune table, eval table).

    ``tune_engine`` scores the tuning queries and ``eval_engine`` the evaluation queries (the
    same engine under CV). Sweep tables are written resumably under ``out``; ``map_chunks``
    says who scores the chunks (:mod:`rrfbench.core.parallel`).
    """
    names = tune_engine.names
    if eval_engine.names != names:
        raise InputError("tune and eval engines must fuse the same runs in the same order")
    if metric not in tune_engine.metric_names:
        raise InputError(f"metric {metric} is not among the engine's metrics "
                         f"{tune_engine.metric_names}")
    cv = protocol.kind == "cv"
    tune_table = run_sweep(tune_engine, grid, out, progress=progress, name="sweep",
                           map_chunks=map_chunks)
    eval_table = tune_table if cv else run_sweep(eval_engine, grid, out, progress=progress,
                                                 name="sweep_eval", map_chunks=map_chunks)
    pq_tune = _metric_matrix(tune_engine, tune_table, metric)
    pq_eval = None if cv else _metric_matrix(eval_engine, eval_table, metric)
    sel = run_protocol(protocol, pq_tune, pq_eval)
    cfg = configs_from_table(tune_table.iloc[[sel.index]], names)[0]
    n = len(names)
    m = eval_engine.metric_names.index(metric)
    refs = single_run_configs(n) + [rrf60_config(n)]
    ref_eval = eval_engine.evaluate(refs)[:, m]
    ref_tune = ref_eval if cv else tune_engine.evaluate(refs)[:, m]
    single = best_index(ref_tune[:n].mean(axis=1))  # chosen on the tuning queries
    tuned = sel.eval_values
    eval_means = eval_table[metric].to_numpy()
    rank = int(1 + np.sum(eval_means > tuned.mean() + 1e-12))
    fam = family_labels(tune_table)
    family_best = {}
    for f, idx in tune_table.groupby(fam)[metric].idxmax().items():
        family_best[str(f)] = {"label": str(tune_table.loc[idx, "label"]),
                               "tune": float(tune_table.loc[idx, metric]),
                               "eval": float(eval_table.loc[idx, metric])}
    notes = list(assumptions)
    if cv:
        notes.append("cross-validation: the best single run is chosen on all queries of the "
                     "split (optimistic for the baseline, so conservative for the tuned "
                     "configuration)")
    result = SweepResult(
        dataset=dataset.name, fingerprint=dataset.fingerprint, runs=tuple(names),
        metric=metric, protocol=protocol,
        config={**cfg.to_json(), "label": cfg.label(names)},
        tuned=estimate(tuned), tune_value=sel.tune_value,
        baselines={"best_single": comparison(names[single], tuned, ref_eval[single]),
                   "rrf60_equal": comparison("RRF k=60, equal weights", tuned, ref_eval[n])},
        singles={nm: float(ref_eval[i].mean()) for i, nm in enumerate(names)},
        optimism={"rank_on_eval_grid": rank, "grid_size": int(len(eval_means)),
                  "best_on_eval": float(eval_means.max()),
                  "best_on_eval_label": str(eval_table.label.iloc[int(np.argmax(eval_means))]),
                  "gap": float(eval_means.max() - tuned.mean())},
        grid_size=len(grid), family_best=family_best,
        per_query={"qids": list(eval_engine.qids), "tuned": tuned.tolist(),
                   "best_single": ref_eval[single].tolist(),
                   "rrf60_equal": ref_eval[n].tolist()},
        chosen_per_fold=tuple(str(tune_table.label.iloc[i]) for i in sel.chosen_per_fold),
        assumptions=tuple(notes), specs=tuple(specs), provenance=provenance(dataset))
    return result, tune_table, eval_table


# --------------------------------------------------------------------------- presets
PARALLEL_MIN = 16   # settings below which shipping the runs to other processes costs more


def _preset_block(preset, runs, qrels, grid: Sequence[dict], metrics: Sequence[str]) -> np.ndarray:
    """(settings, metrics, queries of ``qrels``) of ``preset`` run with each of ``grid``: each
    setting's ranked lists scored directly (:class:`~rrfbench.fusion.sweep.JudgedLists`, the numbers
    of ``evaluate_per_query(preset.run(...))``, tested)."""
    judged = qrels if isinstance(qrels, JudgedLists) else JudgedLists(qrels, list(metrics))
    return np.stack([judged.score({q: [d for d, _ in hits] for q, hits in
                                   preset.ranked_lists(runs, params).items()})
                     for params in grid])


def preset_matrix(preset, runs, qrels, grid: Sequence[dict], metrics: Sequence[str],
                  progress: bool = False, desc: str = "") -> np.ndarray:
    """(parameter sets, metrics, queries) values of ``preset`` run with each of ``grid``.

    A system fuses each query on its own and a metric scores each query on its own, so with
    more than one core (:func:`rrfbench.core.parallel.n_jobs`) the judged queries are cut into
    blocks (sorted qids, as :func:`~rrfbench.core.evaluation.evaluate_per_query` orders them), each
    block's runs and qrels run every setting in another process, and the blocks join along the
    query axis: the same numbers as in one process (tested), each run row shipped once."""
    grid = list(grid)
    label = desc or f"{preset.name}: {len(grid)} settings"
    jobs = n_jobs() if len(grid) >= PARALLEL_MIN else 1
    qids = list(qrels.qids)
    if jobs <= 1 or len(qids) < 2 * jobs:
        judged = JudgedLists(qrels, list(metrics))
        return np.stack([_preset_block(preset, runs, judged, [params], metrics)[0]
                         for params in bar(grid, desc=label, unit="setting", enabled=progress)])
    # only what some setting reads travels: each stream cut at the deepest any setting asks for
    cut = {}
    for role, run in runs.items():
        depths = [preset.depth(role, preset.defaults() | params,
                               preset.limit_for(preset.defaults() | params, None)) for params in grid]
        cut[role] = run if any(d is None for d in depths) else run.cut(max(depths))
    # two blocks per process: each block pays a setting's fixed cost again (a third of it on
    # scifact), more blocks would only show progress more often
    parts = [list(p) for p in np.array_split(np.asarray(qids, dtype=object), 2 * jobs) if len(p)]
    tasks = []
    for part in parts:
        keep = set(part)
        tasks.append((preset, {role: run.subset(keep) for role, run in cut.items()},
                      qrels.subset(keep), grid, list(metrics)))
    out = []
    with bar(total=len(qids), desc=f"{label} ({jobs} processes)", unit="query",
             enabled=progress) as shown:
        for part, values in zip(parts, process_imap(_preset_block, tasks), strict=True):
            out.append(values)
            shown.update(len(part))
    return np.concatenate(out, axis=2)


def tune_preset(dataset, preset, protocol: Protocol, runs_by_split: dict, metric: str,
                report_metrics: Sequence[str] = ("nDCG@10", "R@100"), progress: bool = True,
                cache_key: str = "") -> PresetResult:
    """Tune ``preset`` within its own knobs by ``protocol``; compare with its shipped values.

    ``runs_by_split`` maps each split the protocol needs to the preset's runs by role.
    """
    metrics = [metric] + [m for m in report_metrics if m != metric]
    grid = preset.grid()
    shipped = preset.defaults()
    e_runs = runs_by_split[protocol.eval_split]
    e_qrels = dataset.qrels(protocol.eval_split)
    if protocol.kind == "holdout":
        t_runs = runs_by_split[protocol.tune_split]
        pq_tune = preset_matrix(preset, t_runs, dataset.qrels(protocol.tune_split), grid,
                                [metric], progress, f"tune {preset.name}")[:, 0]
        sel = run_protocol(protocol, pq_tune, lambda i: preset_matrix(
            preset, e_runs, e_qrels, [grid[i]], [metric])[0, 0])
    else:
        pq_tune = preset_matrix(preset, e_runs, e_qrels, grid, [metric], progress,
                                f"tune {preset.name}")[:, 0]
        sel = run_protocol(protocol, pq_tune)
    best = grid[sel.index]
    both = preset_matrix(preset, e_runs, e_qrels, [best, shipped], metrics)
    tuned_vals = sel.eval_values
    tuned_metrics = {m: float(both[0, i].mean()) for i, m in enumerate(metrics)}
    tuned_metrics[metric] = float(tuned_vals.mean())
    return PresetResult(
        preset=preset.name, system=preset.system, dataset=dataset.name,
        fingerprint=dataset.fingerprint, metric=metric, protocol=protocol,
        knobs=preset.knob_table(), streams=dict(preset.streams),
        shipped={"params": shipped,
                 "metrics": {m: float(both[1, i].mean()) for i, m in enumerate(metrics)}},
        config=best, tuned=estimate(tuned_vals), tuned_metrics=tuned_metrics,
        vs_shipped=comparison("shipped", tuned_vals, both[1, 0]),
        tune_value=sel.tune_value, grid_size=len(grid),
        per_query={"qids": list(e_qrels.qids), "tuned": tuned_vals.tolist(),
                   "shipped": both[1, 0].tolist()},
        fidelity=tuple(f.to_json() for f in preset.fidelity),
        chosen_per_fold=tuple(sel.chosen_per_fold), cache_key=cache_key,
        provenance=provenance(dataset))

