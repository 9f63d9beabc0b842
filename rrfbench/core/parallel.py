"""How work is spread: map functions that a workflow hands down to the sweep engine and the
retrievers, so neither knows what runs them (this process, or a Dask cluster).

* A **chunk map** scores chunks of a sweep grid: ``map_chunks(engine, chunks, grid_hash)``
  with ``chunks`` a list of ``(index, configs, start_id)``, yielding ``(index, table)`` in any
  order. :func:`local_chunks` is the in-process one; :func:`rrfbench.workflows.distributed.chunk_map`
  builds one for a Dask client.
* A **shard map** encodes corpus shards: ``map_shards(retriever, shards)`` with ``shards`` a
  list of ``(index, texts)``, yielding ``(index, embeddings)``. The workflow sets one around a
  block of work with :func:`mapping_shards` (the CLI's ``--workers``/``--scheduler`` do, via
  :func:`rrfbench.workflows.distributed.using`), and dense retrieval asks :func:`shard_map` for it, so no
  call in between has to pass it along.
* A **process map** (:func:`process_map`) runs independent CPU-bound jobs (the folds of an
  adaptive policy's leave-one-collection-out) on the machine's cores, each with one BLAS
  thread, so the numbers are the same however many processes ran them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

ChunkMap = Callable[[object, list, str], Iterable[tuple]]
ShardMap = Callable[[object, list], Iterable[tuple]]

_SHARD_MAP: ContextVar[ShardMap | None] = ContextVar("rrfbench_shard_map", default=None)


def local_chunks(engine, chunks: list, grid_hash: str) -> Iterator[tuple]:
    """Score each ``(index, configs, start_id)`` chunk here, in order."""
    for index, configs, start in chunks:
        yield index, engine.table(configs, start_id=start).assign(grid_hash=grid_hash)


def local_shards(retriever, shards: list) -> Iterator[tuple]:
    """Encode each ``(index, texts)`` shard here, in order."""
    for index, texts in shards:
        yield index, retriever.encode_shard(texts)


def shard_map() -> ShardMap:
    """The shard map set around the current work, else :func:`local_shards`."""
    return _SHARD_MAP.get() or local_shards


@contextmanager
def mapping_shards(fn: ShardMap | None):
    """Make ``fn`` the shard map inside the block (``None``: in-process)."""
    token = _SHARD_MAP.set(fn)
    try:
        yield fn
    finally:
        _SHARD_MAP.reset(token)


JOBS_ENV = "RRFBENCH_JOBS"


def n_jobs() -> int:
    """Processes for CPU-bound jobs: ``$RRFBENCH_JOBS``, else the CPUs this process may use."""
    env = os.environ.get(JOBS_ENV, "").strip()
    if env:
        return max(1, int(env))
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:                      # not on Linux
        return os.cpu_count() or 1


def _one_thread(fn: Callable, args: tuple):
    """``fn(*args)`` with one BLAS/OpenMP thread: a BLAS reduction's order depends on its thread
    count, so fits would differ in their last bits between machines with different cores."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return fn(*args)


def process_imap(fn: Callable, jobs: Sequence[tuple]) -> Iterator:
    """``fn(*job)`` for each job, yielded in job order as they finish, spread over up to
    :func:`n_jobs` processes (joblib's loky, as scikit-learn runs it; its workers are reused
    between calls); here when one process would do. Each job runs with one BLAS thread either
    way, and must be deterministic on its own (fixed seeds)."""
    jobs = list(jobs)
    n = min(n_jobs(), len(jobs))
    if n <= 1:
        for job in jobs:
            yield _one_thread(fn, job)
        return
    from sklearn.utils.parallel import Parallel, delayed

    yield from Parallel(n_jobs=n, backend="loky", return_as="generator")(
        delayed(_one_thread)(fn, job) for job in jobs)


def process_map(fn: Callable, jobs: Sequence[tuple]) -> list:
    """``[fn(*job) for job in jobs]``, as :func:`process_imap` computes them."""
    return list(process_imap(fn, jobs))
