import numpy as np
import pytest

from rrfbench.core.evaluation import evaluate, evaluate_per_query
from rrfbench.core.runs import Qrels, Run
from tests.conftest import needs_cranfield, needs_scifact

PYTREC = {"nDCG@10": "ndcg_cut_10", "R@100": "recall_100", "AP@1000": "map_cut_1000",
          "RR@10": "recip_rank"}


def pytrec_means(run: Run, qrels: Qrels) -> dict:
    """trec_eval via pytrec_eval on the run's own order (strictly decreasing scores).

    RR@10 is recip_rank on the run cut to 10; queries absent from the run count 0.
    """
    import pytrec_eval

    rd = run.to_rank_dict()
    rd10 = run.cut(10).to_rank_dict()
    qd = qrels.to_dict()
    ev = pytrec_eval.RelevanceEvaluator(qd, {"ndcg_cut_10", "recall_100", "map_cut_1000"})
    ev_rr = pytrec_eval.RelevanceEvaluator(qd, {"recip_rank"})
    full, rr = ev.evaluate(rd), ev_rr.evaluate(rd10)
    n = len(qd)
    out = {}
    for name, key in PYTREC.items():
        src = rr if name == "RR@10" else full
        out[name] = sum(v[key] for v in src.values()) / n
    return out


def _check(run, qrels):
    ours = evaluate(run, qrels, list(PYTREC))
    ref = pytrec_means(run, qrels)
    for name in PYTREC:
        assert ours[name] == pytest.approx(ref[name], abs=1e-9), name


@needs_scifact
@pytest.mark.parametrize("spec", ["bm25", "fts5"])
def test_agrees_with_pytrec_eval_scifact(scifact, run_of, spec):
    _check(run_of(scifact, spec), scifact.qrels("test"))


@needs_cranfield
def test_agrees_with_pytrec_eval_cranfield_graded(cranfield, run_of):
    _check(run_of(cranfield, "bm25"), cranfield.qrels("test"))


@needs_scifact
def test_agrees_with_pytrec_eval_on_tied_fused_run(scifact, run_of):
    """RRF output has exact ties; evaluation follows the run's docid tie order, and pytrec_eval
    sees the same order through strictly decreasing scores."""
    from rrfbench.fusion.functions import rrf

    fused = rrf([run_of(scifact, "bm25"), run_of(scifact, "fts5")], k=60)
    assert fused.df.duplicated(["qid", "score"]).any()  # ties exist
    _check(fused, scifact.qrels("test"))


def test_missing_query_scores_zero_and_ties_follow_docid():
    qrels = Qrels.from_dict({"q1": {"b": 1}, "q2": {"x": 1}})
    # a and b tie; docid order puts a first, so the relevant b is at rank 2
    run = Run.from_dict({"q1": {"a": 1.0, "b": 1.0}})
    pq = evaluate_per_query(run, qrels, ["RR@10", "nDCG@10"])
    assert pq.loc["q1", "RR@10"] == 0.5
    assert pq.loc["q2", "RR@10"] == 0.0  # judged but absent from the run
    assert evaluate(run, qrels, ["RR@10"])["RR@10"] == pytest.approx(0.25)


def test_pure_no_mutation():
    qrels = Qrels.from_dict({"q1": {"b": 1}})
    run = Run.from_dict({"q1": {"a": 2.0, "b": 1.0}})
    before_run, before_qrels = run.df.copy(), qrels.df.copy()
    evaluate(run, qrels)
    assert run.df.equals(before_run) and qrels.df.equals(before_qrels)


def test_graded_ndcg_hand_computed():
    qrels = Qrels.from_dict({"q": {"a": 3, "b": 1}})
    run = Run.from_dict({"q": {"b": 2.0, "a": 1.0, "c": 0.5}})
    dcg = 1 / np.log2(2) + 3 / np.log2(3)
    idcg = 3 / np.log2(2) + 1 / np.log2(3)
    assert evaluate(run, qrels, ["nDCG@10"])["nDCG@10"] == pytest.approx(dcg / idcg, abs=1e-12)


def test_coverage_and_warnings():
    from rrfbench.core.errors import CoverageWarning
    from rrfbench.core.evaluation import coverage

    qrels = Qrels.from_dict({"q1": {"a": 1}, "q2": {"b": 1}, "q3": {"c": 1}})
    full = Run.from_dict({"q1": {"a": 1.0}, "q2": {"b": 1.0}, "q3": {"x": 1.0}})
    cov = coverage(full, qrels)
    assert (cov.judged, cov.answered, cov.fraction, cov.problem()) == (3, 3, 1.0, None)
    wrong = Run.from_dict({"x1": {"a": 1.0}, "q1": {"a": 1.0}})
    assert coverage(wrong, qrels).answered == 1 and coverage(wrong, qrels).run_queries == 2
    with pytest.warns(CoverageWarning, match="answers only 1 of 3 judged queries"):
        assert evaluate(wrong, qrels, ["RR@10"])["RR@10"] == pytest.approx(1 / 3)
    empty = Run.from_dict({})
    with pytest.warns(CoverageWarning, match="the run is empty"):
        assert evaluate(empty, qrels, ["RR@10"])["RR@10"] == 0.0
