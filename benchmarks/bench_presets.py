"""Studied-system grids: ``tuning.preset_matrix`` (ranked lists scored by ``engine.JudgedLists``)
vs the path it replaced, each setting's run built as a table and scored by ir_measures
(``evaluate_per_query(preset.run(...))``), in the same process, one process each.

scifact train (the split the systems are tuned on), each system's own streams (cached runs;
retrieved if missing), its whole grid, nDCG@10 and R@100. The baseline is timed on an evenly
spaced sample of the grid (``--sample``, default 12 settings) and scaled to the grid; both
paths' values are compared for that sample (they must be equal, bit for bit). Last line:
``speedup_vs_run_then_evaluate: <float>`` (the geometric mean over the systems).
"""

import argparse
import os
import time

import numpy as np

os.environ["RRFBENCH_JOBS"] = "1"  # one process each: the ratio is the path, not the cores

from _common import ROOT  # noqa: E402,F401  (sets RRFBENCH_DATA, sys.path)

from rrfbench import load_dataset  # noqa: E402
from rrfbench.core.evaluation import evaluate_per_query  # noqa: E402
from rrfbench.systems.presets import get_preset  # noqa: E402
from rrfbench.tuning.holdout import preset_matrix  # noqa: E402
from rrfbench.workflows.dataset import preset_runs  # noqa: E402

METRICS = ["nDCG@10", "R@100"]


def main(sample: int) -> None:
    ds = load_dataset("scifact")
    qrels = ds.qrels("train")
    ratios = []
    for name in ("nexusai", "titan", "ai-memory", "zeus"):
        p = get_preset(name)
        runs = preset_runs(p, ds, "train")
        grid = p.grid()
        preset_matrix(p, runs, qrels, grid[:1], METRICS)  # numba and the hit lists warmed up
        t0 = time.perf_counter()
        fast = preset_matrix(p, runs, qrels, grid, METRICS)
        t_fast = time.perf_counter() - t0
        picks = sorted({int(i) for i in np.linspace(0, len(grid) - 1, min(sample, len(grid)))})
        t0 = time.perf_counter()
        slow = [evaluate_per_query(p.run(runs, grid[i]), qrels, METRICS).to_numpy().T
                for i in picks]
        t_slow = (time.perf_counter() - t0) * len(grid) / len(picks)
        same = all(np.array_equal(fast[i], s) for i, s in zip(picks, slow, strict=True))
        ratios.append(t_slow / t_fast)
        print(f"{name:10s} {len(grid):4d} settings x {len(qrels.qids)} queries: "
              f"preset_matrix {t_fast:6.2f} s, run + evaluate {t_slow:6.2f} s "
              f"(from {len(picks)} settings), {t_slow / t_fast:4.1f}x, equal: {same}")
        assert same, name
    print(f"speedup_vs_run_then_evaluate: {float(np.exp(np.mean(np.log(ratios)))):.2f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sample", type=int, default=12)
    main(ap.parse_args().sample)
