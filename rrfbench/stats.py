"""Confidence intervals and paired significance tests over per-query values (seeded).

* :func:`bootstrap_ci`: percentile bootstrap of the mean (Efron & Tibshirani 1993).
* :func:`paired_t`: two-sided paired t-test (scipy.stats.ttest_rel).
* :func:`permutation_test`: two-sided paired randomisation test by random sign flips of the
  per-query differences (Smucker, Allan & Carterette, CIKM 2007).

Identical inputs give p = 1; a fixed seed makes every number reproducible.
"""

from __future__ import annotations

import numpy as np


def bootstrap_ci(values, n_resamples: int = 10_000, alpha: float = 0.05, seed: int = 0):
    """(lo, hi): the ``1 - alpha`` percentile bootstrap interval of the mean."""
    v = np.asarray(values, dtype=np.float64)
    if v.size == 0:
        return (0.0, 0.0)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, v.size, size=(n_resamples, v.size))
    means = v[idx].mean(axis=1)
    return (float(np.quantile(means, alpha / 2)), float(np.quantile(means, 1 - alpha / 2)))


def paired_t(a, b) -> float:
    """Two-sided paired t-test p-value of mean(a) vs mean(b)."""
    from scipy import stats

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    d = a - b
    if np.allclose(d, 0.0):
        return 1.0
    return float(stats.ttest_rel(a, b).pvalue)


def permutation_test(a, b, n_resamples: int = 10_000, seed: int = 0) -> float:
    """Two-sided paired randomisation test p-value (sign flips of a - b)."""
    d = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if d.size == 0 or np.allclose(d, 0.0):
        return 1.0
    rng = np.random.default_rng(seed)
    signs = rng.choice(np.array([-1.0, 1.0]), size=(n_resamples, d.size))
    observed = abs(d.mean())
    null = np.abs((signs * d).mean(axis=1))
    return float((1 + np.sum(null >= observed - 1e-15)) / (n_resamples + 1))
