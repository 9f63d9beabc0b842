"""Priority sampling: a fixed order, an exactly unbiased estimate and an honest variance."""

import numpy as np
import pandas as pd
import pytest

from rrfbench.core.runs import Run
from rrfbench.judging.contest import Contest, _bonferroni
from rrfbench.judging.decide import Prior, pairs
from rrfbench.judging.sampling import ht_estimate, judged_prefix, priority_order, uniforms


def _population(n=40, seed=3):
    rng = np.random.default_rng(seed)
    t = pd.DataFrame({"qid": [f"q{i % 7}" for i in range(n)], "docid": [f"d{i}" for i in range(n)],
                      "w": rng.uniform(0.05, 1.0, n)})
    delta = t.w.to_numpy() * rng.choice([-1.0, 1.0], n)
    grades = {(q, d): int(g) for q, d, g in zip(t.qid, t.docid, rng.integers(0, 3, n), strict=True)}
    return t.assign(delta=delta), grades


def test_uniforms_are_permanent_per_pair_and_in_the_unit_interval():
    u = uniforms(["q1", "q2", "q1"], ["a", "b", "a"], 0)
    assert u[0] == u[2] and u[0] != u[1] and ((u > 0) & (u <= 1)).all()
    assert uniforms(["q1"], ["a"], 0)[0] == u[0]                 # whatever else is in the table
    assert uniforms(["q1"], ["a"], 1)[0] != u[0]                 # the seed changes it
    # a known value: BLAKE2b is the same on every machine
    assert uniforms(["q1"], ["a"], 0)[0] == 0.4547442942678591   # 53 bits, exact in float64


def test_every_prefix_of_the_order_is_a_sample_and_the_whole_order_is_exact():
    t, grades = _population()
    o = priority_order(t, "w", 0)
    assert (np.diff(o.priority.to_numpy()) <= 0).all() and len(o) == len(t)
    truth = sum(grades[(q, d)] * dl for q, d, dl in zip(t.qid, t.docid, t.delta, strict=True)) / 7
    e = ht_estimate(o, o.delta.to_numpy(), grades, 7, 2)
    assert e.exact and e.tau == 0 and e.se == 0
    assert e.mean == pytest.approx(truth, rel=1e-12)


def test_the_estimate_is_unbiased_and_its_variance_estimate_honest():
    """Over 4,000 independent samples of 10 pairs from 40: the mean of the estimates is the true
    difference, and the mean variance estimate is the estimates' variance (both within the
    Monte Carlo error)."""
    t, grades = _population()
    truth = sum(grades[(q, d)] * dl for q, d, dl in zip(t.qid, t.docid, t.delta, strict=True)) / 7
    est, var = [], []
    for s in range(4000):
        o = priority_order(t, "w", s)
        e = ht_estimate(o, o.delta.to_numpy(), grades, 7, 0, k=10)   # max_grade 0: no floor
        est.append(e.mean)
        var.append(e.se ** 2)
    est = np.array(est)
    mc = est.std() / np.sqrt(len(est))
    assert abs(est.mean() - truth) < 4 * mc
    assert np.mean(var) == pytest.approx(est.var(), rel=0.15)
    # a design that judged the heaviest pairs and counted the rest as 0 would not be
    heaviest = t.sort_values("w", ascending=False).head(10)
    judged_only = sum(grades[(q, d)] * dl for q, d, dl in
                      zip(heaviest.qid, heaviest.docid, heaviest.delta, strict=True)) / 7
    assert abs(judged_only - truth) > 4 * mc


def test_a_hole_in_the_prefix_stops_the_sample_there():
    t, grades = _population()
    o = priority_order(t, "w", 0)
    keys = list(zip(o.qid, o.docid, strict=True))
    some = {k: grades[k] for k in keys[:5] + keys[6:9]}
    assert judged_prefix(o, some) == 5
    assert ht_estimate(o, o.delta.to_numpy(), some, 7, 2).sampled == 5


def _run(rankings: dict, name: str) -> Run:
    return Run.from_dict({q: {d: float(len(ds) - i) for i, d in enumerate(ds)}
                          for q, ds in rankings.items()}, name)


def _contest(prior_take, n_queries=30, better="change"):
    """The change puts the relevant document first on every query; the current constants
    put it fourth (or the other way round with ``better='current'``)."""
    good = {f"q{i}": [f"r{i}", f"a{i}", f"b{i}", f"c{i}"] for i in range(n_queries)}
    bad = {f"q{i}": [f"a{i}", f"b{i}", f"c{i}", f"r{i}"] for i in range(n_queries)}
    cur, chg = (bad, good) if better == "change" else (good, bad)
    grades = {(f"q{i}", f"r{i}"): 1 for i in range(n_queries)}
    c = Contest({"current": _run(cur, "current"), "change": _run(chg, "change")},
                {"change": Prior(0.0, 0.01, 8, "p")}, prior_take, list(good))
    return c, grades


@pytest.mark.parametrize("prior_take", [True, False])
def test_the_bounded_rule_leaves_the_advice_only_on_clear_evidence(prior_take):
    c, qrels = _contest(prior_take)
    order = c.order("sample", budget=40)
    v0 = c.verdict({}, 1, "sample")
    assert v0.chosen == ("change" if prior_take else "current")          # the advice alone
    few = {k: qrels.get(k, 0) for k in zip(order.qid[:40], order.docid[:40], strict=True)}
    v = c.verdict(few, 1, "sample")
    assert v.chosen == "change" and v.sampled.lower(1.645) > 0
    # the true mean DCG@10 difference: 1 - 1/log2(5) per query
    p = pairs(c.runs["current"], c.runs["change"], c.queries)
    assert len(p.table) == 4 * 30
    everything = {k: qrels.get(k, 0) for k in zip(c.order("sample").qid, c.order("sample").docid, strict=False)}
    assert c.verdict(everything, 1, "sample").sampled.mean == pytest.approx(1 - 1 / np.log2(5))


def test_judgments_that_say_nothing_never_move_the_decision_off_the_advice():
    c, _ = _contest(False)
    order = c.order("sample", budget=20)
    zeros = {k: 0 for k in zip(order.qid[:20], order.docid[:20], strict=True)}
    v = c.verdict(zeros, 1, "sample")
    assert v.chosen == "current" and "not clear of 0" in v.why


def test_a_change_that_loses_is_given_up_and_never_taken():
    c, qrels = _contest(True, better="current")
    order = c.order("sample", budget=40)
    few = {k: qrels.get(k, 0) for k in zip(order.qid[:40], order.docid[:40], strict=True)}
    assert c.verdict(few, 1, "sample").chosen == "current"
    c2, _ = _contest(False, better="current")
    assert c2.verdict(few, 1, "sample").chosen == "current"


def test_the_first_question_gets_its_share_of_the_budget_first():
    cur = _run({"q1": ["a", "b", "c", "d"], "q2": ["x", "y", "z", "w"]}, "current")
    chg = _run({"q1": ["b", "a", "c", "d"], "q2": ["x", "y", "z", "w"]}, "change")
    alt = _run({"q1": ["a", "b", "c", "d"], "q2": ["w", "z", "y", "x"]}, "alt")
    c = Contest({"current": cur, "change": chg, "alt": alt},
                {"change": Prior(0.0, 0.01, 8), "alt": Prior(0.0, 0.01, 8)}, False, ["q1", "q2"])
    q = c.order("sample", budget=4)
    assert q.why.iloc[0].startswith("sample, phase 1") and q.why.iloc[2].startswith("sample, phase 2")
    assert set(zip(q.qid[:2], q.docid[:2], strict=False)) == {("q1", "a"), ("q1", "b")}   # all phase 1 has
    assert len(set(zip(q.qid, q.docid, strict=False))) == len(q)


def test_bonferroni_widens_the_bound_for_several_alternatives():
    assert _bonferroni(1.645, 1) == 1.645
    assert _bonferroni(1.645, 2) == pytest.approx(1.96, abs=0.01)


def test_a_weight_s_last_bits_do_not_reorder_the_queue():
    """Noise of a few ulps in every weight (what another CPU's log2 could give) leaves the
    order and the estimate's decision-relevant digits as they were."""
    t, grades = _population(400, seed=5)
    rng = np.random.default_rng(1)
    noisy = t.assign(w=t.w * (1 + rng.integers(-4, 5, len(t)) * np.finfo(float).eps))
    a, b = priority_order(t, "w", 0), priority_order(noisy, "w", 0)
    assert list(zip(a.qid, a.docid, strict=True)) == list(zip(b.qid, b.docid, strict=True))
    ea = ht_estimate(a, a.delta.to_numpy(), grades, 7, 2, k=50)
    eb = ht_estimate(b, b.delta.to_numpy(), grades, 7, 2, k=50)
    assert ea.mean == pytest.approx(eb.mean, rel=1e-9) and ea.tau == eb.tau
