"""The ``rrfbench`` command line (typer + rich): it parses, calls a library function, prints.

Nothing in the package imports this module. Error rule: a problem with the user's input or
arguments prints one line ``error: ...`` on stderr and exits with code 2 (an
:class:`~rrfbench.errors.InputError`, or typer's own usage message for an unknown option, a
missing argument or a wrong type); an unexpected failure prints one line and exits 1;
``--debug`` shows the full traceback instead. Warnings (low coverage, a configuration validated
on one collection only) print one line ``warning: ...``.
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from .errors import InputError, RrfbenchError, RrfbenchWarning

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Measure and tune reciprocal rank fusion over real runs and qrels.")


def _console() -> Console:
    # off a terminal (CI logs, pipes) tables keep their full cell text: no "semant…" cut-offs
    c = Console()
    return c if c.is_terminal else Console(width=1000, soft_wrap=True)


console = _console()


@app.callback()
def _root(debug: Annotated[bool, typer.Option("--debug", help="Show full tracebacks.")] = False):
    """Measure and tune reciprocal rank fusion over real runs and qrels."""


def _fmt(v) -> str:
    return f"{v:.4f}" if isinstance(v, float) else str(v)


def _table(title: str, rows: list[dict]) -> Table:
    t = Table(title=title)
    if rows:
        for c in rows[0]:
            t.add_column(str(c), justify="right" if isinstance(rows[0][c], (int, float)) else "left",
                         overflow="fold")
        for r in rows:
            t.add_row(*[_fmt(r.get(c, "")) for c in rows[0]])
    return t


def _log(msg: str) -> None:
    console.print(f"[dim]{msg}[/dim]", highlight=False)


def _warn(msg: str) -> None:
    print(f"warning: {msg}", file=sys.stderr, flush=True)


def _floats(option: str, text: str) -> list[float]:
    try:
        vals = [float(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise InputError(f"{option}: expected comma-separated numbers, got {text!r}") from None
    if not vals:
        raise InputError(f"{option}: expected at least one number, got {text!r}")
    return vals


def _depths(option: str, text: str) -> list[int | None]:
    out = []
    for x in text.replace(" ", "").split(","):
        if x.lower() in ("", "all", "none", "0"):
            out.append(None)
            continue
        try:
            v = int(x)
        except ValueError:
            raise InputError(f"{option}: {x!r} is not a whole number or 'all' (in {text!r})") from None
        if v < 1:
            raise InputError(f"{option}: {v} must be >= 1 (or 'all')")
        out.append(v)
    return out


def _choice(option: str, value: str, allowed) -> str:
    if value not in allowed:
        raise InputError(f"{option}: {value!r} is not one of {', '.join(allowed)}")
    return value


def _per_run(option: str, values: list, n: int):
    if len(values) == 1:
        return values[0]
    if len(values) != n:
        raise InputError(f"{option}: expected one value or {n} (one per run), got {len(values)}")
    return values


def _with_options(specs, granularity, seed, hops) -> list[str]:
    """Apply --granularity to fts5 specs and --seed/--hops to graph specs."""
    from .retrievers import parse_spec

    out = []
    used = set()
    for spec in specs:
        kind = parse_spec(spec)[0]
        if kind == "fts5" and granularity:
            _choice("--granularity", granularity, ("doc", "span"))
            spec += f";granularity={granularity}"
            used.add("--granularity")
        if kind == "graph":
            if seed:
                parse_spec(seed)
                spec += f";seed={seed}"
                used.add("--seed")
            if hops is not None:
                if hops < 1:
                    raise InputError(f"--hops: {hops} must be >= 1")
                spec += f";hops={hops}"
                used.add("--hops")
        out.append(spec)
    for opt, val in (("--granularity", granularity), ("--seed", seed), ("--hops", hops)):
        if val is not None and opt not in used:
            raise InputError(f"{opt}: no retriever takes it (give -r fts5 or -r graph)")
    return out


def _one_of(dataset, suite) -> None:
    if bool(dataset) == bool(suite):
        raise InputError("give a DATASET or --suite NAME (one of the two)")


def _coverage_line(cov) -> str:
    return f"coverage: {cov.answered} of {cov.judged} judged queries answered ({cov.fraction:.0%})"


# --------------------------------------------------------------------------- datasets / runs
@app.command()
def datasets():
    """List the datasets that resolve on the search path, with counts."""
    from .datasets import available_datasets, load_dataset, search_path

    rows = []
    for name, path in available_datasets():
        ds = load_dataset(str(path))
        c = ds.counts()
        rows.append({"dataset": name, "docs": c["docs"], "queries": c["queries"],
                     "splits": ", ".join(f"{s} ({c[f'{s}_queries']} q, {c[f'{s}_qrels']} j)"
                                         for s in ds.splits),
                     "path": str(path)})
    console.print(_table("datasets", rows) if rows else
                  f"no datasets on the search path: {', '.join(map(str, search_path()))}")


@app.command()
def retrieve(
    dataset: Annotated[str, typer.Argument(help="a dataset name or folder (or use --suite)")] = None,
    suite: Annotated[str, typer.Option("--suite", help="every collection of a suite (datasets/suites.toml)")] = None,
    retriever: Annotated[list[str], typer.Option("-r", "--retriever",
                                                 help="kind[:variant][;key=value]: bm25[:jieba], fts5[:phrase|:and_tokens|:titan|:jieba|:trigram], dense[:ann|:onnx|:torch|:onnx-int8-vnni], rank_bm25[:jieba], entity, graph; repeatable")] = None,
    split: Annotated[list[str], typer.Option("--split", help="repeatable")] = None,
    depth: Annotated[int, typer.Option(help="results per query")] = 1000,
    force: Annotated[bool, typer.Option("--force", help="Recompute even when cached.")] = False,
    metric: Annotated[list[str], typer.Option("-m", "--metric")] = None,
    granularity: Annotated[str, typer.Option(help="fts5 retrievers: doc or span (sentences)")] = None,
    seed: Annotated[str, typer.Option(help="graph retrievers: the retriever whose top results seed the walk")] = None,
    hops: Annotated[int, typer.Option(help="graph retrievers: hops from the seeds")] = None,
    scheduler: Annotated[str, typer.Option(help="encode dense corpora on a Dask scheduler, e.g. tcp://host:8786")] = None,
    workers: Annotated[int, typer.Option(help="encode dense corpora on a local Dask cluster of N worker processes")] = None,
):
    """Retrieve (or reuse cached) runs and print their metrics.

    Spec options can also be written inline: ``-r 'fts5;granularity=span'``,
    ``-r 'graph;seed=bm25;hops=1'``. With ``--workers``/``--scheduler`` dense corpora are
    encoded in shards on a Dask cluster (same numbers as in-process).
    """
    from .metrics import parse_metrics
    from .retrievers import parse_spec

    _one_of(dataset, suite)
    metrics = [str(m) for m in parse_metrics(metric or ["nDCG@10", "R@100", "RR@10"])]
    specs = _with_options(retriever or ["bm25"], granularity, seed, hops)
    for s in specs:  # every spec checked before any work starts
        parse_spec(s)
    if suite and split:
        raise InputError("--split: a suite's splits come from datasets/suites.toml")
    if scheduler or workers is not None:
        from .distributed import client_for

        with client_for(scheduler, workers):
            return _retrieve_run(dataset, suite, specs, split, depth, force, metrics)
    _retrieve_run(dataset, suite, specs, split, depth, force, metrics)


def _retrieve_run(dataset, suite, specs, split, depth, force, metrics):
    from .evaluation import coverage, evaluate
    from .workflows import as_dataset, retrieve_result, retrieve_suite

    if suite:
        rows = []
        for name, sp, res in retrieve_suite(suite, specs, depth, force, log=_log):
            from .datasets import load_dataset

            qrels = load_dataset(name).qrels(sp)
            rows.append({"collection": name, "split": sp, "retriever": res.run.name,
                         **evaluate(res.run, qrels, metrics),
                         "cached": "yes" if res.cached else "no"})
        console.print(_table(f"suite {suite}: runs at depth {depth}", rows))
        return
    ds = as_dataset(dataset)
    splits = split or ["test"]
    for s in splits:
        ds.qrels(s)
    rows = []
    for s in splits:
        for spec in specs:
            res = retrieve_result(ds, spec, s, depth, force)
            row = {"retriever": res.run.name, "spec": spec, "split": s}
            row.update(evaluate(res.run, ds.qrels(s), metrics))
            cov = coverage(res.run, ds.qrels(s))
            row["answered"] = f"{cov.answered}/{cov.judged}"
            row["time_s"] = float(res.manifest.get("wall_time_s", 0.0))
            row["cached"] = "yes" if res.cached else "no"
            rows.append(row)
    console.print(_table(f"{ds.name}: runs at depth {depth}", rows))


@app.command("evaluate")
def evaluate_cmd(
    run_file: Path,
    dataset: Annotated[str, typer.Option("--dataset", "-d")],
    split: str = "test",
    metric: Annotated[list[str], typer.Option("-m", "--metric")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
):
    """Score a TREC run file against a dataset's qrels."""
    from .evaluation import coverage, evaluate
    from .metrics import DEFAULT_METRICS, parse_metrics
    from .runs import Run
    from .workflows import as_dataset

    metrics = [str(m) for m in parse_metrics(metric or list(DEFAULT_METRICS))]
    ds = as_dataset(dataset)
    qrels = ds.qrels(split)
    run = Run.from_trec(run_file)
    scores = evaluate(run, qrels, metrics)
    cov = coverage(run, qrels)
    if as_json:
        print(json.dumps({"dataset": ds.name, "split": split, "run": str(run_file),
                          "n_queries": len(qrels.qids), "coverage": cov.to_json(),
                          "metrics": scores}))
    else:
        console.print(_table(f"{run_file} on {ds.name}/{split} ({len(qrels.qids)} queries)",
                             [{"metric": k, "value": v} for k, v in scores.items()]))
        console.print(_coverage_line(cov), highlight=False)


# --------------------------------------------------------------------------- fusion
@app.command()
def fuse(
    dataset: str,
    retriever: Annotated[list[str], typer.Option("-r", "--retriever", help="repeatable; default bm25, dense")] = None,
    k: Annotated[str, typer.Option(help="one k, or one per run: 60 or 60,20")] = "60",
    weights: Annotated[str, typer.Option(help="one per run, e.g. 0.7,0.3")] = None,
    depth: Annotated[str, typer.Option(help="candidate depth, one or one per run (all = whole run)")] = "all",
    rank_base: Annotated[int, typer.Option(help="1: w/(k+rank) (Cormack); 0: w/(k+i), i from 0 (Zeus)")] = 1,
    limit: Annotated[int, typer.Option(help="cut the fused list (0 = no cut)")] = 0,
    method: Annotated[str, typer.Option(help="rrf, convex, combsum, combmnz")] = "rrf",
    norm: Annotated[str, typer.Option(help="score fusion: minmax, zscore, tmm, none")] = "minmax",
    missing: Annotated[str, typer.Option(help="score fusion: zero or min")] = "zero",
    split: str = "test",
    metric: Annotated[list[str], typer.Option("-m", "--metric")] = None,
    output: Annotated[Path, typer.Option("-o", "--output", help="also write the fused run (TREC)")] = None,
    config: Annotated[Path, typer.Option("--config", help="apply a saved configuration (a best.json of sweep, or of a suite)")] = None,
    which: Annotated[str, typer.Option(help="with a suite result: config (selected) or recommended")] = "config",
    as_json: Annotated[bool, typer.Option("--json")] = False,
):
    """Fuse runs with one configuration and print its metrics."""
    from .evaluation import coverage, evaluate
    from .fusion import METHODS, MISSING, NORMALISATIONS, rrf, score_fusion
    from .metrics import DEFAULT_METRICS, parse_metrics
    from .retrievers import parse_spec
    from .workflows import as_dataset, load_runs

    if config is not None:
        return _fuse_config(dataset, config, which, split, metric, output, as_json)
    _choice("--method", method, METHODS)
    _choice("--norm", norm, NORMALISATIONS)
    _choice("--missing", missing, MISSING)
    _choice("--rank-base", str(rank_base), ("0", "1"))
    if limit < 0:
        raise InputError(f"--limit: {limit} must be >= 0 (0 = no cut)")
    metrics = [str(m) for m in parse_metrics(metric or list(DEFAULT_METRICS))]
    specs = retriever or ["bm25", "dense"]
    for s in specs:
        parse_spec(s)
    n = len(specs)
    ws = _floats("--weights", weights) if weights else [1.0] * n
    if len(ws) != n:
        raise InputError(f"--weights: expected {n} values (one per run: {', '.join(specs)}), "
                         f"got {len(ws)}")
    ks = _per_run("--k", _floats("--k", k), n)
    dp = _per_run("--depth", _depths("--depth", depth), n)
    ds = as_dataset(dataset)
    qrels = ds.qrels(split)
    runs = load_runs(ds, specs, split, log=_quiet if as_json else _log)
    if method == "rrf":
        fused = rrf(runs, k=ks, weights=ws, rank_base=rank_base, depth=dp, limit=limit or None)
    else:
        fused = score_fusion(runs, method=method, norm=norm, weights=ws, missing=missing,
                             depth=dp, limit=limit or None)
    scores = evaluate(fused, qrels, metrics)
    cov = coverage(fused, qrels)
    if output:
        fused.to_trec(output)
    if as_json:
        print(json.dumps({"dataset": ds.name, "split": split, "runs": [r.name for r in runs],
                          "config": {"method": method, "k": ks, "weights": ws, "depth": dp,
                                     "rank_base": rank_base, "limit": limit or None,
                                     "norm": norm if method != "rrf" else None,
                                     "missing": missing if method != "rrf" else None},
                          "n_queries": len(qrels.qids), "coverage": cov.to_json(),
                          "metrics": scores}))
    else:
        console.print(_table(f"{fused.name} on {ds.name}/{split}",
                             [{"metric": m, "value": v} for m, v in scores.items()]))
        console.print(_coverage_line(cov), highlight=False)


def _quiet(_msg: str) -> None:
    pass


def _fuse_config(dataset, config_path, which, split, metric, output, as_json):
    """``fuse DATASET --config best.json``: the saved configuration on any collection."""
    import warnings

    from .errors import ValidationWarning
    from .evaluation import coverage, evaluate
    from .metrics import DEFAULT_METRICS, parse_metrics
    from .results import load_result, specs_of
    from .workflows import as_dataset, load_runs

    _choice("--which", which, ("config", "recommended"))
    r = load_result(config_path)
    if r.kind == "preset" or getattr(r, "preset", None):
        raise InputError(f"--config {config_path}: a preset's result; apply it with `rrfbench "
                         f"preset DATASET -p {getattr(r, 'preset', '')} --config {config_path}`")
    if which == "recommended" and r.kind != "transfer":
        raise InputError("--which recommended needs a suite result (rrfbench sweep --suite)")
    cfg = r.config_obj(which) if r.kind == "transfer" else r.config_obj()
    specs = specs_of(r)
    metrics = [str(m) for m in parse_metrics(metric or list(DEFAULT_METRICS))]
    ds = as_dataset(dataset)
    qrels = ds.qrels(split)
    if r.kind == "sweep" and ds.name != r.dataset:
        warnings.warn(f"the configuration was tuned on {r.dataset} only; applied to {ds.name} "
                      "it has not been validated there", ValidationWarning, stacklevel=1)
    runs = load_runs(ds, specs, split, log=_quiet if as_json else _log)
    fused = cfg.fuse(runs)
    scores = evaluate(fused, qrels, metrics)
    cov = coverage(fused, qrels)
    if output:
        fused.to_trec(output)
    label = cfg.label([x.name for x in runs])
    if as_json:
        print(json.dumps({"dataset": ds.name, "split": split, "runs": [x.name for x in runs],
                          "config": {**cfg.to_json(), "label": label}, "from": str(config_path),
                          "n_queries": len(qrels.qids), "coverage": cov.to_json(),
                          "metrics": scores}))
    else:
        console.print(_table(f"{label} ({config_path}) on {ds.name}/{split}",
                             [{"metric": m, "value": v} for m, v in scores.items()]))
        console.print(_coverage_line(cov), highlight=False)


DEFAULT_KS = "1,2,5,10,20,30,40,60,80,100,150,200,300"


@app.command()
def sweep(
    dataset: Annotated[str, typer.Argument(help="a dataset (or use --suite)")] = None,
    suite: Annotated[str, typer.Option("--suite", help="tune across a suite's collections; validate leave-one-collection-out")] = None,
    objective: Annotated[str, typer.Option(help="suite: macro (mean over collections), worst (worst delta vs RRF k=60), meanrank")] = "macro",
    rule: Annotated[str, typer.Option(help="suite: best, or 1se (closest to the default among those within one standard error)")] = "best",
    retriever: Annotated[list[str], typer.Option("-r", "--retriever", help="repeatable; default bm25, fts5, dense")] = None,
    k: Annotated[str, typer.Option(help="comma-separated k values")] = DEFAULT_KS,
    weights: Annotated[list[str], typer.Option(help="weight vectors (repeatable); default: simplex grid")] = None,
    weight_step: Annotated[float, typer.Option(help="simplex grid step")] = 0.1,
    depth: Annotated[str, typer.Option(help="candidate depths, comma-separated (all = whole run)")] = "all",
    per_run_k: Annotated[bool, typer.Option("--per-run-k", help="one k per run (product grid)")] = False,
    method: Annotated[list[str], typer.Option(help="rrf, convex, combsum, combmnz (repeatable)")] = None,
    metric: str = "nDCG@10",
    tune_split: Annotated[str, typer.Option(help="split to tune on")] = None,
    eval_split: Annotated[str, typer.Option(help="split to report on")] = None,
    folds: Annotated[int, typer.Option(help="k-fold CV over the evaluation split's queries")] = 0,
    run_depth: Annotated[int, typer.Option(help="depth of the retrieved runs")] = 1000,
    out: Annotated[Path, typer.Option(help="output folder (default results/<dataset>)")] = None,
    progress: Annotated[bool, typer.Option(help="progress bars")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="print best.json")] = False,
    scheduler: Annotated[str, typer.Option(help="run the sweep on a Dask scheduler, e.g. tcp://host:8786")] = None,
    workers: Annotated[int, typer.Option(help="run the sweep on a local Dask cluster of N worker processes")] = None,
):
    """Sweep fusion configurations, tune honestly; write sweep tables, best.json, plots, report.md.

    With --suite: one sweep over every collection of the suite, the leave-one-collection-out
    table and a verdict on whether the tuned constants transfer (results/transfer/<suite>/).
    """
    from .engine import METHODS
    from .retrievers import parse_spec
    from .transfer import OBJECTIVES, RULES
    from .workflows import sweep_grid

    _one_of(dataset, suite)
    _choice("--objective", objective, OBJECTIVES)
    _choice("--rule", rule, RULES)
    if suite and (tune_split or eval_split or folds):
        raise InputError("--tune-split/--eval-split/--folds: a suite's splits come from "
                         "datasets/suites.toml")
    if not suite and (objective != "macro" or rule != "best"):
        raise InputError("--objective/--rule choose across collections: use them with --suite")
    specs = retriever or ["bm25", "fts5", "dense"]
    for s in specs:
        parse_spec(s)
    methods = [_choice("--method", m, METHODS) for m in (method or METHODS)]
    if run_depth < 1:
        raise InputError(f"--run-depth: {run_depth} must be >= 1")
    grid = sweep_grid(len(specs), methods=methods, k=_floats("--k", k),
                      weights=[tuple(_floats("--weights", w)) for w in weights] if weights else None,
                      weight_step=weight_step, depth=_depths("--depth", depth),
                      per_run_k=per_run_k)
    if scheduler or workers is not None:
        from .distributed import client_for

        with client_for(scheduler, workers) as client:
            return _sweep_run(dataset, suite, specs, grid, metric, objective, rule, tune_split,
                              eval_split, folds, run_depth, out, progress, as_json, client)
    _sweep_run(dataset, suite, specs, grid, metric, objective, rule, tune_split, eval_split,
               folds, run_depth, out, progress, as_json, None)


def _sweep_run(dataset, suite, specs, grid, metric, objective, rule, tune_split, eval_split,
               folds, run_depth, out, progress, as_json, client):
    from .workflows import sweep_dataset, sweep_suite

    if suite:
        so = sweep_suite(suite, specs, grid=grid, metric=metric, objective=objective, rule=rule,
                         run_depth=run_depth, out=out, progress=progress, client=client,
                         log=_quiet if as_json else _log)
        if as_json:
            print(json.dumps(so.result.to_json()))
        else:
            _print_transfer(so.result, so.out)
        return
    res = sweep_dataset(dataset, specs, grid=grid, metric=metric, tune_split=tune_split,
                        eval_split=eval_split, folds=folds or None, run_depth=run_depth,
                        out=out, progress=progress, client=client,
                        log=_quiet if as_json else _log)
    if as_json:
        d = res.result.to_json()
        d.pop("per_query", None)
        print(json.dumps(d))
    else:
        _print_sweep(res.result, res.out)


def _print_transfer(r, out) -> None:
    m = r.metric
    rows = []
    for row in r.loco:
        d = row["default"]
        rows.append({"collection": row["collection"], "selected on the others": row["selected"],
                     "LOCO": row["loco"]["value"], "default": d["value"], "delta": d["delta"],
                     "p": f"{d['p_value']:.4g}", "outcome": d["outcome"],
                     "in-domain": row["in_domain"]["value"]})
    what = f"free fusion ({' + '.join(r.runs)})" if r.family == "fusion" else f"preset {r.family}"
    console.print(_table(f"suite {r.suite}, {what}: leave-one-collection-out ({m}; default: "
                         f"{r.default['label']})", rows))
    s = r.summary
    console.print(f"macro: LOCO {s['macro']['loco']:.4f} vs default {s['macro']['default']:.4f} "
                  f"(gain {s['gain']:+.4f}; p {s['p_value_queries']:.4g} over queries, "
                  f"{s['p_value_collections']:.4g} over collections); wins/ties/losses "
                  f"{s['wins']}/{s['ties']}/{s['losses']}", highlight=False)
    console.print(f"verdict: {r.verdict}. {r.verdict_reason}.", highlight=False)
    console.print(f"selected ({r.objective}, {r.rule}): {r.label}; recommended default: "
                  f"{r.recommended['label']}; report: {out / 'report.md' if out else '-'}",
                  highlight=False)


def _print_sweep(r, out) -> None:
    m = r.metric
    ev, bs, r60 = r.tuned, r.baselines["best_single"], r.baselines["rrf60_equal"]
    rows = [
        {"system": f"tuned: {r.label}", m: ev.value,
         "ci95": f"[{ev.ci95[0]:.4f}, {ev.ci95[1]:.4f}]", "p": "", "p_t": ""},
        {"system": f"best single ({bs.name})", m: bs.value, "ci95": f"[{bs.ci95[0]:.4f}, {bs.ci95[1]:.4f}]",
         "p": f"{bs.p_value:.4g}", "p_t": f"{bs.p_value_t:.4g}"},
        {"system": "rrf k=60 equal", m: r60.value, "ci95": f"[{r60.ci95[0]:.4f}, {r60.ci95[1]:.4f}]",
         "p": f"{r60.p_value:.4g}", "p_t": f"{r60.p_value_t:.4g}"},
    ]
    console.print(_table(f"{r.dataset}: {r.protocol.describe()}", rows))
    console.print(f"optimism gap: {r.optimism['gap']:.4f} (best on eval "
                  f"{r.optimism['best_on_eval']:.4f}); validated on this collection only; "
                  f"report: {out / 'report.md' if out else '-'}", highlight=False)


# --------------------------------------------------------------------------- demo
@app.command()
def demo(
    dataset: str = typer.Argument("scifact"),
    retriever: Annotated[list[str], typer.Option("-r", "--retriever")] = None,
    metric: str = "nDCG@10",
    suite: Annotated[str, typer.Option(help="end with transfer across this suite ('none' to skip)")] = "en",
    progress: Annotated[bool, typer.Option(help="progress bars")] = True,
):
    """The main job: retrieve, sweep (tuned and reported honestly), the studied systems, and
    transfer across the English collections (leave-one-collection-out).

    Prints the single retrievers, the tuned fusion vs baselines, the presets, and each stage's
    time; a second run reuses every cached run, embedding, sweep and preset tuning.
    """
    from .retrievers import parse_spec
    from .workflows import DEFAULT_SPECS
    from .workflows import demo as run_demo

    specs = retriever or list(DEFAULT_SPECS)
    for s in specs:
        parse_spec(s)
    d = run_demo(dataset, specs, metric, progress=progress,
                 suite=None if suite.lower() == "none" else suite, log=_log)
    console.print(_table(f"{d.dataset}: single retrievers (depth 1000)", d.retrievers))
    _print_sweep(d.sweep.result, d.sweep.out)
    _print_presets(d.dataset, d.presets)
    if d.suite is not None:
        _print_transfer(d.suite.result, d.suite.out)
        rows = []
        for so in [d.suite] + list(d.suite_presets):
            r = so.result
            s = r.summary
            rows.append({"family": r.family, "default": r.default["label"],
                         "LOCO macro": s["macro"]["loco"], "default macro": s["macro"]["default"],
                         "gain": s["gain"], "p (queries)": f"{s['p_value_queries']:.4g}",
                         "p (collections)": f"{s['p_value_collections']:.4g}",
                         "W/T/L": f"{s['wins']}/{s['ties']}/{s['losses']}",
                         "verdict": r.verdict, "recommended": r.recommended["label"]})
        console.print(_table(f"suite {d.suite.result.suite}: does tuning transfer? "
                             "(leave-one-collection-out)", rows))
    console.print(_table("stage times (s)", [{"stage": k, "seconds": v} for k, v in d.stages.items()]))
    first = d.timing_log[0]["wall_s"]
    console.print(f"demo wall time: {d.stages['total']:.1f} s this run "
                  f"({'all runs cached' if d.all_cached else 'some runs computed'}); first run "
                  f"logged in demo_timing.json {first:.1f} s; report: {d.out / 'report.md'}", highlight=False)


def _print_presets(dataset: str, rows) -> None:
    from .report import knob_str

    t = Table(title=f"{dataset}: studied systems as shipped vs tuned (eval split)")
    for c in ("preset", "shipped", "tuned", "CI95", "p vs shipped", "shipped R@100",
              "tuned R@100", "tuned knobs"):
        t.add_column(c, overflow="fold")
    for r in rows:
        m = r.metric
        t.add_row(r.preset, f"{r.shipped['metrics'][m]:.4f}", f"{r.tuned.value:.4f}",
                  f"[{r.tuned.ci95[0]:.3f}, {r.tuned.ci95[1]:.3f}]", f"{r.vs_shipped.p_value:.3g}",
                  f"{r.shipped['metrics'].get('R@100', float('nan')):.4f}",
                  f"{r.tuned_metrics.get('R@100', float('nan')):.4f}", knob_str(r))
    console.print(t)


# --------------------------------------------------------------------------- presets
@app.command()
def preset(
    dataset: str,
    preset: Annotated[str, typer.Option("--preset", "-p", help="a studied system (see rrfbench presets)")],
    limit: Annotated[int, typer.Option(help="result limit (default: the system's)")] = 0,
    split: str = "test",
    param: Annotated[list[str], typer.Option("--set", help="knob=value (repeatable)")] = None,
    prior: Annotated[Path, typer.Option(help="ai-memory PageAuthority prior: 'docid multiplier' lines")] = None,
    config: Annotated[Path, typer.Option("--config", help="apply tuned knob values from a best.json (rrfbench tune)")] = None,
    which: Annotated[str, typer.Option(help="with a suite result: config (selected) or recommended")] = "config",
    streams: Annotated[str, typer.Option(help="default (two streams) or full (every stream rrfbench models for the system)")] = "default",
    as_json: Annotated[bool, typer.Option("--json")] = False,
):
    """Evaluate a studied system as shipped (or with --set knob=value, or --config best.json)."""
    from .evaluation import coverage, evaluate
    from .presets import get_preset, read_prior
    from .workflows import as_dataset, preset_runs

    p = get_preset(preset)
    params = p.defaults()
    if config is not None:
        params |= _preset_config(p, config, which)
    params |= p.parse_settings(param or [])
    if limit < 0:
        raise InputError(f"--limit: {limit} must be >= 0 (0 = the system's own)")
    pri = read_prior(prior) if prior else None
    ds = as_dataset(dataset)
    qrels = ds.qrels(split)
    runs = preset_runs(p, ds, split, streams=streams)
    queries = dict(zip(ds.queries.qid, ds.queries.text, strict=True))
    fused = p.run(runs, params, limit=limit or None, prior=pri, queries=queries)
    scores = evaluate(fused, qrels, ["nDCG@10", "R@100", "RR@10"])
    cov = coverage(fused, qrels)
    fidelity = [f.to_json() for f in p.fidelity]
    unavailable = sorted(set(p.streams) - set(runs))
    if as_json:
        print(json.dumps({"dataset": ds.name, "split": split, "preset": p.name,
                          "streams": {r: run.name for r, run in runs.items()}, "params": params,
                          "limit": p.limit_for(params, limit or None), "metrics": scores,
                          "coverage": cov.to_json(), "fidelity": fidelity,
                          "unavailable_streams": unavailable}))
        return
    console.print(_table(f"{p.system} on {ds.name}/{split}",
                         [{"metric": m, "value": v} for m, v in scores.items()]))
    console.print(f"params: {params}; {_coverage_line(cov)}", highlight=False)
    for line in p.fidelity_lines():
        console.print(f"  fidelity {line}", highlight=False)
    if unavailable:
        _warn(f"streams unavailable here (the system falls back without them): {', '.join(unavailable)}")


def _preset_config(p, path, which) -> dict:
    from .results import load_result

    _choice("--which", which, ("config", "recommended"))
    r = load_result(path)
    owner = getattr(r, "preset", None)
    if owner != p.name:
        raise InputError(f"--config {path}: not a result of preset {p.name!r} (it is "
                         f"{'preset ' + repr(owner) if owner else 'a free fusion result'})")
    cfg = r.recommended["config"] if which == "recommended" and r.kind == "transfer" else r.config
    if which == "recommended" and r.kind != "transfer":
        raise InputError("--which recommended needs a suite result (rrfbench tune --suite)")
    known = {k.name for k in p.knobs} | set(p.extra_defaults)
    return {k: v for k, v in cfg.items() if k in known}


@app.command()
def tune(
    dataset: Annotated[str, typer.Argument(help="a dataset (or use --suite)")] = None,
    preset: Annotated[str, typer.Option("--preset", "-p")] = None,
    suite: Annotated[str, typer.Option("--suite", help="tune across a suite; validate leave-one-collection-out vs the shipped values")] = None,
    objective: Annotated[str, typer.Option(help="suite: macro, worst, meanrank")] = "macro",
    rule: Annotated[str, typer.Option(help="suite: best or 1se")] = "best",
    metric: str = "nDCG@10",
    tune_split: str = None,
    eval_split: str = None,
    folds: Annotated[int, typer.Option(help="k-fold CV (0: the dataset's default protocol)")] = 0,
    progress: Annotated[bool, typer.Option(help="progress bars")] = True,
):
    """Tune a studied system within its own knobs; write results/<dataset>/presets/<preset>/best.json
    (with --suite: results/transfer/<suite>/presets/<preset>/)."""
    from .presets import get_preset
    from .transfer import OBJECTIVES, RULES
    from .workflows import preset_result_path, tune_preset_on, tune_preset_suite

    _one_of(dataset, suite)
    if not preset:
        raise InputError("--preset: give the studied system to tune (rrfbench presets lists them)")
    get_preset(preset)
    _choice("--objective", objective, OBJECTIVES)
    _choice("--rule", rule, RULES)
    if suite:
        if tune_split or eval_split or folds:
            raise InputError("--tune-split/--eval-split/--folds: a suite's splits come from "
                             "datasets/suites.toml")
        so = tune_preset_suite(suite, preset, metric, objective, rule, progress=progress, log=_log)
        _print_transfer(so.result, so.out)
        return
    if objective != "macro" or rule != "best":
        raise InputError("--objective/--rule choose across collections: use them with --suite")
    r = tune_preset_on(dataset, preset, metric, tune_split, eval_split, folds or None,
                       progress=progress, log=_log)
    m = r.metric
    console.print(_table(f"{r.system}: shipped vs tuned on {r.dataset} ({r.protocol.describe()})", [
        {"": "shipped", m: r.shipped["metrics"][m], "R@100": r.shipped["metrics"].get("R@100", float("nan"))},
        {"": "tuned", m: r.tuned.value, "R@100": r.tuned_metrics.get("R@100", float("nan"))}]))
    console.print(f"tuned: {r.tuned_knobs()}  p vs shipped {r.vs_shipped.p_value:.4g}; "
                  f"wrote {preset_result_path(r.dataset, r.preset)}", highlight=False)


@app.command()
def export(
    best_json: Path,
    to: Annotated[str, typer.Option("--to", help="json toml yaml python js ts, or a system's own: nexusai nexusai-settings titan zeus-yaml zeus-python ai-memory")],
    output: Annotated[Path, typer.Option("-o", "--output")] = None,
    which: Annotated[str, typer.Option(help="with a suite result: recommended (what the verdict supports) or config (selected)")] = "recommended",
):
    """Render tuned constants in a target system's configuration shape."""
    from .exporters import render
    from .results import load_result
    from .store import write_text

    _choice("--which", which, ("recommended", "config"))
    text = render(load_result(best_json), to, which=which)
    if output:
        write_text(output, text)
        console.print(f"wrote {output}", highlight=False)
    else:
        sys.stdout.write(text)


@app.command("explain")
def explain_cmd(
    dataset: str,
    qid: str,
    config: Annotated[Path, typer.Option("--config", help="a best.json: fusion sweep, suite, or preset result")] = None,
    split: str = "test",
    top: Annotated[int, typer.Option(help="rows: the fused top N")] = 10,
    which: Annotated[str, typer.Option(help="with a suite result: config or recommended")] = "config",
):
    """Explain one query: per run its rank, score and contribution to the fused score."""
    from .explanations import explain, explain_preset
    from .presets import get_preset
    from .results import load_result, specs_of
    from .workflows import as_dataset, load_runs, preset_runs

    if top < 1:
        raise InputError(f"--top: {top} must be >= 1")
    if config is None:
        raise InputError("--config: give the best.json whose configuration to explain")
    _choice("--which", which, ("config", "recommended"))
    r = load_result(config)
    ds = as_dataset(dataset)
    qrels = ds.qrels(split)
    owner = getattr(r, "preset", None)
    if owner:
        p = get_preset(owner)
        params = r.config if which == "config" or r.kind != "transfer" else r.recommended["config"]
        table = explain_preset(p, preset_runs(p, ds, split), qid, params, qrels)
        label = f"{owner}: {params}"
    else:
        runs = load_runs(ds, specs_of(r), split, log=_log)
        cfg = r.config_obj(which) if r.kind == "transfer" else r.config_obj()
        table = explain(runs, cfg, qid, qrels, top)
        label = cfg.label([x.name for x in runs])
    text = ds.queries.set_index("qid").text.get(str(qid), "?")
    rows = table.head(top if not owner else len(table)).to_dict("records")
    rows = [{k: ("" if v is None or (isinstance(v, float) and v != v) else v)
             for k, v in row.items()} for row in rows]
    console.print(_table(f"{ds.name}/{split} query {qid} ({text[:80]}): {label}", rows))


@app.command("compare")
def compare_cmd(
    a: Path,
    b: Path,
    movers: Annotated[int, typer.Option(help="queries that moved most, each way")] = 5,
):
    """Compare two saved results on the same queries: per-query deltas and paired tests."""
    from .explanations import compare
    from .results import load_result

    rep = compare(load_result(a), load_result(b))
    console.print(rep.summary(), highlight=False)
    up, down = rep.movers(movers)
    console.print(_table("a better", up.round(4).to_dict("records")))
    console.print(_table("b better", down.round(4).to_dict("records")))


@app.command()
def presets():
    """List the studied systems, their knobs and their fidelity notes."""
    from .presets import PRESETS

    for p in PRESETS.values():
        console.print(f"[bold]{p.name}[/bold]: {p.system}", highlight=False)
        console.print("  streams: " + ", ".join(f"{r}={s}" for r, s in p.streams.items()),
                      highlight=False)
        console.print("  knobs: " + ", ".join(f"{k.name}={k.default}" + (" (fixed)" if k.fixed else "")
                                              for k in p.knobs), highlight=False)
        console.print("  exports: " + ", ".join(p.exports), highlight=False)
        for line in p.fidelity_lines():
            console.print(f"  fidelity {line}", highlight=False)


@app.command()
def regress(
    baselines: Annotated[Path, typer.Option("--baselines", help="default: results/baselines.json of the project")] = None,
    tolerance: float = None,
    update: Annotated[bool, typer.Option("--update", help="rewrite baselines with today's values")] = False,
    compute_all: Annotated[bool, typer.Option("--all", help="also compute uncached dense encodings")] = False,
):
    """Recompute baseline metrics; exit 1 if any got worse beyond the tolerance."""
    from . import regress as R
    from .store import write_text

    if tolerance is not None and not (0 <= tolerance < 1):
        raise InputError(f"--tolerance: {tolerance} must be in [0, 1)")
    baselines = baselines or R.default_path()
    data = R.load_baselines(baselines)
    rows = R.check(data, tolerance, compute_all)
    table = [{"dataset": r["dataset"], "split": r["split"], "system": r["system"],
              "metric": r["metric"], "expected": r["expected"],
              "actual": r["actual"] if r["actual"] is not None else "-", "status": r["status"]}
             for r in rows]
    console.print(_table(f"metric regression vs {baselines}", table))
    if update:
        new, diff = R.update(data, rows)
        write_text(baselines, json.dumps(new, indent=2) + "\n")
        console.print("\n".join(diff) if diff else "no changes", highlight=False)
        return
    counts = {s: sum(r["status"] == s for r in rows) for s in ("OK", "OKISH", "IMPROVED", "SKIP", "FAIL")}
    console.print(" ".join(f"{k}={v}" for k, v in counts.items()), highlight=False)
    if counts["FAIL"]:
        raise typer.Exit(1)


# --------------------------------------------------------------------------- entry point
def _show_warning(message, category, filename, lineno, file=None, line=None):
    if issubclass(category, RrfbenchWarning):
        _warn(str(message))


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app; every failure ends in one line and an exit code (0, 1 or 2)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = "--debug" in argv[: next((i for i, a in enumerate(argv) if not a.startswith("-")), len(argv))]
    with warnings.catch_warnings():
        if not debug:
            warnings.simplefilter("ignore")  # libraries' deprecation chatter
        warnings.simplefilter("always", RrfbenchWarning)
        warnings.showwarning = _show_warning
        code = _run(argv, debug)
    sys.exit(code)


def _run(argv: list[str], debug: bool) -> int:
    try:
        rv = app(args=argv, prog_name="rrfbench", standalone_mode=False)
        return rv if isinstance(rv, int) else 0
    except typer.Exit as exc:
        return int(exc.exit_code)
    except RrfbenchError as exc:
        if debug:
            raise
        print(f"error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except typer.TyperException as exc:  # usage errors: unknown option, bad value, missing arg
        if debug:
            raise
        msg = " ".join(exc.format_message().split())
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        print(f"error: {msg}{hint}", file=sys.stderr)
        return int(getattr(exc, "exit_code", 2) or 2)
    except (typer.Abort, KeyboardInterrupt):
        print("error: aborted", file=sys.stderr)
        return 1
    except OSError as exc:  # e.g. an output path that cannot be written
        if debug:
            raise
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        print(f"error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2 if where else 1
    except Exception as exc:  # a bug: one line, the traceback with --debug
        if debug:
            raise
        print(f"error: internal error ({type(exc).__name__}: {' '.join(str(exc).split())[:300]}); "
              "rerun with --debug for the traceback", file=sys.stderr)
        return 1


if __name__ == "__main__":
    main()
