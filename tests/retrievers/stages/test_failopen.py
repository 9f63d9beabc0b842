"""Fail-open gathering: a retriever that raises and one that sleeps past its deadline both land
in ``degraded`` while the others are fused; the cost of an outage is measured."""

import time

from rrfbench.retrievers.stages.failopen import degradation_study, fuse_fail_open, gather
from rrfbench.systems.presets import get_preset


def ok(query):
    return ["a", "b"]


def boom(query):
    raise RuntimeError("index locked")


def slow(query):
    time.sleep(2.0)
    return ["z"]


def test_raising_and_sleeping_retrievers_degrade():
    t0 = time.perf_counter()
    lists, degraded, timings = gather({"fts": ok, "vector": boom, "graph": slow}, "q", timeout_s=0.3)
    assert time.perf_counter() - t0 < 1.5  # the slow one never blocks the answer
    assert lists == {"fts": ["a", "b"]}
    reasons = {d.retriever: d.reason for d in degraded}
    assert reasons == {"vector": "error", "graph": "timeout"}
    assert "index locked" in next(d.message for d in degraded if d.retriever == "vector")
    titan = get_preset("titan")
    ranked, deg = fuse_fail_open(titan, {"fts": ok, "vector": boom}, "q")
    assert [d for d, _ in ranked] == ["a", "b"] and deg[0].retriever == "vector"


def test_degradation_study(tiny_beir):
    from rrfbench.core.runs import Qrels, Run

    qrels = Qrels.from_dict({f"q{i}": {"a": 1} for i in range(10)})
    vec = Run.from_dict({f"q{i}": {"a": 0.9, "b": 0.1} for i in range(10)}, "dense")
    fts = Run.from_dict({f"q{i}": {"c": 2.0} for i in range(10)}, "fts5")
    t = degradation_study(get_preset("titan"), {"fts": fts, "vector": vec}, qrels, "vector",
                          fractions=(0.0, 0.5, 1.0), metric="RR@10")
    assert t["queries_affected"].tolist() == [0, 5, 10]
    assert t["RR@10"].tolist()[0] == 1.0 and t["RR@10"].tolist()[-1] == 0.0
    assert t["loss"].is_monotonic_increasing
