"""pyproject.toml is the one source of truth; environment.yml must mirror it exactly."""

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]


def _norm(spec: str) -> tuple[str, str]:
    spec = spec.replace(" ", "")
    name = re.split(r"[<>=!~;\[]", spec)[0]
    return name.lower().replace("_", "-"), spec[len(name):]


def test_environment_yml_mirrors_pyproject():
    py = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_norm(d) for d in py["dependencies"]}
    for extra in py["optional-dependencies"].values():
        wanted |= {_norm(d) for d in extra}
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    have = set()
    for d in env["dependencies"]:
        if isinstance(d, dict):
            have |= {_norm(x) for x in d["pip"] if not x.startswith("-e")}
        elif not d.startswith(("python", "pip")):
            have.add(_norm(d))
    assert have == wanted, {"missing from environment.yml": wanted - have,
                            "not in pyproject.toml": have - wanted}


def test_console_script_and_python_version():
    py = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert py["scripts"]["rrfbench"] == "rrfbench.cli:main"
    assert py["requires-python"] == ">=3.11"
    assert {"dense", "dev", "notebooks"} <= set(py["optional-dependencies"])


def test_import_is_light():
    import subprocess
    import sys

    code = ("import sys, rrfbench; heavy = {'torch', 'sentence_transformers', 'ranx', 'bm25s', "
            "'numba', 'matplotlib'} & set(sys.modules); print(sorted(heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
