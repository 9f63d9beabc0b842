"""Datasets in BEIR layout: corpus, queries and qrels per split, found by name or path.

Resolution order for ``load_dataset(spec)``:

1. ``irds:<id>`` - an ir_datasets id (e.g. ``irds:beir/scifact/test``); offline it works when
   ir_datasets' cache (``~/.ir_datasets``) already holds the files.
2. an existing folder holding ``corpus.jsonl`` - loaded by path;
3. a name looked up on the search path: each folder of ``$RRFBENCH_DATA`` (colon-separated),
   then ``./datasets/``; ``<folder>/<name>/corpus.jsonl`` must exist;
4. a BEIR name not found on the search path falls back to ir_datasets ``beir/<name>``, which
   downloads where a network exists.

A BEIR folder is ``corpus.jsonl`` (``_id``, ``title``, ``text``), ``queries.jsonl`` (``_id``,
``text``) and ``qrels/<split>.tsv`` (header ``query-id corpus-id score``). Documents are read
once and kept as pandas tables.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd

from ..core.errors import InputError, RrfbenchError
from ..core.runs import Qrels, read_text
from ..core.store import project_root

BEIR_NAMES = {
    "arguana", "climate-fever", "cqadupstack", "dbpedia-entity", "fever", "fiqa", "hotpotqa",
    "msmarco", "nfcorpus", "nq", "quora", "scidocs", "scifact", "trec-covid", "webis-touche2020",
}


def search_path() -> list[Path]:
    """Folders searched for datasets by name: ``$RRFBENCH_DATA`` entries, then the project's
    ``datasets/`` folder (see :func:`rrfbench.core.store.project_root`), else ``./datasets``."""
    folders = [Path(p) for p in os.environ.get("RRFBENCH_DATA", "").split(":") if p]
    root = project_root()
    folders.append(root / "datasets" if root is not None else Path("datasets"))
    return folders


def jsonl_objects(path: Path):
    """(line number, JSON object) of each non-blank line; a line that is not a JSON object
    raises naming the file, the line and the problem."""
    for lineno, line in enumerate(read_text(path).split("\n"), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"not valid JSON ({exc.msg})", path, lineno) from None
        if not isinstance(obj, dict):
            raise InputError("expected a JSON object", path, lineno)
        yield lineno, obj


def _read_jsonl(path: Path, required: tuple[str, ...]) -> list[dict]:
    """JSON objects, one per line; errors name the file, the line and the problem."""
    rows = []
    seen: dict[str, int] = {}
    for lineno, obj in jsonl_objects(path):
        for key in required:
            if key not in obj:
                raise InputError(f"missing required field {key!r}", path, lineno)
        _id = str(obj["_id"])
        if _id in seen:
            raise InputError(f"duplicate _id {_id!r}; first on line {seen[_id]}", path, lineno)
        seen[_id] = lineno
        rows.append(obj)
    return rows


UNJUDGED = "all"   # the split of every query, judged or not: a team's collection before judging


@dataclass
class Dataset:
    """One test collection: corpus, queries, and qrels per split.

    ``corpus`` is a DataFrame (docid, title, text); ``queries`` (qid, text) holds every query;
    ``qrels(split)`` the judgments of a split and ``split_queries(split)`` the queries judged in
    it. ``fingerprint`` is a SHA-256 over the content (corpus, queries, all qrels), used to key
    every cache: a changed file invalidates runs, indexes and embeddings built from it.
    """

    name: str
    path: Path | None = None
    irds_id: str | None = None
    _qrels: dict[str, Qrels] = field(default_factory=dict, repr=False)

    # -- content ----------------------------------------------------------------------------
    @cached_property
    def corpus(self) -> pd.DataFrame:
        if self.path is not None:
            rows = _read_jsonl(self.path / "corpus.jsonl", ("_id",))
            return pd.DataFrame({
                "docid": [str(r["_id"]) for r in rows],
                "title": [str(r.get("title") or "") for r in rows],
                "text": [str(r.get("text") or "") for r in rows],
            })
        ds = self._irds_base()
        docs = list(ds.docs_iter())
        return pd.DataFrame({
            "docid": [d.doc_id for d in docs],
            "title": [getattr(d, "title", "") or "" for d in docs],
            "text": [getattr(d, "text", "") or "" for d in docs],
        })

    @cached_property
    def queries(self) -> pd.DataFrame:
        if self.path is not None:
            rows = _read_jsonl(self.path / "queries.jsonl", ("_id", "text"))
            return pd.DataFrame({"qid": [str(r["_id"]) for r in rows],
                                 "text": [str(r["text"]) for r in rows]})
        seen: dict[str, str] = {}
        for split in self.splits:
            for q in self._irds_split(split).queries_iter():
                seen.setdefault(q.query_id, q.text)
        return pd.DataFrame({"qid": list(seen), "text": list(seen.values())})

    @cached_property
    def splits(self) -> list[str]:
        """Names of the qrels splits (e.g. ``["test", "train"]``)."""
        if self.path is not None:
            return sorted(p.stem for p in (self.path / "qrels").glob("*.tsv"))
        import ir_datasets

        base = self._irds_base_id()
        found = [s for s in ("train", "dev", "test") if f"{base}/{s}" in ir_datasets.registry]
        if self.irds_id != base:
            return [self.irds_id.rsplit("/", 1)[1]]
        return found or ["test"]

    def qrels(self, split: str = "test") -> Qrels:
        """Judgments of ``split``; an unknown split raises naming the ones that exist.
        ``UNJUDGED`` (a collection's own queries, before any judgment) has none."""
        if split == UNJUDGED and split not in self.splits:
            return Qrels(pd.DataFrame(columns=["qid", "docid", "relevance"]), f"{self.name}/{split}")
        if split not in self.splits:
            raise InputError(f"no qrels split {split!r} in dataset {self.name!r}; "
                             f"available: {', '.join(self.splits) or '(none)'}",
                             self.path / "qrels" if self.path else self.irds_id)
        if split not in self._qrels:
            if self.path is not None:
                self._qrels[split] = Qrels.from_file(self.path / "qrels" / f"{split}.tsv")
            else:
                rows = [(q.query_id, q.doc_id, int(q.relevance))
                        for q in self._irds_split(split).qrels_iter()]
                self._qrels[split] = Qrels(pd.DataFrame(rows, columns=["qid", "docid", "relevance"]),
                                           split)
            self._qrels[split].name = f"{self.name}/{split}"
        return self._qrels[split]

    @cached_property
    def ignore_identical_ids(self) -> bool:
        """Query ids are document ids and a query's own document is no answer to it (BEIR's
        ``ignore_identical_ids``, ArguAna and Quora): declared in the folder's ``manifest.json``
        (``rrfbench ingest --ignore-identical-ids``); every run on the collection drops it."""
        m = self.path / "manifest.json" if self.path is not None else None
        if m is None or not m.exists():
            return False
        try:
            return bool(json.loads(m.read_text()).get("ignore_identical_ids", False))
        except (json.JSONDecodeError, AttributeError):
            raise InputError(f"{m}: not a JSON object (the collection's manifest)") from None

    def split_queries(self, split: str = "test") -> pd.DataFrame:
        """Queries (qid, text) judged in ``split``, sorted by qid; ``UNJUDGED``: every query."""
        if split == UNJUDGED and split not in self.splits:
            return self.queries.sort_values("qid", kind="mergesort").reset_index(drop=True)
        qids = set(self.qrels(split).qids)
        q = self.queries[self.queries.qid.isin(qids)]
        return q.sort_values("qid", kind="mergesort").reset_index(drop=True)

    @cached_property
    def fingerprint(self) -> str:
        """SHA-256 (first 16 hex digits) over corpus, queries and every qrels split."""
        h = hashlib.sha256()
        if self.path is not None:
            files = [self.path / "corpus.jsonl", self.path / "queries.jsonl"]
            files += [self.path / "qrels" / f"{s}.tsv" for s in self.splits]
            for f in files:
                h.update(f.name.encode())
                with open(f, "rb") as fh:
                    for block in iter(lambda: fh.read(1 << 20), b""):
                        h.update(block)
        else:
            for df in (self.corpus, self.queries):
                h.update(pd.util.hash_pandas_object(df, index=False).values.tobytes())
            for s in self.splits:
                h.update(pd.util.hash_pandas_object(self.qrels(s).df, index=False).values.tobytes())
        return h.hexdigest()[:16]

    def counts(self) -> dict:
        """Documents, queries, and per split: judged queries and judgments."""
        out = {"docs": len(self.corpus), "queries": len(self.queries)}
        for s in self.splits:
            qr = self.qrels(s)
            out[f"{s}_queries"] = len(qr.qids)
            out[f"{s}_qrels"] = len(qr)
        return out

    def subset(self, docids, name: str) -> Dataset:
        """The same queries and qrels over only ``docids`` of the corpus (e.g. one knowledge
        base of several); its fingerprint covers the subset, so every cache keys on it."""
        keep = set(map(str, docids))
        sub = Dataset(name=name, path=self.path, irds_id=self.irds_id)
        corpus = self.corpus[self.corpus.docid.isin(keep)].reset_index(drop=True)
        sub.__dict__["corpus"] = corpus
        sub.__dict__["queries"] = self.queries
        sub.__dict__["splits"] = self.splits
        sub._qrels = {s: self.qrels(s) for s in self.splits}
        h = hashlib.sha256((self.fingerprint + "|").encode())
        h.update(pd.util.hash_pandas_object(corpus.docid, index=False).values.tobytes())
        sub.__dict__["fingerprint"] = h.hexdigest()[:16]
        return sub

    def doc_texts(self) -> list[str]:
        """Document text as every retriever indexes it: ``title + " " + text``."""
        c = self.corpus
        return [f"{t} {x}".strip() for t, x in zip(c.title, c.text, strict=True)]

    # -- ir_datasets bridge -----------------------------------------------------------------
    def _irds_base_id(self) -> str:
        import ir_datasets

        parts = self.irds_id.split("/")
        # the shortest prefix that has documents, e.g. beir/scifact for beir/scifact/test
        for i in range(1, len(parts) + 1):
            cand = "/".join(parts[:i])
            if cand in ir_datasets.registry and ir_datasets.load(cand).has_docs():
                return cand
        return self.irds_id

    def _irds_base(self):
        import ir_datasets

        return ir_datasets.load(self.irds_id)

    def _irds_split(self, split: str):
        import ir_datasets

        base = self._irds_base_id()
        if self.irds_id != base and self.irds_id.endswith("/" + split):
            return ir_datasets.load(self.irds_id)
        return ir_datasets.load(f"{base}/{split}")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-")


def available_datasets() -> list[tuple[str, Path]]:
    """(name, folder) of every BEIR folder on the search path; the first of a name wins."""
    found: dict[str, Path] = {}
    for folder in search_path():
        if not folder.is_dir():
            continue
        for sub in sorted(folder.iterdir()):
            if (sub / "corpus.jsonl").exists() and sub.name not in found:
                found[sub.name] = sub
    return sorted(found.items())


def load_dataset(spec: str) -> Dataset:
    """Resolve ``spec`` (a name, a folder path, or ``irds:<id>``) to a :class:`Dataset`.

    Unknown names raise :class:`InputError` listing what resolves and where to put files.
    """
    if spec.startswith("irds:"):
        irds_id = spec[5:]
        try:
            import ir_datasets

            ds = ir_datasets.load(irds_id)
        except Exception as exc:  # ir_datasets raises KeyError for unknown ids
            raise InputError(f"ir_datasets cannot load {irds_id!r}: {exc}") from None
        if not ds.has_docs():
            raise InputError(f"ir_datasets id {irds_id!r} has no documents")
        return Dataset(name=_slug("irds-" + irds_id), irds_id=irds_id)
    p = Path(spec)
    if p.is_dir() and (p / "corpus.jsonl").exists():
        return Dataset(name=p.resolve().name, path=p.resolve())
    for folder in search_path():
        cand = folder / spec
        if (cand / "corpus.jsonl").exists():
            return Dataset(name=spec, path=cand.resolve())
    where = ", ".join(str(f) for f in search_path())
    known = ", ".join(n for n, _ in available_datasets()) or "(none)"
    if spec in BEIR_NAMES:
        try:
            import ir_datasets

            ds = Dataset(name=spec, irds_id=f"beir/{spec}")
            ir_datasets.load(f"beir/{spec}").docs_count()  # forces the download where possible
            _ = ds.corpus
            return ds
        except Exception as exc:
            raise RrfbenchError(
                f"dataset {spec!r} is not on the search path ({where}) and ir_datasets could "
                f"not fetch beir/{spec} ({type(exc).__name__}: {str(exc)[:120]}). Put a BEIR "
                f"folder at <folder>/{spec}/ (corpus.jsonl, queries.jsonl, qrels/<split>.tsv) "
                f"in one of: {where}; or set RRFBENCH_DATA. Resolvable now: {known}") from None
    raise InputError(f"unknown dataset {spec!r}; resolvable: {known} (search path: {where}; "
                     f"also a folder path or irds:<id>)")
