"""Query-adaptive fusion: policies learn what they should, hedge when they cannot, never see an
evaluation split, and a saved policy applies to any collection as it was validated."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from rrfbench.adaptive.validation import adaptive_result
from rrfbench.results.dataset import load_result, save_result
from rrfbench.results.suite import AdaptiveResult
from rrfbench.tuning.decisions import DEFAULT_DECISION
from rrfbench.tuning.holdout import Protocol
from rrfbench.tuning.suite_data import CollectionData
from tests.conftest import needs_cranfield

HOLD = Protocol("holdout", "train", "test")


def _suite(seed=0, n=60, n_coll=4, signal=True):
    """Synthetic collections over a 3-point grid whose per-query winner follows feature 0."""
    rng = np.random.default_rng(seed)
    colls, XT, XE = [], {}, {}
    for c in range(n_coll):
        name = f"c{c}"
        mats = {}
        for role in ("T", "E"):
            X = rng.normal(size=(n, 3))
            base = rng.uniform(0.3, 0.7, size=n)
            g = np.where(X[:, 0] > 0, 0.15, -0.15) if signal else rng.normal(0, 0.15, n)
            M = np.stack([base, np.clip(base + g, 0, 1), base - 0.05])
            mats[role] = (X, M)
        XT[name], XE[name] = mats["T"][0], mats["E"][0]
        T, E = mats["T"][1], mats["E"][1]
        colls.append(CollectionData(name, HOLD, T, E, T[2], E[2],
                                    [str(i) for i in range(n)], [str(i) for i in range(n)]))
    configs = [{"method": "rrf", "k": [k], "weights": [1.0], "depth": [None], "rank_base": 1,
                "norm": None, "missing": None, "limit": None, "label": f"rrf k={k}"}
               for k in (10, 60, 100)]
    return colls, XT, XE, configs


def _adapt(colls, XT, XE, configs, **kw):
    kw = {"kinds": ("ridge", "gbm"), **kw}
    return adaptive_result("t", colls, XT, XE, configs=configs, labels=[c["label"] for c in configs],
                           runs=["a"], rule="best", k=2, features=["f0", "f1", "f2"], **kw)


def test_adaptive_loco_finds_a_real_rule_and_reports_headroom():
    colls, XT, XE, configs = _suite()
    r = _adapt(colls, XT, XE, configs)
    s = r.summary
    assert s["gain"] > 0.05 and r.verdict != "no evidence that it transfers"
    assert s["macro"]["oracle_grid"] >= s["macro"]["oracle_candidates"] >= s["macro"]["adaptive"]
    assert 0.5 < s["captured"] <= 1.0 + 1e-9
    assert all(row["switched"] > 0.2 for row in r.loco)
    assert r.recommended["policy"] is True and r.policy_for("recommended") is not None
    # a clear gain is stable: the verdict holds on resampled and perturbed comparisons
    st = r.stability
    assert st["verdict_before"] == r.verdict and st["stability"] >= 0.8, st["share_supporting"]
    assert "held fixed" in r.stability_line() and "Holm" in r.tests["multiplicity"]


def test_a_verdict_that_flips_on_noise_is_unstable():
    """verdict_stability on a comparison at the edge of significance: resampling its queries
    flips the verdict often, so it is reported 'unstable' and the default stays."""
    from rrfbench.tuning.stability import verdict_stability
    from rrfbench.tuning.verdicts import VERDICTS, _stable_verdict

    rng = np.random.default_rng(7)
    edge = [rng.normal(0.0, 0.1, 80) for _ in range(4)]
    edge = [d - d.mean() + 0.012 for d in edge]     # macro z about 2 over queries
    st = verdict_stability(edge, 1, n_resamples=100)
    assert 0.2 < st["share_supporting"][VERDICTS[1]] < 0.8
    verdict, why = _stable_verdict(1, "gain", st)
    assert verdict == VERDICTS[3] and "unstable" in why and st["verdict_before"] == VERDICTS[1]
    clear = [d + 0.2 for d in edge]
    assert verdict_stability(clear, 0, n_resamples=100)["stability"] == 1.0
    # noise only where the choice differs from the comparator: unmoved queries stay 0
    zero = [np.zeros(50)] * 3
    st = verdict_stability(zero, 2, moved=[np.zeros(50, bool)] * 3, n_resamples=50)
    assert st["schemes"]["noise"]["share_same_verdict"] == 1.0


def test_no_signal_means_no_evidence_and_the_static_default_stays():
    colls, XT, XE, configs = _suite(signal=False)
    r = _adapt(colls, XT, XE, configs, decision="significance")
    assert r.verdict == "no evidence that it transfers"
    assert r.recommended["policy"] is False and r.policy_for("recommended") is None
    assert r.config_for("recommended") == r.recommended["config"]
    assert abs(r.summary["gain"]) < 0.01
    # the rule rrfbench uses (noninferiority) declines a change whose gain is not clear of
    # the margin, here a policy without signal; `always` would take it. Both are graded.
    a = _adapt(colls, XT, XE, configs)
    assert a.decision["rule"] == DEFAULT_DECISION == "noninferiority"
    assert a.recommended["policy"] is False and a.decision["take_change"] is False
    assert a.decision["rules_answer"]["always"] is True
    assert a.decision["change_gain"]["ci95"][0] < -0.005
    taken = _adapt(colls, XT, XE, configs, decision="always")
    assert taken.recommended["policy"] is True and taken.decision["rule"] == "always"
    assert a.decision["track_record"]["of"] == len(colls)
    assert set(a.decision["grading"]["rules"]) == set(a.decision["rules_answer"])


def test_evaluation_splits_never_reach_training():
    colls, XT, XE, configs = _suite(seed=4)
    clean = _adapt(colls, XT, XE, configs)
    rng = np.random.default_rng(9)
    poisoned = [CollectionData(c.name, c.protocol, c.T, rng.random(c.E.shape), c.default_T,
                               rng.random(c.E.shape[1]), c.eval_qids, c.tune_qids) for c in colls]
    dirty = _adapt(poisoned, XT, XE, configs)
    assert clean.policy == dirty.policy                      # the saved policy: training only
    for a, b in zip(clean.loco, dirty.loco, strict=True):
        assert (a["candidates"], a["policy"], a["tau"]) == (b["candidates"], b["policy"], b["tau"])
        assert a["adaptive"]["value"] != b["adaptive"]["value"]
    # the held-out collection's tuning split does not reach its own fold either
    held = [CollectionData(c.name, c.protocol, rng.random(c.T.shape) if i == 0 else c.T, c.E,
                           c.default_T, c.default_E, c.eval_qids, c.tune_qids)
            for i, c in enumerate(colls)]
    moved = _adapt(held, XT, XE, configs)
    assert moved.loco[0]["tau"] == clean.loco[0]["tau"]
    assert moved.loco[0]["adaptive"] == clean.loco[0]["adaptive"]
    assert moved.policy != clean.policy                      # ... but it does train the others


def test_adaptive_result_round_trips_through_best_json(tmp_path):
    colls, XT, XE, configs = _suite()
    r = _adapt(colls, XT, XE, configs)
    save_result(r, tmp_path / "best.json")
    again = load_result(tmp_path / "best.json")
    assert isinstance(again, AdaptiveResult) and again.to_json() == r.to_json()
    assert again.policy_obj().choose(XE["c0"]).tolist() == r.policy_obj().choose(XE["c0"]).tolist()


@pytest.mark.parametrize("args, needle", [
    (["adapt", "--policy", "bogus"], "--policy"),
    (["adapt", "--candidates", "1"], "--candidates"),
    (["adapt", "--features", "everything"], "--features"),
    (["adapt", "-r", "nope"], "nope"),
])
def test_adapt_refuses_a_wrong_argument_in_one_line(args, needle):
    script = Path(sys.executable).parent / "rrfbench"        # the console script, as typed
    p = subprocess.run([str(script), *args], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2, p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and needle in lines[0], p.stderr


@needs_cranfield
def test_real_suite_policy_ignores_poisoned_qrels_and_applies_as_validated(tmp_path, monkeypatch,
                                                                           capsys):
    """cranfield + time + adi (bm25 + fts5, a small grid): poisoning adi's qrels changes adi's
    scores only; the saved policy, applied with ``fuse --config``, scores each collection as
    the policy's choices on the sweep matrices say (in-sample, to 1e-12)."""
    from rrfbench.adaptive.validation import adaptive_suite
    from rrfbench.cli import main
    from rrfbench.outputs.report import write_adaptive_outputs
    from rrfbench.workflows import dataset as workflows
    from rrfbench.workflows import suite as w
    from tests.tuning.test_transfer import clean_and_poisoned

    names = ["cranfield", "time", "adi"]
    grid = workflows.sweep_grid(2, methods=("rrf", "convex"), k=(1, 10, 60), weight_step=0.25,
                        norms=("minmax", "tmm"), missing=("zero",))
    got = {}
    for tag in clean_and_poisoned(tmp_path, monkeypatch, names):
        members = w.suite_members("t")
        r = adaptive_suite("t", members, lambda ds, s: workflows.load_runs(ds, ["bm25", "fts5"], s),
                           grid, "nDCG@10", ["nDCG@10"], specs=["bm25", "fts5"], k=3,
                           kinds=("select", "gbm"), progress=False)
        got[tag] = r
    a, b = ({row["collection"]: row for row in got[t].loco} for t in ("clean", "poisoned"))
    assert (a["adi"]["candidates"], a["adi"]["policy"], a["adi"]["tau"]) == (
        b["adi"]["candidates"], b["adi"]["policy"], b["adi"]["tau"])
    assert a["adi"]["static"]["value"] != b["adi"]["static"]["value"]
    # applied with the CLI, the saved policy scores as its choices on the matrices do
    r = got["poisoned"]
    out = tmp_path / "adaptive"
    write_adaptive_outputs(r, out)
    for f in ("best.json", "report.md", "headroom.png"):
        assert (out / f).exists(), f
    assert "Verdict" in (out / "report.md").read_text()
    pol = r.policy_obj()
    members = {ds.name: (ds, p) for ds, p in w.suite_members("t")}
    for name in ("time", "adi"):
        ds, _ = members[name]
        runs = workflows.load_runs(ds, ["bm25", "fts5"], "test")
        from rrfbench.adaptive.validation import apply_policy
        from rrfbench.core.evaluation import evaluate

        queries = dict(zip(ds.queries.qid.astype(str), ds.queries.text, strict=True))
        fused, chosen = apply_policy(pol, runs, queries, list(ds.qrels("test").qids))
        expect = evaluate(fused, ds.qrels("test"), ["nDCG@10"])["nDCG@10"]
        with pytest.raises(SystemExit):
            main(["fuse", name, "--config", str(out / "best.json"), "--json"])
        shown = json.loads(capsys.readouterr().out)
        assert shown["metrics"]["nDCG@10"] == pytest.approx(expect, abs=1e-12)
        assert sum(shown["queries_per_candidate"].values()) == len(ds.qrels("test").qids)
        # every query's fused list is its chosen candidate's list
        from rrfbench.fusion.config import Config

        for j in np.unique(chosen.candidate):
            ref = Config.from_json(pol.candidates[int(j)]).fuse(runs).df
            qs = set(chosen.index[chosen.candidate == j])
            mine = fused.df[fused.df.qid.isin(qs)].reset_index(drop=True)
            theirs = ref[ref.qid.isin(qs)].reset_index(drop=True)
            assert mine[["qid", "docid", "rank"]].equals(theirs[["qid", "docid", "rank"]])


def test_the_result_does_not_depend_on_how_many_processes_fit_the_folds(monkeypatch):
    """The folds' fits run on all cores (rrfbench.core.parallel.process_map), each with one BLAS
    thread: one process and two give the same result, bit for bit."""
    colls, XT, XE, configs = _suite(seed=3)
    monkeypatch.setenv("RRFBENCH_JOBS", "1")
    one = _adapt(colls, XT, XE, configs, kinds=("ridge", "gbm", "wridge"))
    monkeypatch.setenv("RRFBENCH_JOBS", "2")
    two = _adapt(colls, XT, XE, configs, kinds=("ridge", "gbm", "wridge"))
    a, b = one.to_json(), two.to_json()
    for d in (a, b):
        d["provenance"].pop("nested_grading_s")   # a time, not a result
    assert a == b
