"""The engines' fusion as knob spaces: each formula by hand on small lists (rank base, how a
weight enters, normalisation edge cases, missing documents, float width, tie order), every
export shape, the refusals, and the engine table."""

import ast
import json
import math
import subprocess
import sys

import numpy as np
import pytest

from rrfbench.core.errors import InputError
from rrfbench.systems.engines import ENGINES, SPACES, get_space, spaces_of
from rrfbench.systems.engines.base import f32, f32_values
from rrfbench.systems.engines.elasticsearch import es_minmax
from rrfbench.systems.engines.opensearch import os_minmax, os_zscore
from rrfbench.systems.engines.qdrant import dbsf
from rrfbench.systems.presets.base import Hit
from tests.conftest import ROOT


def L(*pairs):
    return [Hit(d, s) for d, s in pairs]


def test_f32_is_numpy_float32_bit_for_bit():
    """The engines' float32 rounding (packed through C's ``float``) gives NumPy's bits on every
    magnitude: exact halves between two float32s (ties to even), subnormals, signed zeros,
    past float32's range (inf) and NaN; NumPy scalars in too."""
    rng = np.random.default_rng(7)
    xs = (rng.standard_normal(20000) * 10.0 ** rng.integers(-45, 39, 20000)).tolist()
    ones = np.float32(1.0)
    halves = [float(np.float64(np.float32(v)) + np.float64(np.spacing(np.float32(v))) / 2)
              for v in (1.0, 1 / 61, 0.7, 3.0e-39, 1e30)]                 # ties: to even
    xs += halves + [0.0, -0.0, 1 / 61, 3.5e38, -3.5e38, 1e300, 1e-320, float("nan"),
                    np.float64(0.1), ones, 7]
    with np.errstate(over="ignore"):
        want = [float(np.float32(x)) for x in xs]
    got = [f32(x) for x in xs]
    assert np.array_equal(np.array(got).view(np.uint64), np.array(want).view(np.uint64))
    assert f32(3.5e38) == math.inf and f32(-1e300) == -math.inf
    assert math.copysign(1.0, f32(-0.0)) == -1.0


def test_f32_values_rounds_like_f32_in_one_cast():
    """The per-query float32 rounding of a whole score table (one NumPy cast) gives
    :func:`f32`'s bits for every value, order and keys kept."""
    rng = np.random.default_rng(8)
    xs = (rng.standard_normal(5000) * 10.0 ** rng.integers(-45, 39, 5000)).tolist()
    xs += [0.0, -0.0, 1 / 61, 3.5e38, -1e300, 1e-320, float("nan")]
    scores = {f"d{i}": x for i, x in enumerate(xs)}
    got = f32_values(scores)
    assert list(got) == list(scores) and f32_values({}) == {}
    assert np.array_equal(np.array(list(got.values())).view(np.uint64),
                          np.array([f32(x) for x in xs]).view(np.uint64))


@pytest.mark.parametrize("name", sorted(SPACES))
def test_fused_is_combine_per_document(name):
    """:meth:`EngineSpace.fused` (the suite tables' hot loop) adds exactly what
    :meth:`EngineSpace.combine` adds, document by document, for every mode and grid point:
    contributions drawn over many magnitudes, some documents in one list only."""
    s = SPACES[name]
    rng = np.random.default_rng(len(name))
    grid = s.grid()
    for params in [grid[i] for i in rng.choice(len(grid), min(len(grid), 25), replace=False)]:
        params = s.defaults() | params
        contribs = {}
        for i in range(60):
            roles = s.order(params)
            keep = [r for r in roles if rng.random() < 0.7] or list(roles[:1])
            contribs[f"d{i}"] = {r: float(rng.random() * 10.0 ** rng.integers(-9, 3))
                                 for r in keep}
        want = {d: s.combine(c, params) for d, c in contribs.items()}
        got = s.fused(contribs, params)
        assert list(got) == list(want)
        assert np.array_equal(np.array(list(got.values())).view(np.uint64),
                              np.array(list(want.values())).view(np.uint64)), params


def test_rrf_positions_are_remembered_per_mode_and_parameters():
    """Contributions depend on the position alone, so a grid point's queries share them; a
    different constant, weight or mode is another entry (never a stale one)."""
    lists = {"vector": L(("a", 0.9), ("b", 0.8)), "keyword": L(("b", 3.0), ("c", 1.0))}
    qd, es = SPACES["qdrant-rrf"], SPACES["elasticsearch-rrf"]
    for k in (1, 60, 1, 60):
        got = dict(qd.fuse_query(lists, qd.defaults() | {"k": k}, 10))
        assert got["b"] == pytest.approx(1 / (2 + k - 1) + 1 / (1 + k - 1))
    w = qd.defaults() | {"k": 60, "vector_weight": 2.0}
    assert dict(qd.fuse_query(lists, w, 10))["a"] == pytest.approx(1 / (1 / 2 + 59))
    got = dict(es.fuse_query(lists, es.defaults() | {"rank_constant": 60}, 10))
    assert got["a"] == f32(1 / 61)
    # a longer list than any seen before extends the remembered positions
    long = {"vector": L(*[(f"d{i}", 1 - i / 500) for i in range(300)]), "keyword": []}
    p = qd.defaults() | {"k": 60, "prefetch_limit": 300}
    assert dict(qd.fuse_query(long, p, 300))["d299"] == pytest.approx(1 / (300 + 60 - 1))


VEC = L(("a", 0.9), ("b", 0.8), ("c", 0.5))
KEY = L(("c", 12.0), ("d", 7.0), ("a", 3.0))


def fuse(name, params=None, vec=VEC, key=KEY, limit=10):
    s = SPACES[name]
    return s.fuse_query({"vector": vec, "keyword": key}, s.defaults() | (params or {}), limit)


def test_every_engine_has_its_modes_and_exports():
    assert ENGINES == ("elasticsearch", "opensearch", "qdrant", "milvus", "weaviate", "lancedb",
                       "vespa", "sqlite", "pgvector", "azure", "mongodb", "vertex")
    assert len(SPACES) == 19 and all(spaces_of(e) for e in ENGINES)
    for s in SPACES.values():
        assert s.engine in s.exports or any(f.startswith(s.engine) for f in s.exports)
        assert s.version and s.fidelity and s.grid() and s.defaults()["mode"] == s.mode
    with pytest.raises(InputError, match="unknown engine 'nope'; engines: elasticsearch, "
                                         "opensearch, qdrant"):
        spaces_of("nope")
    with pytest.raises(InputError, match="unknown engine mode 'x'"):
        get_space("x")


def test_qdrant_rrf_weight_divides_the_rank():
    # k=2, weights 1 and 2: a: 1/((0+1)/1+1) + 1/((2+1)/2+1) = 1/2 + 1/2.5; c: pos 2 vector,
    # pos 0 keyword: 1/(3/1+1) + 1/(1/2+1)
    got = dict(fuse("qdrant-rrf", {"keyword_weight": 2.0}))
    assert got["a"] == pytest.approx(1 / 2 + 1 / 2.5) and got["c"] == pytest.approx(1 / 4 + 1 / 1.5)
    assert got["d"] == pytest.approx(1 / (2 / 2 + 1)) and got["b"] == pytest.approx(1 / 3)
    # weight 0: the list adds 0, its documents still enter (qdrant-client's local mode)
    zero = dict(fuse("qdrant-rrf", {"keyword_weight": 0.0}))
    assert zero["d"] == 0.0 and set(zero) == {"a", "b", "c", "d"}
    # ties: stable, vector list first
    tie = fuse("qdrant-rrf", vec=L(("x", 1.0)), key=L(("y", 1.0)))
    assert [d for d, _ in tie] == ["x", "y"]


def test_qdrant_dbsf_hand_computed():
    s = [3.0, 2.0, 1.0]
    lo, hi = 2 - 3 * 1.0, 2 + 3 * 1.0           # mean 2, sample sd 1
    assert dbsf(s) == pytest.approx([(x - lo) / (hi - lo) for x in s])
    assert dbsf([5.0]) == [0.5] and dbsf([2.0, 2.0]) == [0.5, 0.5]


def test_elasticsearch_rrf_and_linear():
    got = dict(fuse("elasticsearch-rrf", {"rank_constant": 60, "keyword_weight": 2.0}))
    want_a = f32(f32(1.0 / 61) + f32(2.0 * f32(1.0 / 63)))
    assert got["a"] == want_a and got["d"] == f32(2.0 * f32(1.0 / 62))
    # ties go to the smaller id (rrfbench's docid rule)
    assert [d for d, _ in fuse("elasticsearch-rrf", vec=L(("y", 1.0)), key=L(("x", 1.0)))] == \
        ["x", "y"]
    # no spread or one hit: 1.0 (MinMaxScoreNormalizer since 8.18.3/9.0.3/9.1), the minimum
    # before
    assert es_minmax([2.0, 2.0]) == [1.0, 1.0] and es_minmax([5.0]) == [1.0]
    assert es_minmax([2.0, 2.0 + 5e-7]) == [1.0, 1.0]            # within EPSILON 1e-6
    assert es_minmax([2.0, 2.0], no_spread="minimum") == [2.0, 2.0]
    one = dict(fuse("elasticsearch-linear", {"normalizer": "minmax", "vector_weight": 0.5,
                                             "keyword_weight": 0.5}, key=L(("d", 7.0))))
    assert one["d"] == f32(0.5 * 1.0)                             # a lone keyword hit: 1.0
    assert es_minmax([1.0, 3.0, 2.0]) == [0.0, 1.0, 0.5]
    lin = dict(fuse("elasticsearch-linear", {"normalizer": "minmax", "vector_weight": 0.3,
                                             "keyword_weight": 0.7}))
    # vector scores (1 + cos) / 2: .95, .9, .75 -> 1, .75, 0; keyword 12, 7, 3 -> 1, 4/9, 0
    assert lin["a"] == pytest.approx(0.3 * 1.0 + 0.7 * 0.0, abs=1e-6)
    assert lin["c"] == pytest.approx(0.3 * 0.0 + 0.7 * 1.0, abs=1e-6)
    assert lin["d"] == pytest.approx(0.7 * (4 / 9), abs=1e-6)
    l2 = dict(fuse("elasticsearch-linear", {"normalizer": "l2_norm"}))
    norm = math.sqrt(12 ** 2 + 7 ** 2 + 3 ** 2)
    assert l2["d"] == pytest.approx(0.5 * 7 / norm, abs=1e-6)


def test_opensearch_min_max_and_means():
    assert os_minmax([4.0, 2.0]) == [1.0, 0.001]                 # 0 becomes 0.001
    assert os_minmax([5.0]) == [1.0]                              # a lone score: 1
    p = {"normalization": "min_max", "vector_weight": 0.5, "keyword_weight": 0.5}
    ar = dict(fuse("opensearch-normalization", {**p, "combination": "arithmetic_mean"}))
    assert ar["d"] == pytest.approx((0.5 * 0 + 0.5 * (4 / 9)) / 1.0, abs=1e-6)  # missing: 0
    geo = dict(fuse("opensearch-normalization", {**p, "combination": "geometric_mean"}))
    assert geo["d"] == pytest.approx(4 / 9, abs=1e-6)            # only where positive
    har = dict(fuse("opensearch-normalization", {**p, "combination": "harmonic_mean"}))
    a_v, a_k = 1.0, 0.001
    assert har["a"] == pytest.approx(1.0 / (0.5 / a_v + 0.5 / a_k), rel=1e-5)


def test_opensearch_z_score_and_weighted_rrf():
    """The knob gaps the source shows: z_score normalization (sample sd; a score equal to the
    mean gives the raw maximum, no spread the raw minimum, <= 0 becomes 0.001) and RRF weights."""
    assert os_zscore([3.0, 2.0, 1.0]) == [1.0, 3.0, 0.001]        # mean 2 -> max 3; sd 1
    assert os_zscore([5.0, 5.0, 5.0]) == [5.0] * 3                # mean == each score -> max
    assert os_zscore([7.0]) == [7.0]
    z = dict(fuse("opensearch-normalization", {"normalization": "z_score",
                                               "vector_weight": 0.5, "keyword_weight": 0.5}))
    assert set(z) == {"a", "b", "c", "d"}
    got = dict(fuse("opensearch-rrf", {"vector_weight": 0.3, "keyword_weight": 0.7}))
    assert got["d"] == f32(f32(0.7 * f32(1.0 / 62)))
    assert got["a"] == f32(f32(0.3 * f32(1.0 / 61)) + f32(0.7 * f32(1.0 / 63)))
    space = SPACES["opensearch-rrf"]
    assert not space.valid(space.defaults() | {"vector_weight": 0.5, "keyword_weight": 0.7})


def test_milvus_weaviate_lancedb_vespa_sqlite_by_hand():
    m = dict(fuse("milvus-weighted", {"vector_weight": 0.4, "keyword_weight": 0.6}))
    assert m["d"] == pytest.approx(0.6 * 2 * math.atan(7.0) / math.pi, rel=1e-6)
    assert m["b"] == pytest.approx(0.4 * (1 + 0.8) / 2, rel=1e-6)
    assert dict(fuse("milvus-rrf"))["b"] == f32(1.0 / 62)
    w = dict(fuse("weaviate-ranked", {"alpha": 0.75}))
    # FusionRanked since 1.24: float32(w / (i + 60)), i 0-based, summed in float32
    assert w["a"] == f32(f32(0.75 / 60) + f32(0.25 / 62))
    r = dict(fuse("weaviate-relative", {"alpha": 0.5}, vec=L(("a", 1.0), ("b", 1.0))))
    assert r["b"] == pytest.approx(0.5 * 1.0, rel=1e-6)              # no spread: 1
    lr = dict(fuse("lancedb-rrf", {"K": 60}))
    assert lr["a"] == f32(1 / 61 + 1 / 63)
    ll = dict(fuse("lancedb-linear", {"weight": 0.7}))
    # distances 1 - cos: .1, .2, .5 -> 0, 1/4, 1; fts 12, 7, 3 -> 1, 4/9, 0; missing: 0
    assert ll["b"] == f32(0.7 * (1 - 0.25) + 0.3 * 0.0) and ll["d"] == f32(0.3 * (4 / 9))
    # Vespa: window c, d, a, b (first phase bm25 + closeness); b is 2nd by closeness, last
    # by bm25 (0: no text match, still ranked)
    assert dict(fuse("vespa-rrf"))["b"] == 1 / 62 + 1 / 64
    s = dict(fuse("sqlite-rrf", {"k": 60, "vector_weight": 2.0}))
    assert s["a"] == 2.0 / 61 + 1.0 / 63


def test_weaviate_as_its_source_runs_it():
    """Each leg fetches max(100, limit) candidates (explorer_hybrid.go; the old model cut both
    lists to the limit, 10), one leg only at alpha 0 or 1, and FusionRanked's 1 / (i + 61)."""
    vec = L(*[(f"v{i}", 1 - i / 100) for i in range(14)], ("x", 0.85), *[(f"w{i}", 0.8 - i / 100)
                                                                        for i in range(50)])
    key = L(*[(f"k{i}", 30 - i / 10) for i in range(14)], ("x", 28.0), *[(f"j{i}", 20 - i / 10)
                                                                        for i in range(50)])
    space = SPACES["weaviate-ranked"]
    assert space.depth("vector", space.defaults(), 10) == 100
    lists = space.query_lists({"vector": _run(vec), "keyword": _run(key)}, "q",
                              space.defaults(), 10)
    assert len(lists["vector"]) == len(lists["keyword"]) == 65     # all, not the top 10
    top = fuse("weaviate-ranked", {"alpha": 0.5}, vec=lists["vector"], key=lists["keyword"])
    assert top[0][0] == "x"       # 15th in both lists beats the first of one: 2/75 > 1/61
    cut = fuse("weaviate-ranked", {"alpha": 0.5}, vec=lists["vector"][:10],
               key=lists["keyword"][:10])
    assert "x" not in dict(cut)   # the old window of 10 never saw it
    for name in ("weaviate-ranked", "weaviate-relative"):
        only_v = dict(fuse(name, {"alpha": 1.0}))
        assert set(only_v) == {"a", "b", "c"}                       # BM25 never searched
        only_k = dict(fuse(name, {"alpha": 0.0}))
        assert set(only_k) == {"c", "d", "a"}
    rel = dict(fuse("weaviate-relative", {"alpha": 0.5}))
    # float32 min-max: vector .9 .8 .5 -> 1, .75, 0; keyword 12 7 3 -> 1, 4/9, 0
    assert rel["c"] == f32(f32(0.5 * 0.0) + f32(0.5 * 1.0))
    assert rel["d"] == f32(0.5 * f32(f32(7.0 - 3.0) / f32(12.0 - 3.0)))


def test_vespa_as_its_source_runs_it():
    """The global phase ranks every window hit on both features (the old model: each list's
    top rerank-count, a missing document adding 0), normalize_linear gives 0.5 without spread
    (the old: 0), closeness is angular (the old: the cosine)."""
    from rrfbench.systems.engines.vespa import closeness, normalize_linear

    assert normalize_linear([3.0, 3.0]) == [0.5, 0.5]
    assert normalize_linear([0.0, 3.0, 12.0]) == [0.0, 0.25, 1.0]
    assert closeness(1.0) == 1.0 and closeness(0.0) == pytest.approx(1 / (1 + math.pi / 2))
    lin = dict(fuse("vespa-linear", {"vector_weight": 0.5, "keyword_weight": 0.5}))
    assert set(lin) == {"a", "b", "c", "d"}
    cl = [closeness(x) for x in (0.9, 0.8, 0.5)]                 # a, b, c (d: the floor, .5)
    nv = {d: 0.5 + (v - (cl[0] + cl[2]) / 2) / (cl[0] - cl[2])
          for d, v in zip("abcd", [cl[0], cl[1], cl[2], cl[2]], strict=True)}
    nk = {"c": 1.0, "d": 0.5 + (7 - 6) / 12, "a": 0.5 + (3 - 6) / 12, "b": 0.0}
    for d in "abcd":
        assert lin[d] == pytest.approx(0.5 * nv[d] + 0.5 * nk[d], abs=1e-12), d
    # a window where the keyword feature has no spread: 0.5 each, not 0
    flat = dict(fuse("vespa-linear", {"vector_weight": 0.0, "keyword_weight": 1.0},
                     key=L(("a", 5.0), ("b", 5.0)), vec=L(("a", 0.9), ("b", 0.8))))
    assert flat == {"a": 0.5, "b": 0.5}
    # rerank-count cuts the window by first-phase score (bm25 + closeness): c, d
    two = dict(fuse("vespa-rrf", {"rerank_count": 2}))
    assert set(two) == {"c", "d"} and two["c"] == 1 / 61 + 1 / 61


def test_windows_cut_each_list():
    long_v = L(*[(f"v{i}", 1 - i / 100) for i in range(30)])
    for name, knob in (("qdrant-rrf", "prefetch_limit"), ("elasticsearch-rrf",
                                                           "rank_window_size"),
                       ("lancedb-rrf", "limit"), ("sqlite-rrf", "window")):
        out = SPACES[name].query_lists({"vector": _run(long_v), "keyword": _run(KEY)}, "q",
                                       SPACES[name].defaults() | {knob: 20}, 10)
        assert len(out["vector"]) == 20, name


def _run(hits):
    from rrfbench.core.runs import Run

    return Run.from_dict({"q": {h.docid: h.score for h in hits}}, "x")


@pytest.mark.parametrize("name", sorted(SPACES))
def test_every_export_renders_and_names_its_verified_version(name):
    s = SPACES[name]
    for fmt, render in s.exports.items():
        text = render(s.defaults(), ["provenance line"])
        assert "verified against" in text and "provenance line" in text, (name, fmt)
        if text.lstrip().startswith("{"):
            json.loads(text)
        elif fmt in ("qdrant-python", "milvus", "lancedb"):
            ast.parse("\n".join(ln for ln in text.splitlines() if not ln.startswith("#")))


def test_engine_request_shapes():
    es = json.loads(SPACES["elasticsearch-rrf"].exports["elasticsearch"](
        SPACES["elasticsearch-rrf"].defaults() | {"rank_constant": 20}, []))
    rrf = es["retriever"]["rrf"]
    assert rrf["rank_constant"] == 20 and rrf["rank_window_size"] == 10
    assert [r["weight"] for r in rrf["retrievers"]] == [1, 1]
    assert "knn" in rrf["retrievers"][0]["retriever"]
    lin = json.loads(SPACES["elasticsearch-linear"].exports["elasticsearch"](
        SPACES["elasticsearch-linear"].defaults(), []))["retriever"]["linear"]
    assert {r["normalizer"] for r in lin["retrievers"]} == {"none"}
    os_ = json.loads(SPACES["opensearch-normalization"].exports["opensearch"](
        SPACES["opensearch-normalization"].defaults(), []))
    proc = os_["search_pipeline"]["PUT /_search/pipeline/rrfbench-hybrid"][
        "phase_results_processors"][0]["normalization-processor"]
    assert proc["normalization"]["technique"] == "min_max"
    assert proc["combination"]["parameters"]["weights"] == [0.5, 0.5]
    vespa = SPACES["vespa-linear"].exports["vespa"](SPACES["vespa-linear"].defaults(), [])
    assert "normalize_linear(closeness(field, embedding))" in vespa and "rerank-count: 100" in vespa


def test_pymilvus_builds_the_exported_rankers():
    pym = pytest.importorskip("pymilvus")
    text = SPACES["milvus-weighted"].exports["milvus"](SPACES["milvus-weighted"].defaults(), [])
    expr = text.split("ranker=")[1].split(", limit=10)")[0]
    ranker = eval(expr, {"WeightedRanker": pym.WeightedRanker, "RRFRanker": pym.RRFRanker})
    assert ranker.dict()["params"] == {"weights": [0.5, 0.5], "norm_score": True}


def test_cli_refusals_are_one_line(tmp_path):
    def run(*args):
        p = subprocess.run([sys.executable, "-m", "rrfbench.cli", *args], capture_output=True,
                           text=True, cwd=ROOT, timeout=120)
        return p.returncode, (p.stdout + p.stderr).strip().splitlines()

    code, lines = run("engines", "scifact", "--engine", "nope")
    assert code == 2 and len(lines) == 1
    assert lines[0] == ("error: unknown engine 'nope'; engines: elasticsearch, opensearch, qdrant, "
                        "milvus, weaviate, lancedb, vespa, sqlite, pgvector, azure, mongodb, "
                        "vertex")
    code, lines = run("export", "results/scifact/best.json", "--format", "nope")
    assert code == 2 and len(lines) == 1 and "unknown export format 'nope'" in lines[0]
    assert "qdrant" in lines[0] and "elasticsearch" in lines[0]
    code, lines = run("engines")
    assert code == 2 and lines == ["error: give a DATASET or --suite NAME"]


def test_a_free_fusion_result_names_the_engines_nearest_configuration():
    """A configuration an engine cannot express: one line naming the engine's nearest
    expressible configuration (its mode tuned on the same data) and what it scores there."""
    p = subprocess.run([sys.executable, "-m", "rrfbench.cli", "export", "results/scifact/best.json",
                        "--format", "qdrant"], capture_output=True, text=True, cwd=ROOT,
                       timeout=120)
    lines = (p.stdout + p.stderr).strip().splitlines()
    assert p.returncode == 2 and len(lines) == 1
    assert lines[0].startswith("error: --format qdrant: a free fusion result (convex")
    assert "is not expressible in qdrant's fusion" in lines[0]
    assert "the nearest it can express: qdrant-" in lines[0] and "which scores nDCG@10 0." in lines[0]


def test_the_committed_engine_tables():
    from rrfbench.results.dataset import EngineTable

    for where in ("results/scifact/engines.json", "results/transfer/en/engines.json"):
        t = EngineTable.from_json(json.loads((ROOT / where).read_text()))
        assert len(t.rows) == len(SPACES) == 19 and set(t.table().engine) == set(ENGINES)
        assert set(t.best_modes().engine) == set(ENGINES)
        live = {r["engine"] for r in t.rows if r["live"]}
        assert live == {"qdrant", "lancedb", "sqlite", "milvus", "pgvector"}
        # an engine is called live only where a live test file round-trips it
        here = ROOT / "tests" / "systems" / "engines"
        tests = "\n".join(f.read_text() for f in (here / "test_engines_live.py",
                                                   here / "test_pgvector_live.py"))
        assert {e for e in ENGINES if f"def test_{e}_" in tests and "equals_rrfbench" in
                tests.split(f"def test_{e}_")[1].split("(")[0]} == live
        for r in t.rows:
            assert r["gap"] == pytest.approx(r["tuned"] - r["free"])
            assert np.isfinite([r["default"], r["tuned"]]).all()


def test_an_engine_subset_never_shrinks_the_saved_table(tmp_path):
    """`rrfbench engines DATASET --engine qdrant` replaces qdrant's rows in engines.json and
    keeps the other engines' (it used to write a two-row table over the fifteen)."""
    from rrfbench.results.dataset import EngineTable
    from rrfbench.workflows.engine_table import _merged

    saved = tmp_path / "engines.json"
    full = EngineTable.from_json(json.loads((ROOT / "results/scifact/engines.json").read_text()))
    saved.write_text(json.dumps(full.to_json()))
    q = [dict(r, tuned=0.5) for r in full.rows if r["engine"] == "qdrant"]
    out = _merged(EngineTable(full.scope, full.metric, tuple(q), {}), saved)
    assert [r["space"] for r in out.rows] == [r["space"] for r in full.rows]
    assert {r["space"]: r["tuned"] for r in out.rows if r["engine"] == "qdrant"} == \
        {"qdrant-rrf": 0.5, "qdrant-dbsf": 0.5}
    assert [r for r in out.rows if r["engine"] != "qdrant"] == \
        [r for r in full.rows if r["engine"] != "qdrant"]
    assert out.free == full.free
