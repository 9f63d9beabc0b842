"""What every retriever shares: the interface, the run cache and its manifest.

A retriever is a small object with ``name`` (the run's file stem, e.g. ``bm25`` or
``fts5-phrase``), ``params()`` (every setting that changes its output) and
``retrieve(dataset, queries, depth) -> Run``. :func:`cached_run` writes the run to
``<results>/runs/<dataset>/<split>/<name>.trec.gz`` with ``<name>.json`` beside it (retriever,
params, library versions, dataset fingerprint, wall time, counts) and reuses it while the
manifest still matches, so a notebook or a sweep never recomputes a run it already has.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Protocol

import pandas as pd

from ..runs import Run, atomic_write_text

MANIFEST_KEYS = ("retriever", "params", "depth", "versions", "fingerprint", "split")


class Retriever(Protocol):
    name: str

    def params(self) -> dict: ...

    def versions(self) -> dict: ...

    def retrieve(self, dataset, queries: pd.DataFrame, depth: int) -> Run: ...


def lib_versions(*packages: str) -> dict[str, str]:
    """Installed versions of ``packages`` (``"missing"`` when absent)."""
    out = {}
    for p in packages:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = "missing"
    return out


def results_dir() -> Path:
    """Root of all outputs: ``$RRFBENCH_RESULTS`` or ``./results``."""
    return Path(os.environ.get("RRFBENCH_RESULTS", "results"))


def cache_dir() -> Path:
    """Per-machine cache (embeddings, exported models): ``$RRFBENCH_CACHE`` or ``~/.cache/rrfbench``."""
    return Path(os.environ.get("RRFBENCH_CACHE", Path.home() / ".cache" / "rrfbench"))


def run_path(dataset_name: str, split: str, name: str, root: Path | None = None) -> Path:
    return (root or results_dir()) / "runs" / dataset_name / split / f"{name}.trec.gz"


@dataclass
class RunResult:
    run: Run
    manifest: dict
    path: Path
    cached: bool


def _expected(retriever, dataset, split: str, depth: int) -> dict:
    return {
        "retriever": retriever.name,
        "params": retriever.params(),
        "depth": depth,
        "versions": retriever.versions(),
        "fingerprint": dataset.fingerprint,
        "split": split,
    }


def read_manifest(path: Path) -> dict | None:
    mpath = path.with_name(path.name.replace(".trec.gz", ".json"))
    if not mpath.exists() or not path.exists():
        return None
    try:
        return json.loads(mpath.read_text())
    except json.JSONDecodeError:
        return None


def manifest_matches(manifest: dict | None, expected: dict) -> bool:
    return manifest is not None and all(manifest.get(k) == expected[k] for k in MANIFEST_KEYS)


def cached_run(retriever, dataset, split: str = "test", depth: int = 1000, force: bool = False,
               root: Path | None = None) -> RunResult:
    """The run of ``retriever`` on ``dataset``'s ``split`` queries, from cache when it matches."""
    path = run_path(dataset.name, split, retriever.name, root)
    expected = _expected(retriever, dataset, split, depth)
    manifest = read_manifest(path)
    if not force and manifest_matches(manifest, expected):
        return RunResult(Run.from_trec(path, name=retriever.name), manifest, path, True)
    queries = dataset.split_queries(split)
    t0 = time.perf_counter()
    run = retriever.retrieve(dataset, queries, depth).rename(retriever.name)
    wall = time.perf_counter() - t0
    manifest = dict(expected)
    manifest.update({
        "dataset": dataset.name,
        "wall_time_s": round(wall, 3),
        "n_queries": len(queries),
        "n_queries_with_results": int(run.df.qid.nunique()),
        "n_rows": len(run),
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    })
    manifest.update(getattr(retriever, "last_stats", {}) or {})
    run.to_trec(path)
    atomic_write_text(path.with_name(path.name.replace(".trec.gz", ".json")),
                      json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return RunResult(run, manifest, path, False)
