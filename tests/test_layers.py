"""The house's layers: each part of the package imports only the parts below it.

The order is written once, here (``LAYERS``, bottom first); a module's part is its first
folder under ``rrfbench/`` (``rrfbench/fusion/sweep.py``: fusion). Imports at module level and
inside functions alike count. Cycles are checked by ``tests/test_style.py``.
"""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

# bottom first; a part may import its own modules and any part before it
LAYERS = ("ground", "core", "data", "fusion", "results", "retrievers", "systems", "tuning",
          "adaptive", "judging", "outputs", "workflows", "faces")
GROUND = {"_version", "_bytecode", "_bootstrap"}   # leaves anyone may read
FACES = {"__init__", "api", "cli", "cli_common", "cli_judge"}   # the top: nothing below imports them


def part_of(module: str) -> str:
    """``rrfbench.fusion.sweep`` -> ``fusion``; a top-level module -> ground or faces."""
    parts = module.split(".")
    if len(parts) == 1:
        return "faces"
    if len(parts) == 2 and parts[1] in GROUND:
        return "ground"
    if len(parts) == 2 and parts[1] in FACES:
        return "faces"
    return parts[1]


def imports(module: str, source: str, is_package: bool, known: set) -> set:
    """The rrfbench modules ``module`` imports (relative imports resolved)."""
    pkg = module.split(".") if is_package else module.split(".")[:-1]
    out = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(pkg[: len(pkg) - node.level + 1] + ([node.module] if node.module else []))
            elif (node.module or "").startswith("rrfbench"):
                base = node.module
            else:
                continue
            for a in node.names:
                full = f"{base}.{a.name}"
                out.add(full if full in known else base)
        elif isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "rrfbench"}
    return {m for m in out if m in known and m != module}


def package_modules() -> dict:
    mods = {}
    for f in (ROOT / "rrfbench").rglob("*.py"):
        rel = f.relative_to(ROOT).with_suffix("")
        mods[".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)] = f
    return mods


def upward_imports(mods: dict, extra: dict | None = None) -> list:
    """``module -> imported`` for each import that points up a layer (``extra``: module ->
    source to check instead of the file's, for the test that plants one)."""
    known = set(mods)
    bad = []
    for name, f in sorted(mods.items()):
        source = (extra or {}).get(name) or f.read_text()
        mine = LAYERS.index(part_of(name))
        for dep in sorted(imports(name, source, f.name == "__init__.py", known)):
            if LAYERS.index(part_of(dep)) > mine:
                bad.append(f"{name} ({part_of(name)}) imports {dep} ({part_of(dep)})")
    return bad


def test_every_module_belongs_to_a_layer():
    mods = package_modules()
    assert {part_of(m) for m in mods} <= set(LAYERS), {part_of(m) for m in mods} - set(LAYERS)
    # at most six top-level modules: the face, the API, the CLI, the version, the install and
    # the bytecode steps
    top = {m for m in mods if m.count(".") == 1 and not (ROOT / m.replace(".", "/")).is_dir()}
    assert top <= {"rrfbench.api", "rrfbench.cli", "rrfbench.cli_common", "rrfbench.cli_judge",
                   "rrfbench._version", "rrfbench._bytecode",
                   "rrfbench._bootstrap"}, top


def test_imports_point_down_only():
    assert upward_imports(package_modules()) == []


def test_a_planted_upward_import_fails():
    mods = package_modules()
    runs = mods["rrfbench.core.runs"].read_text()
    planted = runs + "\nfrom ..fusion.sweep import FusionEngine\n"
    assert upward_imports(mods, {"rrfbench.core.runs": planted}) == [
        "rrfbench.core.runs (core) imports rrfbench.fusion.sweep (fusion)"]
    lazy = runs + "\ndef f():\n    from ..workflows import demo\n"   # inside a function too
    assert upward_imports(mods, {"rrfbench.core.runs": lazy}) == [
        "rrfbench.core.runs (core) imports rrfbench.workflows.demo (workflows)"]

