"""The public API: names never shadowed by submodules, whatever the import order."""

import importlib
import inspect
import pkgutil
import subprocess
import sys

import pytest

import rrfbench


def test_no_public_name_is_a_submodule():
    for m in pkgutil.walk_packages(rrfbench.__path__, "rrfbench."):
        importlib.import_module(m.name)
    submodules = {m.name.split(".")[1] for m in pkgutil.iter_modules(rrfbench.__path__, "rrfbench.")}
    for name in rrfbench.__all__:
        obj = getattr(rrfbench, name)
        assert not inspect.ismodule(obj), name
        assert name not in submodules, name
        if name != "__version__":
            assert callable(obj), name


def test_import_order_does_not_matter():
    code = ("import rrfbench, rrfbench.tuning.holdout, rrfbench.outputs.exporters, rrfbench.fusion.sweep, "
            "rrfbench.core.evaluation, rrfbench.fusion.functions, rrfbench.workflows.dataset; "
            "print(all(callable(getattr(rrfbench, n)) for n in rrfbench.__all__ if n != '__version__'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "True"


@pytest.mark.filterwarnings("ignore::rrfbench.core.errors.ValidationWarning")
def test_public_verbs_work(tiny_beir):
    ds = rrfbench.load_dataset(str(tiny_beir))
    bm25 = rrfbench.retrieve(ds, "bm25")
    fts = rrfbench.retrieve(ds, "fts5")
    fused = rrfbench.fuse([bm25, fts], k=60)
    assert rrfbench.evaluate(fused, ds.qrels("test"), ["RR@10"])["RR@10"] == 1.0
    assert rrfbench.coverage(fused, ds.qrels("test")).answered == 2
    sf = rrfbench.score_fusion([bm25, fts], "convex", "tmm")
    assert len(sf) == len(fused)
    res = rrfbench.sweep(ds, ["bm25", "fts5"], folds=2, write=False, progress=False,
                         grid=None)
    assert res.result.dataset == "tiny" and res.result.protocol.kind == "cv"
    assert "rrf" in rrfbench.export(res.result, "json") or "method" in rrfbench.export(res.result, "json")
