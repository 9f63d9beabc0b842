"""explain: contributions add up to the fused score; compare: agrees with the paired tests."""

import numpy as np
import pytest

from rrfbench.core.runs import Qrels, Run
from rrfbench.fusion.config import Config
from rrfbench.outputs.explanations import compare, explain, explain_preset
from tests.conftest import needs_cranfield

A = Run.from_dict({"q": {"a": 3.0, "b": 2.0, "c": 1.0}}, "A").with_meta(score_floor=0.0)
B = Run.from_dict({"q": {"b": 9.0, "d": 8.0}}, "B").with_meta(score_floor=0.0)


def test_rrf_by_hand():
    t = explain([A, B], Config("rrf", (60.0, 60.0), (1.0, 1.0), (None, None)), "q",
                Qrels.from_dict({"q": {"d": 2}}))
    row = t.set_index("docid").loc["b"]
    assert row.A_rank == 2 and row.B_rank == 1
    assert row.A_contrib == pytest.approx(1 / 62) and row.B_contrib == pytest.approx(1 / 61)
    assert t.set_index("docid").loc["d"].relevance == 2
    assert t.best_single.iloc[0] == "B"  # the only run that finds the relevant d


@needs_cranfield
@pytest.mark.parametrize("cfg", [
    Config("rrf", (20.0, 60.0, 5.0), (0.5, 0.2, 0.3), (None, 50, None), 0),
    Config("convex", (0.0,) * 3, (0.2, 0.3, 0.5), (None,) * 3, 1, "tmm", "min"),
    Config("convex", (0.0,) * 3, (0.2, 0.3, 0.5), (None,) * 3, 1, "zscore", "zero"),
    Config("combmnz", (0.0,) * 3, (1.0,) * 3, (None,) * 3, 1, "minmax", "min"),
], ids=["rrf", "convex-tmm", "convex-zscore", "combmnz"])
def test_contributions_sum_to_the_fused_score_on_real_runs(cranfield, run_of, cfg):
    runs = [run_of(cranfield, s) for s in ("bm25", "fts5", "dense")]
    qrels = cranfield.qrels("test")
    fused = cfg.fuse(runs)
    for qid in qrels.qids[:15]:
        t = explain(runs, cfg, qid, qrels, top=20, best=2)
        contrib = t[[f"{r.name}_contrib" for r in runs]].sum(axis=1).to_numpy()
        assert np.allclose(contrib, t.fused_score.to_numpy(), atol=1e-12)
        ref = fused.df[fused.df.qid == qid].head(20)
        assert t.docid.tolist() == ref.docid.tolist()


def test_preset_explanation_names_the_stage():
    from rrfbench.systems.presets import get_preset

    titan = get_preset("titan")
    fts = Run.from_dict({"q": {"a": 5.0, "b": 4.0, "c": 3.0}}, "fts5")
    vec = Run.from_dict({"q": {"a": 0.9, "d": 0.8}}, "dense")
    t = explain_preset(titan, {"fts": fts, "vector": vec}, "q", {"dropoff": 0.0})
    stage = dict(zip(t.docid, t.stage, strict=True))
    assert stage["a"] == "kept" and set(stage.values()) == {"kept", "cut: dropoff"}
    assert np.allclose(t[["fts_contrib", "vector_contrib"]].sum(axis=1), t.fused_score)
    t2 = explain_preset(titan, {"fts": fts, "vector": vec}, "q", limit=2)
    assert (t2.stage == "cut: limit").sum() == 2 and t2.final_rank.notna().sum() == 2


def test_compare_agrees_with_the_paired_tests():
    from rrfbench.core.stats import paired_t, permutation_test

    rng = np.random.default_rng(0)
    qrels = Qrels.from_dict({f"q{i}": {"r": 1} for i in range(40)})
    runs = []
    for name in ("x", "y"):
        runs.append(Run.from_dict({f"q{i}": {"r": float(rng.random()), "s": float(rng.random()),
                                              "t": float(rng.random())} for i in range(40)}, name))
    a = Config("rrf", (60.0, 60.0), (1.0, 0.0), (None, None))
    b = Config("rrf", (60.0, 60.0), (0.0, 1.0), (None, None))
    rep = compare(a, b, runs, qrels, "RR@10")
    from rrfbench.core.evaluation import evaluate_per_query

    va = evaluate_per_query(a.fuse(runs), qrels, ["RR@10"])["RR@10"].to_numpy()
    vb = evaluate_per_query(b.fuse(runs), qrels, ["RR@10"])["RR@10"].to_numpy()
    assert rep.delta == pytest.approx(va.mean() - vb.mean())
    assert rep.p_value == permutation_test(va, vb) and rep.p_value_t == paired_t(va, vb)
    up, down = rep.movers(3)
    assert len(up) == 3 and up.delta.iloc[0] == rep.table.delta.max()
    assert rep.wins + rep.losses + rep.ties == 40
