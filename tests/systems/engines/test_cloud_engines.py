"""The three cloud engines modelled from their public reference (not runnable here): Azure AI
Search's hybrid RRF, MongoDB Atlas's $rankFusion and Vertex AI Vector Search's hybrid RRF. Each
formula by hand on two small lists at the engine's defaults and at other weights, the windows,
the export's JSON and where it carries the tuned values, the knobs the engine cannot set, and
the fidelity list (not live, sources cited, assumptions marked)."""

import json
import re

import numpy as np
import pytest

from rrfbench.core.errors import InputError
from rrfbench.core.runs import Run
from rrfbench.systems.engines import ENGINES, SPACES, get_space, spaces_of
from rrfbench.systems.engines.base import NOT_LIVE
from rrfbench.systems.presets.base import ASSUMED, EXACT, NOT_MODELLED, Hit

MODES = ("azure-rrf", "mongodb-rrf", "vertex-rrf")


def L(*pairs):
    return [Hit(d, s) for d, s in pairs]


VEC = L(("a", 0.9), ("b", 0.8), ("c", 0.5))
KEY = L(("c", 12.0), ("d", 7.0), ("a", 3.0))


def fuse(name, params=None, vec=VEC, key=KEY, limit=10):
    s = SPACES[name]
    return s.fuse_query({"vector": vec, "keyword": key}, s.defaults() | (params or {}), limit)


def export(name, params=None):
    s = SPACES[name]
    fmt = s.engine
    return json.loads(s.exports[fmt](s.defaults() | (params or {}), ["provenance line"]))


def windows(name, params):
    vec = Run.from_dict({"q": {f"v{i}": 1 - i / 100 for i in range(30)}}, "x")
    key = Run.from_dict({"q": {f"k{i}": 30.0 - i for i in range(30)}}, "x")
    s = SPACES[name]
    out = s.query_lists({"vector": vec, "keyword": key}, "q", s.defaults() | params, 10)
    return len(out["vector"]), len(out["keyword"])


def test_registered_not_live_with_their_formats():
    for name, engine in zip(MODES, ("azure", "mongodb", "vertex"), strict=True):
        s = get_space(name)
        assert s.engine == engine and engine in ENGINES and spaces_of(engine) == [s]
        assert list(s.exports) == [engine] and not s.live
        assert s.streams == {"vector": "dense", "keyword": "bm25"}
        assert "not run against a live engine" in s.version


# --------------------------------------------------------------------------- Azure AI Search
def test_azure_rrf_by_hand():
    # defaults: 1 / (60 + rank), rank 1-based, vector weight 1, text weight 1 (fixed)
    got = fuse("azure-rrf")
    assert dict(got) == {"a": 1 / 61 + 1 / 63, "b": 1 / 62, "c": 1 / 63 + 1 / 61, "d": 1 / 62}
    # a = c and b = d exactly: the smaller doc id first (assumed)
    assert [d for d, _ in got] == ["a", "c", "b", "d"]
    # the vector query's weight multiplies its reciprocal rank; the text side keeps 1
    got = fuse("azure-rrf", {"vector_weight": 0.25})
    assert [d for d, _ in got] == ["c", "a", "d", "b"]
    assert dict(got) == {"a": 0.25 * (1 / 61) + 1 / 63, "b": 0.25 * (1 / 62),
                         "c": 0.25 * (1 / 63) + 1 / 61, "d": 1 / 62}
    # the weight travels as float32 (the REST spec's type)
    w = float(np.float32(0.3))
    assert dict(fuse("azure-rrf", {"vector_weight": 0.3}))["b"] == w * (1 / 62) != 0.3 * (1 / 62)


def test_azure_windows_and_fixed_knobs():
    assert windows("azure-rrf", {"k": 20, "maxTextRecallSize": 5}) == (20, 5)
    assert windows("azure-rrf", {}) == (30, 30)          # k 50, maxTextRecallSize 1000
    s = SPACES["azure-rrf"]
    assert s.knob("rrf_k").fixed and s.defaults()["rrf_k"] == 60
    with pytest.raises(InputError, match="knob rrf_k is fixed at 60"):
        s.check(s.defaults() | {"rrf_k": 20})
    with pytest.raises(InputError, match="outside the system's range"):
        s.check(s.defaults() | {"vector_weight": 0.0})    # weights must be > 0
    assert "keyword_weight" not in s.defaults()           # no text-side weight
    for params in s.grid():
        s.check(params)
        assert params["vector_weight"] > 0 and 1 <= params["maxTextRecallSize"] <= 10000


def test_azure_request_body():
    body = export("azure-rrf", {"vector_weight": 0.25, "k": 20})
    assert set(body) == {"_comment", "search", "vectorQueries", "top"}   # no hybridSearch, no k=60
    (vq,) = body["vectorQueries"]
    assert vq == {"kind": "vector", "vector": "<dense query vector>", "fields": "embedding",
                  "k": 20, "weight": 0.25}
    assert body["top"] == 10 and "api-version=2025-09-01" in body["_comment"][0]
    tuned = export("azure-rrf", {"maxTextRecallSize": 100})
    assert tuned["hybridSearch"] == {"maxTextRecallSize": 100,
                                     "countAndFacetMode": "countAllResults"}
    assert "api-version=2025-11-01-preview" in tuned["_comment"][0]
    assert tuned["vectorQueries"][0]["weight"] == 1 and tuned["vectorQueries"][0]["k"] == 50


# --------------------------------------------------------------------------- MongoDB $rankFusion
def test_mongodb_rank_fusion_by_hand():
    got = fuse("mongodb-rrf")
    assert dict(got) == {"a": 1 / 61 + 1 / 63, "b": 1 / 62, "c": 1 / 63 + 1 / 61, "d": 1 / 62}
    assert [d for d, _ in got] == ["a", "c", "b", "d"]
    got = fuse("mongodb-rrf", {"vector_weight": 0.5, "keyword_weight": 2.0})
    assert [d for d, _ in got] == ["c", "a", "d", "b"]
    assert dict(got) == {"a": (1 / 61) * 0.5 + (1 / 63) * 2.0, "b": (1 / 62) * 0.5,
                         "c": (1 / 63) * 0.5 + (1 / 61) * 2.0, "d": (1 / 62) * 2.0}
    # the source's worked example: rank 1 in both pipelines, weights 0.5 each
    one = fuse("mongodb-rrf", {"vector_weight": 0.5, "keyword_weight": 0.5},
               vec=L(("x", 1.0)), key=L(("x", 9.0)))
    assert one == [("x", 0.01639344262295082)]
    # ties: fused score, then _id ascending (not the order first seen)
    assert [d for d, _ in fuse("mongodb-rrf", vec=L(("y", 1.0)), key=L(("x", 1.0)))] == ["x", "y"]
    # weight 0: the pipeline adds 0, its documents still enter
    zero = dict(fuse("mongodb-rrf", {"keyword_weight": 0.0}))
    assert zero["d"] == 0.0 and set(zero) == {"a", "b", "c", "d"}


def test_mongodb_windows_and_fixed_constant():
    assert windows("mongodb-rrf", {"vector_limit": 20, "keyword_limit": 5}) == (20, 5)
    assert windows("mongodb-rrf", {}) == (10, 10)
    s = SPACES["mongodb-rrf"]
    assert s.knob("rank_constant").fixed and s.knob("rank_constant").grid == ()
    with pytest.raises(InputError, match="knob rank_constant is fixed at 60"):
        s.check(s.defaults() | {"rank_constant": 10})
    with pytest.raises(InputError, match="outside the system's range"):
        s.check(s.defaults() | {"vector_weight": -1.0})   # weights are non-negative
    assert {p["rank_constant"] for p in s.grid()} == {60}


def test_mongodb_pipeline():
    body = export("mongodb-rrf", {"vector_weight": 0.5, "keyword_weight": 2.0,
                                  "vector_limit": 20, "keyword_limit": 50})
    stage, final = body["pipeline"]
    rf = stage["$rankFusion"]
    assert set(rf) == {"input", "combination"}            # nothing sets the constant
    assert rf["combination"] == {"weights": {"vector": 0.5, "keyword": 2}}
    (vs,) = rf["input"]["pipelines"]["vector"]
    assert vs["$vectorSearch"]["limit"] == 20
    assert vs["$vectorSearch"]["limit"] <= vs["$vectorSearch"]["numCandidates"] <= 10000
    search, limit = rf["input"]["pipelines"]["keyword"]
    assert "$search" in search and limit == {"$limit": 50}
    assert final == {"$limit": 10}


# --------------------------------------------------------------------------- Vertex AI
def test_vertex_rrf_by_hand():
    got = fuse("vertex-rrf")                               # alpha 0.5 (assumed default)
    assert dict(got) == {"a": 0.5 / 61 + 0.5 / 63, "b": 0.5 / 62, "c": 0.5 / 63 + 0.5 / 61,
                         "d": 0.5 / 62}
    got = fuse("vertex-rrf", {"rrf_ranking_alpha": 0.25})
    assert [d for d, _ in got] == ["c", "a", "d", "b"]
    assert dict(got) == {"a": 0.25 / 61 + 0.75 / 63, "b": 0.25 / 62,
                         "c": 0.25 / 63 + 0.75 / 61, "d": 0.75 / 62}
    # alpha 1: dense results only; alpha 0: sparse only (the reference's endpoints)
    assert [d for d, _ in fuse("vertex-rrf", {"rrf_ranking_alpha": 1.0})] == ["a", "b", "c"]
    assert [d for d, _ in fuse("vertex-rrf", {"rrf_ranking_alpha": 0.0})] == ["c", "d", "a"]
    # alpha arrives as a float32
    a = float(np.float32(0.7))
    assert dict(fuse("vertex-rrf", {"rrf_ranking_alpha": 0.7}))["d"] == (1.0 - a) / 62
    # ties: the dense list first (a stable sort; assumed), not the smaller id
    assert [d for d, _ in fuse("vertex-rrf", vec=L(("y", 1.0)), key=L(("x", 1.0)))] == ["y", "x"]


def test_vertex_neighbor_count_and_fixed_constant():
    assert windows("vertex-rrf", {"num_neighbors": 20}) == (20, 20)
    assert len(fuse("vertex-rrf", {"num_neighbors": 2})) == 2    # the response holds 2
    s = SPACES["vertex-rrf"]
    assert s.knob("rrf_k").fixed
    with pytest.raises(InputError, match="knob rrf_k is fixed at 60"):
        s.check(s.defaults() | {"rrf_k": 30})
    with pytest.raises(InputError, match="outside the system's range"):
        s.check(s.defaults() | {"rrf_ranking_alpha": 1.5})
    alphas = {p["rrf_ranking_alpha"] for p in s.grid()}
    assert 0.0 not in alphas and max(alphas) == 1.0 and min(alphas) == 0.1   # the SDK drops 0


def test_vertex_request():
    body = export("vertex-rrf", {"rrf_ranking_alpha": 0.25, "num_neighbors": 20})
    (q,) = body["findNeighbors"]["queries"]
    assert q["rrf"] == {"alpha": 0.25} and q["neighborCount"] == 20
    assert set(q["datapoint"]) == {"featureVector", "sparseEmbedding"}
    sdk = body["python_sdk"]
    assert sdk["HybridQuery"]["rrf_ranking_alpha"] == 0.25
    assert sdk["find_neighbors"]["num_neighbors"] == 20
    assert not any("falsy" in c for c in body["_comment"])
    zero = export("vertex-rrf", {"rrf_ranking_alpha": 0.0})
    assert zero["findNeighbors"]["queries"][0]["rrf"] == {"alpha": 0.0}
    assert any("falsy" in c for c in zero["_comment"])


# --------------------------------------------------------------------------- fidelity
@pytest.mark.parametrize("name", MODES)
def test_fidelity_marks_not_live_cites_sources_and_says_what_it_cannot_express(name):
    fid = SPACES[name].fidelity
    live = [f for f in fid if f.item == "against the real engine"]
    assert [(f.status, f.note) for f in live] == [(NOT_MODELLED, NOT_LIVE)]
    assert {f.status for f in fid} == {EXACT, ASSUMED, NOT_MODELLED}
    assert any(f.item.startswith("cannot express:") for f in fid)
    assert any("ties" in f.item for f in fid)
    cited = [f for f in fid if f.status == EXACT]
    assert cited and all(re.search(r"@[0-9a-f]{8,}|https://", f.note) for f in cited), \
        [f.item for f in cited if not re.search(r"@[0-9a-f]{8,}|https://", f.note)]
