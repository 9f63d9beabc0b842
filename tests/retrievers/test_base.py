"""The run cache: reused while its manifest matches, recomputed when anything that changes the
output changes (parameters, dataset content, score floor, depth, split)."""

import json
import shutil

import pytest

from rrfbench.core.errors import InputError
from rrfbench.data.datasets import load_dataset
from rrfbench.retrievers import cached_run, make_retriever, parse_spec, retriever_name


def test_spec_parsing_refuses_unknown_variants():
    assert parse_spec("fts5") == ("fts5", "or_tokens", {})
    assert parse_spec("rank-bm25:jieba") == ("rank_bm25", "jieba", {})
    assert parse_spec("graph;seed=bm25;hops=2") == ("graph", None, {"seed": "bm25", "hops": "2"})
    assert retriever_name("fts5:phrase") == "fts5-phrase" and retriever_name("dense:torch") == "dense"
    for bad, msg in (("bm25:x", "has no variant 'x'"), ("fts5:x", "variants: fts5:or_tokens"),
                     ("colbert", "unknown kind 'colbert'"), ("", "is empty"),
                     ("fts5;depth=3", "has no option 'depth=3'"),
                     ("graph;hops=x", "hops, neighbours and seed_limit must be whole numbers"),
                     ("graph;seed=graph", "cannot seed another")):
        with pytest.raises(InputError, match=msg):
            make_retriever(bad)


def test_cache_invalidation(tiny_beir, tmp_path, results_root):
    ds = load_dataset(str(tiny_beir))
    r = make_retriever("bm25")
    first = cached_run(r, ds, "test", 10)
    assert not first.cached and first.manifest["score_floor"] == 0.0
    assert first.run.score_floor == 0.0
    again = cached_run(r, ds, "test", 10)
    assert again.cached and again.run.equals(first.run) and again.run.score_floor == 0.0
    assert not cached_run(r, ds, "test", 5).cached                     # depth changed
    assert not cached_run(make_retriever("bm25", k1=0.9), ds, "test", 10).cached  # params
    # a manifest written before score floors were declared is stale
    mpath = first.path.with_name("bm25.json")
    cached_run(r, ds, "test", 10)
    m = json.loads(mpath.read_text())
    del m["score_floor"]
    mpath.write_text(json.dumps(m))
    assert not cached_run(r, ds, "test", 10).cached
    # changed dataset content (same name) -> new fingerprint -> recomputed
    copy = tmp_path / "c" / "tiny"
    shutil.copytree(tiny_beir, copy)
    with open(copy / "corpus.jsonl", "a") as fh:
        fh.write('{"_id": "d5", "title": "", "text": "green apples again"}\n')
    changed = cached_run(r, load_dataset(str(copy)), "test", 10)
    assert not changed.cached and "d5" in set(changed.run.df.docid)


def test_every_retriever_declares_a_score_floor():
    from rrfbench.retrievers import KINDS, PATH_KINDS

    floors = {k: make_retriever(k).score_floor for k in KINDS
              if k != "dense" and k not in PATH_KINDS}
    assert floors == {"bm25": 0.0, "fts5": 0.0, "rank_bm25": 0.0, "entity": 0.0, "graph": 0.0}
    # a team's streams: cosine for vectors, the declared or the file's lowest score for a run
    # file (tests/retrievers/test_external.py)
    from rrfbench.retrievers.external import VectorsRetriever

    assert VectorsRetriever.score_floor == -1.0
    from rrfbench.retrievers.dense import DenseRetriever

    assert DenseRetriever.score_floor == -1.0
