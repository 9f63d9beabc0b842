"""Decision rules and their grading by nested leave-one-collection-out: each rule by hand, the
regret table by hand, a leak is caught, the table follows the data, too few collections are
refused."""

import numpy as np
import pytest

from rrfbench.core.errors import InputError
from rrfbench.results.values import Protocol
from rrfbench.tuning.decisions import (
    DEFAULT_DECISION,
    LOSS_AVERSION,
    MARGIN,
    RULES,
    Evidence,
    Fold,
    choice_by_loss_aversion,
    choose_rule,
    cost,
    decide,
    decision_record,
    expected_gain,
    grade,
    leak_check,
    pool,
    refused,
)
from rrfbench.tuning.suite_data import CollectionData
from rrfbench.tuning.transfer import nested_folds, transfer_result

HOLD = Protocol("holdout", "t", "e")


def ev(*gains, n=4, significant=False):
    """Evidence whose collection c has ``n`` queries, each differing by ``gains[c]``."""
    return Evidence(tuple(f"c{i}" for i in range(len(gains))),
                    tuple(np.full(n, g) for g in gains), significant)


@pytest.mark.parametrize("gains, want", [
    ((0.02, -0.01, 0.005), True),    # largest loss .01 < largest gain .02
    ((0.01, -0.05, 0.0), False),     # largest loss .05 > largest gain .01
    ((0.0, 0.0, 0.0), False),        # nothing to gain: the default stays
    ((-0.01, -0.02), False),
    ((0.01, -0.01), False),          # equal: the default stays
])
def test_minimax_hand_computed(gains, want):
    assert decide("minimax", ev(*gains)) is want


@pytest.mark.parametrize("gains, want", [
    ((0.02, 0.01, 0.03), True),      # mean .02, se .01/sqrt(3) = .0058: 1 - se^2/mean^2 > 0
    ((0.02, -0.02, 0.01), False),    # mean .0033, se .0120
    ((-0.02, -0.01, -0.03), False),  # a negative mean never shrinks to a gain
    ((0.01,), False),                # one collection: no spread to shrink by
])
def test_shrinkage_hand_computed(gains, want):
    assert decide("shrinkage", ev(*gains)) is want


def test_noninferiority_reads_the_lower_bound():
    # every query gains .002: the bootstrap's bound is .002 > -MARGIN
    assert decide("noninferiority", ev(0.002, 0.002, 0.002))
    # a mean gain of +0.002 whose collections spread from -0.05 to +0.056: the bound is far
    # below -MARGIN
    assert not decide("noninferiority", ev(-0.05, 0.056, 0.0))
    assert not decide("noninferiority", ev(-0.001, -0.001, -0.001))   # not positive
    rng = np.random.default_rng(0)
    # per-query noise around a small loss within the margin, positive mean: taken only if the
    # lower bound clears -MARGIN
    e = Evidence(("a", "b", "c"), tuple(0.001 + rng.normal(0, 0.002, 300) for _ in range(3)))
    assert decide("noninferiority", e) and MARGIN == 0.005


def test_mean_takes_a_positive_mean_gain():
    assert decide("mean", ev(0.03, -0.02, 0.0)) and not decide("mean", ev(0.01, -0.02))
    assert not decide("mean", ev(0.0, 0.0))


def test_always_and_significance():
    assert decide("always", ev(-0.1, -0.2))
    assert decide("significance", ev(0.1, significant=True))
    assert not decide("significance", ev(0.1, 0.1, significant=False))
    with pytest.raises(InputError, match="--decision: 'nope' is not one of always"):
        decide("nope", ev(0.1))


def fold(name, change, default, *gains, significant=False):
    return Fold(name, ev(*gains, significant=significant), np.full(3, change),
                np.full(3, default))


def test_grade_hand_computed():
    folds = [fold("a", 0.60, 0.50, 0.02, 0.01, significant=True),  # change better by .10
             fold("b", 0.40, 0.45, 0.02, -0.04),                    # default better by .05
             fold("c", 0.30, 0.30, -0.01, -0.02)]                   # a tie: both right
    g = grade(folds)
    assert [r["better"] for r in g["folds"]] == ["change", "default", "tie"]
    a = g["rules"]["always"]
    assert a["mean_regret"] == pytest.approx(0.05 / 3) and a["right"] == 2
    assert a["worst_regret"] == pytest.approx(0.05) and a["worst_vs_default"] == pytest.approx(-0.05)
    m = g["rules"]["minimax"]      # a: take (.02 > 0), b: keep (.04 > .02), c: keep
    assert [d["took_change"] for d in m["per_collection"].values()] == [True, False, False]
    assert m["mean_regret"] == pytest.approx(0.0) and m["right"] == 3
    s = g["rules"]["significance"]  # takes only a
    assert s["mean_regret"] == pytest.approx(0.0) and s["took_change"] == 1
    # mean (a: +.015 take, b: -.01 keep, c: keep), minimax and significance tie at 0 regret:
    # mean is the simplest of the lowest
    assert g["rules"]["mean"]["mean_regret"] == 0.0 and g["best"] == "mean"


def test_choose_rule_takes_the_lowest_regret_and_the_simpler_on_a_tie():
    def table(**regrets):
        return {r: {"per_collection": {"x": {"regret": v, "vs_default": 0.0}}}
                for r, v in regrets.items()}
    assert choose_rule({"f": table(always=0.02, minimax=0.01, significance=0.03)}) == "minimax"
    assert choose_rule({"f": table(always=0.01000001, significance=0.01)}) == "always"
    assert choose_rule({"f": table(always=0.02, shrinkage=0.01),
                        "g": table(always=0.0, shrinkage=0.03)}) == "always"  # pooled
    with pytest.raises(InputError, match="no graded decisions"):
        choose_rule({})


def test_a_shipped_loss_costs_twice_a_declined_gain():
    """The cost counts what a taken change lost against the default 1 + LOSS_AVERSION times:
    'always' ships a loss of .03 on b, 'mean' declines a gain of .04 on a; by plain regret
    'always' is lower, by cost 'mean' is."""
    def d(regret, vs):
        return {"regret": regret, "vs_default": vs}
    tables = {"f": {"always": {"per_collection": {"a": d(0.0, 0.04), "b": d(0.03, -0.03)}},
                    "mean": {"per_collection": {"a": d(0.04, 0.0), "b": d(0.0, 0.0)}}}}
    assert LOSS_AVERSION == 1.0
    assert cost(d(0.03, -0.03)) == pytest.approx(0.06) and cost(d(0.04, 0.0)) == 0.04
    assert choose_rule(tables, loss_aversion=0.0) == "always"
    assert choose_rule(tables) == "mean"
    assert choice_by_loss_aversion(tables, (0.0, 0.25, 0.5, 1.0)) == {
        "0": "always", "0.25": "always", "0.5": "mean", "1": "mean"}   # break-even at 1/3
    g = grade([fold("a", .6, .5, .02, .01), fold("b", .4, .45, .02, -.04),
               fold("c", .3, .3, -.01, -.02)])
    a = g["rules"]["always"]       # ships the loss of .05 on b
    assert a["shipped_losses"] == 1 and a["mean_cost"] == pytest.approx(0.10 / 3)
    assert a["per_collection"]["b"]["cost"] == pytest.approx(0.10)


def test_pool_counts_every_familys_decisions():
    g1 = grade([fold("a", .6, .5, .02, .01), fold("b", .4, .45, .02, -.04),
                fold("c", .3, .3, -.01, -.02)])
    g2 = grade([fold("a", .5, .6, .02, .03), fold("b", .5, .4, .01, .01),
                fold("c", .2, .3, -.01, .02)])
    p = pool({"f1": g1, "f2": g2})
    assert p["always"]["n"] == 6
    assert p["always"]["mean_regret"] == pytest.approx((0.05 + 0.1 + 0.1) / 6)
    assert set(p) == set(RULES)


def test_too_few_collections_are_refused_and_the_selection_still_reported():
    with pytest.raises(InputError, match="needs at least 3 collections"):
        grade([fold("a", .6, .5, .02), fold("b", .4, .45, .02)])
    assert "need at least 3 collections" in refused(2)["refused"] and refused(3) is None
    colls = suite(2, gain=0.05)
    r = transfer_result("two", colls, family="fusion", metric="nDCG@10", labels=LABELS,
                        configs=GRID, default={"config": GRID[0], "label": "g0"},
                        stability_resamples=0)
    assert "need at least 3 collections" in r.decision["grading"]["refused"]
    assert "track_record" not in r.decision and r.label == "g2"


def test_expected_gain_intervals():
    d = [np.full(5, g) for g in (0.01, 0.02, 0.03)]
    e = expected_gain(d)
    assert e["value"] == pytest.approx(0.02) and e["collections"] == 3
    # mean +- t(0.975, 2) * sd * sqrt(1 + 1/3): 4.3027 * 0.01 * 1.1547
    assert e["prediction95"] == pytest.approx([0.02 - 0.049683, 0.02 + 0.049683], abs=1e-5)
    assert 0.01 <= e["ci95"][0] <= e["ci95"][1] <= 0.03


def test_the_record_keeps_the_default_with_zero_gain():
    e = ev(-0.02, -0.01, 0.0)
    rec = decision_record("minimax", e, e.deltas, None, "no evidence that it transfers")
    assert not rec["take_change"] and rec["recommended_gain"]["value"] == 0.0
    assert rec["change_gain"]["value"] == pytest.approx(-0.01)
    assert rec["rules_answer"]["always"] and DEFAULT_DECISION in RULES


# --------------------------------------------------------------------------- nested LOCO
GRID = [{"method": "rrf", "k": [k], "norm": None} for k in (60, 10, 1)]
LABELS = ["g0", "g1", "g2"]


def suite(n_colls, gain=0.03, seed=0, n=40):
    """Collections over :data:`GRID`: g0 is the default, g2 better by about ``gain``."""
    rng = np.random.default_rng(seed)
    out = []
    for c in range(n_colls):
        def values(c=c):
            base = rng.random(n) * 0.5 + 0.25
            m = base + 0.02 * rng.normal(size=(3, n))
            m[2] += gain * (1 if c % 3 else -0.5)       # one collection in three loses
            return m
        T, E = values(), values()
        out.append(CollectionData(f"c{c}", HOLD, T, E, T[0].copy(), E[0].copy(),
                                  [f"q{i}" for i in range(n)]))
    return out


def perturbed(colls, i, seed=1):
    """``colls`` with collection i's values (tuning and evaluation, the default too) replaced
    by random ones in which g1 wins by far."""
    if i is None:
        return colls
    rng = np.random.default_rng(seed)
    c = colls[i]
    T, E = rng.random(c.T.shape), rng.random(c.E.shape)
    T[1] += 1.0     # now g1 wins by far there: a selection that reads it would pick g1
    E[1] += 1.0
    out = list(colls)
    out[i] = CollectionData(c.name, c.protocol, T, E, T[0].copy(), E[0].copy(), c.eval_qids)
    return out


def test_nested_folds_read_only_the_other_collections():
    colls = suite(5)
    folds = nested_folds(colls, "macro", "best", stability_resamples=20)
    assert [f.collection for f in folds] == [c.name for c in colls]
    for f, c in zip(folds, colls, strict=True):
        assert c.name not in f.evidence.names and len(f.evidence.names) == 4
        assert np.array_equal(f.default, c.default_E)
    assert leak_check(lambda i: nested_folds(perturbed(colls, i), "macro", "best",
                                             stability_resamples=20), len(colls)) == []


def test_a_selection_that_sees_the_left_out_collection_is_caught():
    colls = suite(5)

    def build(i):
        cs = perturbed(colls, i)
        # the leak: select on every collection, the left-out one included
        return nested_folds(cs, "macro", "best", select_fn=lambda _rest: int(np.argmax(
            np.mean([c.E.mean(axis=1) for c in cs], axis=0))))
    problems = leak_check(build, len(colls))
    assert problems and all("changes its own fold's evidence" in p for p in problems)


def test_a_rule_that_looks_at_its_own_left_out_collection_is_caught():
    colls = suite(5)

    def build(i):
        return nested_folds(perturbed(colls, i), "macro", "best", stability_resamples=0)

    def peeking(rule, evidence, f):      # the leak: decide from the fold's own outcome
        return bool(f.change.mean() > f.default.mean()) if rule == "always" else \
            decide(rule, evidence)
    problems = leak_check(build, len(colls), peeking)
    assert problems and all("changes the decision of always although the evidence is the same"
                            in p for p in problems)
    # and why it must be caught: peeking looks perfect
    g = grade(build(None), decide_fn=peeking)
    assert g["rules"]["always"]["mean_regret"] == 0.0 and g["best"] == "always"


def test_the_graded_table_follows_one_collections_values():
    colls = suite(5, gain=0.03)
    before = grade(nested_folds(colls, "macro", "best", stability_resamples=0))
    # collection c1's evaluation values of the selected configuration drop by 0.2
    c = colls[1]
    E = c.E.copy()
    E[2] -= 0.2
    changed = list(colls)
    changed[1] = CollectionData(c.name, c.protocol, c.T, E, c.default_T, c.default_E,
                                c.eval_qids)
    after = grade(nested_folds(changed, "macro", "best", stability_resamples=0))
    assert before["folds"][1]["better"] == "change" and after["folds"][1]["better"] == "default"
    a0, a1 = (g["rules"]["always"]["per_collection"]["c1"] for g in (before, after))
    assert a0["regret"] == 0.0 and a1["regret"] == pytest.approx(0.2 - (c.E[2] - c.E[0]).mean())
    assert before["rules"]["always"]["mean_regret"] < after["rules"]["always"]["mean_regret"]


def test_transfer_result_recommends_by_its_rule_and_records_the_grading():
    colls = suite(5, gain=0.03)
    kw = dict(family="fusion", metric="nDCG@10", labels=LABELS, configs=GRID,
              default={"config": GRID[0], "label": "g0"}, stability_resamples=20)
    for rule in RULES:
        r = transfer_result("s", colls, decision=rule, **kw)
        d = r.decision
        assert d["rule"] == rule and d["take_change"] == d["rules_answer"][rule]
        assert r.recommended["label"] == ("g2" if d["take_change"] else "g0")
        assert d["track_record"]["of"] == 5 and set(d["grading"]["rules"]) == set(RULES)
        assert r.provenance["nested_grading_s"] >= 0
    # the grading does not depend on the rule used
    a = transfer_result("s", colls, decision="always", **kw).decision["grading"]
    b = transfer_result("s", colls, decision="minimax", **kw).decision["grading"]
    assert a == b
