"""Rank and score fusion: pure functions from runs (and per-run settings) to a fused run.

**Weighted reciprocal rank fusion** (Cormack, Clarke & Buettcher, SIGIR 2009; weighted and
per-run k as in Bruch, Gai & Ingber, TOIS 2023, "RRF(eta_lex, eta_sem)")::

    score(d) = sum_r  w_r / (k_r + rank_r(d) - 1 + rank_base)

* ``rank_r(d)`` is d's 1-based rank in run r (the run's own order: score desc, docid asc).
  ``rank_base=1`` gives Cormack's ``w / (k + rank)`` (nexusAI, titan: ``w / (k + i + 1)`` with
  0-based i); ``rank_base=0`` gives ``w / (k + i)`` with i as ``enumerate`` counts (Zeus:
  ``weight / (rank + 60)``).
* ``depth`` (one int, or one per run): fuse only each run's top N (nexusAI asks FTS for
  2 x limit, titan and Zeus fetch 3 x limit).
* A run with weight 0 contributes nothing **and adds no documents** (nexusAI's guard).
* Documents absent from a run contribute 0 from it. The fused run is cut to ``limit``.
* Ties in the fused score are broken by docid ascending (the :class:`~rrfbench.runs.Run`
  convention), never by input order.

**Score fusion baselines** (Fox & Shaw 1994; Bruch et al. 2023): ``combsum`` (sum of normalised
scores), ``combmnz`` (combsum x number of runs that retrieved d) and ``convex`` (``sum_r w_r *
norm_r(d)``, i.e. ``alpha * s_dense + (1 - alpha) * s_lex`` for two runs). Normalisations, per
query and per run: ``minmax``, ``zscore`` (population std), ``tmm`` (theoretical min-max: the
scoring function's lowest possible score instead of the observed minimum; 0 for BM25/FTS5,
-1 for cosine), ``none``.

What a document absent from one run gets (``missing``): ``"zero"`` is ranx's choice (0 after
normalisation: after z-scoring that is the run's *mean*, which rewards absence);
``"min"`` gives it the run's minimum normalised score for that query (after min-max that is
also 0, so the two only differ for z-score and tmm).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from .runs import Run

NORMALISATIONS = ("minmax", "zscore", "tmm", "none")
THEORETICAL_MIN = {"bm25": 0.0, "fts5": 0.0, "rank_bm25": 0.0, "dense": -1.0}


def _per_run(value, n: int, what: str) -> list:
    if value is None or np.isscalar(value):
        return [value] * n
    value = list(value)
    if len(value) != n:
        raise ValueError(f"{what}: expected one value or {n} (one per run), got {len(value)}")
    return value


def _long_table(runs: Sequence[Run], depth) -> pd.DataFrame:
    depths = _per_run(depth, len(runs), "depth")
    frames = []
    for i, (run, d) in enumerate(zip(runs, depths, strict=True)):
        df = run.df if d is None else run.df[run.df["rank"] <= d]
        frames.append(df.assign(run=i))
    return pd.concat(frames, ignore_index=True)


def rrf(runs: Sequence[Run], k: float | Sequence[float] = 60, weights: Sequence[float] | None = None,
        rank_base: int = 1, depth: int | Sequence[int] | None = None, limit: int | None = None,
        name: str | None = None) -> Run:
    """Weighted RRF of ``runs`` (see module docstring for every rule)."""
    n = len(runs)
    ks = np.asarray(_per_run(k, n, "k"), dtype=np.float64)
    ws = np.asarray(_per_run(1.0 if weights is None else weights, n, "weights"), dtype=np.float64)
    if rank_base not in (0, 1):
        raise ValueError("rank_base must be 0 or 1")
    if (ws < 0).any():
        raise ValueError("weights must be >= 0")
    long = _long_table(runs, depth)
    long = long[ws[long.run.to_numpy()] > 0]  # weight 0: no contribution, no documents
    r = long.run.to_numpy()
    long = long.assign(score=ws[r] / (ks[r] + long["rank"].to_numpy() - 1 + rank_base))
    fused = long.groupby(["qid", "docid"], as_index=False, sort=False)["score"].sum()
    out = Run(fused, name or _name("rrf", runs, k=k, w=weights))
    return out.cut(limit) if limit else out


def normalise(df: pd.DataFrame, method: str, theoretical_min: float | None = None) -> pd.Series:
    """Per-query normalised ``score`` column of one run's table."""
    s = df["score"]
    g = s.groupby(df["qid"], sort=False)
    if method == "none":
        return s.astype(np.float64)
    if method == "minmax":
        lo, hi = g.transform("min"), g.transform("max")
    elif method == "tmm":
        hi = g.transform("max")
        lo = g.transform("min") if theoretical_min is None else pd.Series(theoretical_min, index=s.index)
    elif method == "zscore":
        mu, sd = g.transform("mean"), g.transform(lambda x: x.std(ddof=0))
        return ((s - mu) / sd.replace(0.0, 1.0)).astype(np.float64)
    else:
        raise ValueError(f"unknown normalisation {method!r}; choose from {NORMALISATIONS}")
    span = (hi - lo).replace(0.0, np.nan)
    return ((s - lo) / span).fillna(1.0).astype(np.float64)


def _theoretical_min(run: Run) -> float | None:
    return THEORETICAL_MIN.get(run.name.split("-")[0].split(":")[0])


def score_fusion(runs: Sequence[Run], method: str = "convex", norm: str = "minmax",
                 weights: Sequence[float] | None = None, missing: str = "zero",
                 depth: int | Sequence[int] | None = None, limit: int | None = None,
                 theoretical_min: Sequence[float | None] | None = None,
                 name: str | None = None) -> Run:
    """CombSUM / CombMNZ / convex combination of normalised scores (see module docstring)."""
    if method not in ("combsum", "combmnz", "convex"):
        raise ValueError(f"unknown score fusion {method!r}")
    if missing not in ("zero", "min"):
        raise ValueError("missing must be 'zero' or 'min'")
    n = len(runs)
    ws = np.asarray(_per_run(1.0 if weights is None or method != "convex" else weights, n,
                             "weights"), dtype=np.float64)
    tmins = theoretical_min or [_theoretical_min(r) for r in runs]
    depths = _per_run(depth, n, "depth")
    parts = []
    for i, run in enumerate(runs):
        if ws[i] == 0:
            continue
        df = run.df if depths[i] is None else run.df[run.df["rank"] <= depths[i]]
        parts.append(df[["qid", "docid"]].assign(run=i, norm=normalise(df, norm, tmins[i]).values))
    long = pd.concat(parts, ignore_index=True)
    pivot = long.pivot_table(index=["qid", "docid"], columns="run", values="norm", aggfunc="first")
    present = pivot.notna()
    if missing == "min":
        qmin = long.groupby(["qid", "run"])["norm"].min().unstack("run")
        fill = qmin.reindex(pivot.index.get_level_values("qid")).set_axis(pivot.index)
        pivot = pivot.fillna(fill[pivot.columns])
    pivot = pivot.fillna(0.0)
    score = (pivot * ws[pivot.columns.to_numpy()]).sum(axis=1)
    if method == "combmnz":
        score = score * present.sum(axis=1)
    fused = score.rename("score").reset_index()
    out = Run(fused, name or _name(method, runs, norm=norm, w=weights if method == "convex" else None))
    return out.cut(limit) if limit else out


def _name(method: str, runs: Sequence[Run], **params) -> str:
    bits = [f"{k}={v if np.isscalar(v) else ','.join(map(str, v))}"
            for k, v in params.items() if v is not None]
    return f"{method}({'+'.join(r.name for r in runs)}{';' if bits else ''}{';'.join(bits)})"


def order_to_scores(scores: Sequence[float]) -> np.ndarray:
    """Scores, as close to ``scores`` as floats allow, that are strictly decreasing.

    For a list already in a system's own final order (with ties resolved its way, e.g. stable
    sort by first appearance), this keeps that order under rrfbench's docid tie rule: each tie
    is split by single-ulp steps, which moves no score by more than ~1e-15.
    """
    out = np.asarray(scores, dtype=np.float64).copy()
    for i in range(1, len(out)):
        if out[i] >= out[i - 1]:
            out[i] = np.nextafter(out[i - 1], -np.inf)
    return out
