"""The sweep engine: evaluate a whole grid of fusion configurations at once, resumably.

:class:`FusionEngine` builds, once, each query's candidate union (documents of any run, in
docid order) and each run's rank (and normalised score) per candidate, plus the qrels' gains.
:meth:`FusionEngine.evaluate` then scores many configurations per pass in a numba kernel
(:mod:`rrfbench.fusion.kernels`) that computes every metric from the fused ranks of the relevant
documents only - the same numbers as :func:`rrfbench.fusion.functions.rrf` + :func:`rrfbench.core.evaluation.evaluate`
(checked in tests), thousands of times faster.

:func:`run_sweep` walks a grid in chunks, appends each finished chunk to
``<out>/sweep.parts/`` atomically and writes ``<out>/sweep.parquet`` at the end: a killed sweep
restarts where it stopped. The table has one row per configuration (its parameters and the
mean of each metric) and keeps the per-query values of the first metric (``per_query``) for
statistics.

Called from: ``outputs.plots``, ``tuning.holdout``, ``tuning.suite_data``,
``workflows.commands``, ``workflows.dataset``, ``workflows.demo``, ``workflows.explorer``,
``workflows.suite``.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import InputError
from ..core.metrics import DEFAULT_METRICS, parse_metrics
from ..core.parallel import ChunkMap, local_chunks
from ..core.progress import progress as progress_bar
from ..core.runs import Qrels, Run, content_digest
from ..core.store import write_json, write_parquet
from .config import Config
from .functions import (  # the fusion options are defined there; METHODS is re-exported here
    METHODS,  # noqa: F401
    MISSING,  # noqa: F401
    NORMALISATIONS,  # noqa: F401
    check_choices,
    check_numbers,
    normalise,
    score_floors,
)

ABSENT = np.inf
NO_DEPTH = 1e15


def simplex_weights(n: int, step: float = 0.1) -> list[tuple]:
    """All weight vectors on the simplex with the given step (integer arithmetic: no float drift).

    Each vector sums to 1; vectors with zeros (single runs, pairs) are included.
    """
    m = round(1 / step)
    out = []
    for combo in itertools.product(range(m + 1), repeat=n):
        if sum(combo) == m:
            out.append(tuple(round(c / m, 10) for c in combo))
    return out


def make_grid(n_runs: int, methods=("rrf",), k=(60,), weights=None, depth=(None,),
              per_run_k: bool = False, rank_base=(1,), norms=("minmax", "zscore"),
              missing=("zero",), limit=None, weight_step: float = 0.1) -> list[Config]:
    """The cartesian grid, in a fixed order (its position is the ``config_id``).

    Without ``weights``, the weight vectors are the simplex at ``weight_step`` plus, when the
    step cannot express it (three runs at 0.1), the equal-weight vector: RRF k=60 with equal
    weights, the usual default, is then always a grid point. Every value is checked; a bad one
    raises :class:`InputError` naming the option.
    """
    for values, name in ((methods, "method"), (norms, "norm"), (missing, "missing"),
                         (rank_base, "rank_base")):
        for v in values:
            check_choices(**{name: v})
    if not k:
        raise InputError("k: give at least one value")
    check_numbers(k, "k", positive=0 in rank_base)
    for d in depth:
        check_numbers(d if isinstance(d, tuple) else (d,), "depth", positive=True, integer=True)
        if isinstance(d, tuple) and len(d) != n_runs:
            raise InputError(f"depth: expected one value per run ({n_runs}), got {len(d)}")
    if weights is None:
        if not (0 < weight_step <= 1) or abs(1 / weight_step - round(1 / weight_step)) > 1e-9:
            raise InputError(f"weight step: {weight_step!r} must divide 1 (e.g. 0.1, 0.25, 0.5)")
        wgrid = simplex_weights(n_runs, weight_step)
        equal = tuple(1 / n_runs for _ in range(n_runs))
        if not any(np.allclose(w, equal) for w in wgrid):
            wgrid.append(equal)  # the RRF default (equal weights) is always on the grid
    else:
        wgrid = []
        for w in weights:
            if len(w) != n_runs:
                raise InputError(f"weights: {','.join(map(str, w))} has {len(w)} values; "
                                 f"expected one per run ({n_runs})")
            check_numbers(w, "weights")
            wgrid.append(tuple(map(float, w)))
    wgrid = [w for w in wgrid if sum(w) > 0]
    if not wgrid:
        raise InputError("weights: every weight vector is all zeros")
    out: list[Config] = []
    for method in methods:
        if method == "rrf":
            kgrid = list(itertools.product(k, repeat=n_runs)) if per_run_k else [(x,) * n_runs for x in k]
            dgrid = [d if isinstance(d, tuple) else (d,) * n_runs for d in depth]
            for kk, w, d, b in itertools.product(kgrid, wgrid, dgrid, rank_base):
                out.append(Config("rrf", tuple(map(float, kk)), w, d, int(b), None, None, limit))
        elif method == "convex":
            for norm, w, miss in itertools.product(norms, wgrid, missing):
                out.append(Config("convex", (0.0,) * n_runs, w, (None,) * n_runs, 1, norm, miss, limit))
        elif method in ("combsum", "combmnz"):
            for norm, miss in itertools.product(norms, missing):
                out.append(Config(method, (0.0,) * n_runs, (1.0,) * n_runs, (None,) * n_runs, 1,
                                  norm, miss, limit))
    return out


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """``np.unique`` by sorting (NumPy 2.4's hash-based unique is ~60x slower on millions of
    int64 keys)."""
    k = np.sort(a)
    return k[np.r_[True, k[1:] != k[:-1]]] if len(k) else k


def metric_codes(metric_objs) -> tuple[np.ndarray, np.ndarray]:
    """(family codes, cut-offs) of parsed metrics as the metric kernel reads them."""
    from . import kernels as K  # numba (~0.5 s to import): loaded by the first engine

    family = {"nDCG": K.NDCG, "R": K.RECALL, "RR": K.RR, "AP": K.AP, "P": K.PREC}
    return (np.array([family[m.family] for m in metric_objs], dtype=np.int64),
            np.array([m.cutoff or K.INF_RANK for m in metric_objs], dtype=np.int64))


def ideal_dcg(relevant: pd.DataFrame, qids: list[str], metric_objs) -> np.ndarray:
    """(queries, metrics) ideal DCG at each nDCG metric's cut-off from the relevant judgments
    (linear gains); 0 for the other metrics. Summed one term at a time in rank order with the C
    library's ``log2``, as trec_eval's ``ndcg_cut`` does, so a metric the kernel computes is the
    very float trec_eval gives (NumPy's pairwise sum and its own SIMD ``log2`` differ from it
    in the last bit)."""
    out = np.zeros((len(qids), len(metric_objs)))
    grades = {q: sorted(g.tolist(), reverse=True) for q, g in relevant.groupby("qid").relevance}
    for qi, q in enumerate(qids):
        g = grades.get(q)
        if g is None:
            continue
        for m, mo in enumerate(metric_objs):
            if mo.family == "nDCG":
                total = 0.0
                for i, grade in enumerate(g[: (mo.cutoff or len(g))]):
                    total += float(grade) / math.log2(i + 2)
                out[qi, m] = total
    return out


class JudgedLists:
    """Per-query metrics of ranked docid lists against ``qrels``, by the sweep engine's metric
    kernel: the numbers of :func:`rrfbench.core.evaluation.evaluate_per_query` on a run holding those
    lists (same conventions: a document is relevant at grade >= 1, linear gains, a judged query
    without a list scores 0; the same floats, bit for bit, tested), without building a run table or calling
    trec_eval per list. A studied system's grid is many such lists per query
    (:func:`rrfbench.tuning.holdout.preset_matrix`), and building and scoring run tables was most of
    its cost."""

    def __init__(self, qrels: Qrels, metrics=DEFAULT_METRICS):
        from . import kernels as K

        self._kernel = K._metrics_for_query
        self.metric_objs = parse_metrics(metrics)
        self.qids = qrels.qids
        rel = qrels.df[qrels.df.relevance > 0]
        self.gains: dict[str, dict[str, float]] = {q: {} for q in self.qids}
        for q, d, g in zip(rel.qid.tolist(), rel.docid.tolist(), rel.relevance.tolist(),
                           strict=True):
            self.gains[q][d] = float(g)
        self.n_rel = np.array([len(self.gains[q]) for q in self.qids], dtype=np.int64)
        self.fam, self.cut = metric_codes(self.metric_objs)
        self.idcg = ideal_dcg(rel, self.qids, self.metric_objs)

    def score(self, lists: dict[str, list[str]]) -> np.ndarray:
        """(metrics, judged queries in ``qids`` order) values of ``lists`` (qid -> docids in
        rank order, rank 1 first; queries not judged are ignored)."""
        out = np.zeros((len(self.metric_objs), len(self.qids)))
        row = np.zeros(len(self.metric_objs))
        for qi, q in enumerate(self.qids):
            docs = lists.get(q)
            gains = self.gains[q]
            if not docs or not gains:
                continue
            hits = [(i, gains[d]) for i, d in enumerate(docs, 1) if d in gains]
            if not hits:
                continue
            self._kernel(np.array([i for i, _ in hits], dtype=np.int64),
                         np.array([g for _, g in hits]), self.n_rel[qi], self.idcg[qi],
                         self.fam, self.cut, row)
            out[:, qi] = row
        return out


@dataclass
class FusionEngine:
    """Precomputed candidates, ranks, normalised scores and gains for fast sweeps."""

    runs: list[Run]
    qrels: Qrels
    metrics: tuple = DEFAULT_METRICS
    qids: list[str] = field(init=False)

    def __post_init__(self):
        self.metric_objs = parse_metrics(self.metrics)
        self.metric_names = [str(m) for m in self.metric_objs]
        if not self.runs:
            raise InputError("the sweep engine needs at least one run")
        self.names = [r.name for r in self.runs]
        if len(set(self.names)) != len(self.names):
            raise InputError(f"runs need distinct names; got {self.names}")
        self.floors = [r.score_floor for r in self.runs]
        self.qids = self.qrels.qids
        # integer keys: query position x (docid code in string order); no string hashing
        qindex = pd.Index(self.qids)
        qr = self.qrels.df[self.qrels.df.relevance > 0]
        ids = [r.df.docid.to_numpy(dtype=object) for r in self.runs] + [qr.docid.to_numpy(dtype=object)]
        codes, vocab = pd.factorize(np.concatenate(ids), sort=True)
        nd = max(len(vocab), 1)
        bounds = np.cumsum([0] + [len(x) for x in ids])
        keys, kept = [], []
        for r, run in enumerate(self.runs):
            qi = qindex.get_indexer(run.df.qid.to_numpy(dtype=object))
            keep = qi >= 0  # queries without judgments are not swept
            keys.append(qi[keep].astype(np.int64) * nd + codes[bounds[r]:bounds[r + 1]][keep])
            kept.append(keep)
        cand_keys = sorted_unique(np.concatenate(keys)) if keys else np.zeros(0, np.int64)
        n = len(cand_keys)
        cand_qi = cand_keys // nd
        self.cand = pd.DataFrame({"qid": np.asarray(self.qids, dtype=object)[cand_qi],
                                  "docid": np.asarray(vocab, dtype=object)[cand_keys % nd],
                                  "qi": cand_qi})
        counts = np.bincount(cand_qi, minlength=len(self.qids))
        self.qstart = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        R = len(self.runs)
        self.ranks = np.full((n, R), ABSENT)
        self._pos = []
        for r, run in enumerate(self.runs):
            pos = np.searchsorted(cand_keys, keys[r])
            df = run.df[kept[r]]
            self.ranks[pos, r] = df["rank"].to_numpy(dtype=np.float64)
            self._pos.append((pos, df))
        # integer ranks (0 = absent) for the division-free RRF path
        self.iranks = np.where(np.isfinite(self.ranks), self.ranks, 0).astype(np.int32)
        self.max_rank = int(self.iranks.max()) if n else 0
        # visiting order for the pruned RRF path: per query, by best rank in any run
        best = np.where(self.iranks > 0, self.iranks, self.max_rank + 1).min(axis=1) if n else \
            np.zeros(0, dtype=np.int32)
        self.perm = np.lexsort((np.arange(n), best, cand_qi)).astype(np.int64)
        self.minr = best[self.perm].astype(np.int64)
        # relevant documents (sorted by query, then docid), gains, ideal DCG
        rqi = qindex.get_indexer(qr.qid.to_numpy(dtype=object)).astype(np.int64)
        rkey = rqi * nd + codes[bounds[-2]:]
        order = np.argsort(rkey, kind="stable")
        rkey, rqi = rkey[order], rqi[order]
        qr = qr.iloc[order]
        rel_counts = np.bincount(rqi, minlength=len(self.qids))
        self.rel_start = np.concatenate([[0], np.cumsum(rel_counts)]).astype(np.int64)
        pos = np.searchsorted(cand_keys, rkey)
        found = (pos < n) & (cand_keys[np.minimum(pos, max(n - 1, 0))] == rkey) if n else \
            np.zeros(len(rkey), dtype=bool)
        self.rel_cand = np.where(found, pos, -1).astype(np.int64)
        self.rel_gain = qr.relevance.to_numpy(dtype=np.float64)
        self.n_rel = rel_counts.astype(np.int64)
        self.fam, self.cut = metric_codes(self.metric_objs)
        self.idcg = ideal_dcg(qr, self.qids, self.metric_objs)
        self._norm_cache: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def _normvals(self, norms: list[str]):
        """(n_norm, N, R) normalised scores and (n_norm, 2, Q, R) missing values (zero, min)."""
        n, R, Q = len(self.cand), len(self.runs), len(self.qids)
        vals = np.zeros((max(len(norms), 1), n, R))
        miss = np.zeros((max(len(norms), 1), 2, Q, R))
        qpos = {q: i for i, q in enumerate(self.qids)}
        for i, norm in enumerate(norms):
            if norm not in self._norm_cache:
                floors = score_floors(self.runs, self.floors, norm)
                v = np.zeros((n, R))
                mv = np.zeros((Q, R))
                for r, (pos, df) in enumerate(self._pos):
                    nv = normalise(df, norm, floors[r]).to_numpy()
                    v[pos, r] = nv
                    mins = pd.Series(nv).groupby(df.qid.to_numpy()).min()
                    mv[[qpos[q] for q in mins.index], r] = mins.to_numpy()
                self._norm_cache[norm] = (v, mv)
            vals[i], miss[i, 1] = self._norm_cache[norm]
        return vals, miss

    def evaluate(self, configs: list[Config]) -> np.ndarray:
        """Per-query metric values, shape (configs, metrics, queries)."""
        from . import kernels as K

        C, R = len(configs), len(self.runs)
        modes = np.zeros(C, dtype=np.int64)
        ks = np.zeros((C, R))
        ws = np.zeros((C, R))
        depths = np.full((C, R), NO_DEPTH)
        bases = np.zeros(C)
        limits = np.zeros(C, dtype=np.int64)
        norm_idx = np.zeros(C, dtype=np.int64)
        miss_idx = np.zeros(C, dtype=np.int64)
        norms = sorted({c.norm for c in configs if c.method != "rrf"})
        for i, c in enumerate(configs):
            c.check(R)
            modes[i] = {"rrf": K.MODE_RRF, "convex": K.MODE_SUM, "combsum": K.MODE_SUM,
                        "combmnz": K.MODE_MNZ}[c.method]
            ks[i] = c.k
            ws[i] = c.weights
            depths[i] = [NO_DEPTH if d is None else d for d in c.depth]
            bases[i] = c.rank_base
            limits[i] = c.limit or 0
            if c.method != "rrf":
                norm_idx[i] = norms.index(c.norm)
                miss_idx[i] = 1 if c.missing == "min" else 0
        normvals, missvals = self._normvals(norms)
        out = np.zeros((C, len(self.fam), len(self.qids)))
        K.sweep_kernel(self.qstart, self.ranks, self.iranks, self.perm, self.minr, self.max_rank,
                       normvals, missvals, self.rel_start,
                       self.rel_cand, self.rel_gain, self.n_rel, self.idcg, self.fam, self.cut,
                       modes, ks, ws, depths, bases, norm_idx, miss_idx, limits, out)
        return out

    def table(self, configs: list[Config], start_id: int = 0) -> pd.DataFrame:
        """Sweep rows for ``configs``: parameters, metric means, per-query first metric."""
        pq = self.evaluate(configs)
        rows = []
        for i, c in enumerate(configs):
            row = {"config_id": start_id + i, **c.row(self.names)}
            for m, name in enumerate(self.metric_names):
                row[name] = float(pq[i, m].mean()) if pq.shape[2] else 0.0
            row["per_query"] = pq[i, 0].tolist()
            rows.append(row)
        return pd.DataFrame(rows)

    def subset(self, qids) -> FusionEngine:
        """An engine over only some judged queries (for folds)."""
        return FusionEngine(self.runs, self.qrels.subset(qids), self.metrics)


def grid_hash(engine: FusionEngine, configs: list[Config]) -> str:
    blob = json.dumps({"runs": engine.names, "metrics": engine.metric_names,
                       "qids": engine.qids, "configs": [c.to_json() for c in configs],
                       "run_content": [content_digest(r) for r in engine.runs]}, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


def run_sweep(engine: FusionEngine, configs: list[Config], out: str | Path | None = None,
              chunk_size: int = 256, progress: bool = True, name: str = "sweep",
              map_chunks: ChunkMap | None = None, on_chunk=None) -> pd.DataFrame:
    """Evaluate ``configs``; with ``out``, write ``out/<name>.parquet`` resumably (see module doc).

    ``map_chunks`` scores the chunks (:mod:`rrfbench.core.parallel`; default: here, in order), e.g.
    as Dask tasks (:func:`rrfbench.workflows.distributed.chunk_map`): this process alone writes them, and
    the table is the same. ``on_chunk(index)`` is called after each chunk is written.
    """
    if out is None and map_chunks is None:
        return engine.table(configs)
    if out is None:
        with tempfile.TemporaryDirectory() as tmp:
            return run_sweep(engine, configs, tmp, chunk_size, progress, name, map_chunks,
                             on_chunk)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    final = out / f"{name}.parquet"
    h = grid_hash(engine, configs)
    if final.exists():
        done = pd.read_parquet(final)
        if len(done) == len(configs) and "grid_hash" in done and (done.grid_hash == h).all():
            return done
    parts = out / f"{name}.parts"
    meta = parts / "grid.json"
    if parts.exists() and (not meta.exists() or json.loads(meta.read_text()).get("hash") != h):
        shutil.rmtree(parts)
    parts.mkdir(parents=True, exist_ok=True)
    write_json(meta, {"hash": h, "n_configs": len(configs), "chunk_size": chunk_size})
    n_chunks = (len(configs) + chunk_size - 1) // chunk_size
    delay = float(os.environ.get("RRFBENCH_SWEEP_CHUNK_DELAY", "0") or 0)  # for kill/resume tests
    todo = [i for i in range(n_chunks) if not (parts / f"chunk-{i:05d}.parquet").exists()]
    done_n = sum(len(configs[i * chunk_size:(i + 1) * chunk_size])
                 for i in range(n_chunks) if i not in set(todo))
    bar = progress_bar(total=len(configs), desc=f"{name}: {len(configs)} configurations",
                       unit="cfg", initial=done_n, enabled=progress and bool(todo))
    chunks = [(i, configs[i * chunk_size:(i + 1) * chunk_size], i * chunk_size) for i in todo]
    for i, table in (map_chunks or local_chunks)(engine, chunks, h):
        write_parquet(parts / f"chunk-{i:05d}.parquet", table)
        bar.update(len(table))
        if on_chunk is not None:
            on_chunk(i)
        if delay:
            time.sleep(delay)
    bar.close()
    tables = [pd.read_parquet(parts / f"chunk-{i:05d}.parquet") for i in range(n_chunks)]
    result = pd.concat(tables, ignore_index=True)
    write_parquet(final, result)
    shutil.rmtree(parts, ignore_errors=True)
    return result


def family_labels(table: pd.DataFrame) -> pd.Series:
    """Fusion family of each sweep row: ``rrf``, ``convex zscore /min``, ``combmnz minmax /zero``..."""
    return (table.method + table.norm.where(table.norm == "", " " + table.norm)
            + table.missing.where(table.missing == "", " /" + table.missing))


def configs_from_table(table: pd.DataFrame, names: list[str]) -> list[Config]:
    """Rebuild :class:`Config` objects from sweep rows."""
    out = []
    for r in table.to_dict("records"):  # not itertuples: a run named "fts5-phrase" or
        out.append(Config(                # "run-engine" is no identifier, so no tuple field
            method=r["method"], k=tuple(float(r[f"k_{n}"]) for n in names),
            weights=tuple(float(r[f"w_{n}"]) for n in names),
            depth=tuple(int(r[f"depth_{n}"]) or None for n in names), rank_base=int(r["rank_base"]),
            norm=r["norm"] or None, missing=r["missing"] or None, limit=int(r["limit"]) or None))
    return out
