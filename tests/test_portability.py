"""The same answer on every x86-64 CPU: what a person reads must not follow float noise.

Another CPU's vector unit moves a dense encoding's last bits (~1e-7; see
``rrfbench.retrievers.dense``). These tests put that noise in on purpose, on this CPU: one float32
ulp in every dense score, or in every metric value of a real sweep table, and check that no
displayed figure, no displayed order and no committed choice moves. Each also shows its check can
fail: the same comparison without the display rule does see the noise.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rrfbench.core.runs import Run
from rrfbench.results.values import DISPLAY_DIGITS, ranked
from tests.conftest import needs_cranfield

ROOT = Path(__file__).resolve().parents[1]
SPECS = ("bm25", "fts5", "dense")


def one_ulp(values: np.ndarray, seed: int = 0) -> np.ndarray:
    """Each value moved by one float32 ulp, up or down at random (seeded): the size of the
    difference between two CPUs' fp32 kernels."""
    v = np.asarray(values, dtype=np.float32)
    up = np.random.default_rng(seed).random(len(v)) < 0.5
    return np.where(up, np.nextafter(v, np.float32(np.inf)),
                    np.nextafter(v, np.float32(-np.inf))).astype(np.float64)


@pytest.fixture(scope="module")
def cut_sweep(cut_data, tmp_path_factory):
    """A real sweep table (notebook 02's grid) on the cranfield cut: 8 queries, so many
    configurations tie exactly, as near-ties do on full collections."""
    import os

    from rrfbench.workflows.dataset import sweep_dataset, sweep_grid

    old = os.environ.get("RRFBENCH_DATA")
    os.environ["RRFBENCH_DATA"] = str(cut_data)
    try:
        grid = sweep_grid(3, methods=("rrf", "convex"), k=(1, 2, 5, 10, 20, 40, 60, 100, 200),
                          norms=("minmax", "zscore"), missing=("zero", "min"))
        out = sweep_dataset("cranfield", list(SPECS), grid=grid, write=False, progress=False)
    finally:
        os.environ["RRFBENCH_DATA"] = old
    return out.table


def _shown(table: pd.DataFrame, metric: str, digits: int = DISPLAY_DIGITS) -> str:
    return ranked(table, metric, digits=digits).head(10)[["label", metric]].round(digits) \
        .to_string(index=False)


def test_a_table_shows_the_same_rows_in_the_same_order_under_noise(cut_sweep):
    m = "nDCG@10"
    noisy = cut_sweep.assign(**{m: one_ulp(cut_sweep[m].to_numpy())})
    assert _shown(noisy, m) == _shown(cut_sweep, m)
    # rows in another order too (a resumed or parallel sweep writes them so): display ties
    # go by label, not by where a row happened to stand
    shuffled = noisy.sample(frac=1.0, random_state=0)
    assert _shown(shuffled, m) == _shown(cut_sweep, m)
    # the check can fail: by raw floats the order follows the noise, and at full precision
    # the printed values differ
    raw = [t.sort_values(m, ascending=False).head(10).label.tolist() for t in (cut_sweep, noisy)]
    assert raw[0] != raw[1]
    assert _shown(noisy, m, digits=17) != _shown(cut_sweep, m, digits=17)


def test_ranked_breaks_display_ties_by_label_then_position():
    t = pd.DataFrame({"label": ["b", "a", "c", "a"], "v": [0.42190004, 0.42189996, 0.5, 0.1]})
    assert ranked(t, "v").label.tolist() == ["c", "a", "b", "a"]
    assert ranked(t, "v", ascending=True).label.tolist() == ["a", "a", "b", "c"]
    s = pd.Series([0.30000004, 0.29999996, 0.1], index=["z", "y", "x"], name="m")
    assert ranked(s).index.tolist() == ["y", "z", "x"] and ranked(s).name == "m"


@needs_cranfield
def test_one_ulp_in_every_dense_score_moves_no_committed_figure(cranfield, run_of):
    """cranfield's committed sweep (results/cranfield/best.json: 1,285 configurations, 5-fold
    cross-validation) recomputed with every dense score one float32 ulp off: the same chosen
    configuration, and its score and the baselines' the same at the precision shown."""
    from rrfbench.core.metrics import DEFAULT_METRICS
    from rrfbench.fusion.sweep import FusionEngine
    from rrfbench.results.dataset import load_result
    from rrfbench.workflows.dataset import sweep_dataset

    committed = load_result(ROOT / "results" / "cranfield" / "best.json")
    runs = [run_of(cranfield, s) for s in SPECS]
    dense = runs[-1]
    noisy = Run(dense.df.assign(score=one_ulp(dense.df.score.to_numpy())), dense.name,
                meta=dense.meta)
    # the noise is real: it reorders documents at depth 1000
    moved = (noisy.df.sort_values(["qid", "rank"]).docid.to_numpy()
             != dense.df.sort_values(["qid", "rank"]).docid.to_numpy()).sum()
    assert moved > 0
    metric = committed.metric
    metrics = tuple([metric] + [m for m in DEFAULT_METRICS if m != metric])
    engine = FusionEngine([*runs[:-1], noisy], cranfield.qrels("test"), metrics)
    r = sweep_dataset(cranfield, list(SPECS), engines={"test": engine},
                      protocol=committed.protocol, write=False, progress=False).result
    assert r.label == committed.label
    assert round(r.tuned.value, DISPLAY_DIGITS) == round(committed.tuned.value, DISPLAY_DIGITS)
    for name, base in committed.baselines.items():
        assert r.baselines[name].name == base.name, name
        for field in ("value", "delta"):
            assert round(getattr(r.baselines[name], field), DISPLAY_DIGITS) == \
                round(getattr(base, field), DISPLAY_DIGITS), (name, field)


@needs_cranfield
def test_a_dense_run_encoded_on_this_cpu_is_the_one_the_committed_results_read(cranfield, run_of):
    """The check that sees issue 39 on whatever CPU runs the tests: cranfield's dense run, as
    this machine encodes it (or read from its embedding cache), has the content digest every
    committed result that read it records. On a CPU whose encoder computed other bits, each of
    those results would be recomputed by the command that made it (the same figures, but a
    rewritten file): this fails first, naming the digests."""
    import json

    from rrfbench.core.runs import content_digest

    recorded = {}
    for path in sorted((ROOT / "results").rglob("best.json")):
        runs_read = (json.loads(path.read_text()).get("provenance") or {}).get("runs_read") or {}
        if "cranfield/test/dense" in runs_read:
            recorded.setdefault(runs_read["cranfield/test/dense"], []).append(
                str(path.relative_to(ROOT)))
    assert len(recorded) == 1, ("committed results read different cranfield dense runs: "
                                + str({d: paths[:3] for d, paths in recorded.items()}))
    (committed,) = recorded
    here = content_digest(run_of(cranfield, "dense"))
    assert here == committed, (
        f"cranfield/test/dense encoded on this CPU: {here}; the committed results read "
        f"{committed} ({len(recorded[committed])} files, e.g. {recorded[committed][0]})")
