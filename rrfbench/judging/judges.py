"""Who grades a (query, document) pair: anything with ``grade(query, document) -> int``.

A person at the terminal, in a notebook or in a spreadsheet, a team's own LLM endpoint, or the
simulated judge (:class:`QrelsJudge`), which answers from a collection's real qrels and is the
only part of rrfbench that reads them when a decision is being graded (``--simulate``).

Called from: ``judging.log`` (grades are recorded there), the judging workflow and tests.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..core.runs import Qrels


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
