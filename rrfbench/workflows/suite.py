"""The library's steps across a suite of collections: retrieve every collection, free fusion
and each studied system tuned across them and validated leave-one-collection-out, the
query-adaptive policies, and the suite's advice (every decision's recommendation with its
track record). Results go under ``results/transfer/<suite>/`` and ``results/adaptive/<suite>/``
and are reused by :func:`rrfbench.workflows.cache.reuse_or_compute`'s rule.

Called from: ``cli``, ``workflows.commands``, ``workflows.demo``, ``workflows.engine_table``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..adaptive import features as qfeatures
from ..adaptive import policies
from ..adaptive import validation as adaptive
from ..core import stats
from ..core.errors import InputError, choice
from ..core.metrics import DEFAULT_METRICS, parse_metric
from ..core.store import results_dir, write_json
from ..data.datasets import load_dataset
from ..data.suites import get_suite
from ..fusion import config as fusion_config
from ..fusion import functions as fusion
from ..fusion import sweep as engine
from ..outputs.report import (
    adaptive_section,
    advice_section,
    transfer_section,
    write_adaptive_outputs,
    write_report,
    write_transfer_outputs,
)
from ..results.suite import decision_line
from ..systems.registry import get_system
from ..tuning import decisions, selection, stability, suite_data, transfer, verdicts
from ..tuning import holdout as tuning
from ..tuning.advice import Advice, gather
from ..tuning.holdout import choose_protocol
from ..tuning.selection import DEFAULT_RULE
from ..tuning.transfer import fusion_suite, preset_suite
from .cache import Inputs, _source_digest, reuse_or_compute, run_inputs
from .dataset import (
    DEFAULT_SPECS,
    _preset_inputs,
    _quiet,
    chunk_map,
    kind_dir,
    load_runs,
    preset_runs,
    retrieve_result,
    sweep_grid,
)
from .options import check_specs


def advice_view(a: Advice) -> list:
    """A suite's recommendations first, then how its rule was chosen."""
    items = [f"suite {a.suite} ({len(a.collections)} collections): the recommendation",
             *a.headline(), (f"suite {a.suite}: recommendations ({a.metric})", a.table())]
    if a.pooled:
        items.append((f"suite {a.suite}: decision rules graded on left-out collections "
                      f"({a.graded} decisions, nested leave-one-collection-out)",
                      a.rules_table().drop(columns=["rule text"])))
    return items


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
SUITE_CODE = (transfer, selection, verdicts, stability, suite_data, decisions, stats, fusion_config)


def suite_members(suite: str, min_members: int = 2, allow_missing: bool = False) -> list:
    """[(Dataset, Protocol)] of a named suite (protocols by the one rule); a collection not on
    the search path is an error unless ``allow_missing`` (:func:`rrfbench.data.suites.get_suite`)."""
    s = get_suite(suite, min_members=min_members, allow_missing=allow_missing)
    out = []
    for m in s.members:
        ds = load_dataset(m.name)
        out.append((ds, choose_protocol(ds.splits, m.tune_split, m.eval_split)))
    return out


def retrieve_suite(suite: str, specs: Sequence[str], depth: int = 1000, force: bool = False,
                   log: Callable[[str], None] = _quiet, allow_missing: bool = False) -> list:
    """Fill every collection's runs (tuning and evaluation splits) of a suite; returns
    ``(dataset, split, spec, RunResult)`` of each."""
    out = []
    for ds, p in suite_members(suite, min_members=1, allow_missing=allow_missing):
        for split in dict.fromkeys((p.tune_split, p.eval_split)):
            for spec in specs:
                res = retrieve_result(ds, spec, split, depth, force)
                log(f"{ds.name}/{split} {res.run.name}: {'cached' if res.cached else 'retrieved'}")
                out.append((ds, split, spec, res))
    return out


def transfer_dir(suite: str) -> Path:
    return results_dir() / "transfer" / suite


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


def preset_suite_inputs(preset, members, metric: str, objective: str, rule: str) -> Inputs:
    """The cache inputs of a studied system or engine mode tuned across a suite's ``members``:
    a single collection's (``_preset_inputs``) and the suite's own modules."""
    return _preset_inputs(preset, members, metric, objective=objective, rule=rule,
                          suite_code=_source_digest(*SUITE_CODE))


def tune_preset_suite(suite: str, preset, metric: str = "nDCG@10", objective: str = "macro",
                      rule: str = DEFAULT_RULE, progress: bool = True, reuse: bool = True,
                      write: bool = True, allow_missing: bool = False,
                      log: Callable[[str], None] = _quiet) -> SuiteOutcome:
    """A studied system tuned within its own knobs across a suite, validated
    leave-one-collection-out against its shipped values (``results/transfer/<suite>/presets/
    <name>/``). Reused while every collection's runs, the grid and the code are unchanged."""
    p = get_system(preset) if isinstance(preset, str) else preset
    metric = str(parse_metric(metric))
    members = suite_members(suite, allow_missing=allow_missing)
    folder = kind_dir(p.name)          # an engine mode's results live under engines/
    out = transfer_dir(suite) / folder / p.name

    def save(result):
        plots = write_transfer_outputs(result, out)
        if folder == "presets":  # the suite's report gathers every studied system's LOCO table
            write_report(transfer_dir(suite), {f"preset-{p.name}": transfer_section(
                result, {k: f"presets/{p.name}/{v}" for k, v in plots.items()})})

    result, _ = reuse_or_compute(
        f"{p.name} on suite {suite}", out / "best.json",
        lambda: preset_suite_inputs(p, members, metric, objective, rule),
        lambda: preset_suite(suite, members, p, lambda ds, split: preset_runs(p, ds, split),
                             metric, progress=progress, objective=objective, rule=rule, log=log),
        save, reuse=reuse, write=write, log=log, prepare=lambda: _preset_suite_runs(p, members))
    if write and folder == "presets":
        advise(suite, allow_missing, log)
    return SuiteOutcome(result, out if write else None)


def advise(suite: str, allow_missing: bool = False,
           log: Callable[[str], None] = _quiet) -> Advice | None:
    """The suite's :class:`~rrfbench.tuning.advice.Advice` from its saved results (``None`` before
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
    against the static suite default (:mod:`rrfbench.adaptive.validation`); writes
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
    p = (get_system(preset) if isinstance(preset, str) else preset) if preset else None
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
