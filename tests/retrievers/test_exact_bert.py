"""The exact-products BERT pass: sentence-transformers' embeddings to float32 noise, and bits
that no summation order can change (while one plain float32 product would)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from tests.conftest import needs_scifact

if importlib.util.find_spec("sentence_transformers") is None:
    pytest.skip("sentence-transformers is not installed", allow_module_level=True)


@pytest.fixture(scope="module")
def encoder(scifact):
    """The default retriever's model, its exact pass and a tokenised batch of 10 texts (queries
    and documents cut to 400 characters: short enough to be quick, long enough to pad)."""
    from rrfbench.retrievers.dense import DenseRetriever

    model = DenseRetriever(show_progress=False).load()
    texts = scifact.split_queries("test").text.tolist()[:5] + \
        [t[:400] for t in scifact.doc_texts()[:5]]
    return model, model._rrfbench_exact, model.preprocess(texts)


@needs_scifact
def test_the_exact_pass_is_sentence_transformers_own_to_float32_noise(encoder):
    import torch

    model, exact, features = encoder
    with torch.inference_mode():
        ref = torch.nn.functional.normalize(model(dict(features))["sentence_embedding"], dim=1)
    got = exact(features)
    assert np.abs(got.numpy() - ref.numpy()).max() < 1e-5
    assert (got * ref).sum(1).min().item() > 0.99999


def _permuted(matmul, seed):
    """TorchExact.matmul with K (the summed axis) permuted in both operands: the same product,
    summed in another order."""
    import torch

    def run(a, b_rows_grid, bits, **epilogue):
        qb, eb = b_rows_grid
        order = np.random.default_rng(seed).permutation(a.shape[-1])
        return matmul(a[..., torch.from_numpy(order)].contiguous(),
                      (np.ascontiguousarray(qb[..., order]), eb), bits, **epilogue)
    return run


@needs_scifact
def test_no_summation_order_changes_a_bit(encoder, monkeypatch):
    from rrfbench.core.exact_products import TorchExact

    _, exact, features = encoder
    want = exact(features).numpy().tobytes()
    for seed in (0, 1):
        with monkeypatch.context() as m:
            m.setattr(TorchExact, "matmul", staticmethod(_permuted(TorchExact.matmul, seed)))
            assert exact(features).numpy().tobytes() == want


@needs_scifact
def test_one_plain_float32_product_in_another_order_changes_bits(encoder, monkeypatch):
    """The check above can fail: attention's products back on float32 BLAS, summed in two
    orders, give two other sets of bits (what an AVX2 and an AVX-512 kernel did)."""
    import torch

    import rrfbench.retrievers.exact_bert as eb

    _, exact, features = encoder
    want = exact(features).numpy().tobytes()
    got = []
    for seed in (0, 1):
        order = torch.from_numpy(np.random.default_rng(seed).permutation(32))

        def plain(q, k, scaling, key_mask, order=order):  # QK^T only; PV stays exact
            scores = torch.matmul(q[..., order], k.transpose(-1, -2)[..., order, :])
            return scores * scaling + key_mask[:, None, None, :]
        with monkeypatch.context() as m:
            m.setattr(eb, "exact_scores", plain)
            got.append(exact(features).numpy().tobytes())
    assert got[0] != want and got[1] != want and got[0] != got[1]
