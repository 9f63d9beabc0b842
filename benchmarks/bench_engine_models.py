"""Engine modes' ranked lists over their grids: the current per-query path vs the path it
replaced (before 0ec8c5d), in the same process.

The baseline is the old code, put back by patching for the timed calls only: every list copied
into :class:`Hit` objects on each query, each document's fused score a call to ``combine`` (its
float32 additions one ``f32`` call each), each score rounded to float32 one call at a time, and
RRF's contribution of each position computed again for every query. Both paths must give the
same ranked lists, docids and score bits (checked; exit 1 otherwise).

cranfield's test split (225 queries; each mode's own streams: cached runs, retrieved when
missing), every engine mode, the first ``--settings`` settings of its grid (default 40). Last
line: ``speedup_vs_per_document_path: <float>`` (total time of the baseline over the current
path's).
"""

import argparse
import os
import sys
import time
from contextlib import ExitStack
from unittest import mock

os.environ["RRFBENCH_JOBS"] = "1"

from _common import ROOT  # noqa: E402,F401  (sets RRFBENCH_DATA, sys.path)

from rrfbench import load_dataset  # noqa: E402
from rrfbench.systems.engines import SPACES, base  # noqa: E402
from rrfbench.systems.presets.base import Hit  # noqa: E402
from rrfbench.workflows.dataset import preset_runs  # noqa: E402


def _per_value_f32(scores):
    return {d: base.f32(s) for d, s in scores.items()}


def _every_query(space, role, w, params, score, n):
    return [score(p, w, params) for p in range(n)]


def _per_document_fused(self, contribs, params):
    return {d: self.combine(c, params) for d, c in contribs.items()}


def _copying(fuse_query):
    def fuse(self, lists, params, limit, prior=None):
        lists = {role: [h if isinstance(h, Hit) else Hit(h, 0.0) for h in hits]
                 for role, hits in lists.items()}
        return fuse_query(self, lists, params, limit, prior)
    return fuse


def per_document_path() -> ExitStack:
    """The patches that put the old per-document path back (see the module docstring)."""
    stack = ExitStack()
    stack.enter_context(mock.patch.object(base, "position_scores", _every_query))
    stack.enter_context(mock.patch.object(base, "f32_values", _per_value_f32))
    stack.enter_context(mock.patch.object(base.EngineSpace, "fused", _per_document_fused))
    stack.enter_context(mock.patch.object(base.EngineSpace, "fuse_query",
                                          _copying(base.EngineSpace.fuse_query)))
    return stack


def lists_over(space, runs, grid):
    return [space.ranked_lists(runs, params) for params in grid]


def main(settings: int) -> int:
    ds = load_dataset("cranfield")
    t_new = t_old = 0.0
    differ = []
    for name, space in SPACES.items():
        runs = preset_runs(space, ds, "test")
        grid = space.grid()[:settings]
        lists_over(space, runs, grid)  # every depth's hit lists built once, as in a tuning
        t0 = time.perf_counter()
        new = lists_over(space, runs, grid)
        a = time.perf_counter() - t0
        with per_document_path():
            t0 = time.perf_counter()
            old = lists_over(space, runs, grid)
            b = time.perf_counter() - t0
        same = repr(new) == repr(old)
        if not same:
            differ.append(name)
        t_new, t_old = t_new + a, t_old + b
        print(f"{name:28s} {len(grid):3d} settings: per-document {b:6.2f} s, current {a:6.2f} s,"
              f" {b / a:5.2f}x, same lists and bits: {same}")
    print(f"all {len(SPACES)} modes: per-document {t_old:.1f} s, current {t_new:.1f} s")
    print(f"speedup_vs_per_document_path: {t_old / t_new:.2f}")
    if differ:
        print(f"error: the paths differ for {', '.join(differ)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--settings", type=int, default=40, help="grid settings per mode")
    sys.exit(main(ap.parse_args().settings))
