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
* Ties in the fused score are broken by docid ascending (the :class:`~rrfbench.core.runs.Run`
  convention), never by input order.

**Score fusion baselines** (Fox & Shaw 1994; Bruch et al. 2023): ``combsum`` (sum of normalised
scores), ``combmnz`` (combsum x number of runs that retrieved d) and ``convex`` (``sum_r w_r *
norm_r(d)``, i.e. ``alpha * s_dense + (1 - alpha) * s_lex`` for two runs). Normalisations, per
query and per run: ``minmax``, ``zscore`` (population std), ``tmm`` (theoretical min-max: the
scoring function's lowest possible score instead of the observed minimum), ``none``. The
lowest possible score is *declared*, never guessed: each retriever records it in its run's
manifest (0 for BM25 and FTS5, -1 for cosine; :attr:`Run.score_floor`), or the caller passes
``theoretical_min``; asking for ``tmm`` on a run without one is an error.

What a document absent from one run gets (``missing``): ``"zero"`` is ranx's choice (0 after
normalisation: after z-scoring that is the run's *mean*, which rewards absence);
``"min"`` gives it the run's minimum normalised score for that query (after min-max that is
also 0, so the two only differ for z-score and tmm).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ..core.errors import InputError, choice
from ..core.runs import Run

NORMALISATIONS = ("minmax", "zscore", "tmm", "none")
SCORE_METHODS = ("convex", "combsum", "combmnz")
METHODS = ("rrf",) + SCORE_METHODS
MISSING = ("zero", "min")
RANK_BASES = (0, 1)


def check_choices(method=None, norm=None, missing=None, rank_base=None, *,
                  methods: Sequence[str] = METHODS, option: str = "") -> None:
    """The one check of the fusion options that take a fixed set of values (``None``: not
    given). The error names the option: ``method``, or with ``option="--"`` as the command line
    spells it (``--rank-base: '2' is not one of 0, 1``)."""
    def err(name, value, allowed):
        if option:
            return choice(option + name.replace("_", "-"), str(value), allowed)
        return choice(name, value, allowed)

    if method is not None and method not in methods:
        raise err("method", method, methods)
    if norm is not None and norm not in NORMALISATIONS:
        raise err("norm", norm, NORMALISATIONS)
    if missing is not None and missing not in MISSING:
        raise err("missing", missing, MISSING)
    if rank_base is not None and rank_base not in RANK_BASES:
        raise err("rank_base", rank_base, RANK_BASES)


def _per_run(value, n: int, what: str) -> list:
    if value is None or np.isscalar(value):
        return [value] * n
    value = list(value)
    if len(value) != n:
        raise InputError(f"{what}: expected one value or {n} (one per run), got {len(value)}")
    return value


def check_numbers(values, what: str, *, positive: bool = False, integer: bool = False) -> None:
    for v in values:
        if v is None:
            continue
        try:
            x = float(v)
        except (TypeError, ValueError):
            raise InputError(f"{what}: {v!r} is not a number") from None
        if not np.isfinite(x):
            raise InputError(f"{what}: {v!r} is not finite")
        if positive and x <= 0:
            raise InputError(f"{what}: {v!r} must be > 0")
        if not positive and x < 0:
            raise InputError(f"{what}: {v!r} must be >= 0")
        if integer and x != int(x):
            raise InputError(f"{what}: {v!r} must be a whole number")


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
    if n == 0:
        raise InputError("fusion needs at least one run")
    kl, wl = _per_run(k, n, "k"), _per_run(1.0 if weights is None else weights, n, "weights")
    check_numbers(kl, "k", positive=rank_base == 0)
    check_numbers(wl, "weights")
    check_numbers(_per_run(depth, n, "depth"), "depth", positive=True, integer=True)
    ks, ws = np.asarray(kl, dtype=np.float64), np.asarray(wl, dtype=np.float64)
    check_choices(rank_base=rank_base)
    if ws.sum() <= 0:
        raise InputError("weights: at least one run needs a weight > 0")
    if limit:  # None or 0: no cut
        check_numbers([limit], "limit", positive=True, integer=True)
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
        if theoretical_min is None:
            raise InputError("tmm normalisation needs the run's theoretical minimum score")
        hi = g.transform("max")
        lo = pd.Series(float(theoretical_min), index=s.index)
    elif method == "zscore":
        mu, sd = g.transform("mean"), g.transform(lambda x: x.std(ddof=0))
        return ((s - mu) / sd.replace(0.0, 1.0)).astype(np.float64)
    else:
        raise choice("norm", method, NORMALISATIONS)
    span = (hi - lo).replace(0.0, np.nan)
    return ((s - lo) / span).fillna(1.0).astype(np.float64)


def score_floors(runs: Sequence[Run], theoretical_min=None, norm: str = "tmm") -> list:
    """Each run's declared lowest possible score (``theoretical_min`` overrides, per run).

    For ``tmm`` a run without one is an error that says how to supply it.
    """
    floors = (_per_run(theoretical_min, len(runs), "theoretical_min")
              if theoretical_min is not None else [r.score_floor for r in runs])
    if norm == "tmm":
        for run, f in zip(runs, floors, strict=True):
            if f is None:
                raise InputError(
                    f"tmm normalisation needs run {run.name!r}'s theoretical minimum score, and "
                    "it declares none (a run read from a file without its manifest, or a fused "
                    "run); pass theoretical_min=, or use Run.with_meta(score_floor=...)")
    return floors


def score_fusion(runs: Sequence[Run], method: str = "convex", norm: str = "minmax",
                 weights: Sequence[float] | None = None, missing: str = "zero",
                 depth: int | Sequence[int] | None = None, limit: int | None = None,
                 theoretical_min: Sequence[float | None] | None = None,
                 name: str | None = None) -> Run:
    """CombSUM / CombMNZ / convex combination of normalised scores (see module docstring)."""
    check_choices(method, norm, missing, methods=SCORE_METHODS)
    n = len(runs)
    if n == 0:
        raise InputError("fusion needs at least one run")
    wl = _per_run(1.0 if weights is None or method != "convex" else weights, n, "weights")
    check_numbers(wl, "weights")
    ws = np.asarray(wl, dtype=np.float64)
    if ws.sum() <= 0:
        raise InputError("weights: at least one run needs a weight > 0")
    tmins = score_floors(runs, theoretical_min, norm)
    depths = _per_run(depth, n, "depth")
    check_numbers(depths, "depth", positive=True, integer=True)
    if limit:  # None or 0: no cut
        check_numbers([limit], "limit", positive=True, integer=True)
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
