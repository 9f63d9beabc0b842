"""Installing the test environment into a new virtual environment: pip (the baseline, as the
Makefile ran it before: ``pip install --no-compile -c constraints.txt -e ".[dense,dev,engines]"``)
against ``rrfbench/_bootstrap.py`` (uv when it can, pip otherwise), each with its download cache
off, so both fetch what a fresh machine would. Byte-code is compiled by a later, shared step
(``python -m rrfbench._bytecode``, not timed here).

    python benchmarks/bench_install.py

Prints both wall times, the ratio, and whether the two environments hold the same packages at
the same versions (``pip freeze``, uv itself aside). Last line: ``bootstrap_speedup: <float>``.
"""

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT

EXTRAS = ".[dense,dev,engines]"


def fresh_venv(where: Path) -> str:
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True)
    return str(where / "bin" / "python")


def freeze(python: str) -> set[str]:
    out = subprocess.run([python, "-m", "pip", "freeze", "--exclude-editable"],
                         capture_output=True, text=True, check=True).stdout
    return {ln for ln in out.splitlines() if ln and not ln.startswith(("#", "uv=="))}


def timed(cmd: list[str]) -> float:
    env = {**os.environ, "PIP_NO_CACHE_DIR": "1", "UV_NO_CACHE": "1"}
    t0 = time.perf_counter()
    p = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True)
    if p.returncode != 0:
        sys.exit(f"bench_install: {' '.join(cmd[:4])} failed: {p.stderr[-1500:]}")
    return time.perf_counter() - t0


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        pip_py = fresh_venv(Path(tmp) / "pip")
        uv_py = fresh_venv(Path(tmp) / "uv")
        t_pip = timed([pip_py, "-m", "pip", "install", "-q", "--disable-pip-version-check",
                       "-c", "constraints.txt", "--no-compile", "-e", EXTRAS])
        t_uv = timed([uv_py, "rrfbench/_bootstrap.py", "-e", EXTRAS])
        same = freeze(pip_py) == freeze(uv_py)
        n = len(freeze(pip_py))
    print(f"pip install --no-compile -e '{EXTRAS}':       {t_pip:6.1f} s   <- baseline")
    print(f"rrfbench/_bootstrap.py -e '{EXTRAS}' (uv):   {t_uv:6.1f} s")
    print(f"same {n} packages at the same versions: {same}")
    print(f"bootstrap_speedup: {t_pip / t_uv:.2f}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
