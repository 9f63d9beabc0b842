"""The library's steps on one dataset, shared by the CLI and the notebooks: retrieve runs,
sweep fusion and tune it honestly, tune the studied systems.

Each step takes plain arguments, returns result objects (and the tables behind them) and writes
its files under :func:`rrfbench.core.store.results_dir`; printing is left to the caller (``log`` is
an optional callable for one-line progress messages). Across collections:
:mod:`rrfbench.workflows.suite`; the main job: :mod:`rrfbench.workflows.demo`; the CLI's commands:
:mod:`rrfbench.workflows.commands`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..core.errors import InputError, choice
from ..core.evaluation import coverage, evaluate
from ..core.metrics import DEFAULT_METRICS, parse_metric
from ..core.runs import Run
from ..core.store import results_dir
from ..data.datasets import Dataset, load_dataset
from ..fusion import config as fusion_config
from ..fusion import functions as fusion
from ..fusion.functions import METHODS, MISSING, NORMALISATIONS
from ..fusion.sweep import FusionEngine, make_grid
from ..outputs.report import (
    presets_section,
    write_report,
    write_sweep_outputs,
)
from ..results.dataset import PresetResult, RetrieverScores, StudiedSystems, SweepResult
from ..retrievers import cached_run, make_retriever
from ..systems import (
    presets as preset_registry,  # PRESETS read at call time: the registry can be swapped
)
from ..systems.engines import SPACES as ENGINE_SPACES
from ..systems.engines import base as engine_base
from ..systems.presets import base as preset_base
from ..systems.registry import get_system
from ..tuning import holdout as tuning
from ..tuning.holdout import choose_protocol, tune_fusion, tune_preset
from .cache import Inputs, _quiet, reuse_or_compute, run_inputs
from .distributed import chunk_map as dask_chunk_map

DEFAULT_SPECS = ("bm25", "fts5", "dense")
DEFAULT_KS = (1, 2, 5, 10, 20, 30, 40, 60, 80, 100, 150, 200, 300)
DEFAULT_METHODS = METHODS                                  # every fusion family
DEFAULT_NORMS = tuple(n for n in NORMALISATIONS if n != "none")
DEFAULT_MISSING = MISSING
TABLE_METRICS = ("nDCG@10", "R@100", "RR@10")




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


def retriever_scores(title: str, items: Sequence[tuple], metrics: Sequence[str] = TABLE_METRICS,
                     scores: dict | None = None) -> RetrieverScores:
    """The table of single retrievers (the one builder of it): ``items`` are ``(collection or
    None, dataset, split, spec, RunResult)``; each row holds the run's metrics (from ``scores``,
    ``{(dataset name, split, spec): {metric: value}}``, when the caller computed them already,
    e.g. with the sweep engine, whose numbers equal :func:`rrfbench.core.evaluation.evaluate`'s;
    else evaluated here), the judged queries it answered, its retrieval time and whether it
    came from the cache."""
    metrics = [str(m) for m in metrics]
    rows = []
    for coll, ds, split, spec, res in items:
        qrels = ds.qrels(split)
        vals = (scores or {}).get((ds.name, split, spec)) or evaluate(res.run, qrels, metrics)
        cov = coverage(res.run, qrels)
        rows.append({**({"collection": coll} if coll else {}), "retriever": res.run.name,
                     "spec": spec, "split": split, **{m: float(vals[m]) for m in metrics},
                     "answered": f"{cov.answered}/{cov.judged}",
                     "retrieve_s": float(res.manifest.get("wall_time_s", 0.0)),
                     "cached": "yes" if res.cached else "no"})
    return RetrieverScores(title, tuple(rows), tuple(metrics))


# --------------------------------------------------------------------------- fusion sweeps
@dataclass
class SweepOutcome:
    """A sweep's result object, its tables (tune and eval split), and where it was written."""

    result: SweepResult
    table: object
    eval_table: object
    out: Path | None
    engines: dict = field(default_factory=dict, repr=False)

    def view(self) -> list:
        """What to show: ``(title, DataFrame)`` tables and lines of text, in order."""
        r, out = self.result, self.out
        return [(f"{r.dataset}: {r.protocol.describe()}", r.summary()),
                f"optimism gap: {r.optimism['gap']:.4f} (best on eval "
                f"{r.optimism['best_on_eval']:.4f}); validated on this collection only; "
                f"report: {out / 'report.md' if out else '-'}"]


def sweep_grid(n_runs: int, methods=DEFAULT_METHODS, k=DEFAULT_KS, weights=None,
               weight_step: float = 0.1, depth=(None,), per_run_k: bool = False,
               rank_base=(1,), norms=DEFAULT_NORMS, missing=DEFAULT_MISSING):
    """The default sweep grid (every fusion family), or the one the arguments describe."""
    return make_grid(n_runs, methods=tuple(methods), k=tuple(k), weights=weights,
                     depth=tuple(depth), per_run_k=per_run_k, rank_base=tuple(rank_base),
                     norms=tuple(norms), missing=tuple(missing), weight_step=weight_step)


def engines_for(dataset, specs: Sequence[str], splits: Sequence[str], metrics: Sequence[str],
                run_depth: int = 1000, log: Callable[[str], None] = _quiet) -> dict:
    """A :class:`~rrfbench.fusion.sweep.FusionEngine` per split over the runs of ``specs``."""
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

    The protocol comes from :func:`rrfbench.tuning.holdout.choose_protocol`; the grid defaults to
    :func:`sweep_grid`. With ``write``, best.json, per_query.csv, the sweep tables, plots and
    report.md go under ``out`` (default ``results/<dataset>``).
    """
    ds = as_dataset(dataset)
    metric = str(parse_metric(metric))
    specs = list(specs)
    if len(set(specs)) != len(specs):
        raise InputError(f"-r: a retriever is given twice in {specs}")
    protocol = protocol or dataset_protocol(ds, tune_split, eval_split, folds)
    log(f"protocol: {protocol.describe()} ({protocol.reason})")
    grid = grid if grid is not None else sweep_grid(len(specs))
    metrics = [metric] + [m for m in DEFAULT_METRICS if m != metric]
    engines = dict(engines or {})
    need = [s for s in (protocol.tune_split, protocol.eval_split) if s not in engines]
    engines.update(engines_for(ds, specs, need, metrics, run_depth, log))
    out = Path(out) if out else results_dir() / ds.name
    result, table, eval_table = tune_fusion(
        ds, protocol, engines[protocol.tune_split], engines[protocol.eval_split], grid, metric,
        out=out if write else None, progress=progress, specs=specs,
        map_chunks=chunk_map(client))
    if write:
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
        raise choice("--streams", streams, ("default", "full"))
    specs = preset.roles_available()
    if streams == "full":
        if not preset.full_streams:
            raise InputError(f"preset {preset.name!r} models no streams beyond its default ones")
        specs = dict(preset.full_streams)
    return {role: retrieve(dataset, spec, split, depth) for role, spec in specs.items()}


def _preset_inputs(preset, members, metric: str, **parts) -> Inputs:
    """Inputs of a studied system tuned on ``members`` ([(Dataset, Protocol)])."""
    module = importlib.import_module(type(preset).__module__)
    code = (module, preset_base, tuning, fusion, fusion_config)
    if module.__name__.startswith(engine_base.__package__ + "."):
        # an engine mode's model is also the engines' shared base: its hits, RRF position
        # scores and float32 rounding (it was in no key before 2026-12-07)
        code += (engine_base,)
    runs = [(ds.name, split, spec) for ds, proto in members
            for split in sorted({proto.tune_split, proto.eval_split})
            for spec in preset.roles_available().values()]
    return run_inputs(runs, code, preset=preset.name,
                      grid=preset.grid(), metric=metric,
                      protocols=[p.to_json() for _, p in members],
                      fingerprints=[ds.fingerprint for ds, _ in members], **parts)


def dataset_protocol(ds, tune_split: str | None = None, eval_split: str | None = None,
                     folds: int | None = None):
    """:func:`choose_protocol` for ``ds``, where the dataset's default splits asked for by name
    are the defaults: the same computation gives the same result, whose protocol (its reason
    included) is content, so ``--tune-split train --eval-split test`` on a collection whose
    defaults they are must reuse, not rewrite, the result made without them."""
    default = choose_protocol(ds.splits)
    if not folds and default.kind == "holdout" and tune_split in (None, default.tune_split) \
            and eval_split in (None, default.eval_split):
        return default
    return choose_protocol(ds.splits, tune_split, eval_split, folds)


def preset_result_path(dataset_name: str, preset_name: str) -> Path:
    """Where a studied system's tuning on a dataset is saved (an engine mode's: under
    ``engines/`` instead of ``presets/``)."""
    return results_dir() / dataset_name / kind_dir(preset_name) / preset_name / "best.json"


def kind_dir(name: str) -> str:
    """``engines`` for an engine mode's results, ``presets`` for a studied system's."""
    return "engines" if name in ENGINE_SPACES else "presets"


def tune_preset_on(dataset, preset, metric: str = "nDCG@10", tune_split: str | None = None,
                   eval_split: str | None = None, folds: int | None = None,
                   progress: bool = True, reuse: bool = True, write: bool = True,
                   protocol=None, log: Callable[[str], None] = _quiet) -> PresetResult:
    """Tune a studied system within its own knobs on ``dataset`` (protocol as for sweeps).

    Writes ``results/<dataset>/presets/<name>/best.json``; with ``reuse``, a saved result is
    returned without recomputing while the runs it read (their content), the grid and the code
    are unchanged (:func:`reuse_or_compute`).
    """
    ds = as_dataset(dataset)
    p = get_system(preset) if isinstance(preset, str) else preset
    metric = str(parse_metric(metric))
    protocol = protocol or dataset_protocol(ds, tune_split, eval_split, folds)
    runs = {s: preset_runs(p, ds, s) for s in dict.fromkeys((protocol.tune_split,
                                                               protocol.eval_split))}
    path = preset_result_path(ds.name, p.name)
    result, _ = reuse_or_compute(
        p.name, path, lambda: _preset_inputs(p, [(ds, protocol)], metric),
        lambda: tune_preset(ds, p, protocol, runs, metric, progress=progress),
        reuse=reuse, write=write, log=log)
    return result


def preset_table(dataset, presets: Sequence[str] | None = None, metric: str = "nDCG@10",
                 progress: bool = True, protocol=None, log: Callable[[str], None] = _quiet
                 ) -> StudiedSystems:
    """Tune every preset on ``dataset`` (reusing what is cached) and write the report section."""
    ds = as_dataset(dataset)
    systems = StudiedSystems(ds.name, tuple(
        tune_preset_on(ds, name, metric, progress=progress, protocol=protocol, log=log)
        for name in (presets or list(preset_registry.PRESETS))))
    write_report(results_dir() / ds.name, {"presets": presets_section(systems)})
    return systems


def chunk_map(client):
    """The chunk map for a Dask ``client`` (``None``: score chunks here)."""
    if client is None:
        return None
    return dask_chunk_map(client)
