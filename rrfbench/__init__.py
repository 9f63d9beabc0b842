"""rrfbench: measure and tune reciprocal rank fusion over real runs and qrels.

The public API is a few verbs and the types they use, declared here and nowhere else
(:data:`__all__`); everything lives in its own module (``rrfbench.fusion``,
``rrfbench.engine``, ``rrfbench.tuning``, ``rrfbench.presets``...). This module only
re-exports, and lazily: a public name imports its module on first use, so ``import
rrfbench.results`` (reading a saved best.json) loads no retriever, engine or numba, and
``import rrfbench`` stays fast. No public name here is also the name of a submodule, so import
order never changes what ``rrfbench.<name>`` is.
"""

from __future__ import annotations

import importlib

from ._portable_math import cap_math_libraries
from ._version import __version__

cap_math_libraries()  # before anything of rrfbench can import torch (rrfbench._portable_math)

# public name -> (module, attribute)
_EXPORTS = {
    "Dataset": ("datasets", "Dataset"), "load_dataset": ("datasets", "load_dataset"),
    "Run": ("runs", "Run"), "Qrels": ("runs", "Qrels"),
    "SweepResult": ("results", "SweepResult"), "PresetResult": ("results", "PresetResult"),
    "AdaptiveResult": ("suite_results", "AdaptiveResult"), "load_result": ("results", "load_result"),
    "Advice": ("advice", "Advice"), "load_advice": ("advice", "load_advice"),
    "InputError": ("errors", "InputError"), "RrfbenchError": ("errors", "RrfbenchError"),
    "CoverageWarning": ("errors", "CoverageWarning"),
    "ValidationWarning": ("errors", "ValidationWarning"),
    "evaluate": ("evaluation", "evaluate"), "evaluate_per_query": ("evaluation",
                                                                   "evaluate_per_query"),
    "coverage": ("evaluation", "coverage"),
    "fuse": ("fusion", "rrf"), "score_fusion": ("fusion", "score_fusion"),
    "retrieve": ("workflows", "retrieve"), "sweep": ("workflows", "sweep_dataset"),
    "tune": ("workflows", "tune_preset_on"),
    "sweep_suite": ("suite_workflows", "sweep_suite"),
    "tune_suite": ("suite_workflows", "tune_preset_suite"),
    "adapt": ("suite_workflows", "adapt_suite"), "advise": ("suite_workflows", "advise"),
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
