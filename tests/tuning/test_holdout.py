"""The one protocol rule, selection without leaks, and cross-validation with known answers."""

import numpy as np
import pytest
from sklearn.model_selection import KFold

from rrfbench.core.errors import InputError
from rrfbench.core.runs import Qrels, Run
from rrfbench.fusion.config import Config
from rrfbench.results.values import Protocol
from rrfbench.tuning.holdout import best_index, choose_protocol, cross_validate, run_protocol
from tests.conftest import needs_cranfield


@pytest.mark.parametrize("splits, kw, want", [
    (["test", "train"], {}, ("holdout", "train", "test")),
    (["dev", "test"], {}, ("holdout", "dev", "test")),
    (["dev", "trial"], {}, ("holdout", "dev", "trial")),
    (["test"], {}, ("cv", "test", "test")),
    (["test", "train"], {"eval_split": "test"}, ("holdout", "train", "test")),
    (["test", "train"], {"eval_split": "train"}, ("cv", "train", "train")),
    (["test", "train"], {"tune_split": "train"}, ("holdout", "train", "test")),
    (["test", "train"], {"tune_split": "test", "eval_split": "test"}, ("cv", "test", "test")),
    (["test", "train"], {"folds": 3}, ("cv", "test", "test")),
    (["test", "train"], {"folds": 3, "eval_split": "train"}, ("cv", "train", "train")),
    (["test"], {"tune_split": "test"}, ("cv", "test", "test")),
])
def test_protocol_rule(splits, kw, want):
    p = choose_protocol(splits, **kw)
    assert (p.kind, p.tune_split, p.eval_split) == want
    assert p.reason  # the choice is always explained
    if p.kind == "cv":
        assert p.folds == kw.get("folds", 5)


@pytest.mark.parametrize("kw, msg", [
    ({"folds": 3, "tune_split": "train", "eval_split": "test"}, "--folds cross-validates"),
    ({"eval_split": "dev"}, "--eval-split: no split 'dev'"),
    ({"folds": 1}, "--folds: 1 must be >= 2"),
])
def test_protocol_rule_refuses(kw, msg):
    with pytest.raises(InputError, match=msg):
        choose_protocol(["test", "train"], **kw)


def test_best_index_ties_take_the_earliest():
    assert best_index([0.1, 0.3, 0.3, 0.2]) == 1


def test_holdout_selects_on_the_tuning_queries_only():
    pq_tune = np.array([[0.9, 0.8], [0.1, 0.2], [0.5, 0.5]])   # config 0 best on tune
    pq_eval = np.array([[0.2, 0.2], [1.0, 1.0], [0.6, 0.6]])   # config 1 best on eval
    sel = run_protocol(Protocol("holdout", "train", "test"), pq_tune, pq_eval)
    assert sel.index == 0 and sel.tune_value == pytest.approx(0.85)
    assert sel.eval_values.tolist() == [0.2, 0.2]
    sel2 = run_protocol(Protocol("holdout", "train", "test"), pq_tune, lambda i: pq_eval[i])
    assert sel2.index == 0 and sel2.eval_values.tolist() == [0.2, 0.2]


def test_cv_with_a_dominant_configuration_is_that_configuration():
    rng = np.random.default_rng(0)
    base = rng.random(20)
    pq = np.stack([base, base + 0.5, base - 0.1])  # config 1 better on every query
    cv, chosen = cross_validate(pq, 5, 0)
    assert chosen == [1] * 5 and np.allclose(cv, pq[1])


def test_cv_choice_never_sees_its_own_fold():
    """Poison one fold's queries for a losing configuration: that fold's choice is unchanged."""
    rng = np.random.default_rng(1)
    pq = rng.random((4, 30))
    _, chosen = cross_validate(pq, 5, 0)
    folds = list(KFold(5, shuffle=True, random_state=0).split(np.arange(30)))
    for f, (_, test_idx) in enumerate(folds):
        poisoned = pq.copy()
        loser = (chosen[f] + 1) % 4
        poisoned[loser, test_idx] = 100.0
        _, chosen2 = cross_validate(poisoned, 5, 0)
        assert chosen2[f] == chosen[f]


def test_cv_needs_enough_queries():
    with pytest.raises(InputError, match="5 folds need at least 5 judged queries"):
        cross_validate(np.zeros((2, 3)), 5, 0)


def _synthetic():
    """Two runs; on the tuning queries run A alone is best, on the eval queries run B is."""
    a_t = {f"t{i}": {"r": 2.0, "x": 1.0} for i in range(6)}
    b_t = {f"t{i}": {"x": 2.0, "r": 1.0} for i in range(6)}
    a_e = {f"e{i}": {"x": 2.0, "r": 1.0} for i in range(6)}
    b_e = {f"e{i}": {"r": 2.0, "x": 1.0} for i in range(6)}
    qt = Qrels.from_dict({f"t{i}": {"r": 1} for i in range(6)})
    qe = Qrels.from_dict({f"e{i}": {"r": 1} for i in range(6)})
    return (Run.from_dict(a_t, "A"), Run.from_dict(b_t, "B"), qt,
            Run.from_dict(a_e, "A"), Run.from_dict(b_e, "B"), qe)


def test_tune_fusion_holdout_on_synthetic_engines(tmp_path):
    from rrfbench.fusion.config import Config
    from rrfbench.fusion.sweep import FusionEngine
    from rrfbench.tuning.holdout import tune_fusion

    a_t, b_t, qt, a_e, b_e, qe = _synthetic()
    te = FusionEngine([a_t, b_t], qt, ["RR@10"])
    ee = FusionEngine([a_e, b_e], qe, ["RR@10"])
    grid = [Config("rrf", (60.0, 60.0), (1.0, 0.0), (None, None)),
            Config("rrf", (60.0, 60.0), (0.0, 1.0), (None, None))]

    class DS:
        name, fingerprint = "synthetic", "0"

    res, tt, et = tune_fusion(DS, Protocol("holdout", "t", "e"), te, ee, grid, "RR@10")
    assert res.config["weights"] == [1.0, 0.0]  # chosen on the tuning queries (A)
    assert res.tune_value == 1.0 and res.tuned.value == 0.5  # A puts r second on eval
    assert res.baselines["best_single"].name == "A"  # best single chosen on tuning queries too
    assert res.optimism["best_on_eval"] == 1.0 and res.optimism["gap"] == 0.5
    assert res.optimism["rank_on_eval_grid"] == 2


# --------------------------------------------------------------------------- found by mutmut
# Each test below kills mutants of tuning.py that survived `mutmut run "rrfbench.tuning.holdout*"`.
@pytest.mark.parametrize("splits, kw, want", [
    (["test", "train"], {}, Protocol("holdout", "train", "test", 0, 0,
                                     "the dataset's default splits")),
    (["test"], {}, Protocol("cv", "test", "test", 5, 0, "one split only: cross-validation")),
    (["test", "train"], {"tune_split": "train", "eval_split": "test"},
     Protocol("holdout", "train", "test", 0, 0, "asked for both splits")),
    (["test", "train"], {"tune_split": "test", "eval_split": "test"},
     Protocol("cv", "test", "test", 5, 0,
              "tuning and evaluation split are the same: cross-validation")),
    (["test", "train"], {"folds": 3, "seed": 7}, Protocol("cv", "test", "test", 3, 7,
                                                          "asked for --folds")),
    (["test", "train"], {"tune_split": "train", "seed": 3},
     Protocol("holdout", "train", "test", 0, 3, "evaluation split 'test' is the dataset's default")),
    (["test", "train"], {"eval_split": "test", "seed": 3},
     Protocol("holdout", "train", "test", 0, 3, "tuning split 'train' is the dataset's default")),
    (["test"], {"tune_split": "test", "seed": 2},
     Protocol("cv", "test", "test", 5, 2, "no split other than 'test' to evaluate on: "
                                          "cross-validation")),
    (["test", "train"], {"eval_split": "train", "seed": 2},
     Protocol("cv", "train", "train", 5, 2, "no split other than 'train' to tune on: "
                                            "cross-validation")),
    (["other"], {}, Protocol("cv", "other", "other", 5, 0, "one split only: cross-validation")),
    (["dev", "test"], {}, Protocol("holdout", "dev", "test", 0, 0,
                                   "the dataset's default splits")),
])
def test_protocol_rule_whole_protocol(splits, kw, want):
    """Every field, the printed reason included (it is what the user reads), and the seed."""
    assert choose_protocol(splits, **kw) == want


def test_protocol_rule_messages_and_the_two_folds_minimum():
    with pytest.raises(InputError) as e:
        choose_protocol(["test", "train"], tune_split="dev")
    assert str(e.value) == "--tune-split: no split 'dev'; available: test, train"
    with pytest.raises(InputError) as e:
        choose_protocol([])
    assert str(e.value) == "the dataset has no qrels splits"
    with pytest.raises(InputError) as e:
        choose_protocol(["test", "train"], folds=3, tune_split="train", eval_split="test")
    assert str(e.value) == ("--folds cross-validates on one split, but --tune-split 'train' and "
                            "--eval-split 'test' differ: drop --folds for a holdout, or give one "
                            "split")
    assert choose_protocol(["test"], folds=2).folds == 2  # two folds is the minimum, allowed
    assert choose_protocol(["test"], folds=0) == choose_protocol(["test"])
    # "dev" is a tuning and an evaluation split: alone it is cross-validated, not dev -> dev
    assert choose_protocol(["dev"]) == Protocol("cv", "dev", "dev", 5, 0,
                                                "one split only: cross-validation")
    with pytest.raises(InputError) as e:
        choose_protocol([], tune_split="x")
    assert str(e.value) == "--tune-split: no split 'x'; available: (none)"


def test_cross_validate_uses_the_given_folds_and_allows_one_query_per_fold():
    rng = np.random.default_rng(3)
    pq = rng.random((3, 12))
    cv, chosen = cross_validate(pq, 3, 0)
    assert len(chosen) == 3
    want = np.zeros(12)
    for tr, te in KFold(3, shuffle=True, random_state=0).split(np.arange(12)):
        want[te] = pq[int(np.argmax(pq[:, tr].mean(axis=1))), te]
    assert np.array_equal(cv, want)
    cv5, chosen5 = cross_validate(rng.random((2, 5)), 5, 0)  # as many queries as folds
    assert len(chosen5) == 5 and cv5.shape == (5,)


def test_run_protocol_cv_is_cross_validation_of_the_tuning_matrix():
    rng = np.random.default_rng(4)
    pq = rng.random((4, 20))
    pq[2] += 0.1  # best on all queries, but not first, and not in every fold
    sel = run_protocol(Protocol("cv", "test", "test", 4, 9), pq)
    cv, chosen = cross_validate(pq, 4, 9)
    assert sel.index == 2 and sel.tune_value == pytest.approx(pq[2].mean())
    assert np.array_equal(sel.eval_values, cv)
    other = [cross_validate(pq, 4, s)[1] for s in range(30)]
    assert any(o != chosen for o in other)  # so the seed matters for this matrix
    assert sel.chosen_per_fold == tuple(chosen) and all(type(c) is int for c in sel.chosen_per_fold)
    assert run_protocol(Protocol("cv", "test", "test", 4, 1), pq).chosen_per_fold != () \
        and len(run_protocol(Protocol("cv", "test", "test", 5, 9), pq).chosen_per_fold) == 5


def test_run_protocol_holdout_needs_eval_values_and_selects_by_row_mean():
    pq_tune = np.array([[0.0, 1.0, 0.0], [0.4, 0.4, 0.4]])  # config 1 best by row mean
    sel = run_protocol(Protocol("holdout", "train", "test"), pq_tune, [[1, 1], [0, 1]])
    assert sel.index == 1 and sel.eval_values.dtype == np.float64
    assert sel.eval_values.tolist() == [0.0, 1.0]
    with pytest.raises(ValueError) as e:
        run_protocol(Protocol("holdout", "train", "test"), pq_tune)
    assert str(e.value) == "a holdout needs the evaluation values"


def test_estimate_and_comparison_fields():
    from rrfbench.core.stats import bootstrap_ci, paired_t, permutation_test
    from rrfbench.tuning.holdout import comparison, estimate

    tuned, other = [0.5, 0.75, 1, 0.25, 1, 0.5], [0.25, 0.5, 1, 0, 0.5, 0.5]
    est = estimate(tuned)
    assert est.value == pytest.approx(np.mean(tuned)) and est.n_queries == 6
    assert type(est.n_queries) is int and est.ci95 == bootstrap_ci(np.asarray(tuned, float))
    assert estimate([]).value == 0.0 and estimate([]).n_queries == 0
    c = comparison("base", tuned, other)
    assert c.name == "base" and c.value == pytest.approx(np.mean(other))
    assert c.delta == pytest.approx(np.mean(tuned) - np.mean(other))
    assert c.ci95 == bootstrap_ci(np.asarray(other, float))
    assert c.p_value == permutation_test(np.asarray(tuned, float), np.asarray(other, float))
    assert c.p_value_t == paired_t(np.asarray(tuned, float), np.asarray(other, float))
    assert type(c.value) is float and type(c.delta) is float


def test_reference_configurations_exactly():
    from rrfbench.tuning.holdout import rrf60_config, single_run_configs

    assert rrf60_config(2) == Config("rrf", (60.0, 60.0), (1.0, 1.0), (None, None), 1)
    assert single_run_configs(2) == [Config("rrf", (60.0, 60.0), (1.0, 0.0), (None, None), 1),
                                     Config("rrf", (60.0, 60.0), (0.0, 1.0), (None, None), 1)]


@pytest.mark.parametrize("kind", ["holdout", "cv"])
def test_tune_fusion_builds_the_whole_result(tmp_path, kind):
    """Every field of the SweepResult on synthetic engines whose answers are known."""
    from rrfbench.fusion.sweep import FusionEngine
    from rrfbench.tuning.holdout import tune_fusion

    a_t, b_t, qt, a_e, b_e, qe = _synthetic()
    te = FusionEngine([a_t, b_t], qt, ["RR@10", "nDCG@10"])
    ee = FusionEngine([a_e, b_e], qe, ["RR@10", "nDCG@10"]) if kind == "holdout" else te
    grid = [Config("rrf", (60.0, 60.0), (1.0, 0.0), (None, None)),
            Config("rrf", (60.0, 60.0), (0.0, 1.0), (None, None)),
            Config("convex", (60.0, 60.0), (0.5, 0.5), (None, None), 1, "minmax", "zero")]

    class DS:
        name, fingerprint = "synthetic", "f00d"

    proto = Protocol("holdout", "t", "e") if kind == "holdout" else Protocol("cv", "t", "t", 3, 0)
    res, tt, et = tune_fusion(DS, proto, te, ee, grid, "nDCG@10", out=tmp_path,
                              assumptions=("given",), specs=("a", "b"))
    assert (tmp_path / "sweep.parquet").exists()
    assert (tmp_path / "sweep_eval.parquet").exists() == (kind == "holdout")
    assert (res.dataset, res.fingerprint, res.runs, res.metric, res.protocol) == \
        ("synthetic", "f00d", ("A", "B"), "nDCG@10", proto)
    assert res.config["label"] == "rrf k=60 w=1,0" and res.config["weights"] == [1.0, 0.0]
    assert set(res.baselines) == {"best_single", "rrf60_equal"}
    assert res.baselines["best_single"].name == "A"
    assert res.baselines["rrf60_equal"].name == "RRF k=60, equal weights"
    assert res.singles == {"A": pytest.approx(ee.evaluate(grid[:1])[0, 1].mean()),
                           "B": pytest.approx(ee.evaluate(grid[1:2])[0, 1].mean())}
    assert res.grid_size == 3 and res.specs == ("a", "b")
    assert set(res.family_best) == {"rrf", "convex minmax /zero"}
    assert set(res.family_best["rrf"]) == {"label", "tune", "eval"}
    assert res.family_best["rrf"]["label"] == "rrf k=60 w=1,0"
    assert set(res.per_query) == {"qids", "tuned", "best_single", "rrf60_equal"}
    assert res.per_query["qids"] == list(ee.qids)
    assert set(res.optimism) == {"rank_on_eval_grid", "grid_size", "best_on_eval",
                                 "best_on_eval_label", "gap"}
    assert res.optimism["grid_size"] == 3
    assert res.optimism["best_on_eval_label"] in {c.label(["A", "B"]) for c in grid}
    assert res.provenance["dataset"] == "synthetic"
    if kind == "cv":
        assert res.assumptions[0] == "given" and res.assumptions[1].startswith(
            "cross-validation: the best single run is chosen on all queries of the split")
        assert len(res.chosen_per_fold) == 3
        assert set(res.chosen_per_fold) <= {c.label(["A", "B"]) for c in grid}
    else:
        assert res.assumptions == ("given",) and res.chosen_per_fold == ()
        assert res.optimism["rank_on_eval_grid"] >= 2  # A is not the best on eval
    with pytest.raises(InputError) as e:
        tune_fusion(DS, proto, te, FusionEngine([b_e, a_e], qe, ["nDCG@10"]), grid, "nDCG@10")
    assert str(e.value) == "tune and eval engines must fuse the same runs in the same order"


@needs_cranfield
def test_preset_matrix_is_the_same_in_one_process_and_in_two(cranfield, monkeypatch):
    """The query blocks of tuning.preset_matrix in other processes join into exactly the
    one-process matrix (qid order, every setting, every metric)."""
    from rrfbench.systems.presets import get_preset
    from rrfbench.tuning.holdout import PARALLEL_MIN, preset_matrix
    from rrfbench.workflows.dataset import preset_runs

    p = get_preset("titan")
    q = cranfield.qrels("test")
    q = q.subset(q.qids[:90])                       # 90 queries: 8 blocks, uneven sizes
    runs = {role: run.subset(q.qids) for role, run in preset_runs(p, cranfield, "test").items()}
    grid = p.grid()[:PARALLEL_MIN + 2]
    monkeypatch.setenv("RRFBENCH_JOBS", "1")
    one = preset_matrix(p, runs, q, grid, ["nDCG@10", "R@100"])
    monkeypatch.setenv("RRFBENCH_JOBS", "2")
    two = preset_matrix(p, runs, q, grid, ["nDCG@10", "R@100"])
    assert one.shape == (len(grid), 2, len(q.qids)) and np.array_equal(one, two)
    assert len({one[i, 0].mean() for i in range(len(grid))}) > 3   # the settings differ
