"""Mutation score of one module against the unit tests that should catch its bugs (mutmut 3).

Usage::

    python benchmarks/mutate_module.py rrfbench/fusion/functions.py tests/fusion/test_functions.py -k "not ranx"

Everything after the module is handed to pytest as the test selection. The run happens in a
scratch git worktree of HEAD (``$TMPDIR/rrfbench-mutate-<module>``) whose ``[tool.mutmut]``
section is rewritten to mutate that module only and run only that selection, so the checkout
you work in is untouched and one module takes minutes instead of the hours the whole
``make mutate`` selection needs. Prints :mod:`mutation_score`'s summary and writes every
surviving mutant's diff to ``<worktree>/survivors.txt`` to read one by one. Uncommitted test
edits are copied into the worktree first, so a new test counts before it is committed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MUTMUT = str(Path(sys.executable).parent / "mutmut")


def fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    sys.exit(2)


RECHECK = r"""
import json, os, select, sys, time
import pytest

stats = json.load(open("mutmut-stats.json"))["tests_by_mangled_function_name"]
names, limit = sys.argv[2:], float(sys.argv[1])
pending, running = list(names), {}
while pending or running:
    while pending and len(running) < (os.cpu_count() or 1):
        name = pending.pop(0)
        tests = stats.get(name.rsplit("__mutmut_", 1)[0], [])
        pid = os.fork()
        if pid == 0:
            os.environ["MUTANT_UNDER_TEST"] = name
            sys.stdout = sys.stderr = open(os.devnull, "w")
            code = pytest.main(["-p", "no:cacheprovider", "-q", "-x", *tests]) if tests else 33
            os._exit(int(code))
        running[pid] = (name, time.time())
    pid, status = os.waitpid(-1, os.WNOHANG)
    if pid == 0:
        for p, (name, t0) in list(running.items()):
            if time.time() - t0 > limit:
                os.kill(p, 9)
        time.sleep(0.05)
        continue
    name, t0 = running.pop(pid)
    code = os.waitstatus_to_exitcode(status)
    verdict = {0: "survived", 33: "no tests", -9: "timeout"}.get(code, "killed")
    print(f"    {name}: {verdict}", flush=True)
"""


def recheck_suspicious(work: Path, results: str, env: dict) -> str:
    """mutmut 3.8 reports some mutants ``suspicious`` (its child exited on SIGTERM, -15, although
    neither the tests nor its own time limits sent one): on engine.py 526 of 1,236, most of
    them with every test passing when run by hand. Each is run again here exactly as mutmut runs
    a mutant (a fork of one process that imported the tests, ``MUTANT_UNDER_TEST`` set, pytest
    on the tests mutmut mapped to that function), and classified killed / survived / timeout
    (120 s). The rechecked lines end with ``(rechecked)``."""
    names = [ln.split(":")[0].strip() for ln in results.splitlines()
             if ln.strip().endswith(": suspicious")]
    if not names:
        return results
    print(f"rechecking {len(names)} mutants mutmut called suspicious", file=sys.stderr)
    out = subprocess.run([sys.executable, "-c", RECHECK, "120", *names], cwd=work / "mutants",
                         env=env, capture_output=True, text=True).stdout
    verdicts = dict(ln.strip().rsplit(": ", 1) for ln in out.splitlines() if ": " in ln)
    lines = []
    for ln in results.splitlines():
        name = ln.split(":")[0].strip()
        if ln.strip().endswith(": suspicious") and name in verdicts:
            ln = f"    {name}: {verdicts[name]} (rechecked)"
        lines.append(ln)
    return "\n".join(lines) + "\n"


def main(module: str, selection: list[str]) -> None:
    if not (ROOT / module).is_file() or not module.startswith("rrfbench/"):
        fail(f"{module}: not a module of the package (e.g. rrfbench/fusion/functions.py)")
    missing = [a for a in selection if a.startswith("tests") and not (ROOT / a.split("::")[0]).exists()]
    if missing:
        fail(f"{missing[0]}: no such test file or folder")
    work = Path(tempfile.gettempdir()) / f"rrfbench-mutate-{Path(module).stem}"
    subprocess.run(["git", "worktree", "remove", "--force", str(work)], cwd=ROOT,
                   capture_output=True)
    shutil.rmtree(work, ignore_errors=True)
    subprocess.run(["git", "worktree", "add", "-q", "--detach", str(work), "HEAD"], cwd=ROOT,
                   check=True)
    shutil.copytree(ROOT / "tests", work / "tests", dirs_exist_ok=True,  # uncommitted edits count
                    ignore=shutil.ignore_patterns("__pycache__"))
    cfg = work / "pyproject.toml"
    text = cfg.read_text()
    args = ", ".join(f'"{a}"' for a in selection)
    text = re.sub(r"only_mutate = \[.*?\]\n", f'only_mutate = ["{module}"]\n', text, flags=re.S)
    text = re.sub(r"pytest_add_cli_args_test_selection = \[.*?\]\n",
                  f"pytest_add_cli_args_test_selection = [{args}]\n", text, flags=re.S)
    cfg.write_text(text)
    env = dict(os.environ, HF_HUB_OFFLINE="1")
    subprocess.run([MUTMUT, "run", "--max-children", str(os.cpu_count() or 1)], cwd=work,
                   env=env, stdout=subprocess.DEVNULL)
    results = subprocess.run([MUTMUT, "results", "--all", "true"], cwd=work, env=env,
                             capture_output=True, text=True).stdout
    results = recheck_suspicious(work, results, env)
    (work / "mutation.txt").write_text(results)
    if not re.search(r": (killed|survived|timeout)$", results, re.M):
        fail(f"no mutant of {module} was tested: did the test selection pass on the unmutated "
             f"code? (run it with pytest in {work})")
    survivors = [ln.split(":")[0].strip() for ln in results.splitlines()
                 if re.search(r": survived( \(rechecked\))?$", ln.strip())]
    with open(work / "survivors.txt", "w") as out:
        for name in survivors:
            diff = subprocess.run([MUTMUT, "show", name], cwd=work, env=env,
                                  capture_output=True, text=True).stdout
            out.write(f"== {name}\n" + "".join(ln + "\n" for ln in diff.splitlines()
                                              if re.match(r"^[-+][^-+]", ln)))
    subprocess.run([sys.executable, str(ROOT / "benchmarks" / "mutation_score.py"),
                    str(work / "mutation.txt")], check=True)
    print(f"survivors: {work / 'survivors.txt'}")


if __name__ == "__main__":
    if len(sys.argv) < 3:
        fail("usage: python benchmarks/mutate_module.py MODULE TEST_PATH... [pytest options]")
    main(sys.argv[1], sys.argv[2:])
