"""Sweep throughput: rrfbench's engine vs a plain ranx loop (ranx.fuse + ranx.evaluate).

scifact test, bm25 + fts5 + dense at depth 1000 (cached runs; retrieved if missing),
>= 1,000 RRF configurations (k x weight simplex). ranx is warmed up (numba compiled) before
timing. Goal: >= 500x. Last line: ``speedup_vs_ranx: <float>``.
"""

import time
import tracemalloc

import numpy as np
from _common import peak_rss_mb

from rrfbench import load_dataset
from rrfbench.fusion.sweep import FusionEngine, make_grid
from rrfbench.retrievers import cached_run, make_retriever


def main(n_ranx: int = 5):
    import ranx

    ds = load_dataset("scifact")
    qrels = ds.qrels("test")
    runs = [cached_run(make_retriever(s), ds, "test", 1000).run for s in ("bm25", "fts5", "dense")]
    t0 = time.perf_counter()
    engine = FusionEngine(runs, qrels, ["nDCG@10", "R@100"])
    build = time.perf_counter() - t0
    grid = make_grid(3, k=(1, 2, 5, 10, 15, 20, 30, 40, 50, 60, 80, 100, 150, 200, 300, 500),
                     weight_step=0.1)
    engine.evaluate(grid[:4])  # jit warm-up
    t0 = time.perf_counter()
    pq = engine.evaluate(grid)
    ours = time.perf_counter() - t0
    tracemalloc.start()  # memory measured on a separate pass (tracing slows allocation)
    engine.evaluate(grid)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    ours_rate = len(grid) / ours

    rq = qrels.to_ranx()
    rx = [ranx.Run(r.to_rank_dict(), name=r.name) for r in runs]
    ranx.evaluate(rq, ranx.fuse(rx, method="rrf", params={"k": 60}),
                  ["ndcg@10", "recall@100"])  # numba warm-up
    picks = np.random.default_rng(0).choice(len(grid), n_ranx, replace=False)
    t0 = time.perf_counter()
    for i in picks:
        c = grid[i]
        # ranx has no weighted RRF; its rrf (k only) is the same amount of work per configuration
        fused = ranx.fuse(rx, method="rrf", params={"k": int(c.k[0])})
        ranx.evaluate(rq, fused, ["ndcg@10", "recall@100"])
    ranx_rate = n_ranx / (time.perf_counter() - t0)
    print(f"grid: {len(grid)} configurations x {len(engine.qids)} queries, "
          f"{len(engine.cand)} candidates; engine build {build:.2f} s")
    print(f"rrfbench engine: {ours_rate:,.0f} configurations/s ({ours:.2f} s), "
          f"best nDCG@10 {pq[:, 0].mean(axis=1).max():.4f}")
    print(f"ranx loop (fuse + evaluate, numba warm): {ranx_rate:.2f} configurations/s "
          f"({n_ranx} configurations)")
    print(f"peak memory: traced during sweep {peak / 2**20:.1f} MiB; process max RSS "
          f"{peak_rss_mb():.0f} MiB")
    print(f"speedup_vs_ranx: {ours_rate / ranx_rate:.1f}")
    # many collections in one pass keep the engine's speed (bench_suite.py has the details)
    try:
        from bench_suite import main as suite_main

        suite_main("en")
    except Exception as exc:  # the suite needs every English collection's runs
        print(f"suite benchmark skipped: {type(exc).__name__}: {exc}")


if __name__ == "__main__":
    main()
