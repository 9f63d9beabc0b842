"""The explorer widget, driven from Python: its numbers are fuse + evaluate's."""

import numpy as np
import pytest

from tests.conftest import needs_cranfield

pytest.importorskip("ipywidgets")


@needs_cranfield
def test_widget_numbers_equal_fuse_and_evaluate(cranfield, run_of):
    from rrfbench.core.evaluation import evaluate
    from rrfbench.core.stats import bootstrap_ci
    from rrfbench.workflows.explorer import Explorer

    runs = [run_of(cranfield, s) for s in ("bm25", "fts5", "dense")]
    ex = Explorer(cranfield, runs)
    qrels = cranfield.qrels("test")
    rng = np.random.default_rng(0)
    for i in range(20):
        method = ["rrf", "convex", "combsum", "combmnz"][i % 4]
        settings = {"method": method, "weights": list(np.round(rng.random(3), 2) + 0.05),
                    "metric": ["nDCG@10", "R@100", "RR@10"][i % 3]}
        if method == "rrf":
            settings["k"] = float(10 ** rng.uniform(0, 3))
            settings["depth"] = int(rng.choice([0, 10, 100, 500]))
        else:
            settings["norm"] = ["minmax", "zscore", "tmm"][i % 3]
            settings["missing"] = ["zero", "min"][i % 2]
        ex.set(**settings)
        v = ex.values()
        ref = evaluate(v["config"].fuse(runs), qrels, [v["metric"]])[v["metric"]]
        assert v["value"] == pytest.approx(ref, abs=1e-12), settings
        assert v["ci95"] == bootstrap_ci(v["per_query"])
    assert f"{v['value']:.4f}" in ex.out_summary.value  # what the cell shows
    ex.set(method="rrf", k=60, weights=[1, 1, 1], depth=0)
    assert ex.values()["delta_rrf60"] == pytest.approx(0.0, abs=1e-12)
    ex.set(query=qrels.qids[0])
    assert "contrib" in ex.out_explain.value
    from types import SimpleNamespace

    from rrfbench.fusion.config import Config

    best = SimpleNamespace(runs=tuple(r.name for r in runs),  # a saved result's interface
                           config_obj=lambda: Config("rrf", (20.0,) * 3, (0.5, 0.2, 0.3),
                                                     (None,) * 3))
    ex2 = Explorer(cranfield, runs, best=best)
    ex2.set(method="rrf", k=20, weights=[0.5, 0.2, 0.3], depth=0, metric="nDCG@10")
    assert ex2.values()["delta_tuned"] == pytest.approx(0.0, abs=1e-12)
    assert "tuned (best.json)" in ex2.out_summary.value
    bundle = ex._repr_mimebundle_()
    assert "rrfbench explorer" in bundle["text/html"] and "application/vnd.jupyter.widget-view+json" in bundle
