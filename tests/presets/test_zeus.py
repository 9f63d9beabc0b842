"""Zeus: weight / (rank + 60) with 0-based ranks, top_k x 3 candidates, vector-only fallback."""

import pytest

from rrfbench.errors import InputError
from rrfbench.presets import get_preset

ZEUS = get_preset("zeus")
P = {"vector_weight": 0.6, "keyword_weight": 0.4, "top_k": 5}


def test_zero_based_rank_depth_and_fallback():
    lists = {"vector": ["a", "b"], "keyword": ["b", "c"]}
    out = dict(ZEUS.fuse_query(lists, P, 5))
    assert out["a"] == pytest.approx(0.6 / 60)  # rank 0 -> weight / (0 + 60)
    assert out["b"] == pytest.approx(0.6 / 61 + 0.4 / 60)
    assert out["c"] == pytest.approx(0.4 / 61)
    assert ZEUS.depth("vector", P, 5) == 15 and ZEUS.depth("keyword", P | {"top_k": 10}, 10) == 30
    fb = ZEUS.fuse_query(lists, P | {"bm25_available": False}, 5)
    assert [d for d, _ in fb] == ["a", "b"]  # vector-only mode


def test_ties_vector_results_first_not_docid():
    # equal weights: z (vector rank 0) and a (keyword rank 0) tie; the vector path is merged
    # first, so a stable sort keeps z first although "a" < "z"
    out = ZEUS.fuse_query({"vector": ["z"], "keyword": ["a"]},
                          P | {"vector_weight": 0.5, "keyword_weight": 0.5}, 5)
    assert [d for d, _ in out] == ["z", "a"]


def test_top_k_is_whole_number():
    with pytest.raises(InputError, match="whole number"):
        ZEUS.parse_settings(["top_k=2.5"])
    with pytest.raises(InputError, match="'abc' is not a whole number"):
        ZEUS.parse_settings(["top_k=abc"])
