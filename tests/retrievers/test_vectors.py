"""Exact cosines: the same bits whatever order a BLAS kernel sums in (a CPU picks the order)."""

import numpy as np
import pytest

from rrfbench.core.errors import InputError
from rrfbench.retrievers.vectors import GRID, exact_cosines, topk_cosine


def _unit(rng, n, dim=384):
    x = rng.normal(size=(n, dim)).astype(np.float32)
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_summation_order_changes_float32_but_not_exact_cosines():
    rng = np.random.default_rng(0)
    q, d = _unit(rng, 20), _unit(rng, 500)
    perm = rng.permutation(q.shape[1])      # another summation order, as another kernel's
    f32 = q @ d.T
    f32_perm = q[:, perm] @ d[:, perm].T
    assert (f32 != f32_perm).any()          # the noise is real: float32 sums depend on order
    exact = exact_cosines(q, d)
    assert np.array_equal(exact, exact_cosines(q[:, perm], d[:, perm]))
    # in blocks, one row at a time, or pairwise by hand: the same bits
    assert np.array_equal(exact[:, 250:], exact_cosines(q, d[250:]))
    assert np.array_equal(exact[3], exact_cosines(q[3:4], d)[0])
    qi, di = np.rint(q.astype(np.float64) * GRID), np.rint(d.astype(np.float64) * GRID)
    assert exact[5, 7] == sum(int(a) * int(b) for a, b in zip(qi[5], di[7], strict=True)) / GRID ** 2
    # and within the grid's rounding of the float64 cosine
    assert np.abs(exact - q.astype(np.float64) @ d.astype(np.float64).T).max() < 1e-5


def test_topk_is_the_same_in_any_block_size():
    rng = np.random.default_rng(1)
    q, d = _unit(rng, 7), _unit(rng, 300)
    a = topk_cosine(q, d, 50)
    b = topk_cosine(q, d, 50, block=17, query_block=3)
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert a[1].dtype == np.float64


def test_too_many_dimensions_are_refused():
    with pytest.raises(InputError, match="8192"):
        exact_cosines(np.zeros((1, 9000)), np.zeros((2, 9000)))
