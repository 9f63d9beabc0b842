"""rrfbench: measure and tune reciprocal rank fusion over real runs and qrels.

The public API is a few verbs and three types; everything else lives in its own module
(``rrfbench.fusion``, ``rrfbench.sweep``, ``rrfbench.presets``...). Heavy libraries (torch,
sentence-transformers, ranx, bm25s) are imported inside the functions that need them, so
``import rrfbench`` stays fast.
"""

from __future__ import annotations

from .datasets import Dataset, load_dataset
from .evaluate import evaluate, evaluate_per_query
from .runs import Qrels, Run

__version__ = "0.1.0"


def retrieve(dataset, retriever: str = "bm25", split: str = "test", depth: int = 1000,
             force: bool = False, **options) -> Run:
    """The run of ``retriever`` (a spec such as ``bm25``, ``fts5:phrase``, ``dense``) on a split.

    Cached under ``results/runs/<dataset>/<split>/``; see :mod:`rrfbench.retrievers.base`.
    """
    from .retrievers import cached_run, make_retriever

    ds = load_dataset(dataset) if isinstance(dataset, str) else dataset
    return cached_run(make_retriever(retriever, **options), ds, split, depth, force).run


def fuse(runs, **kwargs) -> Run:
    """Weighted reciprocal rank fusion of ``runs``; see :func:`rrfbench.fusion.rrf`."""
    from .fusion import rrf

    return rrf(runs, **kwargs)


def sweep(*args, **kwargs):
    """Evaluate a grid of fusion configurations; see :func:`rrfbench.sweep.run_sweep`."""
    from .sweep import run_sweep

    return run_sweep(*args, **kwargs)


def export(best, fmt: str) -> str:
    """Render tuned constants in a target system's configuration shape; see :mod:`rrfbench.export`."""
    from .export import render

    return render(best, fmt)


__all__ = ["Dataset", "Run", "Qrels", "load_dataset", "retrieve", "evaluate",
           "evaluate_per_query", "fuse", "sweep", "export", "__version__"]
