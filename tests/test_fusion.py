import numpy as np
import pytest

from rrfbench.fusion import normalise, order_to_scores, rrf, score_fusion
from rrfbench.runs import Run
from tests.conftest import needs_scifact

A = Run.from_dict({"q": {"a": 3.0, "b": 2.0}}, "A")  # ranks a1 b2
B = Run.from_dict({"q": {"b": 9.0, "c": 8.0}}, "B")  # ranks b1 c2


def scores(run):
    return dict(zip(run.df.docid, run.df.score, strict=True))


def test_rank_base_one_cormack():
    s = scores(rrf([A, B], k=60))
    assert s == pytest.approx({"a": 1 / 61, "b": 1 / 62 + 1 / 61, "c": 1 / 62}, abs=1e-15)


def test_rank_base_zero_enumerate():
    s = scores(rrf([A, B], k=60, rank_base=0))
    assert s == pytest.approx({"a": 1 / 60, "b": 1 / 61 + 1 / 60, "c": 1 / 61}, abs=1e-15)


def test_weights_and_zero_weight_adds_no_documents():
    s = scores(rrf([A, B], k=60, weights=[0.7, 0.3]))
    assert s["b"] == pytest.approx(0.7 / 62 + 0.3 / 61, abs=1e-15)
    s0 = scores(rrf([A, B], k=60, weights=[1.0, 0.0]))
    assert set(s0) == {"a", "b"}  # c only in the zero-weight run: not added
    assert s0["b"] == pytest.approx(1 / 62, abs=1e-15)


def test_depth_per_run_and_ties_by_docid():
    fused = rrf([A, B], k=60, depth=1)
    assert fused.df.docid.tolist() == ["a", "b"]  # both 1/61: tie -> docid order
    assert fused.df.score.tolist() == [1 / 61, 1 / 61]
    fused = rrf([A, B], k=60, depth=[2, 1])
    assert set(fused.df.docid) == {"a", "b"}


def test_per_run_k():
    s = scores(rrf([A, B], k=[10, 100]))
    assert s == pytest.approx({"a": 1 / 11, "b": 1 / 12 + 1 / 101, "c": 1 / 102}, abs=1e-15)


def test_absent_contributes_zero_and_limit():
    fused = rrf([A, B], k=1, limit=2)
    assert fused.df.docid.tolist() == ["b", "a"]  # b: 1/3 + 1/2 ; a: 1/2
    assert len(fused) == 2


def test_score_fusion_minmax_and_missing_policies():
    # A normalised: a 1, b 0 ; B: b 1, c 0
    s = scores(score_fusion([A, B], "convex", "minmax", weights=[0.5, 0.5]))
    assert s == pytest.approx({"a": 0.5, "b": 0.5, "c": 0.0})
    mnz = scores(score_fusion([A, B], "combmnz", "minmax"))
    assert mnz == pytest.approx({"a": 1.0, "b": 2.0, "c": 0.0})
    # z-score: each two-document run normalises to +1/-1; missing 'zero' = the run's mean,
    # missing 'min' = the run's minimum (-1)
    z0 = scores(score_fusion([A, B], "combsum", "zscore", missing="zero"))
    zm = scores(score_fusion([A, B], "combsum", "zscore", missing="min"))
    assert z0 == pytest.approx({"a": 1.0, "b": 0.0, "c": -1.0})
    assert zm == pytest.approx({"a": 0.0, "b": 0.0, "c": -2.0})


def test_tmm_uses_theoretical_minimum():
    dense = Run.from_dict({"q": {"x": 0.5, "y": 0.0}}, "dense")
    n = normalise(dense.df, "tmm", -1.0)
    assert n.tolist() == pytest.approx([1.0, 1.0 / 1.5])  # (s + 1) / (max + 1)


def test_order_to_scores_keeps_system_order():
    out = order_to_scores([0.5, 0.5, 0.5, 0.25])
    assert (np.diff(out) < 0).all()
    assert np.allclose(out, [0.5, 0.5, 0.5, 0.25], atol=1e-15)


@needs_scifact
def test_agrees_with_ranx_rrf_and_wsum(scifact, run_of):
    import ranx

    qids = scifact.qrels("test").qids[:60]  # ranx's typed-dict conversions are slow; 60 queries
    runs = [run_of(scifact, "bm25").subset(qids), run_of(scifact, "fts5").subset(qids)]
    assert [r.score_floor for r in runs] == [0.0, 0.0]
    # ranx ranks by its own tie rule; give it this package's order as strictly decreasing scores
    rx = [ranx.Run(r.to_rank_dict(), name=r.name) for r in runs]
    ours = rrf([Run.from_dict(r.to_rank_dict(), r.name) for r in runs], k=60)
    theirs = ranx.fuse(rx, method="rrf", params={"k": 60}).to_dict()
    got = ours.to_dict()
    diff = max(abs(got[q][d] - theirs[q][d]) for q in theirs for d in theirs[q])
    assert set(got) == set(theirs) and diff < 1e-12
    for norm, ours_norm in (("min-max", "minmax"), ("zmuv", "zscore")):
        rx = [ranx.Run(r.to_dict(), name=r.name) for r in runs]
        theirs = ranx.fuse(rx, norm=norm, method="wsum", params={"weights": [0.3, 0.7]}).to_dict()
        got = score_fusion(runs, "convex", ours_norm, weights=[0.3, 0.7], missing="zero").to_dict()
        diff = max(abs(got[q][d] - theirs[q][d]) for q in theirs for d in theirs[q])
        assert diff < 1e-12, norm


# --------------------------------------------------------------------------- bugs that must fail
def test_rrf_ties_by_docid_not_input_order():
    # z comes first in the input, but z and a tie: docid order puts a first
    x = Run.from_dict({"q": {"z": 2.0, "m": 1.0}}, "X")
    y = Run.from_dict({"q": {"a": 2.0, "m": 1.0}}, "Y")
    fused = rrf([x, y], k=60)
    assert fused.df.docid.tolist() == ["m", "a", "z"]
    assert fused.df.score.iloc[1] == fused.df.score.iloc[2]
    assert rrf([y, x], k=60).df.docid.tolist() == ["m", "a", "z"]


def test_minmax_of_equal_scores_is_one():
    flat = Run.from_dict({"q": {"a": 3.0, "b": 3.0}, "r": {"c": 1.0, "d": 0.0}}, "F")
    n = normalise(flat.df, "minmax")
    assert dict(zip(flat.df.docid, n, strict=True)) == {"a": 1.0, "b": 1.0, "c": 1.0, "d": 0.0}
    assert normalise(flat.df, "tmm", 3.0).iloc[:2].tolist() == [1.0, 1.0]


def test_tmm_floor_is_declared_never_guessed():
    from rrfbench.errors import InputError

    dense = Run.from_dict({"q": {"x": 0.5, "y": 0.0}}, "dense")  # the name must not matter
    with pytest.raises(InputError, match="theoretical minimum"):
        score_fusion([dense], "convex", "tmm")
    s = scores(score_fusion([dense.with_meta(score_floor=-1.0)], "convex", "tmm"))
    assert s == pytest.approx({"x": 1.0, "y": 1 / 1.5})
    s = scores(score_fusion([dense], "convex", "tmm", theoretical_min=[0.0]))
    assert s == pytest.approx({"x": 1.0, "y": 0.0})


@pytest.mark.parametrize("kwargs, msg", [
    ({"k": [1, 2, 3]}, "expected one value or 2"),
    ({"weights": [-1, 1]}, "must be >= 0"),
    ({"weights": [0, 0]}, "at least one run needs a weight > 0"),
    ({"rank_base": 2}, "rank_base: 2 is not one of 0, 1"),
    ({"depth": 2.5}, "whole number"),
    ({"k": float("nan")}, "not finite"),
])
def test_bad_arguments_are_input_errors(kwargs, msg):
    from rrfbench.errors import InputError

    with pytest.raises(InputError, match=msg):
        rrf([A, B], **kwargs)


def test_bad_score_fusion_arguments():
    from rrfbench.errors import InputError

    with pytest.raises(InputError, match="method: 'x' is not one of"):
        score_fusion([A, B], "x")
    with pytest.raises(InputError, match="norm: 'x' is not one of"):
        score_fusion([A, B], "convex", "x")
    with pytest.raises(InputError, match="missing: 'x' is not one of"):
        score_fusion([A, B], "convex", "minmax", missing="x")


# --------------------------------------------------------------------------- found by mutmut
def test_rrf_defaults_k60_weight1_rank_base1_on_one_run():
    run = Run.from_dict({"q": {"a": 3.0, "b": 2.0, "c": 1.0}}, "X")
    fused = rrf([run])
    assert fused.df.docid.tolist() == ["a", "b", "c"]
    assert fused.df.score.tolist() == pytest.approx([1 / 61, 1 / 62, 1 / 63], abs=1e-15)
    assert rrf([run], rank_base=0).df.score.tolist() == pytest.approx([1 / 60, 1 / 61, 1 / 62])


def test_fusion_refuses_no_runs_and_names_the_option():
    from rrfbench.errors import InputError

    with pytest.raises(InputError, match="fusion needs at least one run"):
        rrf([])
    run = Run.from_dict({"q": {"a": 1.0}}, "X")
    with pytest.raises(InputError, match=r"^k: "):
        rrf([run, run], k=[1, 2, 3])
    with pytest.raises(InputError, match=r"^weights: "):
        rrf([run, run], weights=[1, 2, 3])


def test_k_zero_needs_rank_base_one_and_bad_values_name_their_option():
    from rrfbench.errors import InputError

    run = Run.from_dict({"q": {"a": 2.0, "b": 1.0}}, "X")
    assert rrf([run], k=0).df.score.tolist() == pytest.approx([1.0, 0.5])  # 1 / (0 + rank)
    with pytest.raises(InputError, match=r"^k: "):
        rrf([run], k=0, rank_base=0)  # 1 / (0 + 0)
    with pytest.raises(InputError, match=r"^weights: "):
        rrf([run], weights=[-1.0])
    with pytest.raises(InputError, match=r"^depth: "):
        rrf([run], depth=0)
