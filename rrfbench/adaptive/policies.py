"""Per-query fusion policies: which of K candidate configurations fuses a query best.

A policy reads a query's features (:mod:`rrfbench.adaptive.features`) and returns a *utility* per
candidate configuration, how much better than candidate 0 (the static default) it expects that
candidate to be; the query is fused with the highest-utility candidate when that utility is above
the threshold ``tau``, else with candidate 0 (the *hedge*: unsure means the static default).

Kinds (scikit-learn, fixed seeds), all trained on the per-query metric of every candidate
(``Y``, queries x candidates, from the sweep engine):

* ``select``: multinomial logistic regression on the candidate that scored best (ties: the
  lowest index), each query weighted by how much the choice matters there
  (``max(Y) - min(Y)``; queries where every candidate scores the same carry no weight).
  Utilities: logit differences to candidate 0.
* ``ridge``: ridge regression (alpha by efficient leave-one-out, ``RidgeCV``) of each
  candidate's gain over candidate 0 (``Y[:, k] - Y[:, 0]``).
* ``gbm``: gradient-boosted regression trees of the same gains (100 trees, depth 3, rate 0.05,
  subsample 0.8, 20 queries per leaf at least, ``random_state=0``).
* ``wridge`` / ``wgbm``: regress the **weight vector** itself (ridge, one output per weight;
  or one boosted ensemble per weight, as ``gbm``). They work on the static default's *weight
  family* (:func:`weight_family`): every grid point that differs from the static default only
  in its weights (free fusion: ``weights``; a studied system: its numeric ``*weight*`` knobs,
  e.g. titan's ``vector_weight``/``fts_weight``). Target per query: the mean weight vector of
  the family's points that score best on it (ties averaged), each query weighted by
  ``max - min`` of the family's metrics on it. The prediction ``w`` snaps to the nearest point
  of the family (L1); utilities: ``|w - w_0|_1 - |w - w_j|_1`` (how much nearer point j is
  than the static default), so the hedge ``tau`` switches only when the prediction is
  clearly away from the default. Snapping keeps every choice a point whose per-query metrics
  the sweep engine already has, so LOCO scores it exactly as it would fuse.

Features are standardised (training mean and standard deviation; 1 where it is 0). A fitted
policy is plain JSON (:meth:`Policy.to_json`: feature names, scaler, coefficients or trees;
no pickle) and applies without scikit-learn; ``rrfbench/portable`` holds the same computation
for one query in dependency-free Python and JavaScript.

:func:`candidates` picks the K configurations on training data only; :func:`fit_hedged` picks
the kind and ``tau`` by leave-one-collection-out over the training collections.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..core.errors import InputError, choice
from ..results.policy import WEIGHT_KINDS, Policy

KINDS = ("select", "ridge", "gbm", "wridge", "wgbm")
N_CANDIDATES = 3
POOL_SHARE = 0.25       # candidates come from the best quarter of the grid (training macro)
NEVER = 1e9             # tau that never leaves candidate 0
SEED = 0
GBM = {"n_estimators": 100, "max_depth": 3, "learning_rate": 0.05, "subsample": 0.8,
       "min_samples_leaf": 20}


# --------------------------------------------------------------------------- fitting
def _scaler(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = X.mean(axis=0)
    scale = X.std(axis=0)
    return mean, np.where(scale > 0, scale, 1.0)


def fit_model(kind: str, X: np.ndarray, Y: np.ndarray, points=None) -> dict:
    """The portable model of ``kind`` trained on features ``X`` and per-query metrics ``Y``
    (queries x candidates; for the weight kinds, x family points, whose weight vectors are the
    rows of ``points``)."""
    if kind not in KINDS:
        raise choice("--policy", kind, KINDS)
    X, Y = np.asarray(X, dtype=np.float64), np.asarray(Y, dtype=np.float64)
    mean, scale = _scaler(X)
    Z = (X - mean) / scale
    base = {"mean": mean.tolist(), "scale": scale.tolist()}
    n_k = Y.shape[1]
    if kind == "select":
        from sklearn.linear_model import LogisticRegression

        label = Y.argmax(axis=1)
        weight = Y.max(axis=1) - Y.min(axis=1)
        keep = weight > 0
        classes = np.unique(label[keep])
        if len(classes) < 2:
            return {"type": "constant"}
        clf = LogisticRegression(C=1.0, max_iter=5000)
        clf.fit(Z[keep], label[keep], sample_weight=weight[keep] / weight[keep].mean())
        coef = np.zeros((n_k, X.shape[1]))
        icpt = np.full(n_k, -1e6)                    # a class never seen is never chosen
        if len(classes) == 2:                        # binary: one row, for classes[1]
            coef[classes[1]] = clf.coef_[0]
            icpt[classes[1]] = clf.intercept_[0]
            icpt[classes[0]] = 0.0
        else:
            coef[classes] = clf.coef_
            icpt[classes] = clf.intercept_
        return {"type": "linear", "target": "logits", **base, "coef": coef.tolist(),
                "intercept": icpt.tolist()}
    if kind in WEIGHT_KINDS:
        return _fit_weights(kind, Z, Y, np.asarray(points, dtype=np.float64), base)
    G = Y[:, 1:] - Y[:, :1]
    if kind == "ridge":
        from sklearn.linear_model import RidgeCV

        reg = RidgeCV(alphas=np.logspace(-1, 4, 11)).fit(Z, G)
        return {"type": "linear", "target": "gains", **base, "coef": np.atleast_2d(reg.coef_).tolist(),
                "intercept": np.atleast_1d(reg.intercept_).tolist(), "alpha": float(reg.alpha_)}
    return {"type": "trees", "target": "gains", **base,
            "ensembles": [_boosted(Z, G[:, j]) for j in range(G.shape[1])]}


def _boosted(Z: np.ndarray, y: np.ndarray, weight: np.ndarray | None = None) -> dict:
    """One gradient-boosted ensemble (:data:`GBM`) in portable form."""
    import sklearn
    from sklearn.ensemble import GradientBoostingRegressor

    # the inputs are checked once, here: the per-tree re-checks were half a fit's time on a
    # few hundred queries (the trees are the same, tested)
    if not (np.isfinite(Z).all() and np.isfinite(y).all()):
        raise InputError("policy features and targets must be finite")
    with sklearn.config_context(assume_finite=True, skip_parameter_validation=True):
        est = GradientBoostingRegressor(random_state=SEED, **GBM).fit(Z, y, sample_weight=weight)
    trees = []
    for t in est.estimators_[:, 0]:
        tr = t.tree_
        trees.append({"feature": tr.feature.tolist(), "threshold": tr.threshold.tolist(),
                      "left": tr.children_left.tolist(), "right": tr.children_right.tolist(),
                      "value": tr.value[:, 0, 0].tolist()})
    return {"init": float(est.init_.constant_[0][0]), "rate": float(est.learning_rate),
            "trees": trees}


def _fit_weights(kind: str, Z: np.ndarray, Y: np.ndarray, P: np.ndarray, base: dict) -> dict:
    """``wridge`` / ``wgbm``: the weight vector of the best family points (module docstring)."""
    if P.ndim != 2 or len(P) != Y.shape[1]:
        raise InputError(f"{kind}: {Y.shape[1]} family points need a ({Y.shape[1]} x weights) "
                         "matrix of their weight vectors")
    best = Y >= Y.max(axis=1, keepdims=True) - 1e-12
    target = (best[:, :, None] * P[None, :, :]).sum(axis=1) / best.sum(axis=1, keepdims=True)
    weight = Y.max(axis=1) - Y.min(axis=1)
    keep = weight > 0
    if len(P) < 2 or keep.sum() < 2:
        return {"type": "constant"}
    Zk, Tk, wk = Z[keep], target[keep], weight[keep] / weight[keep].mean()
    out = {**base, "target": "weights", "points": P.tolist()}
    if kind == "wridge":
        from sklearn.linear_model import RidgeCV

        reg = RidgeCV(alphas=np.logspace(-1, 4, 11)).fit(Zk, Tk, sample_weight=wk)
        return {"type": "linear", **out, "coef": np.atleast_2d(reg.coef_).tolist(),
                "intercept": np.atleast_1d(reg.intercept_).tolist(), "alpha": float(reg.alpha_)}
    return {"type": "trees", **out,
            "ensembles": [_boosted(Zk, Tk[:, j], wk) for j in range(P.shape[1])]}


def weight_vector(config: dict) -> list[float] | None:
    """A configuration's weights: ``weights`` (free fusion), else its numeric knobs named
    ``*weight*`` in key order (a studied system), else ``None``."""
    if isinstance(config.get("weights"), (list, tuple)):
        return [float(w) for w in config["weights"]]
    ws = [float(v) for k, v in config.items() if "weight" in k.lower()
          and isinstance(v, (int, float)) and not isinstance(v, bool)]
    return ws or None


def weight_family(configs: Sequence[dict], static: int) -> tuple[list[int], np.ndarray]:
    """The static default's weight family: ``static`` first, then (in grid order) every
    configuration that differs from it only in its weights; and their weight vectors (rows).
    Just ``[static]`` when the configurations have no weights."""
    def rest(c):
        return {k: v for k, v in c.items() if k != "label" and k != "weights"
                and not ("weight" in k.lower() and isinstance(v, (int, float))
                         and not isinstance(v, bool))}

    w0 = weight_vector(configs[static])
    if w0 is None:
        return [int(static)], np.zeros((1, 0))
    key = rest(configs[static])
    fam = [int(static)] + [i for i, c in enumerate(configs) if i != static and rest(c) == key
                           and (w := weight_vector(c)) is not None and len(w) == len(w0)]
    return fam, np.array([weight_vector(configs[i]) for i in fam], dtype=np.float64)


def candidates(T_list: Sequence[np.ndarray], static: int, k: int = N_CANDIDATES,
               pool_share: float = POOL_SHARE) -> list[int]:
    """K grid points: ``static`` first, then greedily the point that most raises the per-query
    oracle over the chosen ones (macro over the training collections), from the best
    ``pool_share`` of the grid by training macro mean (configurations that are good on average
    but win on different queries). ``T_list``: per training collection, grid x queries."""
    means = np.mean([T.mean(axis=1) for T in T_list], axis=0)
    n_pool = max(k, int(np.ceil(pool_share * len(means))))
    pool = np.argsort(-means, kind="stable")[:n_pool]
    chosen = [int(static)]
    best = [T[static].copy() for T in T_list]
    for _ in range(k - 1):
        gain = np.mean([np.maximum(T[pool], b).mean(axis=1) for T, b in zip(T_list, best,
                                                                            strict=True)], axis=0)
        gain[np.isin(pool, chosen)] = -np.inf
        g = int(pool[int(np.argmax(gain))])
        if not np.isfinite(gain.max()):
            break
        chosen.append(g)
        best = [np.maximum(T[g], b) for T, b in zip(T_list, best, strict=True)]
    return chosen


def gain_of(choice_idx: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Per query, the metric of the chosen candidate minus candidate 0's."""
    return Y[np.arange(len(Y)), choice_idx] - Y[:, 0]


def best_tau(U: np.ndarray, Y: np.ndarray, groups: np.ndarray) -> tuple[float, float]:
    """The threshold maximising the macro (over ``groups``) mean gain of the hedged choice on
    held-out utilities ``U``; ties: the larger threshold (fewer switches). Returns (tau, gain);
    ``NEVER`` with gain 0 when no threshold gains."""
    top = U.max(axis=1)
    grid = np.unique(np.quantile(top, np.linspace(0, 1, 41)))
    best = (NEVER, 0.0)
    names = np.unique(groups)
    for tau in grid[::-1]:
        ch = np.where(top > tau, U.argmax(axis=1), 0)
        g = gain_of(ch, Y)
        macro = float(np.mean([g[groups == n].mean() for n in names]))
        if macro > best[1] + 1e-12:
            best = (float(tau), macro)
    return best


def inner_utilities(kind: str, X: np.ndarray, Y: np.ndarray, groups: np.ndarray,
                    points=None) -> np.ndarray:
    """Utilities of each training query from a ``kind`` model fitted without its collection."""
    U = np.zeros_like(Y)
    for n in np.unique(groups):
        held = groups == n
        U[held] = _utilities(fit_model(kind, X[~held], Y[~held], points), X[held], Y.shape[1])
    return U


def fit_kind(kind: str, X: np.ndarray, Y: np.ndarray, groups: np.ndarray,
             points=None) -> tuple[dict, float, float]:
    """One kind fitted on all training queries, its threshold chosen by leave-one-collection-out
    over the training collections: (model, tau, held-out macro gain at tau)."""
    if len(np.unique(groups)) < 2:
        raise InputError("a policy's threshold needs at least two training collections")
    tau, gain = best_tau(inner_utilities(kind, X, Y, groups, points), Y, groups)
    return fit_model(kind, X, Y, points), tau, gain


def fit_hedged(X: np.ndarray, Y: np.ndarray, groups: np.ndarray, kinds: Sequence[str] = KINDS,
               YW: np.ndarray | None = None, points=None) -> tuple[str, dict, float, dict]:
    """The kind and threshold with the best held-out gain, leave-one-collection-out over the
    training collections (``groups``), refitted on all of them: (kind, model, tau, notes).
    ``Y``: the candidates' per-query metrics; ``YW`` / ``points``: the weight family's and its
    weight vectors (the weight kinds; both columns 0 are the static default, so every kind's
    gain is over the same baseline). ``kind`` is ``constant`` (always the static default) when
    no kind gains on held-out collections. ``notes[kind]`` holds each kind's held-out gain and
    threshold, ``notes["fitted"][kind]`` its (model, tau)."""
    notes, fitted = {}, {}
    best_kind, best_gain = "constant", 0.0
    for kind in kinds:
        if kind in WEIGHT_KINDS:
            if YW is None or YW.shape[1] < 2:
                fitted[kind] = ({"type": "constant"}, NEVER)
                notes[kind] = {"inner_loco_gain": 0.0, "tau": NEVER,
                               "skipped": "no weight family beside the static default"}
                continue
            model, tau, gain = fit_kind(kind, X, YW, groups, points)
        else:
            model, tau, gain = fit_kind(kind, X, Y, groups)
        fitted[kind] = (model, tau)
        notes[kind] = {"inner_loco_gain": gain, "tau": tau}
        if gain > best_gain + 1e-12:
            best_kind, best_gain = kind, gain
    notes["fitted"] = fitted
    if best_kind == "constant":
        return "constant", {"type": "constant"}, NEVER, notes
    model, tau = fitted[best_kind]
    return best_kind, model, tau, notes


def _utilities(model: dict, X: np.ndarray, n_k: int) -> np.ndarray:
    return Policy("fitting", [], [], [{}] * n_k, model).utilities(X)
