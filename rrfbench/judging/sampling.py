"""Judging a probability sample: priority sampling and its unbiased (Horvitz-Thompson) estimate.

Why. MTC (:func:`rrfbench.judging.decide.order_pairs`) judges the pairs whose grade can move
the difference most; counting the unjudged ones as not relevant then credits whichever ranking
had more of its top 10 judged (on collections rrfbench never saw, 50 MTC judgments led titan
to a change that loses 0.021 nDCG@10: judged +0.059). An estimate that does not depend on
*which* pairs happened to be judged needs each pair's chance of being judged to be known, and
each judged grade weighted by its inverse (Horvitz and Thompson, 1952; for comparing two
rankers, Schnabel, Swaminathan, Frazier and Joachims, "Unbiased Comparative Evaluation of
Ranking Functions", ICTIR 2016, sample in proportion to what a grade can move).

How. Priority sampling (Duffield, Lund and Thorup, "Priority sampling for estimation of
arbitrary subset sums", JACM 2007): each pair ``i`` with weight ``w_i > 0`` (here ``|delta|``,
what its grade moves the DCG@10 difference by, per unit of gain) draws a uniform ``u_i`` in
(0, 1] and gets the priority ``q_i = w_i / u_i``; the pairs are judged in decreasing priority.
After the first ``k`` are judged, with ``tau`` the (k+1)-th priority, each judged pair stands
for ``max(w_i, tau)`` of weight: the estimate of ``sum_i y_i`` (``y_i = grade_i * delta_i``) is
``sum_judged y_i / w_i * max(w_i, tau)``, *exactly* unbiased for any grades, with the unbiased
variance estimate ``sum_judged (y_i / w_i)^2 * tau * max(0, tau - w_i)`` (the pairs' terms are
uncorrelated). A pair heavier than ``tau`` is counted exactly (no variance); as the budget
covers every pair, ``tau`` reaches 0 and the estimate is the exact difference. Why this design
over sampling with replacement or Poisson sampling: one fixed order (a queue people judge from,
each prefix a valid sample, so any budget and any stopping point use the same judgments), a
fixed number of judgments, and exact unbiasedness with an unbiased variance.

The uniforms are *permanent random numbers*: ``u_i`` is a hash of (seed, query id, document
id) (BLAKE2b), not a draw from a stream, so a pair keeps its number whatever else is in the
table, on every machine, and two comparisons' samples that share a pair share its judgment.

What is sampled is the longest judged prefix of the order (:func:`judged_prefix`): a pair
skipped, or judged out of order, does not enter the estimate until every pair before it is
judged (the design is the prefix; a hole would make the inclusion chances unknown).

Called from: ``judging.contest`` (the sampled design and its estimates) and tests.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd


def uniforms(qids: Sequence[str], docids: Sequence[str], seed: int | str = 0) -> np.ndarray:
    """Each pair's permanent uniform in (0, 1]: 53 bits of BLAKE2b(seed, query, document)."""
    out = np.empty(len(qids), dtype=np.float64)
    salt = str(seed).encode()
    for i, (q, d) in enumerate(zip(qids, docids, strict=True)):
        h = hashlib.blake2b(f"{q}\t{d}".encode(), digest_size=8, key=salt[:64]).digest()
        out[i] = ((int.from_bytes(h, "big") >> 11) + 1) / float(2 ** 53)
    return out


def priority_order(table: pd.DataFrame, weight: str = "w", seed: int | str = 0) -> pd.DataFrame:
    """``table``'s rows with ``weight > 0``, in decreasing priority ``w / u`` (ties by query
    and document id), with the columns ``u`` and ``priority`` added."""
    t = table[table[weight] > 0]
    u = uniforms(t.qid.tolist(), t.docid.tolist(), seed)
    # rounded to 12 significant digits: a weight's last bits (a discount's log2 on another
    # CPU's vector unit) must not reorder the queue (ties: query, then document id)
    raw = t[weight].to_numpy() / u
    t = t.assign(u=u, priority=[float(f"{x:.12g}") for x in raw])
    return t.sort_values(["priority", "qid", "docid"], ascending=[False, True, True],
                         kind="mergesort").reset_index(drop=True)


def judged_prefix(order: pd.DataFrame, grades: Mapping[tuple[str, str], int]) -> int:
    """How many pairs at the head of ``order`` are all judged (the sample, see the module
    docstring)."""
    for i, key in enumerate(zip(order.qid.tolist(), order.docid.tolist(), strict=True)):
        if key not in grades:
            return i
    return len(order)


@dataclass(frozen=True)
class HTEstimate:
    """The unbiased estimate of a mean per query (``mean``, ``se``: the DCG@10 difference of
    two rankings over ``queries`` queries) from ``sampled`` judged pairs of ``population`` pairs
    that matter, at threshold ``tau`` (0: every pair judged, the estimate exact); ``relevant``:
    the sampled pairs with a grade above 0 where the two rankings differ."""

    mean: float
    se: float
    sampled: int
    population: int
    tau: float
    relevant: int
    queries: int

    def lower(self, z: float) -> float:
        return self.mean - z * self.se

    def upper(self, z: float) -> float:
        return self.mean + z * self.se

    @property
    def exact(self) -> bool:
        return self.sampled >= self.population


def ht_estimate(order: pd.DataFrame, delta: np.ndarray, grades: Mapping[tuple[str, str], int],
                n_queries: int, max_grade: int, weight: str = "w",
                k: int | None = None) -> HTEstimate:
    """The Horvitz-Thompson estimate of ``mean_q sum_{i in q} grade_i * delta_i`` from the
    first ``k`` pairs of ``order`` (default: its judged prefix); ``delta`` aligned with
    ``order``'s rows (the comparison's own ``disc_b - disc_a``, 0 where it does not differ).

    The standard error is the design's (see the module docstring), floored at what one more
    relevant pair of the highest grade at the threshold would add (``max_grade * tau`` over the
    queries): with few judgments every sampled pair below the threshold can be 0, which makes
    the variance estimate 0 while unsampled pairs could still be relevant (a stated guard, not a
    fitted constant; it is 0 once every pair is judged)."""
    n = len(order)
    k = judged_prefix(order, grades) if k is None else min(k, n)
    nq = max(int(n_queries), 1)
    if n == 0:
        return HTEstimate(0.0, 0.0, 0, 0, 0.0, 0, nq)
    tau = float(order.priority.iloc[k]) if k < n else 0.0
    head = order.iloc[:k]
    w = head[weight].to_numpy(dtype=np.float64)
    g = np.array([grades[key] for key in zip(head.qid.tolist(), head.docid.tolist(), strict=True)],
                 dtype=np.float64)
    d = np.asarray(delta, dtype=np.float64)[:k]
    ratio = g * d / w
    total = float((ratio * np.maximum(w, tau)).sum())
    var = float((ratio ** 2 * tau * np.maximum(0.0, tau - w)).sum())
    se = max(np.sqrt(var), max_grade * tau) / nq
    return HTEstimate(total / nq, float(se), int(k), int(n), tau,
                      int(((g > 0) & (d != 0)).sum()), nq)
