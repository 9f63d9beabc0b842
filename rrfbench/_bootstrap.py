"""Install rrfbench and its dependencies into the running virtual environment: with uv when it
can, else with pip, the same pinned versions either way (``constraints.txt``).

Run by path, before any dependency exists (standard library only; ``python -m`` would import
the package first)::

    .venv/bin/python rrfbench/_bootstrap.py -e ".[dense,dev,engines]"

Why: into a new venv with download caches off, pip took 88.3 s and this script 22.5 s (3.93x,
the same 164 packages at the same versions: ``python benchmarks/bench_install.py`` on a 2-core
Zen 3 EPYC, docs/benchmarks.md), and the test command's 15-minute budget counts installs. uv is told what pip would use: this machine's pip
configuration (``pip config list``: its indexes, find-links and constraint files, where the
CPU build of torch comes from) and pip's index strategy (the best version across all indexes).
Any failure of uv (not installable, an index it cannot read, a resolution it refuses) falls back
to pip with the original arguments, so uv can only make the install faster, never break it.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
import time

CONSTRAINTS = "constraints.txt"
PIP = [sys.executable, "-m", "pip", "install", "-q", "--disable-pip-version-check",
       "-c", CONSTRAINTS]


def pip_settings() -> dict[str, list[str]]:
    """pip's configured ``index-url``, ``extra-index-url``, ``find-links`` and ``constraint``
    values (from its files and ``PIP_*`` variables), each a list."""
    p = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True,
                       text=True)
    out: dict[str, list[str]] = {}
    for line in p.stdout.splitlines():
        key, eq, value = line.partition("=")
        name = key.rpartition(".")[2]
        if eq and name in ("index-url", "extra-index-url", "find-links", "constraint"):
            for v in shlex.split(value.strip().strip("'\"")):
                if v not in out.setdefault(name, []):
                    out[name].append(v)
    return out


def uv_command(args: list[str], settings: dict[str, list[str]]) -> list[str]:
    """The ``uv pip install`` equivalent of ``pip install -c constraints.txt ARGS`` under
    ``settings`` (:func:`pip_settings`)."""
    cmd = [sys.executable, "-m", "uv", "pip", "install", "--quiet", "--python", sys.executable,
           "--index-strategy", "unsafe-best-match", "-c", CONSTRAINTS]
    for c in settings.get("constraint", []):
        cmd += ["-c", c]
    for url in settings.get("index-url", [])[:1]:
        cmd += ["--index-url", url]
    for url in settings.get("extra-index-url", []):
        cmd += ["--extra-index-url", url]
    for where in settings.get("find-links", []):
        cmd += ["--find-links", where]
    return cmd + args


def main(args: list[str]) -> int:
    if not args:
        print("usage: python rrfbench/_bootstrap.py PIP-INSTALL-ARGUMENTS...", file=sys.stderr)
        return 2
    t0 = time.perf_counter()
    if subprocess.run([*PIP, "uv"]).returncode == 0:
        uv = subprocess.run(uv_command(args, pip_settings()))
        if uv.returncode == 0:
            print(f"installed with uv in {time.perf_counter() - t0:.0f} s")
            return 0
        print(f"uv could not install (exit {uv.returncode}); installing with pip", file=sys.stderr)
    else:
        print("uv is not installable here; installing with pip", file=sys.stderr)
    return subprocess.run([*PIP, "--no-compile", *args]).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
