import numpy as np
import pytest

from rrfbench.core.runs import Run
from rrfbench.fusion.functions import (
    check_choices,
    check_numbers,
    normalise,
    order_to_scores,
    rrf,
    score_floors,
    score_fusion,
)
from tests.conftest import needs_scifact, python_without_jit

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


RANX_FUSE = """
import json, sys
import ranx
rank_dicts, dicts = json.load(open(sys.argv[1]))
out = {"rrf": ranx.fuse([ranx.Run(d, name=f"r{i}") for i, d in enumerate(rank_dicts)],
                        method="rrf", params={"k": 60}).to_dict()}
for norm in ("min-max", "zmuv"):
    out[norm] = ranx.fuse([ranx.Run(d, name=f"r{i}") for i, d in enumerate(dicts)], norm=norm,
                          method="wsum", params={"weights": [0.3, 0.7]}).to_dict()
print(json.dumps(out))
"""


@needs_scifact
def test_agrees_with_ranx_rrf_and_wsum(scifact, run_of, tmp_path):
    """RRF and weighted sums (min-max, z-score) agree with ranx's to 1e-12. ranx runs its own
    Python source in a subprocess without numba's JIT (:func:`python_without_jit`): the same
    algorithm, without a minute of compiling its kernels in a fresh environment."""
    import json

    qids = scifact.qrels("test").qids[:60]
    runs = [run_of(scifact, "bm25").subset(qids), run_of(scifact, "fts5").subset(qids)]
    assert [r.score_floor for r in runs] == [0.0, 0.0]
    # ranx ranks by its own tie rule; give it this package's order as strictly decreasing scores
    payload = tmp_path / "runs.json"
    payload.write_text(json.dumps([[r.to_rank_dict() for r in runs], [r.to_dict() for r in runs]]))
    theirs_all = json.loads(python_without_jit(RANX_FUSE, str(payload)))
    theirs = theirs_all["rrf"]
    got = rrf([Run.from_dict(r.to_rank_dict(), r.name) for r in runs], k=60).to_dict()
    assert set(got) == set(theirs) and sum(map(len, theirs.values())) > 60 * 1000
    diff = max(abs(got[q][d] - theirs[q][d]) for q in theirs for d in theirs[q])
    assert diff < 1e-12
    for norm, ours_norm in (("min-max", "minmax"), ("zmuv", "zscore")):
        theirs = theirs_all[norm]
        got = score_fusion(runs, "convex", ours_norm, weights=[0.3, 0.7], missing="zero").to_dict()
        assert set(got) == set(theirs)
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
    from rrfbench.core.errors import InputError

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
    from rrfbench.core.errors import InputError

    with pytest.raises(InputError, match=msg):
        rrf([A, B], **kwargs)


def test_bad_score_fusion_arguments():
    from rrfbench.core.errors import InputError

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
    from rrfbench.core.errors import InputError

    with pytest.raises(InputError, match="fusion needs at least one run"):
        rrf([])
    run = Run.from_dict({"q": {"a": 1.0}}, "X")
    with pytest.raises(InputError, match=r"^k: "):
        rrf([run, run], k=[1, 2, 3])
    with pytest.raises(InputError, match=r"^weights: "):
        rrf([run, run], weights=[1, 2, 3])


def test_k_zero_needs_rank_base_one_and_bad_values_name_their_option():
    from rrfbench.core.errors import InputError

    run = Run.from_dict({"q": {"a": 2.0, "b": 1.0}}, "X")
    assert rrf([run], k=0).df.score.tolist() == pytest.approx([1.0, 0.5])  # 1 / (0 + rank)
    with pytest.raises(InputError, match=r"^k: "):
        rrf([run], k=0, rank_base=0)  # 1 / (0 + 0)
    with pytest.raises(InputError, match=r"^weights: "):
        rrf([run], weights=[-1.0])
    with pytest.raises(InputError, match=r"^depth: "):
        rrf([run], depth=0)


# --------------------------------------------------------------------------- found by mutmut (2)
def _message(call) -> str:
    from rrfbench.core.errors import InputError

    with pytest.raises(InputError) as err:
        call()
    return str(err.value)


DENSE = Run.from_dict({"q": {"x": 0.5, "y": 0.0}}, "dense")  # no declared floor


@pytest.mark.parametrize("call, message", [
    (lambda: score_fusion([]), "fusion needs at least one run"),
    (lambda: rrf([A, B], weights=[0, 0]), "weights: at least one run needs a weight > 0"),
    (lambda: score_fusion([A, B], weights=[0, 0]), "weights: at least one run needs a weight > 0"),
    (lambda: rrf([A, B], depth=[1, 2, 3]), "depth: expected one value or 2 (one per run), got 3"),
    (lambda: score_fusion([A, B], depth=[1, 2, 3]),
     "depth: expected one value or 2 (one per run), got 3"),
    (lambda: score_fusion([A, B], weights=[1, 2, 3]),
     "weights: expected one value or 2 (one per run), got 3"),
    (lambda: score_fusion([A, B], norm="tmm", theoretical_min=[0, 0, 0]),
     "theoretical_min: expected one value or 2 (one per run), got 3"),
    (lambda: rrf([A, B], limit=2.5), "limit: 2.5 must be a whole number"),
    (lambda: rrf([A, B], limit=-1), "limit: -1 must be > 0"),
    (lambda: score_fusion([A, B], limit=2.5), "limit: 2.5 must be a whole number"),
    (lambda: score_fusion([A, B], limit=-1), "limit: -1 must be > 0"),
    (lambda: score_fusion([A, B], depth=0), "depth: 0 must be > 0"),
    (lambda: score_fusion([A, B], depth=1.5), "depth: 1.5 must be a whole number"),
    (lambda: score_fusion([A, B], weights=["w", 1]), "weights: 'w' is not a number"),
    (lambda: score_fusion([A, B], method="rrf"),
     "method: 'rrf' is not one of convex, combsum, combmnz"),
    (lambda: normalise(A.df, "x"), "norm: 'x' is not one of minmax, zscore, tmm, none"),
    (lambda: normalise(A.df, "tmm"), "tmm normalisation needs the run's theoretical minimum score"),
    (lambda: score_floors([DENSE]),
     "tmm normalisation needs run 'dense''s theoretical minimum score, and it declares none (a "
     "run read from a file without its manifest, or a fused run); pass theoretical_min=, or use "
     "Run.with_meta(score_floor=...)"),
    (lambda: check_numbers([None, -1], "w"), "w: -1 must be >= 0"),
    (lambda: check_numbers([None, "x"], "k"), "k: 'x' is not a number"),
    (lambda: check_choices(rank_base=2, option="--"), "--rank-base: '2' is not one of 0, 1"),
    (lambda: check_choices(norm="x", option="--"),
     "--norm: 'x' is not one of minmax, zscore, tmm, none"),
    (lambda: check_choices(method="x"), "method: 'x' is not one of rrf, convex, combsum, combmnz"),
])
def test_every_refusal_says_exactly_what_is_wrong(call, message):
    assert _message(call) == message


def test_the_first_problem_is_named_and_tmm_says_how_to_declare_a_floor():
    assert _message(lambda: rrf([])) == "fusion needs at least one run"
    assert _message(lambda: score_fusion([A, B], "convex", "x", weights=[-1, 1])) == \
        "norm: 'x' is not one of minmax, zscore, tmm, none"
    assert _message(lambda: score_fusion([DENSE], "convex", "tmm")) == _message(
        lambda: score_floors([DENSE]))
    # a zero weight skips that run only
    assert set(scores(score_fusion([A, B], weights=[0, 1]))) == {"b", "c"}


def test_fused_runs_are_named_by_method_runs_and_settings():
    assert rrf([A, B]).name == "rrf(A+B;k=60)"
    assert rrf([A, B], k=[1, 2], weights=[0.7, 0.3]).name == "rrf(A+B;k=1,2;w=0.7,0.3)"
    assert rrf([A, B], name="mine").name == "mine"
    assert score_fusion([A, B]).name == "convex(A+B;norm=minmax)"
    assert score_fusion([A, B], "convex", "zscore", weights=[0.5, 0.5]).name == \
        "convex(A+B;norm=zscore;w=0.5,0.5)"
    assert score_fusion([A, B], "combsum", weights=[0.5, 0.5]).name == "combsum(A+B;norm=minmax)"
    assert score_fusion([A, B], name="mine").name == "mine"


def test_score_fusion_defaults_depth_limit_and_raw_scores():
    assert scores(score_fusion([A, B])) == scores(score_fusion([A, B], "convex", "minmax"))
    assert score_floors([DENSE], norm="minmax") == [None]  # only tmm needs a floor
    # depth 1: each run's top document only (a from A, b from B); depth 2 keeps rank 2
    assert set(scores(score_fusion([A, B], "combsum", depth=1))) == {"a", "b"}
    assert set(scores(score_fusion([A, B], "combsum", depth=[2, 1]))) == {"a", "b"}
    assert set(scores(score_fusion([A, B], "combsum", depth=[1, 2]))) == {"a", "b", "c"}
    assert score_fusion([A, B], "combsum", "none", limit=2).df.docid.tolist() == ["b", "c"]
    assert scores(score_fusion([A, B], "combsum", "none")) == {"a": 3.0, "b": 11.0, "c": 8.0}
    assert rrf([A, B], limit=1).df.docid.tolist() == ["b"]


def test_a_constant_run_normalises_to_zero_and_still_counts_for_combmnz():
    one = Run.from_dict({"q": {"a": 5.0}}, "C")  # one document: z-score sd 0
    assert normalise(one.df, "zscore").tolist() == [0.0]
    # a: C gives z 0 (present), A gives +1: combsum 1, times 2 runs present
    assert scores(score_fusion([one, A], "combmnz", "zscore"))["a"] == pytest.approx(2.0)


def test_order_to_scores_splits_every_tie_and_returns_floats():
    out = order_to_scores([3, 2, 2])
    assert (np.diff(out) < 0).all() and out.dtype == np.float64
    assert np.allclose(out, [3, 2, 2], rtol=0, atol=1e-12)  # each tie split by an ulp, no more
    ints = order_to_scores([3, 3, 1])
    assert ints[1] == np.nextafter(3.0, -np.inf) and ints.tolist()[::2] == [3.0, 1.0]
