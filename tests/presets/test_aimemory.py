"""ai-memory's unweighted RRF with the PageAuthority multiplier after fusion."""

import pytest

from rrfbench.presets import get_preset

AIMEMORY = get_preset("ai-memory")


def test_multiplier_after_fusion_and_stream_switches():
    lists = {"fts5": ["a", "b"], "vector": ["b", "a"]}
    p = {"fts5": True, "vector": True, "k": 60}
    plain = AIMEMORY.fuse_query(lists, p, 10)
    assert plain[0][1] == pytest.approx(1 / 61 + 1 / 62)
    boosted = AIMEMORY.fuse_query(lists, p, 10, prior={"b": 1.5})
    assert boosted[0] == ("b", pytest.approx(1.5 * (1 / 61 + 1 / 62)))
    only_fts = AIMEMORY.fuse_query(lists, p | {"vector": False}, 10)
    assert [d for d, _ in only_fts] == ["a", "b"]


def test_ties_by_docid_not_first_seen():
    # z (fts5 rank 1) and a (vector rank 1) tie; ai-memory breaks ties by page path, here docid
    out = AIMEMORY.fuse_query({"fts5": ["z"], "vector": ["a"]}, {"fts5": True, "vector": True}, 10)
    assert [d for d, _ in out] == ["a", "z"]
