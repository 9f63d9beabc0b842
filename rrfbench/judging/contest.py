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

Called from: ``workflows.judge`` (the simulation), ``workflows.judging_session`` and tests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

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

    def order(self, method: str = "mtc", seed: int = 0) -> pd.DataFrame:
        """The pairs to judge, in order (see the module docstring): each pair once."""
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

    def verdict(self, grades: Mapping[tuple[str, str], int], max_grade: int) -> Verdict:
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
