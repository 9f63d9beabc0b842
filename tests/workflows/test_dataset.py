"""End-to-end steps shared by the CLI and notebooks, on a small two-split collection."""

import json

import pytest

from rrfbench.results.dataset import PresetResult, SweepResult, load_result
from rrfbench.workflows.dataset import preset_table, sweep_dataset, sweep_grid, tune_preset_on
from tests.conftest import ROOT, needs_cranfield


def test_sweep_dataset_holdout_writes_everything(mini_beir, tmp_path):
    grid = sweep_grid(2, methods=("rrf", "convex"), k=(10, 60), weight_step=0.5,
                      norms=("minmax", "tmm"), missing=("zero",))
    res = sweep_dataset(str(mini_beir), ["bm25", "fts5"], grid=grid, out=tmp_path, progress=False)
    r = res.result
    assert isinstance(r, SweepResult) and r.protocol.kind == "holdout"
    assert (r.protocol.tune_split, r.protocol.eval_split) == ("train", "test")
    assert r.grid_size == len(grid) and r.tuned.n_queries == len(res.engines["test"].qids)
    for f in ("best.json", "per_query.csv", "report.md", "sweep.parquet", "sweep_eval.parquet",
              "heatmap_bm25_fts5.png", "k_curves.png", "win_loss.png", "methods.png"):
        assert (tmp_path / f).exists(), f
    assert load_result(tmp_path / "best.json") == r
    report = (tmp_path / "report.md").read_text()
    assert "tuned on split 'train', evaluated on split 'test'" in report
    # applying the saved configuration reproduces the saved value
    from rrfbench.core.evaluation import evaluate

    cfg = r.config_obj()
    runs = res.engines["test"].runs
    assert evaluate(cfg.fuse(runs), res.engines["test"].qrels, [r.metric])[r.metric] == \
        pytest.approx(r.tuned.value, abs=1e-12)


def test_sweep_dataset_cv_and_lone_eval_split(mini_beir, tmp_path):
    grid = sweep_grid(2, methods=("rrf",), k=(10, 60), weight_step=0.5)
    cv = sweep_dataset(str(mini_beir), ["bm25", "fts5"], grid=grid, folds=3, write=False,
                       progress=False).result
    assert cv.protocol.kind == "cv" and cv.protocol.eval_split == "test" and len(cv.chosen_per_fold) == 3
    lone = sweep_dataset(str(mini_beir), ["bm25", "fts5"], grid=grid, eval_split="test",
                         write=False, progress=False).result
    assert lone.protocol.kind == "holdout" and lone.protocol.tune_split == "train"
    assert "default" in lone.protocol.reason  # not silently replaced: the reason is recorded


def test_preset_tuning_uses_the_protocol_and_is_reused(mini_beir, results_root):
    r = tune_preset_on(str(mini_beir), "ai-memory", progress=False)
    assert isinstance(r, PresetResult) and r.protocol.kind == "holdout"
    assert r.tuned.n_queries == len(r.per_query["qids"])
    path = results_root / "mini" / "presets" / "ai-memory" / "best.json"
    mtime = path.stat().st_mtime_ns
    again = tune_preset_on(str(mini_beir), "ai-memory", progress=False)
    assert again == r and path.stat().st_mtime_ns == mtime  # cache key matched: not recomputed
    systems = preset_table(str(mini_beir), ["ai-memory"], progress=False)
    assert systems.results == (r,) and systems.table().preset.tolist() == ["ai-memory"]
    # the same runs recomputed (new timestamps and timings) keep the saved result valid
    from rrfbench.workflows.dataset import retrieve_result

    for spec in ("fts5", "dense"):
        retrieve_result(str(mini_beir), spec, "test", force=True)
    assert tune_preset_on(str(mini_beir), "ai-memory", progress=False) == r
    assert path.stat().st_mtime_ns == mtime
    text = (results_root / "mini" / "report.md").read_text()
    assert "ai-memory" in text and "Fidelity" in text
    assert json.loads(path.read_text())["fidelity"]


def test_fuse_config_reproduces_a_holdout_result_and_export_warns(mini_beir, tmp_path, capsys):
    from rrfbench.cli import main

    grid = sweep_grid(2, methods=("rrf", "convex"), k=(10, 60), weight_step=0.5,
                      norms=("minmax",), missing=("zero", "min"))
    r = sweep_dataset(str(mini_beir), ["bm25", "fts5"], grid=grid, out=tmp_path,
                      progress=False).result
    with pytest.raises(SystemExit) as ei:
        main(["fuse", str(mini_beir), "--config", str(tmp_path / "best.json"), "--json"])
    assert ei.value.code == 0
    got = json.loads(capsys.readouterr().out)["metrics"][r.metric]
    assert got == pytest.approx(r.tuned.value, abs=1e-12)
    with pytest.raises(SystemExit):
        main(["export", str(tmp_path / "best.json"), "--to", "toml"])
    cap = capsys.readouterr()
    warn = [ln for ln in cap.err.splitlines() if ln.startswith("warning:")]
    assert len(warn) == 1 and "validated on one collection only (mini)" in warn[0]
    assert "# validated on one collection only (mini)" in cap.out


def test_preset_reuse_keys_on_run_content_not_recipe(mini_beir, results_root):
    """A run recomputed with the same recipe (manifest) but different content invalidates a
    saved preset result: it is recomputed, and the log says which run changed."""
    from rrfbench.core.runs import Run
    from rrfbench.retrievers import make_retriever
    from rrfbench.retrievers.base import cached_run, read_manifest, run_path
    from rrfbench.workflows.dataset import as_dataset

    ds = as_dataset(str(mini_beir))
    logs = []
    first = tune_preset_on(ds, "ai-memory", progress=False, log=logs.append)
    path = results_root / "mini" / "presets" / "ai-memory" / "best.json"
    assert first.provenance["runs_read"] and first.provenance["cache_key"] == first.cache_key
    tune_preset_on(ds, "ai-memory", progress=False, log=logs.append)
    assert "reusing" in logs[-1] and "unchanged" in logs[-1]
    spec = first.streams["keyword"] if "keyword" in first.streams else next(iter(first.streams.values()))
    retriever = make_retriever(spec)
    before = read_manifest(run_path(ds.name, "test", retriever.name))
    real = retriever.retrieve

    def perturbed(dataset, queries, depth):  # same recipe, other scores (same ranking)
        run = real(dataset, queries, depth)
        return Run(run.df.assign(score=run.df.score * 0.5 + 1.0), run.name, meta=run.meta)

    retriever.retrieve = perturbed
    cached_run(retriever, ds, "test", force=True)
    after = read_manifest(run_path(ds.name, "test", retriever.name))
    keys = ("retriever", "params", "depth", "versions", "fingerprint", "split", "score_floor")
    assert {k: after[k] for k in keys} == {k: before[k] for k in keys}
    assert after["content_digest"] != before.get("content_digest")
    mtime = path.stat().st_mtime_ns
    again = tune_preset_on(ds, "ai-memory", progress=False, log=logs.append)
    assert "recomputing" in logs[-1] and "run content changed" in logs[-1], logs[-1]
    assert path.stat().st_mtime_ns != mtime
    assert again.provenance["runs_read"] != first.provenance["runs_read"]


def test_result_tables_are_dataframes_shown_alike(mini_beir, tmp_path):
    from rrfbench.outputs.report import md_table

    grid = sweep_grid(2, methods=("rrf",), k=(10, 60), weight_step=0.5)
    r = sweep_dataset(str(mini_beir), ["bm25", "fts5"], grid=grid, out=tmp_path,
                      progress=False).result
    df = r.summary()
    assert list(df.system)[0] == f"tuned: {r.label}" and len(df) == 3
    text = md_table(df)
    assert f"{r.tuned.value:.4f}" in text and f"{r.tuned.value:.4f}" in (tmp_path / "report.md").read_text()


@needs_cranfield
def test_explain_of_a_weight_policy_shows_its_predicted_weights(tmp_path):
    """A policy that regresses the weight vector (wridge; here the committed en result with a
    linear weight model put in): explain prints the raw prediction, and each shown candidate's
    utility is its L1 nearness advantage over the static default computed from that prediction;
    the chosen row is the one explain scores."""
    import dataclasses
    import re

    import numpy as np

    from rrfbench.results.dataset import save_result
    from rrfbench.workflows.commands import explain_view

    committed = load_result(ROOT / "results" / "adaptive" / "en"
                            / "best.json")
    base = committed.policy_obj()
    static = base.candidates[0]
    points = [[0.0, 0.4, 0.6], [0.2, 0.2, 0.6], [0.0, 0.2, 0.8], [0.2, 0.4, 0.4]]
    cands = [{**static, "weights": w, "label": f"{static['label']} w={w}"} for w in points]
    nf = len(base.features)
    coef = np.zeros((3, nf))
    coef[:, 0] = [0.05, -0.05, 0.02]                         # the weights move with feature 0
    model = {"type": "linear", "target": "weights", "mean": [0.0] * nf, "scale": [1.0] * nf,
             "coef": coef.tolist(), "intercept": [0.1, 0.3, 0.6], "points": points}
    pol = dataclasses.replace(base, kind="wridge", candidates=cands, model=model, tau=0.0)
    path = tmp_path / "best.json"
    save_result(dataclasses.replace(committed, policy=pol.to_json()), path)
    policy = load_result(path).policy_obj()
    assert policy.model["target"] == "weights"
    view = explain_view("cranfield", "1", str(path), top=3)   # a policy applies anywhere
    title = view[0][0]
    w = np.array([float(x) for x in re.search(r"predicted weights ([-\d., ]+) \(", title)
                  .group(1).split(", ")])
    utils = view[2][1]
    assert 2 <= len(utils) <= 7 and 0 in set(utils.candidate)
    P = np.array([policy.candidates[int(c)]["weights"] for c in utils.candidate])
    near = np.abs(w - P[0]).sum() - np.abs(w - P).sum(axis=1)
    np.testing.assert_allclose(utils.utility.to_numpy(), near, atol=2e-3)  # w printed to 3 places
    assert utils.chosen.eq("yes").sum() == 1 and "static default" in view[-1]


def test_a_saved_result_whose_runs_are_not_cached_yet_is_checked_not_recomputed(mini_beir,
                                                                                results_root):
    """A fresh clone holds the committed results but no runs: ``prepare`` retrieves the runs
    first, and when their content is what the result read, the result is reused. Without
    ``prepare`` the missing runs count as changed and the result is recomputed."""
    import shutil

    from rrfbench.systems.presets import get_preset
    from rrfbench.workflows.cache import reuse_or_compute
    from rrfbench.workflows.dataset import _preset_inputs, as_dataset, choose_protocol, preset_runs

    ds = as_dataset(str(mini_beir))
    p = get_preset("ai-memory")
    shutil.rmtree(results_root / "runs" / "mini", ignore_errors=True)  # runs as retrieved now
    first = tune_preset_on(ds, p, progress=False)
    path = results_root / "mini" / "presets" / "ai-memory" / "best.json"
    proto = choose_protocol(ds.splits, None, None, None)
    inputs = lambda: _preset_inputs(p, [(ds, proto)], first.metric)  # noqa: E731
    computed, prepared, logs = [], [], []

    def compute():
        computed.append(1)
        return first

    def prepare():
        prepared.append(1)
        for split in dict.fromkeys((proto.tune_split, proto.eval_split)):
            preset_runs(p, ds, split)

    shutil.rmtree(results_root / "runs" / "mini")
    assert None in inputs().runs.values()
    got, reused = reuse_or_compute("ai-memory", path, inputs, compute, write=False,
                                   log=logs.append, prepare=prepare)
    assert reused and got == first and not computed and prepared == [1]
    assert "reusing" in logs[-1] and None not in inputs().runs.values()
    shutil.rmtree(results_root / "runs" / "mini")
    got, reused = reuse_or_compute("ai-memory", path, inputs, compute, write=False,
                                   log=logs.append)
    assert not reused and computed == [1] and "recomputing" in logs[-1] and "None" in logs[-1]


def test_the_default_splits_asked_for_by_name_are_the_default_protocol():
    """`sweep scifact --tune-split train --eval-split test` is the default computation: its
    protocol (the reason text included, which is content) must be the default's, or it rewrites
    the committed best.json and reports (issue 55, found on the way)."""
    from types import SimpleNamespace

    from rrfbench.tuning.holdout import choose_protocol
    from rrfbench.workflows.dataset import dataset_protocol

    ds = SimpleNamespace(splits=["test", "train"])
    default = choose_protocol(ds.splits)
    for tune, ev in (("train", "test"), ("train", None), (None, "test"), (None, None)):
        assert dataset_protocol(ds, tune, ev) == default
    other = SimpleNamespace(splits=["dev", "test", "train"])
    assert dataset_protocol(other, "dev", "test").reason == "asked for both splits"
    assert dataset_protocol(ds, "test", "test").kind == "cv"
    assert dataset_protocol(ds, None, None, folds=3).folds == 3
