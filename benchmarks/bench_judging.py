"""Judging speed: choosing the next batch and updating the estimate, against one evaluation.

On cranfield's first 100 test queries with three streams (bm25, fts5, dense; cached runs), the
current constants (RRF k=60) against the suite's change: building the pairs both runs rank in
their top 10 and ordering them (``pairs`` + ``order_pairs``, MTC) and updating the estimate after
a batch (``estimate`` with 200 grades), each timed against the named baseline measured in the
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
from rrfbench.fusion.config import Config
from rrfbench.judging.decide import estimate, order_pairs, pairs
from rrfbench.workflows.dataset import load_runs
from rrfbench.workflows.judge import suite_candidates

ds = load_dataset("cranfield")
qrels = ds.qrels("test")
queries = sorted(qrels.qids)[:100]
runs = load_runs(ds, ["bm25", "fts5", "dense"], "test")
cands = suite_candidates("en", "cranfield")
current, change = cands.current, cands.change
cur, chg = Config.from_json(current).fuse(runs), Config.from_json(change).fuse(runs)
grades = {(q, d): r for q, d, r in zip(qrels.df.qid, qrels.df.docid, qrels.df.relevance,
                                        strict=True)}

t_eval, _ = _common.best_of(lambda: evaluate(chg, qrels, ["nDCG@10"]), 5)


def select():
    p = pairs(cur, chg, queries)
    return p, order_pairs(p, "mtc")


t_sel, (p, order) = _common.best_of(select, 5)
batch = {(q, d): grades.get((q, d), 0) for q, d in zip(order.qid[:200], order.docid[:200],
                                                          strict=True)}
t_est, est = _common.best_of(lambda: estimate(p, batch, 2), 5)
print(f"cranfield, {len(queries)} queries, {len(p.table)} pairs ({len(order)} that matter); "
      f"baseline evaluate(nDCG@10) {t_eval:.3f} s")
print(f"select_s: {t_sel:.3f}")
print(f"estimate_s: {t_est:.3f}")
print(f"ratio_select_vs_evaluate: {t_sel / t_eval:.2f}")

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
print(f"press_ms: {press:.1f} (median of 20; {len(w.session.pairs.table)} pairs, every query)")
print(f"ratio_press_vs_evaluate: {press / 1000 / t_eval:.2f}")
