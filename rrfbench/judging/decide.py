"""Deciding between the current constants and a change from a few judgments rrfbench chooses.

Two fused runs disagree only where their top 10s differ. For the decision "is the change better
than the current constants?" the metric is the difference of DCG@10 (gain = grade, discount
``1 / log2(rank + 1)``), which needs no ideal ranking: a judged document ``d`` of query ``q``
adds ``grade(d) * (disc_change(d) - disc_current(d))`` to that query's difference, and a
document both rank alike adds nothing. Judgments are chosen by how much their grade can move
that difference (Carterette, Allan and Sitaraman, "Minimal test collections for retrieval
evaluation", SIGIR 2006): :func:`order_pairs` with ``mtc`` puts first the pairs with the largest
``|disc_change - disc_current|``; ``pool`` (depth-10 pooling, rank by rank, round robin over
the queries and the two runs) and ``random`` are the baselines.

After each batch, :func:`estimate` gives two estimates of "change minus current" over the
evaluation queries from the judged documents alone (unjudged documents count as not relevant, so
the estimates use only what was judged; ``judged_at_10`` says how much of each run's top 10 that
is): the DCG@10 difference, with its MTC bounds (every unjudged document at the lowest or the
highest grade: the decision is *settled* when the bounds exclude 0), and the same difference on
the scale of the suite's advice (``ndcg``: the DCG@10 differences divided by the mean ideal
DCG@10 of the queries with a judged relevant document, each query's ideal built from its judged
grades: a ratio of means, steadier than the mean of per-query nDCG differences, whose small
judged ideals swing it), each with its standard error over queries.

:func:`decide` combines the prior and the judgments this way (a normal-normal update, said once
here): the prior is the suite's leave-one-collection-out evidence without this collection
(:class:`Prior`: the mean nDCG@10 gain of the change over the current constants on the other
collections, and the spread a new collection's gain has around it, the predictive standard
deviation ``sd * sqrt(1 + 1/n)``); the judgments' likelihood is the judged nDCG@10 difference
with its standard error, floored at ``SE_FLOOR`` (a few judgments on a few queries give an
over-confident standard error, and 0 when every judged grade is 0). The posterior mean and
standard deviation are the precision-weighted combination; the change is taken when the
posterior mean is above 0. With no judgments, or none that is relevant where the two rankings
differ (no evidence either way), the decision is the suite's own rule (its prior decision); a
settled MTC bound overrides both. The stopping rule (:func:`stop`): the bounds
settle, or the posterior puts 95% on one side of 0, or the budget is spent. (An estimate that
extrapolated the unjudged documents at the judged ones' relevance rate was tried first and
dropped: MTC judges the pairs that move the difference most, not a sample, so that rate is
biased; the rule "the prior stands unless the judgments contradict it by 1.645 standard errors"
was tried next and kept a change that lost 0.0145 on nfcorpus at every budget; the mean of
per-query nDCG differences, and the posterior alone where no judged pair was relevant, took a
change of titan's that lost 0.05 on mediqa2019-qa, docs/judging.md.)

Called from: ``workflows.judge`` (the simulation and the judging commands) and tests.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core.errors import choice
from ..core.runs import Run

DEPTH = 10
METHODS = ("sample", "mtc", "pool", "random")   # sample: rrfbench.judging.sampling (the default)
SE_FLOOR = 0.005      # the smallest standard error a judged estimate is given (see above)
Z_STOP = 1.645        # the posterior's one-sided 95%: the decision is settled


def discounts(run: Run, depth: int = DEPTH) -> dict[str, dict[str, float]]:
    """qid -> docid -> ``1 / log2(rank + 1)`` for the run's top ``depth`` (the run's order)."""
    df = run.df
    top = df[df["rank"] <= depth]
    out: dict[str, dict[str, float]] = {}
    for q, d, r in zip(top.qid, top.docid, top["rank"], strict=True):
        out.setdefault(str(q), {})[str(d)] = 1.0 / np.log2(int(r) + 1)
    return out


@dataclass(frozen=True)
class Pairs:
    """Every (query, document) pair either run ranks in its top 10, with what its grade would
    move: ``delta`` = disc_change - disc_current (the DCG@10 difference per unit of gain)."""

    table: pd.DataFrame   # qid, docid, delta, rank_current, rank_change
    queries: tuple        # the evaluation queries (the mean runs over all of them)


def pairs(current: Run, change: Run, queries: Sequence[str], depth: int = DEPTH) -> Pairs:
    cur, chg = discounts(current, depth), discounts(change, depth)
    rows = []
    for q in map(str, queries):
        a, b = cur.get(q, {}), chg.get(q, {})
        for d in sorted(set(a) | set(b)):
            rows.append((q, d, b.get(d, 0.0) - a.get(d, 0.0),
                         _rank(a.get(d)), _rank(b.get(d))))
    t = pd.DataFrame(rows, columns=["qid", "docid", "delta", "rank_current", "rank_change"])
    return Pairs(t, tuple(map(str, queries)))


def _rank(disc: float | None) -> int:
    return 0 if disc is None else int(round(2 ** (1 / disc) - 1))


def order_pairs(p: Pairs, method: str = "mtc", seed: int = 0) -> pd.DataFrame:
    """The pairs in the order they are put to the judge, each with ``why``.

    ``mtc``: largest ``|delta|`` first (pairs both runs rank alike are never asked), ties by
    query and document id. ``pool``: depth-10 pooling, rank 1 of every query (current, then
    change), then rank 2, ... ``random``: the pool shuffled (``seed``)."""
    if method not in METHODS or method == "sample":
        raise choice("judging selection", method, METHODS[1:])   # sample: Contest.order
    t = p.table.copy()
    if method == "mtc":
        t = t[t.delta != 0]
        t = t.assign(w=t.delta.abs())   # (on the filtered frame: an empty one would adopt
        #                                  the unfiltered index from a Series assigned to it)
        t = t.sort_values(["w", "qid", "docid"], ascending=[False, True, True], kind="mergesort")
        t["why"] = [f"mtc: moves the DCG@10 difference by {w:.3f} per grade (ranks "
                    f"{rc or '-'} vs {rx or '-'})" for w, rc, rx in
                    zip(t.w, t.rank_current, t.rank_change, strict=True)]
        return t.drop(columns="w").reset_index(drop=True)
    best = np.where(t.rank_current > 0, t.rank_current, 99)
    best = np.minimum(best, np.where(t.rank_change > 0, t.rank_change, 99))
    t = t.assign(best=best)
    if method == "pool":
        t = t.sort_values(["best", "qid", "docid"], kind="mergesort")
        t["why"] = [f"pool: rank {b} of a run" for b in t.best]
    else:
        t = t.sample(frac=1.0, random_state=seed)
        t["why"] = "random: from the depth-10 pool"
    return t.drop(columns="best").reset_index(drop=True)


@dataclass(frozen=True)
class Estimate:
    """The mean DCG@10 difference (change - current) over the evaluation queries."""

    judged: int          # judgments used
    judged_only: float   # the estimate: unjudged documents count as not relevant
    lower: float         # MTC bounds: every unjudged document at the lowest / highest grade
    upper: float
    se: float            # standard error of ``judged_only`` over queries
    judged_at_10: dict   # share of each run's top 10 judged: {"current": .., "change": ..}
    ndcg: float = 0.0    # nDCG@10 difference on the judged documents (see estimate)
    ndcg_se: float = 0.0
    informative: int = 0  # judged pairs that move the difference (a relevant grade, delta != 0)

    @property
    def settled(self) -> bool:
        return self.lower > 0 or self.upper < 0


def estimate(p: Pairs, grades: Mapping[tuple[str, str], int], max_grade: int) -> Estimate:
    t = p.table
    g = np.array([grades.get(k, -1) for k in zip(t.qid.tolist(), t.docid.tolist(), strict=True)],
                 dtype=np.float64)
    judged = g >= 0
    gain = np.where(judged, g, 0.0)
    per_q_judged = gain * t.delta.to_numpy()
    unj = ~judged * t.delta.to_numpy()
    lo = np.where(unj < 0, unj * max_grade, 0.0)
    hi = np.where(unj > 0, unj * max_grade, 0.0)
    nq = max(len(p.queries), 1)
    qids = t.qid.to_numpy()
    by_q = pd.Series(per_q_judged).groupby(qids).sum().reindex(list(p.queries), fill_value=0.0)
    ideal = _ideal_dcgs(qids, gain).reindex(list(p.queries), fill_value=0.0)
    scale = float(ideal[ideal > 0].mean()) if (ideal > 0).any() else 0.0
    nd = by_q / scale if scale > 0 else by_q * 0.0
    share = {}
    for side, col in (("current", "rank_current"), ("change", "rank_change")):
        on = t[col].to_numpy() > 0
        share[side] = float(judged[on].mean()) if on.any() else 1.0
    return Estimate(int(judged.sum()), float(per_q_judged.sum() / nq),
                    float((per_q_judged.sum() + lo.sum()) / nq),
                    float((per_q_judged.sum() + hi.sum()) / nq), _se(by_q), share,
                    float(nd.mean()) if len(nd) else 0.0, _se(nd),
                    int(((gain > 0) & (t.delta.to_numpy() != 0)).sum()))


def _se(per_query: pd.Series) -> float:
    n = len(per_query)
    return float(per_query.std(ddof=1) / np.sqrt(n)) if n > 1 else 0.0


def _ideal_dcg(gains: pd.Series, depth: int = DEPTH) -> float:
    top = np.sort(gains.to_numpy())[::-1][:depth]
    return float((top / np.log2(np.arange(2, len(top) + 2))).sum())


def _ideal_dcgs(qids: np.ndarray, gain: np.ndarray, depth: int = DEPTH) -> pd.Series:
    """Per query, the ideal DCG@``depth`` of its judged grades (:func:`_ideal_dcg` for every
    query at once, in numpy: a key press in the judging widget waits for it)."""
    codes, names = pd.factorize(qids)
    keep = gain > 0
    codes, g = codes[keep], gain[keep]
    order = np.lexsort((-g, codes))
    codes, g = codes[order], g[order]
    start = np.r_[0, np.flatnonzero(np.diff(codes)) + 1] if len(codes) else np.zeros(0, int)
    rank = np.arange(len(codes)) - np.repeat(start, np.diff(np.r_[start, len(codes)]))
    top = rank < depth
    x = g[top] / np.log2(rank[top] + 2.0)
    sums = np.bincount(codes[top], weights=x, minlength=len(names))
    return pd.Series(sums, index=names)


@dataclass(frozen=True)
class Prior:
    """The suite's evidence about this change on a new collection: the mean nDCG@10 gain over
    the current constants on ``n`` other collections and their standard deviation."""

    mean: float
    sd: float
    n: int
    source: str = ""

    @property
    def predictive_sd(self) -> float:
        """How far one new collection's gain strays from ``mean``: ``sd * sqrt(1 + 1/n)``."""
        return self.sd * float(np.sqrt(1.0 + 1.0 / max(self.n, 1)))


def posterior(prior: Prior | None, est: Estimate | None) -> tuple[float, float]:
    """(mean, sd) of the change's nDCG@10 gain on this collection: the prior and the judged
    estimate combined by their precisions (see the module docstring)."""
    if est is None or est.judged == 0 or est.informative == 0:
        if prior is None:
            return 0.0, float("inf")
        return prior.mean, prior.predictive_sd
    v_j = max(est.ndcg_se, SE_FLOOR) ** 2
    if prior is None or prior.predictive_sd <= 0:
        return est.ndcg, float(np.sqrt(v_j))
    v_p = prior.predictive_sd ** 2
    mean = (prior.mean / v_p + est.ndcg / v_j) / (1 / v_p + 1 / v_j)
    return float(mean), float(np.sqrt(1 / (1 / v_p + 1 / v_j)))


def stop(prior: Prior | None, est: Estimate | None, z: float = Z_STOP) -> bool:
    """Judging can stop: the MTC bounds settle the question, or the posterior puts ``z``
    standard deviations between its mean and 0."""
    if est is not None and est.settled:
        return True
    m, sd = posterior(prior, est)
    return est is not None and est.judged > 0 and abs(m) > z * sd


def decide(prior_take: bool, est: Estimate | None, prior: Prior | None = None) -> tuple[bool, str]:
    """(take the change?, why): with no judgments the suite's own rule (``prior_take``); a
    settled MTC bound decides; otherwise the sign of the posterior mean (see the module
    docstring)."""
    if est is None or est.judged == 0:
        return prior_take, "the suite's advice alone (no judgments)"
    if not est.settled and est.informative == 0:
        return prior_take, (f"the suite's advice ({est.judged} judgments, none of them relevant "
                            "where the two rankings differ: no evidence either way)")
    if est.settled:
        return est.lower > 0, (f"settled by {est.judged} judgments (DCG@10 bounds "
                               f"{est.lower:+.4f}, {est.upper:+.4f})")
    m, sd = posterior(prior, est)
    take = m > 0
    return take, (f"{'take' if take else 'keep the current constants'}: posterior gain "
                  f"{m:+.4f} (sd {sd:.4f}) from the prior and {est.judged} judgments (judged "
                  f"nDCG@10 difference {est.ndcg:+.4f}, se {est.ndcg_se:.4f})")
