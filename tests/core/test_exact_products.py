"""Exact matrix products: the same bits whatever order the sums are taken in."""

from __future__ import annotations

import numpy as np
import pytest

from rrfbench.core.exact_products import (
    exact_matmul_numpy,
    grid_bits,
    grid_rows,
    scale_back,
)


def _ordered_product(a: np.ndarray, b: np.ndarray, order: np.ndarray, chunk: int) -> np.ndarray:
    """The exact product with its sums taken in another order: K permuted, in chunks of
    ``chunk`` terms added one chunk at a time (no BLAS kernel adds like this)."""
    bits = grid_bits(a.shape[-1])
    qa, ea = grid_rows(a, bits)
    qb, eb = grid_rows(np.ascontiguousarray(b.T), bits)
    qa, qb = qa[:, order], qb[:, order]
    c = np.zeros((a.shape[0], b.shape[1]))
    for s in range(0, len(order), chunk):
        c = c + qa[:, s:s + chunk] @ qb[:, s:s + chunk].T
    return scale_back(c, ea, eb, bits)


@pytest.mark.parametrize("k", [32, 384, 1536])
def test_any_summation_order_gives_the_same_bits(k):
    rng = np.random.default_rng(k)
    a = (rng.standard_normal((48, k)) * rng.lognormal(0, 2, (48, 1))).astype(np.float32)
    b = (rng.standard_normal((k, 40)) / 20).astype(np.float32)
    exact = exact_matmul_numpy(a, b)
    for seed, chunk in ((0, 1), (1, 7), (2, k)):
        other = _ordered_product(a, b, np.random.default_rng(seed).permutation(k), chunk)
        assert other.tobytes() == exact.tobytes()
    # and it is the product: within the grid's rounding of float64's
    ref = a.astype(np.float64) @ b.astype(np.float64)
    scale = np.abs(a).max(1, keepdims=True) * np.abs(b).sum(0, keepdims=True)
    assert np.all(np.abs(exact - ref) <= scale * 2.0 ** -(grid_bits(k) - 1) + np.abs(ref) * 2.0 ** -23)


def test_plain_float32_products_are_order_dependent():
    """Why exact products exist: the same float32 product summed in another order differs in
    its last bits (so a BLAS kernel chosen by CPU changes an embedding)."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((64, 384)).astype(np.float32)
    b = rng.standard_normal((384, 64)).astype(np.float32)
    order = rng.permutation(384)
    assert (a @ b).tobytes() != (a[:, order] @ b[order]).tobytes()


def test_grid_rounds_half_to_even_on_each_rows_own_scale():
    bits = 3  # each row's largest entry has 3 bits
    x = np.array([[1.0, 0.125, 0.375, -0.625],   # max 1 = 0.5 * 2^1: scaled by 2^(3-1)
                  [4.0, 0.5, 1.5, 2.5]], dtype=np.float32)  # max 4 = 0.5 * 2^3: by 2^0
    q, e = grid_rows(x, bits)
    assert e.tolist() == [1, 3]
    # scaled: [4, 0.5, 1.5, -2.5] and [4, 0.5, 1.5, 2.5]: every half goes to the even integer
    assert q.tolist() == [[4.0, 0.0, 2.0, -2.0], [4.0, 0.0, 2.0, 2.0]]


def test_rows_of_zeros_and_non_finite_entries():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((4, 16)).astype(np.float32)
    b = rng.standard_normal((16, 5)).astype(np.float32)
    a[1] = 0.0
    a[2, 3] = np.inf
    a[3, 0] = np.nan
    out = exact_matmul_numpy(a, b)
    assert np.all(out[1] == 0.0)
    assert not np.isfinite(out[2]).any() and np.isnan(out[3]).all()
    clean = exact_matmul_numpy(a[[0]], b)  # a finite row is not touched by the others
    assert out[0].tobytes() == clean[0].tobytes()


def test_grid_bits_keep_every_sum_below_two_to_the_53():
    for k in (2, 32, 33, 384, 1536, 4096):
        bits = grid_bits(k)
        assert k * 2.0 ** (2 * bits) <= 2.0 ** 53
        assert k * 2.0 ** (2 * (bits + 1)) > 2.0 ** 53  # and no bit is given away
    assert (grid_bits(32), grid_bits(384), grid_bits(1536)) == (24, 22, 21)


def test_torch_and_numpy_give_the_same_bits():
    torch = pytest.importorskip("torch")
    from rrfbench.core.exact_products import exact_linear, exact_matmul, weight_grid

    rng = np.random.default_rng(4)
    a = rng.standard_normal((3, 20, 384)).astype(np.float32)
    w = (rng.standard_normal((96, 384)) / 20).astype(np.float32)
    want = exact_matmul_numpy(a, np.ascontiguousarray(w.T))
    got = exact_linear(torch.from_numpy(a), weight_grid(torch.from_numpy(w)))
    assert got.numpy().tobytes() == want.tobytes()
    batched = exact_matmul(torch.from_numpy(a), torch.from_numpy(a).transpose(-1, -2))
    assert batched.numpy().tobytes() == exact_matmul_numpy(a, np.swapaxes(a, -1, -2)).tobytes()
