"""End-to-end steps, shared by the CLI and the notebooks: retrieve, sweep a dataset, tune the
studied systems, the demo.

Each step takes plain arguments, returns result objects (and the tables behind them) and writes
its files under :func:`rrfbench.store.results_dir`; printing is left to the caller (``log`` is
an optional callable for one-line progress messages).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import json
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import pandas as pd

from . import (
    adaptive,
    decisions,
    engine,
    fusion,
    policies,
    qfeatures,
    selection,
    stability,
    stats,
    suite_data,
    transfer,
    tuning,
    verdicts,
)
from . import presets as preset_registry  # PRESETS read at call time: the registry can be swapped
from ._version import __version__
from .advice import Advice, gather
from .datasets import Dataset, available_datasets, load_dataset
from .distributed import chunk_map as dask_chunk_map
from .distributed import client_for
from .engine import FusionEngine, make_grid
from .errors import InputError, ValidationWarning, choice
from .evaluation import coverage, evaluate, evaluate_per_query
from .explanations import explain, explain_preset
from .exporters import render
from .fusion import METHODS, MISSING, NORMALISATIONS, check_choices, rrf, score_fusion
from .metrics import DEFAULT_METRICS, parse_metric, parse_metrics
from .options import check_specs, check_suite_options, one_of, per_run, with_options
from .presets import base as preset_base
from .presets import get_preset, read_prior
from .report import (
    adaptive_section,
    advice_section,
    presets_section,
    retrievers_section,
    transfer_section,
    write_adaptive_outputs,
    write_report,
    write_sweep_outputs,
    write_transfer_outputs,
)
from .results import (
    PresetResult,
    SweepResult,
    decision_line,
    load_result,
    save_result,
    specs_of,
)
from .retrievers import cached_run, make_retriever, retriever_name, run_path
from .retrievers.base import run_content_digest
from .runs import Run
from .selection import DEFAULT_RULE
from .store import results_dir, write_json, write_text
from .suites import get_suite
from .transfer import fusion_suite, preset_suite
from .tuning import choose_protocol, single_run_configs, tune_fusion, tune_preset

DEFAULT_SPECS = ("bm25", "fts5", "dense")
DEFAULT_KS = (1, 2, 5, 10, 20, 30, 40, 60, 80, 100, 150, 200, 300)
DEFAULT_METHODS = METHODS                                  # every fusion family
DEFAULT_NORMS = tuple(n for n in NORMALISATIONS if n != "none")
DEFAULT_MISSING = MISSING
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
    """A :class:`~rrfbench.engine.FusionEngine` per split over the runs of ``specs``."""
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


def _source_digest(*modules) -> str:
    h = hashlib.sha256(__version__.encode())
    for m in modules:
        h.update(Path(m.__file__).read_bytes())
    return h.hexdigest()[:16]


# --------------------------------------------------------------------------- reuse
@dataclass(frozen=True)
class Inputs:
    """What a saved result was computed from: the content digest of every run it read
    (``dataset/split/run`` -> digest; ``None`` while a run is not cached yet) and a key over
    those digests, the grid, the protocol and the code."""

    runs: dict
    key: str

    def describe(self, n: int = 4) -> str:
        names = _short_names(self.runs)
        shown = [f"{names[k]} {d[:6]}.." for k, d in list(self.runs.items())[:n]]
        more = f" and {len(self.runs) - n} more" if len(self.runs) > n else ""
        return ", ".join(shown) + more


def _short_names(runs: dict) -> dict:
    """``ds/split/run`` keys without the dataset (one dataset) or as they are (a suite)."""
    sets = {k.split("/")[0] for k in runs}
    return {k: k.split("/", 1)[1] if len(sets) == 1 else k for k in runs}


def run_inputs(runs: Sequence[tuple], code: Sequence = (), **parts) -> Inputs:
    """:class:`Inputs` of the cached runs ``(dataset name, split, spec)`` and ``parts`` (grid,
    protocol, metric...); ``code``: the modules whose source changes the result."""
    digests = {}
    for name, split, spec in runs:
        run = retriever_name(spec)
        digests[f"{name}/{split}/{run}"] = run_content_digest(run_path(name, split, run))
    blob = json.dumps({"runs": digests, "code": _source_digest(*code), **parts}, sort_keys=True,
                      default=str)
    return Inputs(digests, hashlib.sha256(blob.encode()).hexdigest()[:16])


def reuse_or_compute(what: str, path: Path, inputs: Callable[[], Inputs], compute: Callable,
                     save: Callable | None = None, reuse: bool = True, write: bool = True,
                     log: Callable[[str], None] = _quiet, prepare: Callable | None = None):
    """The one cache rule for results computed from runs (preset tunings, suites): a saved
    result at ``path`` is reused only while the content digests of the runs it read, the grid
    and the code are unchanged (:class:`Inputs`); otherwise it is recomputed with ``compute()``
    and, with ``write``, saved with ``save(result)`` (default: best.json at ``path``). The log
    line says which and why. Returns ``(result, reused)``.

    ``prepare()`` retrieves the runs ``inputs`` names. It is called when a saved result exists
    but some of its runs are not cached yet (a fresh clone with the committed results): their
    content decides, so they are retrieved (``compute`` would retrieve them anyway) and
    compared, instead of recomputing a result that their content may well reproduce."""
    if reuse and path.exists():
        now = inputs()
        if prepare is not None and None in now.runs.values():
            prepare()
            now = inputs()
        try:
            old = load_result(path)
        except InputError as exc:
            old, why = None, f"the saved file is unreadable: {exc}"
        if old is not None:
            prov = old.provenance or {}
            if prov.get("cache_key") == now.key and None not in now.runs.values():
                log(f"{what}: reusing {path} (runs {now.describe()} unchanged)")
                return old, True
            before = prov.get("runs_read") or {}
            names = _short_names(now.runs)
            changed = [f"{names[k]} {str(before.get(k))[:6]}.. -> {str(d)[:6]}.."
                       for k, d in now.runs.items() if before.get(k) != d]
            why = ("run content changed: " + ", ".join(changed[:4]) if before and changed
                   else "saved before run digests were recorded" if not before
                   else "grid, protocol or code changed")
        log(f"{what}: recomputing {path} ({why})")
    result = compute()
    inp = inputs()  # runs retrieved just now are cached now
    stamp = {"provenance": {**result.provenance, "cache_key": inp.key, "runs_read": inp.runs}}
    if hasattr(result, "cache_key"):
        stamp["cache_key"] = inp.key
    result = replace(result, **stamp)
    if write:
        (save or (lambda r: save_result(r, path)))(result)
    return result, False


def _preset_inputs(preset, members, metric: str, **parts) -> Inputs:
    """Inputs of a studied system tuned on ``members`` ([(Dataset, Protocol)])."""
    module = importlib.import_module(type(preset).__module__)
    runs = [(ds.name, split, spec) for ds, proto in members
            for split in sorted({proto.tune_split, proto.eval_split})
            for spec in preset.roles_available().values()]
    return run_inputs(runs, (module, preset_base, tuning, fusion), preset=preset.name,
                      grid=preset.grid(), metric=metric,
                      protocols=[p.to_json() for _, p in members],
                      fingerprints=[ds.fingerprint for ds, _ in members], **parts)


def preset_result_path(dataset_name: str, preset_name: str) -> Path:
    return results_dir() / dataset_name / "presets" / preset_name / "best.json"


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
    p = get_preset(preset) if isinstance(preset, str) else preset
    metric = str(parse_metric(metric))
    protocol = protocol or choose_protocol(ds.splits, tune_split, eval_split, folds)
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
                 ) -> list[PresetResult]:
    """Tune every preset on ``dataset`` (reusing what is cached) and write the report section."""
    ds = as_dataset(dataset)
    rows = [tune_preset_on(ds, name, metric, progress=progress, protocol=protocol, log=log)
            for name in (presets or list(preset_registry.PRESETS))]
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
    adaptive: AdaptOutcome | None = None
    advice: Advice | None = None
    shown: bool = False        # the dataset's part was already shown (before the suite ran)

    def dataset_view(self) -> list:
        """The dataset's part: single retrievers, the tuned fusion, the studied systems."""
        return [(f"{self.dataset}: single retrievers (depth 1000)", pd.DataFrame(self.retrievers)),
                *self.sweep.view(),
                (f"{self.dataset}: studied systems as shipped vs tuned (eval split)",
                 pd.DataFrame([r.row() for r in self.presets]))]

    def view(self) -> list:
        """The answer first (the suite's recommendations and their track record), then every
        table of the demo (the dataset's part unless it was shown already) and the closing
        line (see :meth:`SweepOutcome.view`)."""
        items = advice_view(self.advice) if self.advice is not None else []
        if not self.shown:
            items += self.dataset_view()
        if self.suite is not None:
            items += self.suite.view()
            items.append((f"suite {self.suite.result.suite}: does tuning transfer? "
                          "(leave-one-collection-out)",
                          pd.concat([so.result.macro() for so in [self.suite, *self.suite_presets]],
                                    ignore_index=True)))
        if self.adaptive is not None:
            items += self.adaptive.view()
        items.append(("stage times (s)", pd.DataFrame([{"stage": k, "seconds": v}
                                                       for k, v in self.stages.items()])))
        reports = ([transfer_dir(self.suite.result.suite) / "report.md"]
                   if self.suite is not None else []) + [self.out / "report.md"]
        items.append(f"demo wall time: {self.stages['total']:.1f} s this run "
                     f"({'all runs cached' if self.all_cached else 'some runs computed'}); first "
                     f"run logged in demo_timing.json {self.timing_log[0]['wall_s']:.1f} s; "
                     f"reports: {', '.join(map(str, reports))}")
        return items


def advice_view(a: Advice) -> list:
    """A suite's recommendations first, then how its rule was chosen."""
    items = [f"suite {a.suite} ({len(a.collections)} collections): the recommendation",
             *a.headline(), (f"suite {a.suite}: recommendations ({a.metric})", a.table())]
    if a.pooled:
        items.append((f"suite {a.suite}: decision rules graded on left-out collections "
                      f"({a.graded} decisions, nested leave-one-collection-out)",
                      a.rules_table().drop(columns=["rule text"])))
    return items


def retriever_rows(dataset, specs: Sequence[str], splits: Sequence[str], engines: dict,
                   results: dict) -> list[dict]:
    """One row per (retriever, split) with its metrics, computed by the sweep engine (the same
    numbers as ``evaluate``; checked in tests)."""
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
         progress: bool = True, suite: str | None = "en", allow_missing: bool = False,
         show: Callable[[list], None] | None = None,
         log: Callable[[str], None] = _quiet) -> DemoOutcome:
    """The main job: retrieve, sweep (tuned and reported honestly), the studied systems,
    then (with ``suite``) free fusion and every studied system tuned across the suite and
    validated leave-one-collection-out, and the query-adaptive policy; times each stage and appends the wall time to
    ``demo_timing.json``. ``show(view)``, when given, gets the dataset's part as soon as it
    is done, before the suite starts (whose first run encodes every collection)."""
    t0 = time.perf_counter()
    stages: dict[str, float] = {}

    def stage(name, since):
        stages[name] = round(time.perf_counter() - since, 2)
        return time.perf_counter()

    ds = as_dataset(dataset)
    specs = list(specs)
    metric = str(parse_metric(metric))
    if suite:  # a suite that cannot run fails now, not after the dataset's part
        get_suite(suite, allow_missing=allow_missing)
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
    suite_out, suite_presets, adapted, advice = None, [], None, None
    part = DemoOutcome(ds.name, rows, sw, presets, stages, False, out)
    if show is not None:
        show(part.dataset_view())
    if suite:
        members = suite_members(suite, allow_missing=allow_missing)
        _announce_encoding(suite, members, specs, log)
        retrieve_suite(suite, specs, allow_missing=allow_missing, log=log)
        t = stage(f"suite {suite}: retrieve (or load cached runs)", t)
        suite_out = sweep_suite(suite, specs, metric=metric, progress=progress,
                                allow_missing=allow_missing, log=log)
        suite_presets = [tune_preset_suite(suite, name, metric, progress=progress,
                                           allow_missing=allow_missing, log=log)
                         for name in preset_registry.PRESETS]
        t = stage(f"suite {suite}: transfer across collections", t)
        adapted = adapt_suite(suite, specs, metric=metric, progress=progress,
                              allow_missing=allow_missing, log=log)
        t = stage(f"suite {suite}: query-adaptive fusion", t)
        advice = advise(suite, allow_missing, log)
        stage(f"suite {suite}: advice", t)
        graded = [so.result for so in (suite_out, *suite_presets, adapted)]
        stages[f"suite {suite}: nested grading of the decision rules (inside the stages above, "
               "as recorded when each result was computed)"] = round(sum(
                   float(r.provenance.get("nested_grading_s", 0.0)) for r in graded), 2)
    wall = time.perf_counter() - t0
    all_cached = all(r.cached for r in results.values())
    log_path = out / "demo_timing.json"
    timing = json.loads(log_path.read_text()) if log_path.exists() else []
    timing.append({"wall_s": round(wall, 1), "all_runs_cached": all_cached, "stages": stages,
                   "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    write_json(log_path, timing)
    stages["total"] = round(wall, 2)
    return DemoOutcome(ds.name, rows, sw, presets, stages, all_cached, out, timing, suite_out,
                       suite_presets, adapted, advice, shown=show is not None)


def _announce_encoding(suite: str, members, specs: Sequence[str],
                       log: Callable[[str], None]) -> None:
    """One line before a suite's first run: which corpora still need their dense encoding on
    this machine (a one-time cost; each prints its progress with an ETA)."""
    dense = [s for s in specs if s.split(":")[0].split(";")[0] == "dense"]
    if not dense:
        return
    r = make_retriever(dense[0], show_progress=True)
    todo = [ds for ds, _ in members if hasattr(r, "embeddings_cached")
            and not r.embeddings_cached(ds)]
    if todo:
        n = sum(len(ds.corpus) for ds in todo)
        log(f"suite {suite}: {len(todo)} of {len(members)} corpora are not encoded on this "
            f"machine yet ({', '.join(ds.name for ds in todo)}; {n:,} documents): a one-time "
            "cost, tens of minutes on 2 cores, progress below")


# --------------------------------------------------------------------------- suites
@dataclass
class SuiteOutcome:
    """A suite result and where it was written."""

    result: object
    out: Path | None
    tables: dict = field(default_factory=dict, repr=False)

    def view(self) -> list:
        """The LOCO table, the macro summary, the verdict (see :meth:`SweepOutcome.view`)."""
        r, out = self.result, self.out
        return [*([decision_line(r)] if r.decision else []),
                (f"suite {r.suite}, {r.what()}: leave-one-collection-out ({r.metric}; default: "
                 f"{r.default['label']})", r.loco_table()),
                ("macro over collections", r.macro()),
                f"verdict: {r.verdict}. {r.verdict_reason}.",
                f"selected ({r.objective}, {r.rule}): {r.label}; recommended default: "
                f"{r.recommended['label']}; report: {out / 'report.md' if out else '-'}"]


# the modules whose source decides a suite result (part of its reuse key)
SUITE_CODE = (transfer, selection, verdicts, stability, suite_data, decisions, stats)


def suite_members(suite: str, min_members: int = 2, allow_missing: bool = False) -> list:
    """[(Dataset, Protocol)] of a named suite (protocols by the one rule); a collection not on
    the search path is an error unless ``allow_missing`` (:func:`rrfbench.suites.get_suite`)."""
    s = get_suite(suite, min_members=min_members, allow_missing=allow_missing)
    out = []
    for m in s.members:
        ds = load_dataset(m.name)
        out.append((ds, choose_protocol(ds.splits, m.tune_split, m.eval_split)))
    return out


def retrieve_suite(suite: str, specs: Sequence[str], depth: int = 1000, force: bool = False,
                   log: Callable[[str], None] = _quiet, allow_missing: bool = False) -> list:
    """Fill every collection's runs (tuning and evaluation splits) of a suite; returns the
    :class:`~rrfbench.retrievers.RunResult` of each."""
    out = []
    for ds, p in suite_members(suite, min_members=1, allow_missing=allow_missing):
        for split in dict.fromkeys((p.tune_split, p.eval_split)):
            for spec in specs:
                res = retrieve_result(ds, spec, split, depth, force)
                log(f"{ds.name}/{split} {res.run.name}: {'cached' if res.cached else 'retrieved'}")
                out.append((ds.name, split, res))
    return out


def transfer_dir(suite: str) -> Path:
    return results_dir() / "transfer" / suite


def chunk_map(client):
    """The chunk map for a Dask ``client`` (``None``: score chunks here)."""
    if client is None:
        return None
    return dask_chunk_map(client)


def sweep_suite(suite: str = "en", specs: Sequence[str] = DEFAULT_SPECS, *, grid=None,
                metric: str = "nDCG@10", objective: str = "macro", rule: str = DEFAULT_RULE,
                run_depth: int = 1000, out: str | Path | None = None, write: bool = True,
                progress: bool = True, client=None, allow_missing: bool = False,
                log: Callable[[str], None] = _quiet) -> SuiteOutcome:
    """Free fusion tuned across a suite and validated leave-one-collection-out.

    Writes ``results/transfer/<suite>/``: best.json (the TransferResult), report.md, the forest
    plot, the transfer-matrix heatmap and the k curves of every collection.
    """
    metric = str(parse_metric(metric))
    specs = list(specs)
    if len(set(specs)) != len(specs):
        raise InputError(f"-r: a retriever is given twice in {specs}")
    members = suite_members(suite, allow_missing=allow_missing)
    grid = grid if grid is not None else sweep_grid(len(specs))
    metrics = [metric] + [m for m in DEFAULT_METRICS if m != metric]
    out = Path(out) if out else transfer_dir(suite)

    def inputs():
        runs = [(ds.name, split, spec) for ds, p in members
                for split in sorted({p.tune_split, p.eval_split}) for spec in specs]
        return run_inputs(runs, (engine, fusion, tuning, *SUITE_CODE), specs=specs,
                          grid=[c.to_json() for c in grid], metric=metric, objective=objective,
                          rule=rule, depth=run_depth, protocols=[p.to_json() for _, p in members],
                          fingerprints=[ds.fingerprint for ds, _ in members])

    tables: dict = {}

    def compute():
        result, t = fusion_suite(
            suite, members, lambda ds, split: load_runs(ds, specs, split, run_depth, log), grid,
            metric, metrics, out=out if write else None, progress=progress,
            objective=objective, rule=rule, specs=specs, map_chunks=chunk_map(client), log=log)
        tables.update(t)
        return result

    def save(result):
        write_transfer_outputs(result, out)

    def prepare():
        for ds, p in members:
            for split in sorted({p.tune_split, p.eval_split}):
                load_runs(ds, specs, split, run_depth, log)

    result, _ = reuse_or_compute(f"suite {suite}", out / "best.json", inputs, compute, save,
                                 reuse=write, write=write, log=log, prepare=prepare)
    if write and out == transfer_dir(suite):
        advise(suite, allow_missing, log)
    return SuiteOutcome(result, out if write else None, tables)


def _preset_suite_runs(preset, members) -> None:
    """Retrieve (or find cached) every run ``preset`` reads on the suite's ``members``."""
    for ds, proto in members:
        for split in sorted({proto.tune_split, proto.eval_split}):
            preset_runs(preset, ds, split)


def tune_preset_suite(suite: str, preset, metric: str = "nDCG@10", objective: str = "macro",
                      rule: str = DEFAULT_RULE, progress: bool = True, reuse: bool = True,
                      write: bool = True, allow_missing: bool = False,
                      log: Callable[[str], None] = _quiet) -> SuiteOutcome:
    """A studied system tuned within its own knobs across a suite, validated
    leave-one-collection-out against its shipped values (``results/transfer/<suite>/presets/
    <name>/``). Reused while every collection's runs, the grid and the code are unchanged."""
    p = get_preset(preset) if isinstance(preset, str) else preset
    metric = str(parse_metric(metric))
    members = suite_members(suite, allow_missing=allow_missing)
    out = transfer_dir(suite) / "presets" / p.name

    def save(result):
        plots = write_transfer_outputs(result, out)
        # the suite's report gathers every preset's LOCO table after the free-fusion one
        write_report(transfer_dir(suite), {f"preset-{p.name}": transfer_section(
            result, {k: f"presets/{p.name}/{v}" for k, v in plots.items()})})

    result, _ = reuse_or_compute(
        f"{p.name} on suite {suite}", out / "best.json",
        lambda: _preset_inputs(p, members, metric, objective=objective, rule=rule,
                               suite_code=_source_digest(*SUITE_CODE)),
        lambda: preset_suite(suite, members, p, lambda ds, split: preset_runs(p, ds, split),
                             metric, progress=progress, objective=objective, rule=rule, log=log),
        save, reuse=reuse, write=write, log=log, prepare=lambda: _preset_suite_runs(p, members))
    if write:
        advise(suite, allow_missing, log)
    return SuiteOutcome(result, out if write else None)


def advise(suite: str, allow_missing: bool = False,
           log: Callable[[str], None] = _quiet) -> Advice | None:
    """The suite's :class:`~rrfbench.advice.Advice` from its saved results (``None`` before
    the free-fusion suite result exists): written as ``results/transfer/<suite>/advice.json``
    and as the first section of the suite's transfer and adaptive reports."""
    s = get_suite(suite, min_members=1, allow_missing=allow_missing)
    a = gather(suite, transfer_dir(suite), adaptive_dir(suite),
               notes={m.name: m.note for m in s.members}, left_out=s.left_out)
    if a is None:
        return None
    write_json(transfer_dir(suite) / "advice.json", a.to_json())
    section = {"advice": advice_section(a)}
    for folder in (transfer_dir(suite), adaptive_dir(suite)):
        if (folder / "best.json").exists():
            write_report(folder, section)
    log(f"suite {suite}: advice over {len(a.rows)} decisions -> "
        f"{transfer_dir(suite) / 'advice.json'}")
    return a


def adaptive_dir(suite: str) -> Path:
    return results_dir() / "adaptive" / suite


def adapt_suite(suite: str = "en", specs: Sequence[str] = DEFAULT_SPECS, *, grid=None,
                preset=None, n_candidates: int = policies.N_CANDIDATES,
                kinds: Sequence[str] = policies.KINDS, features: str = "portable",
                metric: str = "nDCG@10", rule: str = DEFAULT_RULE, run_depth: int = 1000,
                progress: bool = True, reuse: bool = True, write: bool = True,
                allow_missing: bool = False, log: Callable[[str], None] = _quiet) -> AdaptOutcome:
    """A query-adaptive policy trained across a suite and validated leave-one-collection-out
    against the static suite default (:mod:`rrfbench.adaptive`); writes
    ``results/adaptive/<suite>/`` (best.json with the portable policy, report.md, the headroom
    plot). Runs the static suite first over the same ``grid`` (reused when unchanged): its sweep
    tables are the candidates' per-query metrics and its recommendation is the fallback.

    With ``preset``: the policy chooses among the studied system's own knob settings, against
    its shipped values (``results/adaptive/<suite>/presets/<name>/``, also a section of the
    suite's report)."""
    metric = str(parse_metric(metric))
    specs = check_specs(list(specs))
    if not kinds:
        raise InputError("--policy: give at least one kind")
    for kd in kinds:
        if kd not in policies.KINDS:
            raise choice("--policy", kd, policies.KINDS)
    if features not in qfeatures.FEATURE_SETS:
        raise choice("--features", features, qfeatures.FEATURE_SETS)
    if not 2 <= n_candidates <= 8:
        raise InputError(f"--candidates: {n_candidates} must be between 2 and 8")
    p = (get_preset(preset) if isinstance(preset, str) else preset) if preset else None
    grid = grid if grid is not None else (None if p else sweep_grid(len(specs)))
    if p:
        static = tune_preset_suite(suite, p, metric, rule=rule, progress=progress,
                                   allow_missing=allow_missing, log=log)
    else:
        static = sweep_suite(suite, specs, grid=grid, metric=metric, rule=rule,
                             run_depth=run_depth, progress=progress,
                             allow_missing=allow_missing, log=log)
    members = suite_members(suite, allow_missing=allow_missing)
    metrics = [metric] + [m for m in DEFAULT_METRICS if m != metric]
    out = adaptive_dir(suite) / "presets" / p.name if p else adaptive_dir(suite)
    common = dict(rule=rule, candidates=n_candidates, kinds=list(kinds), features=features)

    def inputs():
        if p:
            return _preset_inputs(p, members, metric,
                                  adaptive_code=_source_digest(adaptive, policies, qfeatures,
                                                               *SUITE_CODE), **common)
        runs = [(ds.name, split, spec) for ds, pr in members
                for split in sorted({pr.tune_split, pr.eval_split}) for spec in specs]
        return run_inputs(runs, (adaptive, policies, qfeatures, engine, fusion, tuning, *SUITE_CODE),
                          specs=specs, grid=[c.to_json() for c in grid], depth=run_depth,
                          metric=metric, protocols=[pr.to_json() for _, pr in members],
                          fingerprints=[ds.fingerprint for ds, _ in members], **common)

    def compute():
        if p:
            return adaptive.preset_adaptive_suite(
                suite, members, p, lambda ds, split: preset_runs(p, ds, split), metric,
                k=n_candidates, kinds=kinds, feature_set=features, rule=rule,
                static_recommended=static.result.recommended, progress=progress, log=log)
        return adaptive.adaptive_suite(
            suite, members, lambda ds, split: load_runs(ds, specs, split, run_depth, log), grid,
            metric, metrics, specs=specs, out=transfer_dir(suite), k=n_candidates, kinds=kinds,
            feature_set=features, rule=rule, static_recommended=static.result.recommended,
            progress=progress, log=log)

    def save(result):
        made = write_adaptive_outputs(result, out)
        if p:  # the suite's adaptive report gathers every preset's section after its own
            write_report(adaptive_dir(suite), {f"preset-{p.name}": adaptive_section(
                result, {k: f"presets/{p.name}/{v}" for k, v in made.items()})})

    def prepare():
        if p:
            return _preset_suite_runs(p, members)
        for ds, pr in members:
            for split in sorted({pr.tune_split, pr.eval_split}):
                load_runs(ds, specs, split, run_depth, log)

    result, _ = reuse_or_compute(f"adaptive {suite}" + (f" ({p.name})" if p else ""),
                                 out / "best.json", inputs, compute, save,
                                 reuse=reuse and write, write=write, log=log, prepare=prepare)
    if write:
        advise(suite, allow_missing, log)
    return AdaptOutcome(result, out if write else None)


@dataclass
class AdaptOutcome:
    """A query-adaptive policy validated across a suite, and where it was written."""

    result: object
    out: Path | None

    def view(self) -> list:
        r, s = self.result, self.result.summary
        return [*([decision_line(r)] if r.decision else []),
                (f"suite {r.suite}, {r.what()}: leave-one-collection-out ({r.metric}; vs the "
                 "static default selected on the same training collections)", r.loco_table()),
                ("macro over collections", r.macro()),
                ("each policy kind on its own (LOCO gain vs static)", r.kinds_frame()),
                f"verdict: {r.verdict}. {r.verdict_reason}.",
                *([r.stability_line()] if r.stability else []),
                f"headroom: oracle over the candidates {s['headroom_candidates']:+.4f}, over the "
                f"grid {s['headroom_grid']:+.4f}; captured {s['captured']:.1%}. Policy (all "
                f"collections): {r.label}. Recommended: {r.recommended['label']}; report: "
                f"{self.out / 'report.md' if self.out else '-'}"]


# --------------------------------------------------------------------------- the CLI's steps
# Each command of ``rrfbench`` parses its options (rrfbench.options) and calls one function here
# (notebooks call them too); each returns an outcome with ``to_json()`` and the table(s) to show.


def datasets_table():
    """The datasets on the search path with their counts (a DataFrame; empty when none)."""
    rows = []
    for name, path in available_datasets():
        ds = load_dataset(str(path))
        c = ds.counts()
        rows.append({"dataset": name, "docs": c["docs"], "queries": c["queries"],
                     "splits": ", ".join(f"{s} ({c[f'{s}_queries']} q, {c[f'{s}_qrels']} j)"
                                         for s in ds.splits), "path": str(path)})
    return pd.DataFrame(rows)


def retrieve_table(dataset=None, specs: Sequence[str] = ("bm25",), splits=None,
                   depth: int = 1000, force: bool = False, metrics=TABLE_METRICS,
                   suite: str | None = None, granularity=None, seed=None, hops=None,
                   log: Callable[[str], None] = _quiet, allow_missing: bool = False):
    """Retrieve (or reuse) the runs of ``specs`` (options as :func:`with_options`) on a
    dataset's splits, or on every collection of ``suite``; returns ``(title, DataFrame)`` with
    one row per run."""
    one_of(dataset, suite)
    metrics = [str(m) for m in parse_metrics(list(metrics or TABLE_METRICS))]
    specs = with_options(specs, granularity, seed, hops)
    if suite:
        if splits:
            raise InputError("--split: a suite's splits come from datasets/suites.toml")
        rows = [{"collection": name, "split": sp, "retriever": res.run.name,
                 **evaluate(res.run, load_dataset(name).qrels(sp), metrics),
                 "cached": "yes" if res.cached else "no"}
                for name, sp, res in retrieve_suite(suite, specs, depth, force, log=log,
                                                    allow_missing=allow_missing)]
        return f"suite {suite}: runs at depth {depth}", pd.DataFrame(rows)
    if allow_missing:
        raise InputError("--allow-missing: use it with --suite")
    ds = as_dataset(dataset)
    splits = list(splits or ["test"])
    for s in splits:
        ds.qrels(s)
    rows = []
    for s in splits:
        for spec in specs:
            res = retrieve_result(ds, spec, s, depth, force)
            cov = coverage(res.run, ds.qrels(s))
            rows.append({"retriever": res.run.name, "spec": spec, "split": s,
                         **evaluate(res.run, ds.qrels(s), metrics),
                         "answered": f"{cov.answered}/{cov.judged}",
                         "time_s": float(res.manifest.get("wall_time_s", 0.0)),
                         "cached": "yes" if res.cached else "no"})
    return f"{ds.name}: runs at depth {depth}", pd.DataFrame(rows)


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

    def table(self):
        return pd.DataFrame([{"metric": m, "value": v} for m, v in self.metrics.items()])

    def view(self) -> list:
        return [(self.title, self.table()), *self.notes]

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
    if output:
        scored_run.to_trec(output)
    return Scored(ds.name, split, title, scores, cov, len(qrels.qids), scored_run, extra)


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
    p = get_preset(preset) if isinstance(preset, str) else preset
    r = load_result(path)
    owner = r.preset
    if owner != p.name:
        raise InputError(f"--config {path}: not a result of preset {p.name!r} (it is "
                         f"{'preset ' + repr(owner) if owner else 'a free fusion result'})")
    known = {k.name for k in p.knobs} | set(p.extra_defaults)
    return {k: v for k, v in r.config_for(which).items() if k in known}


def evaluate_preset(dataset, preset, split: str = "test", settings: Sequence[str] = (),
                    config=None, which: str = "config", limit: int = 0, prior=None,
                    streams: str = "default") -> Scored:
    """A studied system as shipped (or with ``settings`` ``knob=value``, or the knob values of
    a saved result ``config``) on one split."""
    p = get_preset(preset) if isinstance(preset, str) else preset
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
                  + (" (per-query policy)" if policy is not None else ""))

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
        p = get_preset(r.preset)
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
                          [c["label"] for c in policy.candidates], "utility": u,
                          "chosen": ["yes" if i == j else "" for i in range(len(u))]})
    if policy.model.get("target") == "weights":
        w = _predicted_weights(policy, X.to_numpy())[0]
        label += (f"; predicted weights {', '.join(f'{v:.3f}' for v in w)} (snapped to the "
                  f"nearest of {len(u)} weightings; utility = how much nearer, in L1, than to "
                  "candidate 0)")
        keep = sorted({0, j, *np.argsort(-u, kind="stable")[:5].tolist()})
        utils = utils.iloc[keep].reset_index(drop=True)   # the default, the choice, the nearest
    return chosen, label, feats, utils


def _predicted_weights(policy, X: np.ndarray) -> np.ndarray:
    """A weight-kind policy's raw predicted weight vectors (before snapping): its model's
    outputs, which :meth:`~rrfbench.policies.Policy.utilities` returns after column 0 when read
    as gains."""
    model = {k: v for k, v in policy.model.items() if k != "points"} | {"target": "gains"}
    outs = len(model.get("intercept") or model.get("ensembles") or [])
    as_gains = policies.Policy("weights", [], list(policy.features), [{}] * (outs + 1), model)
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
    get_preset(preset)
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


def export_result(best_json, to: str, which: str = "recommended", output=None) -> str:
    """A saved result rendered in a target's configuration shape (:func:`rrfbench.exporters.
    render`); with ``output`` also written there."""
    if which not in WHICH_EXPORT:
        raise choice("--which", which, WHICH_EXPORT)
    text = render(load_result(best_json), to, which=which)
    if output:
        write_text(output, text)
    return text


WHICH_EXPORT = ("recommended", "config")  # export's default comes first: what the verdict supports
