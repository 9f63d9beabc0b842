"""Metric names: canonical forms, aliases, and clear errors."""

import pytest

from rrfbench.core.errors import InputError
from rrfbench.core.metrics import Metric, parse_metric, parse_metrics


def test_metric_names_and_aliases():
    assert str(parse_metric("ndcg@10")) == "nDCG@10"
    assert str(parse_metric("recall@100")) == "R@100"
    assert str(parse_metric("MRR@10")) == "RR@10"
    assert str(parse_metric("map@1000")) == "AP@1000"
    assert str(parse_metric("precision@10")) == "P@10"
    assert parse_metric("nDCG") == parse_metric("ndcg") == Metric("nDCG", None)
    assert parse_metric(" R @ 5 ").ranx_name == "recall@5"


def test_parse_metrics_dedupes_in_order():
    assert [str(m) for m in parse_metrics(["R@100", "recall@100", "nDCG@10"])] == ["R@100", "nDCG@10"]
    assert [str(m) for m in parse_metrics("ndcg@10")] == ["nDCG@10"]


@pytest.mark.parametrize("bad, msg", [("bleu@4", "unknown metric"), ("ndcg@0", "cut-off must be >= 1"),
                                      ("ndcg@x", "unknown metric"), ("", "unknown metric")])
def test_bad_names(bad, msg):
    with pytest.raises(InputError, match=msg):
        parse_metric(bad)
