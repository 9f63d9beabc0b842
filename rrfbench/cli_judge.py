"""The ``rrfbench judge`` command: deciding on a collection from a few judgments (a person in
the terminal or a sheet, several graders on one log, their agreement) and grading that decision
by simulation. Registered on the command line's ``app`` by :mod:`rrfbench.cli`; its own module
because its options and paths are many."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated

import typer

from .cli_common import Streams, _log, _one_of, _quiet, _say, _show
from .core.errors import InputError
from .judging.decide import METHODS as JUDGE_METHODS
from .judging.log import JudgmentLog
from .systems.registry import get_system, using_streams
from .workflows.judge import BUDGETS, SPECS, check_streams, judge_simulated
from .workflows.judging_session import (
    default_log,
    import_sheet,
    judge_terminal,
    open_session,
    write_sheet,
)
from .workflows.judging_table import headline, simulation_all, simulation_summary, simulation_table
from .workflows.options import parse_numbers


def judge(
    dataset: Annotated[str, typer.Argument(help="the collection to decide for: a name or a BEIR folder (with --all: ignored)")] = None,
    simulate: Annotated[bool, typer.Option("--simulate", help="judge with the collection's own qrels, hidden from everything but the simulated judge, and grade the decision")] = False,
    budget: Annotated[int, typer.Option("--budget", help="judgments at most")] = 200,
    method: Annotated[str, typer.Option("--method", help=f"which pairs to judge: {_one_of(JUDGE_METHODS)} (sample: a probability sample and an unbiased estimate; the others are baselines)")] = "sample",
    suite: Annotated[str, typer.Option("--suite", help="the suite whose advice is the prior")] = "en",
    every: Annotated[bool, typer.Option("--all", help=f"every collection of the suite, budgets {','.join(map(str, BUDGETS))}, every method: writes results/judging/<suite>/")] = False,
    sheet: Annotated[Path, typer.Option("--sheet", help="write the next batch to judge as a TSV to fill in (grade column empty), and stop")] = None,
    import_: Annotated[Path, typer.Option("--import", help="read a filled sheet back into the judgments, and show the decision")] = None,
    batch: Annotated[int, typer.Option("--batch", help="pairs per batch (the decision is updated after each)")] = 10,
    scale: Annotated[str, typer.Option("--scale", help="the grades allowed, e.g. 0,1 or 0,1,2")] = "0,1",
    split: Annotated[str, typer.Option("--split", help="the queries to judge (default: every query)")] = None,
    log_path: Annotated[Path, typer.Option("--log", help="the judgments file (default: results/judging/collections/<name>/judgments.jsonl)")] = None,
    qrels_out: Annotated[Path, typer.Option("--qrels-out", help="also write the judgments as BEIR qrels (query-id, corpus-id, score)")] = None,
    preset: Annotated[str, typer.Option("--preset", "-p", help="a studied system or engine mode: its shipped knobs against what the suite selects for it (default: free fusion, RRF k=60)")] = None,
    param: Annotated[list[str], typer.Option("--set", help="with -p: your current knob=value (repeatable)")] = None,
    stream: Streams = None,
    retriever: Annotated[list[str], typer.Option("-r", "--retriever", help="free fusion's three streams in the suite's order (bm25, fts5, dense), yours in their place, e.g. -r run:engine.trec -r fts5 -r vectors:emb.parquet")] = None,
    current: Annotated[str, typer.Option("--current", help="free fusion: the fusion you run today, as rrfbench labels it, e.g. 'rrf k=60 w=0,0.3,0.7' (streams bm25, fts5, dense)")] = None,
    systems: Annotated[bool, typer.Option("--systems", help="with --simulate --all: free fusion, every studied system and every engine mode, and the table over all of them (results/judging/<suite>/all/)")] = False,
    grader: Annotated[str, typer.Option("--grader", help="who is grading (recorded with each judgment; several graders may judge one log at once)")] = "person",
    overlap: Annotated[float, typer.Option("--overlap", help="share of pairs also put to a second grader, for agreement (e.g. 0.1)")] = 0.0,
    agreement: Annotated[bool, typer.Option("--agreement", help="report Cohen's kappa between the graders of the log on the pairs both graded, and stop")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the decision as JSON.")] = False,
):
    """Decide between the current constants (RRF k=60) and the suite's advice from a few
    judgments chosen for the decision: a person judges in the terminal (default) or in a sheet
    (--sheet, then --import); --simulate grades the decision with a collection's own qrels."""
    if agreement:
        return _agreement(dataset, log_path, as_json)
    if stream and not preset:
        raise InputError("--stream: the roles of a studied system or engine mode; give -p SYSTEM")
    if retriever and preset:
        raise InputError("-r: free fusion's streams; a system's roles take --stream role=spec")
    streams = check_streams(retriever) if retriever else None
    with using_streams(stream):
        return _judge(dataset, simulate, budget, method, suite, every, sheet, import_, batch,
                      scale, split, log_path, qrels_out, preset, param, current, systems, grader,
                      overlap, as_json, streams)


def _judge(dataset, simulate, budget, method, suite, every, sheet, import_, batch, scale, split,
           log_path, qrels_out, preset, param, current, systems, grader, overlap, as_json,
           streams=None):
    if preset:
        get_system(preset)                       # a wrong -p or --stream: one line, first
    settings = get_system(preset).parse_settings(param) if preset and param else (
        {"_": param} if param else None)
    if systems and not every:
        raise InputError("--systems: goes with --simulate --all (the table over every fusion)")
    if systems:
        if streams:
            raise InputError("--systems -r: the table over every fusion uses the suite's streams")
        if preset:
            raise InputError("--systems -p: --systems covers every system; leave -p out")
        t = simulation_all(suite, log=_quiet if as_json else _log)
        s = simulation_summary(t)
        if as_json:
            return print(json.dumps(s.round(4).to_dict("records")))
        _show(f"suite {suite}: every fusion, decisions right by judgments", s)
        return _say(headline(s))
    if simulate or every:
        return _judge_simulated(dataset, budget, method, suite, every, as_json, preset, settings,
                                current, streams)
    if dataset is None:
        raise InputError("judge: name a collection (a name or a BEIR folder)")
    grades = [int(g) for g in parse_numbers("--scale", scale)]
    if import_ is not None and not import_.is_file():
        raise InputError(f"--import: {import_}: file not found")   # before any retrieval
    if not 0.0 <= overlap <= 1.0:
        raise InputError(f"--overlap: {overlap} is not a share between 0 and 1")
    session = open_session(dataset, suite, split, log_path, grades, method, batch, budget,
                           log=_quiet if as_json else _log, system=preset, settings=settings,
                           grader=grader, overlap=overlap, current=current, streams=streams)
    if sheet is not None:
        out = write_sheet(session, sheet)
        return _say(f"{out}: {len(session.next_batch())} pairs to grade "
                    f"({', '.join(map(str, session.log.scale))}); read it back with "
                    f"rrfbench judge {dataset} --import {out}")
    if import_ is not None:
        got = import_sheet(session, import_)
        _say(f"{import_}: {got['added']} judgments added, {got['already']} already there, "
             f"{got['conflicts']} conflicting (kept, shown by the log)")
        status = session.status()
    else:
        status = judge_terminal(session, read=_read_stderr if as_json else input,
                                write=(lambda _: None) if as_json else print)
    if qrels_out is not None:
        session.log.write_qrels(qrels_out)
    if as_json:
        return print(json.dumps(status))
    _say(f"{status['collection']}: {'take' if status['take_change'] else 'keep'} -> "
         f"{status['decision']} (current: {status['current']}); {status['judgments']} judgments; "
         f"{status['why']}")


def _agreement(dataset, log_path, as_json):
    """``judge --agreement``: Cohen's kappa between every two graders of the log."""
    if log_path is None and dataset is None:
        raise InputError("judge --agreement: name the collection or give --log")
    path = Path(log_path) if log_path is not None else default_log(Path(dataset).name)
    if not path.is_file():
        raise InputError(f"--agreement: {path}: no judgments (file not found)")
    table = JudgmentLog(path, scale=range(-9, 100)).agreement()
    if as_json:
        return print(json.dumps(table.round(4).to_dict("records")))
    if table.empty:
        return _say(f"{path}: no pair was graded by two graders (ask for an overlap: "
                    "--overlap 0.1)")
    _show(f"{path}: agreement between graders", table)


def _read_stderr(prompt: str) -> str:
    """A line of stdin, the prompt on stderr (stdout holds only the JSON)."""
    sys.stderr.write(prompt)
    sys.stderr.flush()
    line = sys.stdin.readline()
    if not line:
        raise EOFError
    return line


def _judge_simulated(dataset, budget, method, suite, every, as_json, preset=None, settings=None,
                     current=None, streams=None):
    streams = streams or SPECS
    if every:
        if current:
            raise InputError("--all --current: the simulation grades the suite's default; give "
                             "a collection to judge your own fusion")
        if settings:
            raise InputError("--all --set: the simulation grades the shipped knobs; give a "
                             "collection to judge your own values")
        s = simulation_summary(simulation_table(suite, log=_quiet if as_json else _log,
                                                system=preset, streams=streams))
        if as_json:
            return print(json.dumps(s.round(4).to_dict("records")))
        _show(f"suite {suite}: decisions right by judgments", s)
        return _say(headline(s))
    row = judge_simulated(dataset, suite, budget, method, log=_quiet if as_json else _log,
                          system=preset, settings=settings, current=current, streams=streams)
    if as_json:
        return print(json.dumps(row))
    _say(f"{row['collection']}: {'take' if row['take_change'] else 'keep'} -> {row['decision']} "
         f"(current: {row['current']}); {row['judgments']} judgments; {row['why']}",
         f"graded with the full qrels: {'right' if row['right'] else 'wrong'}, regret {row['regret']:.4f} nDCG@10")
