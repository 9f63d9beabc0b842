"""rrfbench FTS5 retrieval vs raw sqlite3 with the same MATCH strings (same process).

scifact test, 300 queries, depth 1000, index already built. Goal: ratio <= 1.1.
Last line: ``ratio_vs_raw_sqlite: <float>``.
"""

import sqlite3

from _common import best_of

from rrfbench import load_dataset
from rrfbench.retrievers.fts5 import FTS5Retriever, build_or_tokens


def main():
    ds = load_dataset("scifact")
    queries = ds.split_queries("test")
    r = FTS5Retriever()
    r.connect(ds).close()  # build the index once
    path = r.index_path(ds)
    matches = [build_or_tokens(t) for t in queries.text]

    def ours():
        return r.retrieve(ds, queries, 1000)

    def raw():
        con = sqlite3.connect(path)
        out = []
        for m in matches:
            if m is None:
                continue
            out.append(con.execute("SELECT docid, bm25(docs, 0.0, 1.0, 1.0) AS s FROM docs WHERE "
                                   "docs MATCH ? ORDER BY s, docid LIMIT 1000", (m,)).fetchall())
        con.close()
        return out

    raw(), ours()
    t_ours, t_raw = [], []
    for _ in range(3):
        t_ours.append(best_of(ours, 1)[0])
        t_raw.append(best_of(raw, 1)[0])
    a, b = min(t_ours), min(t_raw)
    print(f"rrfbench fts5: {a:.3f} s ({len(queries) / a:.1f} queries/s, builds a Run)")
    print(f"raw sqlite3:   {b:.3f} s ({len(queries) / b:.1f} queries/s)")
    print(f"ratio_vs_raw_sqlite: {a / b:.3f}")


if __name__ == "__main__":
    main()
