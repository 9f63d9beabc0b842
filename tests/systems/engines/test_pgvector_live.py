"""PostgreSQL + pgvector, live: the server from the ``pgserver`` wheel (PostgreSQL 16.2 with
pgvector 0.6.2 inside) started by the test in a temporary data directory, on a Unix socket only,
and stopped afterwards even when a test fails. It indexes the 400-document cranfield cut
(full-text ``tsvector`` with a GIN index, the dense model's embeddings as ``vector(384)``);
per query it fetches each side's ranking from PostgreSQL with the statement's own per-side
SELECTs, fuses them with rrfbench's model (``pgvector-rrf``), runs the exported statement, and
asserts the same top 10 (documents, order and fused scores) on every query at three settings.
Skipped where the engines extra is not installed (``pip install -e '.[engines]'``)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from rrfbench.systems.engines import pgvector as pg_space
from rrfbench.systems.presets.base import Hit
from tests.systems.engines.conftest import N_QUERIES

SETTINGS = [{}, {"k": 10, "vector_weight": 0.5, "keyword_weight": 2.0, "window": 20},
            {"k": 1, "vector_weight": 3.0, "keyword_weight": 1.0, "window": 50}]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """A PostgreSQL server in a fresh data directory, listening on a Unix socket in it (no TCP:
    pgserver starts postgres with ``-h ""``); as root, pgserver runs it as a system user
    ``pgserver`` it creates (PostgreSQL refuses to run as root). Stopped and deleted afterwards,
    whatever the tests did."""
    with warnings.catch_warnings():  # platformdirs: XDG_RUNTIME_DIR unset (a container)
        warnings.simplefilter("ignore")
        pgserver = pytest.importorskip("pgserver")
    pytest.importorskip("psycopg")
    srv = pgserver.get_server(tmp_path_factory.mktemp("pg") / "data", cleanup_mode="delete")
    try:
        uri = srv.get_uri()
        assert "?host=/" in uri and srv.get_postmaster_info().hostname is None  # socket only
        yield srv
    finally:
        srv.cleanup()


@pytest.fixture(scope="module")
def db(server, cut):
    import psycopg

    con = psycopg.connect(server.get_uri(), autocommit=True)
    try:
        for stmt in pg_space.SCHEMA.format(dim=cut["emb"].shape[1]).split(";"):
            if stmt.strip():
                con.execute(stmt)
        with con.cursor() as cur:
            cur.executemany("INSERT INTO docs (docid, body, embedding) VALUES (%s, %s, "
                            "CAST(%s AS vector))",
                            [(d, t, pg_space.vector_literal(e)) for d, t, e in
                             zip(cut["docids"], cut["texts"], cut["emb"], strict=True)])
        con.execute("ANALYZE docs")
        yield con
    finally:
        con.close()


def test_versions_and_the_stored_vectors(db, cut):
    """The versions the mode names, and every embedding stored exactly (float32 text round
    trip)."""
    version = db.execute("SHOW server_version").fetchone()[0]
    ext = db.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'").fetchone()[0]
    assert f"PostgreSQL {version.split()[0]}" in pg_space.VERSION
    assert f"pgvector {ext}" in pg_space.VERSION
    rows = db.execute("SELECT docid, CAST(embedding AS text) FROM docs").fetchall()
    pos = {d: i for i, d in enumerate(cut["docids"])}
    got = np.array([np.array(v.strip("[]").split(","), dtype=np.float32) for _, v in
                    sorted(rows, key=lambda r: pos[r[0]])])
    assert np.array_equal(got, cut["emb"])


def test_pgvector_rrf_statement_equals_rrfbench(db, cut):
    space = pg_space.RRF
    checked = one_sided = short_keyword = 0
    for text, qe in zip(cut["qtexts"], cut["qemb"], strict=True):
        query = {"query_embedding": pg_space.vector_literal(qe), "query_text": text}
        for setting in SETTINGS:
            params = space.defaults() | setting
            binds = {**pg_space.params_of(params), **query}
            vec = db.execute(pg_space.VECTOR_SQL, binds).fetchall()
            key = db.execute(pg_space.KEYWORD_SQL, binds).fetchall()
            assert len(vec) == params["window"] and len(key) <= params["window"]
            lists = {"vector": [Hit(d, -s) for d, s in vec],
                     "keyword": [Hit(d, float(s)) for d, s in key]}
            ours = space.fuse_query(lists, params, 10)
            theirs = db.execute(pg_space.SQL, binds).fetchall()
            assert [d for d, _ in ours] == [d for d, _ in theirs], (text, setting)
            assert [s for _, s in ours] == [s for _, s in theirs], (text, setting)  # exact
            one_sided += len({d for d, _ in theirs} ^ ({d for d, _ in vec}
                                                        & {d for d, _ in key}))
            short_keyword += len(key) < params["window"]
            checked += 1
    assert checked == len(SETTINGS) * N_QUERIES
    assert one_sided and short_keyword   # documents from one side only; lists shorter than the window


def test_the_keyword_side_ors_the_lexemes(db):
    """plainto_tsquery alone ANDs the words (a long question matches almost nothing); the
    statement's keyword side ORs the same lexemes."""
    text = "what is the heat transfer to a blunt body in hypersonic flow of a dissociated gas"
    and_q, or_q = db.execute(
        "SELECT CAST(plainto_tsquery('english', %(t)s) AS text), CAST(CAST(replace(CAST("
        "plainto_tsquery('english', %(t)s) AS text), ' & ', ' | ') AS tsquery) AS text)",
        {"t": text}).fetchone()
    assert " & " in and_q and " & " not in or_q
    assert sorted(and_q.split(" & ")) == sorted(or_q.split(" | "))
    n_and = db.execute("SELECT count(*) FROM docs WHERE tsv @@ plainto_tsquery('english', %s)",
                       (text,)).fetchone()[0]
    n_or = len(db.execute(pg_space.KEYWORD_SQL, {"query_text": text, "window": 1000}).fetchall())
    assert n_and < 5 < n_or
