"""Multi-collection sweep throughput: one engine pass over every collection of a suite vs one
engine per collection, swept one after the other (the baseline, same process, same grid).

Runs: bm25 + fts5 + dense at depth 1000 on each collection's evaluation split (cached runs;
retrieved if missing). Goal: (configurations x collections) per second of the combined pass
within 1.5x of the per-collection figure. Last line: ``suite_vs_separate: <float>`` (>= 1 means
the combined pass is at least as fast).
"""

import sys
import time

from _common import ROOT  # noqa: F401

from rrfbench.fusion.sweep import FusionEngine, make_grid
from rrfbench.tuning.suite_data import combine
from rrfbench.workflows.dataset import load_runs
from rrfbench.workflows.suite import suite_members


def main(suite: str = "en"):
    specs = ["bm25", "fts5", "dense"]
    members = suite_members(suite)
    grid = make_grid(3, k=(1, 2, 5, 10, 20, 40, 60, 100, 200), weight_step=0.1)
    parts = []
    for ds, p in members:
        parts.append((ds.name, load_runs(ds, specs, p.eval_split), ds.qrels(p.eval_split)))
    separate = [FusionEngine(runs, qrels, ("nDCG@10", "R@100")) for _, runs, qrels in parts]
    combined = FusionEngine(*combine(parts), ("nDCG@10", "R@100"))
    for e in separate + [combined]:
        e.evaluate(grid[:4])  # jit warm-up
    t0 = time.perf_counter()
    for e in separate:
        e.evaluate(grid)
    t_sep = time.perf_counter() - t0
    t0 = time.perf_counter()
    combined.evaluate(grid)
    t_comb = time.perf_counter() - t0
    cc = len(grid) * len(parts)
    print(f"suite {suite}: {len(parts)} collections, {len(combined.qids)} queries, "
          f"{len(grid)} configurations")
    print(f"one engine per collection: {cc / t_sep:,.0f} configurations x collections / s "
          f"({t_sep:.2f} s)")
    print(f"one combined pass:         {cc / t_comb:,.0f} configurations x collections / s "
          f"({t_comb:.2f} s)")
    print(f"suite_vs_separate: {t_sep / t_comb:.2f}")


if __name__ == "__main__":
    main(*sys.argv[1:])
