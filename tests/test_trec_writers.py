"""Every TREC run rrfbench writes is a valid TREC run (six whitespace-separated fields a line),
read back by ir_measures and pytrec_eval with the same metrics as rrfbench's own evaluation.

The kinds of run, each written through the console script as a user writes it: a single
retriever's cached run, ``fuse -o`` for every fusion method, ``fuse --config`` with a saved
sweep, suite and adaptive-policy result, ``preset -o`` for every studied system, ``engines -o``
for an engine's modes, and the Python API's :meth:`Run.to_trec` with a name that holds spaces.
"""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path

import ir_measures
import pytest
import pytrec_eval

from rrfbench.core.runs import Qrels, Run, manifest_path, trec_tag
from rrfbench.fusion.functions import SCORE_METHODS
from tests.test_cli import console

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
SYSTEMS = ("nexusai", "titan", "ai-memory", "zeus")


def _text(path: Path) -> str:
    return gzip.open(path, "rt").read() if path.suffix == ".gz" else path.read_text()


def _six_fields(path: Path) -> None:
    lines = [ln for ln in _text(path).splitlines() if ln.strip()]
    assert lines, path
    bad = [ln for ln in lines if len(ln.split()) != 6]
    assert not bad, f"{path}: {len(bad)} lines without six fields, e.g. {bad[0]!r}"


def _same_metrics(path: Path, qrels: Qrels) -> None:
    """ir_measures' reader and pytrec_eval's parse of the same file give the same nDCG@10 and
    AP per query; rrfbench's evaluation agrees where no two scores of a query tie (trec_eval
    breaks ties the other way)."""
    rows = list(ir_measures.read_trec_run(str(path)))
    run: dict = {}
    for r in rows:
        run.setdefault(r.query_id, {})[r.doc_id] = r.score
    qd = {q: {d: int(g) for d, g in docs.items()} for q, docs in qrels.to_dict().items()}
    measures = [ir_measures.nDCG @ 10, ir_measures.AP]
    irm = {(m.query_id, str(m.measure)): m.value
           for m in ir_measures.iter_calc(measures, qd, rows)}
    te = pytrec_eval.RelevanceEvaluator(qd, {"ndcg_cut.10", "map"}).evaluate(run)
    assert irm, path
    for q, vals in te.items():
        assert irm[(q, "nDCG@10")] == pytest.approx(vals["ndcg_cut_10"], abs=1e-12), (path, q)
        assert irm[(q, "AP")] == pytest.approx(vals["map"], abs=1e-12), (path, q)
    from rrfbench.core.evaluation import evaluate_per_query

    ours = evaluate_per_query(Run.from_trec(path), qrels, ["nDCG@10"])
    ours = ours["nDCG@10"].to_dict()
    for q, docs in run.items():
        if q in te and len(set(docs.values())) == len(docs):
            assert ours[q] == pytest.approx(te[q]["ndcg_cut_10"], abs=1e-12), (path, q)


def _valid(path: Path, qrels: Qrels) -> None:
    _six_fields(path)
    _same_metrics(path, qrels)


@pytest.fixture(scope="module")
def cut(cut_data, tmp_path_factory):
    """adi cut (80 documents), its qrels, a results folder and the console's environment."""
    from rrfbench import load_dataset

    res = tmp_path_factory.mktemp("trec-results")
    env = {"RRFBENCH_DATA": str(cut_data), "RRFBENCH_RESULTS": str(res)}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        qrels = load_dataset("adi").qrels("test")
    finally:
        for k, v in old.items():
            os.environ.pop(k) if v is None else os.environ.__setitem__(k, v)
    return {"env": env, "res": res, "qrels": qrels, "out": tmp_path_factory.mktemp("trec-out")}


def _ok(cut, *args) -> str:
    code, out, err = console(*args, env=cut["env"])
    assert code == 0, err
    return out


def test_single_retriever_runs_are_valid(cut):
    _ok(cut, "retrieve", "adi", "-r", "bm25", "-r", "fts5", "-r", "dense")
    files = sorted((cut["res"] / "runs" / "adi" / "test").glob("*.trec.gz"))
    assert {f.name.split(".")[0] for f in files} >= {"bm25", "fts5", "dense"}
    for f in files:
        _valid(f, cut["qrels"])


@pytest.mark.parametrize("method", ("rrf", *SCORE_METHODS))
def test_fuse_writes_a_valid_run_for_every_method(cut, method):
    path = cut["out"] / f"fuse-{method}.trec"
    out = _ok(cut, "fuse", "adi", "-r", "bm25", "-r", "dense", "--method", method,
              "--weights", "0.7,0.3", "-o", str(path))
    assert f"wrote {path}" in out
    _valid(path, cut["qrels"])
    manifest = json.loads(manifest_path(path).read_text())
    assert manifest["config"]["method"] == method and manifest["dataset"] == "adi"


@pytest.mark.parametrize("saved", ("scifact/best.json", "transfer/en/best.json",
                                   "adaptive/en/best.json"))
def test_fuse_with_a_saved_configuration_of_every_kind_is_valid(cut, saved):
    """A sweep's, a suite's and an adaptive policy's best.json (the last named
    ``adaptive(select: ...)``, whose space made a seventh field)."""
    path = cut["out"] / (saved.replace("/", "-") + ".trec")
    _ok(cut, "fuse", "adi", "--config", str(RESULTS / saved), "-o", str(path))
    _valid(path, cut["qrels"])
    manifest = json.loads(manifest_path(path).read_text())
    assert manifest["tag"] == trec_tag(manifest["name"]) and " " not in manifest["tag"]


@pytest.mark.parametrize("system", SYSTEMS)
def test_preset_writes_a_valid_run(cut, system):
    path = cut["out"] / f"preset-{system}.trec"
    _ok(cut, "preset", "adi", "-p", system, "-o", str(path))
    _valid(path, cut["qrels"])
    assert json.loads(manifest_path(path).read_text())["preset"] == system


def test_engines_write_valid_runs_for_each_mode(cut):
    where = cut["out"] / "engines"
    _ok(cut, "engines", "adi", "--engine", "qdrant", "-o", str(where))
    files = sorted(where.glob("*.trec"))
    assert [f.name for f in files] == ["qdrant-dbsf.default.trec", "qdrant-dbsf.tuned.trec",
                                       "qdrant-rrf.default.trec", "qdrant-rrf.tuned.trec"]
    for f in files:
        _valid(f, cut["qrels"])
    code, _, err = console("engines", "--suite", "en", "-o", str(where), env=cut["env"])
    assert code == 2 and "use it with DATASET" in err


def test_api_to_trec_tags_a_name_with_whitespace(tmp_path):
    run = Run.from_dict({"q1": {"d1": 2.0, "d2": 1.0}, "q2": {"d3": 0.5}},
                        "adaptive(select: bm25 +\tdense)")
    path = run.to_trec(tmp_path / "r.trec")
    _six_fields(path)
    assert {ln.split()[5] for ln in path.read_text().splitlines()} == {
        "adaptive(select:_bm25_+_dense)"}
    assert Run.from_trec(path).equals(run)
    assert trec_tag("  ") == "rrfbench"


def test_ids_with_whitespace_are_refused_before_writing(tmp_path):
    from rrfbench.core.errors import InputError

    run = Run.from_dict({"q 1": {"d1": 1.0}}, "r")
    with pytest.raises(InputError, match="query id 'q 1'"):
        run.to_trec(tmp_path / "r.trec")
    assert not (tmp_path / "r.trec").exists()


def test_a_manifest_never_overwrites_a_foreign_file(tmp_path):
    from rrfbench.core.errors import InputError

    (tmp_path / "r.json").write_text('{"mine": 1}')
    run = Run.from_dict({"q1": {"d1": 1.0}}, "r")
    with pytest.raises(InputError, match="not an rrfbench run manifest"):
        run.to_trec(tmp_path / "r.trec", manifest={})
    assert json.loads((tmp_path / "r.json").read_text()) == {"mine": 1}
    run.to_trec(tmp_path / "s.trec", manifest={"k": 1})
    run.to_trec(tmp_path / "s.trec", manifest={"k": 2})  # its own manifest: rewritten
    assert json.loads((tmp_path / "s.json").read_text())["k"] == 2


@pytest.mark.parametrize("line, problem", [
    ("q1 Q0 d1 one 1.5 tag", "rank 'one' is not a whole number"),
    ("q1 Q0 d1 1 x tag", "score 'x' is not a number"),
    ("q1 Q0 d1 1 tag", "expected 6 columns"),
    ("q1 Q0 d1 1 1.5 run tag", "expected 6 columns"),
])
def test_reading_stays_strict(tmp_path, line, problem):
    from rrfbench.core.errors import InputError

    p = tmp_path / "bad.trec"
    p.write_text("q0 Q0 d0 1 2.0 ok\n" + line + "\n")
    with pytest.raises(InputError, match=problem) as ei:
        Run.from_trec(p)
    assert "bad.trec:2" in str(ei.value)
