"""The engine table: what each search engine's fusion costs, and which of its modes to use.

For every engine mode (:mod:`rrfbench.systems.engines`), tuned within the engine's own knobs by the
protocol everything else uses (a holdout or cross-validation on a dataset, leave-one-collection-
out with the verdict and the decision rule on a suite), against the engine's defaults; and the
best free fusion of the same two streams (rrfbench's sweep over every fusion family, the same
protocol), so the gap says what the engine's fusion leaves on the table. Re-uses the cached runs
and every saved result (a warm table is only reads).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path

from ..core.errors import InputError
from ..core.metrics import parse_metric
from ..core.store import results_dir, write_json
from ..outputs import plots
from ..outputs.report import md_table, write_report
from ..results.dataset import EngineTable
from ..retrievers import retriever_name
from ..systems.engines import SPACES, spaces_of
from ..systems.registry import team_streams, with_streams
from .dataset import _quiet, as_dataset, preset_runs, sweep_dataset, tune_preset_on
from .suite import sweep_suite, transfer_dir, tune_preset_suite


def _spaces(engines: Sequence[str] | None) -> list:
    """The engine modes to tune, each with the team's streams in its roles (``--stream``)."""
    chosen = list(SPACES.values()) if not engines else [s for e in engines for s in spaces_of(e)]
    return [with_streams(s, team_streams()) for s in chosen]


def engine_table(dataset=None, suite: str | None = None, engines: Sequence[str] | None = None,
                 metric: str = "nDCG@10", progress: bool = True, allow_missing: bool = False,
                 log: Callable[[str], None] = _quiet, runs_dir: Path | None = None
                 ) -> EngineTable:
    """Tune every engine mode (or those of ``engines``) on ``dataset`` or across ``suite``,
    with the free fusion of the same streams, and write ``engines.json``, ``engines.png`` and
    the report's engine section (``results/<dataset>/`` or ``results/transfer/<suite>/``).

    ``runs_dir`` (a dataset only): also write each mode's fused run on the evaluation split,
    at its defaults and tuned (:func:`write_mode_runs`)."""
    if (dataset is None) == (suite is None):
        raise InputError("give a DATASET or --suite NAME")
    if allow_missing and not suite:
        raise InputError("--allow-missing: use it with --suite")
    if runs_dir is not None and suite:
        raise InputError("-o/--output: the runs of one dataset's engine modes; use it with "
                         "DATASET, not --suite")
    metric = str(parse_metric(metric))
    spaces = _spaces(engines)
    ds = as_dataset(dataset) if dataset is not None else None
    out = transfer_dir(suite) if suite else results_dir() / ds.name
    free: dict[str, dict] = {}
    rows = []
    for space in spaces:
        specs = [space.streams["vector"], space.streams["keyword"]]
        key = "+".join(retriever_name(s) for s in specs)   # run names: no file paths
        if key not in free:
            free[key] = _free(ds, suite, specs, out, metric, progress, allow_missing, log)
        if suite:
            r = tune_preset_suite(suite, space, metric, progress=progress,
                                  allow_missing=allow_missing, log=log).result
            s = r.summary
            default, tuned, p = s["macro"]["default"], s["macro"]["loco"], s["p_value_queries"]
            rec = r.recommended["label"]
            tr = r.decision.get("track_record")
            rec += f" (rule {tr['rule']}: right on {tr['right']} of {tr['of']})" if tr else ""
        else:
            r = tune_preset_on(ds, space, metric, progress=progress, log=log)
            default, tuned, p = r.shipped["metrics"][metric], r.tuned.value, r.vs_shipped.p_value
            rec = r.knobs_label()
            if runs_dir is not None:
                write_mode_runs(ds, space, r, Path(runs_dir), log)
        rows.append({"engine": space.engine, "mode": space.mode, "space": space.name,
                     "default": float(default), "tuned": float(tuned),
                     "gain": float(tuned - default), "p_value": float(p),
                     "free": free[key]["value"], "gap": float(tuned - free[key]["value"]),
                     "recommended": rec, "version": space.version, "live": space.live,
                     "streams": key})
    table = EngineTable(f"suite {suite}" if suite else ds.name, metric, tuple(rows), free)
    write_engine_outputs(_merged(table, out / "engines.json"), out)
    return table


def _merged(table: EngineTable, saved: Path) -> EngineTable:
    """``table`` written into the saved one: a run over some engines (``--engine``) replaces
    their modes' rows and keeps every other engine's, so it never shrinks the table."""
    if not saved.exists():
        return table
    old = EngineTable.from_json(json.loads(saved.read_text()))
    if old.metric != table.metric or old.scope != table.scope:
        return table
    new = {r["space"]: r for r in table.rows}
    rows = [new.pop(r["space"], r) for r in old.rows] + list(new.values())
    return EngineTable(table.scope, table.metric, tuple(rows), {**old.free, **table.free})


def write_mode_runs(ds, space, result, out: Path, log: Callable[[str], None] = _quiet
                    ) -> list[Path]:
    """``<out>/<mode>.default.trec`` and ``<mode>.tuned.trec``: the engine mode's fused run on
    the result's evaluation split at the engine's defaults and at the tuned knob values, each
    with a manifest (engine, mode, version, knob values, streams). Under a holdout protocol
    the tuned run scores what the table reports; under cross-validation the table's figure
    comes from per-fold choices and this run applies the one configuration chosen on all."""
    split = result.protocol.eval_split
    runs = preset_runs(space, ds, split)
    queries = dict(zip(ds.queries.qid, ds.queries.text, strict=True))
    written = []
    for which, params in (("default", space.defaults()),
                          ("tuned", space.defaults() | result.config_for("config"))):
        path = out / f"{space.name}.{which}.trec"
        run = space.run(runs, params, queries=queries, name=f"{space.name} {which}")
        run.to_trec(path, manifest={"dataset": ds.name, "split": split, "engine": space.engine,
                                    "mode": space.mode, "verified_version": space.version,
                                    "params": params,
                                    "streams": {k: v.name for k, v in runs.items()}})
        written.append(path)
    cv = result.protocol.kind != "holdout"
    log(f"{space.name}: wrote {written[0]} and {written[1]} ({split}"
        + ("; tuned: the knob values chosen on all its queries, so its score there is in-sample:"
           " the table's held-out figure is the cross-validated one)" if cv else ")"))
    return written


def _free(ds, suite, specs, out: Path, metric, progress, allow_missing, log) -> dict:
    """The best free fusion of ``specs``: its held-out value, label and where it is saved."""
    where = out / "engines" / ("free-" + "-".join(retriever_name(s) for s in specs))
    source = f"results/{where.relative_to(results_dir()).as_posix()}/best.json"
    if suite:
        r = sweep_suite(suite, specs, metric=metric, out=where, progress=progress,
                        allow_missing=allow_missing, log=log).result
        return {"label": r.label, "value": float(r.summary["macro"]["loco"]), "source": source}
    r = sweep_dataset(ds, specs, metric=metric, out=where, progress=progress, log=log).result
    return {"label": r.label, "value": float(r.tuned.value), "source": source}


def engines_section(t: EngineTable, plot: str | None) -> str:
    """The engine table as a report section."""
    lines = [f"## What each engine's fusion costs ({t.scope})", "",
             f"Each engine mode tuned within its own knobs ({t.metric} on held-out queries"
             + (": leave-one-collection-out" if t.scope.startswith("suite") else "")
             + ") against its defaults, and against rrfbench's best free fusion of the same two "
             "streams (gap: tuned minus free). Engines marked *no* were not run against a live "
             "engine: their formulas come from their documentation or public source.", "",
             md_table(t.table().drop(columns=["verified against"])), "",
             "The best mode of each engine:", "", md_table(t.best_modes()), "",
             "Free fusion of the same streams: " + "; ".join(
                 f"{k}: `{v['label']}` {v['value']:.4f}" for k, v in t.free.items()) + ".", ""]
    if plot:
        lines += [f"![engine table]({plot})", ""]
    return "\n".join(lines)


def write_engine_outputs(t: EngineTable, out: Path) -> None:
    write_json(out / "engines.json", t.to_json())
    plots.engine_table(t, path=out / "engines.png")
    plots.close_all()
    write_report(out, {"engines": engines_section(t, "engines.png")})
