"""Exact dense top-k: rrfbench's ``topk_cosine`` (ties at the cut by docid, the same on every
CPU: :func:`rrfbench.core.runs.top_k`) vs the plain ``np.argpartition`` blocked merge it replaced,
whose choice among tied documents depends on the SIMD sort NumPy dispatches to.

1,000 random unit queries against 100,000 random unit documents (384 dimensions, blocks of
16,384), k = 1,000; both run in this process, interleaved, best of 3. Also checks that on
tie-free scores both return the same lists. Last line: ``ratio_vs_argpartition: <float>``.
"""

import sys
import time

import numpy as np

from rrfbench.retrievers.vectors import _blocks, topk_cosine


def argpartition_topk(queries, docs, k, block=16384):
    """The former merge: argpartition per block and per merge, one lexsort at the end."""
    nq, nd = len(queries), len(docs)
    k = min(k, nd)
    best_i = np.zeros((nq, 0), dtype=np.int64)
    best_s = np.zeros((nq, 0), dtype=np.float32)
    for start, chunk in _blocks(docs, block):
        s = queries @ chunk.T
        kk = min(k, s.shape[1])
        part = np.argpartition(-s, kk - 1, axis=1)[:, :kk]
        cand_s = np.concatenate([best_s, np.take_along_axis(s, part, 1)], axis=1)
        cand_i = np.concatenate([best_i, part + start], axis=1)
        if cand_s.shape[1] > k:
            keep = np.argpartition(-cand_s, k - 1, axis=1)[:, :k]
            cand_s = np.take_along_axis(cand_s, keep, 1)
            cand_i = np.take_along_axis(cand_i, keep, 1)
        best_s, best_i = cand_s, cand_i
    order = np.lexsort((best_i, -best_s), axis=1)
    return np.take_along_axis(best_i, order, 1), np.take_along_axis(best_s, order, 1)


def main(n_docs: int = 100_000, n_queries: int = 1000, dim: int = 384, k: int = 1000):
    rng = np.random.default_rng(0)
    d = rng.normal(size=(n_docs, dim)).astype(np.float32)
    d /= np.linalg.norm(d, axis=1, keepdims=True)
    q = rng.normal(size=(n_queries, dim)).astype(np.float32)
    q /= np.linalg.norm(q, axis=1, keepdims=True)
    ours, base = [], []
    for _ in range(3):
        t = time.perf_counter()
        a = topk_cosine(q, d, k)
        ours.append(time.perf_counter() - t)
        t = time.perf_counter()
        b = argpartition_topk(q, d, k)
        base.append(time.perf_counter() - t)
    same = bool((a[0] == b[0]).all() and (a[1] == b[1]).all())
    print(f"topk_cosine (rank rule at the cut): {min(ours):.3f} s")
    print(f"argpartition merge (former):        {min(base):.3f} s")
    print(f"same lists on tie-free scores: {same}")
    print(f"ratio_vs_argpartition: {min(ours) / min(base):.3f}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        print(f"error: bench_topk.py takes no arguments (got {sys.argv[1]!r})", file=sys.stderr)
        sys.exit(2)
    main()
