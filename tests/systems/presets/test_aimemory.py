"""ai-memory's unweighted RRF with the PageAuthority multiplier after fusion."""

import pytest

from rrfbench.systems.presets import get_preset

AIMEMORY = get_preset("ai-memory")


def test_multiplier_after_fusion_clamped_and_stream_switches():
    lists = {"fts5": ["a", "b"], "vector": ["b", "a"]}
    p = {"vector": True, "k": 60}
    plain = AIMEMORY.fuse_query(lists, p, 10)
    assert plain[0][1] == pytest.approx(1 / 61 + 1 / 62)
    boosted = AIMEMORY.fuse_query(lists, p, 10, prior={"b": 1.5})
    assert boosted[0] == ("b", pytest.approx(1.5 * (1 / 61 + 1 / 62)))
    clamped = AIMEMORY.fuse_query(lists, p, 10, prior={"b": 9.0, "a": 0.1})
    assert dict(clamped) == pytest.approx({"b": 1.5 * (1 / 61 + 1 / 62), "a": 0.55 * (1 / 61 + 1 / 62)})
    only_fts = AIMEMORY.fuse_query(lists, p | {"vector": False}, 10)
    assert [d for d, _ in only_fts] == ["a", "b"]


def test_candidate_depth_and_fts_always_on():
    from rrfbench.core.errors import InputError
    from rrfbench.systems.presets.aimemory import candidate_limit

    assert [candidate_limit(n) for n in (1, 5, 10, 100, 1000)] == [20, 20, 40, 400, 1300]
    assert AIMEMORY.depth("vector", {}, 10) == 40
    with pytest.raises(InputError, match="no knob 'fts5'"):
        AIMEMORY.check({"fts5": False})
    assert all(g["vector"] or True for g in AIMEMORY.grid()) and len(AIMEMORY.grid()) == 2


def test_ties_by_docid_not_first_seen():
    # z (fts5 rank 1) and a (vector rank 1) tie; ai-memory breaks ties by page path, here docid
    # reader.rs sorts ties by page path ascending; rrfbench's docid stands for the path
    out = AIMEMORY.fuse_query({"fts5": ["z"], "vector": ["a"]}, {"vector": True}, 10)
    assert [d for d, _ in out] == ["a", "z"]


# --------------------------------------------------------------------------- found by mutmut
def test_stream_switches_and_stages_named_in_explain():
    from rrfbench.systems.presets.aimemory import candidate_limit
    from rrfbench.systems.presets.base import Hit

    assert candidate_limit(0) == 0 and candidate_limit(1) == 20
    lists = {role: [Hit(d, 1.0) for d in docs] for role, docs in
             {"fts5": "ab", "entity_match": "c", "graph": "d", "vector": "e"}.items()}
    on = {"vector": True, "entity_match": True, "graph": True, "k": 60}
    assert set(AIMEMORY.contributions(lists, on, 10)) == set("abcde")
    # a stream switched off is skipped, the others still count; FTS5 is always on
    off = AIMEMORY.contributions(lists, on | {"entity_match": False}, 10)
    assert set(off) == set("abde")
    assert set(AIMEMORY.contributions(lists, {"k": 60}, 10)) == set("abcde")  # default: on
    assert set(AIMEMORY.contributions(lists, on | {"fts5": False}, 10)) == set("abcde")
    rows = AIMEMORY.explain_query(lists, on, 3, prior={"a": 1.0, "b": 2.0, "c": 0.1})
    assert {r["docid"]: r["stage"] for r in rows} == {
        "b": "kept (authority x1.5)", "a": "kept", "d": "kept", "e": "cut: limit",
        "c": "cut: limit"}
