"""Exact matrix products: the same bits whatever order the sums are taken in."""

from __future__ import annotations

import math
import sys

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


def test_a_row_s_exponent_is_read_off_its_bits_as_frexp_gives_it():
    """The grid's scale comes from the largest entry's exponent, read off the float32 bit
    pattern (no float round trip): the same as ``math.frexp`` for zero, subnormals, normals
    and the largest finite float."""
    import math

    from rrfbench.core.exact_products import _frexp_exponent32

    rng = np.random.default_rng(0)
    u = np.concatenate([rng.integers(0, 0x7F800000, 20000, dtype=np.uint32),
                        np.arange(0, 3000, dtype=np.uint32),
                        np.uint32([0x7F7FFFFF, 0x00800000, 0x007FFFFF, 1, 0])])
    want = [math.frexp(float(v))[1] for v in u.view(np.float32)]
    assert [_frexp_exponent32(x) for x in u] == want


def test_the_fused_additions_give_the_bits_of_the_separate_tensor_operations():
    """A linear layer's bias and residual, and attention's scaling and key mask, applied as the
    exact sums are scaled back: the same bits as the float32 tensor operations they replace."""
    torch = pytest.importorskip("torch")
    from rrfbench.core.exact_products import (
        TorchExact,
        exact_linear,
        exact_matmul,
        exact_scores,
        grid_bits,
        weight_grid,
    )

    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 17, 64, generator=g)
    w = torch.randn(48, 64, generator=g)
    bias, resid = torch.randn(48, generator=g), torch.randn(3, 17, 48, generator=g)
    grid = weight_grid(w)
    plain = TorchExact.matmul(x, grid, grid_bits(64))
    assert torch.equal(exact_linear(x, grid, bias), plain + bias)
    assert torch.equal(exact_linear(x, grid, bias, residual=resid), plain + bias + resid)
    q, k = torch.randn(2, 3, 9, 32, generator=g), torch.randn(2, 3, 9, 32, generator=g)
    mask = torch.tensor([[0.0] * 9, [0.0] * 6 + [torch.finfo(torch.float32).min] * 3])
    scaling = 1.0 / math.sqrt(32)
    want = exact_matmul(q, k.transpose(-1, -2)) * scaling + mask[:, None, None, :]
    assert torch.equal(exact_scores(q, k, scaling, mask), want)


@pytest.mark.skipif(sys.platform != "linux", reason="glibc's malloc")
def test_within_reused_heap_a_large_block_comes_from_the_heap():
    """Outside, glibc maps a 64 MB array on its own (and unmaps it when freed, so the next one
    is mapped and zeroed again); within :func:`reused_heap` it comes from the heap, which keeps
    it for the next product. Read off glibc's own accounting (``mallinfo2``)."""
    import ctypes

    from rrfbench.core.heap import _glibc, reused_heap

    libc = _glibc()
    if libc is None or not hasattr(libc, "mallinfo2"):
        pytest.skip("not glibc 2.33 or newer")

    class MallInfo2(ctypes.Structure):
        _fields_ = [(name, ctypes.c_size_t) for name in (
            "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks",
            "uordblks", "fordblks", "keepcost")]
    libc.mallinfo2.restype = MallInfo2

    def mapped_alone_while_alive() -> int:
        before = libc.mallinfo2().hblkhd
        a = np.ones(8 << 20)  # 64 MB
        grown = libc.mallinfo2().hblkhd - before
        del a
        return grown

    assert mapped_alone_while_alive() >= 64 << 20
    with reused_heap():
        assert mapped_alone_while_alive() == 0
    assert mapped_alone_while_alive() >= 64 << 20  # glibc's thresholds set back
