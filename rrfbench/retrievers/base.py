"""What every retriever shares: the interface, the run cache and its manifest.

A retriever is a small object with ``name`` (the run's file stem, e.g. ``bm25`` or
``fts5-phrase``), ``score_floor`` (the lowest score its scoring function can give: 0 for
BM25/FTS5, -1 for cosine; recorded in the manifest and carried by the run, so theoretical
min-max normalisation never has to guess it), ``params()`` (every setting that changes its
output) and ``retrieve(dataset, queries, depth) -> Run``. :func:`cached_run` writes the run to
``<results>/runs/<dataset>/<split>/<name>.trec.gz`` (the TREC file any tool can read) with
``<name>.json`` beside it (retriever, params, library versions, dataset fingerprint, score
floor, wall time, counts) and ``<name>.parquet`` (the same ranked table, which loads about ten
times faster), and reuses them while the manifest still matches, so a notebook or a sweep never
recomputes a run it already has.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Protocol

import pandas as pd

from ..core.runs import Run, content_digest, manifest_path
from ..core.store import results_dir, utc_now, write_parquet, write_text

MANIFEST_KEYS = ("retriever", "params", "depth", "versions", "fingerprint", "split",
                 "score_floor", "cut")
# how a retriever chooses among documents tied at its depth cut: recorded, so that runs cut by an
# earlier, CPU-dependent rule (bm25s's and the dense top-k's argpartition) are not reused
CUT_RULE = "score desc, docid asc (rrfbench.core.runs.top_k)"


class Retriever(Protocol):
    name: str
    score_floor: float

    def params(self) -> dict: ...

    def versions(self) -> dict: ...

    def retrieve(self, dataset, queries: pd.DataFrame, depth: int) -> Run: ...


def lib_versions(*packages: str) -> dict[str, str]:
    """Installed versions of ``packages`` (``"missing"`` when absent)."""
    return {p: _version(p) for p in packages}


@cache
def _version(package: str) -> str:
    """One package's installed version, looked up once per process: ``importlib.metadata``
    parses the package's METADATA file on every call, and a suite's run manifests ask for the
    same few versions hundreds of times (1,904 lookups, 6.0 s under cProfile, in one
    ``rrfbench engines --suite en`` on the README test's cuts)."""
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "missing"


def locators_path(run_file: Path) -> Path:
    """Span locators beside a cached run file: ``x.trec.gz`` -> ``x.locators.parquet``."""
    return run_file.with_name(run_file.name.split(".")[0] + ".locators.parquet")


def locators(run_file: Path) -> pd.DataFrame | None:
    """The span locators (qid, docid, span_id, field, start, end) of a cached span run."""
    p = locators_path(Path(run_file))
    return pd.read_parquet(p) if p.exists() else None


def table_path(run_file: Path) -> Path:
    """The parquet copy beside a cached run file: ``x.trec.gz`` -> ``x.parquet``."""
    return run_file.with_name(run_file.name.split(".")[0] + ".parquet")


_DIGESTS: dict[tuple, str] = {}


def run_content_digest(path: Path) -> str | None:
    """The content digest of a cached run file (from its manifest; computed from the run for a
    manifest written before digests were recorded); ``None`` when the run is not cached."""
    path = Path(path)
    manifest = read_manifest(path)
    if manifest is None:
        return None
    if manifest.get("content_digest"):
        return manifest["content_digest"]
    key = (str(path), manifest.get("created"), path.stat().st_mtime_ns)
    if key not in _DIGESTS:
        table = table_path(path)
        run = (Run.from_parquet(table, ranked=True) if table.exists() else Run.from_trec(path))
        _DIGESTS[key] = content_digest(run)
    return _DIGESTS[key]


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
        "score_floor": float(retriever.score_floor),
        "cut": CUT_RULE,
        # BEIR's ignore_identical_ids: a query's own document dropped (recorded only when set,
        # so the runs of every other collection keep their manifests)
        **({"ignore_identical_ids": True} if getattr(dataset, "ignore_identical_ids", False)
           else {}),
    }


def expected_manifest(retriever, dataset, split: str, depth: int) -> dict:
    """The manifest fields a cached run must match to be reused."""
    return _expected(retriever, dataset, split, depth)


def read_manifest(path: Path) -> dict | None:
    mpath = manifest_path(path)
    if not mpath.exists() or not path.exists():
        return None
    try:
        return json.loads(mpath.read_text())
    except json.JSONDecodeError:
        return None


def manifest_matches(manifest: dict | None, expected: dict) -> bool:
    return manifest is not None and all(manifest.get(k) == expected[k] for k in MANIFEST_KEYS)


_MEMO: dict[tuple, Run] = {}  # run files already read in this process
_MEMO_SIZE = 64


def cached_run(retriever, dataset, split: str = "test", depth: int = 1000, force: bool = False,
               root: Path | None = None) -> RunResult:
    """The run of ``retriever`` on ``dataset``'s ``split`` queries, from cache when it matches.

    A run file read once is kept in memory for the process (keyed by its path and manifest),
    so a notebook or a workflow that asks again does not re-parse it.
    """
    path = run_path(dataset.name, split, retriever.name, root)
    expected = _expected(retriever, dataset, split, depth)
    manifest = read_manifest(path)
    if not force and manifest_matches(manifest, expected):
        key = (str(path.resolve()), manifest.get("created"), json.dumps(expected, sort_keys=True))
        run = _MEMO.get(key)
        if run is None:
            table = table_path(path)
            if table.exists():
                run = Run.from_parquet(table, name=retriever.name, ranked=True)
            if run is None or len(run) != manifest.get("n_rows", len(run)):
                run = Run.from_trec(path, name=retriever.name)
                run.to_parquet(table)  # a cache written before the parquet copy existed
            run = run.with_meta(score_floor=expected["score_floor"])
            if len(_MEMO) >= _MEMO_SIZE:
                _MEMO.pop(next(iter(_MEMO)))
            _MEMO[key] = run
        return RunResult(run, manifest, path, True)
    queries = dataset.split_queries(split)
    t0 = time.perf_counter()
    run = retriever.retrieve(dataset, queries, depth).rename(retriever.name)
    if expected.get("ignore_identical_ids"):
        df = run.df
        run = Run(df[df.qid.astype(str) != df.docid.astype(str)], name=run.name)
    run = run.with_meta(score_floor=expected["score_floor"])
    wall = time.perf_counter() - t0
    manifest = dict(expected)
    manifest.update({
        "dataset": dataset.name,
        "wall_time_s": round(wall, 3),
        "n_queries": len(queries),
        "n_queries_with_results": int(run.df.qid.nunique()),
        "n_rows": len(run),
        "created": utc_now(),
        "content_digest": content_digest(run),
    })
    manifest.update(getattr(retriever, "last_stats", {}) or {})
    run.to_trec(path)
    run.to_parquet(table_path(path))
    locs = getattr(retriever, "last_locators", None)
    if locs is not None:  # span FTS: the winning span of each (query, document)
        write_parquet(locators_path(path), locs)
    write_text(manifest_path(path), json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return RunResult(run, manifest, path, False)
