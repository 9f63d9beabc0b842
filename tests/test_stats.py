import numpy as np
import pytest

from rrfbench.stats import bootstrap_ci, paired_t, permutation_test


def test_identical_inputs_p_one():
    a = np.random.default_rng(0).random(50)
    assert permutation_test(a, a) == 1.0 and paired_t(a, a) == 1.0


def test_clear_difference_is_significant_and_seeded():
    rng = np.random.default_rng(0)
    a = rng.random(200)
    b = a - 0.1 + rng.normal(0, 0.01, 200)
    p = permutation_test(a, b)
    assert p < 0.001 and p == permutation_test(a, b)
    assert paired_t(a, b) < 1e-10


def test_no_difference_not_significant():
    rng = np.random.default_rng(1)
    a, b = rng.random(100), rng.random(100)
    assert permutation_test(a, b) > 0.05


def test_bootstrap_ci_contains_mean_and_shrinks():
    rng = np.random.default_rng(2)
    small, big = rng.random(30), rng.random(3000)
    lo, hi = bootstrap_ci(small)
    assert lo < small.mean() < hi
    lo2, hi2 = bootstrap_ci(big)
    assert (hi2 - lo2) < (hi - lo)
    assert bootstrap_ci(small) == (lo, hi)
    assert pytest.approx(bootstrap_ci([0.5] * 10)) == (0.5, 0.5)
