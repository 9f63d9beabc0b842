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


def test_bootstrap_default_seed_is_zero_and_pinned():
    v = np.arange(20) / 20
    assert bootstrap_ci(v) == bootstrap_ci(v, seed=0)
    assert bootstrap_ci(v) != bootstrap_ci(v, seed=1)
    assert bootstrap_ci(v) == pytest.approx((0.3475, 0.5975), abs=1e-12)


def test_randomisation_counts_ties_with_the_observed_value():
    # d = [1, 1]: |mean| is 1 under half of the sign flips (both + or both -), 0 otherwise, so
    # p = P(|null| >= 1) = 0.5; counting only > would give ~0
    p = permutation_test([1.0, 1.0], [0.0, 0.0])
    assert p == pytest.approx(0.5, abs=0.02)


def test_paired_t_equals_scipy():
    from scipy import stats

    rng = np.random.default_rng(3)
    for n in (5, 30, 300):
        a, b = rng.random(n), rng.random(n)
        assert paired_t(a, b) == pytest.approx(stats.ttest_rel(a, b).pvalue, rel=1e-9)
    assert paired_t([1.0, 2.0], [0.0, 1.0]) == 0.0  # constant difference


def test_holm_hand_computed():
    from rrfbench.stats import holm

    # sorted: .005 x4 = .02, .01 x3 = .03, .03 x2 = .06, .04 x1 = .04 -> running max .06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])            # capped at 1
    assert holm([0.02]) == pytest.approx([0.02])                     # one test: unchanged
    # a stack of families, adjusted row by row
    got = holm([[0.01, 0.04, 0.03, 0.005], [0.04, 0.01, 0.005, 0.03]])
    assert got == pytest.approx(np.array([[0.03, 0.06, 0.06, 0.02], [0.06, 0.03, 0.02, 0.06]]))


def test_holm_between_raw_and_bonferroni():
    from rrfbench.stats import holm

    p = np.random.default_rng(4).random(9) ** 3
    adj = holm(p)
    assert np.all(adj >= p - 1e-15) and np.all(adj <= np.minimum(1, 9 * p) + 1e-15)
    assert np.all(np.diff(adj[np.argsort(p)]) >= 0)                  # monotone in p
