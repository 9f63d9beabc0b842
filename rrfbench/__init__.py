"""rrfbench: measure and tune reciprocal rank fusion over real runs and qrels.

The public API is a few verbs and the types they use; everything else lives in its own module
(``rrfbench.fusion``, ``rrfbench.engine``, ``rrfbench.tuning``, ``rrfbench.presets``...). This
module only re-exports: no public name here is also the name of a submodule, so import order
never changes what ``rrfbench.<name>`` is. Heavy libraries (torch, sentence-transformers, ranx,
bm25s, numba) are imported inside the functions that need them, so ``import rrfbench`` stays
fast.
"""

from __future__ import annotations

__version__ = "0.2.0"

from .datasets import Dataset, load_dataset
from .errors import CoverageWarning, InputError, RrfbenchError, ValidationWarning
from .evaluation import coverage, evaluate, evaluate_per_query
from .fusion import rrf as fuse
from .fusion import score_fusion
from .results import PresetResult, SweepResult, load_result
from .runs import Qrels, Run
from .workflows import retrieve
from .workflows import sweep_dataset as sweep
from .workflows import tune_preset_on as tune


def export(result, fmt: str) -> str:
    """Render a result (or a saved best.json path) in a target system's configuration shape;
    see :func:`rrfbench.exporters.render`."""
    import os

    from .exporters import render

    return render(load_result(result) if isinstance(result, (str, os.PathLike)) else result, fmt)


__all__ = ["Dataset", "Run", "Qrels", "SweepResult", "PresetResult", "InputError",
           "RrfbenchError", "CoverageWarning", "ValidationWarning", "load_dataset", "retrieve",
           "evaluate", "evaluate_per_query", "coverage", "fuse", "score_fusion", "sweep",
           "tune", "sweep_suite", "tune_suite", "export", "load_result", "__version__"]
