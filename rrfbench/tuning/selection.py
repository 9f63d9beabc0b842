"""Choosing one configuration for several collections: objectives, selection rules, distances.

Given, for every collection of a suite, the per-query values of the tuning metric for every grid
point on its tuning split (``T``) and its evaluation split (``E``), plus the same for the
*default* (RRF k=60 with equal weights for free fusion; the system's shipped values for a
preset; :class:`rrfbench.tuning.suite_data.CollectionData`):

* **Objectives across collections** (computed on tuning splits): ``macro`` (mean of the
  collections' means: each collection weighs the same), ``worst`` (the worst collection's
  difference to the default) and ``meanrank`` (the mean rank of the configuration among the grid
  on each collection; lower is better).
* **Selection rules**: ``best`` (the best objective; ties: the earliest grid point), ``1se``,
  the one-standard-error rule: among the grid points whose macro mean is within one standard
  error of the best one's, the one closest to the default, and ``nbr`` (the default), among
  the same points the one with the best objective averaged over its grid neighbourhood
  (:func:`neighbourhoods`: the same non-numeric settings, at most one grid step on every
  numeric one). The standard error is that of the paired macro-mean difference to the best
  point, from the per-query differences: ``se = sqrt(sum_c var_c / n_c) / C`` (``var_c``:
  variance of the per-query differences on collection c, ``n_c`` its tuning queries, ``C``
  collections). Why ``nbr``: ``best`` follows whichever near-tied point a CPU difference puts
  on top (the en suite's pick moved from ``convex tmm w=0.1,0.2,0.7 missing=zero`` to its
  neighbour ``w=0,0.3,0.7 missing=min``); averaging over neighbours picks the middle of a
  plateau, and staying within one standard error keeps it no worse than the best by more than
  the noise. Measured with :func:`stability` on cranfield + time + adi (bm25 + fts5 + dense,
  the 1285-point default grid): the configuration selected on all collections was the same in
  92% of noise replicates with ``nbr`` (``best`` 69%, ``1se`` 82%) and 37% of query bootstraps
  (30%, 33%); the LOCO picks 77% / 35% (``best`` 73% / 28%, ``1se`` 44% / 13%: closest to the
  default is not stable), at the same LOCO gain (+0.0274, +0.0273, +0.0275).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..core.errors import choice
from .holdout import best_index, cross_validate

if TYPE_CHECKING:
    from .suite_data import CollectionData

OBJECTIVES = ("macro", "worst", "meanrank")
RULES = ("best", "1se", "nbr")
DEFAULT_RULE = "nbr"  # the stable pick among near-ties (see the module docstring)


def objective_values(colls: Sequence[CollectionData], objective: str) -> np.ndarray:
    """One value per grid point (higher is better) over ``colls``' tuning queries."""
    if objective not in OBJECTIVES:
        raise choice("--objective", objective, OBJECTIVES)
    means = np.stack([c.T.mean(axis=1) for c in colls])            # (C, G)
    if objective == "macro":
        return means.mean(axis=0)
    if objective == "worst":
        default = np.array([c.default_T.mean() for c in colls])[:, None]
        return (means - default).min(axis=0)
    ranks = np.stack([_rank_desc(m) for m in means])               # 1 = best, ties averaged
    return -ranks.mean(axis=0)


def _rank_desc(values: np.ndarray) -> np.ndarray:

    return pd.Series(values).rank(ascending=False, method="average").to_numpy()


def one_se_set(colls: Sequence[CollectionData], best: int) -> tuple[np.ndarray, np.ndarray]:
    """(tied, se): grid points whose macro mean is within one paired standard error of
    ``best``'s, and that standard error per grid point (see the module docstring)."""
    gap = np.zeros(colls[0].T.shape[0])
    var = np.zeros_like(gap)
    for c in colls:
        d = c.T[best][None, :] - c.T
        gap += d.mean(axis=1)
        if d.shape[1] > 1:
            var += d.var(axis=1, ddof=1) / d.shape[1]
    gap /= len(colls)
    se = np.sqrt(var) / len(colls)
    return gap <= se + 1e-15, se


def neighbourhoods(configs: Sequence[dict]):
    """(grid x grid) sparse matrix whose row g averages over g's grid neighbourhood.

    Two grid points are neighbours when they have numbers in the same settings, agree on every
    non-numeric one (method, normalisation, missing-score rule, a boolean...; ``None`` counts as
    a value) and are at most one grid step apart on every numeric one (each entry of a list
    counts; steps are counted in the sorted distinct values the setting takes, so an uneven k
    grid 1, 2, 5, 10 has steps too). A point is its own neighbour; a point with no other
    neighbour (combsum, combmnz: nothing numeric varies) takes instead the points with the same
    numbers that differ in one non-numeric setting, so it is averaged too.
    """
    import scipy.sparse as sp

    groups: dict = {}
    parts = []
    for i, cfg in enumerate(configs):
        cat, num, names = [], [], []
        for key, v in cfg.items():
            if key == "label":
                continue
            for j, x in enumerate(v if isinstance(v, list | tuple) else [v]):
                if isinstance(x, int | float) and not isinstance(x, bool) and np.isfinite(x):
                    names.append(f"{key}[{j}]")
                    num.append(float(x))
                else:
                    names.append(f"{key}[{j}]?")
                    cat.append(repr(x))
        groups.setdefault(tuple(names), []).append(i)
        parts.append((num, cat))
    rows, cols = [], []
    for members in groups.values():
        idx = np.asarray(members)
        X = np.array([parts[i][0] for i in idx], dtype=np.float64).reshape(len(idx), -1)
        K = np.array([parts[i][1] for i in idx], dtype=object).reshape(len(idx), -1)
        ranks = ([np.unique(x, return_inverse=True)[1].ravel() for x in X.T]
                 + [np.unique(k.astype(str), return_inverse=True)[1].ravel() for k in K.T])
        R = np.stack(ranks, axis=1) if ranks else np.zeros((len(idx), 0), dtype=int)
        nx = X.shape[1]
        for lo in range(0, len(idx), 256):                  # bounded memory on big grids
            step = np.abs(R[lo:lo + 256, None, :nx] - R[None, :, :nx]).max(axis=2, initial=0)
            other = (R[lo:lo + 256, None, nx:] != R[None, :, nx:]).sum(axis=2)
            near = (step <= 1) & (other == 0)
            alone = near.sum(axis=1) == 1                   # no numeric neighbour
            near[alone] |= (step[alone] == 0) & (other[alone] == 1)
            a, b = np.nonzero(near)
            rows.append(idx[lo + a])
            cols.append(idx[b])
    rows, cols = np.concatenate(rows), np.concatenate(cols)
    count = np.bincount(rows, minlength=len(configs)).astype(np.float64)
    return sp.csr_matrix((1.0 / count[rows], (rows, cols)), shape=(len(configs),) * 2)


def select(colls: Sequence[CollectionData], objective: str = "macro", rule: str = "best",
           distances: np.ndarray | None = None, neighbours=None) -> int:
    """The grid point chosen on ``colls`` by ``objective`` and ``rule`` (``neighbours``: the
    matrix of :func:`neighbourhoods`, for ``nbr``; without it each point is alone)."""
    if rule not in RULES:
        raise choice("--rule", rule, RULES)
    obj = objective_values(colls, objective)
    best = best_index(obj)
    if rule == "best":
        return best
    tied, _ = one_se_set(colls, best)
    cand = np.flatnonzero(tied)
    if rule == "nbr":
        smooth = obj if neighbours is None else neighbours @ obj
        # the best neighbourhood average; then the better objective; then grid order
        order = np.lexsort((cand, -obj[cand], -smooth[cand]))
        return int(cand[order[0]])
    dist = distances[cand] if distances is not None else np.zeros(len(cand))
    # closest to the default; then the better objective; then grid order
    order = np.lexsort((cand, -obj[cand], dist))
    return int(cand[order[0]])


def in_domain(c: CollectionData) -> tuple[np.ndarray, int]:
    """Tuned on the collection itself: (per-query values on its evaluation queries, index
    chosen on all its tuning queries). Cross-validated when it tunes and evaluates on the same
    queries."""
    idx = best_index(c.T.mean(axis=1))
    if c.protocol.kind == "cv":
        cv, _ = cross_validate(c.T, c.protocol.folds or 5, c.protocol.seed)
        return cv, idx
    return c.E[idx], idx


def _rule_text(rule: str) -> str:
    if rule == "nbr":
        return ("nbr: among the grid points whose macro mean on the tuning queries is within one "
                "paired standard error of the best one's, the one with the best objective "
                "averaged over its grid neighbourhood (rrfbench.tuning.selection.neighbourhoods: the "
                "same non-numeric settings, at most one grid step on every numeric one); then "
                "the better objective, then grid order. The default: on near-ties it picks the "
                "middle of a plateau, which a resample or a CPU difference moves less than the "
                "single best point")
    if rule == "1se":
        return ("1se: among the grid points whose macro mean on the tuning queries is within one "
                "paired standard error of the best one's, the one closest to the default (then "
                "the better objective, then grid order)")
    return ("best: the best objective on the tuning queries (ties: the earliest grid point); "
            "follows near-ties, so it may change on noise (see stability)")


# --------------------------------------------------------------------------- distances
def fusion_distance(cfg, n_runs: int) -> float:
    """How far a fusion configuration is from RRF k=60 with equal weights (0 = the same).

    RRF: mean |ln((k+1)/61)| + L1 distance of the weight shares to equal shares, +1 each for a
    depth cut, a rank base other than 1 and a result limit. Score fusion: 10 more (another
    family) plus the weight-share distance.
    """
    w = np.asarray(cfg.weights, dtype=np.float64)
    share = w / w.sum() if w.sum() > 0 else w
    d = float(np.abs(share - 1.0 / n_runs).sum())
    if cfg.method != "rrf":
        return 10.0 + d
    k = np.asarray(cfg.k, dtype=np.float64)
    d += float(np.mean(np.abs(np.log((k + 1) / 61.0))))
    d += float(any(x is not None for x in cfg.depth)) + float(cfg.rank_base != 1)
    return d + float(bool(cfg.limit))


def knob_distance(params: dict, shipped: dict, knobs) -> float:
    """How far preset knob values are from the shipped ones: sum of |difference| / range."""
    d = 0.0
    for k in knobs:
        if k.fixed or k.name not in params:
            continue
        a, b = params[k.name], shipped[k.name]
        if a is None or b is None:  # "off" vs a value: one step away
            d += float(a is not b)
        elif isinstance(k.default, bool):
            d += float(a != b)
        elif k.lo is not None and k.hi is not None and k.hi > k.lo:
            d += abs(float(a) - float(b)) / (k.hi - k.lo)
        else:
            d += float(a != b)
    return d
