"""Choosing what to judge and deciding: MTC order, bounds that settle, the prior's role."""

import numpy as np
import pytest

from rrfbench.core.errors import InputError
from rrfbench.core.evaluation import evaluate_per_query
from rrfbench.core.runs import Qrels, Run
from rrfbench.judging.decide import (
    SE_FLOOR,
    Estimate,
    Prior,
    decide,
    estimate,
    order_pairs,
    pairs,
    posterior,
    stop,
)


def _run(rankings: dict, name: str) -> Run:
    return Run.from_dict({q: {d: float(len(ds) - i) for i, d in enumerate(ds)}
                          for q, ds in rankings.items()}, name)


CURRENT = _run({"q1": ["a", "b", "c", "d"], "q2": ["x", "y", "z"]}, "current")
CHANGE = _run({"q1": ["b", "a", "c", "e"], "q2": ["x", "y", "z"]}, "change")
QRELS = Qrels.from_dict({"q1": {"a": 0, "b": 2, "e": 1, "d": 1}, "q2": {"x": 1}})


def _dcg10(run, qrels):
    """DCG@10 with gain = grade, the decision metric, from its definition."""
    out = {}
    g = {(q, d): r for q, d, r in zip(qrels.df.qid, qrels.df.docid, qrels.df.relevance, strict=True)}
    for q, grp in run.df.groupby("qid"):
        out[q] = sum(g.get((q, d), 0) / np.log2(r + 1)
                     for d, r in zip(grp.docid, grp["rank"], strict=True) if r <= 10)
    return out


def test_mtc_asks_only_pairs_the_runs_rank_differently_largest_move_first():
    p = pairs(CURRENT, CHANGE, ["q1", "q2"])
    o = order_pairs(p, "mtc")
    assert list(zip(o.qid, o.docid, strict=True)) == [("q1", "d"), ("q1", "e"), ("q1", "a"), ("q1", "b")]
    assert (o.delta.abs().diff().dropna() <= 0).all()
    assert o.why.str.startswith("mtc: ").all()
    # the pool asks everything ranked, rank 1s first; random is a shuffle of the same pool
    pool = order_pairs(p, "pool")
    assert list(pool.qid[:3]) == ["q1", "q1", "q2"] and len(pool) == 8
    assert set(zip(order_pairs(p, "random").qid, order_pairs(p, "random").docid, strict=True)) == \
        set(zip(pool.qid, pool.docid, strict=True))
    with pytest.raises(InputError, match="not one of mtc, pool, random"):
        order_pairs(p, "best")


def test_with_every_pair_that_matters_judged_the_estimate_is_the_true_dcg_difference():
    p = pairs(CURRENT, CHANGE, ["q1", "q2"])
    grades = {(q, d): int(QRELS.df.set_index(["qid", "docid"]).relevance.get((q, d), 0))
              for q, d in zip(order_pairs(p, "mtc").qid, order_pairs(p, "mtc").docid, strict=True)}
    est = estimate(p, grades, max_grade=2)
    a, b = _dcg10(CURRENT, QRELS), _dcg10(CHANGE, QRELS)
    truth = np.mean([b.get(q, 0) - a.get(q, 0) for q in ("q1", "q2")])
    assert est.judged_only == pytest.approx(truth) == est.lower == est.upper
    assert est.settled and est.lower > 0          # b (grade 2) moved to rank 1
    # and nDCG@10 agrees in sign here (the decision metric needs no ideal ranking)
    nd = evaluate_per_query(CHANGE, QRELS, ["nDCG@10"]) - evaluate_per_query(CURRENT, QRELS, ["nDCG@10"])
    assert float(nd["nDCG@10"].mean()) > 0


def test_bounds_cover_every_way_the_unjudged_could_go():
    p = pairs(CURRENT, CHANGE, ["q1", "q2"])
    est = estimate(p, {("q1", "b"): 2}, max_grade=2)
    assert est.judged == 1 and est.lower < est.judged_only < est.upper and not est.settled
    assert 0 < est.judged_at_10["current"] < 1


def test_the_ndcg_estimate_is_the_dcg_difference_over_the_mean_judged_ideal():
    p = pairs(CURRENT, CHANGE, ["q1", "q2"])
    grades = {(q, d): int(QRELS.df.set_index(["qid", "docid"]).relevance.get((q, d), 0))
              for q, d in zip(p.table.qid, p.table.docid, strict=True)}
    est = estimate(p, grades, max_grade=2)
    a, b = _dcg10(CURRENT, QRELS), _dcg10(CHANGE, QRELS)
    ideal = {}
    for q in ("q1", "q2"):     # each query's ideal DCG@10 from its judged grades
        g = sorted((r for (qq, _), r in grades.items() if qq == q), reverse=True)[:10]
        ideal[q] = sum(x / np.log2(i + 2) for i, x in enumerate(g))
    scale = np.mean([v for v in ideal.values() if v > 0])
    want = np.mean([(b.get(q, 0) - a.get(q, 0)) / scale for q in ("q1", "q2")])
    assert est.ndcg == pytest.approx(want) and est.informative > 0
    # judged, but nothing relevant where the rankings differ: no evidence
    none = estimate(p, {k: 0 for k in grades}, max_grade=2)
    assert none.informative == 0 and none.ndcg == 0


def _est(ndcg, se, lower=-1.0, upper=1.0, judged=50, informative=5):
    return Estimate(judged, ndcg, lower, upper, se, {"current": 0.1, "change": 0.1}, ndcg, se,
                    informative)


PRIOR = Prior(0.03, 0.03, 8)


def test_the_posterior_weighs_prior_and_judgments_by_their_precision():
    m0, s0 = posterior(PRIOR, None)
    assert (m0, s0) == (0.03, pytest.approx(0.03 * np.sqrt(1 + 1 / 8)))
    m, sd = posterior(PRIOR, _est(-0.02, 0.01))
    w_p, w_j = 1 / s0 ** 2, 1 / 0.01 ** 2
    assert m == pytest.approx((0.03 * w_p - 0.02 * w_j) / (w_p + w_j)) and m < 0
    assert sd == pytest.approx((w_p + w_j) ** -0.5) and sd < min(s0, 0.01)
    # a standard error below the floor is raised to it (a few judgments are not that sure)
    assert posterior(PRIOR, _est(-0.02, 0.0)) == posterior(PRIOR, _est(-0.02, SE_FLOOR))


def test_the_decision_follows_the_rule_then_the_posterior_then_settled_bounds():
    assert decide(True, None, PRIOR) == (True, "the suite's advice alone (no judgments)")
    assert decide(False, _est(0.0, 0.01, judged=0), PRIOR)[0] is False
    take, why = decide(False, _est(0.0, 0.0, informative=0), PRIOR)   # nothing relevant judged
    assert take is False and "no evidence either way" in why
    take, why = decide(True, _est(-0.02, 0.01), PRIOR)
    assert take is False and why.startswith("keep the current constants: posterior gain -0.")
    assert decide(True, _est(-0.002, 0.03), PRIOR)[0] is True     # weak evidence: the prior wins
    assert decide(False, _est(0.02, 0.01), PRIOR)[0] is True
    assert decide(True, _est(0.05, 0.01, lower=-0.2, upper=-0.01), PRIOR)[0] is False  # settled


def test_judging_stops_when_the_posterior_is_sure_or_the_bounds_settle():
    assert not stop(PRIOR, None)                      # the prior alone never stops judging
    assert not stop(PRIOR, _est(0.005, 0.01))
    assert stop(PRIOR, _est(0.05, 0.005))
    assert stop(PRIOR, _est(0.0, 0.1, lower=0.001, upper=0.2))


def test_identical_candidates_leave_nothing_to_judge():
    p = pairs(CURRENT, CURRENT, ["q1", "q2"])
    assert order_pairs(p, "mtc").empty
    assert len(order_pairs(p, "pool")) == len(p.table)
