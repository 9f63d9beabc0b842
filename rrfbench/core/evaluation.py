"""Mean and per-query effectiveness of a run against qrels, computed by ir_measures.

ir_measures (pytrec_eval's trec_eval code underneath) does the arithmetic; rrfbench only fixes
the conventions, stated here so they can be checked:

* The ranking evaluated is the run's own order (score descending, ties by docid ascending;
  see :mod:`rrfbench.core.runs`). The run is handed over with strictly decreasing scores in that
  order, so trec_eval's own tie rule (docid descending) never applies.
* A document is relevant when its grade is >= 1; nDCG uses linear gains (the grade), as
  trec_eval's ``ndcg_cut`` does.
* The mean is over the queries judged in the qrels. **A query judged in the qrels but absent
  from the run scores 0** on every measure (trec_eval's ``-c``); queries in the run without
  judgments are ignored.
* Nothing is mutated and no global state (thread counts, logging) is touched.

**Coverage.** Because a missing query silently scores 0, a run from the wrong dataset or split
would evaluate to 0.0 without complaint. :func:`coverage` counts how many judged queries the run
answers; :func:`evaluate` warns (:class:`~rrfbench.core.errors.CoverageWarning`) when a run is empty or
answers fewer than half of them.
"""

from __future__ import annotations

import warnings
from dataclasses import asdict, dataclass

import ir_measures
import pandas as pd

from .errors import CoverageWarning
from .metrics import DEFAULT_METRICS, Metric, parse_metrics
from .runs import Qrels, Run

LOW_COVERAGE = 0.5


@dataclass(frozen=True)
class Coverage:
    """How much of a qrels split a run answers."""

    judged: int         # queries judged in the qrels
    answered: int       # judged queries with at least one result in the run
    run_queries: int    # queries in the run (judged or not)
    rows: int           # result lines in the run

    @property
    def fraction(self) -> float:
        return self.answered / self.judged if self.judged else 0.0

    def problem(self) -> str | None:
        """A one-line description when the coverage is suspicious, else ``None``."""
        if self.rows == 0:
            return f"the run is empty: all {self.judged} judged queries score 0"
        if self.fraction < LOW_COVERAGE:
            return (f"the run answers only {self.answered} of {self.judged} judged queries "
                    f"({self.fraction:.0%}); the others score 0 (wrong dataset or split?)")
        return None

    def to_json(self) -> dict:
        return {**asdict(self), "fraction": self.fraction}


def coverage(run: Run, qrels: Qrels) -> Coverage:
    """Judged queries answered by ``run`` (see :class:`Coverage`)."""
    judged = set(qrels.qids)
    in_run = set(run.df.qid.unique())
    return Coverage(judged=len(judged), answered=len(judged & in_run), run_queries=len(in_run),
                    rows=len(run))


def warn_coverage(run: Run, qrels: Qrels, what: str | None = None) -> Coverage:
    """:func:`coverage`, plus a :class:`CoverageWarning` when it is suspicious."""
    cov = coverage(run, qrels)
    problem = cov.problem()
    if problem:
        warnings.warn(f"{what or run.name}: {problem}", CoverageWarning, stacklevel=3)
    return cov


def evaluate_per_query(run: Run, qrels: Qrels, metrics=DEFAULT_METRICS) -> pd.DataFrame:
    """One row per judged query (index ``qid``, sorted), one column per canonical metric name."""
    ms: list[Metric] = parse_metrics(metrics)
    measures = {ir_measures.parse_measure(str(m)): str(m) for m in ms}
    judged = qrels.qids
    out = pd.DataFrame(0.0, index=pd.Index(judged, name="qid"), columns=[str(m) for m in ms])
    run_dict = run.to_rank_dict()
    qrels_dict = qrels.to_dict()
    if run_dict:
        values = {}
        for rec in ir_measures.iter_calc(list(measures), qrels_dict, run_dict):
            values[(rec.query_id, measures[rec.measure])] = rec.value
        if values:
            s = pd.Series(values)
            table = s.unstack()
            table = table.reindex(index=judged, columns=out.columns).fillna(0.0)
            out = table.astype("float64")
            out.index.name = "qid"
    return out


def evaluate(run: Run, qrels: Qrels, metrics=DEFAULT_METRICS) -> dict[str, float]:
    """Mean of each metric over the judged queries (missing queries count as 0).

    Warns (:class:`~rrfbench.core.errors.CoverageWarning`) when the run is empty or answers fewer
    than half of the judged queries.
    """
    warn_coverage(run, qrels)
    pq = evaluate_per_query(run, qrels, metrics)
    return {c: float(pq[c].mean()) if len(pq) else 0.0 for c in pq.columns}
