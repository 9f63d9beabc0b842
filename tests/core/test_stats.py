import numpy as np
import pytest

from rrfbench.core.stats import bootstrap_ci, paired_t, permutation_test


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
    from rrfbench.core.stats import holm

    # sorted: .005 x4 = .02, .01 x3 = .03, .03 x2 = .06, .04 x1 = .04 -> running max .06
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.9]) == pytest.approx([1.0, 1.0])            # capped at 1
    assert holm([0.02]) == pytest.approx([0.02])                     # one test: unchanged
    # a stack of families, adjusted row by row
    got = holm([[0.01, 0.04, 0.03, 0.005], [0.04, 0.01, 0.005, 0.03]])
    assert got == pytest.approx(np.array([[0.03, 0.06, 0.06, 0.02], [0.06, 0.03, 0.02, 0.06]]))


def test_holm_between_raw_and_bonferroni():
    from rrfbench.core.stats import holm

    p = np.random.default_rng(4).random(9) ** 3
    adj = holm(p)
    assert np.all(adj >= p - 1e-15) and np.all(adj <= np.minimum(1, 9 * p) + 1e-15)
    assert np.all(np.diff(adj[np.argsort(p)]) >= 0)                  # monotone in p


# --------------------------------------------------------------------------- edge cases, pins
def test_bootstrap_ci_edge_cases_and_defaults():
    assert bootstrap_ci([]) == (0.0, 0.0)
    assert bootstrap_ci([0.7]) == (0.7, 0.7)            # one value: every resample is it
    v = np.random.default_rng(9).random(40).round(3)   # near-continuous resample means
    assert bootstrap_ci(v) == bootstrap_ci(v, n_resamples=10_000, alpha=0.05, seed=0)
    assert bootstrap_ci(v) != bootstrap_ci(v, n_resamples=10_001)
    # float32 input is averaged in float64: the same numbers as the upcast input
    v32 = (np.arange(1, 31) / 7).astype(np.float32)
    assert bootstrap_ci(v32) == bootstrap_ci(v32.astype(np.float64))


def test_bootstrap_ci_reference_percentiles():
    v = np.array([0.1, 0.9, 0.4, 0.3, 0.7])
    idx = np.random.default_rng(5).integers(0, 5, size=(300, 5))
    means = np.array([v[row].sum() / 5 for row in idx])
    lo, hi = bootstrap_ci(v, n_resamples=300, alpha=0.1, seed=5)
    assert lo == pytest.approx(np.percentile(means, 5), abs=1e-12)
    assert hi == pytest.approx(np.percentile(means, 95), abs=1e-12)


def test_paired_t_relative_tolerance_for_a_constant_difference():
    big = 1e6
    # d = [1e6, 1e6 + 1 ulp]: spread ~1e-10 is rounding noise relative to |mean| = 1e6, so the
    # difference counts as constant (p = 0), although 1e-10 > 1e-15
    assert paired_t([big, np.nextafter(big, 2 * big)], [0.0, 0.0]) == 0.0
    # mean 0.5, sd ~1.5e-15 just above the 1e-15 tolerance: an ordinary (tiny) p-value
    a = np.array([0.5, 0.5 + 19 * np.spacing(0.5)])
    sd = np.diff(a)[0] / np.sqrt(2)
    assert 1e-15 < sd < 2e-15
    from scipy.special import stdtr
    t = a.mean() / (sd / np.sqrt(2))
    p = paired_t(a, [0.0, 0.0])
    assert p > 0.0 and p == pytest.approx(2 * stdtr(1, -t), rel=1e-6)


def test_permutation_test_single_pair_and_defaults():
    # one pair: every sign flip gives |mean| = |d| = observed, so p = (1 + N) / (N + 1) = 1
    assert permutation_test([100.0], [0.0]) == 1.0
    assert permutation_test([0.3], [0.1], n_resamples=99) == 1.0
    # a constant difference close to 0 is "no difference" (p = 1), not 2 of 2**5 flips
    assert permutation_test([1e-10] * 5, [0.0] * 5) == 1.0
    a, b = np.arange(8) / 8, np.arange(8)[::-1] / 9
    p = permutation_test(a, b)
    assert p == permutation_test(a, b, n_resamples=10_000, seed=0)
    assert p != permutation_test(a, b, seed=1)
    assert p != permutation_test(a, b, n_resamples=10_001)


def test_permutation_test_reference():
    a = np.array([0.9, 0.4, 0.8, 0.7, 0.2, 0.6])
    b = np.array([0.5, 0.5, 0.3, 0.6, 0.4, 0.1])
    d = a - b
    signs = np.random.default_rng(3).choice(np.array([-1.0, 1.0]), size=(500, 6))
    null = np.array([abs(sum(s * d) / 6) for s in signs])
    expected = (1 + np.sum(null >= abs(d.mean()) - 1e-12)) / 501
    assert permutation_test(a, b, n_resamples=500, seed=3) == pytest.approx(expected, abs=1e-15)
    # d = [2, 2, 2]: |null| = 2 only when all three signs agree (1/4 of flips)
    p = permutation_test([2.0, 2.0, 2.0], [0.0, 0.0, 0.0])
    assert p == pytest.approx(0.25, abs=0.015)


def test_holm_float32_input_is_adjusted_in_float64():
    from rrfbench.core.stats import holm

    p32 = np.array([0.013, 0.041, 0.027], dtype=np.float32)
    got = holm(p32)
    assert got.dtype == np.float64
    assert np.array_equal(got, holm(p32.astype(np.float64)))
    assert holm([]).shape == (0,)


# --------------------------------------------------------------------------- across collections
def _ref_macro(deltas, n_resamples, seed):
    deltas = [np.asarray(d, dtype=np.float64) for d in deltas if len(d)]
    rng = np.random.default_rng(seed)
    flips = [rng.choice(np.array([-1.0, 1.0]), size=(n_resamples, d.size)) for d in deltas]
    observed = abs(sum(d.mean() for d in deltas) / len(deltas))
    count = 0
    for r in range(n_resamples):
        stat = sum(sum(f[r] * d) / d.size for f, d in zip(flips, deltas, strict=True)) / len(deltas)
        count += abs(stat) >= observed - 1e-12
    return (1 + count) / (n_resamples + 1)


def test_macro_randomisation_edge_cases():
    from rrfbench.core.stats import macro_randomisation_test as mrt

    assert mrt([]) == 1.0
    assert mrt([[], []]) == 1.0
    assert mrt([[0.0, 0.0], [0.0]]) == 1.0
    assert mrt([[1e-10, 1e-10], [1e-10]]) == 1.0       # all near 0: no difference
    assert mrt([[0.5]]) == 1.0                          # one query: every flip ties
    # the macro mean weighs collections equally: (1 + (-1)) / 2 = 0, so p = 1 (the pooled
    # mean over the 5 queries would be 0.6)
    assert mrt([[1.0, 1.0, 1.0, 1.0], [-1.0]]) == 1.0
    # [1] and [1]: the null macro mean is +-1 for half of the flips, 0 otherwise
    assert mrt([[1.0], [1.0]]) == pytest.approx(0.5, abs=0.02)
    # large values (where observed - 1e-15 rounds to observed): ties still count
    assert mrt([[100.0]]) == 1.0
    assert mrt([[100.0], [100.0]]) == pytest.approx(0.5, abs=0.02)
    # float32 input is averaged in float64: [1.7f] * 3 has |null| = observed for the 1/4 of
    # flips with one sign (a float32 mean would round above 1.7f and count none)
    d32 = np.full(3, 1.7, dtype=np.float32)
    assert mrt([d32]) == mrt([d32.astype(np.float64)]) == pytest.approx(0.25, abs=0.015)


def test_macro_randomisation_reference_and_defaults():
    from rrfbench.core.stats import macro_randomisation_test as mrt

    deltas = [[0.3, -0.1, 0.2, 0.25], [0.05, 0.1], [], [0.4, -0.2, 0.1]]
    for seed in (0, 7):
        assert mrt(deltas, n_resamples=400, seed=seed) == pytest.approx(
            _ref_macro(deltas, 400, seed), abs=1e-15)
    p = mrt(deltas)
    assert p == mrt(deltas, n_resamples=10_000, seed=0)
    assert p != mrt(deltas, seed=1) and p != mrt(deltas, n_resamples=10_001)
    assert 0.0 < p < 1.0


def _ref_hier(deltas, n_resamples, seed, alpha):
    deltas = [np.asarray(d, dtype=np.float64) for d in deltas if len(d)]
    rng = np.random.default_rng(seed)
    qidx = [rng.integers(0, d.size, size=(n_resamples, d.size)) for d in deltas]
    picks = rng.integers(0, len(deltas), size=(n_resamples, len(deltas)))
    boot = np.array([sum(deltas[c][qidx[c][r]].sum() / deltas[c].size for c in picks[r])
                     / len(deltas) for r in range(n_resamples)])
    lo, hi = np.percentile(boot, 100 * alpha / 2), np.percentile(boot, 100 * (1 - alpha / 2))
    p = min(1.0, 2 * min(np.sum(boot <= 0), np.sum(boot >= 0)) / n_resamples)
    return lo, hi, p


def test_hierarchical_bootstrap_edge_cases():
    from rrfbench.core.stats import hierarchical_bootstrap as hb

    assert hb([]) == {"ci95": (0.0, 0.0), "p_value": 1.0, "mean": 0.0}
    assert hb([[], []]) == {"ci95": (0.0, 0.0), "p_value": 1.0, "mean": 0.0}
    zero = hb([[0.0, 0.0], [0.0]])
    assert zero == {"ci95": (0.0, 0.0), "p_value": 1.0, "mean": 0.0}
    # one collection, one query: every resample is 0.3; no mass at or below 0
    one = hb([[0.3]])
    assert one["ci95"] == pytest.approx((0.3, 0.3)) and one["p_value"] == 0.0
    assert one["mean"] == pytest.approx(0.3)
    assert hb([[1.0], [1.0, 1.0]])["p_value"] == 0.0     # every resample is 1: p = 0
    # float32 input is averaged in float64 (a float32 mean of [1.7f] * 3 rounds up one ulp)
    d32 = np.full(3, 1.7, dtype=np.float32)
    assert hb([d32])["mean"] == float(np.float32(1.7))
    assert hb([d32])["ci95"] == (float(np.float32(1.7)), float(np.float32(1.7)))


def test_hierarchical_bootstrap_hand_computed():
    from rrfbench.core.stats import hierarchical_bootstrap as hb

    # constant collections 0.2 and 0.4: a resample's macro mean is 0.2, 0.3 or 0.4
    # (1/4, 1/2, 1/4), so the 95% interval is exactly (0.2, 0.4); the mean is the macro mean
    # (0.2 + 0.4) / 2 = 0.3, not the pooled (0.2 + 0.2 + 0.4) / 3
    out = hb([[0.2, 0.2], [0.4]])
    assert out["ci95"] == pytest.approx((0.2, 0.4)) and out["p_value"] == 0.0
    assert out["mean"] == pytest.approx(0.3)
    # [1], [1], [-1]: k ones of 3 picks ~ Binomial(3, 2/3); the macro mean is <= 0 for k <= 1,
    # P = 7/27, so p = 2 * 7/27; >= 0 has P = 20/27. All three -1 (P = 1/27 > 2.5%) and all
    # three +1 (8/27) put the interval's ends at -1 and 1; alpha = 0.2 moves them to -1/3, 1
    out = hb([[1.0], [1.0], [-1.0]])
    assert out["p_value"] == pytest.approx(14 / 27, abs=0.03)
    assert out["mean"] == pytest.approx(1 / 3)
    assert out["ci95"] == pytest.approx((-1.0, 1.0))
    assert hb([[1.0], [1.0], [-1.0]], alpha=0.2)["ci95"] == pytest.approx((-1 / 3, 1.0))
    # +-1: P(<= 0) = P(>= 0) = 3/4, p capped at 1
    assert hb([[1.0], [-1.0]])["p_value"] == 1.0
    # alpha 0.6 keeps the middle 40%: all 0.3
    assert hb([[0.2, 0.2], [0.4]], alpha=0.6)["ci95"] == pytest.approx((0.3, 0.3))


def test_hierarchical_bootstrap_reference_and_defaults():
    from rrfbench.core.stats import hierarchical_bootstrap as hb

    deltas = [[0.3, -0.1, 0.2, 0.05], [0.1, -0.05], [], [0.4, -0.3, 0.1]]
    for seed, alpha in ((0, 0.05), (4, 0.2)):
        out = hb(deltas, n_resamples=300, seed=seed, alpha=alpha)
        lo, hi, p = _ref_hier(deltas, 300, seed, alpha)
        assert out["ci95"] == pytest.approx((lo, hi), abs=1e-12)
        assert out["p_value"] == pytest.approx(p, abs=1e-12)
        assert out["mean"] == pytest.approx((0.1125 + 0.025 + 0.2 / 3) / 3, abs=1e-12)
    out = hb(deltas)
    assert out == hb(deltas, n_resamples=10_000, seed=0, alpha=0.05)
    assert out != hb(deltas, seed=1) and out != hb(deltas, n_resamples=10_001)
    assert out["ci95"] != hb(deltas, alpha=0.1)["ci95"]
    assert 0.0 < out["p_value"] < 1.0
    assert isinstance(out["p_value"], float) and isinstance(out["ci95"][0], float)


def test_spearman_hand_computed():
    from rrfbench.core.stats import spearman

    assert spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert spearman([1, 2, 3, 4], [4, 3, 2, 1]) == pytest.approx(-1.0)
    # ties take average ranks: x ranks (1.5, 1.5, 3), y (1, 2, 3) -> r = 0.8660
    assert spearman([5, 5, 9], [1, 2, 3]) == pytest.approx(np.sqrt(3) / 2)
    assert np.isnan(spearman([1, 1, 1], [1, 2, 3])) and np.isnan(spearman([1, 2], [3, 3]))
