"""Matrix products whose result cannot depend on summation order: the same bits from every BLAS
kernel, CPU, vendor and thread count, at about half the speed of a float32 product.

Why: a float32 matrix product rounds every partial sum, so its last bits follow the order in
which the BLAS kernel adds (which MKL and OpenBLAS choose per CPU: AVX2 or AVX-512, Intel or
AMD, blocking, threads). Pinning the kernel (``MKL_CBWR=COMPATIBLE``) made MKL 3-5x slower.
Instead every partial sum is made exact, and an exact sum has one value whatever the order:

* each row of the left operand (and each column of the right one) is put on a fixed-point grid
  of ``b`` significant bits relative to its largest finite entry (found on the float's bit
  patterns): multiplied by the power of two ``2^(b - e)``, ``e`` that entry's exponent
  (``math.frexp``) and the power made by libm's ``ldexp(1, b - e)``, which is exact (not
  ``torch.ldexp``, which multiplies by ``pow(2, e)``, nor ``log2``), and rounded half to even,
  once, to an integer of at most ``2^b``;
* the integers are multiplied as float64: each product is at most ``2^(2b)`` and a sum of ``K``
  of them at most ``K * 2^(2b)``; ``b = floor((53 - ceil(log2 K)) / 2)`` keeps that at most
  ``2^53``, where every integer is exact (K = 384: 22 bits, 1,536: 21, 32: 24);
* the exact sums are scaled back by the two powers of two (exact) and rounded to float32 once.

The only rounding is the grid's (``2^-b`` of a row's largest entry; float32 keeps ``2^-24`` of
each entry) and the final one, both independent of the BLAS. Rows of zeros need no path of
their own (their exponent is 0 and they stay zero); non-finite entries are left out of their
row's scale, and a sum that meets one is NaN or infinite whatever the order. The same bound is
what FLINT and FFLAS-FFPACK use to multiply integer matrices with ``dgemm``; rrfbench's
:func:`rrfbench.retrievers.vectors.exact_cosines` scores on the same idea.

Used by :mod:`rrfbench.retrievers.exact_bert` (torch tensors, :class:`TorchExact`) and
:mod:`rrfbench.retrievers.exact_use` (:func:`exact_matmul_numpy`, the same for NumPy arrays).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

MANTISSA = 53  # float64's significand: every integer up to 2^53 is exact


def grid_bits(k: int) -> int:
    """Significant bits per entry that keep a float64 sum of ``k`` products exact."""
    return (MANTISSA - max(1, math.ceil(math.log2(max(k, 2))))) // 2


@njit(cache=True, nogil=True)
def _frexp_exponent32(m):
    """``math.frexp``'s exponent of the finite non-negative float32 whose bit pattern is ``m``,
    read off the bits (0 for zero; subnormals by their highest set bit)."""
    biased = np.int64(m >> np.uint32(23))
    if biased > 0:
        return biased - 126
    mant = np.int64(m)
    n = 0
    while mant > 0:
        mant >>= 1
        n += 1
    return n - 149 if n > 0 else 0


@njit(cache=True, parallel=True, nogil=True)
def _grid_rows32(x, bits, q, e):
    """Rows of float32 ``x`` (2-D) on the grid: ``q`` the integers (float64), ``e`` each row's
    exponent. The largest magnitude is found on the bit patterns (sign cleared: for finite
    floats integer order is float order; inf and NaN patterns are left out), a loop the
    compiler vectorises exactly."""
    u = x.view(np.uint32)
    for i in prange(x.shape[0]):
        m = np.uint32(0)
        for j in range(x.shape[1]):
            v = u[i, j] & np.uint32(0x7FFFFFFF)
            m = max(m, v if v < np.uint32(0x7F800000) else np.uint32(0))
        ex = _frexp_exponent32(m)  # no float round trip, no allocation per row
        scale = math.ldexp(1.0, bits - ex)  # a power of two: the product is exact
        for j in range(x.shape[1]):
            q[i, j] = np.rint(np.float64(x[i, j]) * scale)  # half to even
        e[i] = ex


@njit(cache=True, parallel=True, nogil=True)
def _grid_rows(x, bits, q, e):
    """:func:`_grid_rows32` for any other float type (NaN compares false, inf is skipped)."""
    for i in prange(x.shape[0]):
        m = 0.0
        for j in range(x.shape[1]):
            v = abs(np.float64(x[i, j]))
            if v > m and v < np.inf:
                m = v
        ex = math.frexp(m)[1]
        scale = math.ldexp(1.0, bits - ex)
        for j in range(x.shape[1]):
            q[i, j] = np.rint(np.float64(x[i, j]) * scale)
        e[i] = ex


@njit(cache=True, nogil=True)
def _powers(e, bits):
    """``2^(e - bits)`` for a 2-D array of exponents: the columns' exact scalings, once."""
    out = np.empty(e.shape, dtype=np.float64)
    for r in range(e.shape[0]):
        for j in range(e.shape[1]):
            out[r, j] = math.ldexp(1.0, e[r, j] - bits)
    return out


@njit(cache=True, parallel=True, nogil=True)
def _scale_back(c, ea, eb, bits, out):
    """``out[b, i, j] = float32(c[b, i, j] * 2^(ea[b, i] - bits) * 2^(eb[b, j] - bits))``: two
    exact scalings of an exact sum, then the one rounding to float32."""
    nb, nm, nn = c.shape
    pb = _powers(eb, bits)
    for r in prange(nb * nm):
        b = r // nm
        i = r - b * nm
        pa = math.ldexp(1.0, ea[b, i] - bits)
        for j in range(nn):
            out[b, i, j] = np.float32(c[b, i, j] * pa * pb[b, j])


@njit(cache=True, parallel=True, nogil=True)
def _scale_back_linear(c, ea, eb, bits, bias, resid, out):
    """:func:`_scale_back` for a linear layer, 2-D: ``out = float32(c * 2^..) + bias`` (then
    ``+ resid`` where ``resid`` has rows), each addition a float32 one in that order: the bits
    of the separate tensor additions it replaces, without their passes over memory."""
    nm, nn = c.shape
    pb = _powers(eb.reshape(1, nn), bits)[0]
    if resid.shape[0] > 0:
        for i in prange(nm):
            pa = math.ldexp(1.0, ea[i] - bits)
            for j in range(nn):
                out[i, j] = (np.float32(c[i, j] * pa * pb[j]) + bias[j]) + resid[i, j]
    else:
        for i in prange(nm):
            pa = math.ldexp(1.0, ea[i] - bits)
            for j in range(nn):
                out[i, j] = np.float32(c[i, j] * pa * pb[j]) + bias[j]


@njit(cache=True, parallel=True, nogil=True)
def _scale_back_scores(c, ea, eb, bits, scaling, mask, heads, out):
    """:func:`_scale_back` for attention scores (texts x heads stacked on the first axis):
    ``out = float32(c * 2^..) * scaling + mask[text, key]``, two float32 operations in that
    order (the bits of the tensor operations they replace)."""
    nb, nm, nn = c.shape
    pb = _powers(eb, bits)
    for r in prange(nb * nm):
        b = r // nm
        i = r - b * nm
        t = b // heads
        pa = math.ldexp(1.0, ea[b, i] - bits)
        for j in range(nn):
            out[b, i, j] = np.float32(c[b, i, j] * pa * pb[b, j]) * scaling + mask[t, j]


def grid_rows(x: np.ndarray, bits: int) -> tuple[np.ndarray, np.ndarray]:
    """Each row (last axis) of ``x`` on a grid of ``bits`` significant bits: (integers as
    float64, exponents), both shaped like ``x`` less its last axis for the exponents."""
    x = np.ascontiguousarray(x)
    flat = x.reshape(-1, x.shape[-1]) if x.size else x.reshape(0, x.shape[-1])
    q = np.empty(flat.shape, dtype=np.float64)
    e = np.empty(flat.shape[0], dtype=np.int64)
    (_grid_rows32 if flat.dtype == np.float32 else _grid_rows)(flat, bits, q, e)
    return q.reshape(x.shape), e.reshape(x.shape[:-1])


def scale_back(c: np.ndarray, ea: np.ndarray, eb: np.ndarray, bits: int) -> np.ndarray:
    """The float32 result of exact sums ``c`` (..., M, N) on row grid ``ea`` (..., M) and column
    grid ``eb`` (..., N)."""
    lead = c.shape[:-2]
    m, n = c.shape[-2:]
    c3 = np.ascontiguousarray(c).reshape(-1, m, n)
    out = np.empty(c3.shape, dtype=np.float32)
    _scale_back(c3, np.ascontiguousarray(np.broadcast_to(ea, lead + (m,))).reshape(-1, m),
                np.ascontiguousarray(np.broadcast_to(eb, lead + (n,))).reshape(-1, n), bits, out)
    return out.reshape(lead + (m, n))


def exact_matmul_numpy(a: np.ndarray, b_rows_grid, bits: int | None = None) -> np.ndarray:
    """``a @ b`` (float32 result) with every partial sum exact. ``b_rows_grid``: the right
    operand's columns on the grid as rows, :func:`grid_rows` of ``b``'s transpose (computed once
    for a layer's weights), or ``b`` itself."""
    bits = bits or grid_bits(a.shape[-1])
    if isinstance(b_rows_grid, np.ndarray):
        b_rows_grid = grid_rows(np.swapaxes(b_rows_grid, -1, -2), bits)
    qb, eb = b_rows_grid
    qa, ea = grid_rows(a, bits)
    return scale_back(np.matmul(qa, np.swapaxes(qb, -1, -2)), ea, eb, bits)


class TorchExact:
    """The same for torch tensors (CPU, float32): zero-copy views between torch and NumPy, the
    float64 product by NumPy's BLAS (OpenBLAS: 95 GFLOP/s here against MKL's 66-79 through
    torch on an AMD EPYC; any kernel gives the same exact sums)."""

    @staticmethod
    def grid_rows(x, bits: int):
        return grid_rows(x.detach().contiguous().numpy(), bits)

    @staticmethod
    def sums(a, b_rows_grid, bits: int):
        """The exact integer sums of ``a @ b`` (float64) and ``a``'s row exponents."""
        qb, eb = b_rows_grid
        qa, ea = TorchExact.grid_rows(a, bits)
        if qb.ndim == 2:  # one 2-D product (NumPy loops over a stack: half the speed)
            c = (qa.reshape(-1, qa.shape[-1]) @ qb.T).reshape(qa.shape[:-1] + qb.shape[:1])
        else:
            c = np.matmul(qa, np.swapaxes(qb, -1, -2))
        return c, ea

    @staticmethod
    def matmul(a, b_rows_grid, bits: int, bias=None, residual=None, scores=None):
        """``a @ b`` where ``b_rows_grid`` = :meth:`grid_rows` of ``b``'s transpose; with
        ``bias`` (and ``residual``), ``a @ b + bias (+ residual)`` for a 2-D ``b``; with
        ``scores`` = (scaling, mask (texts x keys), heads), ``(a @ b) * scaling + mask`` for
        attention's stacked (texts x heads) products. Each addition and the scaling is the
        float32 operation the separate tensor operation would do, in the same order."""
        import torch

        c, ea = TorchExact.sums(a, b_rows_grid, bits)
        eb = b_rows_grid[1]
        if bias is not None:
            n = c.shape[-1]
            out = np.empty(c.shape, dtype=np.float32)
            resid = np.empty((0, n), np.float32) if residual is None else \
                residual.detach().contiguous().numpy().reshape(-1, n)
            _scale_back_linear(c.reshape(-1, n), ea.reshape(-1), eb, bits,
                               bias.detach().contiguous().numpy(), resid, out.reshape(-1, n))
            return torch.from_numpy(out)
        if scores is not None:
            scaling, mask, heads = scores
            lead = c.shape[:-2]
            c3 = c.reshape((-1,) + c.shape[-2:])
            out = np.empty(c3.shape, dtype=np.float32)
            _scale_back_scores(c3, ea.reshape(c3.shape[:2]), eb.reshape(c3.shape[0], -1), bits,
                               np.float32(scaling), mask.detach().contiguous().numpy(), heads,
                               out)
            return torch.from_numpy(out.reshape(lead + c.shape[-2:]))
        return torch.from_numpy(scale_back(c, ea, eb, bits))


def exact_matmul(a, b):
    """``a @ b`` for torch tensors (batched like :func:`torch.matmul`), every partial sum exact."""
    bits = grid_bits(a.shape[-1])
    return TorchExact.matmul(a, TorchExact.grid_rows(b.transpose(-1, -2), bits), bits)


def exact_scores(q, k, scaling: float, mask):
    """Attention's ``q @ k^T * scaling + mask`` for ``q``, ``k`` (texts, heads, tokens, head
    size) and ``mask`` (texts, tokens; 0 or float32's lowest, added per key): the product
    exact, then the float32 scaling and addition."""
    bits = grid_bits(q.shape[-1])
    return TorchExact.matmul(q, TorchExact.grid_rows(k, bits), bits,
                             scores=(scaling, mask, q.shape[1]))


def weight_grid(weight):
    """A linear layer's weight (out x in, as torch stores it: its rows are the columns of the
    right operand) on the grid, once."""
    return TorchExact.grid_rows(weight, grid_bits(weight.shape[1]))


def exact_linear(x, weight_grid_, bias=None, residual=None):
    """``x @ W.T + bias (+ residual)`` with the product exact and the bias (and the residual)
    added afterwards in float32 (a bias inside the product, as ``addmm`` does, would be a
    rounded partial sum)."""
    bits = grid_bits(x.shape[-1])
    if bias is None:
        return TorchExact.matmul(x, weight_grid_, bits)
    return TorchExact.matmul(x, weight_grid_, bits, bias=bias, residual=residual)


def warm() -> None:
    """Compile (or load from numba's cache) the kernels once: ``python -m
    rrfbench.core.exact_products``."""
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    exact_matmul_numpy(a, a.T.copy())
    exact_matmul_numpy(a.astype(np.float64), a.T.astype(np.float64))
    c, e = np.ones((3, 3)), np.zeros(3, dtype=np.int64)
    for resid in (np.empty((0, 3), np.float32), np.ones((3, 3), np.float32)):
        _scale_back_linear(c, e, e, 24, np.ones(3, np.float32), resid,
                           np.empty((3, 3), np.float32))
    _scale_back_scores(c[None], e[None], e[None], 24, np.float32(0.5),
                       np.zeros((1, 3), np.float32), 1, np.empty((1, 3, 3), np.float32))


if __name__ == "__main__":  # through the package's module, so numba caches under its name
    from rrfbench.core import exact_products

    exact_products.warm()
