"""Fail-open retrieval (titan's ``gatherFailOpen``) and what an outage of a stream costs.

:func:`gather` runs several retrievers for one query concurrently, each with a deadline. One that
raises, or is still running at its deadline, contributes nothing and is listed in ``degraded``
with its reason (``error`` or ``timeout``) and message; the others' lists are fused as usual. A
missing embedder or a locked index lowers recall; it never breaks the search.

:func:`degradation_study` measures the cost: a stream is dropped for a fraction of the queries
(chosen with a fixed seed), the system is evaluated, and the loss against no outage is reported
per fraction.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ...core.errors import InputError
from ...core.evaluation import evaluate_per_query


@dataclass(frozen=True)
class Degradation:
    retriever: str
    reason: str       # "error" or "timeout"
    message: str


def gather(retrievers: dict[str, Callable[[str], list]], query: str,
           timeout_s: float | None = None) -> tuple[dict[str, list], list[Degradation], dict]:
    """Run every retriever on ``query`` concurrently; returns (lists of those that answered in
    time, degradations of the others, milliseconds per retriever)."""
    lists: dict[str, list] = {}
    degraded: list[Degradation] = []
    timings: dict[str, float] = {}
    pool = ThreadPoolExecutor(max_workers=max(1, len(retrievers)))
    try:
        started = time.perf_counter()
        futures = {name: pool.submit(_timed, fn, query) for name, fn in retrievers.items()}
        wait(list(futures.values()), timeout=timeout_s)
        for name, fut in futures.items():
            if not fut.done():
                fut.cancel()
                timings[name] = round(1000 * (time.perf_counter() - started), 1)
                degraded.append(Degradation(name, "timeout",
                                            f"no answer within {timeout_s * 1000:.0f} ms"))
                continue
            exc = fut.exception()
            if exc is not None:
                degraded.append(Degradation(name, "error", f"{type(exc).__name__}: {exc}"))
                timings[name] = round(1000 * (time.perf_counter() - started), 1)
                continue
            hits, ms = fut.result()
            lists[name] = hits
            timings[name] = ms
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
    return lists, degraded, timings


def _timed(fn, query):
    t0 = time.perf_counter()
    out = fn(query)
    return out, round(1000 * (time.perf_counter() - t0), 1)


def fuse_fail_open(preset, retrievers: dict[str, Callable[[str], list]], query: str,
                   params: dict | None = None, limit: int | None = None,
                   timeout_s: float | None = None):
    """A studied system on one live query with fail-open gathering: (ranked, degraded)."""
    params = preset.defaults() | (params or {})
    limit = preset.limit_for(params, limit)
    lists, degraded, _ = gather(retrievers, query, timeout_s)
    return preset.fuse_query(lists, params, limit), degraded


def degradation_study(preset, runs: dict, qrels, stream: str,
                      fractions: Sequence[float] = (0.0, 0.1, 0.25, 0.5, 1.0),
                      params: dict | None = None, metric: str = "nDCG@10", seed: int = 0
                      ) -> pd.DataFrame:
    """``stream`` out for a fraction of the queries: the system's metric and its loss."""
    if stream not in runs:
        raise InputError(f"stream {stream!r} is not one of {', '.join(runs)}")
    qids = np.array(qrels.qids, dtype=object)
    order = np.random.default_rng(seed).permutation(len(qids))
    rows, base = [], None
    for f in fractions:
        down = set(qids[order[: int(round(f * len(qids)))]])
        r = runs[stream]
        cut = r.subset([q for q in r.qids if q not in down])
        pq = evaluate_per_query(preset.run({**runs, stream: cut}, params), qrels, [metric])[metric]
        base = pq if base is None else base
        rows.append({"stream_down": stream, "fraction": f, "queries_affected": len(down),
                     metric: float(pq.mean()), "loss": float(base.mean() - pq.mean())})
    return pd.DataFrame(rows)
