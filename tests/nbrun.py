"""Execute the notebooks against the committed results, as a reader sees them on the web.

``python -m tests.nbrun --write`` (``make notebooks``) executes every notebook in
``notebooks/`` with its default parameters (cranfield; the English suite's committed results)
and writes it back with its outputs; ``tests/test_notebooks.py`` executes them afresh the same
way and compares. Both run in a copy of ``results/`` (``$RRFBENCH_RESULTS``), so executing a
notebook never writes into the committed tree.

What is compared: per code cell, the text a reader sees (``stdout`` and each result's
``text/plain``), and that each image is present and not empty. Not compared: ``stderr``
(progress lines, warnings) and images' bytes (matplotlib's PNGs differ with its version).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
# what `results/` holds that is recomputed, never committed (.gitignore): not copied
_SKIP = ("runs", "index", "cache")


def copy_results(dst: Path) -> Path:
    """The committed ``results/`` tree (without runs, indexes and caches) under ``dst``."""
    src = ROOT / "results"
    shutil.copytree(src, dst, ignore=lambda d, names: [n for n in names if Path(d) == src
                                                      and n in _SKIP])
    return dst


@contextmanager
def environment(results: Path):
    """The environment a committed notebook is executed in."""
    old = dict(os.environ)
    os.environ["RRFBENCH_RESULTS"] = str(results)
    os.environ["MPLBACKEND"] = "Agg"
    for key in ("RRFBENCH_NB_DATASET", "RRFBENCH_NB_SUITE", "RRFBENCH_NB_FAST",
                "RRFBENCH_NB_RECOMPUTE"):
        os.environ.pop(key, None)
    if not os.environ.get("RRFBENCH_DATA") and (ROOT.parent / "shared" / "datasets").is_dir():
        os.environ["RRFBENCH_DATA"] = str(ROOT.parent / "shared" / "datasets")
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(old)


def execute(path: Path, timeout: int = 900):
    """The notebook at ``path`` executed top to bottom (outputs in place), in the current
    environment; raises on a cell error."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    NotebookClient(nb, timeout=timeout, kernel_name="python3", record_timing=False,
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    return nb


WIDGET = "application/vnd.jupyter.widget-view+json"


def text_outputs(nb) -> list[list[str]]:
    """Per code cell, the text a reader sees: stdout and each result's ``text/plain``, with
    trailing spaces stripped. A widget (tqdm's notebook bar, shown where ipywidgets is
    installed while a cold cache encodes) is progress, not a result: its ``text/plain``
    fallback, a bar's timing, does not count."""
    out = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        texts = []
        for o in cell.outputs:
            if o.output_type == "stream" and o.name == "stdout":
                texts.append(o.text)
            elif o.output_type in ("execute_result", "display_data"):
                data = o.get("data", {})
                if WIDGET in data:
                    continue
                if "image/png" not in data and "text/plain" in data:
                    texts.append(data["text/plain"])
        joined = "".join(texts)
        out.append([line.rstrip() for line in joined.splitlines()])
    return out


def without_machine_paths(nb, roots=None):
    """``nb`` with the absolute paths of this checkout (and of the results copy and the home
    folder) taken out of every text output, stderr's warnings included: a committed notebook
    shows ``rrfbench/api.py:37: ValidationWarning``, not where it was executed."""
    roots = roots or [str(ROOT) + os.sep, os.environ.get("RRFBENCH_RESULTS", "") + os.sep,
                      str(Path.home()) + os.sep]
    roots = sorted({r for r in roots if len(r) > 1}, key=len, reverse=True)

    def scrub(text: str) -> str:
        for r in roots:
            text = text.replace(r, "")
        return text

    for cell in nb.cells:
        for o in cell.get("outputs", []):
            if "text" in o:
                o.text = scrub(o.text)
            for key, value in o.get("data", {}).items():
                if key.startswith("text/") and isinstance(value, str):
                    o.data[key] = scrub(value)
    return nb


def images(nb) -> list[int]:
    """Per code cell, the number of non-empty PNG images it shows."""
    return [sum(1 for o in cell.outputs
                if o.output_type in ("execute_result", "display_data")
                and o.get("data", {}).get("image/png"))
            for cell in nb.cells if cell.cell_type == "code"]


def main(argv: list[str]) -> int:
    if argv not in ([], ["--write"]):
        print(f"error: tests/nbrun.py takes only --write (got {' '.join(argv)!r})",
              file=sys.stderr)
        return 2
    import nbformat

    with tempfile.TemporaryDirectory() as tmp, environment(copy_results(Path(tmp) / "results")):
        for path in NOTEBOOKS:
            nb = execute(path)
            print(f"{path.name}: {sum(map(len, text_outputs(nb)))} lines of text, "
                  f"{sum(images(nb))} images", flush=True)
            if argv == ["--write"]:
                nbformat.write(without_machine_paths(nb), path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
