"""PostgreSQL + pgvector without a server: the model's formula by hand, the export's text (the
statement and its bind values), and the statement's placeholders. The round trip against a
running PostgreSQL is tests/systems/engines/test_pgvector_live.py."""

import re

import numpy as np
import pytest

from rrfbench.core.runs import Run
from rrfbench.outputs.exporters import formats
from rrfbench.systems.engines import ENGINES, SPACES, get_space
from rrfbench.systems.engines import pgvector as pg
from rrfbench.systems.presets.base import Hit


def L(*ids):
    return [Hit(d, 0.0) for d in ids]


def fuse(params, vec, key, limit=10):
    space = pg.RRF
    return space.fuse_query({"vector": vec, "keyword": key}, space.defaults() | params, limit)


def test_registered_with_its_export_format():
    assert get_space("pgvector-rrf") is pg.RRF and SPACES["pgvector-rrf"].live
    assert "pgvector" in ENGINES and "pgvector" in formats()
    d = pg.RRF.defaults()
    assert (d["k"], d["vector_weight"], d["keyword_weight"], d["window"]) == (60, 1.0, 1.0, 10)
    assert pg.RRF.streams == {"vector": "dense", "keyword": "bm25"}
    notes = " ".join(f.note for f in pg.RRF.fidelity)
    assert "ts_rank_cd" in notes and "pgvector/pgvector@" in notes and "postgres/postgres@" in notes


def test_the_formula_by_hand():
    # vector a, b, c; keyword c, d, a; k = 1: a = 1/2 + 1/4, c = 1/4 + 1/2 (a tie: docid a
    # first), b = 1/3 and d = 1/3 (a tie: b first), not the order first seen
    got = fuse({"k": 1}, L("a", "b", "c"), L("c", "d", "a"))
    assert got == [("a", 0.75), ("c", 0.75), ("b", 1 / 3), ("d", 1 / 3)]
    # weights multiply the reciprocal rank (rank 1-based): k = 60, vector 2, keyword 0.5
    got = dict(fuse({"vector_weight": 2.0, "keyword_weight": 0.5}, L("a", "b", "c"),
                    L("c", "d", "a")))
    assert got == {"a": 2 / 61 + 0.5 / 63, "b": 2 / 62, "c": 2 / 63 + 0.5 / 61, "d": 0.5 / 62}
    assert got["b"] == pytest.approx(0.03225806451612903, rel=0, abs=1e-17)
    # a document in one list only gets 0 from the other; ties by docid ("10" < "9": text order)
    got = fuse({}, L("9"), L("10"))
    assert got == [("10", 1 / 61), ("9", 1 / 61)]
    # weight 0: the list adds 0, its documents still enter
    assert dict(fuse({"keyword_weight": 0.0}, L("a"), L("b")))["b"] == 0.0


def test_the_window_cuts_each_list():
    vec = Run.from_dict({"q": {f"v{i}": 1 - i / 100 for i in range(30)}}, "x")
    key = Run.from_dict({"q": {f"k{i}": 30 - i for i in range(30)}}, "x")
    out = pg.RRF.query_lists({"vector": vec, "keyword": key}, "q",
                             pg.RRF.defaults() | {"window": 20}, 10)
    assert len(out["vector"]) == len(out["keyword"]) == 20


def test_the_export_holds_the_statement_and_its_binds():
    params = pg.RRF.defaults() | {"k": 5, "vector_weight": 2.0, "keyword_weight": 0.5,
                                  "window": 20}
    text = pg.RRF.exports["pgvector"](params, ["provenance line"])
    assert text.endswith(pg.SQL + ";\n")
    head = text[: -len(pg.SQL) - 2]
    assert all(ln.startswith("-- ") for ln in head.splitlines())
    assert ("-- bind window = 20, rrf_k = 5, weight_vector = 2, weight_keyword = 0.5, "
            "limit = 10;") in head
    assert "verified against PostgreSQL 16.2 + pgvector 0.6.2" in head
    assert "provenance line" in head and "CREATE TABLE docs" in head
    assert "SET hnsw.ef_search to at least the window (20)" in head
    # every placeholder is a bind of params_of or the query's own two; no stray % (psycopg)
    names = set(re.findall(r"%\((\w+)\)s", pg.SQL))
    assert names == set(pg.params_of(params)) | {"query_embedding", "query_text"}
    assert pg.SQL.count("%") == len(re.findall(r"%\(\w+\)s", pg.SQL))
    # the statement's shape: both per-side SELECTs, ranks, double precision, the join, ties
    flat = " ".join(pg.SQL.split())
    assert " ".join(pg.VECTOR_SQL.split()) in flat and " ".join(pg.KEYWORD_SQL.split()) in flat
    assert pg.SQL.count("row_number() OVER") == 2 and "FULL OUTER JOIN" in pg.SQL
    assert pg.SQL.count("AS double precision") == 6 and "numeric" not in pg.SQL
    assert pg.SQL.rstrip().endswith('ORDER BY score DESC, docid COLLATE "C" LIMIT %(limit)s')


def test_vector_literal_reads_back_as_the_same_float32():
    x = np.random.default_rng(0).normal(size=384).astype(np.float32)
    lit = pg.vector_literal(x)
    assert lit.startswith("[") and lit.endswith("]") and " " not in lit
    assert np.array_equal(np.array(lit[1:-1].split(","), dtype=np.float32), x)
