"""Explorer latency: from a slider change to the updated numbers (scifact test, three runs).

Baseline, same process: the same configuration scored the slow way, ``fuse`` (or
``score_fusion``) + ``evaluate`` (ir_measures), as a notebook cell without the engine would.
Goal: median under 100 ms. Last line: ``explorer_median_ms: <float>``.
"""

import time

import numpy as np
from _common import ROOT  # noqa: F401

from rrfbench.core.evaluation import evaluate
from rrfbench.workflows.explorer import Explorer


def main(n: int = 40):
    ex = Explorer("scifact", split="test")
    rng = np.random.default_rng(0)
    lat, slow = [], []
    for i in range(n):
        method = ["rrf", "convex", "rrf", "combmnz"][i % 4]
        ex.set(method=method, weights=list(np.round(rng.random(3), 2) + 0.05))
        if method == "rrf":
            ex.w_k.value = float(10 ** rng.uniform(0, 3))  # one slider move = one update
        else:
            ex.w_weights[0].value = float(np.round(rng.random(), 2) + 0.05)
        lat.append(ex.last_latency_ms)
        if i < 8:
            cfg = ex.values()["config"]
            t0 = time.perf_counter()
            evaluate(cfg.fuse(ex.runs), ex.qrels, [ex.values()["metric"]])
            slow.append(1000 * (time.perf_counter() - t0))
    lat = np.array(lat)
    print(f"scifact test, {len(ex.engine.qids)} queries, runs {', '.join(ex.names)}; "
          f"{n} slider changes (bootstrap CI: {ex_ci()} resamples per update)")
    print(f"explorer update: median {np.median(lat):.1f} ms, p95 {np.percentile(lat, 95):.1f} ms,"
          f" max {lat.max():.1f} ms")
    print(f"fuse + evaluate (ir_measures), same configurations: median {np.median(slow):.0f} ms "
          f"-> explorer is {np.median(slow) / np.median(lat):.0f}x faster")
    print(f"explorer_median_ms: {np.median(lat):.1f}")


def ex_ci():
    from rrfbench.workflows.explorer import CI_RESAMPLES

    return CI_RESAMPLES


if __name__ == "__main__":
    main()
