"""Round trips in real engines that run embedded here: SQLite (FTS5 + sqlite-vec, on apsw),
Qdrant (qdrant-client's local mode), LanceDB and Milvus Lite (pymilvus's local server). Each indexes a cut of cranfield (400 documents)
with the engine's own keyword and vector search and its real embeddings; per query it fetches
each stream's ranking from the engine, fuses them with rrfbench's model of the engine's fusion
(the exported constants), runs the exported hybrid request in the engine, and asserts the two
top 10s are the same documents in the same order. Skipped where the engines extra is not
installed (``pip install -e '.[engines]'``; ``make test`` installs it)."""

from __future__ import annotations

import math
import re
import warnings
from collections import Counter

import pytest

from rrfbench.systems.engines import lancedb as lance_space
from rrfbench.systems.engines import milvus as milvus_space
from rrfbench.systems.engines import qdrant as qdrant_space
from rrfbench.systems.engines import sqlite as sqlite_space
from rrfbench.systems.engines.base import agrees_up_to_ties
from rrfbench.systems.presets.base import Hit
from tests.systems.engines.conftest import N_QUERIES

SETTINGS = [{}, {"k": 10, "vector_weight": 0.5, "keyword_weight": 2.0, "window": 20},
            {"k": 1, "vector_weight": 3.0, "keyword_weight": 1.0, "window": 50}]


def _agree(ours, theirs, what):
    assert [d for d, _ in ours][:10] == list(theirs)[:10], what


# --------------------------------------------------------------------------- SQLite
@pytest.fixture(scope="module")
def sqlite_db(cut):
    apsw = pytest.importorskip("apsw")
    sqlite_vec = pytest.importorskip("sqlite_vec")
    con = apsw.Connection(":memory:")
    con.enable_load_extension(True)
    con.load_extension(sqlite_vec.loadable_path())
    dim = cut["emb"].shape[1]
    con.execute("CREATE TABLE docs(rowid INTEGER PRIMARY KEY, docid TEXT)")
    con.execute("CREATE VIRTUAL TABLE fts_docs USING fts5(text, tokenize='porter unicode61')")
    con.execute(f"CREATE VIRTUAL TABLE vec_docs USING vec0(embedding float[{dim}])")
    with con:
        for i, (d, t, e) in enumerate(zip(cut["docids"], cut["texts"], cut["emb"], strict=True),
                                      1):
            con.execute("INSERT INTO docs VALUES (?, ?)", (i, d))
            con.execute("INSERT INTO fts_docs(rowid, text) VALUES (?, ?)", (i, t))
            con.execute("INSERT INTO vec_docs(rowid, embedding) VALUES (?, ?)", (i, e.tobytes()))
    return con


def test_sqlite_rrf_statement_equals_rrfbench(sqlite_db, cut):
    from rrfbench.retrievers.fts5 import build_or_tokens

    con, space = sqlite_db, sqlite_space.RRF
    docid = dict(con.execute("SELECT rowid, docid FROM docs").fetchall())
    checked = 0
    for text, qe in zip(cut["qtexts"], cut["qemb"], strict=True):
        match = build_or_tokens(text)
        if match is None:
            continue
        for setting in SETTINGS:
            params = space.defaults() | setting
            w = int(params["window"])
            vec = con.execute("SELECT rowid, distance FROM vec_docs WHERE embedding MATCH ? "
                              "AND k = ?", (qe.tobytes(), w)).fetchall()
            vec = sorted(vec, key=lambda r: (r[1], r[0]))
            fts = con.execute("SELECT rowid, rank FROM fts_docs WHERE fts_docs MATCH ? "
                              "ORDER BY rank, rowid LIMIT ?", (match, w)).fetchall()
            lists = {"vector": [Hit(docid[r], -s) for r, s in vec],
                     "keyword": [Hit(docid[r], -s) for r, s in fts]}
            ours = space.fuse_query(lists, params, 10)
            theirs = con.execute(sqlite_space.SQL, {**sqlite_space.params_of(params),
                                                    "query_embedding": qe.tobytes(),
                                                    "fts_query": match}).fetchall()
            _agree(ours, [d for d, _ in theirs], (text, setting))
            assert [s for _, s in ours] == pytest.approx([s for _, s in theirs][:len(ours)],
                                                         rel=0, abs=0)
            checked += 1
    assert checked >= 3 * 20


# --------------------------------------------------------------------------- Qdrant
def _bm25_vectors(texts, k1=1.2, b=0.75):
    """Document term weights such that a query's dot product with them is its BM25 score
    (Lucene's idf), and a tokenizer for queries: the keyword side Qdrant searches as sparse
    vectors."""
    tok = [re.findall(r"[a-z0-9]+", t.lower()) for t in texts]
    vocab = {w: i for i, w in enumerate(sorted({w for ts in tok for w in ts}))}
    df = Counter(w for ts in tok for w in set(ts))
    n, avg = len(tok), sum(map(len, tok)) / len(tok)
    idf = {w: math.log(1 + (n - df[w] + 0.5) / (df[w] + 0.5)) for w in vocab}
    docs = []
    for ts in tok:
        tf = Counter(ts)
        docs.append({vocab[w]: idf[w] * c * (k1 + 1) / (c + k1 * (1 - b + b * len(ts) / avg))
                     for w, c in tf.items()})

    def query(text):
        c = Counter(w for w in re.findall(r"[a-z0-9]+", text.lower()) if w in vocab)
        return {vocab[w]: float(v) for w, v in c.items()}
    return docs, query


@pytest.fixture(scope="module")
def qdrant(cut):
    qc = pytest.importorskip("qdrant_client")
    from qdrant_client import models

    client = qc.QdrantClient(":memory:")
    client.create_collection(
        "docs", vectors_config={"dense": models.VectorParams(size=cut["emb"].shape[1],
                                                             distance=models.Distance.COSINE)},
        sparse_vectors_config={"sparse": models.SparseVectorParams()})
    docs, query = _bm25_vectors(cut["texts"])
    client.upsert("docs", [models.PointStruct(id=i, vector={
        "dense": cut["emb"][i].tolist(),
        "sparse": models.SparseVector(indices=list(v), values=list(v.values()))})
        for i, v in enumerate(docs)])
    return client, query


@pytest.mark.parametrize("mode", ["rrf", "dbsf"])
def test_qdrant_prefetch_fusion_equals_rrfbench(qdrant, cut, mode):
    from qdrant_client import models

    client, query = qdrant
    space = qdrant_space.RRF if mode == "rrf" else qdrant_space.DBSF
    settings = ([{}, {"k": 10, "vector_weight": 0.5, "keyword_weight": 2.0, "prefetch_limit": 20},
                 {"k": 60, "vector_weight": 3.0, "keyword_weight": 1.0, "prefetch_limit": 50}]
                if mode == "rrf" else [{}, {"prefetch_limit": 50}])
    ids = cut["docids"]
    checked = 0
    for text, qe in zip(cut["qtexts"], cut["qemb"], strict=True):
        sq = query(text)
        if not sq:
            continue
        sparse = models.SparseVector(indices=list(sq), values=list(sq.values()))
        for setting in settings:
            params = space.defaults() | setting
            lim = int(params["prefetch_limit"])
            dense_l = client.query_points("docs", query=qe.tolist(), using="dense",
                                          limit=lim).points
            sparse_l = client.query_points("docs", query=sparse, using="sparse", limit=lim).points
            lists = {"vector": [Hit(ids[p.id], p.score) for p in dense_l],
                     "keyword": [Hit(ids[p.id], p.score) for p in sparse_l]}
            ours = space.fuse_query(lists, params, 10)
            fusion = (models.RrfQuery(rrf=models.Rrf(k=int(params["k"]), weights=[
                params["vector_weight"], params["keyword_weight"]])) if mode == "rrf"
                else models.FusionQuery(fusion=models.Fusion.DBSF))
            theirs = client.query_points("docs", prefetch=[
                models.Prefetch(query=qe.tolist(), using="dense", limit=lim),
                models.Prefetch(query=sparse, using="sparse", limit=lim)],
                query=fusion, limit=10).points
            _agree(ours, [ids[p.id] for p in theirs], (text, setting))
            # the server's order among exact ties is arbitrary: the check a server round trip
            # uses accepts the local order, and would accept any order of tied documents
            assert agrees_up_to_ties(space.fuse_query(lists, params, 1000),
                                     [ids[p.id] for p in theirs]), (text, setting)
            checked += 1
    assert checked >= len(settings) * 20


def test_qdrant_export_is_a_valid_request():
    """The exported JSON request parses as qdrant-client's own QueryRequest (placeholders
    replaced by a vector and a sparse vector)."""
    pytest.importorskip("qdrant_client")
    import json

    from qdrant_client import models

    for space in (qdrant_space.RRF, qdrant_space.DBSF):
        d = json.loads(space.exports["qdrant"](space.defaults() | {"k": 7}, ["p"]))
        d.pop("_comment")
        d["prefetch"][0]["query"] = [0.1, 0.2]
        d["prefetch"][1]["query"] = {"indices": [1], "values": [1.0]}
        req = models.QueryRequest(**d)
        if space is qdrant_space.RRF:
            assert req.query.rrf.k == 7 and req.query.rrf.weights == [1.0, 1.0]
        else:
            assert req.query.fusion == models.Fusion.DBSF
        assert req.prefetch[0].limit == 10 and req.limit == 10


# --------------------------------------------------------------------------- LanceDB
@pytest.fixture(scope="module")
def lance(cut, tmp_path_factory):
    lancedb = pytest.importorskip("lancedb")
    from lancedb.index import FTS

    db = lancedb.connect(str(tmp_path_factory.mktemp("lance")))
    tbl = db.create_table("docs", data=[
        {"docid": d, "text": t, "vector": e.tolist()}
        for d, t, e in zip(cut["docids"], cut["texts"], cut["emb"], strict=True)])
    tbl.create_index("text", config=FTS())
    return tbl


@pytest.mark.parametrize("mode", ["rrf", "linear"])
def test_lancedb_hybrid_equals_rrfbench(lance, cut, mode):
    from lancedb.rerankers import LinearCombinationReranker, RRFReranker

    space = lance_space.RRF if mode == "rrf" else lance_space.LINEAR
    settings = ([{}, {"K": 5, "limit": 20}, {"K": 100, "limit": 50}] if mode == "rrf"
                else [{}, {"weight": 0.3, "limit": 20}])
    checked = 0
    for text, qe in zip(cut["qtexts"], cut["qemb"], strict=True):
        for setting in settings:
            params = space.defaults() | setting
            lim = int(params["limit"])
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                vec = (lance.search(qe.tolist(), query_type="vector").distance_type("cosine")
                       .limit(lim).to_list())
                fts = lance.search(text, query_type="fts").limit(lim).to_list()
                reranker = (RRFReranker(K=int(params["K"])) if mode == "rrf"
                            else LinearCombinationReranker(weight=float(params["weight"])))
                theirs = (lance.search(query_type="hybrid").vector(qe.tolist()).text(text)
                          .distance_type("cosine").limit(lim).rerank(reranker).to_list())
            lists = {"vector": [Hit(r["docid"], 1.0 - r["_distance"]) for r in vec],
                     "keyword": [Hit(r["docid"], r["_score"]) for r in fts]}
            ours = space.fuse_query(lists, params, lim)
            _agree(ours, [r["docid"] for r in theirs], (text, setting))
            checked += 1
    assert checked >= len(settings) * 20


# --------------------------------------------------------------------------- Milvus (Lite)
@pytest.fixture(scope="module")
def milvus(cut, tmp_path_factory):
    """Milvus Lite (pymilvus's local server, a Python re-implementation of Milvus): a dense
    COSINE field (FLAT, exact) and Milvus's own BM25 function over the text."""
    pytest.importorskip("milvus_lite")
    pym = pytest.importorskip("pymilvus")
    from pymilvus import DataType, Function, FunctionType

    client = pym.MilvusClient(str(tmp_path_factory.mktemp("milvus") / "milvus.db"))
    schema = client.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("text", DataType.VARCHAR, max_length=65535, enable_analyzer=True)
    schema.add_field("dense", DataType.FLOAT_VECTOR, dim=int(cut["emb"].shape[1]))
    schema.add_field("sparse", DataType.SPARSE_FLOAT_VECTOR)
    schema.add_function(Function(name="bm25", function_type=FunctionType.BM25,
                                 input_field_names=["text"], output_field_names=["sparse"]))
    index = client.prepare_index_params()
    index.add_index("dense", index_type="FLAT", metric_type="COSINE")
    index.add_index("sparse", index_type="SPARSE_INVERTED_INDEX", metric_type="BM25")
    client.create_collection("docs", schema=schema, index_params=index)
    # primary keys in docid order: Milvus breaks exact ties by the smaller primary key,
    # rrfbench's model by the smaller docid
    pk = {d: i for i, d in enumerate(sorted(cut["docids"]))}
    client.insert("docs", [{"id": pk[d], "text": t, "dense": e.tolist()} for d, t, e in
                           zip(cut["docids"], cut["texts"], cut["emb"], strict=True)])
    client.load_collection("docs")
    yield client, sorted(cut["docids"])
    client.close()


@pytest.mark.parametrize("mode", ["rrf", "weighted"])
def test_milvus_hybrid_search_equals_rrfbench(milvus, cut, mode):
    """The exported ``hybrid_search`` call (RRFRanker / WeightedRanker with norm_score), run
    as exported in Milvus Lite against rrfbench's model fed with the engine's own two searches: the same top
    10, in order (exact ties by the smaller primary key), each fused score equal to float32
    precision (Lite sums in float64). Milvus Lite's plain BM25 search reports the score
    negated (a distance); the hybrid ranker uses it positive, as Milvus documents."""
    space = milvus_space.RRF if mode == "rrf" else milvus_space.WEIGHTED
    settings = ([{}, {"k": 10, "window": 20}, {"k": 1, "window": 50}] if mode == "rrf"
                else [{}, {"vector_weight": 0.3, "keyword_weight": 0.7, "window": 20},
                      {"vector_weight": 0.8, "keyword_weight": 0.2, "window": 50}])
    milvus, ids = milvus
    checked = 0
    for text, qe in zip(cut["qtexts"], cut["qemb"], strict=True):
        for setting in settings:
            params = space.defaults() | setting
            lim = int(params["window"])
            dense_l = milvus.search("docs", [qe.tolist()], anns_field="dense", limit=lim,
                                    search_params={"metric_type": "COSINE"})[0]
            bm25_l = milvus.search("docs", [text], anns_field="sparse", limit=lim,
                                   search_params={"metric_type": "BM25"})[0]
            assert all(h["distance"] <= 0 for h in bm25_l)  # Lite: BM25 reported negated
            lists = {"vector": [Hit(ids[h["id"]], h["distance"]) for h in dense_l],
                     "keyword": [Hit(ids[h["id"]], -h["distance"]) for h in bm25_l]}
            run = {"client": milvus, "COLLECTION": "docs", "dense_vector": qe.tolist(),
                   "query_text": text}
            exec(space.exports["milvus"](params, []), run)  # the exported call, as shipped
            theirs = run["result"][0]
            ours = space.fuse_query(lists, params, 10)
            _agree(ours, [ids[h["id"]] for h in theirs], (text, setting))
            assert [s for _, s in ours] == pytest.approx([h["distance"] for h in theirs],
                                                         rel=2e-7, abs=0), (text, setting)
            checked += 1
    assert checked == len(settings) * N_QUERIES
