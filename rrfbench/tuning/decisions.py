"""The recommendation: take the change or keep the default, by a rule graded on its own record.

Every decision rrfbench makes across collections has one shape: a *change* (free fusion's
selected configuration, a studied system's tuned knobs, a per-query policy) against a *default*
(RRF k=60 with equal weights, the shipped knobs, the static default). Leave-one-collection-out
(LOCO) gives the :class:`Evidence`: per collection, the per-query differences between the change
chosen *without* that collection and the default, on its evaluation queries. A rule reads the
evidence and answers one bit. The question a user asks is not "is the gain significant?" but
"which constants lose least on my next collection?", so the rules are graded by that.

Rules (:data:`RULES`, simplest first; ``g_c`` is the LOCO gain on collection c, ``C`` the
number of collections):

* ``always``: take the change, whatever the evidence.
* ``mean``: take the change when its mean LOCO gain over the collections is positive (the
  expected-value choice, no allowance for uncertainty; added after the first grading of the
  nine English collections, where ``always`` and ``noninferiority`` tied at four decimals: it
  is the rule both refine, one by ignoring the evidence, the other by asking for a bound).
* ``minimax``: minimax regret over the collections: take the change when its largest loss
  (``max_c -g_c``, at least 0) is smaller than the largest gain the default would give up
  (``max_c g_c``, at least 0).
* ``shrinkage``: shrink the mean gain toward the default (0) by a James-Stein-type factor
  ``max(0, 1 - se^2 / mean^2)`` (``se``: the standard error of the mean over collections);
  take the change when the shrunk gain is positive, i.e. the mean gain is positive and larger
  than its standard error across collections.
* ``noninferiority``: take the change when the mean gain is positive and the one-sided 95% lower
  bound of the macro gain (hierarchical bootstrap: collections, then queries) is above
  ``-MARGIN``: with 95% confidence the change costs at most :data:`MARGIN`.
* ``significance``: the verdict of :mod:`rrfbench.tuning.verdicts` (significant over queries, Holm per
  collection, the stability check) is *transfers* or *likely transfers*.

**Grading** (:func:`grade`, nested LOCO): for each collection c the whole pipeline (selection,
LOCO evidence, every rule's decision) runs on the *other* collections only (:class:`Fold`); the
decision is then scored on c against the better of the two options there, the default and the
change selected without c. Per rule: the mean **regret** (the better option's value minus the
chosen one's; 0 when the rule chose the better), the share of collections where its choice was
the better one (ties count as right), its worst regret and its worst loss against the default.
The **cost** of a decision is its regret with a shipped loss counted twice: ``regret +
LOSS_AVERSION * max(0, default - chosen)`` (:data:`LOSS_AVERSION` = 1). Declining a gain costs
the gain; taking a change that loses against the default costs the loss and as much again: the
user runs it in production, where a regression is worse than a missed improvement (what the
advice is for: beat RRF k=60 when the evidence says so, never recommend a studied system's
change that loses against its shipped constants). Loss aversion of about 2 is the usual measured figure (Tversky & Kahneman 1992:
2.25). :func:`choose_rule` takes the lowest mean cost over every decision graded (each family's
collections pooled), the simpler rule on a tie at four decimals; :func:`choice_by_loss_aversion`
shows which rule wins at other weights (0 = plain regret).

History (disclosed, since the criterion was revised after seeing a grading): by plain regret
over the 90 decisions of the nine English collections ``always`` was lowest (0.0030, then
``noninferiority`` 0.0035), and it recommended three per-query policies whose own expected gain
was negative and titan constants that lost on four of nine left-out collections. Plain regret
also flatters ``always`` where the true gain is near 0: leaving collection c out moves the
others' mean against c's own gain (``mean_{-c} = (C mean - g_c) / (C - 1)``), so a rule that
reads the mean declines exactly where c gains and takes where c loses (titan's ``mean``: right
on 1 of 9). With shipped losses counted twice ``noninferiority`` is lowest (0.0051 vs ``always``
0.0060); it stays lowest for any loss aversion above about 0.4. The fifteen engine modes
(:mod:`rrfbench.systems.engines`) are graded the same way but not pooled: on them ``always`` costs least
(0.0071 vs 0.0112), by the same leave-one-out effect (README: "Where the grading disagrees with
itself").

A rule that reads the collection it is graded on would look better than it is; :func:`grade`
only hands a rule the fold's evidence, and ``tests/tuning/test_decisions.py`` shows a leaking rule is
caught.

Called from: ``adaptive.validation``, ``outputs.report``, ``tuning.advice``,
``tuning.transfer``, ``workflows.suite``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..core.errors import InputError, choice
from ..core.stats import hierarchical_bootstrap

RULES = ("always", "mean", "minimax", "shrinkage", "noninferiority", "significance")
# Chosen by measurement (results/transfer/en/advice.json): graded by nested LOCO on the nine
# English collections over all ten decisions rrfbench makes there (free fusion, four studied
# systems, five adaptive policies: 90 decisions), mean cost (regret, shipped losses counted
# twice) per decision was noninferiority 0.0051, shrinkage 0.0054, always 0.0060, mean 0.0067,
# minimax 0.0066, significance 0.0105 (plain regret: always 0.0030, noninferiority 0.0035).
# :func:`choose_rule` recomputes the choice on every suite and the advice says when a suite's
# grading disagrees with this one (a test checks the committed suite agrees).
DEFAULT_DECISION = "noninferiority"
LOSS_AVERSION = 1.0     # a shipped loss costs (1 + this) times a declined gain of the same size
MARGIN = 0.005          # non-inferiority margin (nDCG@10 points), the regression gate's margin
MIN_COLLECTIONS = 3     # grading needs LOCO inside each fold: at least two collections remain
TIE_DECIMALS = 4        # mean regrets equal at this many decimals are a tie (the simpler wins)
RIGHT_TOL = 1e-12

RULE_TEXT = {
    "always": "always take the change (the selection), whatever the evidence",
    "mean": "take the change when its mean LOCO gain over the collections is positive (the "
            "expected-value choice)",
    "minimax": "minimax regret over collections: take the change when its largest LOCO loss "
               "on a collection is smaller than the largest LOCO gain the default gives up",
    "shrinkage": "take the change when its mean LOCO gain, shrunk toward the default by the "
                 "factor max(0, 1 - se^2 / mean^2) (se: standard error over collections), is "
                 "positive, i.e. the mean gain exceeds one standard error across collections",
    "noninferiority": f"take the change when its mean LOCO gain is positive and the one-sided "
                      f"95% lower bound of the macro gain (hierarchical bootstrap) is above "
                      f"-{MARGIN}",
    "significance": "take the change when the significance verdict is 'transfers' or 'likely "
                    "transfers' (sign flips over queries, Holm per collection, hierarchical "
                    "bootstrap over collections, stability at least 80%)",
}


def check_rule(rule: str) -> str:
    if rule not in RULES:
        raise choice("--decision", rule, RULES)
    return rule


@dataclass(frozen=True)
class Evidence:
    """What a rule may read: per collection, the per-query differences (change chosen without
    the collection) - (default) on its evaluation queries, and whether the significance verdict
    on these collections supports the change (computed by the caller, who holds the matrices
    its stability check resamples)."""

    names: tuple
    deltas: tuple
    significant: bool = False

    @property
    def gains(self) -> np.ndarray:
        """The LOCO gain of each collection (mean per-query difference)."""
        return np.array([float(np.mean(d)) for d in self.deltas])


def _always(ev: Evidence) -> bool:
    return True


def _mean(ev: Evidence) -> bool:
    return bool(float(ev.gains.mean()) > 0)


def _minimax(ev: Evidence) -> bool:
    g = ev.gains
    return bool(max(0.0, float((-g).max())) < max(0.0, float(g.max())))


def _shrinkage(ev: Evidence) -> bool:
    g = ev.gains
    mean = float(g.mean())
    if len(g) < 2 or mean <= 0:
        return False
    se2 = float(g.var(ddof=1)) / len(g)
    return 1.0 - se2 / (mean * mean) > 0


def _noninferiority(ev: Evidence) -> bool:
    if float(ev.gains.mean()) <= 0:
        return False
    lo = hierarchical_bootstrap(list(ev.deltas), alpha=0.10)["ci95"][0]   # one-sided 95%
    return bool(lo > -MARGIN)


def _significance(ev: Evidence) -> bool:
    return bool(ev.significant)


DECIDE: dict[str, Callable[[Evidence], bool]] = {
    "always": _always, "mean": _mean, "minimax": _minimax, "shrinkage": _shrinkage,
    "noninferiority": _noninferiority, "significance": _significance}


def decide(rule: str, evidence: Evidence) -> bool:
    """True: the rule takes the change; False: it keeps the default."""
    return DECIDE[check_rule(rule)](evidence)


@dataclass(frozen=True)
class Fold:
    """One left-out collection of the nested grading: the evidence from the *other*
    collections, and on the left-out collection's evaluation queries the per-query values of
    the change selected on the others and of the default."""

    collection: str
    evidence: Evidence
    change: np.ndarray
    default: np.ndarray


def grade(folds: Sequence[Fold], rules: Sequence[str] = RULES,
          decide_fn: Callable[[str, Evidence, Fold], bool] | None = None) -> dict:
    """Every rule's decisions scored on the collections they never saw (module docstring).

    ``decide_fn(rule, evidence, fold)`` overrides :func:`decide` (a test hands it a rule that
    peeks at the fold, to show the grading catches a leak). Returns a JSON-ready dict:
    ``folds`` (per left-out collection the two options' values), ``rules`` (per rule its
    decisions and figures) and ``best`` (the lowest mean cost, :func:`choose_rule`)."""
    if len(folds) < MIN_COLLECTIONS:
        raise InputError(f"grading decision rules needs at least {MIN_COLLECTIONS} collections "
                         f"(got {len(folds)})")
    rows = []
    for f in folds:
        vc, vd = float(np.mean(f.change)), float(np.mean(f.default))
        rows.append({"collection": f.collection, "change": vc, "default": vd,
                     "better": "change" if vc > vd + RIGHT_TOL else
                     "default" if vd > vc + RIGHT_TOL else "tie"})
    out = {}
    for rule in rules:
        check_rule(rule)
        per = {}
        for f, r in zip(folds, rows, strict=True):
            took = bool(decide_fn(rule, f.evidence, f) if decide_fn else decide(rule, f.evidence))
            chosen = r["change"] if took else r["default"]
            regret = max(r["change"], r["default"]) - chosen
            d = {"took_change": took, "value": chosen, "regret": regret,
                 "vs_default": chosen - r["default"], "right": bool(regret <= RIGHT_TOL)}
            d["cost"] = cost(d)
            per[f.collection] = d
        out[rule] = _figures(per)
    return {"folds": rows, "rules": out, "best": choose_rule({"": out})}


def cost(d: Mapping, loss_aversion: float = LOSS_AVERSION) -> float:
    """A graded decision's cost: its regret, plus ``loss_aversion`` times what it lost against
    the default (only a change that was taken can lose; module docstring)."""
    return float(d["regret"]) + loss_aversion * max(0.0, -float(d["vs_default"]))


def _figures(per: Mapping[str, dict]) -> dict:
    """A rule's figures over its graded decisions ``per`` (collection -> decision)."""
    reg = np.array([p["regret"] for p in per.values()])
    vs = np.array([p["vs_default"] for p in per.values()])
    right = sum(p["right"] for p in per.values())
    return {"mean_cost": float(np.mean([cost(p) for p in per.values()])),
            "shipped_losses": int(sum(p["took_change"] and p["vs_default"] < -RIGHT_TOL
                                      for p in per.values())),
            "mean_regret": float(reg.mean()), "right": int(right), "n": len(per),
            "share_right": right / len(per), "worst_regret": float(reg.max()),
            "worst_vs_default": float(vs.min()), "mean_vs_default": float(vs.mean()),
            "took_change": int(sum(p["took_change"] for p in per.values())),
            "per_collection": dict(per)}


def pool(gradings: Mapping[str, dict]) -> dict:
    """Each rule's figures over every family's graded decisions together (``gradings``:
    family -> :func:`grade`'s result): what :func:`choose_rule` reads."""
    out = {}
    for rule in RULES:
        per = {f"{fam}/{c}": d for fam, g in gradings.items() if rule in g.get("rules", {})
               for c, d in g["rules"][rule]["per_collection"].items()}
        if per:
            out[rule] = _figures(per)
    return out


def choose_rule(tables: Mapping[str, Mapping[str, dict]],
                loss_aversion: float = LOSS_AVERSION) -> str:
    """The rule with the lowest mean :func:`cost` over every decision in ``tables`` (family ->
    rule -> figures with ``per_collection``), the simpler one (earlier in :data:`RULES`) when
    the mean costs are equal at :data:`TIE_DECIMALS` decimals. ``loss_aversion=0``: plain
    regret."""
    costs = {}
    for rule in RULES:
        vals = [cost(d, loss_aversion) for t in tables.values() if rule in t
                for d in t[rule]["per_collection"].values()]
        if vals:
            costs[rule] = round(float(np.mean(vals)), TIE_DECIMALS)
    if not costs:
        raise InputError("no graded decisions to choose a rule from")
    low = min(costs.values())
    return next(r for r in RULES if costs.get(r) == low)


LOSS_AVERSIONS = (0.0, 0.25, 0.5, 1.0, 1.5, 2.0)


def choice_by_loss_aversion(tables: Mapping[str, Mapping[str, dict]],
                            weights: Sequence[float] = LOSS_AVERSIONS) -> dict:
    """Which rule :func:`choose_rule` picks at each loss aversion in ``weights`` (0: plain
    regret): how much the choice hangs on the weight a shipped loss gets."""
    return {f"{w:g}": choose_rule(tables, w) for w in weights}


def track_record(grading: Mapping, rule: str) -> dict:
    """How often ``rule``'s advice was right on this family's left-out collections."""
    g = grading["rules"][rule]
    return {"rule": rule, "right": g["right"], "of": g["n"], "mean_regret": g["mean_regret"],
            "worst_regret": g["worst_regret"]}


def expected_gain(deltas: Sequence[np.ndarray]) -> dict:
    """The change's LOCO macro gain with the 95% interval of the mean over collections
    (hierarchical bootstrap) and a 95% prediction interval for one new collection (normal,
    ``mean +- t_{C-1} sd sqrt(1 + 1/C)`` over the collections' gains)."""
    from scipy.stats import t as student_t

    g = np.array([float(np.mean(d)) for d in deltas])
    hb = hierarchical_bootstrap(list(deltas))
    C = len(g)
    half = (float(student_t.ppf(0.975, C - 1)) * float(g.std(ddof=1)) * np.sqrt(1 + 1 / C)
            if C > 1 else float("nan"))
    return {"value": float(g.mean()), "ci95": [float(x) for x in hb["ci95"]],
            "prediction95": [float(g.mean() - half), float(g.mean() + half)],
            "collections": int(C)}


def decision_record(rule: str, evidence: Evidence, deltas: Sequence[np.ndarray],
                    grading: Mapping | None, verdict: str) -> dict:
    """What a result stores about its recommendation: the rule, its answer, the expected gain
    of the change (and of the recommendation: 0 when the default stays), the rule's track
    record on this family and the whole grading (or why there is none)."""
    take = decide(rule, evidence)
    gain = expected_gain(deltas)
    rec = {"rule": rule, "rule_text": RULE_TEXT[rule], "take_change": take,
           "change_gain": gain,
           "recommended_gain": gain if take else {"value": 0.0, "ci95": [0.0, 0.0],
                                                  "prediction95": [0.0, 0.0],
                                                  "collections": gain["collections"]},
           "significance_verdict": verdict,
           "rules_answer": {r: decide(r, evidence) for r in RULES}}
    if grading is None or "refused" in (grading or {}):
        rec["grading"] = grading or {"refused": f"need at least {MIN_COLLECTIONS} collections"}
        return rec
    rec["grading"] = dict(grading)
    rec["track_record"] = track_record(grading, rule)
    return rec


def leak_check(build: Callable[[int | None], Sequence[Fold]], n: int,
               decide_fn: Callable[[str, Evidence, Fold], bool] | None = None) -> list[str]:
    """Problems found by changing one collection at a time: ``build(i)`` makes the folds with
    collection i's values perturbed (``None``: as they are). Fold i must not notice: its
    evidence (collections and per-query differences) and every rule's decision must stay the
    same, since neither may read the collection the fold is graded on. An empty list: no leak.
    ``decide_fn`` as in :func:`grade`."""
    def decisions(f: Fold) -> dict:
        return {r: bool(decide_fn(r, f.evidence, f) if decide_fn else decide(r, f.evidence))
                for r in RULES}

    base = {f.collection: f for f in build(None)}
    problems = []
    for i in range(n):
        f = list(build(i))[i]
        b = base[f.collection]
        if f.collection in f.evidence.names:
            problems.append(f"{f.collection}: its fold's evidence includes it")
        same = (b.evidence.names == f.evidence.names
                and all(np.array_equal(x, y) for x, y in zip(b.evidence.deltas,
                                                             f.evidence.deltas, strict=True))
                and b.evidence.significant == f.evidence.significant)
        if not same:
            problems.append(f"{f.collection}: changing it changes its own fold's evidence")
        changed = [r for r, v in decisions(b).items() if decisions(f)[r] != v]
        if same and changed:
            problems.append(f"{f.collection}: changing it changes the decision of "
                            f"{', '.join(changed)} although the evidence is the same")
    return problems


def refused(n: int) -> dict | None:
    """``None`` when ``n`` collections can be graded, else the refusal recorded instead."""
    if n >= MIN_COLLECTIONS:
        return None
    return {"refused": f"need at least {MIN_COLLECTIONS} collections to grade decision rules "
                       f"(this suite has {n}); the selection is still reported"}
