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

After each batch, :func:`estimate` gives the mean DCG@10 difference over the evaluation queries
from the judged documents alone (unjudged count as not relevant: the estimate uses only what
was judged, and ``judged_at_10`` says how much of each run's top 10 that is), its standard error
over queries, and its MTC bounds (every unjudged document at the lowest or the highest grade,
so the decision is *settled* when the bounds exclude 0). :func:`decide` then combines the prior
and the judgments this way: the prior decision (the suite's advice, made without this
collection) stands unless the judgments settle the question, or their estimate points the other
way by more than ``z`` standard errors; with no judgments it is the prior. (An estimate that
extrapolated the unjudged documents at the judged ones' relevance rate was tried first and
dropped: MTC judges the pairs that move the difference most, not a sample, so that rate is
biased, and on the simulation it swung by several hundredths between budgets.)

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
METHODS = ("mtc", "pool", "random")


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
    if method not in METHODS:
        raise choice("judging selection", method, METHODS)
    t = p.table.copy()
    if method == "mtc":
        t = t[t.delta != 0].assign(w=t.delta.abs())
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

    @property
    def settled(self) -> bool:
        return self.lower > 0 or self.upper < 0


def estimate(p: Pairs, grades: Mapping[tuple[str, str], int], max_grade: int) -> Estimate:
    t = p.table
    g = np.array([grades.get((q, d), -1) for q, d in zip(t.qid, t.docid, strict=True)],
                 dtype=np.float64)
    judged = g >= 0
    per_q_judged = np.where(judged, g, 0.0) * t.delta.to_numpy()
    unj = ~judged * t.delta.to_numpy()
    lo = np.where(unj < 0, unj * max_grade, 0.0)
    hi = np.where(unj > 0, unj * max_grade, 0.0)
    nq = max(len(p.queries), 1)
    by_q = (pd.Series(per_q_judged).groupby(t.qid.to_numpy()).sum()
            .reindex(list(p.queries), fill_value=0.0))
    se = float(by_q.std(ddof=1) / np.sqrt(nq)) if nq > 1 else 0.0
    share = {}
    for side, col in (("current", "rank_current"), ("change", "rank_change")):
        on = t[col].to_numpy() > 0
        share[side] = float(judged[on].mean()) if on.any() else 1.0
    return Estimate(int(judged.sum()), float(per_q_judged.sum() / nq),
                    float((per_q_judged.sum() + lo.sum()) / nq),
                    float((per_q_judged.sum() + hi.sum()) / nq), se, share)


def decide(prior_take: bool, est: Estimate | None, z: float = 1.645) -> tuple[bool, str]:
    """(take the change?, why): the prior decision unless the judgments settle it or point the
    other way by more than ``z`` standard errors."""
    if est is None or est.judged == 0:
        return prior_take, "the suite's advice alone (no judgments)"
    if est.settled:
        return est.lower > 0, f"settled by {est.judged} judgments (bounds {est.lower:+.4f}, {est.upper:+.4f})"
    d, se = est.judged_only, est.se
    if prior_take and d < -z * se:
        return False, f"judgments contradict the advice (DCG@10 difference {d:+.4f}, se {se:.4f})"
    if not prior_take and d > z * se:
        return True, f"judgments contradict the advice (DCG@10 difference {d:+.4f}, se {se:.4f})"
    return prior_take, f"the advice stands ({est.judged} judgments: DCG@10 difference {d:+.4f}, se {se:.4f})"
