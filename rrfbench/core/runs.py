"""Runs and qrels as plain tables, with the one rank convention used everywhere.

A :class:`Run` is a table with columns ``qid`` (str), ``docid`` (str), ``score`` (float64) and
``rank`` (int64). Ranks are **1-based** and always recomputed from the scores: sorted by score
descending, ties broken by docid ascending (string order). A TREC file's own rank column is
ignored on read. Everything downstream (evaluation, fusion, sweeps) follows this order, so two
tools never disagree about which of two tied documents comes first.

A :class:`Qrels` is a table ``qid``, ``docid``, ``relevance`` (int, graded relevance kept).

Called from: ``adaptive.features``, ``adaptive.validation``, ``core.evaluation``,
``data.datasets``, ``data.ingest``, ``data.suites``, ``fusion.config``, ``fusion.functions``,
``fusion.sweep``, ``outputs.explanations``, ``results.dataset``, ``retrievers.base``,
``retrievers.bm25``, ``retrievers.dense``, ``retrievers.entity``, ``retrievers.fts5``,
``retrievers.graph``, ``retrievers.rank_bm25``, ``retrievers.stages.rerank``,
``systems.presets``, ``systems.presets.base``, ``systems.presets.zeus``, ``tuning.advice``,
``tuning.suite_data``, ``workflows.commands``, ``workflows.dataset``, ``workflows.regress``.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import warnings
import zlib
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from .errors import CoverageWarning, InputError
from .store import write_json, write_parquet, write_text
from .trec import check_ids, parse_trec_fast, parse_trec_lines, trec_tag

RUN_COLUMNS = ["qid", "docid", "score", "rank"]
QRELS_COLUMNS = ["qid", "docid", "relevance"]


def run_frame(qid, docid, score, rank=None) -> pd.DataFrame:
    """A run table with plain object-dtype id columns (pandas would otherwise infer its
    Arrow-backed string dtype, and every conversion back to NumPy costs a copy)."""
    cols = {"qid": pd.Series(np.asarray(qid, dtype=object), dtype=object, copy=False),
            "docid": pd.Series(np.asarray(docid, dtype=object), dtype=object, copy=False),
            "score": np.asarray(score, dtype=np.float64)}
    if rank is not None:
        cols["rank"] = np.asarray(rank, dtype=np.int64)
    return pd.DataFrame(cols)


def _columns(df: pd.DataFrame, *names: str) -> list[list]:
    """The named columns as Python lists, for row loops: the same Python scalars as iterating
    each Series, without a Series iterator per column (``to_trec`` of a 292k-row run: 0.74 s ->
    0.57 s; formatting the floats is most of the rest)."""
    return [df[n].tolist() for n in names]


def _nested(df: pd.DataFrame, values: list) -> dict[str, dict]:
    """``{qid: {docid: value}}`` from a table's rows in order (``values[i]`` for row ``i``; a
    repeated pair keeps its last value), built a block of equal qids at a time: the same dict as
    a loop over the rows, ~4x faster on a 292k-row run."""
    qid, docid = _columns(df, "qid", "docid")
    q = df.qid.to_numpy(dtype=object)
    cuts = [0, *(np.flatnonzero(q[1:] != q[:-1]) + 1).tolist(), len(q)]
    out: dict[str, dict] = {}
    for a, b in zip(cuts[:-1], cuts[1:], strict=True):
        if b > a:
            out.setdefault(qid[a], {}).update(zip(docid[a:b], values[a:b], strict=True))
    return out


def read_text(path: str | Path) -> str:
    """The text of a UTF-8 file (plain or ``.gz``), for every reader in rrfbench.

    A UTF-8 byte-order mark is dropped and CRLF line ends are fine (readers split on any
    whitespace). A file that is not UTF-8 text (binary data, another encoding, a broken gzip)
    raises :class:`InputError` naming the file and the line where the problem starts.
    """
    path = Path(path)
    if not path.exists():
        raise InputError("file not found", path)
    if path.is_dir():
        raise InputError("is a folder, expected a file", path)
    raw = path.read_bytes()
    if str(path).endswith(".gz"):
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError, zlib.error) as exc:
            raise InputError(f"not a readable gzip file ({exc})", path) from None
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise InputError("binary data (a NUL byte); expected UTF-8 text", path,
                         raw.count(b"\n", 0, nul) + 1)
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8 text (byte 0x{raw[exc.start]:02x})", path,
                         raw.count(b"\n", 0, exc.start) + 1) from None


def _dense_rank_desc(score: np.ndarray) -> np.ndarray:
    """0 for the highest score, 1 for the next distinct one... (by sorting; see engine)."""
    order = np.argsort(-score, kind="stable")
    s = score[order]
    step = np.r_[0, (s[1:] != s[:-1]).astype(np.int64)] if len(s) else np.zeros(0, np.int64)
    out = np.empty(len(score), dtype=np.int64)
    out[order] = np.cumsum(step)
    return out


def _sort_and_rank(qkey: np.ndarray, dkey: np.ndarray, score: np.ndarray):
    """Row order (qid, score desc, docid asc) and 1-based ranks, from string-ordered int keys."""
    qkey = np.asarray(qkey, dtype=np.int64)
    dkey = np.asarray(dkey, dtype=np.int64)
    srank = _dense_rank_desc(score)
    nq, ns = int(qkey.max(initial=0)) + 1, int(srank.max(initial=-1)) + 1
    nd = int(dkey.max(initial=0)) + 1
    if nq * ns * nd < 2**62:  # one int64 key, one sort: ~3x faster than lexsort on 3 keys
        order = np.argsort((qkey * ns + srank.ravel()) * nd + dkey, kind="stable")
    else:
        order = np.lexsort((dkey, -score, qkey))
    qs = qkey[order]
    starts = np.r_[0, np.flatnonzero(np.diff(qs)) + 1] if len(order) else np.zeros(0, int)
    rank = np.arange(len(order)) - np.repeat(starts, np.diff(np.r_[starts, len(order)])) + 1
    return order, rank.astype(np.int64)


def docid_keys(docids) -> np.ndarray:
    """Each document's position in docid string order: the rank rule's tie key, as an int."""
    docids = np.asarray(docids, dtype=object)
    keys = np.empty(len(docids), dtype=np.int64)
    keys[np.argsort(docids.astype(str), kind="stable")] = np.arange(len(docids))
    return keys


def top_k(scores: np.ndarray, k: int, keys: np.ndarray, ordered: bool = True) -> np.ndarray:
    """Column indices of the ``k`` best entries of each row of ``scores`` by the rank rule
    (score descending, ties by ``keys`` ascending, e.g. :func:`docid_keys`), in that order
    (``ordered=False``: the same entries, in no particular order, without the sort).

    The same on every CPU. ``np.argpartition`` alone keeps an arbitrary few of the entries tied
    at the cut, and which ones depends on the SIMD sort NumPy dispatches to: on an AVX-512 CPU
    and an AVX2 one it kept different documents of scifact's BM25 run (``NPY_DISABLE_CPU_FEATURES``
    reproduces either on one machine; ``tests/core/test_runs.py`` checks both). Here the partition
    only finds the k-th best *value*, which is exact whatever the algorithm; the entries tied at
    it are chosen by ``keys``. ``keys``: one per column, or one per entry (same shape).
    """
    scores = np.atleast_2d(np.asarray(scores))
    n_rows, n = scores.shape
    keys = np.broadcast_to(np.asarray(keys, dtype=np.int64), scores.shape)
    k = min(int(k), n)
    if k <= 0 or n_rows == 0:
        return np.zeros((n_rows, max(k, 0)), dtype=np.int64)
    part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
    kth = np.take_along_axis(scores, part, 1).min(axis=1)
    for r in np.flatnonzero((scores >= kth[:, None]).sum(axis=1) > k):  # ties across the cut
        cand = np.flatnonzero(scores[r] >= kth[r])
        part[r] = cand[np.lexsort((keys[r, cand], -scores[r, cand]))[:k]]
    if not ordered:
        return part.astype(np.int64, copy=False)
    order = np.lexsort((np.take_along_axis(keys, part, 1), -np.take_along_axis(scores, part, 1)),
                       axis=1)
    return np.take_along_axis(part, order, 1).astype(np.int64, copy=False)


def manifest_path(run_file: str | Path) -> Path:
    """The manifest beside a run file: ``x.trec.gz`` -> ``x.json``."""
    run_file = Path(run_file)
    return run_file.with_name(run_file.name.split(".")[0] + ".json")


def _json_or_empty(path: Path) -> dict:
    """A JSON object file's content, or ``{}`` when it is not one."""
    try:
        obj = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError, OSError):
        return {}
    return obj if isinstance(obj, dict) else {}


def _sidecar_meta(path: Path) -> dict:
    manifest = _json_or_empty(manifest_path(path))
    return {k: manifest[k] for k in ("score_floor", "retriever", "params") if k in manifest}


def rank_table(df: pd.DataFrame) -> pd.DataFrame:
    """Sort ``(qid, docid, score)`` rows by qid, score desc, docid asc and add 1-based ``rank``."""
    qid = df["qid"].astype(str).to_numpy(dtype=object)
    docid = df["docid"].astype(str).to_numpy(dtype=object)
    score = df["score"].to_numpy(dtype=np.float64)
    # sorted factorisation: integer codes whose order is the strings' order, then one lexsort
    qcodes, _ = pd.factorize(qid, sort=True)
    dcodes, _ = pd.factorize(docid, sort=True)
    if len(qid) > 1:  # a duplicate (qid, docid) sits next to its twin once sorted by codes
        pair = qcodes.astype(np.int64) * (int(dcodes.max()) + 1) + dcodes
        pair_sorted = np.sort(pair)
        dup = np.flatnonzero(pair_sorted[1:] == pair_sorted[:-1])
        if len(dup):
            bad = pair_sorted[dup[0]]
            i = int(np.flatnonzero(pair == bad)[0])
            raise InputError(f"duplicate (qid, docid) ({qid[i]}, {docid[i]}) in run")
    order, rank = _sort_and_rank(qcodes, dcodes, score)
    return run_frame(qid[order], docid[order], score[order], rank)


class Run:
    """A ranked result list for many queries: a table ``qid, docid, score, rank``.

    Build one with :meth:`from_trec`, :meth:`from_pandas`, :meth:`from_polars`,
    :meth:`from_ranx` or :meth:`from_dict`; ranks are recomputed on construction (see module
    docstring). ``name`` labels the run in tables and fused runs. Runs are immutable by
    convention: methods return new runs.
    """

    def __init__(self, df: pd.DataFrame, name: str = "run", *, meta: Mapping | None = None,
                 _ranked: bool = False):
        missing = {"qid", "docid", "score"} - set(df.columns)
        if missing:
            raise InputError(f"a run needs columns qid, docid, score; missing {sorted(missing)}")
        # rank_table rejects duplicate (qid, docid) pairs; ranked tables come from a Run already
        self.df = df[RUN_COLUMNS].reset_index(drop=True) if _ranked else rank_table(df)
        self.name = name
        self.meta: dict = dict(meta or {})

    @property
    def score_floor(self) -> float | None:
        """The lowest score the run's scoring function can give (0 for BM25 and FTS5, -1 for
        cosine), as its retriever declared it; ``None`` when unknown (a fused run, a file
        without a manifest). Theoretical min-max normalisation needs it."""
        v = self.meta.get("score_floor")
        return None if v is None else float(v)

    # -- construction -----------------------------------------------------------------------
    @classmethod
    def from_pandas(cls, df: pd.DataFrame, name: str = "run") -> Run:
        """From a DataFrame with columns qid, docid, score (a rank column is ignored)."""
        return cls(df, name)

    @classmethod
    def from_polars(cls, df, name: str = "run") -> Run:
        """From a polars DataFrame with columns qid, docid, score."""
        return cls(df.select(["qid", "docid", "score"]).to_pandas(), name)

    @classmethod
    def from_dict(cls, d: Mapping[str, Mapping[str, float]], name: str = "run") -> Run:
        """From ``{qid: {docid: score}}`` (the pytrec_eval / ranx shape)."""
        rows = [(q, doc, float(s)) for q, docs in d.items() for doc, s in docs.items()]
        return cls(pd.DataFrame(rows, columns=["qid", "docid", "score"]), name)

    @classmethod
    def from_ranx(cls, run, name: str | None = None) -> Run:
        """From a ``ranx.Run``."""
        return cls.from_dict(run.to_dict(), name or (run.name or "run"))

    @classmethod
    def from_trec(cls, path: str | Path, name: str | None = None) -> Run:
        """Read a TREC run file (``qid Q0 docid rank score tag``; plain or ``.gz``).

        The rank column is ignored; ranks are recomputed from the scores. Raises
        :class:`InputError` naming the file and line for text that is not UTF-8, a wrong column
        count, a non-numeric or non-finite score, or a duplicate (qid, docid) (naming both
        lines). A UTF-8 BOM and CRLF line ends are accepted. An empty file gives an empty run
        and a :class:`~rrfbench.core.errors.CoverageWarning`. A manifest beside the file
        (``<stem>.json``, as rrfbench's run cache writes) supplies ``meta`` (e.g. the score
        floor).
        """
        path = Path(path)
        text = read_text(path)
        cols = parse_trec_fast(text)
        if cols is None:  # something is off: the line-by-line reader names the line and problem
            cols = parse_trec_lines(text, path)
        df = run_frame(*cols)
        if name is None:
            name = path.name.split(".")[0]
        if df.empty:
            warnings.warn(f"{path}: the run file holds no result lines", CoverageWarning,
                          stacklevel=2)
        return cls(df, name, meta=_sidecar_meta(path))

    @classmethod
    def from_parquet(cls, path: str | Path, name: str | None = None, *, ranked: bool = False,
                     qids: Iterable[str] | None = None) -> Run:
        """Read a run table from parquet (columns qid, docid, score; rank optional).

        Ranks are recomputed from the scores unless ``ranked`` (a table rrfbench wrote itself
        with :meth:`to_parquet`, already in rank order). Read lazily with polars: only these
        columns, and with ``qids`` only those queries (the filter is pushed down to the
        parquet reader, so a large file is read in part).
        """
        import polars as pl

        path = Path(path)
        if not path.exists():
            raise InputError("file not found", path)
        try:
            lazy = pl.scan_parquet(path)  # lazy: only the columns and queries asked for are read
            names = lazy.collect_schema().names()
        except Exception as exc:  # polars raises several types for a corrupt file
            raise InputError(f"not a readable parquet run table ({type(exc).__name__}: {exc})",
                             path) from None
        missing = {"qid", "docid", "score"} - set(names)
        if missing:
            raise InputError(f"a run table needs columns qid, docid, score; missing "
                             f"{sorted(missing)}", path)
        cols = ["qid", "docid", "score"] + (["rank"] if ranked and "rank" in names else [])
        lazy = lazy.select([pl.col(c).cast(pl.Utf8) if c in ("qid", "docid") else pl.col(c)
                            for c in cols])
        if qids is not None:
            lazy = lazy.filter(pl.col("qid").is_in(sorted(map(str, qids))))
        table = lazy.collect()
        cols = {c: table[c].to_numpy() for c in table.columns}
        name = name or path.name.split(".")[0]
        if "rank" in cols:
            df = run_frame(cols["qid"], cols["docid"], cols["score"], cols["rank"])
            return cls(df, name, meta=_sidecar_meta(path), _ranked=True)
        return cls(run_frame(cols["qid"], cols["docid"], cols["score"]), name,
                   meta=_sidecar_meta(path))

    @classmethod
    def from_indexed(cls, qids, q_index, docids, doc_index, scores, name: str = "run") -> Run:
        """Fast path for retrievers: rows given as indices into ``qids`` and ``docids``.

        Same ranking rule as every other constructor, without hashing row strings: the sort
        keys are the positions of ``qids`` / ``docids`` in string order. Rows must not repeat a
        (query, document) pair (a retriever's top-k never does).
        """
        qids = np.asarray(qids, dtype=object)
        docids = np.asarray(docids, dtype=object)
        q_index = np.asarray(q_index, dtype=np.int64)
        doc_index = np.asarray(doc_index, dtype=np.int64)
        score = np.asarray(scores, dtype=np.float64)
        qkey = np.empty(len(qids), dtype=np.int64)
        qkey[np.argsort(qids.astype(str), kind="stable")] = np.arange(len(qids))
        dkey = np.empty(len(docids), dtype=np.int64)
        dkey[np.argsort(docids.astype(str), kind="stable")] = np.arange(len(docids))
        order, rank = _sort_and_rank(qkey[q_index], dkey[doc_index], score)
        df = run_frame(qids[q_index[order]], docids[doc_index[order]], score[order], rank)
        return cls(df, name, _ranked=True)

    # -- output -----------------------------------------------------------------------------
    def to_pandas(self) -> pd.DataFrame:
        """A copy of the table (qid, docid, score, rank)."""
        return self.df.copy()

    def to_polars(self):
        """The table as a polars DataFrame."""
        import polars as pl

        return pl.from_pandas(self.df)

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{qid: {docid: score}}`` in rank order."""
        return _nested(self.df, self.df.score.to_numpy(np.float64).tolist())

    def to_rank_dict(self) -> dict[str, dict[str, float]]:
        """``{qid: {docid: n - rank + 1}}``: strictly decreasing scores in this run's order.

        Hand this to any evaluator (ranx, pytrec_eval, ir_measures) and it sees exactly this
        run's order, whatever its own tie rule is.
        """
        n = len(self.df) + 1
        return _nested(self.df, (n - self.df["rank"].to_numpy(np.int64)).astype(np.float64).tolist())

    def to_parquet(self, path: str | Path) -> Path:
        """Write the ranked table as parquet (ids dictionary-encoded), atomically."""
        table = pa.table({"qid": pa.array(self.df.qid.to_numpy(dtype=object), pa.string()).dictionary_encode(),
                          "docid": pa.array(self.df.docid.to_numpy(dtype=object), pa.string()),
                          "score": pa.array(self.df.score.to_numpy(np.float64)),
                          "rank": pa.array(self.df["rank"].to_numpy(np.int64))})
        return write_parquet(path, table)

    def to_ranx(self):
        """A ``ranx.Run`` with the same scores (note: ranx breaks ties its own way)."""
        import ranx

        return ranx.Run(self.to_dict(), name=self.name)

    def to_trec(self, path: str | Path, tag: str | None = None,
                manifest: Mapping | None = None) -> Path:
        """Write the run as TREC 6-column text (``.gz`` compresses), atomically.

        Every line has exactly six whitespace-separated fields: the tag is
        :func:`trec_tag` of ``tag`` or the run's name, and a query or document id holding
        whitespace is refused (:class:`InputError`) before anything is written. With
        ``manifest``, a JSON manifest is written beside the file (:func:`manifest_path`:
        ``x.trec`` -> ``x.json``) holding the run's full name, its tag and ``manifest``'s
        fields (configuration, provenance); an existing file there that is not an rrfbench
        run manifest is never overwritten.
        """
        tag = trec_tag(tag or self.name)
        qids, docids, ranks, scores = _columns(self.df, "qid", "docid", "rank", "score")
        check_ids(qids, "query id")
        check_ids(docids, "document id")
        side = manifest_path(path) if manifest is not None else None
        if side is not None and side.exists() and "rrfbench_run" not in _json_or_empty(side):
            raise InputError(f"{side} exists and is not an rrfbench run manifest; not "
                             "overwriting it (write the run under another name)")
        lines = [f"{q} Q0 {d} {r} {s!r} {tag}\n"
                 for q, d, r, s in zip(qids, docids, ranks, scores, strict=True)]
        write_text(path, "".join(lines))
        if side is not None:
            write_json(side, {"rrfbench_run": Path(path).name, "name": self.name, "tag": tag,
                              **dict(manifest)})
        return Path(path)

    # -- views ------------------------------------------------------------------------------
    @property
    def qids(self) -> list[str]:
        """Query ids present in the run (sorted)."""
        return sorted(self.df.qid.unique())

    def __len__(self) -> int:
        return len(self.df)

    def __repr__(self) -> str:
        return f"Run({self.name!r}, {self.df.qid.nunique()} queries, {len(self.df)} rows)"

    def cut(self, depth: int) -> Run:
        """Keep each query's top ``depth`` documents."""
        return Run(self.df[self.df["rank"] <= depth], self.name, meta=self.meta, _ranked=True)

    def rename(self, name: str) -> Run:
        return Run(self.df, name, meta=self.meta, _ranked=True)

    def with_meta(self, **meta) -> Run:
        """The same run with ``meta`` entries added (e.g. ``score_floor=0.0``)."""
        return Run(self.df, self.name, meta={**self.meta, **meta}, _ranked=True)

    def subset(self, qids: Iterable[str]) -> Run:
        """Only the given queries."""
        keep = set(map(str, qids))
        return Run(self.df[self.df.qid.isin(keep)], self.name, meta=self.meta, _ranked=True)

    def equals(self, other: Run) -> bool:
        a, b = self.df, other.df
        return (len(a) == len(b) and a.qid.tolist() == b.qid.tolist()
                and a.docid.tolist() == b.docid.tolist() and np.allclose(a.score, b.score))


class Qrels:
    """Relevance judgments: a table ``qid, docid, relevance`` (graded; ints)."""

    def __init__(self, df: pd.DataFrame, name: str = "qrels"):
        out = df[QRELS_COLUMNS].copy()
        out["qid"] = out["qid"].astype(str)
        out["docid"] = out["docid"].astype(str)
        out["relevance"] = out["relevance"].astype(np.int64)
        self.df = out.sort_values(["qid", "docid"], kind="mergesort").reset_index(drop=True)
        self.name = name

    @classmethod
    def from_dict(cls, d: Mapping[str, Mapping[str, int]], name: str = "qrels") -> Qrels:
        rows = [(q, doc, int(r)) for q, docs in d.items() for doc, r in docs.items()]
        return cls(pd.DataFrame(rows, columns=QRELS_COLUMNS), name)

    @classmethod
    def from_file(cls, path: str | Path) -> Qrels:
        """Read TREC 4-column qrels (``qid 0 docid rel``) or BEIR tsv (header ``query-id``...).

        Raises :class:`InputError` naming file and line for malformed lines.
        """
        path = Path(path)
        rows = []
        seen: dict[tuple[str, str], int] = {}
        for lineno, line in enumerate(read_text(path).split("\n"), 1):
            parts = line.split()
            if not parts:
                continue
            if lineno == 1 and parts[0] in ("query-id", "qid", "query_id"):
                continue  # BEIR header
            if len(parts) == 4:
                qid, _, docid, rel_s = parts
            elif len(parts) == 3:
                qid, docid, rel_s = parts
            else:
                raise InputError(
                    f"expected 3 (BEIR tsv) or 4 (TREC) columns, found {len(parts)}",
                    path, lineno)
            try:
                rel = float(rel_s)
            except ValueError:
                raise InputError(f"relevance {rel_s!r} is not a number", path, lineno) from None
            if not np.isfinite(rel) or rel != int(rel):
                raise InputError(f"relevance {rel_s!r} is not a whole number", path, lineno)
            if (qid, docid) in seen:
                raise InputError(
                    f"duplicate judgment ({qid}, {docid}); first on line {seen[qid, docid]}",
                    path, lineno)
            seen[qid, docid] = lineno
            rows.append((qid, docid, int(rel)))
        return cls(pd.DataFrame(rows, columns=QRELS_COLUMNS), path.stem)

    def to_dict(self) -> dict[str, dict[str, int]]:
        return _nested(self.df, self.df.relevance.to_numpy(np.int64).tolist())

    def to_ranx(self):
        import ranx

        return ranx.Qrels(self.to_dict(), name=self.name)

    def to_pandas(self) -> pd.DataFrame:
        return self.df.copy()

    def to_polars(self):
        import polars as pl

        return pl.from_pandas(self.df)

    def to_trec(self, path: str | Path) -> Path:
        lines = [f"{q} 0 {d} {r}\n" for q, d, r in
                 zip(*_columns(self.df, "qid", "docid", "relevance"), strict=True)]
        write_text(path, "".join(lines))
        return Path(path)

    @property
    def qids(self) -> list[str]:
        return sorted(self.df.qid.unique())

    def subset(self, qids: Iterable[str]) -> Qrels:
        keep = set(map(str, qids))
        return Qrels(self.df[self.df.qid.isin(keep)], self.name)

    def __len__(self) -> int:
        return len(self.df)

    def __repr__(self) -> str:
        return f"Qrels({self.name!r}, {self.df.qid.nunique()} queries, {len(self.df)} judgments)"


def content_digest(run: Run) -> str:
    """What a run holds, not how it was made: sha256 of its (qid, docid, score rounded to 1e-9)
    rows in (qid, docid) order. Computed once when a run is written and kept in its manifest
    (``content_digest``); saved results record the digests of the runs they read."""
    df = run.df.sort_values(["qid", "docid"], kind="stable")
    h = hashlib.sha256()
    for col in ("qid", "docid"):
        h.update("\0".join(map(str, df[col].tolist())).encode())  # as astype(str), 5x faster
        h.update(b"\1")
    h.update(np.round(df.score.to_numpy(dtype="<f8"), 9).tobytes())
    return h.hexdigest()[:16]
