"""The steps behind each ``rrfbench`` command that is not a whole workflow (list datasets,
retrieve and score runs, fuse, apply a saved configuration, a studied system on one split,
explain a query, sweep or tune either a dataset or a suite, export): each parses nothing (the
CLI does, :mod:`rrfbench.workflows.options`), computes with the library and returns an outcome with its
tables, which the CLI prints and notebooks display.

Called from: ``cli``.
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from .._version import __version__
from ..adaptive import features as qfeatures
from ..adaptive import validation as adaptive
from ..core.errors import InputError, ValidationWarning, choice
from ..core.evaluation import coverage, evaluate, evaluate_per_query
from ..core.metrics import DEFAULT_METRICS, parse_metrics
from ..core.runs import Run, manifest_path
from ..core.store import write_text
from ..core.trec import trec_tag
from ..data.datasets import available_datasets, load_dataset
from ..fusion import sweep as engine
from ..fusion.functions import METHODS, check_choices, rrf, score_fusion
from ..outputs.explanations import explain, explain_preset
from ..outputs.exporters import render
from ..results.dataset import PresetResult, RetrieverScores, load_result, specs_of
from ..results.policy import Policy
from ..results.values import DISPLAY_DIGITS
from ..systems import (
    presets as preset_registry,  # PRESETS read at call time: the registry can be swapped
)
from ..systems.presets import read_prior
from ..systems.registry import get_system
from ..tuning.selection import DEFAULT_RULE
from .dataset import (
    DEFAULT_KS,
    DEFAULT_SPECS,
    TABLE_METRICS,
    _quiet,
    as_dataset,
    load_runs,
    preset_result_path,
    preset_runs,
    retrieve_result,
    retriever_scores,
    sweep_dataset,
    sweep_grid,
    tune_preset_on,
)
from .distributed import client_for
from .options import check_specs, check_suite_options, one_of, per_run, with_options
from .suite import (
    retrieve_suite,
    sweep_suite,
    tune_preset_suite,
)

# --------------------------------------------------------------------------- the CLI's steps
# Each command of ``rrfbench`` parses its options (rrfbench.workflows.options) and calls one function here
# (notebooks call them too); each returns an outcome with ``to_json()`` and the table(s) to show.


def datasets_table():
    """The datasets on the search path with their counts (a DataFrame; empty when none)."""
    rows = []
    for name, path in available_datasets():
        ds = load_dataset(str(path))
        c = ds.counts()
        rows.append({"dataset": name, "docs": c["docs"], "queries": c["queries"],
                     "splits": ", ".join(f"{s} ({c[f'{s}_queries']} q, {c[f'{s}_qrels']} j)"
                                         for s in ds.splits),
                     "ignore_identical_ids": ds.ignore_identical_ids, "path": str(path)})
    return pd.DataFrame(rows)


def retrieve_table(dataset=None, specs: Sequence[str] = ("bm25",), splits=None,
                   depth: int = 1000, force: bool = False, metrics=TABLE_METRICS,
                   suite: str | None = None, granularity=None, seed=None, hops=None,
                   log: Callable[[str], None] = _quiet,
                   allow_missing: bool = False) -> RetrieverScores:
    """Retrieve (or reuse) the runs of ``specs`` (options as :func:`with_options`) on a
    dataset's splits, or on every collection of ``suite``: the
    :class:`~rrfbench.results.dataset.RetrieverScores` with one row per run."""
    one_of(dataset, suite)
    metrics = [str(m) for m in parse_metrics(list(metrics or TABLE_METRICS))]
    specs = with_options(specs, granularity, seed, hops)
    if suite:
        if splits:
            raise InputError("--split: a suite's splits come from datasets/suites.toml")
        done = retrieve_suite(suite, specs, depth, force, log=log, allow_missing=allow_missing)
        return retriever_scores(f"suite {suite}: runs at depth {depth}",
                                [(ds.name, ds, sp, spec, res) for ds, sp, spec, res in done],
                                metrics)
    if allow_missing:
        raise InputError("--allow-missing: use it with --suite")
    ds = as_dataset(dataset)
    splits = list(splits or ["test"])
    for s in splits:
        ds.qrels(s)
    return retriever_scores(f"{ds.name}: runs at depth {depth}",
                            [(None, ds, s, spec, retrieve_result(ds, spec, s, depth, force))
                             for s in splits for spec in specs], metrics)


@dataclass
class Scored:
    """A run (given, fused, or a studied system's) scored on a split: metrics and coverage."""

    dataset: str
    split: str
    title: str
    metrics: dict
    coverage: object
    n_queries: int
    run: Run | None = field(default=None, repr=False)
    extra: dict = field(default_factory=dict)   # what the JSON form adds (runs, config, ...)
    notes: list = field(default_factory=list)   # lines printed under the table
    warnings: list = field(default_factory=list)
    as_json: Callable | None = field(default=None, repr=False)  # a JSON form of its own
    written: str | None = None  # the line saying where the run was written (-o), if it was

    def table(self):
        return pd.DataFrame([{"metric": m, "value": v} for m, v in self.metrics.items()])

    def view(self) -> list:
        return [(self.title, self.table()), *self.notes, *([self.written] if self.written else [])]

    def coverage_line(self) -> str:
        c = self.coverage
        return f"coverage: {c.answered} of {c.judged} judged queries answered ({c.fraction:.0%})"

    def to_json(self) -> dict:
        if self.as_json is not None:
            return self.as_json(self)
        return {"dataset": self.dataset, "split": self.split, **self.extra,
                "n_queries": self.n_queries, "coverage": self.coverage.to_json(),
                "metrics": self.metrics}


def _scored(ds, split, scored_run, metrics, title, output=None, **extra) -> Scored:
    qrels = ds.qrels(split)
    scores = evaluate(scored_run, qrels, metrics)
    cov = coverage(scored_run, qrels)
    written = None
    if output:
        scored_run.to_trec(output, manifest={"dataset": ds.name, "split": split, "title": title,
                                             "rrfbench": __version__, **extra})
        written = (f"wrote {output} (TREC, tag {trec_tag(scored_run.name)}; the full name and "
                   f"configuration in {manifest_path(output)})")
    return Scored(ds.name, split, title, scores, cov, len(qrels.qids), scored_run, extra,
                  written=written)


def _metric_names(metrics) -> list[str]:
    return [str(m) for m in parse_metrics(list(metrics or DEFAULT_METRICS))]


def evaluate_file(run_file, dataset, split: str = "test", metrics=None) -> Scored:
    """A TREC run file scored against a dataset's qrels."""
    metrics = _metric_names(metrics)
    ds = as_dataset(dataset)
    qrels = ds.qrels(split)
    run = Run.from_trec(run_file)
    out = _scored(ds, split, run, metrics, f"{run_file} on {ds.name}/{split} "
                  f"({len(qrels.qids)} queries)", run=str(run_file))
    out.notes = [out.coverage_line()]
    return out


def fuse_runs(dataset, specs: Sequence[str] = ("bm25", "dense"), *, method: str = "rrf",
              k=(60.0,), weights=None, depth=(None,), rank_base: int = 1, limit: int = 0,
              norm: str = "minmax", missing: str = "zero", split: str = "test", metrics=None,
              output=None, log: Callable[[str], None] = _quiet) -> Scored:
    """Fuse the runs of ``specs`` with one configuration (``k`` and ``depth``: one value, or
    one per run) and score it."""
    check_choices(method=method, norm=norm, missing=missing, rank_base=rank_base, option="--")
    if limit < 0:
        raise InputError(f"--limit: {limit} must be >= 0 (0 = no cut)")
    metrics = _metric_names(metrics)
    specs = check_specs(specs)
    n = len(specs)
    ws = list(weights) if weights else [1.0] * n
    if len(ws) != n:
        raise InputError(f"--weights: expected {n} values (one per run: {', '.join(specs)}), "
                         f"got {len(ws)}")
    ks = per_run("--k", list(k), n)
    dp = per_run("--depth", list(depth), n)
    ds = as_dataset(dataset)
    ds.qrels(split)
    runs = load_runs(ds, specs, split, log=log)
    if method == "rrf":
        fused = rrf(runs, k=ks, weights=ws, rank_base=rank_base, depth=dp, limit=limit or None)
    else:
        fused = score_fusion(runs, method=method, norm=norm, weights=ws, missing=missing,
                             depth=dp, limit=limit or None)
    score = method != "rrf"
    out = _scored(ds, split, fused, metrics, f"{fused.name} on {ds.name}/{split}", output,
                  runs=[r.name for r in runs],
                  config={"method": method, "k": ks, "weights": ws, "depth": dp,
                          "rank_base": rank_base, "limit": limit or None,
                          "norm": norm if score else None, "missing": missing if score else None})
    out.notes = [out.coverage_line()]
    return out


def apply_config(dataset, config_path, which: str = "config", split: str = "test", metrics=None,
                 output=None, log: Callable[[str], None] = _quiet) -> Scored:
    """A saved fusion configuration (a sweep's or a suite's best.json) applied to any
    collection: the fused run, its scores and coverage (warns when the configuration was
    validated on another collection only)."""
    r = load_result(config_path)
    if r.preset:
        raise InputError(f"--config {config_path}: a preset's result; apply it with `rrfbench "
                         f"preset DATASET -p {r.preset} --config {config_path}`")
    cfg = r.config_obj(which)
    metrics = _metric_names(metrics)
    ds = as_dataset(dataset)
    ds.qrels(split)
    if r.validated_on() and ds.name != r.validated_on():
        warnings.warn(f"the configuration was tuned on {r.dataset} only; applied to {ds.name} "
                      "it has not been validated there", ValidationWarning, stacklevel=2)
    runs = load_runs(ds, specs_of(r), split, log=log)
    policy = r.policy_for(which)
    if policy is not None:
        return _apply_policy(ds, split, runs, policy, r, config_path, metrics, output)
    label = cfg.label([x.name for x in runs])
    out = _scored(ds, split, cfg.fuse(runs), metrics,
                  f"{label} ({config_path}) on {ds.name}/{split}", output,
                  runs=[x.name for x in runs], config={**cfg.to_json(), "label": label},
                  **{"from": str(config_path)})
    out.notes = [out.coverage_line()]
    return out


def _apply_policy(ds, split, runs, policy, result, config_path, metrics, output) -> Scored:
    """Each query fused with the candidate the policy picks from its features."""
    texts = dict(zip(ds.queries.qid.astype(str), ds.queries.text, strict=True))
    qids = list(ds.qrels(split).qids)
    queries = {q: texts.get(q, "") for q in qids}  # a judged query without text: length 0
    stats = qfeatures.corpus_stats(ds.corpus) if policy.feature_set == "all" else None
    fused, chosen = adaptive.apply_policy(policy, runs, queries, qids, stats)
    counts = chosen.label.value_counts()
    share = {lab: int(counts.get(lab, 0)) for lab in (c["label"] for c in policy.candidates)}
    out = _scored(ds, split, fused, metrics,
                  f"adaptive policy ({config_path}) on {ds.name}/{split}", output,
                  runs=[x.name for x in runs], policy=policy.describe(),
                  queries_per_candidate=share, verdict=result.verdict,
                  **{"from": str(config_path)})
    out.notes = [f"policy: {policy.describe()}",
                 "queries per candidate: " + "; ".join(f"{k}: {v}" for k, v in share.items()),
                 f"validated leave-one-collection-out on suite {result.suite}: {result.verdict}",
                 out.coverage_line()]
    return out


def preset_config(preset, path, which: str = "config") -> dict:
    """The knob values a saved result of ``preset`` holds (``which``: config or recommended)."""
    p = get_system(preset) if isinstance(preset, str) else preset
    r = load_result(path)
    owner = r.preset
    if owner != p.name:
        raise InputError(f"--config {path}: not a result of preset {p.name!r} (it is "
                         f"{'preset ' + repr(owner) if owner else 'a free fusion result'})")
    known = {k.name for k in p.knobs} | set(p.extra_defaults)
    return {k: v for k, v in r.config_for(which).items() if k in known}


def evaluate_preset(dataset, preset, split: str = "test", settings: Sequence[str] = (),
                    config=None, which: str = "config", limit: int = 0, prior=None,
                    streams: str = "default", output=None) -> Scored:
    """A studied system as shipped (or with ``settings`` ``knob=value``, or the knob values of
    a saved result ``config``) on one split; with ``output``, its fused run is written there
    (TREC, with a manifest naming the system, its knob values and streams)."""
    p = get_system(preset) if isinstance(preset, str) else preset
    params = p.defaults()
    if config is not None:
        params |= preset_config(p, config, which)
    params |= p.parse_settings(list(settings or []))
    if limit < 0:
        raise InputError(f"--limit: {limit} must be >= 0 (0 = the system's own)")
    p.check(p.defaults() | params)
    p.limit_for(params, limit or None)  # a limit the system does not take fails before retrieval
    pri = read_prior(prior) if prior else None
    ds = as_dataset(dataset)
    ds.qrels(split)
    runs = preset_runs(p, ds, split, streams=streams)
    queries = dict(zip(ds.queries.qid, ds.queries.text, strict=True))
    policy = load_result(config).policy_for(which) if config is not None else None
    if policy is not None:  # a per-query policy inside the system's knobs
        fused, chosen = adaptive.apply_policy(
            policy, adaptive.role_runs(runs), {str(q): t for q, t in queries.items()},
            list(ds.qrels(split).qids),
            fuse=lambda cand: p.run(runs, params | adaptive.knob_params(cand),
                                    limit=limit or None, prior=pri, queries=queries))
    else:
        fused = p.run(runs, params, limit=limit or None, prior=pri, queries=queries)
    unavailable = sorted(set(p.streams) - set(runs))
    out = _scored(ds, split, fused, list(TABLE_METRICS), f"{p.system} on {ds.name}/{split}"
                  + (" (per-query policy)" if policy is not None else ""), output,
                  preset=p.name, params=params,
                  streams={r: run.name for r, run in runs.items()},
                  **({"from": str(config)} if config is not None else {}))

    def as_json(o):
        return {"dataset": ds.name, "split": split, "preset": p.name,
                "streams": {r: run.name for r, run in runs.items()}, "params": params,
                "limit": p.limit_for(params, limit or None), "metrics": o.metrics,
                "coverage": o.coverage.to_json(), "fidelity": [f.to_json() for f in p.fidelity],
                "unavailable_streams": unavailable}

    out.as_json = as_json
    if policy is not None:
        counts = chosen.label.value_counts()
        share = {c["label"]: int(counts.get(c["label"], 0)) for c in policy.candidates}
        base_json = as_json
        out.as_json = lambda o: base_json(o) | {"policy": policy.describe(),
                                                "queries_per_candidate": share}
        out.notes = [f"policy: {policy.describe()}",
                     "queries per candidate: " + "; ".join(f"{k}: {v}" for k, v in share.items())]
    out.notes = out.notes + [f"params: {params}; {out.coverage_line()}"] + [
        f"  fidelity {line}" for line in p.fidelity_lines()]
    if unavailable:
        out.warnings = ["streams unavailable here (the system falls back without them): "
                        + ", ".join(unavailable)]
    return out


def explain_query(dataset, qid: str, config, split: str = "test", top: int = 10,
                  which: str = "config", log: Callable[[str], None] = _quiet):
    """One query under a saved configuration (fusion sweep, suite or preset result): per run
    its rank, score and contribution; returns ``(title, DataFrame)``."""
    return _explained(dataset, qid, config, split, top, which, log)[:2]


def _explained(dataset, qid, config, split, top, which, log):
    """(title, table, policy details or ``None``) of :func:`explain_query`; the details are
    (dataset, one-query runs, result, policy, features, utilities), computed once."""
    if top < 1:
        raise InputError(f"--top: {top} must be >= 1")
    if config is None:
        raise InputError("--config: give the best.json whose configuration to explain")
    r = load_result(config)
    ds = as_dataset(dataset)
    qrels = ds.qrels(split)
    details = None
    if r.preset:
        p = get_system(r.preset)
        params = r.config_for(which)
        table = explain_preset(p, preset_runs(p, ds, split), qid, params, qrels)
        label = f"{r.preset}: {params}"
    else:
        runs = load_runs(ds, specs_of(r), split, log=log)
        cfg = r.config_obj(which)
        policy = r.policy_for(which)
        if policy is not None:
            chosen, label, feats, utils = _policy_choice(ds, runs, policy, str(qid))
            cfg = engine.Config.from_json(chosen)
            one = [Run(x.df[x.df.qid.astype(str) == str(qid)], x.name, meta=x.meta) for x in runs]
            details = (ds, one, r, policy, feats, utils)
        else:
            label = cfg.label([x.name for x in runs])
        table = explain(runs, cfg, qid, qrels, top).head(top)
    text = ds.queries.set_index("qid").text.get(str(qid), "?")
    title = f"{ds.name}/{split} query {qid} ({text[:80]}): {label}"
    return title, table.reset_index(drop=True), details


def _policy_choice(ds, runs, policy, qid: str):
    """(chosen configuration, label line, features table, utilities table) of one query."""
    queries = dict(zip(ds.queries.qid.astype(str), ds.queries.text, strict=True))
    if qid not in queries:
        raise InputError(f"query {qid!r} is not a query of {ds.name}")
    stats = qfeatures.corpus_stats(ds.corpus) if policy.feature_set == "all" else None
    X = qfeatures.select_features(qfeatures.query_features(runs, queries, [qid], policy.feature_set,
                                                           stats, policy.depth, policy.rbo_p),
                                  policy.features)
    u = policy.utilities(X.to_numpy())[0]
    j = int(policy.choose(X.to_numpy())[0])
    chosen = policy.candidates[j]
    label = (f"adaptive policy chose candidate {j}: {chosen['label']}"
             + ("" if j else f" (the static default; best utility {u.max():+.4f} vs tau "
                             f"{policy.tau:.4g})"))
    feats = pd.DataFrame({"feature": X.columns, "value": X.iloc[0].to_numpy()})
    utils = pd.DataFrame({"candidate": range(len(u)), "configuration":
                          [c["label"] for c in policy.candidates],
                          "utility": np.round(u, DISPLAY_DIGITS),  # shown above its noise
                          "chosen": ["yes" if i == j else "" for i in range(len(u))]})
    if policy.model.get("target") == "weights":
        w = _predicted_weights(policy, X.to_numpy())[0]
        label += (f"; predicted weights {', '.join(f'{v:.3f}' for v in w)} (snapped to the "
                  f"nearest of {len(u)} weightings; utility = how much nearer, in L1, than to "
                  "candidate 0)")
        keep = sorted({0, j, *np.argsort(-np.round(u, DISPLAY_DIGITS), kind="stable")[:5].tolist()})
        utils = utils.iloc[keep].reset_index(drop=True)   # the default, the choice, the nearest
    return chosen, label, feats, utils


def _predicted_weights(policy, X: np.ndarray) -> np.ndarray:
    """A weight-kind policy's raw predicted weight vectors (before snapping): its model's
    outputs, which :meth:`~rrfbench.results.policy.Policy.utilities` returns after column 0 when read
    as gains."""
    model = {k: v for k, v in policy.model.items() if k != "points"} | {"target": "gains"}
    outs = len(model.get("intercept") or model.get("ensembles") or [])
    as_gains = Policy("weights", [], list(policy.features), [{}] * (outs + 1), model)
    return as_gains.utilities(X)[:, 1:]


def explain_view(dataset, qid: str, config, split: str = "test", top: int = 10,
                 which: str = "config", log: Callable[[str], None] = _quiet) -> list:
    """``rrfbench explain``: :func:`explain_query`'s table and, for a per-query policy, the
    query's features, each candidate's utility and what the static default would have done."""
    title, table, details = _explained(dataset, qid, config, split, top, which, log)
    if details is None:
        return [(title, table)]
    ds, one, r, policy, feats, utils = details
    qrels = ds.qrels(split)
    j = int(utils.candidate[utils.chosen.eq("yes")].iloc[0])
    scores = {}
    for name, i in (("static default", 0), ("chosen", j)):
        pq = evaluate_per_query(engine.Config.from_json(policy.candidates[i]).fuse(one), qrels,
                                [r.metric])
        scores[name] = float(pq[r.metric].get(str(qid), float("nan")))
    line = ", ".join(f"{k} {v:.4f}" for k, v in scores.items())
    return [(title, table), (f"query {qid}: features ({policy.feature_set})", feats),
            (f"query {qid}: candidates (utility: "
             + ("how much nearer the predicted weights are than to candidate 0; the default, "
                "the choice and the five nearest)"
                if policy.model.get("target") == "weights" else "expected gain over candidate 0)"),
             utils),
            f"{r.metric} on this query ({split}): {line}; static default: "
            f"{policy.candidates[0]['label']}"]


def sweep_any(dataset=None, suite=None, specs: Sequence[str] = DEFAULT_SPECS, *, methods=METHODS,
              k=DEFAULT_KS, weights=None, weight_step: float = 0.1, depth=(None,),
              per_run_k: bool = False, objective: str = "macro", rule: str = DEFAULT_RULE, **kw):
    """``rrfbench sweep``: a sweep of one dataset (:func:`sweep_dataset`) or across a suite
    (:func:`sweep_suite`) over the grid the options describe."""
    one_of(dataset, suite)
    check_suite_options(suite, objective, rule,
                        any(kw.get(o) for o in ("tune_split", "eval_split", "folds")))
    specs = check_specs(specs)
    for m in methods:
        check_choices(method=m, option="--")
    if kw.get("run_depth", 1000) < 1:
        raise InputError(f"--run-depth: {kw['run_depth']} must be >= 1")
    grid = sweep_grid(len(specs), methods=methods, k=k, weights=weights,
                      weight_step=weight_step, depth=depth, per_run_k=per_run_k)
    if not suite and kw.get("allow_missing"):
        raise InputError("--allow-missing: use it with --suite")
    if suite:
        for o in ("tune_split", "eval_split", "folds"):
            kw.pop(o, None)
        return sweep_suite(suite, specs, grid=grid, objective=objective, rule=rule, **kw)
    kw["folds"] = kw.get("folds") or None
    kw.pop("allow_missing", None)
    return sweep_dataset(dataset, specs, grid=grid, **kw)


@dataclass
class PresetOutcome:
    """A studied system tuned on one dataset, and where it was written."""

    result: PresetResult
    path: Path

    def view(self) -> list:
        r = self.result
        return [(f"{r.system}: shipped vs tuned on {r.dataset} ({r.protocol.describe()})",
                 r.summary()),
                f"tuned: {r.tuned_knobs()}  p vs shipped {r.vs_shipped.p_value:.4g}; "
                f"wrote {self.path}"]


def tune_any(dataset=None, preset=None, suite=None, metric: str = "nDCG@10",
             objective: str = "macro", rule: str = DEFAULT_RULE, tune_split=None, eval_split=None,
             folds=None, progress: bool = True, allow_missing: bool = False,
             log: Callable[[str], None] = _quiet):
    """``rrfbench tune``: a studied system tuned on one dataset or across a suite."""
    one_of(dataset, suite)
    if not preset:
        raise InputError("--preset: give the studied system to tune (rrfbench presets lists them)")
    get_system(preset)
    check_suite_options(suite, objective, rule, tune_split or eval_split or folds)
    if suite:
        return tune_preset_suite(suite, preset, metric, objective, rule, progress=progress,
                                 allow_missing=allow_missing, log=log)
    if allow_missing:
        raise InputError("--allow-missing: use it with --suite")
    r = tune_preset_on(dataset, preset, metric, tune_split, eval_split, folds or None,
                       progress=progress, log=log)
    return PresetOutcome(r, preset_result_path(r.dataset, r.preset))


def presets_lines() -> list[str]:
    """Each studied system: its streams, knobs, export formats and fidelity notes."""
    lines = []
    for p in preset_registry.PRESETS.values():
        lines += [f"[bold]{p.name}[/bold]: {p.system}",
                  "  streams: " + ", ".join(f"{r}={s}" for r, s in p.streams.items()),
                  "  knobs: " + ", ".join(f"{k.name}={k.default}" + (" (fixed)" if k.fixed else "")
                                          for k in p.knobs),
                  "  exports: " + ", ".join(p.exports),
                  *[f"  fidelity {line}" for line in p.fidelity_lines()]]
    return lines


def cluster(scheduler: str | None = None, workers: int | None = None):
    """A context giving a Dask client (``scheduler`` address, or a local cluster of ``workers``
    processes), or ``None`` when neither is given."""
    if scheduler or workers is not None:
        return client_for(scheduler, workers)
    return contextlib.nullcontext(None)


def export_result(best_json, to: str, which: str = "recommended", output=None,
                  engine_version: str | None = None) -> str:
    """A saved result rendered in a target's configuration shape (:func:`rrfbench.outputs.exporters.
    render`); with ``output`` also written there."""
    if which not in WHICH_EXPORT:
        raise choice("--which", which, WHICH_EXPORT)
    text = render(load_result(best_json), to, which=which, path=best_json,
                  engine_version=engine_version)
    if output:
        write_text(output, text)
    return text


WHICH_EXPORT = ("recommended", "config")  # export's default comes first: what the verdict supports
