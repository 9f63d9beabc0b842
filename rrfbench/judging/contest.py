"""More than two candidates: the suite's decision first, then each alternative challenges it.

A :class:`Contest` holds the candidates' fused runs in order (the current constants, the
suite's change, then a few strong alternatives from the suite's leave-one-collection-out
evidence) and their priors (:class:`~rrfbench.judging.decide.Prior`: each one's nDCG@10 gain
over the current constants on the other collections). It is decided as a chain of the
two-candidate decisions of :mod:`rrfbench.judging.decide`, so that one rule, stated once, makes
every step:

1. the current constants against the suite's change: :func:`~rrfbench.judging.decide.decide`
   (the suite's advice with no informative judgment, then the posterior);
2. every alternative, in the order of its prior, against the winner so far: the judged
   difference ``alternative - winner`` (only the documents the two rank differently), with the
   prior ``N(prior_alt - prior_winner, sd_alt^2 + sd_winner^2)``; the alternative wins when its
   MTC bounds settle above 0 or the posterior puts 95% on it being better (mean above
   ``Z_STOP`` = 1.645 standard deviations: the stopping rule's own margin). With no informative
   judgment on that pair the winner stays: an alternative is never taken on the suite's
   evidence alone (the suite's advice is the change; the alternatives are there for the
   judgments to find). Why a margin, where the first step needs only the sign: several
   alternatives close to the winner would otherwise be taken on noise (simulated on scifact,
   "posterior difference +0.0006" switched to an alternative 0.005 nDCG@10 worse), and a
   candidate the suite did not choose should need the judgments' confirmation.

What to judge (:meth:`Contest.order`): every comparison the chain can make (current-change,
current-alternative, change-alternative), each pair at the largest weight any comparison gives
it (MTC: ``|disc_a - disc_b|``); with two candidates this is exactly
:func:`~rrfbench.judging.decide.order_pairs`.

The sampled design (``method="sample"``, the default; :mod:`rrfbench.judging.sampling`): the
judgments are a probability sample, and every comparison is estimated without bias from it.

* What to judge (:meth:`Contest.order` with a budget): first the current constants against
  the suite's change (phase 1: priority sampling of that comparison's pairs), up to
  :data:`MAIN_SHARE` of the budget, then the alternatives (phase 2: one priority sample over
  the pairs of every comparison an alternative takes part in), the pairs phase 1 already judged
  reused for free. A pair's weight is what its grade can move (``|delta|``, the largest over
  the phase's comparisons) times the square root of a relevance prior, the best DCG discount
  any candidate gives it (Schnabel et al. 2016: the variance is smallest when pairs are sampled
  in proportion to the square root of ``E[(grade * delta)^2]``; a document ranked high is more
  often relevant). The share, 1/2, was set before any grading table was computed: the
  question the suite's advice answers gets as many judgments as every alternative together.
* The rule (:meth:`Contest.bounded_verdict`): the suite's advice stands unless the judgments
  contradict it. The change replaces the current constants only when the unbiased estimate's
  one-sided 95% bound is above 0 (and the advice's change is given up only when its bound is
  below 0, which cannot lose against the current constants); an alternative is taken only when
  its bound is above 0 both against the current constants and against the decision so far,
  at ``z`` Bonferroni-corrected for the number of alternatives. A settled MTC bound (a proof)
  decides the first question. A decision that is not the advice's thus needs evidence that it
  does not lose; how often that still goes wrong is measured (``rrfbench judge --simulate
  --all``).

Called from: ``workflows.judge`` (the simulation), ``workflows.judging_session`` and tests.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from statistics import NormalDist

import numpy as np
import pandas as pd

from ..core.runs import Run
from .decide import (
    Z_STOP,
    Estimate,
    Pairs,
    Prior,
    decide,
    estimate,
    order_pairs,
    pairs,
    posterior,
    stop,
)
from .sampling import HTEstimate, ht_estimate, priority_order

MAIN_SHARE = 0.5      # of a budget, spent on the current constants vs the change first
Z_BOUND = 1.645       # one-sided 95%: what leaving the advice needs (the sampled rule)
DISC_POWER = 0.5      # weight = |delta| * disc ** DISC_POWER (see the module docstring)


def difference_prior(a: Prior | None, b: Prior | None) -> Prior | None:
    """The prior of ``a - b`` (``None`` stands for the current constants: a gain of 0)."""
    if a is None:
        return None
    if b is None:
        return a
    sd = float(np.hypot(a.predictive_sd, b.predictive_sd))
    n = min(a.n, b.n)
    return Prior(a.mean - b.mean, sd / float(np.sqrt(1.0 + 1.0 / max(n, 1))), n,
                 f"{a.source} minus {b.source}")


@dataclass
class Contest:
    """The candidates (``runs``: label -> fused run, in order: current, change, alternatives),
    their priors (label -> :class:`Prior` of the gain over the current constants; none for the
    current constants) and the suite's own decision between the first two (``prior_take``)."""

    runs: dict[str, Run]
    priors: dict[str, Prior]
    prior_take: bool
    queries: Sequence[str]
    _pairs: dict = field(default_factory=dict, repr=False)

    def __post_init__(self):
        self.labels = list(self.runs)
        if len(self.labels) < 2:
            raise ValueError("a contest needs the current constants and at least one change")
        self.queries = tuple(map(str, self.queries))

    @property
    def current(self) -> str:
        return self.labels[0]

    @property
    def change(self) -> str:
        return self.labels[1]

    @property
    def alternatives(self) -> list[str]:
        return self.labels[2:]

    def comparison(self, a: str, b: str) -> Pairs:
        """The pairs of ``b`` against ``a`` (``delta`` = disc_b - disc_a), computed once."""
        if (a, b) not in self._pairs:
            self._pairs[(a, b)] = pairs(self.runs[a], self.runs[b], self.queries)
        return self._pairs[(a, b)]

    @property
    def main(self) -> Pairs:
        return self.comparison(self.current, self.change)

    def comparisons(self) -> list[Pairs]:
        return [self.comparison(a, b) for a, b in self._comparison_labels()]

    def _comparison_labels(self) -> list[tuple[str, str]]:
        out = [(self.current, self.change)]
        for alt in self.alternatives:
            out += [(self.current, alt), (self.change, alt)]
        return out

    def _short(self, label: str) -> str:
        if label == self.current:
            return "current"
        if label == self.change:
            return "change"
        return f"alternative {self.alternatives.index(label) + 1}"

    def order(self, method: str = "sample", seed: int = 0,
              budget: int | None = None) -> pd.DataFrame:
        """The pairs to judge, in order (see the module docstring): each pair once. ``sample``:
        the sampled design's queue for ``budget`` judgments (default: every pair)."""
        if method == "sample":
            return self.sample_queue(budget, seed)
        if not self.alternatives:
            return order_pairs(self.main, method, seed)
        parts = []
        for a, b in self._comparison_labels():
            part = order_pairs(self.comparison(a, b), method, seed)
            tag = f" [{self._short(a)} vs {self._short(b)}]"  # a list: an empty part's why is float
            parts.append(part.assign(why=[f"{w}{tag}" for w in part.why]))
        t = pd.concat(parts, ignore_index=True)
        if method == "mtc":
            t = t.assign(w=t.delta.abs()).sort_values(
                ["w", "qid", "docid"], ascending=[False, True, True], kind="mergesort")
            t = t.drop(columns="w")
        elif method == "pool":
            best = np.minimum(np.where(t.rank_current > 0, t.rank_current, 99),
                              np.where(t.rank_change > 0, t.rank_change, 99))
            t = t.assign(best=best).sort_values(["best", "qid", "docid"], kind="mergesort")
            t = t.drop(columns="best")
        else:
            t = t.drop_duplicates(["qid", "docid"]).sample(frac=1.0, random_state=seed)
        return t.drop_duplicates(["qid", "docid"]).reset_index(drop=True)

    # ------------------------------------------------------------------ the sampled design
    def _union(self) -> pd.DataFrame:
        """Every pair any comparison ranks in a top 10: one delta column per comparison
        (``a|b``: disc_b - disc_a, 0 where that comparison does not have the pair) and
        ``disc``, the best discount any candidate gives it (the relevance prior)."""
        if "union" not in self._pairs:
            parts, discs = [], []
            for a, b in self._comparison_labels():
                t = self.comparison(a, b).table
                parts.append(t[["qid", "docid", "delta"]].assign(col=f"{a}|{b}"))
                for col in ("rank_current", "rank_change"):
                    r = t[col].to_numpy()
                    discs.append(pd.DataFrame({"qid": t.qid, "docid": t.docid, "disc": np.where(
                        r > 0, 1.0 / np.log2(np.maximum(r, 1) + 1.0), 0.0)}))
            t = pd.concat(parts, ignore_index=True)
            wide = t.pivot_table(index=["qid", "docid"], columns="col", values="delta",
                                 aggfunc="first", fill_value=0.0)
            wide.columns.name = None
            disc = pd.concat(discs, ignore_index=True).groupby(["qid", "docid"]).disc.max()
            wide["disc"] = disc.reindex(wide.index).fillna(0.0).to_numpy()
            self._pairs["union"] = wide.reset_index()
        return self._pairs["union"]

    def _cols(self, phase: int) -> list[str]:
        labels = self._comparison_labels()
        return [f"{a}|{b}" for a, b in (labels[:1] if phase == 1 else labels[1:])]

    def phase_order(self, phase: int, seed: int = 0) -> pd.DataFrame:
        """Phase 1 (current vs change) or 2 (the alternatives' comparisons): the union's pairs
        that matter there, in priority order (:func:`~rrfbench.judging.sampling.priority_order`,
        weight ``max |delta| * sqrt(disc)``)."""
        key = ("phase", phase, seed)
        if key not in self._pairs:
            u = self._union()
            w = (u[self._cols(phase)].abs().max(axis=1).to_numpy()
                 * u["disc"].to_numpy() ** DISC_POWER)
            self._pairs[key] = priority_order(u.assign(w=w), "w", f"{seed}:{phase}")
        return self._pairs[key]

    def sample_queue(self, budget: int | None = None, seed: int = 0) -> pd.DataFrame:
        """The sampled design's queue (see the module docstring): phase 1's first
        ``MAIN_SHARE * budget`` pairs, then phase 2's pairs not yet in the queue, then the rest
        of phase 1; columns qid, docid, why."""
        p1 = self.phase_order(1, seed)
        p2 = self.phase_order(2, seed) if self.alternatives else p1.iloc[:0]
        if budget is None:
            budget = len(pd.concat([p1[["qid", "docid"]], p2[["qid", "docid"]]])
                         .drop_duplicates())
        n1 = len(p1) if not self.alternatives else min(len(p1), math.ceil(MAIN_SHARE * budget))
        why1 = [f"sample, phase 1 (current vs change): priority {p:.3g}" for p in p1.priority]
        why2 = [f"sample, phase 2 (alternatives): priority {p:.3g}" for p in p2.priority]
        q = pd.concat([p1.iloc[:n1].assign(why=why1[:n1]), p2.assign(why=why2),
                       p1.iloc[n1:].assign(why=why1[n1:])], ignore_index=True)
        q = q.drop_duplicates(["qid", "docid"])
        return q[["qid", "docid", "why"]].reset_index(drop=True)

    def sampled_estimate(self, a: str, b: str, grades: Mapping[tuple[str, str], int],
                         max_grade: int, seed: int = 0) -> HTEstimate:
        """The unbiased estimate of the mean DCG@10 difference ``b - a`` over the queries, from
        the phase whose design covers that comparison."""
        col, sign = f"{a}|{b}", 1.0
        if col not in self._union().columns:     # the reverse comparison is the one stored
            col, sign = f"{b}|{a}", -1.0
        phase = 1 if col in self._cols(1) else 2
        order = self.phase_order(phase, seed)
        return ht_estimate(order, sign * order[col].to_numpy(), grades, len(self.queries),
                           max_grade)

    def verdict(self, grades: Mapping[tuple[str, str], int], max_grade: int,
                method: str = "mtc") -> Verdict:
        """The decision from ``grades``: the sampled design's bounded rule for ``sample``
        (:meth:`bounded_verdict`), the posterior chain for the baselines' selection methods
        (:meth:`chain_verdict`; see the module docstring)."""
        if method == "sample":
            return self.bounded_verdict(grades, max_grade)
        return self.chain_verdict(grades, max_grade)

    def bounded_verdict(self, grades: Mapping[tuple[str, str], int], max_grade: int,
                        z: float = Z_BOUND) -> Verdict:
        """The suite's advice unless the unbiased estimates contradict it (see the module
        docstring)."""
        main_est = estimate(self.main, grades, max_grade) if grades else None
        main_prior = self.priors.get(self.change)
        ht = self.sampled_estimate(self.current, self.change, grades, max_grade)
        take = self.prior_take
        if main_est is not None and main_est.settled:
            take = main_est.lower > 0
            why = (f"settled by {main_est.judged} judgments (DCG@10 bounds "
                   f"{main_est.lower:+.4f}, {main_est.upper:+.4f})")
        elif not take and ht.sampled and ht.lower(z) > 0:
            take, why = True, f"the change, against the advice: {_interval(ht, z)}, above 0"
        elif take and ht.sampled and ht.upper(z) < 0:
            take, why = False, (f"the current constants, against the advice: "
                                f"{_interval(ht, z)}, below 0")
        else:
            why = (f"the suite's advice ({'take the change' if take else 'keep'}): "
                   + (f"{_interval(ht, z)}, not clear of 0" if ht.sampled else "no judgments"))
        winner = self.change if take else self.current
        steps, best = [], None
        z_alt = _bonferroni(z, len(self.alternatives))
        for alt in self.alternatives:
            vs_cur = self.sampled_estimate(self.current, alt, grades, max_grade)
            vs_win = vs_cur if winner == self.current else \
                self.sampled_estimate(winner, alt, grades, max_grade)
            won = bool(vs_cur.sampled and vs_cur.lower(z_alt) > 0 and vs_win.lower(z_alt) > 0)
            because = (f"{alt} {'is clearly better' if won else 'is not clearly better'} "
                       f"(z {z_alt:.2f}): against the current constants {_interval(vs_cur, z_alt)}"
                       + ("" if vs_win is vs_cur else
                          f"; against {winner} {_interval(vs_win, z_alt)}"))
            steps.append({"alternative": alt, "against": winner, "won": won, "why": because,
                          "posterior_gain": None, "posterior_sd": None,
                          "judged_difference": round(vs_win.mean, 6),
                          "se": round(vs_win.se, 6)})
            if won and (best is None or vs_win.lower(z_alt) > best[1]):
                best = (alt, vs_win.lower(z_alt), because)
        chosen = winner
        if best is not None:
            chosen, why = best[0], f"{best[2]} (first question: {why})"
        settled = bool(ht.exact or (main_est is not None and main_est.settled)
                       or (ht.sampled and (ht.lower(z) > 0 or ht.upper(z) < 0)))
        return Verdict(chosen, chosen != self.current, why, main_est,
                       posterior(main_prior, main_est), steps, settled, ht)

    def chain_verdict(self, grades: Mapping[tuple[str, str], int], max_grade: int) -> Verdict:
        """The chain's decision from ``grades`` (see the module docstring)."""
        main_est = estimate(self.main, grades, max_grade) if grades else None
        main_prior = self.priors.get(self.change)
        take, why = decide(self.prior_take, main_est, main_prior)
        winner = self.change if take else self.current
        steps, settled = [], stop(main_prior, main_est)
        for alt in self.alternatives:
            inc_prior = self.priors.get(winner) if winner != self.current else None
            prior = difference_prior(self.priors.get(alt), inc_prior)
            est = estimate(self.comparison(winner, alt), grades, max_grade) if grades else None
            won, because = _challenge(alt, winner, prior, est)
            m, sd = posterior(prior, est) if est is not None and est.informative else (0.0, 0.0)
            steps.append({"alternative": alt, "against": winner, "won": won, "why": because,
                          "posterior_gain": round(m, 6), "posterior_sd": round(sd, 6),
                          "judged_difference": None if est is None else round(est.ndcg, 6)})
            settled = settled and stop(prior, est)
            if won:
                winner = alt
        if winner not in (self.current, self.change):
            why = next(s["why"] for s in reversed(steps) if s["won"]) + f" (first step: {why})"
        return Verdict(winner, winner != self.current, why, main_est, posterior(main_prior, main_est),
                       steps, bool(settled))


def _challenge(alt: str, winner: str, prior: Prior | None, est: Estimate | None) -> tuple[bool, str]:
    if est is None or est.judged == 0 or (not est.settled and est.informative == 0):
        return False, f"{winner} stays over {alt}: no judgment where they differ is relevant"
    if est.settled:
        return est.lower > 0, (f"{alt} {'over' if est.lower > 0 else 'loses to'} {winner}: "
                               f"settled (DCG@10 bounds {est.lower:+.4f}, {est.upper:+.4f})")
    m, sd = posterior(prior, est)
    won = m > Z_STOP * sd
    verb = "over" if won else "not clearly better than" if m > 0 else "loses to"
    return won, (f"{alt} {verb} {winner}: posterior difference {m:+.4f} (sd {sd:.4f}; judged "
                 f"{est.ndcg:+.4f}, se {est.ndcg_se:.4f})")


@dataclass(frozen=True)
class Verdict:
    """The chosen candidate's label, whether it is a change, why, the main comparison's estimate
    and posterior (current vs the suite's change), every alternative's challenge, and whether
    the whole chain is settled (every step's stopping rule holds)."""

    chosen: str
    take_change: bool
    why: str
    estimate: Estimate | None
    posterior: tuple[float, float]
    challenges: list
    settled: bool
    sampled: HTEstimate | None = None   # the sampled design's estimate of change - current


def _interval(e: HTEstimate, z: float) -> str:
    bound = e.lower(z) if e.mean >= 0 else e.upper(z)
    return (f"DCG@10 difference {e.mean:+.4f} (se {e.se:.4f}, {e.sampled} of {e.population} "
            f"pairs; one-sided bound {bound:+.4f})")


def _bonferroni(z: float, m: int) -> float:
    """The one-sided ``z`` for ``m`` comparisons at the same total error as one at ``z``."""
    if m <= 1:
        return z
    alpha = 1.0 - NormalDist().cdf(z)
    return float(NormalDist().inv_cdf(1.0 - alpha / m))
