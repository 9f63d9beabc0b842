"""The ``rrfbench`` command line (typer + rich): each command parses, calls one function of
:mod:`rrfbench.workflows.dataset` and renders the tables the result objects build. Nothing in the
package imports this module. Errors: bad input or arguments print one line ``error: ...`` and
exit 2 (an :class:`~rrfbench.core.errors.InputError`, or typer's usage message); an unexpected
failure prints one line and exits 1; ``--debug`` shows the traceback. Warnings print one line
``warning: ...``."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer
import typer.core

from .adaptive.features import FEATURE_SETS
from .adaptive.policies import KINDS, N_CANDIDATES
from .cli_common import (
    AllowMissing,
    Json,
    Metrics,
    Objective,
    Progress,
    Rule,
    Scheduler,
    Streams,
    Which,
    Workers,
    _log,
    _one_of,
    _quiet,
    _render,
    _say,
    _scored,
    _show,
    _warn,
)
from .cli_judge import judge
from .core.errors import InputError
from .core.exits import run_app
from .data.datasets import search_path
from .data.ingest import MANIFEST, Columns
from .data.ingest import ingest as write_collection
from .fusion.functions import METHODS, MISSING, NORMALISATIONS, RANK_BASES
from .outputs.explanations import compare
from .outputs.exporters import formats
from .results.dataset import load_result
from .results.values import WHICH
from .systems.engines import ENGINES, spaces_of
from .systems.registry import get_system, using_streams
from .tuning.selection import DEFAULT_RULE
from .workflows import regress as R
from .workflows.commands import (
    apply_config,
    cluster,
    datasets_table,
    evaluate_file,
    evaluate_preset,
    explain_view,
    export_result,
    fuse_runs,
    presets_lines,
    retrieve_table,
    sweep_any,
    tune_any,
)
from .workflows.dataset import DEFAULT_KS, DEFAULT_SPECS, as_dataset
from .workflows.demo import demo as run_demo
from .workflows.engine_table import engine_table
from .workflows.judge import (
    against_current,
    parse_current,
)
from .workflows.options import check_specs, parse_depths, parse_numbers
from .workflows.suite import adapt_suite

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="Measure and tune reciprocal rank fusion over real runs and qrels.")

_type_of = typer.core.TyperOption.display_type_rich  # help shows a flag as a flag, not "--json <bool>"
typer.core.TyperOption.display_type_rich = lambda self, ctx: (
    None if getattr(self, "is_flag", False) else _type_of(self, ctx))


@app.callback()
def _root(debug: Annotated[bool, typer.Option("--debug", help="Show full tracebacks.")] = False):
    """Measure and tune reciprocal rank fusion over real runs and qrels."""


# --------------------------------------------------------------------------- datasets / runs
@app.command()
def datasets():
    """List the datasets that resolve on the search path, with counts."""
    df = datasets_table()
    if len(df):
        _show("datasets", df)
    else:
        _say(f"no datasets on the search path: {', '.join(map(str, search_path()))}")


@app.command()
def ingest(
    out: Annotated[Path, typer.Argument(help="the BEIR folder to write (new, empty, or one ingest wrote)")],
    corpus: Annotated[Path, typer.Option("--corpus", help="documents: .jsonl, .csv, .tsv, .parquet, or a SQLite file with --table")],
    queries: Annotated[Path, typer.Option("--queries", help="queries, in any of the same formats")] = None,
    table: Annotated[str, typer.Option("--table", help="SQLite: the table or view of documents")] = None,
    query_table: Annotated[str, typer.Option("--query-table", help="SQLite: the table or view of queries")] = None,
    id_column: Annotated[str, typer.Option("--id-column")] = "_id",
    text_column: Annotated[str, typer.Option("--text-column")] = "text",
    title_column: Annotated[str, typer.Option("--title-column")] = "title",
    query_id_column: Annotated[str, typer.Option("--query-id-column")] = "_id",
    query_text_column: Annotated[str, typer.Option("--query-text-column")] = "text",
    ignore_identical_ids: Annotated[bool, typer.Option("--ignore-identical-ids", help="query ids are document ids (BEIR's ArguAna, Quora): a query's own document is no answer")] = False,
):
    """Bring a collection of your own, without judgments, into a BEIR folder with a manifest."""
    where = write_collection(out, corpus, queries,
                             corpus_columns=Columns(id_column, text_column, title_column),
                             query_columns=Columns(query_id_column, query_text_column, None),
                             table=table, query_table=query_table,
                             ignore_identical_ids=ignore_identical_ids)
    m = json.loads((where / MANIFEST).read_text())
    nq = (m["queries"] or {}).get("queries", 0)
    _say(f"wrote {where}: {m['corpus']['documents']} documents, {nq} queries, no judgments yet "
         f"({MANIFEST} says where each came from)")


@app.command()
def retrieve(
    dataset: Annotated[str, typer.Argument(help="a dataset name or folder (or use --suite)")] = None,
    suite: Annotated[str, typer.Option("--suite", help="every collection of a suite (datasets/suites.toml)")] = None,
    retriever: Annotated[list[str], typer.Option("-r", "--retriever",
                                                 help="kind[:variant][;key=value]: bm25[:jieba], fts5[:phrase|:and_tokens|:titan|:jieba|:trigram], dense[:ann|:onnx|:torch|:onnx-int8-vnni], rank_bm25[:jieba], entity, graph; repeatable")] = None,
    split: Annotated[list[str], typer.Option("--split", help="repeatable")] = None,
    depth: Annotated[int, typer.Option(help="results per query")] = 1000,
    force: Annotated[bool, typer.Option("--force", help="Recompute even when cached.")] = False,
    metric: Metrics = None,
    granularity: Annotated[str, typer.Option(help="fts5 retrievers: one of: doc, span (sentences)")] = None,
    seed: Annotated[str, typer.Option(help="graph retrievers: the retriever whose top results seed the walk")] = None,
    hops: Annotated[int, typer.Option(help="graph retrievers: hops from the seeds")] = None,
    scheduler: Scheduler = None,
    workers: Workers = None,
    allow_missing: AllowMissing = False,
):
    """Retrieve (or reuse cached) runs and print their metrics.

    Spec options can also be written inline: ``-r 'fts5;granularity=span'``,
    ``-r 'graph;seed=bm25;hops=1'``. With ``--workers``/``--scheduler`` dense corpora are
    encoded in shards on a Dask cluster (same numbers as in-process).
    """
    with cluster(scheduler, workers):
        scores = retrieve_table(dataset, retriever or ["bm25"], split, depth, force, metric,
                                suite, granularity, seed, hops, log=_log,
                                allow_missing=allow_missing)
    _show(scores.title, scores.table())


@app.command("evaluate")
def evaluate_cmd(
    run_file: Path,
    dataset: Annotated[str, typer.Option("--dataset", "-d")],
    split: str = "test",
    metric: Metrics = None,
    as_json: Json = False,
):
    """Score a TREC run file against a dataset's qrels."""
    _scored(evaluate_file(run_file, dataset, split, metric), as_json)


# --------------------------------------------------------------------------- fusion
@app.command()
def fuse(
    dataset: str,
    retriever: Annotated[list[str], typer.Option("-r", "--retriever", help="repeatable; default bm25, dense")] = None,
    k: Annotated[str, typer.Option(help="one k, or one per run: 60 or 60,20")] = "60",
    weights: Annotated[str, typer.Option(help="one per run, e.g. 0.7,0.3")] = None,
    depth: Annotated[str, typer.Option(help="candidate depth, one or one per run (all = whole run)")] = "all",
    rank_base: Annotated[int, typer.Option(help=f"{_one_of(RANK_BASES)}; 1: w/(k+rank) (Cormack); 0: w/(k+i), i from 0 (Zeus)")] = 1,
    limit: Annotated[int, typer.Option(help="cut the fused list (0 = no cut)")] = 0,
    method: Annotated[str, typer.Option(help=_one_of(METHODS))] = "rrf",
    norm: Annotated[str, typer.Option(help=f"score fusion: {_one_of(NORMALISATIONS)}")] = "minmax",
    missing: Annotated[str, typer.Option(help=f"score fusion: {_one_of(MISSING)}")] = "zero",
    split: str = "test",
    metric: Metrics = None,
    output: Annotated[Path, typer.Option("-o", "--output", help="also write the fused run (TREC)")] = None,
    config: Annotated[Path, typer.Option("--config", help="apply a saved configuration (a best.json of sweep, of a suite, or of adapt: per-query policy)")] = None,
    which: Which = "config",
    as_json: Json = False,
):
    """Fuse runs with one configuration and print its metrics."""
    log = _quiet if as_json else _log
    if config is not None:
        return _scored(apply_config(dataset, config, which, split, metric, output, log), as_json)
    out = fuse_runs(dataset, retriever or ["bm25", "dense"], method=method,
                    k=parse_numbers("--k", k),
                    weights=parse_numbers("--weights", weights) if weights else None,
                    depth=parse_depths("--depth", depth), rank_base=rank_base, limit=limit,
                    norm=norm, missing=missing, split=split, metrics=metric, output=output,
                    log=log)
    _scored(out, as_json)


# the sweep grid's k values as the option's default text (one list, rrfbench.workflows.dataset)
DEFAULT_K_TEXT = ",".join(str(k) for k in DEFAULT_KS)


@app.command()
def sweep(
    dataset: Annotated[str, typer.Argument(help="a dataset (or use --suite)")] = None,
    suite: Annotated[str, typer.Option("--suite", help="tune across a suite's collections; validate leave-one-collection-out")] = None,
    objective: Objective = "macro",
    rule: Rule = DEFAULT_RULE,
    retriever: Annotated[list[str], typer.Option("-r", "--retriever", help="repeatable; default bm25, fts5, dense")] = None,
    k: Annotated[str, typer.Option(help="comma-separated k values")] = DEFAULT_K_TEXT,
    weights: Annotated[list[str], typer.Option(help="weight vectors (repeatable); default: simplex grid")] = None,
    weight_step: Annotated[float, typer.Option(help="simplex grid step")] = 0.1,
    depth: Annotated[str, typer.Option(help="candidate depths, comma-separated (all = whole run)")] = "all",
    per_run_k: Annotated[bool, typer.Option("--per-run-k", help="One k per run (product grid).")] = False,
    method: Annotated[list[str], typer.Option(help=f"repeatable; {_one_of(METHODS)} (default: all)")] = None,
    metric: str = "nDCG@10",
    tune_split: Annotated[str, typer.Option(help="split to tune on")] = None,
    eval_split: Annotated[str, typer.Option(help="split to report on")] = None,
    folds: Annotated[int, typer.Option(help="k-fold CV over the evaluation split's queries")] = 0,
    run_depth: Annotated[int, typer.Option(help="depth of the retrieved runs")] = 1000,
    out: Annotated[Path, typer.Option(help="output folder (default results/<dataset>)")] = None,
    progress: Progress = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print best.json.")] = False,
    scheduler: Scheduler = None,
    workers: Workers = None,
    allow_missing: AllowMissing = False,
    current: Annotated[str, typer.Option("--current", help="the fusion you run today, as rrfbench labels it (e.g. 'rrf k=60 w=0.3,0.7', one weight per -r): compared with the tuned one on the same held-out queries")] = None,
):
    """Sweep fusion configurations, tune honestly; write sweep tables, best.json, plots, report.md.

    With --suite: one sweep over every collection of the suite, the leave-one-collection-out
    table and a verdict on whether the tuned constants transfer (results/transfer/<suite>/).
    """
    if current and suite:
        raise InputError("--current: compares on one dataset's held-out queries; give DATASET")
    if current:   # checked before any work: one line naming what is wrong
        n = len(retriever or ["bm25", "fts5", "dense"])
        parse_current(current, n, (retriever or ["bm25", "fts5", "dense"]))
    with cluster(scheduler, workers) as client:
        so = sweep_any(dataset, suite, retriever or ["bm25", "fts5", "dense"],
                       methods=method or METHODS, k=parse_numbers("--k", k),
                       weights=[tuple(parse_numbers("--weights", w)) for w in weights] if weights else None,
                       weight_step=weight_step, depth=parse_depths("--depth", depth),
                       per_run_k=per_run_k, objective=objective, rule=rule, metric=metric,
                       tune_split=tune_split, eval_split=eval_split, folds=folds,
                       run_depth=run_depth, out=out, progress=progress, client=client,
                       allow_missing=allow_missing, log=_quiet if as_json else _log)
    vs = against_current(so.result, as_dataset(dataset), current, metric) if current else None
    if not as_json:
        _render(so.view())
        if vs:
            _say(f"your current fusion {vs['current']}: {vs['metric']} {vs['current_value']:.4f} "
                 f"on the {vs['queries']} {vs['split']} queries; tuned {vs['tuned']} "
                 f"{vs['tuned_value']:.4f} ({vs['delta']:+.4f}, paired permutation p "
                 f"{vs['p_value']:.4g})")
        return None
    d = so.result.to_json()
    d = d if suite else {k: v for k, v in d.items() if k != "per_query"}
    print(json.dumps(d | ({"vs_current": vs} if vs else {})))


@app.command()
def adapt(
    suite: Annotated[str, typer.Option("--suite", help="the suite to train and validate on (datasets/suites.toml)")] = "en",
    retriever: Annotated[list[str], typer.Option("-r", "--retriever", help="repeatable; default bm25, fts5, dense")] = None,
    preset: Annotated[str, typer.Option("--preset", "-p", help="choose among a studied system's own knob settings (vs its shipped values)")] = None,
    candidates: Annotated[int, typer.Option("--candidates", help="K: configurations a query chooses from (static default + K-1)")] = N_CANDIDATES,
    policy: Annotated[list[str], typer.Option("--policy", help=f"repeatable; kinds to try: {_one_of(KINDS)} (default: all)")] = None,
    features: Annotated[str, typer.Option("--features", help=f"{_one_of(FEATURE_SETS)} (portable: from the query and result lists only)")] = "portable",
    metric: str = "nDCG@10",
    rule: Rule = DEFAULT_RULE,
    progress: Progress = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print best.json.")] = False,
    allow_missing: AllowMissing = False,
):
    """Learn per-query fusion (query features -> one of K configurations) across a suite and
    validate it leave-one-collection-out against the static suite default; write
    results/adaptive/<suite>/ (best.json with the portable policy, report.md, headroom.png).

    Apply it with `rrfbench fuse DATASET --config results/adaptive/<suite>/best.json` (a
    preset's: `rrfbench preset DATASET -p NAME --config results/adaptive/<suite>/presets/NAME/best.json`).
    """
    so = adapt_suite(suite, check_specs(retriever or list(DEFAULT_SPECS)), preset=preset,
                     n_candidates=candidates,
                     kinds=policy or list(KINDS), features=features, metric=metric, rule=rule,
                     progress=progress and not as_json, allow_missing=allow_missing,
                     log=_quiet if as_json else _log)
    if as_json:
        return print(json.dumps(so.result.to_json()))
    _render(so.view())


app.command()(judge)


# --------------------------------------------------------------------------- demo
@app.command()
def demo(
    dataset: str = typer.Argument("scifact"),
    retriever: Annotated[list[str], typer.Option("-r", "--retriever")] = None,
    metric: str = "nDCG@10",
    suite: Annotated[str, typer.Option(help="end with transfer across this suite ('none' to skip)")] = "en",
    progress: Progress = True,
    allow_missing: AllowMissing = False,
):
    """The main job: retrieve, sweep (tuned and reported honestly), the studied systems, and
    transfer across the English collections (leave-one-collection-out).

    Prints the single retrievers, the tuned fusion vs baselines, the presets, and each stage's
    time; a second run reuses every cached run, embedding, sweep and preset tuning.
    """
    _render(run_demo(dataset, check_specs(retriever or list(DEFAULT_SPECS)), metric,
                     progress=progress, suite=None if suite.lower() == "none" else suite,
                     allow_missing=allow_missing, show=_render, log=_log).view())


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
    which: Which = "config",
    streams: Annotated[str, typer.Option(help="one of: default (two streams), full (every stream rrfbench models for the system)")] = "default",
    output: Annotated[Path, typer.Option("-o", "--output", help="also write the system's fused run (TREC)")] = None,
    stream: Streams = None,
    as_json: Json = False,
):
    """Evaluate a studied system as shipped (or with --set knob=value, or --config best.json)."""
    with using_streams(stream):
        get_system(preset)                       # a wrong --stream: one line before any work
        _scored(evaluate_preset(dataset, preset, split, param or [], config, which, limit,
                                prior, streams, output), as_json)


@app.command()
def tune(
    dataset: Annotated[str, typer.Argument(help="a dataset (or use --suite)")] = None,
    preset: Annotated[str, typer.Option("--preset", "-p")] = None,
    suite: Annotated[str, typer.Option("--suite", help="tune across a suite; validate leave-one-collection-out vs the shipped values")] = None,
    objective: Objective = "macro",
    rule: Rule = DEFAULT_RULE,
    metric: str = "nDCG@10",
    tune_split: str = None,
    eval_split: str = None,
    folds: Annotated[int, typer.Option(help="k-fold CV (0: the dataset's default protocol)")] = 0,
    progress: Progress = True,
    allow_missing: AllowMissing = False,
    stream: Streams = None,
):
    """Tune a studied system within its own knobs; write results/<dataset>/presets/<preset>/best.json
    (with --suite: results/transfer/<suite>/presets/<preset>/)."""
    if stream and not preset:
        raise InputError("--stream: the roles of a studied system or engine mode; give -p SYSTEM")
    with using_streams(stream):
        if preset:
            get_system(preset)                   # a wrong --stream: one line before any work
        _render(tune_any(dataset, preset, suite, metric, objective, rule, tune_split,
                         eval_split, folds, progress=progress, allow_missing=allow_missing,
                         log=_log).view())


@app.command()
def export(
    best_json: Path,
    to: Annotated[str, typer.Option("--to", "--format", help=f"generic, a studied system's or an engine's own: {_one_of(formats())}")],
    output: Annotated[Path, typer.Option("-o", "--output")] = None,
    which: Annotated[str, typer.Option(help=f"with a suite result: {_one_of(WHICH[::-1])} (recommended: what the verdict supports; config: selected)")] = "recommended",
    engine_version: Annotated[str, typer.Option("--engine-version", help="an engine mode's version range to target (default: the one tuned for, else the newest verified; see rrfbench engines --json)")] = None,
):
    """Render tuned constants in a target system's configuration shape."""
    text = export_result(best_json, to, which, output, engine_version)
    _say(f"wrote {output}") if output else sys.stdout.write(text)


@app.command()
def engines(
    dataset: Annotated[str, typer.Argument(help="a dataset (or use --suite)")] = None,
    suite: Annotated[str, typer.Option("--suite", help="tune across a suite's collections; validate leave-one-collection-out")] = None,
    engine: Annotated[list[str], typer.Option("--engine", help=f"repeatable; {_one_of(ENGINES)} (default: all)")] = None,
    metric: str = "nDCG@10",
    progress: Progress = True,
    allow_missing: AllowMissing = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print engines.json.")] = False,
    output: Annotated[Path, typer.Option("-o", "--output", help="a folder: also write each mode's fused run, at its defaults and tuned (TREC)")] = None,
    stream: Annotated[list[str], typer.Option("--stream", help="your own streams in every mode's roles: keyword=SPEC, dense=SPEC (repeatable), e.g. keyword=run:bm25.trec")] = None,
):
    """The engine table: each search engine's fusion modes tuned within their own knobs, against
    their defaults and the best free fusion of the same streams (results/<dataset>/engines.json,
    or results/transfer/<suite>/)."""
    for e in engine or []:
        spaces_of(e)  # an unknown engine: one line listing the engines
    for entry in stream or []:
        if entry.partition("=")[0].strip() not in ("keyword", "dense", "vector"):
            raise InputError(f"--stream: {entry!r}: an engine mode's roles are keyword and "
                             "dense (or vector)")
    with using_streams(stream):
        t = engine_table(dataset, suite, engine, metric, progress=progress and not as_json,
                         allow_missing=allow_missing, log=_quiet if as_json else _log,
                         runs_dir=output)
    if as_json:
        return print(json.dumps(t.to_json()))
    _show(f"{t.scope}: each engine's fusion, tuned within its knobs ({t.metric}, held out)",
          t.table().drop(columns=["verified against"]))
    _show("the best mode of each engine", t.best_modes())


@app.command("explain")
def explain_cmd(
    dataset: str,
    qid: str,
    config: Annotated[Path, typer.Option("--config", help="a best.json: fusion sweep, suite, or preset result")] = None,
    split: str = "test",
    top: Annotated[int, typer.Option(help="rows: the fused top N")] = 10,
    which: Which = "config",
):
    """Explain one query: per run its rank, score and contribution to the fused score (with an
    adaptive policy: also the query's features, each candidate's utility and the static default)."""
    _render(explain_view(dataset, qid, config, split, top, which, log=_log))


@app.command("compare")
def compare_cmd(
    a: Path,
    b: Path,
    movers: Annotated[int, typer.Option(help="queries that moved most, each way")] = 5,
):
    """Compare two saved results on the same queries: per-query deltas and paired tests."""
    rep = compare(load_result(a), load_result(b))
    _render(rep.view(movers)[:1])
    if rep.overlap_line():
        _warn(rep.overlap_line())
    _render(rep.view(movers)[1:])


@app.command()
def presets():
    """List the studied systems, their knobs and their fidelity notes."""
    _say(*presets_lines())


@app.command()
def regress(
    baselines: Annotated[Path, typer.Option("--baselines", help="default: results/baselines.json of the project")] = None,
    margin: Annotated[float, typer.Option("--margin", "--tolerance", help="mean loss a FAIL must exceed (default: the file's rule, 0.005)")] = None,
    update: Annotated[bool, typer.Option("--update", help="recompute every entry (dense too) and rewrite means and per-query values")] = False,
    compute_all: Annotated[bool, typer.Option("--all", help="also compute uncached dense encodings")] = False,
):
    """Recompute baseline metrics; exit 1 if one got worse by more than the margin, significantly."""
    out = R.regress(baselines, margin, update, compute_all)
    _render(out.view())
    if out.failed:
        raise typer.Exit(1)


# --------------------------------------------------------------------------- entry point
def main(argv: list[str] | None = None) -> None:
    """Entry point: run the app; every failure ends in one line and an exit code (0, 1 or 2)
    (:func:`rrfbench.core.exits.run_app`)."""
    sys.exit(run_app(app, list(sys.argv[1:] if argv is None else argv), _warn))


if __name__ == "__main__":
    main()
