"""The one protocol rule, selection without leaks, and cross-validation with known answers."""

import numpy as np
import pytest
from sklearn.model_selection import KFold

from rrfbench.errors import InputError
from rrfbench.results import Protocol
from rrfbench.runs import Qrels, Run
from rrfbench.tuning import best_index, choose_protocol, cross_validate, run_protocol


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
    from rrfbench.engine import Config, FusionEngine
    from rrfbench.tuning import tune_fusion

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
