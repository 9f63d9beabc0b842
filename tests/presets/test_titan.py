"""titan's fuseByRRF, minScore and dropoff, reproduced on hand-made lists."""

import pytest

from rrfbench.presets import get_preset
from rrfbench.presets.titan import dropoff_cut

TITAN = get_preset("titan")
P = {"k": 60, "vector_weight": 1.0, "fts_weight": 1.0, "minScore": 0.0, "dropoff": 0.0}


def test_dropoff_and_minscore():
    assert dropoff_cut([1.0, 0.9, 0.3, 0.25], 0.5) == 2  # largest drop 0.9 -> 0.3 (67%)
    assert dropoff_cut([1.0, 0.9, 0.3, 0.25], 0.7) == 4  # largest drop below threshold
    assert dropoff_cut([1.0, 0.01], 0.5) == 1  # the first result always stays
    lists = {"fts": ["a", "b", "c"], "vector": ["a", "d"]}
    full = TITAN.fuse_query(lists, P, 10)
    assert [d for d, _ in full] == ["a", "b", "d", "c"]
    trimmed = TITAN.fuse_query(lists, P | {"minScore": 1 / 62.5}, 10)
    assert [d for d, _ in trimmed] == ["a", "b", "d"]
    cut = TITAN.fuse_query(lists, P | {"dropoff": 0.4}, 10)
    assert [d for d, _ in cut] == ["a"]  # 2/61 -> 1/62 is a ~49% drop
    assert TITAN.depth("vector", {}, 10) == 30


def test_ties_first_seen_over_retriever_order_not_docid():
    # z (fts rank 1) and a (vector rank 1) tie at 1/61; fts comes first in titan's list, so z
    # is seen first and stays first although "a" < "z"
    out = TITAN.fuse_query({"fts": ["z"], "vector": ["a"]}, P, 10)
    assert [d for d, _ in out] == ["z", "a"]
    out = TITAN.fuse_query({"fts": ["b", "z"], "vector": ["y", "a"]}, P, 10)
    assert [d for d, _ in out] == ["b", "y", "z", "a"]


def test_weights_and_k():
    out = dict(TITAN.fuse_query({"fts": ["a"], "vector": ["a", "b"]},
                                P | {"k": 10, "vector_weight": 0.7, "fts_weight": 0.3}, 10))
    assert out["a"] == pytest.approx(0.3 / 11 + 0.7 / 11)
    assert out["b"] == pytest.approx(0.7 / 12)
