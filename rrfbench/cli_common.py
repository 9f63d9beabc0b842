"""What every ``rrfbench`` command shares: the console, how tables, lines and warnings are
printed, and the option types several commands take. Part of the command line
(:mod:`rrfbench.cli`); nothing below the command line imports it."""

from __future__ import annotations

import json
import sys
from typing import Annotated

import pandas as pd
import typer
from rich.console import Console
from rich.table import Table

from .outputs.report import cells
from .results.values import WHICH
from .tuning.selection import OBJECTIVES, RULES


def _one_of(values) -> str:
    return "one of: " + ", ".join(map(str, values))


# off a terminal (CI logs, pipes) tables keep their full cell text: no "semant…" cut-offs
console = Console() if Console().is_terminal else Console(width=100_000, soft_wrap=True)


def _rich(title: str, df) -> Table:
    """A DataFrame as a rich table, cells as in report.md (:func:`rrfbench.outputs.report.cells`)."""
    cols, rows = cells(df)
    t = Table(title=title)
    for c in cols:
        t.add_column(c, justify="right" if df[c].dtype.kind in "iuf" else "left", overflow="fold")
    [t.add_row(*r) for r in rows]
    return t


def _table(title: str, rows: list[dict]) -> Table:
    return _rich(title, pd.DataFrame(rows))


def _show(title: str, df) -> None:
    console.print(_rich(title, df))


def _say(*lines: str) -> None:
    for line in lines:
        console.print(line, highlight=False)


def _log(msg: str) -> None:
    console.print(f"[dim]{msg}[/dim]", highlight=False)


def _quiet(_msg: str) -> None: ...


def _warn(msg: str) -> None:
    print(f"warning: {msg}", file=sys.stderr, flush=True)


def _render(view) -> None:
    """An outcome's ``view()``: ``(title, DataFrame)`` tables and lines of text."""
    for item in view:
        _say(item) if isinstance(item, str) else _show(*item)


def _scored(out, as_json: bool) -> None:
    """A :class:`rrfbench.workflows.dataset.Scored`: one JSON object, or its table and notes."""
    print(json.dumps(out.to_json())) if as_json else _render(out.view())
    for w in [] if as_json else out.warnings:
        _warn(w)


Metrics = Annotated[list[str], typer.Option("-m", "--metric", help="repeatable, e.g. nDCG@10, R@100")]
Json = Annotated[bool, typer.Option("--json", help="Print one JSON object.")]
Progress = Annotated[bool, typer.Option(help="Progress bars.")]
Which = Annotated[str, typer.Option(help=f"with a suite result: {_one_of(WHICH)} (config: the "
                                    "selected one; recommended: what the verdict supports)")]
Scheduler = Annotated[str, typer.Option(help="run on a Dask scheduler, e.g. tcp://host:8786")]
Workers = Annotated[int, typer.Option(help="run on a local Dask cluster of N worker processes")]
Objective = Annotated[str, typer.Option(help=f"suite: {_one_of(OBJECTIVES)}")]
AllowMissing = Annotated[bool, typer.Option("--allow-missing", help="suite: run on the collections present when some are not on the search path")]
Rule = Annotated[str, typer.Option(help=f"suite: {_one_of(RULES)} (nbr: best neighbourhood "
                                   "average within one standard error of the best; 1se: closest "
                                   "to the default among those)")]


Streams = Annotated[list[str], typer.Option("--stream", help="a studied system's or engine mode's role from your own stream, role=spec (repeatable), e.g. keyword=run:fts.trec, dense=vectors:emb.parquet; roles: the system's own names, or dense / keyword")]
