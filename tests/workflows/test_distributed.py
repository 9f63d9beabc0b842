"""Scale-out: Dask sweeps equal in-process sweeps (also when a worker dies), sharded encoding
resumes without re-encoding finished shards, ANN search keeps its recall, parquet runs."""

import os

import numpy as np
import pandas as pd
import pytest

from tests.conftest import Stop, needs_cranfield, stop_after

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster():
    from rrfbench.workflows.distributed import NO_DASHBOARD

    cl = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  silence_logs=40, scheduler_kwargs=NO_DASHBOARD)
    client = distributed.Client(cl)
    yield client
    client.close()
    cl.close()


def _engine(cranfield, run_of):
    from rrfbench.fusion.sweep import FusionEngine, make_grid

    runs = [run_of(cranfield, "bm25"), run_of(cranfield, "fts5")]
    grid = make_grid(2, methods=("rrf", "convex"), k=(1, 5, 20, 60, 200), weight_step=0.1,
                     norms=("minmax", "tmm"), missing=("zero", "min"))
    return FusionEngine(runs, cranfield.qrels("test"), ("nDCG@10", "R@100")), grid


@needs_cranfield
def test_dask_sweep_equals_in_process(cranfield, run_of, cluster, tmp_path):
    from rrfbench.fusion.sweep import run_sweep
    from rrfbench.workflows.distributed import chunk_map

    eng, grid = _engine(cranfield, run_of)
    local = run_sweep(eng, grid, tmp_path / "local", chunk_size=16, progress=False)
    remote = run_sweep(eng, grid, tmp_path / "dask", chunk_size=16, progress=False, map_chunks=chunk_map(cluster))
    pd.testing.assert_frame_equal(local, remote)


@needs_cranfield
def test_a_worker_killed_mid_sweep_costs_only_its_chunks(cranfield, run_of, cluster, tmp_path):
    from rrfbench.fusion.sweep import run_sweep
    from rrfbench.workflows.distributed import chunk_map

    eng, grid = _engine(cranfield, run_of)
    reference = run_sweep(eng, grid, tmp_path / "ref", chunk_size=16, progress=False)
    killed = []

    def kill_one(index):
        if not killed:
            import signal

            victim = sorted(cluster.scheduler_info()["workers"])[0]
            pid = cluster.run(os.getpid, workers=[victim])[victim]
            killed.append(pid)
            os.kill(pid, signal.SIGKILL)  # the worker process dies mid-sweep

    table = run_sweep(eng, grid, tmp_path / "kill", chunk_size=16, progress=False,
                      map_chunks=chunk_map(cluster), on_chunk=kill_one)
    assert killed
    pd.testing.assert_frame_equal(reference, table)


def test_interrupted_sharded_encoding_resumes(tiny_beir, tmp_path, monkeypatch):
    from rrfbench import load_dataset
    from rrfbench.retrievers.dense import DenseRetriever
    from rrfbench.retrievers.vectors import EmbeddingShards

    monkeypatch.setenv("RRFBENCH_CACHE", str(tmp_path / "cache"))
    ds = load_dataset(str(tiny_beir))
    r = DenseRetriever(show_progress=False)
    encoded = []
    real = r.encode

    def counting(texts, role):
        encoded.append(len(texts))
        return real(texts, role)

    r.encode = counting

    stop_after_two = stop_after(2)

    with pytest.raises(Stop):
        r.corpus_embeddings(ds, shard_size=1, on_shard=stop_after_two)
    assert encoded == [1, 1] and len(list(r.shard_dir(ds).glob("shard-*.npy"))) == 2
    emb = r.corpus_embeddings(ds, shard_size=1)
    assert encoded == [1, 1, 1, 1]  # only the two missing shards were encoded again
    assert isinstance(emb, EmbeddingShards) and emb.shape[0] == 4
    monkeypatch.setenv("RRFBENCH_CACHE", str(tmp_path / "other"))  # uninterrupted, elsewhere
    fresh = DenseRetriever(show_progress=False).corpus_embeddings(ds, shard_size=1)
    assert np.array_equal(np.asarray(emb), np.asarray(fresh))  # resuming changes nothing
    assert r.corpus_embeddings(ds, shard_size=1) is not None and encoded == [1, 1, 1, 1]


def test_encoding_on_the_active_client_equals_in_process(tiny_beir, tmp_path, monkeypatch,
                                                          cluster):
    """``using(client)`` (what the CLI's --workers/--scheduler set) sends the shards to the
    workers; the client writes them, and the numbers equal an in-process encoding."""
    from rrfbench import load_dataset
    from rrfbench.retrievers.dense import DenseRetriever
    from rrfbench.workflows.distributed import active_client, using

    ds = load_dataset(str(tiny_beir))
    monkeypatch.setenv("RRFBENCH_CACHE", str(tmp_path / "local"))
    local = np.asarray(DenseRetriever(show_progress=False).corpus_embeddings(ds, shard_size=2))
    monkeypatch.setenv("RRFBENCH_CACHE", str(tmp_path / "dask"))
    r = DenseRetriever(show_progress=False)
    r.encode = None  # the client process must not encode anything itself
    assert active_client() is None
    with using(cluster):
        assert active_client() is cluster
        remote = np.asarray(r.corpus_embeddings(ds, shard_size=2))
    assert active_client() is None and r.last_stats["shards_encoded"] == 2
    assert np.array_equal(local, remote)


@needs_cranfield
def test_ann_recall_at_100_against_exact(cranfield, run_of):
    exact = run_of(cranfield, "dense")
    ann = run_of(cranfield, "dense:ann")
    e = exact.cut(100).df.groupby("qid").docid.apply(set)
    a = ann.cut(100).df.groupby("qid").docid.apply(set)
    recall = np.mean([len(e[q] & a.get(q, set())) / len(e[q]) for q in e.index])
    assert recall >= 0.95, recall


def test_blocked_search_never_holds_the_full_matrix():
    from rrfbench.retrievers.vectors import topk_cosine

    rng = np.random.default_rng(0)
    q = rng.normal(size=(50, 8)).astype(np.float32)
    d = rng.normal(size=(300, 8)).astype(np.float32)
    i1, s1 = topk_cosine(q, d, 10, block=64, query_block=16)
    i2, s2 = topk_cosine(q, d, 10)
    assert (i1 == i2).all() and np.allclose(s1, s2)


def test_parquet_runs_read_lazily(tmp_path):
    from rrfbench.core.runs import Run

    run = Run.from_dict({f"q{i}": {f"d{j}": float(j) for j in range(5)} for i in range(10)}, "r")
    run.to_parquet(tmp_path / "r.parquet")
    back = Run.from_parquet(tmp_path / "r.parquet")
    assert back.equals(run)
    part = Run.from_parquet(tmp_path / "r.parquet", qids=["q3", "q7"])
    assert part.qids == ["q3", "q7"] and len(part) == 10
