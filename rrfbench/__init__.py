"""rrfbench: measure and tune reciprocal rank fusion over real runs and qrels.

The public API is a few verbs and the types they use; everything else lives in its own module
(``rrfbench.fusion``, ``rrfbench.engine``, ``rrfbench.tuning``, ``rrfbench.presets``...). This
module only re-exports: no public name here is also the name of a submodule, so import order
never changes what ``rrfbench.<name>`` is. Heavy libraries (torch, sentence-transformers, ranx,
bm25s, numba) are imported inside the functions that need them, so ``import rrfbench`` stays
fast.
"""

from __future__ import annotations

import os

from ._version import __version__
from .advice import Advice, load_advice
from .datasets import Dataset, load_dataset
from .errors import CoverageWarning, InputError, RrfbenchError, ValidationWarning
from .evaluation import coverage, evaluate, evaluate_per_query
from .explanations import compare as _compare
from .explanations import explain as _explain
from .explorer import explore as _explore
from .exporters import render as _render
from .fusion import rrf as fuse
from .fusion import score_fusion
from .results import AdaptiveResult, PresetResult, SweepResult, load_result
from .runs import Qrels, Run
from .suite_workflows import adapt_suite as adapt
from .suite_workflows import advise, sweep_suite
from .suite_workflows import tune_preset_suite as tune_suite
from .workflows import retrieve
from .workflows import sweep_dataset as sweep
from .workflows import tune_preset_on as tune


def explain(runs, config, qid, qrels=None, top: int = 10):
    """How one query's fused top ``top`` came about; see :func:`rrfbench.explanations.explain`."""
    return _explain(runs, config, qid, qrels, top)


def compare(a, b, runs=None, qrels=None, metric: str = "nDCG@10"):
    """Per-query deltas and paired tests of two configurations or saved results; see
    :func:`rrfbench.explanations.compare`."""
    return _compare(a, b, runs, qrels, metric)


def explore(dataset, runs=None, split: str = "test", best=None):
    """A live fusion explorer widget for notebooks; see :mod:`rrfbench.explorer`."""
    return _explore(dataset, runs, split, best=best)


def export(result, fmt: str, which: str = "recommended") -> str:
    """Render a result (or a saved best.json path) in a target system's configuration shape
    (``which="config"``: the selected configuration or learned policy rather than the
    recommended one); see :func:`rrfbench.exporters.render`."""
    r = load_result(result) if isinstance(result, (str, os.PathLike)) else result
    return _render(r, fmt, which=which)


__all__ = ["Dataset", "Run", "Qrels", "SweepResult", "PresetResult", "AdaptiveResult", "InputError",
           "RrfbenchError", "CoverageWarning", "ValidationWarning", "load_dataset", "retrieve",
           "evaluate", "evaluate_per_query", "coverage", "fuse", "score_fusion", "sweep",
           "tune", "sweep_suite", "tune_suite", "adapt", "explain", "compare", "explore", "export",
           "load_result", "advise", "Advice", "load_advice", "__version__"]
