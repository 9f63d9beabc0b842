"""Long messages under titan's FTS5 query builder (every token kept, repeats included, OR-ed):
seconds per query for 10, 100, 500 and 1,000-token messages, FTS5's own ``bm25()`` over the OR
query (the baseline, what titan runs) vs rrfbench's phrase-by-phrase evaluation of the same
score (:func:`rrfbench.retrievers.fts5.additive_bm25`), in this process, best of 3 rounds; and
whether both give the same ranked lists and scores (they must, to the bit).

Messages are runs of scifact's document text cut to n tokens (a long legal case as a query is
the same shape); the index is scifact's titan FTS5 index (5,183 documents). Needs scifact on
``$RRFBENCH_DATA``. Last line: ``ratio_vs_fts5_at_500: <float>`` (seconds ours / FTS5's).
"""

import itertools
import sys
import time

from rrfbench import load_dataset
from rrfbench.retrievers.fts5 import ADDITIVE_FROM, FTS5Retriever, build_titan, titan_tokens

SIZES = (10, 100, 500, 1000)
PER_SIZE = 3


def main() -> None:
    ds = load_dataset("scifact")
    r = FTS5Retriever("titan")
    con = r.connect(ds)
    toks = list(itertools.chain.from_iterable(titan_tokens(t) for t in ds.corpus.text[:500]))
    ratio = {}
    print(f"scifact, {len(ds.corpus)} documents; depth 1000; {PER_SIZE} messages per size; the "
          f"phrase-by-phrase path is the default from {ADDITIVE_FROM} phrases on")
    print(f"{'tokens':>7} {'FTS5 bm25() s/query':>20} {'phrase by phrase':>17} {'ratio':>6} same")
    for n in SIZES:
        msgs = [build_titan(" ".join(toks[i * n:(i + 1) * n])) for i in range(PER_SIZE)]
        best = {True: float("inf"), False: float("inf")}
        out = {}
        for _ in range(3):
            for additive in (False, True):
                t = time.perf_counter()
                out[additive] = [r.search(con, m, 1000, additive=additive) for m in msgs]
                best[additive] = min(best[additive], (time.perf_counter() - t) / PER_SIZE)
        ratio[n] = best[True] / best[False]
        print(f"{n:>7} {best[False]:>20.3f} {best[True]:>17.3f} {ratio[n]:>6.2f} "
              f"{out[True] == out[False]}")
    con.close()
    print(f"ratio_vs_fts5_at_500: {ratio[500]:.3f}")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        print(f"error: bench_fts5_long.py takes no arguments (got {sys.argv[1]!r})",
              file=sys.stderr)
        sys.exit(2)
    main()
