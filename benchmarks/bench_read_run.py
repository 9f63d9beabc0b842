"""Reading a team's run file: a million lines, checked against the collection.

A run of scifact's first 1,000 queries at depth 1,000 (documents drawn from its corpus, seed
0; 1,000,000 lines, about 40 MB), read as ``run:PATH`` does it (``RunFileRetriever.retrieve``:
parse every line, refuse a malformed one or a duplicate pair, check every query and document id
against the collection, keep the split's queries, rank by score with ties by document id), against
the named baseline measured in the same process on the same file:
``ir_measures.read_trec_run`` consumed into a list (parsing only: no checks, no ranking).
Best of 3 each. The target: a few seconds.

    python benchmarks/bench_read_run.py

Last lines: ``read_check_s``, ``ir_measures_s``, ``ratio_vs_ir_measures``.
"""

import tempfile
from pathlib import Path

import _common  # noqa: F401  (data path, offline hub)
import ir_measures
import numpy as np

from rrfbench.data.datasets import load_dataset
from rrfbench.retrievers import make_retriever

ds = load_dataset("scifact")
rng = np.random.default_rng(0)
qids = ds.queries.qid.astype(str).tolist()[:1000]
docids = np.asarray(ds.corpus.docid.astype(str))
with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "team.trec"
    with open(path, "w") as f:
        for q in qids:
            chosen = rng.choice(len(docids), 1000, replace=False)
            scores = np.sort(rng.random(1000))[::-1]
            f.writelines(f"{q} Q0 {docids[d]} {i + 1} {s:.6f} team\n"
                         for i, (d, s) in enumerate(zip(chosen, scores, strict=True)))
    size = path.stat().st_size / 1e6
    queries = ds.queries[ds.queries.qid.astype(str).isin(set(qids))]

    def ours():
        return make_retriever(f"run:{path}").retrieve(ds, queries, 1000)

    def theirs():
        return list(ir_measures.read_trec_run(str(path)))

    t_base, rows = _common.best_of(theirs, 3)
    t_ours, run = _common.best_of(ours, 3)
print(f"{len(qids)} queries x 1000 = {len(run.df):,} lines ({size:.0f} MB); ir_measures "
      f"{ir_measures.__version__} read {len(rows):,} rows")
print(f"read_check_s: {t_ours:.2f}")
print(f"ir_measures_s: {t_base:.2f}")
print(f"ratio_vs_ir_measures: {t_ours / t_base:.2f}")
