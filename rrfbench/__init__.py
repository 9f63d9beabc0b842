"""rrfbench: measure and tune reciprocal rank fusion over real runs and qrels.

The public API is a few verbs and the types they use, declared here and nowhere else
(:data:`__all__`); everything lives in its own module (``rrfbench.fusion.functions``,
``rrfbench.fusion.sweep``, ``rrfbench.tuning.holdout``, ``rrfbench.systems.presets``...). This module only
re-exports, and lazily: a public name imports its module on first use, so ``import
rrfbench.results.dataset`` (reading a saved best.json) loads no retriever, engine or numba, and
``import rrfbench`` stays fast. No public name here is also the name of a submodule, so import
order never changes what ``rrfbench.<name>`` is.
"""

from __future__ import annotations

import importlib

from ._version import __version__
from .core.portable_math import cap_math_libraries

cap_math_libraries()  # before anything of rrfbench can import torch (rrfbench.core.portable_math)

# public name -> (module, attribute)
_EXPORTS = {
    "Dataset": ("data.datasets", "Dataset"), "load_dataset": ("data.datasets", "load_dataset"),
    "Run": ("core.runs", "Run"), "Qrels": ("core.runs", "Qrels"),
    "SweepResult": ("results.dataset", "SweepResult"), "PresetResult": ("results.dataset", "PresetResult"),
    "AdaptiveResult": ("results.suite", "AdaptiveResult"), "load_result": ("results.dataset", "load_result"),
    "Advice": ("tuning.advice", "Advice"), "load_advice": ("tuning.advice", "load_advice"),
    "InputError": ("core.errors", "InputError"), "RrfbenchError": ("core.errors", "RrfbenchError"),
    "CoverageWarning": ("core.errors", "CoverageWarning"),
    "ValidationWarning": ("core.errors", "ValidationWarning"),
    "evaluate": ("core.evaluation", "evaluate"), "evaluate_per_query": ("core.evaluation",
                                                                   "evaluate_per_query"),
    "coverage": ("core.evaluation", "coverage"),
    "fuse": ("fusion.functions", "rrf"), "score_fusion": ("fusion.functions", "score_fusion"),
    "retrieve": ("workflows.dataset", "retrieve"), "sweep": ("workflows.dataset", "sweep_dataset"),
    "tune": ("workflows.dataset", "tune_preset_on"),
    "sweep_suite": ("workflows.suite", "sweep_suite"),
    "tune_suite": ("workflows.suite", "tune_preset_suite"),
    "adapt": ("workflows.suite", "adapt_suite"), "advise": ("workflows.suite", "advise"),
    "explain": ("api", "explain"), "compare": ("api", "compare"),
    "explore": ("api", "explore"), "export": ("api", "export"),
}

__all__ = [*_EXPORTS, "__version__"]


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'rrfbench' has no attribute {name!r}")
    module, attr = _EXPORTS[name]
    value = getattr(importlib.import_module(f".{module}", __name__), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
