"""Exact vector search over cached embeddings: the corpus as memory-mapped shards
(:class:`EmbeddingShards`), cosines computed exactly (:func:`exact_cosines`: the same bits on
every CPU) and a bounded-memory top-k (:func:`topk_cosine`) with the rank rule's tie order.

Called from: ``retrievers.dense`` (the dense retriever), ``retrievers.graph`` (its neighbour
graph), ``retrievers.stages.rerank`` (the bi-encoder stage).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..core.errors import InputError
from ..core.runs import top_k


class EmbeddingShards:
    """Corpus embeddings kept as memory-mapped ``.npy`` shards, in corpus order."""

    def __init__(self, paths: list[Path]):
        self.parts = [np.load(p, mmap_mode="r") for p in paths]
        n = sum(len(p) for p in self.parts)
        dim = self.parts[0].shape[1] if self.parts else 0
        self.shape = (n, dim)

    def __len__(self) -> int:
        return self.shape[0]

    def blocks(self, size: int):
        """(start, block) pairs of at most ``size`` rows, read shard by shard."""
        start = 0
        for part in self.parts:
            for a in range(0, len(part), size):
                yield start + a, np.asarray(part[a:a + size], dtype=np.float32)
            start += len(part)

    def __array__(self, dtype=None, copy=None):
        out = np.concatenate([np.asarray(p) for p in self.parts]) if self.parts else \
            np.zeros((0, 0), np.float32)
        return out.astype(dtype) if dtype is not None else out


def _blocks(docs, size: int):
    if isinstance(docs, EmbeddingShards):
        yield from docs.blocks(size)
    else:
        for start in range(0, len(docs), size):
            yield start, docs[start:start + size]


GRID = 2.0 ** 20   # embedding components are scored on this grid (see exact_cosines)


def unit_rows(mat: np.ndarray) -> tuple[np.ndarray, int | None]:
    """``mat``'s rows scaled to unit length (norms in float64, the division in float32), and the
    index of the first zero or non-finite row (``None`` if every row is usable): the one
    normalisation of a team's embeddings, from a file or an endpoint."""
    mat = np.asarray(mat, dtype=np.float32)
    norms = np.linalg.norm(mat.astype(np.float64), axis=1) if mat.size else np.zeros(len(mat))
    bad = np.flatnonzero(~np.isfinite(norms) | (norms == 0))
    if len(bad):
        return mat, int(bad[0])
    return mat / norms[:, None].astype(np.float32), None


def exact_cosines(queries: np.ndarray, docs: np.ndarray) -> np.ndarray:
    """``queries @ docs.T`` for L2-normalised rows, computed exactly: every component is rounded
    to a multiple of 2^-20 (|error| <= 5e-7), so each product is an integer multiple of 2^-40 below
    2^40 of them and every partial sum of up to 8192 is exact in float64, in any order. A BLAS
    kernel's summation order (OpenBLAS picks one per CPU) then cannot change a bit: the same
    embeddings give the same scores on every CPU. float32 products were ~1e-7 CPU noise."""
    if queries.shape[-1] > 8192:
        raise InputError(f"exact cosines take at most 8192 dimensions, got {queries.shape[-1]}")
    q = np.rint(np.asarray(queries, dtype=np.float64) * GRID)
    d = np.rint(np.asarray(docs, dtype=np.float64) * GRID)
    return (q @ d.T) / (GRID * GRID)


def topk_cosine(queries: np.ndarray, docs, k: int, block: int = 16384,
                query_block: int = 1024, keys: np.ndarray | None = None):
    """Exact top-``k`` of :func:`exact_cosines` per row: (indices, scores), best first.

    Queries ``query_block`` at a time against the corpus ``block`` documents at a time (``docs``
    may be memory-mapped shards), keeping a running top-k: memory stays bounded by
    query_block x block however large the corpus; the full n_q x n_d matrix is never held.
    Ties (duplicate documents score exactly alike) go by ``keys`` ascending, one per document
    (a run passes :func:`rrfbench.core.runs.docid_keys`; default: corpus order), at the cut too
    (:func:`rrfbench.core.runs.top_k`), so the kept documents do not depend on the CPU's sort.
    """
    nq, nd = len(queries), len(docs)
    keys = np.arange(nd, dtype=np.int64) if keys is None else np.asarray(keys, dtype=np.int64)
    if nq > query_block:
        parts = [topk_cosine(queries[a:a + query_block], docs, k, block, query_block, keys)
                 for a in range(0, nq, query_block)]
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])
    k = min(k, nd)
    best_i = np.zeros((nq, 0), dtype=np.int64)
    best_s = np.zeros((nq, 0), dtype=np.float64)
    for start, chunk in _blocks(docs, block):
        s = exact_cosines(queries, chunk)
        part = top_k(s, k, keys[start:start + s.shape[1]], ordered=False)
        best_s = np.concatenate([best_s, np.take_along_axis(s, part, 1)], axis=1)
        best_i = np.concatenate([best_i, part + start], axis=1)
        if best_s.shape[1] > k:
            keep = top_k(best_s, k, keys[best_i], ordered=False)
            best_s = np.take_along_axis(best_s, keep, 1)
            best_i = np.take_along_axis(best_i, keep, 1)
    if not best_s.size:
        return best_i, best_s
    order = np.lexsort((keys[best_i], -best_s), axis=1)  # the rank rule, once, at the end
    return np.take_along_axis(best_i, order, 1), np.take_along_axis(best_s, order, 1)

