"""Judging speed: choosing the next batch and updating the estimate, against one evaluation.

On cranfield's first 100 test queries with three streams (bm25, fts5, dense; cached runs), the
current constants (RRF k=60) against the suite's change and its alternatives (a
``Contest``): building the pairs every comparison's runs rank in their top 10 and ordering them
(``Contest.order``: MTC, the baseline's, and ``sample``, the default: priority sampling with
its two phases) and updating the decision after a batch (``Contest.verdict`` with 200 grades:
every comparison's estimate; for ``sample`` the unbiased estimates and the bounded rule), each timed against the named baseline measured in the
same process: one ``rrfbench.core.evaluation.evaluate`` of the fused run (nDCG@10 through
ir_measures). Best of 5. The target: under a second each on 2 cores (a person waits for it).
Then the judging widget's key press (``JudgingWidget.press``: the grade fsynced into the log,
the status recomputed, the next pair rendered) on cranfield's every query, median of 20 presses,
against the same baseline; the target: under 100 ms.

    python benchmarks/bench_judging.py

Last lines: ``select_s``, ``estimate_s``, ``ratio_select_vs_evaluate``, ``press_ms``,
``ratio_press_vs_evaluate``.
"""

import _common  # noqa: F401  (data path, offline hub)

from rrfbench.core.evaluation import evaluate
from rrfbench.data.datasets import load_dataset
from rrfbench.judging.contest import Contest
from rrfbench.workflows.judge import fused_candidates, suite_candidates

ds = load_dataset("cranfield")
qrels = ds.qrels("test")
queries = sorted(qrels.qids)[:100]
cands = suite_candidates("en", "cranfield")
fused = fused_candidates(cands, ds, "test", queries=queries)
chg = fused.runs[fused.change]
grades = {(q, d): r for q, d, r in zip(qrels.df.qid, qrels.df.docid, qrels.df.relevance,
                                        strict=True)}

t_eval, _ = _common.best_of(lambda: evaluate(chg, qrels, ["nDCG@10"]), 5)


def select(method):
    def go():
        c = Contest(fused.runs, fused.priors, fused.prior_take, queries)   # pairs afresh
        return c, c.order(method, budget=200)
    return go


print(f"cranfield, {len(queries)} queries, {len(fused.labels)} candidates, "
      f"{len(fused.comparisons())} comparisons; baseline evaluate(nDCG@10) {t_eval:.3f} s")
for method in ("mtc", "sample"):      # the baseline's selection, then the default's
    t_sel, (c, order) = _common.best_of(select(method), 5)
    batch = {(q, d): grades.get((q, d), 0) for q, d in zip(order.qid[:200], order.docid[:200],
                                                              strict=True)}
    c.verdict(batch, 2, method)                       # the sampled design's orders, cached
    t_est, v = _common.best_of(lambda c=c, b=batch, m=method: c.verdict(b, 2, m), 5)
    print(f"{method}: {len(order)} pairs that matter")
    print(f"select_s ({method}): {t_sel:.3f}")
    print(f"estimate_s ({method}): {t_est:.3f}")
    print(f"ratio_select_vs_evaluate ({method}): {t_sel / t_eval:.2f}")

import statistics  # noqa: E402
import tempfile  # noqa: E402

from rrfbench.workflows.judging_session import open_session  # noqa: E402
from rrfbench.workflows.judging_widget import JudgingWidget  # noqa: E402

with tempfile.TemporaryDirectory() as tmp:
    w = JudgingWidget(open_session(ds, log_path=f"{tmp}/bench.jsonl", budget=400))
    presses = []
    for i in range(20):
        w.press("1" if i % 3 == 0 else "0")
        presses.append(w.last_ms)
press = statistics.median(presses)
print(f"press_ms: {press:.1f} (median of 20; {len(w.session.order)} pairs that matter, every query)")
print(f"ratio_press_vs_evaluate: {press / 1000 / t_eval:.2f}")
