"""How often a selection and its verdict come out the same on resampled or perturbed queries.

* **Stability** (:func:`stability`): selection and verdict redone on 200 bootstraps of the
  queries of each collection and on 200 perturbations of the per-query values of the size of
  a CPU difference (each configuration's mean on a collection moved by N(0, 0.001^2) through 2%
  of its queries), with cheaper tests inside (1000 sign flips; a hierarchical bootstrap whose
  query level is a normal approximation). The share of replicates supporting the verdict (the
  smaller of the two schemes'; *likely transfers* is also supported by *transfers*) must be at
  least 80%: below it, *transfers* is reported as *likely transfers, weak evidence* when that
  has 80% support, and any other verdict as *unstable*, which keeps the default.

Called from: ``adaptive.validation``, ``tuning.transfer``, ``workflows.suite``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from ..core.stats import holm
from .selection import DEFAULT_RULE
from .verdicts import ALPHA, STABILITY_MIN, VERDICTS, _sig, verdict_code

if TYPE_CHECKING:
    from .suite_data import CollectionData

STABILITY_RESAMPLES = 200      # B: replicates per perturbation scheme
STABILITY_SEED = 0
NOISE_SHIFT = 0.001            # sd of the shift of a configuration's mean on a collection
NOISE_SHARE = 0.02             # share of a collection's queries whose values change (>= 1)
STABILITY_FLIPS = 1000         # sign flips of each test inside a replicate (10000 outside)
STABILITY_HB_DRAWS = 1000      # collection draws of the hierarchical bootstrap inside one


class _Replicates:
    """B replicates of a matrix ``X`` (rows x queries), without building them all.

    Either a bootstrap: ``idx`` (B x n) the queries each replicate draws, ``W`` the counts
    (B x n, how often replicate b draws query q); or a noise draw: ``cols`` (B x m) the queries
    whose values change by ``noise`` (rows x B x m). Gives the replicates' sums, sums of squares
    and cross products of rows from matmuls, and one row's replicated differences to another.
    """

    def __init__(self, X: np.ndarray, idx: np.ndarray | None = None,
                 cols: np.ndarray | None = None, noise: np.ndarray | None = None):
        self.X, self.idx, self.cols, self.noise = X, idx, cols, noise
        self.n = X.shape[1]
        self._s1 = self._s2 = None
        if idx is not None:
            B, n = idx.shape
            self.W = np.bincount((idx + n * np.arange(B)[:, None]).ravel(),
                                 minlength=B * n).reshape(B, n).astype(np.float64)
        else:
            self.W = None
            self.Xc = X[:, cols]                        # (rows, B, m) before the change
            self.Xp = self.Xc + noise                   # ... and after

    def like(self, X: np.ndarray) -> _Replicates:
        """The same draw applied to another matrix over the same queries."""
        return _Replicates(X, self.idx, self.cols, self.noise)

    @property
    def B(self) -> int:
        return len(self.idx) if self.idx is not None else self.cols.shape[0]

    def s1(self) -> np.ndarray:
        """(rows, B): sum over the replicate's queries."""
        if self._s1 is None:
            if self.W is not None:
                self._s1 = self.X @ self.W.T
            else:
                self._s1 = self.X.sum(axis=1)[:, None] + self.noise.sum(axis=2)
        return self._s1

    def s2(self) -> np.ndarray:
        """(rows, B): sum of squares."""
        if self._s2 is None:
            if self.W is not None:
                self._s2 = (self.X * self.X) @ self.W.T
            else:
                self._s2 = ((self.X * self.X).sum(axis=1)[:, None]
                            + (self.Xp ** 2 - self.Xc ** 2).sum(axis=2))
        return self._s2

    def cross(self, rows: np.ndarray, reps: np.ndarray | None = None) -> np.ndarray:
        """(rows of X, P): sum over the queries of X[r] * X[rows[p]] in replicate reps[p]
        (``reps`` defaults to 0..B-1)."""
        reps = np.arange(self.B) if reps is None else reps
        if self.W is not None:
            return self.X @ (self.W[reps] * self.X[rows]).T
        uniq, inv = np.unique(rows, return_inverse=True)
        out = (self.X @ self.X[uniq].T)[:, inv]
        for j in range(self.cols.shape[1]):
            out += (self.Xp[:, reps, j] * self.Xp[rows, reps, j]
                    - self.Xc[:, reps, j] * self.Xc[rows, reps, j])
        return out

    def diffs(self, rows: np.ndarray, base: int) -> np.ndarray:
        """(B, n): replicate b's per-query values of row ``rows[b]`` minus row ``base``."""
        if self.idx is not None:
            return self.X[rows[:, None], self.idx] - self.X[base][self.idx]
        d = self.X[rows] - self.X[base][None, :]
        b = np.arange(self.B)[:, None]
        d[b, self.cols] += (self.noise[rows[:, None], b, np.arange(self.cols.shape[1])]
                            - self.noise[base][b, np.arange(self.cols.shape[1])])
        return d


def _first_max(obj: np.ndarray) -> np.ndarray:
    """Per column, the first row within 1e-12 of the column's maximum."""
    return np.argmax(obj >= obj.max(axis=0) - 1e-12, axis=0)


def _random_subsets(rng, B: int, n: int, m: int) -> np.ndarray:
    """``B`` random subsets of ``m`` of ``n`` columns, each in a fixed order. A stable argsort
    of uniform draws, not ``np.argpartition``: the partition returns the same subset in an order
    that depends on the SIMD sort NumPy dispatches to (AVX-512 vs AVX2), and the noise drawn
    next is assigned in that order, so the stability figures moved with the CPU."""
    return np.argsort(rng.random((B, n)), axis=1, kind="stable")[:, :m]


def _draw(scheme: str, colls: Sequence[CollectionData], B: int, rng,
          noise_shift: float, noise_share: float) -> list[tuple[_Replicates, _Replicates]]:
    """Per collection (tuning, evaluation) replicates, the default as the last row; when one
    split serves both, one draw (each query resampled or perturbed once for both)."""
    out = []
    for c in colls:
        XT = np.vstack([c.T, c.default_T[None, :]])
        same = c.protocol.tune_split == c.protocol.eval_split and c.T.shape == c.E.shape
        XE = np.vstack([c.E, c.default_E[None, :]])
        reps = []
        for X in ((XT,) if same else (XT, XE)):
            n = X.shape[1]
            if scheme == "data":
                reps.append(_Replicates(X, idx=np.arange(n)[None, :]))
            elif scheme == "bootstrap":
                reps.append(_Replicates(X, idx=rng.integers(0, n, size=(B, n))))
            else:
                m = min(n, max(1, int(np.ceil(noise_share * n))))
                cols = _random_subsets(rng, B, n, m)
                sd = noise_shift * n / np.sqrt(m)
                reps.append(_Replicates(X, cols=cols,
                                        noise=rng.normal(0.0, sd, size=(X.shape[0], B, m))))
        if same:
            rt = reps[0]
            out.append((rt, rt if np.array_equal(XE, XT) else rt.like(XE)))
        else:
            out.append((reps[0], reps[1]))
    return out


def _objective_replicates(fold: Sequence[int], objective: str, cache: dict) -> np.ndarray:
    """(grid, B): the objective of every replicate on the collections ``fold``."""
    if objective == "macro":
        return np.mean([cache["means"][c] for c in fold], axis=0)
    if objective == "worst":
        return np.min([cache["means"][c] - cache["dmeans"][c] for c in fold], axis=0)
    return -np.mean([cache["ranks"][c] for c in fold], axis=0)


def _select_replicates(folds: Sequence[Sequence[int]], reps, objective: str, rule: str,
                       dist: np.ndarray, cache: dict, neighbours=None) -> np.ndarray:
    """(folds, B): the grid point each replicate selects on the collections of each fold (as
    :func:`select`). The 1se rule's cross products are computed once per (collection,
    replicate, best point) however many folds share them."""
    G = len(dist)
    objs = [_objective_replicates(f, objective, cache) for f in folds]
    bests = np.stack([_first_max(o) for o in objs])                    # (folds, B)
    if rule == "best":
        return bests
    B = bests.shape[1]
    b = np.arange(B)
    gaps = [np.zeros_like(o) for o in objs]
    var = [np.zeros_like(o) for o in objs]
    for c in sorted({c for f in folds for c in f}):
        rt = reps[c][0]
        m = cache["means"][c]
        which = [k for k, f in enumerate(folds) if c in f]
        if rt.n > 1:
            keys = bests[which] * B + b                                # (folds with c, B)
            uniq, inv = np.unique(keys, return_inverse=True)
            cross = rt.cross(uniq // B, uniq % B)[:G]                  # (G, unique pairs)
            inv = inv.reshape(keys.shape)
            s2 = rt.s2()[:G]
        for w, k in enumerate(which):
            best = bests[k]
            g = m[best, b][None, :] - m                                # mean differences
            gaps[k] += g
            if rt.n > 1:
                sd2 = s2[best, b][None, :] - 2 * cross[:, inv[w]] + s2  # sum of squared diffs
                var[k] += np.maximum(sd2 - rt.n * g * g, 0.0) / (rt.n - 1) / rt.n
    out = np.empty_like(bests)
    for k, f in enumerate(folds):
        tied = gaps[k] / len(f) <= np.sqrt(var[k]) / len(f) + 1e-15
        if rule == "nbr":
            sm = objs[k] if neighbours is None else neighbours @ objs[k]
            sm = np.where(tied, sm, -np.inf)
            tied &= sm >= sm.max(axis=0) - 1e-12
        else:
            d = np.where(tied, dist[:, None], np.inf)
            tied &= d == d.min(axis=0)
        o = np.where(tied, objs[k], -np.inf)
        out[k] = np.argmax(tied & (o >= o.max(axis=0) - 1e-12), axis=0)
    return out


def _replicate_outcomes(colls, reps, objective: str, rule: str, dist: np.ndarray, rng,
                        flips: int, hb_draws: int, neighbours=None) -> dict:
    """Selections, tests and verdict codes of every replicate (see :func:`stability`)."""
    from scipy.stats import rankdata

    G = len(dist)
    cache = {"means": [rt.s1()[:G] / rt.n for rt, _ in reps],
             "dmeans": [rt.s1()[G] / rt.n for rt, _ in reps]}
    if objective == "meanrank":
        cache["ranks"] = [rankdata(-m, axis=0, method="average") for m in cache["means"]]
    C = len(colls)
    folds = [[j for j in range(C) if j != i] for i in range(C)] + [list(range(C))]
    sel = _select_replicates(folds, reps, objective, rule, dist, cache, neighbours)
    loco, full = sel[:C], sel[C]                                                # (C, B), (B,)
    out = _diff_verdicts([reps[i][1].diffs(loco[i], G) for i in range(C)], rng, flips, hb_draws)
    return {"loco": loco, "full": full, **out}


def _diff_verdicts(diffs: Sequence[np.ndarray], rng, flips: int, hb_draws: int) -> dict:
    """Verdict codes and cheap tests of B replicates from each collection's (B x n) per-query
    differences to the comparator (see :func:`stability`)."""
    C, B = len(diffs), diffs[0].shape[0]
    means, var_means, p_coll = np.zeros((C, B)), np.zeros((C, B)), np.ones((C, B))
    null_macro = np.zeros((flips, B))
    for i in range(C):
        d = diffs[i]                                                            # (B, n)
        n = d.shape[1]
        means[i] = d.mean(axis=1)
        var_means[i] = d.var(axis=1) / n
        null = rng.choice(np.array([-1.0, 1.0]), size=(flips, n)) @ d.T / n     # (flips, B)
        null_macro += null
        hits = (np.abs(null) >= np.abs(means[i]) - 1e-15).sum(axis=0)
        zero = np.abs(d).max(axis=1) <= 1e-8
        p_coll[i] = np.where(zero, 1.0, (1 + hits) / (flips + 1))
    gain = means.mean(axis=0)
    hits = (np.abs(null_macro / C) >= np.abs(gain) - 1e-15).sum(axis=0)
    p_q = np.where(np.abs(means).max(axis=0) <= 1e-8, 1.0, (1 + hits) / (flips + 1))
    # as hierarchical_bootstrap: a collection drawn twice in one draw has the same query
    # resample (here: the same normal deviate) both times
    picks = rng.integers(0, C, size=(hb_draws, C))
    z = rng.standard_normal((hb_draws, C, B))[np.arange(hb_draws)[:, None], picks]
    boot = (means[picks] + np.sqrt(var_means[picks]) * z).mean(axis=1)          # (draws, B)
    p_c = np.minimum(1.0, 2 * np.minimum((boot <= 0).mean(axis=0), (boot >= 0).mean(axis=0)))
    p_c = np.where(np.abs(boot).max(axis=0) <= 1e-8, 1.0, p_c)
    p_holm = holm(p_coll.T).T                                                  # (C, B)
    loss = ((p_holm < ALPHA) & (means < 0)).any(axis=0)
    return {"code": verdict_code(gain, p_q, p_c, loss), "p_queries": p_q, "p_collections": p_c,
            "gain": gain, "means": means, "p_holm": p_holm}


def verdict_stability(deltas: Sequence[np.ndarray], code: int, *,
                      moved: Sequence[np.ndarray] | None = None,
                      n_resamples: int = STABILITY_RESAMPLES, seed: int = STABILITY_SEED,
                      noise_shift: float = NOISE_SHIFT, noise_share: float = NOISE_SHARE,
                      flips: int = STABILITY_FLIPS, hb_draws: int = STABILITY_HB_DRAWS) -> dict:
    """How often a verdict comes out the same when the *comparison* is perturbed and the
    choices are held fixed: ``deltas[c]``, per collection, the per-query differences of what
    was chosen (e.g. a per-query policy's LOCO choices) to its comparator; ``code`` the data's
    verdict. The two schemes of :func:`stability` with its cheap tests: ``bootstrap`` resamples
    each collection's queries; ``noise`` moves a share ``noise_share`` of them by the size of a
    CPU difference, ``N(0, 2 s^2)`` on a difference of two configurations (each moves by
    ``N(0, s^2)``, ``s = noise_shift * n / sqrt(m)``) and nothing where ``moved[c]`` is False
    (the query was fused with the comparator itself, so its difference stays 0). Returns what
    :func:`stability` does for the verdict (``share_supporting``, ``stability``, ``schemes``),
    for :func:`_stable_verdict`."""
    rng = np.random.default_rng(seed)
    deltas = [np.asarray(d, dtype=np.float64) for d in deltas]
    moved = [np.ones(len(d), bool) for d in deltas] if moved is None else [np.asarray(m, bool) for m in moved]
    B = int(n_resamples)
    schemes = {}
    for scheme in ("bootstrap", "noise"):
        diffs = []
        for d, mv in zip(deltas, moved, strict=True):
            n = len(d)
            if scheme == "bootstrap":
                diffs.append(d[rng.integers(0, n, size=(B, n))])
                continue
            m = min(n, max(1, int(np.ceil(noise_share * n))))
            cols = _random_subsets(rng, B, n, m)
            sd = noise_shift * n / np.sqrt(m) * np.sqrt(2.0)
            rep = np.repeat(d[None, :], B, axis=0)
            b = np.arange(B)[:, None]
            rep[b, cols] += rng.normal(0.0, sd, size=(B, m)) * mv[cols]
            diffs.append(rep)
        out = _diff_verdicts(diffs, rng, flips, hb_draws)
        counts = np.bincount(out["code"], minlength=3)
        schemes[scheme] = {
            "share_same_verdict": float(np.mean(out["code"] == code)),
            "share_supporting": {VERDICTS[0]: float(np.mean(out["code"] == 0)),
                                 VERDICTS[1]: float(np.mean(out["code"] <= 1)),
                                 VERDICTS[2]: float(np.mean(out["code"] == 2))},
            "verdict_counts": {VERDICTS[k]: int(counts[k]) for k in range(3)}}
    sup = {v: min(schemes[s]["share_supporting"][v] for s in schemes) for v in VERDICTS[:3]}
    return {"B": B, "seed": int(seed), "min_share": STABILITY_MIN,
            "share_same_verdict": min(schemes[s]["share_same_verdict"] for s in schemes),
            "share_supporting": sup, "stability": sup[VERDICTS[code]], "schemes": schemes,
            "held_fixed": "the choices (each fold's policy and static default, fitted on the "
                          "real training data): only the evaluation comparison is resampled "
                          "or perturbed, since refitting every fold's policy per replicate "
                          "would cost B times the whole LOCO",
            "rule": f"stability = the share of replicates supporting the data's verdict (the "
                    f"same verdict, or for '{VERDICTS[1]}' also '{VERDICTS[0]}'), the smaller "
                    f"of the two schemes' shares; below {STABILITY_MIN:.0%} a '{VERDICTS[0]}' "
                    f"verdict becomes '{VERDICTS[1]}' when that has {STABILITY_MIN:.0%} support, "
                    f"otherwise the verdict is '{VERDICTS[3]}' and the default stays",
            "tests": f"sign-flip tests with {flips} flips on each replicate's queries (per "
                     f"collection with Holm, and of the macro mean); hierarchical bootstrap "
                     f"with {hb_draws} draws of collections, its query level the normal "
                     "approximation of each collection's query-bootstrap mean"}


def stability(colls: Sequence[CollectionData], objective: str = "macro", rule: str = DEFAULT_RULE,
              distances: np.ndarray | None = None, *, neighbours=None,
              reference: dict | None = None,
              labels: Sequence[str] | None = None, family_of: np.ndarray | None = None,
              n_resamples: int = STABILITY_RESAMPLES, seed: int = STABILITY_SEED,
              noise_shift: float = NOISE_SHIFT, noise_share: float = NOISE_SHARE,
              flips: int = STABILITY_FLIPS, hb_draws: int = STABILITY_HB_DRAWS) -> dict:
    """How often selection and verdict come out the same on perturbed data.

    Two schemes, ``n_resamples`` replicates each, one ``numpy`` generator seeded ``seed``:

    * ``bootstrap``: the queries of each collection resampled with replacement (tuning and
      evaluation queries separately; the same draw when a collection tunes and evaluates on
      one split), the same resample for every configuration and the default;
    * ``noise``: on each collection a share ``noise_share`` of the queries (at least one, drawn
      per replicate) changes value by independent N(0, s^2) per configuration and query (the
      default too), ``s = noise_shift * n / sqrt(m)`` for m changed queries of n, so each
      configuration's mean on the collection moves by N(0, noise_shift^2): a CPU difference in
      the dense encoder moves a mean by about 0.001 through a few queries whose near-tied
      documents swap. Independent across configurations: a worst case for near-ties (real
      changes move similar configurations together). Values are not clipped to [0, 1].

    Each replicate redoes LOCO selection (``objective``, ``rule``), the selection on all
    collections and the verdict, with cheaper tests than the real ones: sign-flip tests (per
    collection, Holm over them, and of the macro mean) with ``flips`` sign flips instead of
    10000, on the replicate's own queries; and a hierarchical bootstrap with ``hb_draws``
    draws of collections whose query level is the normal approximation of each collection's
    query-bootstrap mean. ``reference``: {"code": verdict index, "config": index selected on
    all collections, "loco": LOCO indices, "outcomes": win/tie/loss per collection} of the real
    data (without it: the cheap tests on the data). Returns a JSON-ready dict; the
    ``share_same_*`` at the top and under ``per_collection`` are the smaller of the two
    schemes' shares.
    """
    G = colls[0].T.shape[0]
    dist = np.zeros(G) if distances is None else np.asarray(distances, dtype=np.float64)
    rng = np.random.default_rng(seed)
    data = _replicate_outcomes(colls, _draw("data", colls, 1, None, 0, 0), objective, rule, dist,
                               rng, flips, hb_draws, neighbours)
    cheap_out = [_sig(p, d) for p, d in zip(data["p_holm"][:, 0], data["means"][:, 0],
                                            strict=True)]
    ref = reference or {"code": int(data["code"][0]), "config": int(data["full"][0]),
                        "loco": list(data["loco"][:, 0]), "outcomes": cheap_out}
    code, idx_all, loco_idx = ref["code"], ref["config"], np.asarray(ref["loco"])
    ref_sign = np.array([{"win": 1, "loss": -1, "tie": 0}[o] for o in ref["outcomes"]])
    schemes, per_coll = {}, {c.name: {} for c in colls}
    for scheme in ("bootstrap", "noise"):
        reps = _draw(scheme, colls, n_resamples, rng, noise_shift, noise_share)
        out = _replicate_outcomes(colls, reps, objective, rule, dist, rng, flips, hb_draws,
                                  neighbours)
        outcome = np.where(out["p_holm"] < ALPHA, np.sign(out["means"]), 0)   # (C, B)
        for i, c in enumerate(colls):
            pc = per_coll[c.name]
            for key, v in (("share_same_selection", np.mean(out["loco"][i] == loco_idx[i])),
                           ("share_same_outcome", np.mean(outcome[i] == ref_sign[i]))):
                pc[key] = min(pc.get(key, 1.0), float(v))
        counts = np.bincount(out["code"], minlength=3)
        picks, freq = np.unique(out["full"], return_counts=True)
        top = np.argsort(-freq, kind="stable")[:3]
        row = {"share_same_verdict": float(np.mean(out["code"] == code)),
               "share_supporting": {VERDICTS[0]: float(np.mean(out["code"] == 0)),
                                    VERDICTS[1]: float(np.mean(out["code"] <= 1)),
                                    VERDICTS[2]: float(np.mean(out["code"] == 2))},
               "share_same_config": float(np.mean(out["full"] == idx_all)),
               "share_same_loco_selection": float(np.mean(out["loco"] == loco_idx[:, None])),
               "verdict_counts": {VERDICTS[k]: int(counts[k]) for k in range(3)},
               "most_selected": [{"label": labels[picks[t]] if labels else int(picks[t]),
                                  "share": float(freq[t] / n_resamples)} for t in top]}
        if family_of is not None:
            row["share_same_family"] = float(np.mean(family_of[out["full"]]
                                                     == family_of[idx_all]))
        schemes[scheme] = row
    res = {"B": int(n_resamples), "seed": int(seed), "min_share": STABILITY_MIN}
    for key in ("share_same_verdict", "share_same_config", "share_same_loco_selection",
                "share_same_family"):
        if key in schemes["bootstrap"]:
            res[key] = min(schemes[s][key] for s in schemes)
    res["share_supporting"] = {v: min(schemes[s]["share_supporting"][v] for s in schemes)
                               for v in VERDICTS[:3]}
    res["stability"] = res["share_supporting"][VERDICTS[code]]
    res |= {
        "rule": f"stability = the share of replicates supporting the data's verdict (the same "
                f"verdict, or for '{VERDICTS[1]}' also '{VERDICTS[0]}'), the smaller of the two "
                f"schemes' shares; below {STABILITY_MIN:.0%} a '{VERDICTS[0]}' verdict becomes "
                f"'{VERDICTS[1]}' when that has {STABILITY_MIN:.0%} support, otherwise the "
                f"verdict is '{VERDICTS[3]}' and the default stays",
        "schemes": schemes,
        "perturbation": {
            "bootstrap": "bootstrap of the queries within each collection (tuning and "
                         "evaluation queries separately, one draw when one split serves both), "
                         "the same resample for every configuration and the default",
            "noise": f"per collection {noise_share:.0%} of the queries (at least one, drawn "
                     "per replicate) change by independent N(0, s^2) for every configuration "
                     f"and the default, s = {noise_shift} * n / sqrt(m) (m changed of n "
                     f"queries): each configuration's mean moves by N(0, {noise_shift}^2), the "
                     "size of a CPU difference in the dense encoder; independent across "
                     "configurations (a worst case for near-ties); not clipped to [0, 1]"},
        "tests": f"sign-flip tests with {flips} flips (not 10000) on each replicate's queries: "
                 "per collection (Holm over them) and of the macro mean; hierarchical "
                 f"bootstrap with {hb_draws} draws of collections, its query level the normal "
                 "approximation of each collection's query-bootstrap mean",
        "per_collection": per_coll,
        "cheap_tests_on_data": {"verdict": VERDICTS[int(data["code"][0])],
                                "agrees": bool(int(data["code"][0]) == code),
                                "outcomes": cheap_out,
                                "p_value_queries": float(data["p_queries"][0]),
                                "p_value_collections": float(data["p_collections"][0])},
    }
    return res
