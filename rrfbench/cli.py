"""The ``rrfbench`` command line (typer + rich). Nothing in the package imports this module.

Every user-facing error is one line on stderr (``error: <file>:<line>: <problem>``) and exit
code 2; ``--debug`` shows the full traceback instead.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.table import Table

from .errors import RrfbenchError

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Measure and tune reciprocal rank fusion over real runs and qrels.")
console = Console()
_state = {"debug": False}


@app.callback()
def _root(debug: Annotated[bool, typer.Option("--debug", help="Show full tracebacks.")] = False):
    _state["debug"] = debug


def _fmt(v) -> str:
    return f"{v:.4f}" if isinstance(v, float) else str(v)


def _table(title: str, rows: list[dict]) -> Table:
    t = Table(title=title)
    if rows:
        for c in rows[0]:
            t.add_column(str(c), justify="right" if isinstance(rows[0][c], (int, float)) else "left")
        for r in rows:
            t.add_row(*[_fmt(r[c]) for c in rows[0]])
    return t


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
    dataset: str,
    retriever: Annotated[list[str], typer.Option("-r", "--retriever",
                                                 help="bm25, fts5[:phrase|:and_tokens], dense[:torch|:onnx|:onnx-int8], rank_bm25[:jieba]; repeatable")] = None,
    split: Annotated[list[str], typer.Option("--split", help="repeatable")] = None,
    depth: int = 1000,
    force: Annotated[bool, typer.Option("--force", help="Recompute even when cached.")] = False,
    metric: Annotated[list[str], typer.Option("-m", "--metric")] = None,
):
    """Retrieve (or reuse cached) runs and print their metrics."""
    from .datasets import load_dataset
    from .evaluate import evaluate
    from .retrievers import cached_run, make_retriever

    ds = load_dataset(dataset)
    metrics = metric or ["nDCG@10", "R@100", "RR@10"]
    rows = []
    for s in split or ["test"]:
        ds.qrels(s)  # fail early on a bad split
        for spec in retriever or ["bm25"]:
            res = cached_run(make_retriever(spec), ds, s, depth, force)
            row = {"retriever": res.run.name, "split": s}
            row.update(evaluate(res.run, ds.qrels(s), metrics))
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
    from .datasets import load_dataset
    from .evaluate import evaluate
    from .metrics import DEFAULT_METRICS
    from .runs import Run

    ds = load_dataset(dataset)
    qrels = ds.qrels(split)
    run = Run.from_trec(run_file)
    scores = evaluate(run, qrels, metric or list(DEFAULT_METRICS))
    if as_json:
        print(json.dumps({"dataset": ds.name, "split": split, "run": str(run_file),
                          "n_queries": len(qrels.qids), "metrics": scores}))
    else:
        console.print(_table(f"{run_file} on {ds.name}/{split} ({len(qrels.qids)} queries)",
                             [{"metric": k, "value": v} for k, v in scores.items()]))


# --------------------------------------------------------------------------- fusion
def _floats(text: str) -> list[float]:
    from .errors import InputError

    try:
        return [float(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise InputError(f"expected comma-separated numbers, got {text!r}") from None


def _depths(text: str) -> list[int | None]:
    out = []
    for x in text.replace(" ", "").split(","):
        out.append(None if x in ("", "all", "none", "0") else int(x))
    return out


def load_runs(ds, specs: list[str], split: str, depth: int = 1000, quiet: bool = False):
    """Cached runs of ``specs`` on ``split`` (retrieving what is missing)."""
    from .retrievers import cached_run, make_retriever

    runs = []
    for spec in specs:
        res = cached_run(make_retriever(spec), ds, split, depth)
        if not quiet:
            console.print(f"[dim]{res.run.name} ({split}): {'cached' if res.cached else 'retrieved'} "
                          f"{res.path}[/dim]")
        runs.append(res.run)
    return runs


@app.command()
def fuse(
    dataset: str,
    retriever: Annotated[list[str], typer.Option("-r", "--retriever")] = None,
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
    as_json: Annotated[bool, typer.Option("--json")] = False,
):
    """Fuse runs with one configuration and print its metrics."""
    from .datasets import load_dataset
    from .evaluate import evaluate
    from .fusion import rrf, score_fusion
    from .metrics import DEFAULT_METRICS

    ds = load_dataset(dataset)
    specs = retriever or ["bm25", "dense"]
    runs = load_runs(ds, specs, split, quiet=as_json)
    ws = _floats(weights) if weights else [1.0] * len(runs)
    ks = _floats(k)
    ds_ = _depths(depth)
    if method == "rrf":
        fused = rrf(runs, k=ks[0] if len(ks) == 1 else ks, weights=ws, rank_base=rank_base,
                    depth=ds_[0] if len(ds_) == 1 else ds_, limit=limit or None)
    else:
        fused = score_fusion(runs, method=method, norm=norm, weights=ws, missing=missing,
                             depth=ds_[0] if len(ds_) == 1 else ds_, limit=limit or None)
    scores = evaluate(fused, ds.qrels(split), metric or list(DEFAULT_METRICS))
    if output:
        fused.to_trec(output)
    if as_json:
        print(json.dumps({"dataset": ds.name, "split": split, "runs": [r.name for r in runs],
                          "config": {"method": method, "k": ks, "weights": ws, "depth": ds_,
                                     "rank_base": rank_base, "limit": limit or None,
                                     "norm": norm if method != "rrf" else None,
                                     "missing": missing if method != "rrf" else None},
                          "n_queries": len(ds.qrels(split).qids), "metrics": scores}))
    else:
        console.print(_table(f"{fused.name} on {ds.name}/{split}",
                             [{"metric": m, "value": v} for m, v in scores.items()]))


DEFAULT_KS = "1,2,5,10,20,30,40,60,80,100,150,200,300"


@app.command()
def sweep(
    dataset: str,
    retriever: Annotated[list[str], typer.Option("-r", "--retriever")] = None,
    k: Annotated[str, typer.Option(help="comma-separated k values")] = DEFAULT_KS,
    weights: Annotated[list[str], typer.Option(help="weight vectors (repeatable); default: simplex grid")] = None,
    weight_step: Annotated[float, typer.Option(help="simplex grid step")] = 0.1,
    depth: Annotated[str, typer.Option(help="candidate depths, comma-separated (all = whole run)")] = "all",
    per_run_k: Annotated[bool, typer.Option("--per-run-k", help="one k per run (product grid)")] = False,
    method: Annotated[list[str], typer.Option(help="rrf, convex, combsum, combmnz (repeatable)")] = None,
    metric: str = "nDCG@10",
    tune_split: Annotated[str, typer.Option(help="split to tune on")] = None,
    eval_split: Annotated[str, typer.Option(help="split to report on")] = None,
    folds: Annotated[int, typer.Option(help="k-fold CV over queries (single-split datasets)")] = 0,
    run_depth: Annotated[int, typer.Option(help="depth of the retrieved runs")] = 1000,
    out: Annotated[Path, typer.Option(help="output folder (default results/<dataset>)")] = None,
    progress: Annotated[bool, typer.Option(help="tqdm progress bars")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="print best.json")] = False,
):
    """Sweep fusion configurations, tune honestly, write sweep.parquet, best.json, plots, report.md."""
    from .datasets import load_dataset
    from .metrics import DEFAULT_METRICS, parse_metric
    from .report import write_sweep_outputs
    from .retrievers import results_dir
    from .sweep import FusionEngine, make_grid
    from .tuning import tune_folds, tune_holdout

    ds = load_dataset(dataset)
    metric = str(parse_metric(metric))
    specs = retriever or ["bm25", "fts5", "dense"]
    methods = method or ["rrf", "convex", "combsum", "combmnz"]
    metrics = [metric] + [m for m in DEFAULT_METRICS if m != metric]
    out = out or results_dir() / ds.name
    if folds and (tune_split or eval_split):
        from .errors import InputError

        raise InputError("use either --folds or --tune-split/--eval-split")
    if not folds and not tune_split:
        if len(ds.splits) >= 2 and "train" in ds.splits and "test" in ds.splits:
            tune_split, eval_split = "train", "test"
        else:
            folds = 5
    grid = make_grid(len(specs), methods=methods, k=_floats(k),
                     weights=[tuple(_floats(w)) for w in weights] if weights else None,
                     depth=_depths(depth), per_run_k=per_run_k, weight_step=weight_step,
                     norms=("minmax", "zscore", "tmm"), missing=("zero", "min"))
    if folds:
        split = eval_split or tune_split or ds.splits[0]
        runs = load_runs(ds, specs, split, run_depth, quiet=as_json)
        engine = FusionEngine(runs, ds.qrels(split), metrics)
        best, table = tune_folds(engine, grid, metric, folds=folds, out=out, progress=progress)
        best["eval"]["split"] = split
        eval_table = table
    else:
        eval_split = eval_split or "test"
        ds.qrels(tune_split), ds.qrels(eval_split)
        t_runs = load_runs(ds, specs, tune_split, run_depth, quiet=as_json)
        e_runs = load_runs(ds, specs, eval_split, run_depth, quiet=as_json)
        best, table, eval_table = tune_holdout(FusionEngine(t_runs, ds.qrels(tune_split), metrics),
                                               FusionEngine(e_runs, ds.qrels(eval_split), metrics),
                                               grid, metric, out=out, progress=progress)
        best["tune"]["split"] = tune_split
        best["eval"]["split"] = eval_split
    write_sweep_outputs(ds, best, table, eval_table, out)
    if as_json:
        print(json.dumps({k_: v for k_, v in best.items() if k_ != "per_query"}, default=str))
    else:
        _print_best(best)


def _print_best(best: dict) -> None:
    m = best["metric"]
    ev, bl = best["eval"], best["baselines"]
    rows = [
        {"system": f"tuned: {best['config']['label']}", m: ev["value"],
         "ci95": f"[{ev['ci95'][0]:.4f}, {ev['ci95'][1]:.4f}]", "p": "", "p_t": ""},
        {"system": f"best single ({bl['best_single']['name']})", m: bl["best_single"]["value"],
         "ci95": "", "p": f"{bl['best_single']['p_value']:.4g}", "p_t": f"{bl['best_single']['p_value_t']:.4g}"},
        {"system": "rrf k=60 equal", m: bl["rrf60_equal"]["value"], "ci95": "",
         "p": f"{bl['rrf60_equal']['p_value']:.4g}", "p_t": f"{bl['rrf60_equal']['p_value_t']:.4g}"},
    ]
    console.print(_table(f"{best['dataset']}: eval split {ev['split']}", rows))
    console.print(f"optimism gap: {best['optimism']['gap']:.4f} (best on eval "
                  f"{best['optimism']['best_on_eval']:.4f}); report: report.md")


# --------------------------------------------------------------------------- demo
@app.command()
def demo(
    dataset: str = typer.Argument("scifact"),
    retriever: Annotated[list[str], typer.Option("-r", "--retriever")] = None,
    metric: str = "nDCG@10",
    progress: Annotated[bool, typer.Option(help="tqdm progress bars")] = True,
):
    """The main job: retrieve, sweep on train, report on test, presets; prints its wall time.

    A second run reuses every cached run and embedding; both wall times are printed.
    """
    import time

    from .datasets import load_dataset
    from .evaluate import evaluate
    from .report import write_json
    from .retrievers import cached_run, make_retriever, results_dir

    t0 = time.perf_counter()
    ds = load_dataset(dataset)
    specs = retriever or ["bm25", "fts5", "dense"]
    splits = ["train", "test"] if {"train", "test"} <= set(ds.splits) else ds.splits[:1]
    rows, all_cached = [], True
    for sp in splits:
        for spec in specs:
            res = cached_run(make_retriever(spec), ds, sp, 1000)
            all_cached &= res.cached
            row = {"retriever": res.run.name, "split": sp}
            row.update(evaluate(res.run, ds.qrels(sp), ["nDCG@10", "R@100", "RR@10"]))
            row["retrieve_s"] = float(res.manifest.get("wall_time_s", 0.0))
            row["cached"] = "yes" if res.cached else "no"
            rows.append(row)
    console.print(_table(f"{ds.name}: single retrievers (depth 1000)", rows))
    out = results_dir() / ds.name
    write_json(out / "retrievers.json", rows)
    sweep_args = [ds.name] + sum((["-r", s] for s in specs), []) + ["--metric", metric]
    if len(splits) == 1:
        sweep_args += ["--folds", "5"]
    if not progress:
        sweep_args.append("--no-progress")
    sweep(**_sweep_kwargs(sweep_args))
    try:
        from .presets import preset_table

        preset_table(ds, console=console, progress=progress)
    except ImportError:
        pass
    wall = time.perf_counter() - t0
    log_path = out / "demo_timing.json"
    log = json.loads(log_path.read_text()) if log_path.exists() else []
    log.append({"wall_s": round(wall, 1), "all_runs_cached": all_cached,
                "finished": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    write_json(log_path, log)
    first = log[0]["wall_s"]
    console.print(f"demo wall time: {wall:.1f} s this run; first run {first:.1f} s "
                  f"(ratio {wall / first:.2f}); report: {out / 'report.md'}")


def _sweep_kwargs(args: list[str]) -> dict:
    """Parse ``sweep`` arguments through click so defaults stay in one place."""
    import typer.main

    cmd = typer.main.get_command(app).commands["sweep"]
    ctx = cmd.make_context("sweep", list(args))
    return dict(ctx.params)


# --------------------------------------------------------------------------- presets
@app.command()
def preset(
    dataset: str,
    preset: Annotated[str, typer.Option("--preset", "-p", help="nexusai, titan, ai-memory, zeus")],
    limit: Annotated[int, typer.Option(help="result limit (default: the system's)")] = 0,
    split: str = "test",
    param: Annotated[list[str], typer.Option("--set", help="knob=value (repeatable)")] = None,
    prior: Annotated[Path, typer.Option(help="ai-memory PageAuthority prior: 'docid multiplier' lines")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
):
    """Evaluate a studied system as shipped (or with --set knob=value)."""
    from .datasets import load_dataset
    from .evaluate import evaluate
    from .presets import get_preset, preset_runs, read_prior

    ds = load_dataset(dataset)
    p = get_preset(preset)
    params = p.defaults()
    for item in param or []:
        name, _, value = item.partition("=")
        params[name] = json.loads(value) if value not in ("true", "false") else value == "true"
    runs = preset_runs(p, ds, split)
    fused = p.run(runs, params, limit=limit or None, prior=read_prior(prior) if prior else None)
    scores = evaluate(fused, ds.qrels(split), ["nDCG@10", "R@100", "RR@10"])
    missing = p.missing_streams + ([] if set(runs) == set(p.streams) else
                                   [f"{r} (unavailable)" for r in set(p.streams) - set(runs)])
    if as_json:
        print(json.dumps({"dataset": ds.name, "split": split, "preset": p.name, "params": params,
                          "limit": limit or params.get("top_k") or p.default_limit,
                          "metrics": scores, "missing_streams": missing}))
        return
    console.print(_table(f"{p.system} on {ds.name}/{split}",
                         [{"metric": m, "value": v} for m, v in scores.items()]))
    console.print(f"params: {params}")
    if missing:
        console.print(f"[yellow]missing streams (not modelled yet): {', '.join(missing)}[/yellow]")


@app.command()
def tune(
    dataset: str,
    preset: Annotated[str, typer.Option("--preset", "-p")],
    metric: str = "nDCG@10",
    tune_split: str = None,
    eval_split: str = None,
    folds: int = 5,
    progress: Annotated[bool, typer.Option(help="tqdm progress bars")] = True,
):
    """Tune a studied system within its own knobs; write results/<dataset>/presets/<preset>/best.json."""
    from .datasets import load_dataset
    from .metrics import parse_metric
    from .presets import _tune_cache_key, get_preset, provenance, tune_preset
    from .report import write_json
    from .retrievers import results_dir

    ds = load_dataset(dataset)
    p = get_preset(preset)
    res = tune_preset(p, ds, str(parse_metric(metric)), tune_split, eval_split, folds,
                      progress=progress)
    res["provenance"] = provenance(ds)
    res["cache_key"] = _tune_cache_key(p, ds, res["metric"])  # lets `rrfbench demo` reuse it
    path = results_dir() / ds.name / "presets" / p.name / "best.json"
    write_json(path, res)
    console.print(_table(f"{p.system}: shipped vs tuned on {ds.name}/{res['eval']['split']}", [
        {"": "shipped", **{m: res["shipped"][m] for m in (res["metric"], "R@100") if m in res["shipped"]}},
        {"": "tuned", **{m: res["eval"][m] for m in (res["metric"], "R@100") if m in res["eval"]}}]))
    console.print(f"tuned: {res['config']}  p vs shipped {res['eval']['p_value_vs_shipped']:.4g}; "
                  f"wrote {path}")


@app.command()
def export(
    best_json: Path,
    to: Annotated[str, typer.Option("--to", help="json toml yaml python js ts nexusai nexusai-settings titan zeus-yaml zeus-python ai-memory")],
    output: Annotated[Path, typer.Option("-o", "--output")] = None,
):
    """Render tuned constants in a target system's configuration shape."""
    from .export import load_best, render
    from .runs import atomic_write_text

    text = render(load_best(best_json), to)
    if output:
        atomic_write_text(output, text)
        console.print(f"wrote {output}")
    else:
        sys.stdout.write(text)


@app.command()
def regress(
    baselines: Annotated[Path, typer.Option("--baselines")] = Path("results/baselines.json"),
    tolerance: float = None,
    update: Annotated[bool, typer.Option("--update", help="rewrite baselines with today's values")] = False,
    compute_all: Annotated[bool, typer.Option("--all", help="also compute uncached dense encodings")] = False,
):
    """Recompute baseline metrics; exit 1 if any got worse beyond the tolerance."""
    from . import regress as R
    from .runs import atomic_write_text

    data = R.load_baselines(baselines)
    rows = R.check(data, tolerance, compute_all)
    table = [{"dataset": r["dataset"], "split": r["split"], "system": r["system"],
              "metric": r["metric"], "expected": r["expected"],
              "actual": r["actual"] if r["actual"] is not None else "-", "status": r["status"]}
             for r in rows]
    console.print(_table(f"metric regression vs {baselines}", table))
    if update:
        new, diff = R.update(data, rows)
        atomic_write_text(baselines, json.dumps(new, indent=2) + "\n")
        console.print("\n".join(diff) if diff else "no changes")
        return
    fails = [r for r in rows if r["status"] == "FAIL"]
    counts = {s: sum(r["status"] == s for r in rows) for s in ("OK", "OKISH", "IMPROVED", "SKIP", "FAIL")}
    console.print(" ".join(f"{k}={v}" for k, v in counts.items()))
    if fails:
        raise typer.Exit(1)


def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app, turning :class:`RrfbenchError` into one line and exit 2."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        rc = app(args=argv, prog_name="rrfbench", standalone_mode=False)
        if isinstance(rc, int) and rc != 0:  # click returns typer.Exit codes here
            sys.exit(rc)
    except RrfbenchError as exc:
        if "--debug" in argv:
            raise
        print(f"error: {exc}", file=sys.stderr)
        sys.exit(2)
    except (typer.Exit, SystemExit) as exc:
        code = getattr(exc, "exit_code", getattr(exc, "code", 0))
        sys.exit(code)
    except Exception as exc:  # click usage errors
        import click

        if isinstance(exc, click.exceptions.ClickException):
            exc.show()
            sys.exit(exc.exit_code)
        if isinstance(exc, click.exceptions.Abort):
            sys.exit(1)
        raise


if __name__ == "__main__":
    main()
