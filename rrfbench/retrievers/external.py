"""Streams from outside: the rankings and embeddings a team already has, behind the retriever
interface, so that everything that takes a retriever spec fuses, tunes and judges them.

* ``run:PATH`` (:class:`RunFileRetriever`): a TREC run file (plain or ``.gz``) answering the
  collection's queries, e.g. the keyword ranking a production engine serves, or one file per
  split (``run:runs/{split}.trec``: every file the pattern matches, no query in two). Its
  stream is named ``run-<file stem>`` or ``;name=``.
* ``vectors:PATH`` (:class:`VectorsRetriever`): document and query embeddings exported from a
  team's vector store, scored by the same exact cosines as ``dense``
  (:func:`rrfbench.retrievers.vectors.topk_cosine`): a parquet file with columns ``id`` and
  ``vector`` (a list of floats) and ``role`` (``document`` or ``query``), or a ``.npy`` matrix
  with its ids one per line in ``<stem>.ids.txt`` beside it (``query:ID`` for a query's row).

Both are checked against the collection before anything is computed, and a problem is one line
naming the file, the line or id, and what is wrong (:class:`InputError`): for a run file a
malformed line or a duplicate (qid, docid) (:meth:`Run.from_trec`), a query or document id the
collection does not have; for vectors a missing, duplicate or unknown id, a wrong dimension, a
zero or non-finite vector. A query of the split that the stream does not answer is the
coverage warning :func:`rrfbench.evaluate` gives.

The content is the key: a stream's params hold the file's SHA-256 (never its absolute path,
which differs per machine), so the run cache (:func:`rrfbench.retrievers.base.cached_run`)
reuses the stream while the file is the same and recomputes it when it changes.
"""

from __future__ import annotations

import hashlib
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import CoverageWarning, InputError
from ..core.runs import Run, docid_keys, read_text
from .vectors import topk_cosine, unit_rows


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _stem(path: Path) -> str:
    stem = path.name
    for suffix in (".gz", ".trec", ".txt", ".run", ".parquet", ".npy"):
        stem = stem.removesuffix(suffix)
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", stem).strip("-") or "stream"


def _existing(path: str, kind: str) -> Path:
    if not path:
        raise InputError(f"retriever: {kind}:PATH needs a file, e.g. {kind}:/path/to/file")
    p = Path(path).expanduser()
    if not p.is_file():
        raise InputError("file not found", p)
    return p.resolve()


def _warn_unanswered(path: Path, queries: pd.DataFrame, answered) -> None:
    missing = int((~queries.qid.astype(str).isin(set(answered))).sum())
    if missing:
        warnings.warn(f"{path}: answers {len(queries) - missing} of the split's {len(queries)} "
                      f"queries ({missing} without a result)", CoverageWarning, stacklevel=3)


class RunFileRetriever:
    """A team's TREC run file as a stream (see the module docstring)."""

    def __init__(self, path: str, name: str | None = None, floor: str | float | None = None):
        if "{split}" in (path or ""):
            pattern = Path(path).expanduser()
            self.paths = sorted(p.resolve() for p in pattern.parent.glob(
                pattern.name.replace("{split}", "*")) if p.is_file())
            if not self.paths:
                raise InputError(f"no file matches {pattern.name} (one run file per split, "
                                 "{split} standing for the split's name)", pattern.parent)
            self.path = self.paths[0]
            stem = _stem(Path(pattern.name.replace("{split}", "")))
            stem = _stem(pattern.parent) if stem == "stream" else stem   # {split}.trec: the folder
        else:
            self.path = _existing(path, "run")
            self.paths = [self.path]
            stem = _stem(self.path)
        self.name = name or f"run-{stem}"
        self._floor = None if floor in (None, "") else float(floor)
        self._run: Run | None = None

    def _read(self) -> Run:
        """The run of every file (one per split: their queries must not overlap)."""
        if self._run is None:
            runs = [Run.from_trec(p, name=self.name) for p in self.paths]
            if len(runs) > 1:
                seen: dict[str, Path] = {}
                for p, r in zip(self.paths, runs, strict=True):
                    for q in r.df.qid.astype(str).unique():
                        if q in seen:
                            raise InputError(f"query {q!r} is answered in {seen[q].name} too "
                                             "(one run file per split: each query in one)", p)
                        seen[q] = p
                self._run = Run(pd.concat([r.df[["qid", "docid", "score"]] for r in runs],
                                          ignore_index=True), self.name)
            else:
                self._run = runs[0]
        return self._run

    @property
    def score_floor(self) -> float:
        """The declared lowest possible score (``;floor=``), else the file's lowest score."""
        if self._floor is not None:
            return self._floor
        df = self._read().df
        return float(df.score.min()) if len(df) else 0.0

    def params(self) -> dict:
        if len(self.paths) > 1:
            return {"files": [p.name for p in self.paths],
                    "sha256": [_digest(p) for p in self.paths],
                    "floor": "declared" if self._floor is not None else "the files' lowest score"}
        return {"file": self.path.name, "sha256": _digest(self.path),
                "floor": "declared" if self._floor is not None else "the file's lowest score"}

    def versions(self) -> dict:
        return {}

    def check(self, dataset) -> Run:
        """The whole run, its ids checked against ``dataset`` (one line per problem)."""
        run = self._read()
        qids = set(dataset.queries.qid.astype(str))
        docids = set(dataset.corpus.docid.astype(str))
        bad_q = ~run.df.qid.astype(str).isin(qids)
        bad_d = ~run.df.docid.astype(str).isin(docids)
        if bad_q.any() or bad_d.any():
            self._name_the_line(qids, docids, dataset.name)
        return run

    def _name_the_line(self, qids: set, docids: set, dataset: str) -> None:
        """Raise for the first line whose query or document the collection does not have."""
        for path in self.paths:
            for lineno, line in enumerate(read_text(path).split("\n"), 1):
                parts = line.split()
                if len(parts) != 6:
                    continue
                if parts[0] not in qids:
                    raise InputError(f"query {parts[0]!r} is not a query of {dataset}", path,
                                     lineno)
                if parts[2] not in docids:
                    raise InputError(f"document {parts[2]!r} is not in {dataset}'s corpus",
                                     path, lineno)
        raise InputError(f"ids that {dataset} does not have", self.path)

    def retrieve(self, dataset, queries: pd.DataFrame, depth: int) -> Run:
        run = self.check(dataset)
        want = set(queries.qid.astype(str))
        df = run.df[run.df.qid.astype(str).isin(want)]
        _warn_unanswered(self.path, queries, df.qid.astype(str).unique())
        df = df[df["rank"] <= depth]
        return Run(df[["qid", "docid", "score"]].reset_index(drop=True), self.name)


class VectorsRetriever:
    """A team's exported embeddings as a dense stream (see the module docstring)."""

    score_floor = -1.0  # cosine of unit vectors

    def __init__(self, path: str, name: str | None = None):
        self.path = _existing(path, "vectors")
        self.name = name or f"vectors-{_stem(self.path)}"
        self._table: tuple | None = None

    def params(self) -> dict:
        files = [self.path] + ([self._ids_path()] if self.path.suffix == ".npy" else [])
        return {"file": self.path.name, "sha256": [_digest(f) for f in files],
                "similarity": "cosine (exact, rrfbench.retrievers.vectors.exact_cosines)"}

    def versions(self) -> dict:
        return {}

    def _ids_path(self) -> Path:
        p = self.path.with_name(self.path.name.removesuffix(".npy") + ".ids.txt")
        if not p.is_file():
            raise InputError(f"a .npy embeddings file needs its ids, one per line, in {p.name} "
                             "beside it", self.path)
        return p

    def _load(self) -> tuple[list[str], list[str], np.ndarray]:
        """(ids, roles, matrix) as the file holds them."""
        if self._table is not None:
            return self._table
        if self.path.suffix == ".npy":
            try:
                mat = np.load(self.path, allow_pickle=False)
            except (OSError, ValueError) as exc:
                raise InputError(f"not a .npy matrix: {exc}", self.path) from None
            raw = [x.strip() for x in self._ids_path().read_text(encoding="utf-8").splitlines()
                   if x.strip()]
            if mat.ndim != 2 or len(raw) != len(mat):
                raise InputError(f"the matrix is {mat.shape}, its ids file has {len(raw)} ids: "
                                 "expected one row per id", self.path)
            roles = ["query" if x.startswith("query:") else "document" for x in raw]
            ids = [x.removeprefix("query:") for x in raw]
        else:
            try:
                df = pd.read_parquet(self.path)
            except Exception as exc:  # pyarrow raises several types for a bad file
                raise InputError(f"not a parquet file: {exc}", self.path) from None
            for col in ("id", "vector"):
                if col not in df.columns:
                    raise InputError(f"no column {col!r} (columns: {', '.join(map(str, df.columns))};"
                                     " expected id, vector, role)", self.path)
            ids = df["id"].astype(str).tolist()
            roles = df["role"].astype(str).tolist() if "role" in df.columns else \
                ["document"] * len(df)
            lengths = [len(v) for v in df["vector"]]
            if len(set(lengths)) > 1:
                want = max(set(lengths), key=lambda n: (lengths.count(n), -n))
                i = next(i for i, n in enumerate(lengths) if n != want)
                raise InputError(f"id {ids[i]!r}: dimension {lengths[i]}, expected {want} (as "
                                 f"{lengths.count(want)} of {len(lengths)} vectors)", self.path)
            mat = np.stack([np.asarray(v, dtype=np.float32) for v in df["vector"]]) if len(df) \
                else np.zeros((0, 0), np.float32)
        mat = np.asarray(mat, dtype=np.float32)
        bad_role = next((r for r in roles if r not in ("document", "query")), None)
        if bad_role is not None:
            raise InputError(f"role {bad_role!r}: expected 'document' or 'query'", self.path)
        self._table = (ids, roles, mat)
        return self._table

    def check(self, dataset) -> tuple[np.ndarray, dict]:
        """The document matrix in corpus order and {query id: row}, checked (one line per
        problem: a duplicate, unknown or missing id, a zero or non-finite vector)."""
        ids, roles, mat = self._load()
        seen: dict[tuple, int] = {}
        for i, key in enumerate(zip(roles, ids, strict=True)):
            if key in seen:
                raise InputError(f"{key[0]} id {key[1]!r} appears twice (rows {seen[key]} and {i})",
                                 self.path)
            seen[key] = i
        unit, bad = unit_rows(mat)
        if bad is not None:
            raise InputError(f"{roles[bad]} id {ids[bad]!r}: a zero or non-finite vector",
                             self.path)
        docids = dataset.corpus.docid.astype(str).tolist()
        known_q = set(dataset.queries.qid.astype(str))
        doc_rows = {d: i for (r, d), i in seen.items() if r == "document"}
        corpus = set(docids)
        unknown = next((d for d in doc_rows if d not in corpus), None)
        if unknown is not None:
            raise InputError(f"document id {unknown!r} is not in {dataset.name}'s corpus",
                             self.path)
        q_rows = {q: i for (r, q), i in seen.items() if r == "query"}
        unknown = next((q for q in q_rows if q not in known_q), None)
        if unknown is not None:
            raise InputError(f"query id {unknown!r} is not a query of {dataset.name}", self.path)
        missing = [d for d in docids if d not in doc_rows]
        if missing:
            raise InputError(f"{len(missing)} of {dataset.name}'s {len(docids)} documents have "
                             f"no vector (first: {missing[0]!r})", self.path)
        return unit[[doc_rows[d] for d in docids]], {q: unit[i] for q, i in q_rows.items()}

    def retrieve(self, dataset, queries: pd.DataFrame, depth: int) -> Run:
        docs, qvec = self.check(dataset)
        qids = [q for q in queries.qid.astype(str) if q in qvec]
        _warn_unanswered(self.path, queries, qids)
        docids = np.asarray(dataset.corpus.docid, dtype=object)
        if not qids:
            return Run(pd.DataFrame({"qid": [], "docid": [], "score": []}), self.name)
        q = np.stack([qvec[x] for x in qids]).astype(np.float32)
        idx, scores = topk_cosine(q, docs, depth, keys=docid_keys(docids))
        k = idx.shape[1]
        return Run.from_indexed(np.asarray(qids, dtype=object), np.repeat(np.arange(len(qids)), k),
                                docids, idx.ravel(), scores.ravel(), self.name)
