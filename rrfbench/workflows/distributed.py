"""Running sweeps and corpus encoding on Dask (``dask.distributed``), when one machine is not enough.

Nothing here is imported unless a scheduler or a client is asked for, so an ordinary run never
imports Dask.

* :func:`client_for` connects to a scheduler (``tcp://host:8786``) or starts a local cluster of
  ``workers`` processes (one thread each: the numba kernels are the parallel part).
Neither the sweep engine nor the retrievers know Dask: the workflow hands them map functions
(:mod:`rrfbench.core.parallel`) built here.

* Sweeps: :func:`chunk_map` gives :func:`rrfbench.fusion.sweep.run_sweep` a chunk map that scatters
  the engine to every worker once and submits one task per chunk of the grid; the client alone writes each finished chunk to
  the resumable parquet parts as results arrive (one writer). A lost worker's tasks are re-run
  elsewhere, so it costs only its chunks. A suite's collections travel together: its combined
  engine already scores every collection in one pass, so a task is (chunk x all collections).
* Encoding: inside ``client_for`` (the CLI's ``--workers``/``--scheduler``, or :func:`using` in
  a notebook) the shard map of :mod:`rrfbench.core.parallel` is :func:`shard_map` of the client, so
  a dense retriever's corpus encoding goes to the cluster. :func:`encode_shards` submits one task per shard of the corpus; each worker loads the
  model once (a per-process cache) and the client writes each shard's ``.npy`` as it arrives,
  so an interrupted encoding resumes from the finished shards.
"""

from __future__ import annotations

import weakref
from contextlib import contextmanager
from contextvars import ContextVar

from ..core.errors import InputError, MissingDependencyError
from ..core.parallel import mapping_shards
from ..retrievers.dense import DenseRetriever


def _dask():
    try:
        import distributed
    except ImportError:
        raise MissingDependencyError(
            "distributed sweeps need Dask: pip install 'dask[distributed]' (or -e '.[scale]')"
        ) from None
    return distributed


_ACTIVE: ContextVar = ContextVar("rrfbench_dask_client", default=None)

# No dashboard, and the scheduler's small HTTP server (health and metrics routes, which
# dashboard_address=None still starts on port 8787) on a free port: two local clusters at once
# (two commands, or two test workers) used to warn "Port 8787 is already in use"
NO_DASHBOARD = {"dashboard": False, "dashboard_address": ":0"}


def active_client():
    """The client set by :func:`client_for` (or :func:`using`) around the current work, or
    None: corpus encoding uses it without every call in between passing it along."""
    return _ACTIVE.get()


@contextmanager
def using(client):
    """Make ``client`` the active one inside the block: corpus encoding goes to its workers."""
    token = _ACTIVE.set(client)
    try:
        with mapping_shards(shard_map(client)):
            yield client
    finally:
        _ACTIVE.reset(token)


def chunk_map(client):
    """A chunk map (:mod:`rrfbench.core.parallel`) running on ``client``'s workers."""
    def run(engine, chunks, grid_hash):
        return submit_chunks(client, engine, chunks, grid_hash)

    return run


def shard_map(client):
    """A shard map (:mod:`rrfbench.core.parallel`) running on ``client``'s workers."""
    def run(retriever, shards):
        return encode_shards(client, retriever, shards)

    return run


@contextmanager
def client_for(scheduler: str | None = None, workers: int | None = None):
    """A ``distributed.Client``: connected to ``scheduler``, or to a local cluster of
    ``workers`` processes that is closed afterwards."""
    if scheduler and workers:
        raise InputError("give --scheduler or --workers, not both")
    distributed = _dask()
    if scheduler:
        try:
            client = distributed.Client(scheduler, timeout="10s")
        except OSError as exc:
            raise InputError(f"--scheduler: cannot reach {scheduler!r} ({exc})") from None
        try:
            with using(client):
                yield client
        finally:
            client.close()
        return
    if not workers or workers < 1:
        raise InputError(f"--workers: {workers!r} must be >= 1")
    # silence_logs=CRITICAL: on a loaded machine a worker's heartbeat can reach a scheduler
    # that is already closing and log an ERROR with a traceback after the command succeeded
    # (seen in `rrfbench sweep scifact --workers 2`); task failures still reach the client as
    # exceptions, which the command reports
    cluster = distributed.LocalCluster(n_workers=int(workers), threads_per_worker=1,
                                       processes=True, silence_logs=50,
                                       scheduler_kwargs=NO_DASHBOARD)
    client = distributed.Client(cluster)
    try:
        with using(client):
            yield client
    finally:
        client.close()
        cluster.close()


def score_chunk(engine, configs, start_id: int, grid_hash: str, index: int):
    """A worker's task: one chunk of the grid scored by the (scattered) engine."""
    return index, engine.table(configs, start_id=start_id).assign(grid_hash=grid_hash)


_SCATTERED: dict[int, tuple] = {}


def scattered(client, engine):
    """The engine's copy on every worker, scattered once per (client, engine) and reused by
    later sweeps of the same engine (its lazily built per-depth tables then stay warm too)."""
    key = id(engine)
    entry = _SCATTERED.get(key)
    if entry is not None and entry[0]() is engine and entry[1] == client.id \
            and entry[2].status == "finished":
        return entry[2]
    remote = client.scatter(engine, broadcast=True)
    _SCATTERED[key] = (weakref.ref(engine), client.id, remote)
    weakref.finalize(engine, _SCATTERED.pop, key, None)
    return remote


def submit_chunks(client, engine, chunks: list[tuple[int, list, int]], grid_hash: str):
    """Submit (index, configs, start_id) chunks; yields (index, table) as they finish."""
    distributed = _dask()
    remote = scattered(client, engine)
    futures = [client.submit(score_chunk, remote, cfgs, start, grid_hash, i, pure=False,
                             retries=3, key=f"rrfbench-chunk-{grid_hash}-{i}")
               for i, cfgs, start in chunks]
    for fut in distributed.as_completed(futures):
        yield fut.result()


def encode_shard(model_name: str, backend: str, max_seq_length, texts: list[str], index: int):
    """A worker's task: one shard of document texts encoded (the model loads once per worker)."""
    r = DenseRetriever(model=model_name, backend=backend, max_seq_length=max_seq_length,
                       show_progress=False)
    return index, r.encode_shard(texts)


def encode_shards(client, retriever, shards: list[tuple[int, list[str]]]):
    """Submit (index, texts) shards; yields (index, embeddings) as they finish."""
    distributed = _dask()
    futures = [client.submit(encode_shard, retriever.model_name, retriever.backend,
                             retriever.max_seq_length, texts, i, pure=False, retries=2)
               for i, texts in shards]
    for fut in distributed.as_completed(futures):
        yield fut.result()
