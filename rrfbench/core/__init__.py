"""The ground floor: what every other part stands on. Runs and qrels as tables with the one
rank rule (``runs``), TREC line rules (``trec``), errors and exit codes (``errors``, ``exits``),
atomic writes and provenance (``store``), progress bars (``progress``), map functions
(``parallel``), metric names and evaluation (``metrics``, ``evaluation``), statistics
(``stats``), literal escaping (``literals``) and the math-library caps of the portable dense
backend (``portable_math``).

May import: nothing of rrfbench but ``_version``.
"""
