"""The package face's verbs that wrap a module's function with the defaults most callers want
(:mod:`rrfbench` re-exports them): explain a query, compare two configurations, the live
explorer, export a result."""

from __future__ import annotations

import os

from .outputs.explanations import compare as _compare
from .outputs.explanations import explain as _explain
from .outputs.exporters import render as _render
from .results.dataset import load_result
from .workflows.explorer import explore as _explore


def explain(runs, config, qid, qrels=None, top: int = 10):
    """How one query's fused top ``top`` came about; see :func:`rrfbench.outputs.explanations.explain`."""
    return _explain(runs, config, qid, qrels, top)


def compare(a, b, runs=None, qrels=None, metric: str = "nDCG@10"):
    """Per-query deltas and paired tests of two configurations or saved results; see
    :func:`rrfbench.outputs.explanations.compare`."""
    return _compare(a, b, runs, qrels, metric)


def explore(dataset, runs=None, split: str = "test", best=None):
    """A live fusion explorer widget for notebooks; see :mod:`rrfbench.workflows.explorer`."""
    return _explore(dataset, runs, split, best=best)


def export(result, fmt: str, which: str = "recommended") -> str:
    """Render a result (or a saved best.json path) in a target system's configuration shape
    (``which="config"``: the selected configuration or learned policy rather than the
    recommended one); see :func:`rrfbench.outputs.exporters.render`."""
    r = load_result(result) if isinstance(result, (str, os.PathLike)) else result
    return _render(r, fmt, which=which)

