"""PostgreSQL + pgvector: full-text search for keywords and pgvector's cosine distance for
vectors, fused by reciprocal rank fusion written in one SQL statement (the shape of
pgvector-python's ``examples/hybrid_search/rrf.py``, pgvector/pgvector-python@33293bfd7e15).

The statement is rrfbench's own (:data:`SQL`, psycopg's ``%(name)s`` placeholders), so the
space is exact:

- vector side (:data:`VECTOR_SQL`): the ``window`` nearest documents by pgvector's cosine
  distance ``embedding <=> query`` ascending, then the document id; pgvector 0.6.2 computes it
  as ``1 - dot / sqrt(|a|^2 |b|^2)`` with float32 sums and returns a double
  (pgvector/pgvector@96ff19be4487, tag v0.6.2, ``src/vector.c`` ``cosine_distance``). Without a
  vector index the search is exact; with an HNSW or IVFFlat index it is approximate, and an HNSW
  scan returns at most ``hnsw.ef_search`` rows (40 by default; README.md of the same tag,
  "Query Options" and "Troubleshooting"): set it to at least the window. The document-id tie-break
  in this side's ORDER BY keeps PostgreSQL's planner off such an index (EXPLAIN on 16.2 +
  0.6.2 with an HNSW index: ``ORDER BY distance, docid`` is a sequential scan and a sort,
  ``ORDER BY distance`` alone an index scan): the statement is an exact search. On a table
  too large for that, drop the tie-break from the inner ORDER BY to use the index (recall then
  approximate and ties at the window's edge arbitrary: the model no longer holds exactly).
- keyword side (:data:`KEYWORD_SQL`): documents whose ``tsv`` (``to_tsvector('english', ...)``,
  a stored column with a GIN index) matches the query's lexemes joined by OR, ranked by
  ``ts_rank_cd`` descending (a ``real``, float4, so ties happen; ``src/backend/utils/adt/
  tsrank.c`` ``ts_rankcd_tt`` returns ``PG_RETURN_FLOAT4``, postgres/postgres@92268b35d04c),
  then the document id; the top ``window``. OR, not AND: ``plainto_tsquery`` ANDs the words
  (``data.qoperator = OP_AND`` in ``src/backend/tsearch/to_tsany.c`` ``plainto_tsquery_byid``),
  which on a long question matches almost nothing, so the statement turns its ``&`` into ``|``
  (``replace(plainto_tsquery(...)::text, ' & ', ' | ')::tsquery``: the same lexemes, stop words
  dropped and stemmed by the english configuration; a lexeme holds no space, so only operators
  are replaced), the OR of the query's tokens that the SQLite mode also uses.
- each side's rows ranked by ``row_number()`` (1-based, no shared ranks), ``weight / (k +
  rank)`` per side in double precision (every bind cast explicitly: ``row_number()`` is a
  bigint, and pgvector-python's example computes ``1.0 / (k + rank)`` in ``numeric``), a FULL
  OUTER JOIN of the two top-``window`` lists, a missing side 0, ordered by the fused score
  descending and the document id ascending (``COLLATE "C"``: byte order, which for UTF-8 is
  Python's code-point order, whatever the database's collation), cut to ``limit``.

pgvector-python's example differs from this statement, and teams that copied it get its
behaviour, not this mode's: ``RANK()`` (tied documents share a rank), ``plainto_tsquery``'s AND,
``numeric`` arithmetic, no weights, a fixed window of 20 and no tie-break in the final order.

The tests start PostgreSQL 16.2 with pgvector 0.6.2 from the ``pgserver`` wheel (0.1.4) in a
temporary directory on a Unix socket and talk to it with psycopg 3
(``tests/systems/engines/test_pgvector_live.py``).
"""

from __future__ import annotations

import numpy as np

from ...core.literals import comment_block, num
from .base import EXACT, EngineSpace, Fidelity, fidelity_common, knobs_rrf, rrf_contributions

VERSION = "PostgreSQL 16.2 + pgvector 0.6.2 (pgserver 0.1.4, psycopg 3.3.9)"

SCHEMA = """CREATE EXTENSION IF NOT EXISTS vector;
CREATE TABLE docs (
  docid text PRIMARY KEY,
  body text NOT NULL,
  tsv tsvector GENERATED ALWAYS AS (to_tsvector('english', body)) STORED,
  embedding vector({dim}) NOT NULL
);
CREATE INDEX docs_tsv ON docs USING gin (tsv);"""

# each side's top `window` rows, (docid, score): the per-stream SELECTs the statement fuses
VECTOR_SQL = """SELECT docid, embedding <=> CAST(%(query_embedding)s AS vector) AS distance
  FROM docs ORDER BY distance, docid COLLATE "C" LIMIT %(window)s"""

KEYWORD_SQL = """SELECT docs.docid, ts_rank_cd(docs.tsv, q.query) AS rank_cd
  FROM docs, (SELECT CAST(replace(CAST(plainto_tsquery('english', %(query_text)s) AS text),
                                  ' & ', ' | ') AS tsquery) AS query) AS q
  WHERE docs.tsv @@ q.query ORDER BY rank_cd DESC, docs.docid COLLATE "C" LIMIT %(window)s"""


def _indent(sql: str, by: str = "    ") -> str:
    return "\n".join(by + ln for ln in sql.splitlines())


SQL = f"""WITH vector_top AS (
  SELECT docid, row_number() OVER (ORDER BY distance, docid COLLATE "C") AS rank_number
  FROM (
{_indent(VECTOR_SQL)}
  ) AS knn
), keyword_top AS (
  SELECT docid, row_number() OVER (ORDER BY rank_cd DESC, docid COLLATE "C") AS rank_number
  FROM (
{_indent(KEYWORD_SQL)}
  ) AS matches
), fused AS (
  SELECT coalesce(v.docid, f.docid) AS docid,
         coalesce(CAST(%(weight_vector)s AS double precision)
                  / (CAST(%(rrf_k)s AS double precision) + v.rank_number),
                  CAST(0 AS double precision))
         + coalesce(CAST(%(weight_keyword)s AS double precision)
                    / (CAST(%(rrf_k)s AS double precision) + f.rank_number),
                    CAST(0 AS double precision)) AS score
  FROM vector_top v FULL OUTER JOIN keyword_top f ON v.docid = f.docid
)
SELECT docid, score FROM fused ORDER BY score DESC, docid COLLATE "C" LIMIT %(limit)s"""


def vector_literal(values) -> str:
    """A query embedding as pgvector's text input (``'[0.1,0.2,...]'``): each float32 written
    with the shortest digits that read back as the same float32 (pgvector parses with
    ``strtof``), so the server holds exactly the caller's vector."""
    arr = np.asarray(values, dtype=np.float32)
    return "[" + ",".join(np.format_float_positional(x, unique=True, trim="-")
                          for x in arr) + "]"


def params_of(params: dict, limit: int = 10) -> dict:
    """The statement's named parameters for knob values (the query's own, ``query_embedding``
    and ``query_text``, go in at run time)."""
    return {"window": int(params["window"]), "rrf_k": float(params["k"]),
            "weight_vector": float(params["vector_weight"]),
            "weight_keyword": float(params["keyword_weight"]), "limit": int(limit)}


def _export(params: dict, prov: list[str]) -> str:
    p = params_of(params)
    binds = ", ".join(f"{k} = {num(v)}" for k, v in p.items())
    return (comment_block("--", ["Tuned by rrfbench.", f"verified against {VERSION}",
                                 f"bind {binds};",
                                 "query_embedding: the query's vector as pgvector text "
                                 "('[0.1,0.2,...]') or a numpy array with "
                                 "pgvector.psycopg.register_vector; query_text: the question "
                                 "as typed (its lexemes are ORed)",
                                 "placeholders in psycopg's %(name)s style; the table:",
                                 *SCHEMA.format(dim="<dimension>").splitlines(),
                                 "exact search: the docid tie-break keeps the planner off a "
                                 "vector index; with an HNSW index and the tie-break dropped, "
                                 "SET hnsw.ef_search to at "
                                 f"least the window ({p['window']})"]
                          + prov)
            + SQL + ";\n")


class PgvectorRRF(EngineSpace):
    engine, mode, version, live, ties = "pgvector", "rrf", VERSION, True, "docid"

    def contributions(self, lists, params, limit):
        k = float(params["k"])
        return rrf_contributions(self, lists, params, lambda p, w, _: w / (k + (p + 1)))


# rrfbench's streams in the engine table: BM25 for ts_rank_cd, its exact dense top-k for <=>
COMMON = fidelity_common(True, "BM25 (bm25s, Lucene's formula; PostgreSQL ranks by "
                               "ts_rank_cd)")

RRF = PgvectorRRF(
    name="pgvector-rrf",
    system=f"PostgreSQL full-text search + pgvector, RRF in SQL ({VERSION})",
    streams={"vector": "dense", "keyword": "bm25"},
    knobs=knobs_rrf("k", 60, 10),
    fidelity=(Fidelity("the SQL statement rrfbench exports, run as is", EXACT,
                       "weight / (k + row_number) per side in double precision over a FULL "
                       "OUTER JOIN of both top-window lists, a missing side 0: the model's "
                       "w / (k + (p + 1)) in float64, score for score"),
              Fidelity("ties: fused score, then document id", EXACT,
                       'ORDER BY score DESC, docid COLLATE "C" (byte order, as Python sorts); '
                       "each side's ties by docid too"),
              Fidelity("the statement's keyword side", EXACT,
                       "ts_rank_cd (a float4) over to_tsvector('english') matches of the "
                       "query's lexemes ORed: plainto_tsquery with & turned into | "
                       "(plainto_tsquery ANDs: postgres/postgres@92268b35d04c "
                       "src/backend/tsearch/to_tsany.c; ts_rank_cd: src/backend/utils/adt/"
                       "tsrank.c, checked live on 16.2)"),
              Fidelity("the statement's vector side", EXACT,
                       "pgvector <=> (1 - cosine with float32 sums: pgvector/pgvector@"
                       "96ff19be4487 src/vector.c cosine_distance), exact without a vector "
                       "index; an HNSW index is approximate and returns at most "
                       "hnsw.ef_search rows (40 by default; README.md of that commit)"),
              *COMMON[:2],
              Fidelity("against the real engine", EXACT,
                       "round-tripped in the tests (tests/systems/engines/"
                       "test_pgvector_live.py: PostgreSQL 16.2 + pgvector 0.6.2 from pgserver)")),
    default_limit=10, exports={"pgvector": _export}, extra_defaults={"mode": "rrf"})
SPACES = (RRF,)
