"""Judging a team's own collection: judgments as data that is never lost or silently wrong
(``log``), and who grades a (query, document) pair (``judges``: the ``Judge`` protocol, and a
simulated judge that answers from real qrels, for tests and for grading rrfbench's advice).

May import: every part up to ``adaptive``.
"""
