"""pyproject.toml is the one source of truth; environment.yml must mirror it exactly."""

import os
import re
import tomllib
from pathlib import Path

import pytest
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


def test_bytecode_step_covers_what_a_cli_call_and_the_dense_model_import():
    """``make`` installs with ``pip --no-compile`` and then ``python -m rrfbench._bytecode``
    writes the byte-code of what processes import. Where that step ran (a ``.venv`` built by
    ``make``), a fresh process importing the CLI, the workflows, scikit-learn and ONNX Runtime
    compile no installed module from source: nothing in site-packages is compiled again."""
    import subprocess
    import sys

    if not (Path(sys.prefix) / ".bytecode").exists():
        pytest.skip("this environment was not built by make (no .venv/.bytecode)")
    code = "import rrfbench.cli, rrfbench.workflows.dataset, sklearn.ensemble, onnxruntime"
    p = subprocess.run([sys.executable, "-v", "-c", code], capture_output=True, text=True,
                       env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}, check=True)
    site = [ln for ln in p.stderr.splitlines() if ln.startswith("# code object from ")
            and "site-packages" in ln and ln.endswith(".py")]
    assert len(p.stderr.splitlines()) > 1000  # -v did report the imports
    assert not site, f"{len(site)} modules compiled from source, e.g. {site[:5]}"


def test_bytecode_step_refuses_arguments_and_names_what_is_missing():
    import subprocess
    import sys

    from rrfbench._bytecode import warm, warm_parallel

    p = subprocess.run([sys.executable, "-m", "rrfbench._bytecode", "--all"], capture_output=True,
                       text=True)
    assert p.returncode == 2
    assert p.stderr.strip() == "error: python -m rrfbench._bytecode takes no arguments; got --all"
    assert warm(("json", "no_such_module_rrfbench")) == (["json"], ["no_such_module_rrfbench"])
    # two processes (the dense stack's and the rest's) report what one would
    done, missing = warm_parallel(("json", "onnx", "no_such_module_rrfbench"))
    assert sorted(done) == ["json", "onnx"] and missing == ["no_such_module_rrfbench"]
