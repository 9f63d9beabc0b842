"""How much Qdrant's server tie order can move a figure: its RRF and DBSF sort fused scores with
an unstable sort over a hash map (``lib/segment/src/common/reciprocal_rank_fusion.rs``: "does not
break ties"), so documents tied in float32 come out in no fixed order. rrfbench models the local
mode's stable order (qdrant-client, round-tripped in the tests).

For each mode at its defaults on scifact's test queries (the cached runs of ``make demo``):
nDCG@10 as rrfbench orders the ties, at the best and at the worst order of every group of tied
documents, and how many queries have ties that change it.

    python benchmarks/qdrant_ties.py
"""

import math
import sys

import _common  # noqa: F401  (data path, offline hub)
import numpy as np

from rrfbench import load_dataset
from rrfbench.systems.engines import SPACES
from rrfbench.workflows.dataset import preset_runs


def ndcg10(docs, rel):
    dcg = sum((2 ** rel.get(d, 0) - 1) / math.log2(i + 2) for i, d in enumerate(docs[:10]))
    ideal = sorted(rel.values(), reverse=True)[:10]
    idcg = sum((2 ** g - 1) / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def main() -> int:
    if len(sys.argv) > 1:
        print(f"error: qdrant_ties.py takes no arguments (got {sys.argv[1]!r})", file=sys.stderr)
        return 2
    ds = load_dataset("scifact")
    qrels = ds.qrels("test").to_dict()
    for name in ("qdrant-rrf", "qdrant-dbsf"):
        space = SPACES[name]
        lists = space.ranked_lists(preset_runs(space, ds, "test"), space.defaults(), limit=1000)
        modelled = best = worst = 0.0
        moved = 0
        for q, rel in qrels.items():
            ranked = lists.get(q, [])
            groups: list[tuple[float, list[str]]] = []
            for d, s in ranked:
                s32 = float(np.float32(s))
                if groups and groups[-1][0] == s32:
                    groups[-1][1].append(d)
                else:
                    groups.append((s32, [d]))
            b = ndcg10([d for _, g in groups for d in sorted(g, key=lambda d: -rel.get(d, 0))], rel)
            w = ndcg10([d for _, g in groups for d in sorted(g, key=lambda d: rel.get(d, 0))], rel)
            modelled += ndcg10([d for d, _ in ranked], rel)
            best, worst, moved = best + b, worst + w, moved + (b != w)
        n = len(qrels)
        print(f"{name} at its defaults, scifact test ({n} queries): nDCG@10 {modelled / n:.4f} "
              f"in rrfbench's order; {worst / n:.4f} to {best / n:.4f} over tie orders; "
              f"{moved} queries whose value depends on the order")
    return 0


if __name__ == "__main__":
    sys.exit(main())
