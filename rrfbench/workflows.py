"""End-to-end steps, shared by the CLI and the notebooks: retrieve, sweep a dataset, tune the
studied systems, the demo.

Each step takes plain arguments, returns result objects (and the tables behind them) and writes
its files under :func:`rrfbench.store.results_dir`; printing is left to the caller (``log`` is
an optional callable for one-line progress messages).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .datasets import Dataset, load_dataset
from .errors import InputError
from .results import PresetResult, SweepResult, load_result, save_result
from .runs import Run
from .store import results_dir, write_json

DEFAULT_SPECS = ("bm25", "fts5", "dense")
DEFAULT_KS = (1, 2, 5, 10, 20, 30, 40, 60, 80, 100, 150, 200, 300)
DEFAULT_METHODS = ("rrf", "convex", "combsum", "combmnz")
DEFAULT_NORMS = ("minmax", "zscore", "tmm")
DEFAULT_MISSING = ("zero", "min")
TABLE_METRICS = ("nDCG@10", "R@100", "RR@10")


def _quiet(_msg: str) -> None:
    pass


def as_dataset(dataset: str | Dataset) -> Dataset:
    return load_dataset(dataset) if isinstance(dataset, str) else dataset


# --------------------------------------------------------------------------- runs
def retrieve(dataset, retriever: str = "bm25", split: str = "test", depth: int = 1000,
             force: bool = False, **options) -> Run:
    """The run of ``retriever`` (a spec such as ``bm25``, ``fts5:phrase``, ``dense``) on a split.

    Cached under ``results/runs/<dataset>/<split>/`` with a manifest; see
    :mod:`rrfbench.retrievers.base`.
    """
    return retrieve_result(dataset, retriever, split, depth, force, **options).run


def retrieve_result(dataset, retriever: str = "bm25", split: str = "test", depth: int = 1000,
                    force: bool = False, **options):
    """Like :func:`retrieve`, returning the :class:`~rrfbench.retrievers.RunResult` (run,
    manifest, path, whether it came from the cache)."""
    from .retrievers import cached_run, make_retriever

    ds = as_dataset(dataset)
    ds.qrels(split)  # an unknown split fails before any work
    if not isinstance(depth, int) or isinstance(depth, bool) or depth < 1:
        raise InputError(f"--depth: {depth!r} must be a whole number >= 1")
    return cached_run(make_retriever(retriever, **options), ds, split, depth, force)


def load_runs(dataset, specs: Sequence[str], split: str, depth: int = 1000,
              log: Callable[[str], None] = _quiet) -> list[Run]:
    """Cached runs of ``specs`` on ``split`` (retrieving what is missing)."""
    out = []
    for spec in specs:
        res = retrieve_result(dataset, spec, split, depth)
        log(f"{res.run.name} ({split}): {'cached' if res.cached else 'retrieved'} {res.path}")
        out.append(res.run)
    return out


# --------------------------------------------------------------------------- fusion sweeps
@dataclass
class SweepOutcome:
    """A sweep's result object, its tables (tune and eval split), and where it was written."""

    result: SweepResult
    table: object
    eval_table: object
    out: Path | None
    engines: dict = field(default_factory=dict, repr=False)


def sweep_grid(n_runs: int, methods=DEFAULT_METHODS, k=DEFAULT_KS, weights=None,
               weight_step: float = 0.1, depth=(None,), per_run_k: bool = False,
               rank_base=(1,), norms=DEFAULT_NORMS, missing=DEFAULT_MISSING):
    """The default sweep grid (every fusion family), or the one the arguments describe."""
    from .engine import make_grid

    return make_grid(n_runs, methods=tuple(methods), k=tuple(k), weights=weights,
                     depth=tuple(depth), per_run_k=per_run_k, rank_base=tuple(rank_base),
                     norms=tuple(norms), missing=tuple(missing), weight_step=weight_step)


def engines_for(dataset, specs: Sequence[str], splits: Sequence[str], metrics: Sequence[str],
                run_depth: int = 1000, log: Callable[[str], None] = _quiet) -> dict:
    """A :class:`~rrfbench.engine.FusionEngine` per split over the runs of ``specs``."""
    from .engine import FusionEngine

    ds = as_dataset(dataset)
    return {s: FusionEngine(load_runs(ds, specs, s, run_depth, log), ds.qrels(s), tuple(metrics))
            for s in dict.fromkeys(splits)}


def sweep_dataset(dataset, specs: Sequence[str] = DEFAULT_SPECS, *, grid=None,
                  metric: str = "nDCG@10", tune_split: str | None = None,
                  eval_split: str | None = None, folds: int | None = None,
                  run_depth: int = 1000, out: str | Path | None = None, write: bool = True,
                  progress: bool = True, engines: dict | None = None, protocol=None,
                  client=None, log: Callable[[str], None] = _quiet) -> SweepOutcome:
    """Sweep fusion configurations over the runs of ``specs`` and tune them honestly.

    The protocol comes from :func:`rrfbench.tuning.choose_protocol`; the grid defaults to
    :func:`sweep_grid`. With ``write``, best.json, per_query.csv, the sweep tables, plots and
    report.md go under ``out`` (default ``results/<dataset>``).
    """
    from .metrics import DEFAULT_METRICS, parse_metric
    from .tuning import choose_protocol, tune_fusion

    ds = as_dataset(dataset)
    metric = str(parse_metric(metric))
    specs = list(specs)
    if len(set(specs)) != len(specs):
        raise InputError(f"-r: a retriever is given twice in {specs}")
    protocol = protocol or choose_protocol(ds.splits, tune_split, eval_split, folds)
    log(f"protocol: {protocol.describe()} ({protocol.reason})")
    grid = grid if grid is not None else sweep_grid(len(specs))
    metrics = [metric] + [m for m in DEFAULT_METRICS if m != metric]
    engines = dict(engines or {})
    need = [s for s in (protocol.tune_split, protocol.eval_split) if s not in engines]
    engines.update(engines_for(ds, specs, need, metrics, run_depth, log))
    out = Path(out) if out else results_dir() / ds.name
    result, table, eval_table = tune_fusion(
        ds, protocol, engines[protocol.tune_split], engines[protocol.eval_split], grid, metric,
        out=out if write else None, progress=progress, specs=specs, client=client)
    if write:
        from .report import write_sweep_outputs

        write_sweep_outputs(result, table, eval_table, out)
    return SweepOutcome(result, table, eval_table, out if write else None, engines)


# --------------------------------------------------------------------------- presets
def preset_runs(preset, dataset, split: str, depth: int = 1000,
                streams: str = "default") -> dict[str, Run]:
    """The cached rrfbench runs each stream of ``preset`` needs (retrieved when missing).

    ``streams="full"`` uses every stream the system fuses that rrfbench models
    (``preset.full_streams``: span FTS, entity match, graph expansion), instead of the default
    two-stream form.
    """
    if streams not in ("default", "full"):
        from .errors import choice

        raise choice("--streams", streams, ("default", "full"))
    specs = preset.roles_available()
    if streams == "full":
        if not preset.full_streams:
            raise InputError(f"preset {preset.name!r} models no streams beyond its default ones")
        specs = dict(preset.full_streams)
    return {role: retrieve(dataset, spec, split, depth) for role, spec in specs.items()}


def knowledge_bases(dataset, split: str, n_bases: int, preset="zeus", seed: int = 0) -> list:
    """Zeus's multi-knowledge-base search, simulated: the corpus partitioned into ``n_bases``
    (documents assigned at random with ``seed``), each base with its own keyword index
    (``rank_bm25:jieba`` over the base's documents only) and its vector results (the global
    cosine ranking restricted to the base: exact, cosine does not depend on other documents).
    Returns the per-base runs by role, for :meth:`Zeus.run_bases`."""
    import numpy as np

    from .presets import get_preset

    ds = as_dataset(dataset)
    p = get_preset(preset) if isinstance(preset, str) else preset
    if n_bases < 1:
        raise InputError(f"--bases: {n_bases} must be >= 1")
    rng = np.random.default_rng(seed)
    base_of = rng.integers(0, n_bases, len(ds.corpus))
    vector = retrieve(ds, p.streams["vector"], split)
    bases = []
    for b in range(n_bases):
        docs = ds.corpus.docid[base_of == b].tolist()
        sub = ds.subset(docs, f"{ds.name}-kb{b}of{n_bases}-s{seed}")
        keep = set(docs)
        runs = {"vector": Run(vector.df[vector.df.docid.isin(keep)], vector.name,
                              meta=vector.meta)}
        if "keyword" in p.roles_available():
            runs["keyword"] = retrieve(sub, p.streams["keyword"], split)
        bases.append(runs)
    return bases


def _source_digest(*modules) -> str:
    h = hashlib.sha256()
    for m in modules:
        h.update(Path(m.__file__).read_bytes())
    return h.hexdigest()[:16]


VOLATILE_MANIFEST_KEYS = ("created", "embeddings_cached", "shards_encoded", "index_cached")


def recipe(manifest: dict) -> dict:
    """A run manifest without what changes when the same run is recomputed (when, how long:
    every ``*_s`` timing, what was cached), so a recomputed identical run keeps saved results
    valid."""
    return {k: v for k, v in (manifest or {}).items()
            if k not in VOLATILE_MANIFEST_KEYS and not k.endswith("_s")}


def preset_cache_key(preset, dataset, protocol, metric: str) -> str:
    """Changes whenever the runs (their manifests), grid, protocol, dataset or the code that
    computes the result change."""
    import importlib

    from . import fusion, tuning
    from .presets import base
    from .retrievers import retriever_name, run_path
    from .retrievers.base import read_manifest

    ds = as_dataset(dataset)
    manifests = [recipe(read_manifest(run_path(ds.name, split, retriever_name(spec))))
                 for split in sorted({protocol.tune_split, protocol.eval_split})
                 for spec in preset.roles_available().values()]
    module = importlib.import_module(type(preset).__module__)
    blob = json.dumps({"preset": preset.name, "grid": preset.grid(), "metric": metric,
                       "protocol": protocol.to_json(), "fingerprint": ds.fingerprint,
                       "code": _source_digest(module, base, tuning, fusion),
                       "manifests": manifests}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def preset_result_path(dataset_name: str, preset_name: str) -> Path:
    return results_dir() / dataset_name / "presets" / preset_name / "best.json"


def tune_preset_on(dataset, preset, metric: str = "nDCG@10", tune_split: str | None = None,
                   eval_split: str | None = None, folds: int | None = None,
                   progress: bool = True, reuse: bool = True, write: bool = True,
                   protocol=None, log: Callable[[str], None] = _quiet) -> PresetResult:
    """Tune a studied system within its own knobs on ``dataset`` (protocol as for sweeps).

    Writes ``results/<dataset>/presets/<name>/best.json``; with ``reuse``, a saved result whose
    cache key still matches is returned without recomputing.
    """
    from .metrics import parse_metric
    from .presets import get_preset
    from .tuning import choose_protocol, tune_preset

    ds = as_dataset(dataset)
    p = get_preset(preset) if isinstance(preset, str) else preset
    metric = str(parse_metric(metric))
    protocol = protocol or choose_protocol(ds.splits, tune_split, eval_split, folds)
    runs = {s: preset_runs(p, ds, s) for s in dict.fromkeys((protocol.tune_split,
                                                               protocol.eval_split))}
    key = preset_cache_key(p, ds, protocol, metric)
    path = preset_result_path(ds.name, p.name)
    if reuse and path.exists():
        try:
            old = load_result(path)
            if isinstance(old, PresetResult) and old.cache_key == key:
                log(f"{p.name}: reusing {path}")
                return old
        except InputError:
            pass
    result = tune_preset(ds, p, protocol, runs, metric, progress=progress, cache_key=key)
    if write:
        save_result(result, path)
    return result


def preset_table(dataset, presets: Sequence[str] | None = None, metric: str = "nDCG@10",
                 progress: bool = True, protocol=None, log: Callable[[str], None] = _quiet
                 ) -> list[PresetResult]:
    """Tune every preset on ``dataset`` (reusing what is cached) and write the report section."""
    from .presets import PRESETS
    from .report import presets_section, write_report

    ds = as_dataset(dataset)
    rows = [tune_preset_on(ds, name, metric, progress=progress, protocol=protocol, log=log)
            for name in (presets or list(PRESETS))]
    write_report(results_dir() / ds.name, {"presets": presets_section(ds.name, rows)})
    return rows


# --------------------------------------------------------------------------- the demo
@dataclass
class DemoOutcome:
    dataset: str
    retrievers: list[dict]
    sweep: SweepOutcome
    presets: list[PresetResult]
    stages: dict[str, float]
    all_cached: bool
    out: Path
    timing_log: list[dict] = field(default_factory=list)
    suite: SuiteOutcome | None = None
    suite_presets: list = field(default_factory=list)


def retriever_rows(dataset, specs: Sequence[str], splits: Sequence[str], engines: dict,
                   results: dict) -> list[dict]:
    """One row per (retriever, split) with its metrics, computed by the sweep engine (the same
    numbers as ``evaluate``; checked in tests)."""
    from .tuning import single_run_configs

    rows = []
    for sp in splits:
        eng = engines[sp]
        pq = eng.evaluate(single_run_configs(len(specs)))
        for i, spec in enumerate(specs):
            res = results[(spec, sp)]
            row = {"retriever": res.run.name, "split": sp}
            for m in TABLE_METRICS:
                row[m] = float(pq[i, eng.metric_names.index(m)].mean())
            row["retrieve_s"] = float(res.manifest.get("wall_time_s", 0.0))
            row["cached"] = "yes" if res.cached else "no"
            rows.append(row)
    return rows


def demo(dataset: str = "scifact", specs: Sequence[str] = DEFAULT_SPECS, metric: str = "nDCG@10",
         progress: bool = True, suite: str | None = "en",
         log: Callable[[str], None] = _quiet) -> DemoOutcome:
    """The main job: retrieve, sweep (tuned and reported honestly), the studied systems,
    then (with ``suite``) free fusion and every studied system tuned across the suite and
    validated leave-one-collection-out; times each stage and appends the wall time to
    ``demo_timing.json``."""
    from .engine import FusionEngine
    from .metrics import DEFAULT_METRICS, parse_metric
    from .report import retrievers_section, write_report
    from .tuning import choose_protocol

    t0 = time.perf_counter()
    stages: dict[str, float] = {}

    def stage(name, since):
        stages[name] = round(time.perf_counter() - since, 2)
        return time.perf_counter()

    ds = as_dataset(dataset)
    specs = list(specs)
    metric = str(parse_metric(metric))
    protocol = choose_protocol(ds.splits)
    splits = list(dict.fromkeys((protocol.tune_split, protocol.eval_split)))
    t = time.perf_counter()
    results = {(spec, sp): retrieve_result(ds, spec, sp) for sp in splits for spec in specs}
    t = stage("retrieve (or load cached runs)", t)
    metrics = [metric] + [m for m in DEFAULT_METRICS if m != metric]
    engines = {sp: FusionEngine([results[(s, sp)].run for s in specs], ds.qrels(sp),
                                tuple(metrics)) for sp in splits}
    t = stage("build sweep engines", t)
    rows = retriever_rows(ds, specs, splits, engines, results)
    out = results_dir() / ds.name
    write_json(out / "retrievers.json", rows)
    write_report(out, {"retrievers": retrievers_section(ds.name, rows)})
    t = stage("score single retrievers", t)
    sw = sweep_dataset(ds, specs, metric=metric, protocol=protocol, engines=engines,
                       progress=progress, log=log)
    t = stage("sweep, tune, report", t)
    presets = preset_table(ds, metric=metric, progress=progress, protocol=protocol, log=log)
    t = stage("studied systems", t)
    suite_out, suite_presets = None, []
    if suite:
        from .presets import PRESETS

        suite_out = sweep_suite(suite, specs, metric=metric, progress=progress, log=log)
        suite_presets = [tune_preset_suite(suite, name, metric, progress=progress, log=log)
                         for name in PRESETS]
        stage(f"suite {suite}: transfer across collections", t)
    wall = time.perf_counter() - t0
    all_cached = all(r.cached for r in results.values())
    log_path = out / "demo_timing.json"
    timing = json.loads(log_path.read_text()) if log_path.exists() else []
    timing.append({"wall_s": round(wall, 1), "all_runs_cached": all_cached, "stages": stages,
                   "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    write_json(log_path, timing)
    stages["total"] = round(wall, 2)
    return DemoOutcome(ds.name, rows, sw, presets, stages, all_cached, out, timing, suite_out,
                       suite_presets)


# --------------------------------------------------------------------------- suites
@dataclass
class SuiteOutcome:
    """A suite result and where it was written."""

    result: object
    out: Path | None
    tables: dict = field(default_factory=dict, repr=False)


def suite_members(suite: str, min_members: int = 2) -> list:
    """[(Dataset, Protocol)] of a named suite (protocols by the one rule)."""
    from .suites import get_suite
    from .tuning import choose_protocol

    s = get_suite(suite, min_members=min_members)
    out = []
    for m in s.members:
        ds = load_dataset(m.name)
        out.append((ds, choose_protocol(ds.splits, m.tune_split, m.eval_split)))
    return out


def retrieve_suite(suite: str, specs: Sequence[str], depth: int = 1000, force: bool = False,
                   log: Callable[[str], None] = _quiet) -> list:
    """Fill every collection's runs (tuning and evaluation splits) of a suite; returns the
    :class:`~rrfbench.retrievers.RunResult` of each."""
    out = []
    for ds, p in suite_members(suite, min_members=1):
        for split in dict.fromkeys((p.tune_split, p.eval_split)):
            for spec in specs:
                res = retrieve_result(ds, spec, split, depth, force)
                log(f"{ds.name}/{split} {res.run.name}: {'cached' if res.cached else 'retrieved'}")
                out.append((ds.name, split, res))
    return out


def transfer_dir(suite: str) -> Path:
    return results_dir() / "transfer" / suite


def sweep_suite(suite: str = "en", specs: Sequence[str] = DEFAULT_SPECS, *, grid=None,
                metric: str = "nDCG@10", objective: str = "macro", rule: str = "best",
                run_depth: int = 1000, out: str | Path | None = None, write: bool = True,
                progress: bool = True, client=None,
                log: Callable[[str], None] = _quiet) -> SuiteOutcome:
    """Free fusion tuned across a suite and validated leave-one-collection-out.

    Writes ``results/transfer/<suite>/``: best.json (the TransferResult), report.md, the forest
    plot, the transfer-matrix heatmap and the k curves of every collection.
    """
    from .metrics import DEFAULT_METRICS, parse_metric
    from .transfer import fusion_suite

    metric = str(parse_metric(metric))
    specs = list(specs)
    if len(set(specs)) != len(specs):
        raise InputError(f"-r: a retriever is given twice in {specs}")
    members = suite_members(suite)
    grid = grid if grid is not None else sweep_grid(len(specs))
    metrics = [metric] + [m for m in DEFAULT_METRICS if m != metric]
    out = Path(out) if out else transfer_dir(suite)
    key = _suite_key(members, specs, grid, metric, objective, rule, run_depth)
    if write and (out / "best.json").exists():
        try:
            old = load_result(out / "best.json")
            if getattr(old, "provenance", {}).get("cache_key") == key:
                log(f"suite {suite}: reusing {out / 'best.json'} (runs, grid and code unchanged)")
                return SuiteOutcome(old, out)
        except InputError:
            pass
    result, tables = fusion_suite(
        suite, members, lambda ds, split: load_runs(ds, specs, split, run_depth, log), grid,
        metric, metrics, out=out if write else None, progress=progress, objective=objective,
        rule=rule, specs=specs, client=client, log=log)
    from dataclasses import replace

    key = _suite_key(members, specs, grid, metric, objective, rule, run_depth)  # runs may be new
    result = replace(result, provenance={**result.provenance, "cache_key": key})
    if write:
        from .report import write_transfer_outputs

        write_transfer_outputs(result, out)
    return SuiteOutcome(result, out if write else None, tables)


def _suite_key(members, specs, grid, metric, objective, rule, run_depth) -> str:
    """Changes whenever a run (its manifest), the grid, the protocol or the code changes."""
    from . import engine, fusion, stats, transfer, tuning
    from .retrievers import retriever_name, run_path
    from .retrievers.base import read_manifest

    manifests = [recipe(read_manifest(run_path(ds.name, split, retriever_name(spec))))
                 for ds, p in members for split in sorted({p.tune_split, p.eval_split})
                 for spec in specs]
    blob = json.dumps({"specs": list(specs), "grid": [c.to_json() for c in grid],
                       "metric": metric, "objective": objective, "rule": rule,
                       "depth": run_depth, "protocols": [p.to_json() for _, p in members],
                       "fingerprints": [ds.fingerprint for ds, _ in members],
                       "code": _source_digest(engine, fusion, stats, transfer, tuning),
                       "manifests": manifests}, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def tune_preset_suite(suite: str, preset, metric: str = "nDCG@10", objective: str = "macro",
                      rule: str = "best", progress: bool = True, reuse: bool = True,
                      write: bool = True, log: Callable[[str], None] = _quiet) -> SuiteOutcome:
    """A studied system tuned within its own knobs across a suite, validated
    leave-one-collection-out against its shipped values (``results/transfer/<suite>/presets/
    <name>/``). Reused while every collection's runs, the grid and the code are unchanged."""
    from .metrics import parse_metric
    from .presets import get_preset
    from .transfer import preset_suite

    p = get_preset(preset) if isinstance(preset, str) else preset
    metric = str(parse_metric(metric))
    members = suite_members(suite)
    key = hashlib.sha256(json.dumps([preset_cache_key(p, ds, proto, metric)
                                     for ds, proto in members] + [objective, rule],
                                    sort_keys=True).encode()).hexdigest()[:16]
    out = transfer_dir(suite) / "presets" / p.name
    if reuse and (out / "best.json").exists():
        try:
            old = load_result(out / "best.json")
            if getattr(old, "provenance", {}).get("cache_key") == key:
                log(f"{p.name} on suite {suite}: reusing {out / 'best.json'}")
                return SuiteOutcome(old, out)
        except InputError:
            pass
    result = preset_suite(suite, members, p, lambda ds, split: preset_runs(p, ds, split), metric,
                          progress=progress, objective=objective, rule=rule, log=log)
    # the key is computed again: runs retrieved just now have new manifests
    key = hashlib.sha256(json.dumps([preset_cache_key(p, ds, proto, metric)
                                     for ds, proto in members] + [objective, rule],
                                    sort_keys=True).encode()).hexdigest()[:16]
    from dataclasses import replace

    result = replace(result, provenance={**result.provenance, "cache_key": key})
    if write:
        from .report import transfer_section, write_report, write_transfer_outputs

        plots = write_transfer_outputs(result, out)
        # the suite's report gathers every preset's LOCO table after the free-fusion one
        write_report(transfer_dir(suite), {f"preset-{p.name}": transfer_section(
            result, {k: f"presets/{p.name}/{v}" for k, v in plots.items()})})
    return SuiteOutcome(result, out if write else None)
