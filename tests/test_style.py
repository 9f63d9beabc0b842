"""ruff keeps the code uniform (skipped where ruff is not installed)."""

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


def test_no_import_cycles_at_module_level():
    """Module-level imports between rrfbench modules form no cycle (lazy imports inside
    functions are how optional or upward dependencies are reached)."""
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
        for node in tree.body:  # module level only
            if isinstance(node, ast.ImportFrom) and node.level:
                base = pkg_parts[: len(pkg_parts) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
                for alias in node.names:
                    full = f"{target}.{alias.name}"
                    deps.add(full if full in mods else target)
            elif isinstance(node, ast.Import):
                deps |= {a.name for a in node.names if a.name.startswith("rrfbench")}
        graph[name] = {d for d in deps if d in mods and d != name}

    assert {"rrfbench.fusion", "rrfbench.runs"} <= graph["rrfbench.engine"]  # the parser works
    assert "rrfbench.presets.base" in graph["rrfbench.presets.titan"]

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
