"""Helpers shared by the benchmark scripts (not a test module)."""

import os
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if not os.environ.get("RRFBENCH_DATA") and (ROOT.parent / "shared" / "datasets").is_dir():
    os.environ["RRFBENCH_DATA"] = str(ROOT.parent / "shared" / "datasets")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
sys.path.insert(0, str(ROOT))


def best_of(fn, repeat=3):
    """Minimum wall time of ``repeat`` calls, and the last result."""
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
