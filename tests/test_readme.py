"""The README and the pages of ``docs/`` are a test: every command line they tell a user to type
runs, as printed.

Runnable lines are the ``rrfbench ...`` lines of its ```bash blocks and every inline
```rrfbench ...``` span of its prose. Each runs as the real console script, in a fresh process of
its own, in README order, inside a scratch copy of the project (``pyproject.toml``,
``datasets/``, the committed ``results/``) whose data root holds small cuts of the real
collections under their real names (:func:`cut_collection`), so that ``rrfbench fuse lisa
--config results/transfer/en/best.json`` runs exactly as printed in seconds. A line exits 0 or
the test fails. Syntax with optional parts or placeholders lives in ```text blocks, which are
not run; a runnable line may hold neither.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import _have

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]   # the front door first, then docs/


def pages_text() -> str:
    """The README and every docs page, in that order (their command lines run in this order)."""
    return "\n".join(p.read_text() for p in PAGES)
SCRIPT = shutil.which("rrfbench") or str(Path(sys.executable).parent / "rrfbench")


def readme_commands(text: str) -> list[str]:
    """The runnable ``rrfbench`` lines of a README, in order, each once."""
    out: list[str] = []
    fence = None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            fence = None if fence is not None else (stripped[3:].strip() or "plain")
            continue
        if fence == "bash":
            tokens = shlex.split(stripped, comments=True)
            if tokens[:1] == ["rrfbench"]:
                out.append(shlex.join(tokens))
        elif fence is None:
            for span in re.findall(r"`(rrfbench [^`]+)`", line):
                out.append(shlex.join(shlex.split(span)))
    return list(dict.fromkeys(out))


def test_readme_lines_are_runnable_as_printed():
    """No optional brackets, alternatives or placeholders inside a line a user is told to run."""
    cmds = readme_commands(pages_text())
    assert len(cmds) >= 15, cmds
    for c in cmds:
        assert not re.search(r"[\[\]|<>]|\.\.\.|\b[A-Z]{3,}\b", c), f"not runnable as printed: {c}"


def test_syntax_lines_are_not_in_bash_blocks():
    text = pages_text()
    assert "```text" in text  # the optional parts live somewhere
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        for line in block.splitlines():
            assert not re.search(r"\[--", line), f"optional part in a runnable block: {line}"


@pytest.fixture(scope="module")
def project(tmp_path_factory, cut_data):
    """A scratch project: the committed files a user's clone has, and small data."""
    data = cut_data  # skips when a collection is not on RRFBENCH_DATA
    proj = tmp_path_factory.mktemp("readme") / "project"
    proj.mkdir()
    shutil.copy(ROOT / "pyproject.toml", proj)
    shutil.copy(ROOT / "README.md", proj)
    shutil.copytree(ROOT / "datasets", proj / "datasets")
    tracked = subprocess.run(["git", "ls-files", "results"], cwd=ROOT, capture_output=True,
                             text=True).stdout.split()
    for rel in tracked or [str(p.relative_to(ROOT)) for p in (ROOT / "results").rglob("*")
                           if p.is_file()]:
        (proj / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, proj / rel)
    env = {k: v for k, v in os.environ.items() if k != "RRFBENCH_RESULTS"}
    env.update(RRFBENCH_DATA=str(data), HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               COLUMNS="200")
    return proj, env


def run_line(line: str, proj: Path, env: dict, timeout: int = 600):
    return subprocess.run([SCRIPT, *shlex.split(line)[1:]], cwd=proj, env=env, text=True,
                          capture_output=True, timeout=timeout, stdin=subprocess.DEVNULL)


def test_every_readme_command_runs(project):
    """Each README line, in order, in a fresh process: exit 0, no traceback, no library debug
    logging. ``rrfbench regress`` compares against baselines recorded on this small data first
    (``--update``), since the committed ones describe the full collections
    (tests/workflows/test_regress.py checks those)."""
    import time

    proj, env = project
    failures, times = [], []
    for line in readme_commands(pages_text()):
        if line == "rrfbench regress":
            prep = run_line("rrfbench regress --update", proj, env)
            assert prep.returncode == 0, prep.stderr[-2000:]
        t0 = time.perf_counter()
        p = run_line(line, proj, env)
        times.append(f"{time.perf_counter() - t0:7.1f} s  {line}")
        out = p.stdout + p.stderr
        if p.returncode != 0 or "Traceback" in out or "DEBUG:" in out:
            failures.append(f"$ {line}\n(exit {p.returncode})\n{out[-3000:]}")
    print("\n".join(times))  # shown with -s or -rP
    assert not failures, "\n\n".join(failures)


@pytest.mark.skipif(not _have("scifact"), reason="needs the committed results only")
def test_suite_result_exports_in_a_fresh_shell(tmp_path):
    """The suite result loads in a fresh process that imported nothing else first (it used to
    fail: its result kind was registered as a side effect of importing rrfbench.tuning.transfer)."""
    p = subprocess.run([SCRIPT, "export", "results/transfer/en/presets/titan/best.json",
                        "--to", "titan"], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert "vector" in p.stdout.lower() and "k" in p.stdout
    p = subprocess.run([sys.executable, "-c", "from rrfbench.results.dataset import load_result; "
                        "r = load_result('results/transfer/en/best.json'); "
                        "print(type(r).__name__, r.config_for('recommended')['method'])"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and p.stdout.startswith("TransferResult"), p.stderr


def test_compare_refuses_results_of_different_datasets():
    """Two results that merely share query ids are not a paired comparison: one line, exit 2
    (it used to report 'delta +0.44, p = 1e-4' for scifact vs cranfield)."""
    p = subprocess.run([SCRIPT, "compare", "results/scifact/best.json",
                        "results/cranfield/best.json"], cwd=ROOT, capture_output=True, text=True,
                       timeout=120)
    lines = p.stderr.strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1, p.stderr
    assert lines[0].startswith("error: compare: the results are on different datasets")


def test_compare_reports_a_partial_overlap(tmp_path):
    """Same dataset and split, part of the queries on one side only: compared on the shared
    ones, and the output says how many each side had."""
    from rrfbench.outputs.explanations import compare
    from rrfbench.results.dataset import load_result, save_result

    a = load_result(ROOT / "results/scifact/best.json")
    pq = dict(a.per_query)
    pq = {k: list(v)[:200] for k, v in pq.items()}
    import dataclasses

    b = dataclasses.replace(a, per_query=pq)
    rep = compare(a, b)
    assert len(rep.table) == 200 and rep.n_a == 300 and rep.n_b == 200
    assert rep.overlap_line() == (f"partial overlap: 200 shared queries compared ({rep.label_a} "
                                  f"has 300, {rep.label_b} has 200)")
    save_result(b, tmp_path / "b.json")
    p = subprocess.run([SCRIPT, "compare", str(ROOT / "results/scifact/best.json"),
                        str(tmp_path / "b.json")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0 and "partial overlap: 200 shared queries" in p.stderr, p.stderr


def test_demo_shows_the_dataset_first_and_ends_with_the_recommendation_first(project):
    """`rrfbench demo` as a user runs it (the console script, a fresh process, output to a
    pipe): the dataset's tables are printed before the suite starts, and the closing summary
    opens with the suite's recommendation and its track record, then the details; no table is
    cut off off a terminal."""
    proj, env = project
    p = run_line("rrfbench demo cranfield --suite small", proj, {**env, "CI": "true"})
    assert p.returncode == 0, (p.stdout + p.stderr)[-3000:]
    out = p.stdout
    first_table = out.index("cranfield: single retrievers")
    suite_starts = out.index("suite small: ")
    summary = out.index("suite small (3 collections): the recommendation")
    assert first_table < suite_starts < summary
    after = out[summary:].splitlines()
    assert after[1].startswith("free fusion (bm25 + fts5 + dense) vs RRF k=60")
    assert "this kind of advice was right on" in after[1] and "of 3 left-out" in after[1]
    assert "decision rules graded on left-out collections" in out[summary:]
    assert out[summary:].index("the recommendation") < out[summary:].index("stage times")
    assert "…" not in out
    report = (proj / "results" / "transfer" / "small" / "report.md").read_text()
    assert report.splitlines()[2].startswith("## The recommendation (suite `small`")


def test_the_readme_is_a_front_door():
    """At most 250 lines, and every page of docs/ linked from it (and every link resolving)."""
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    links = set(re.findall(r"\]\(([^)#]+)\)", text))
    pages = {f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md")}
    assert pages <= links, pages - links
    for page in PAGES:
        for link in re.findall(r"\]\(([^)#:]+)\)", page.read_text()):
            assert (page.parent / link).exists(), f"{page.relative_to(ROOT)}: broken link {link}"
