"""SQLite: FTS5 for keywords and sqlite-vec for vectors, fused by reciprocal rank fusion
written in SQL (the pattern of sqlite-vec's hybrid-search example).

The statement is rrfbench's own (:data:`SQL`), so the space is exact: each side's top
``window`` rows ranked by ``row_number()`` (FTS5 ``rank``, sqlite-vec ``distance``; ties by
rowid), ``weight / (k + rank)`` per side (rank 1-based), a FULL OUTER JOIN, ordered by the
fused score descending and the document id ascending. The tests run it on apsw with sqlite-vec
0.1.9 loaded (Python's own sqlite3 module cannot load extensions here).
"""

from __future__ import annotations

from ...core.literals import comment_block, num
from .base import EXACT, EngineSpace, Fidelity, fidelity_common, knobs_rrf, rrf_contributions

VERSION = "SQLite 3.54 (apsw 3.54.1.0) + FTS5 + sqlite-vec 0.1.9"

SQL = """WITH vec_knn AS MATERIALIZED (
  SELECT rowid AS doc_rowid, distance
  FROM vec_docs WHERE embedding MATCH :query_embedding AND k = :window
), vec_matches AS (
  SELECT doc_rowid, row_number() OVER (ORDER BY distance, doc_rowid) AS rank_number
  FROM vec_knn
), fts_matches AS (
  SELECT rowid AS doc_rowid, row_number() OVER (ORDER BY rank, rowid) AS rank_number
  FROM fts_docs WHERE fts_docs MATCH :fts_query ORDER BY rank, rowid LIMIT :window
), fused AS (
  SELECT coalesce(v.doc_rowid, f.doc_rowid) AS doc_rowid,
         coalesce(:weight_vec / (:rrf_k + v.rank_number), 0.0)
           + coalesce(:weight_fts / (:rrf_k + f.rank_number), 0.0) AS score
  FROM vec_matches v FULL OUTER JOIN fts_matches f ON v.doc_rowid = f.doc_rowid
)
SELECT docs.docid, fused.score FROM fused JOIN docs ON docs.rowid = fused.doc_rowid
ORDER BY fused.score DESC, docs.docid LIMIT :limit"""


def params_of(params: dict, limit: int = 10) -> dict:
    """The statement's named parameters for knob values (the query's own go in at run time)."""
    return {"window": int(params["window"]), "rrf_k": float(params["k"]),
            "weight_vec": float(params["vector_weight"]),
            "weight_fts": float(params["keyword_weight"]), "limit": int(limit)}


def _export(params: dict, prov: list[str]) -> str:
    p = params_of(params)
    binds = ", ".join(f":{k} = {num(v)}" for k, v in p.items())
    return (comment_block("--", ["Tuned by rrfbench.", f"verified against {VERSION}",
                                 f"bind {binds}; :query_embedding (float32 blob), :fts_query "
                                 "(an FTS5 MATCH expression)"] + prov)
            + SQL + ";\n")


class SQLiteRRF(EngineSpace):
    engine, mode, version, live, ties = "sqlite", "rrf", VERSION, True, "docid"

    def contributions(self, lists, params, limit):
        k = float(params["k"])
        return rrf_contributions(self, lists, params, lambda p, w, _: w / (k + (p + 1)))


RRF = SQLiteRRF(
    name="sqlite-rrf", system=f"SQLite FTS5 + sqlite-vec, RRF in SQL ({VERSION})",
    streams={"vector": "dense", "keyword": "fts5"},
    knobs=knobs_rrf("k", 60, 10),
    fidelity=(Fidelity("the SQL statement rrfbench exports, run as is", EXACT,
                       "the statement is rrfbench's own (rrfbench/systems/engines/sqlite.py SQL; "
                       "the pattern of asg017/sqlite-vec's hybrid-search example), run on apsw "
                       "with sqlite-vec 0.1.9 in the round trip"),
              Fidelity("ties: fused score, then document id", EXACT),
              *fidelity_common(True, "FTS5 (or_tokens)")),
    default_limit=10, exports={"sqlite": _export}, extra_defaults={"mode": "rrf"})
SPACES = (RRF,)
