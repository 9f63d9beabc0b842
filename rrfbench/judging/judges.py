"""Who grades a (query, document) pair: anything with ``grade(query, document) -> int``.

A person at the terminal, in a notebook or in a spreadsheet, a team's own LLM endpoint, or the
simulated judge (:class:`QrelsJudge`), which answers from a collection's real qrels and is the
only part of rrfbench that reads them when a decision is being graded (``--simulate``).

Called from: ``judging.log`` (grades are recorded there), the judging workflow and tests.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..core.runs import Qrels
from .sampling import uniforms


@runtime_checkable
class Judge(Protocol):
    """Grades one pair on the collection's scale (0 = not relevant)."""

    name: str

    def grade(self, query: str, document: str) -> int:
        """The grade of ``document`` for ``query``."""
        ...


class QrelsJudge:
    """A simulated judge: the grade the qrels give, 0 for an unjudged pair (the BEIR convention
    that evaluation follows); it counts the pairs it was asked, so a test can check that a
    decision used no more judgments than it says."""

    def __init__(self, qrels: Qrels, name: str = "simulated (qrels)"):
        df = qrels.df
        self._grades = {(str(q), str(d)): int(r)
                        for q, d, r in zip(df.qid, df.docid, df.relevance, strict=True)}
        self.name = name
        self.asked = 0

    def grade(self, query: str, document: str) -> int:
        self.asked += 1
        return max(self._grades.get((str(query), str(document)), 0), 0)


class NoisyJudge:
    """A simulated person who disagrees with the qrels at a chosen rate: each answer is, with
    probability ``1 - kappa``, replaced by a grade drawn from ``marginal`` (grade -> share, the
    qrels' grades on the pairs that could be asked), otherwise the qrels' grade. Replacing by a
    draw from the same marginal makes the expected Cohen's kappa against the qrels ``kappa``
    itself (observed agreement ``kappa + (1 - kappa) p_e`` at chance agreement ``p_e``);
    assessors typically agree with each other at kappa 0.5 to 0.65. The draws are permanent per
    (seed, query, document) (BLAKE2b), so a pair asked twice gets the same answer."""

    def __init__(self, qrels: Qrels, kappa: float, marginal: dict[int, float], seed: int = 0,
                 name: str | None = None):
        if not 0.0 <= kappa <= 1.0:
            raise ValueError(f"kappa {kappa} is not between 0 and 1")
        self._truth = QrelsJudge(qrels)
        self.kappa = float(kappa)
        total = float(sum(marginal.values())) or 1.0
        self._grades = sorted(marginal)
        self._cum = []
        acc = 0.0
        for g in self._grades:
            acc += marginal[g] / total
            self._cum.append(acc)
        self.seed = seed
        self.name = name or f"simulated (qrels, kappa {kappa:g})"
        self.asked = 0

    def grade(self, query: str, document: str) -> int:
        self.asked += 1
        true = self._truth.grade(query, document)
        u_flip, u_draw = uniforms([query, query], [f"{document}\tflip", f"{document}\tdraw"],
                                  f"noisy:{self.seed}")
        if u_flip <= self.kappa:
            return true
        for g, c in zip(self._grades, self._cum, strict=True):
            if u_draw <= c:
                return g
        return self._grades[-1]
