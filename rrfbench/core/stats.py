"""Confidence intervals and paired significance tests over per-query values (seeded).

* :func:`bootstrap_ci`: percentile bootstrap of the mean (Efron & Tibshirani 1993).
* :func:`paired_t`: two-sided paired t-test (the statistic of scipy.stats.ttest_rel, its
  p-value from Student's t distribution via scipy.special, which imports much faster).
* :func:`permutation_test`: two-sided paired randomisation test by random sign flips of the
  per-query differences (Smucker, Allan & Carterette, CIKM 2007).
* :func:`holm`: Holm's step-down adjustment of p-values for a family of tests (Holm 1979):
  family-wise error at most ``alpha`` under any dependence between the tests.

Identical inputs give p = 1; a fixed seed makes every number reproducible.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np


@lru_cache(maxsize=8)
def _resample_index(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """The bootstrap's resampling indices: a pure function of (n, resamples, seed), so it is
    drawn once and reused (the live explorer recomputes CIs on every slider move)."""
    idx = np.random.default_rng(seed).integers(0, n, size=(n_resamples, n))
    idx.flags.writeable = False
    return idx


@lru_cache(maxsize=8)
def _sign_flips(n: int, n_resamples: int, seed: int) -> np.ndarray:
    """The randomisation test's sign flips, drawn once per (n, resamples, seed)."""
    signs = np.random.default_rng(seed).choice(np.array([-1.0, 1.0]), size=(n_resamples, n))
    signs.flags.writeable = False
    return signs


def bootstrap_ci(values, n_resamples: int = 10_000, alpha: float = 0.05, seed: int = 0):
    """(lo, hi): the ``1 - alpha`` percentile bootstrap interval of the mean."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return (0.0, 0.0)
    means = v[_resample_index(v.size, n_resamples, seed)].mean(axis=1)
    return (float(np.quantile(means, alpha / 2)), float(np.quantile(means, 1 - alpha / 2)))


def paired_t(a, b) -> float:
    """Two-sided paired t-test p-value of mean(a) vs mean(b)."""
    from scipy.special import stdtr

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    d = a - b
    if d.size < 2 or np.allclose(d, 0.0):
        return 1.0
    sd = d.std(ddof=1)
    if sd <= 1e-15 * max(1.0, abs(d.mean())):  # a constant difference: t is infinite
        return 0.0
    t = d.mean() / (sd / np.sqrt(d.size))
    return float(2.0 * stdtr(d.size - 1, -abs(t)))


def permutation_test(a, b, n_resamples: int = 10_000, seed: int = 0) -> float:
    """Two-sided paired randomisation test p-value (sign flips of a - b)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if d.size == 0 or np.allclose(d, 0.0):
        return 1.0
    signs = _sign_flips(d.size, n_resamples, seed)
    observed = abs(d.mean())
    null = np.abs(signs @ d / d.size)
    return float((1 + np.sum(null >= observed - 1e-15)) / (n_resamples + 1))


# --------------------------------------------------------------------------- across collections
def macro_randomisation_test(deltas, n_resamples: int = 10_000, seed: int = 0) -> float:
    """Two-sided p-value of a macro-mean difference over collections, by sign flips.

    ``deltas`` holds one array of paired per-query differences per collection. The statistic is
    the macro mean (each collection weighs the same: the mean of the collections' means); under
    the null each query's difference is equally likely to have either sign, flipped
    independently within every collection.
    """
    deltas = [np.asarray(d, dtype=np.float64) for d in deltas if len(d)]
    if not deltas or all(np.allclose(d, 0.0) for d in deltas):
        return 1.0
    rng = np.random.default_rng(seed)
    observed = abs(np.mean([d.mean() for d in deltas]))
    null = np.zeros(n_resamples)
    for d in deltas:
        signs = rng.choice(np.array([-1.0, 1.0]), size=(n_resamples, d.size))
        null += signs @ d / d.size
    null = np.abs(null / len(deltas))
    return float((1 + np.sum(null >= observed - 1e-15)) / (n_resamples + 1))


def hierarchical_bootstrap(deltas, n_resamples: int = 10_000, seed: int = 0,
                           alpha: float = 0.05) -> dict:
    """Bootstrap of a macro-mean difference that resamples collections, then queries.

    Each resample draws as many collections as there are, with replacement, and for each drawn
    collection its queries with replacement; the statistic is the mean of the drawn
    collections' mean differences. Returns the ``1 - alpha`` percentile interval and a
    two-sided bootstrap p-value (twice the smaller tail mass at 0). With few collections this
    is deliberately hard to pass: it asks whether the gain holds for *collections*, not only
    for the queries of these ones.
    """
    deltas = [np.asarray(d, dtype=np.float64) for d in deltas if len(d)]
    if not deltas:
        return {"ci95": (0.0, 0.0), "p_value": 1.0, "mean": 0.0}
    rng = np.random.default_rng(seed)
    # per collection: the means of query resamples (resample b uses the b-th of each)
    qmeans = np.stack([d[rng.integers(0, d.size, size=(n_resamples, d.size))].mean(axis=1)
                       for d in deltas])
    picks = rng.integers(0, len(deltas), size=(n_resamples, len(deltas)))
    boot = qmeans[picks, np.arange(n_resamples)[:, None]].mean(axis=1)
    observed = float(np.mean([d.mean() for d in deltas]))
    if np.allclose(boot, 0.0):
        p = 1.0
    else:
        p = float(min(1.0, 2 * min(np.mean(boot <= 0), np.mean(boot >= 0))))
    return {"ci95": (float(np.quantile(boot, alpha / 2)), float(np.quantile(boot, 1 - alpha / 2))),
            "p_value": p, "mean": observed}


# --------------------------------------------------------------------------- multiplicity
def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjusted p-values along the last axis (Holm 1979).

    Sort the m p-values ascending, multiply the i-th smallest (i = 1..m) by ``m - i + 1``, take
    the running maximum and cap at 1; a test is rejected at family-wise level ``alpha`` when its
    adjusted p-value is below ``alpha``. Uniformly more powerful than Bonferroni, valid under any
    dependence between the tests. Works on one family (1-D) or a stack of families (..., m).
    """
    p = np.asarray(pvalues, dtype=np.float64)
    if p.size == 0:
        return p.copy()
    m = p.shape[-1]
    order = np.argsort(p, axis=-1, kind="stable")
    ranked = np.take_along_axis(p, order, axis=-1) * (m - np.arange(m))
    adj = np.minimum(1.0, np.maximum.accumulate(ranked, axis=-1))
    out = np.empty_like(adj)
    np.put_along_axis(out, order, adj, axis=-1)
    return out


# --------------------------------------------------------------------------- description
def _average_ranks(x) -> np.ndarray:
    """1-based ranks, ties sharing their average rank (as ``scipy.stats.rankdata``)."""
    _, inv, count = np.unique(np.asarray(x, dtype=np.float64), return_inverse=True,
                              return_counts=True)
    start = np.cumsum(count) - count
    return (start + (count + 1) / 2.0)[inv.ravel()]


def spearman(x, y) -> float:
    """Spearman's rank correlation (average ranks for ties); NaN when either side is constant."""
    rx, ry = _average_ranks(x), _average_ranks(y)
    if rx.std() == 0 or ry.std() == 0:
        return float("nan")
    return float(np.corrcoef(rx, ry)[0, 1])
