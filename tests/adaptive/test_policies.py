"""Per-query policies: each kind learns a clear rule, its portable form is scikit-learn's model,
candidates and the hedge behave as documented."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rrfbench.adaptive.policies import NEVER, best_tau, candidates, fit_hedged, fit_model
from rrfbench.core.errors import InputError
from rrfbench.results.policy import Policy, quantize


def _queries(rng, n, signal=True):
    """Features x (n x 3) and metrics Y (n x 2): candidate 1 wins when x0 > 0 (if ``signal``)."""
    X = rng.normal(size=(n, 3))
    base = rng.uniform(0.3, 0.7, size=n)
    if signal:
        gain = np.where(X[:, 0] > 0, 0.2, -0.2)
    else:
        gain = rng.normal(0, 0.2, size=n)
    return X, np.stack([base, np.clip(base + gain, 0, 1)], axis=1)


@pytest.mark.parametrize("kind", ["select", "ridge", "gbm"])
def test_each_kind_learns_a_clear_rule(kind):
    rng = np.random.default_rng(0)
    X, Y = _queries(rng, 400)
    pol = Policy(kind, ["a"], ["f0", "f1", "f2"], [{"label": "c0"}, {"label": "c1"}],
                 fit_model(kind, X, Y))
    Xt, Yt = _queries(rng, 400)
    acc = np.mean(pol.choose(Xt) == Yt.argmax(axis=1))
    assert acc > 0.9, acc
    # the portable form is the model: a JSON round trip changes nothing
    again = Policy.from_json(json.loads(json.dumps(pol.to_json())))
    np.testing.assert_array_equal(again.utilities(Xt), pol.utilities(Xt))


def test_exported_trees_are_scikit_learns_trees():
    from sklearn.ensemble import GradientBoostingRegressor

    from rrfbench.adaptive.policies import GBM, SEED

    rng = np.random.default_rng(1)
    X, Y = _queries(rng, 300)
    model = fit_model("gbm", X, Y)
    mean, scale = np.asarray(model["mean"]), np.asarray(model["scale"])
    Z = (X - mean) / scale
    ref = GradientBoostingRegressor(random_state=SEED, **GBM).fit(Z, Y[:, 1] - Y[:, 0])
    pol = Policy("gbm", [], ["a", "b", "c"], [{}, {}], model)
    np.testing.assert_allclose(pol.utilities(X)[:, 1], quantize(ref.predict(Z)), rtol=0,
                               atol=1e-12)
    X[3, 2] = np.nan  # the fits skip scikit-learn's per-tree checks, so rrfbench checks once
    with pytest.raises(InputError, match="must be finite"):
        fit_model("gbm", X, Y)


def test_logistic_policy_is_scikit_learns_argmax():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(2)
    X = rng.normal(size=(300, 3))
    Y = np.zeros((300, 3))
    Y[np.arange(300), (X[:, 0] > 0.5).astype(int) + (X[:, 1] > 0.5)] = 1.0
    model = fit_model("select", X, Y)
    Z = (X - np.asarray(model["mean"])) / np.asarray(model["scale"])
    ref = LogisticRegression(C=1.0, max_iter=5000).fit(Z, Y.argmax(axis=1))
    pol = Policy("select", [], ["a", "b", "c"], [{}, {}, {}], model, tau=-np.inf)
    np.testing.assert_array_equal(pol.choose(X), ref.predict(Z))


def test_candidates_start_with_the_static_default_and_add_what_the_oracle_needs():
    # grid point 0 is good everywhere, 1 wins the first half of the queries, 2 the second
    T = np.array([[0.5] * 10, [0.9] * 5 + [0.1] * 5, [0.1] * 5 + [0.9] * 5, [0.49] * 10])
    got = candidates([T, T], static=0, k=3, pool_share=1.0)
    assert got[0] == 0 and set(got[1:]) == {1, 2}
    assert candidates([T], static=3, k=2, pool_share=1.0)[0] == 3


def test_the_hedge_stays_on_the_static_default_when_nothing_is_learnable():
    rng = np.random.default_rng(3)
    parts = [_queries(rng, 80, signal=False) for _ in range(4)]
    X = np.vstack([p[0] for p in parts])
    Y = np.vstack([p[1] for p in parts])
    groups = np.repeat(np.arange(4), 80)
    kind, model, tau, notes = fit_hedged(X, Y, groups, ["ridge"])
    assert kind == "constant" and tau == NEVER, notes
    # ... and switches when the rule is real
    parts = [_queries(rng, 80) for _ in range(4)]
    X, Y = np.vstack([p[0] for p in parts]), np.vstack([p[1] for p in parts])
    kind, model, tau, notes = fit_hedged(X, Y, groups, ["ridge", "gbm"])
    assert kind in ("ridge", "gbm") and notes[kind]["inner_loco_gain"] > 0.1


def test_best_tau_prefers_the_larger_threshold_on_ties_and_never_when_no_gain():
    U = np.array([[0, 0.5], [0, 0.1], [0, 0.3]])
    Y = np.array([[0.5, 0.9], [0.5, 0.1], [0.5, 0.5]])
    tau, gain = best_tau(U, Y, np.zeros(3))
    assert 0.1 <= tau < 0.5 and gain == pytest.approx(0.4 / 3)
    tau, gain = best_tau(U, Y[:, ::-1] * [1, 0], np.zeros(3))  # switching only loses
    assert tau == NEVER and gain == 0.0


def _weighted_queries(rng, n):
    """Features x (n x 3); a family of three weightings of two runs, the static default
    (0.5, 0.5) first: the keyword-heavy (0.9, 0.1) wins when x0 > 0.5, the dense-heavy (0.1, 0.9)
    when x0 < -0.5, and all tie in between."""
    X = rng.normal(size=(n, 3))
    base = rng.uniform(0.3, 0.6, size=n)
    Y = np.stack([base, base, base], axis=1)
    Y[X[:, 0] > 0.5, 1] += 0.3
    Y[X[:, 0] < -0.5, 2] += 0.3
    return X, Y


@pytest.mark.parametrize("kind", ["wridge", "wgbm"])
def test_weight_kinds_regress_the_weight_vector_and_snap_to_the_family(kind):
    P = np.array([[0.5, 0.5], [0.9, 0.1], [0.1, 0.9]])
    rng = np.random.default_rng(4)
    X, Y = _weighted_queries(rng, 600)
    model = fit_model(kind, X, Y, points=P)
    assert model["target"] == "weights" and model["points"] == P.tolist()
    pol = Policy(kind, ["a", "b"], ["f0", "f1", "f2"], [{"label": f"c{j}"} for j in range(3)],
                 model, tau=0.2)
    Xt, _ = _weighted_queries(rng, 600)
    ch = pol.choose(Xt)
    strong = np.abs(Xt[:, 0]) > 1.0
    want = np.where(Xt[:, 0] > 0, 1, 2)
    assert np.mean(ch[strong] == want[strong]) > 0.9
    if kind == "wridge":  # linear: the middle interpolates to the default (trees need not:
        # queries where every point ties carry no weight, so they never saw the middle)
        assert np.mean(ch[np.abs(Xt[:, 0]) < 0.2] == 0) > 0.8
    # utilities are the L1 advantage of each point over the static default's
    U = pol.utilities(Xt[:5])
    assert np.all(U[:, 0] == 0.0)
    again = Policy.from_json(json.loads(json.dumps(pol.to_json())))
    np.testing.assert_array_equal(again.utilities(Xt), pol.utilities(Xt))


def test_weight_kinds_skip_without_a_family_and_are_compared_on_the_same_baseline():
    rng = np.random.default_rng(5)
    parts = [_weighted_queries(rng, 150) for _ in range(3)]
    X, YW = np.vstack([p[0] for p in parts]), np.vstack([p[1] for p in parts])
    groups = np.repeat(np.arange(3), 150)
    P = np.array([[0.5, 0.5], [0.9, 0.1], [0.1, 0.9]])
    kind, model, tau, notes = fit_hedged(X, YW[:, :2], groups, ["ridge", "wridge"], YW=YW, points=P)
    assert kind == "wridge" and notes["wridge"]["inner_loco_gain"] > notes["ridge"]["inner_loco_gain"]
    kind, _, _, notes = fit_hedged(X, YW[:, :2], groups, ["wridge"], YW=YW[:, :1], points=P[:1])
    assert kind == "constant" and "skipped" in notes["wridge"]


def test_weight_family_of_free_fusion_and_of_a_systems_knobs():
    from rrfbench.adaptive.policies import weight_family, weight_vector

    conv = lambda w, norm="tmm": {"method": "convex", "weights": w, "norm": norm,  # noqa: E731
                                  "label": f"{norm} {w}"}
    configs = [conv([0.2, 0.8]), conv([0.5, 0.5]), conv([0.5, 0.5], "zscore"), conv([1.0, 0.0]),
               {"method": "rrf", "weights": [1, 1], "norm": "tmm", "label": "rrf"}]
    fam, P = weight_family(configs, 1)
    assert fam == [1, 0, 3] and P.tolist() == [[0.5, 0.5], [0.2, 0.8], [1.0, 0.0]]
    titan = [{"k": 10, "vector_weight": 0.7, "fts_weight": 1.0, "dropoff": None},
             {"k": 10, "vector_weight": 0.3, "fts_weight": 1.0, "dropoff": None},
             {"k": 60, "vector_weight": 0.3, "fts_weight": 1.0, "dropoff": None}]
    fam, P = weight_family(titan, 0)
    assert fam == [0, 1] and P.tolist() == [[0.7, 1.0], [0.3, 1.0]]
    memory = [{"vector": True, "graph": False, "k": 60}, {"vector": False, "graph": True, "k": 60}]
    assert weight_family(memory, 1)[0] == [1] and weight_vector(memory[0]) is None


def test_policies_are_the_same_with_every_blas_kernel():
    """Fitted in fresh processes whose OpenBLAS runs other CPUs' kernels: the boosted trees of
    the weight kinds (their targets average the best family points) and every kind's utilities
    are bit for bit the same, so are the choices. With ``best @ P`` and ``Z @ coef`` done by
    BLAS they were not, and the real adaptive suite picked another policy kind on one fold.
    (The linear kinds' own scikit-learn fits still use BLAS: their coefficients may differ in
    the last bits, which this does not compare.)"""
    from tests.conftest import at_every_blas_kernel

    code = """
import hashlib, json
import numpy as np
from rrfbench.adaptive.policies import fit_model
from rrfbench.results.policy import Policy
rng = np.random.default_rng(3)
X = rng.normal(size=(500, 34))
P = np.round(rng.dirichlet(np.ones(3), size=12), 1)
Y = np.round(rng.uniform(0, 1, size=(500, 12)) + 0.3 * (X[:, :12] > 0.5), 2)  # many ties
Xt = rng.normal(size=(300, 34))
coef = rng.normal(size=(4, 34))
lin = {"type": "linear", "target": "gains", "mean": [0.0] * 34, "scale": [1.0] * 34,
       "coef": coef.tolist(), "intercept": [0.0] * 4}
h = lambda a: hashlib.sha256(json.dumps(a, sort_keys=True).encode()).hexdigest()[:16]
cands = [{"label": str(j)} for j in range(12)]
wgbm = fit_model("wgbm", X, Y, points=P)
pols = [Policy("wgbm", ["a", "b", "c"], [f"f{i}" for i in range(34)], cands, wgbm, tau=0.1),
        Policy("ridge", ["a"], [f"f{i}" for i in range(34)], cands[:5], lin, tau=0.1)]
print(h(wgbm["ensembles"]), *(h(p.utilities(Xt).tolist()) for p in pols),
      *(h(p.choose(Xt).tolist()) for p in pols))
"""
    out = at_every_blas_kernel(code)
    assert len(set(out.values())) == 1, out


def _simplex_policy(w, tau=0.0):
    """A ``weights`` policy whose prediction is ``w`` whatever the query (intercept only), over
    the 3-weight grid of step 0.1 that sums to 1 (free fusion's convex family)."""
    pts = [[a / 10, b / 10, (10 - a - b) / 10] for a in range(11) for b in range(11 - a)]
    model = {"type": "linear", "target": "weights", "mean": [0.0], "scale": [1.0],
             "coef": [[0.0]] * 3, "intercept": list(w), "points": pts}
    return Policy("wridge", [], ["f"], [{}] * len(pts), model, tau=tau)


def test_a_last_bit_does_not_move_a_weight_policys_choice():
    """On the simplex, L1 distances from a predicted weight vector to two grid points are often
    exactly equal, and the utilities sit on plateaus (0.6, 0.2, ...): unrounded, the argmax and
    the ``> tau`` test followed the prediction's last bits, which BLAS kernels change (the
    nine-collection adaptive suite chose another threshold with OpenBLAS's Haswell kernels).
    Quantized utilities (rrfbench.results.policy.quantize) make the choice the same for predictions
    1e-12 apart; the unrounded utilities disagree on the same inputs."""
    rng = np.random.default_rng(7)
    W = rng.dirichlet([1, 1, 1], size=400)
    X = np.zeros((1, 1))
    moved_raw = 0
    for w in W:
        nudged = w + 1e-12 * rng.choice([-1, 1], size=3)  # BLAS-sized noise
        a, b = _simplex_policy(w), _simplex_policy(nudged)
        ua, ub = a.utilities(X), b.utilities(X)
        np.testing.assert_array_equal(ua, ub)
        top = ua.max()
        for tau in (top, np.nextafter(top, -1), 0.0):  # thresholds at a plateau value
            a.tau = b.tau = tau
            assert a.choose(X)[0] == b.choose(X)[0]
        pts = np.asarray(a.model["points"])
        raw_a, raw_b = ((d[0] - d).max() for d in (np.abs(v[None] - pts).sum(axis=1)
                                                   for v in (w, nudged)))
        moved_raw += int((raw_a > raw_a) != (raw_b > raw_a))  # tau at a's own top, unrounded
    assert moved_raw > 0  # the noise the rounding absorbs is real on these inputs
