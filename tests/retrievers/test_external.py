"""A team's own streams: run:PATH and vectors:PATH, checked against the collection, through the
console script from a folder outside the checkout."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from rrfbench import load_dataset
from rrfbench.core.errors import CoverageWarning, InputError
from rrfbench.retrievers import make_retriever, parse_spec
from tests.test_cli import console, one_line_error

RUN = ("q1 Q0 d2 1 3.5 team\nq1 Q0 d1 2 2.0 team\nq1 Q0 d4 3 0.5 team\n"
       "q2 Q0 d3 1 9.0 team\n")


def _vectors(tmp_path, rows, name="emb.parquet"):
    path = tmp_path / name
    pd.DataFrame(rows, columns=["id", "role", "vector"]).to_parquet(path)
    return path


GOOD = [("d1", "document", [1.0, 0.0]), ("d2", "document", [0.6, 0.8]),
        ("d3", "document", [0.0, 1.0]), ("d4", "document", [-1.0, 0.0]),
        ("q1", "query", [0.8, 0.6]), ("q2", "query", [0.0, 2.0])]


def test_a_run_file_is_a_stream_named_by_its_file(tiny_beir, tmp_path):
    ds = load_dataset(str(tiny_beir))
    (tmp_path / "kw.trec").write_text(RUN)
    r = make_retriever(f"run:{tmp_path / 'kw.trec'}")
    assert r.name == "run-kw" and r.score_floor == 0.5
    run = r.retrieve(ds, ds.split_queries("test"), 2)
    assert run.df[["qid", "docid", "rank"]].values.tolist() == [
        ["q1", "d2", 1], ["q1", "d1", 2], ["q2", "d3", 1]]
    p = r.params()
    assert p["file"] == "kw.trec" and len(p["sha256"]) == 64 and str(tmp_path) not in json.dumps(p)
    named = make_retriever(f"run:{tmp_path / 'kw.trec'};name=engine;floor=0")
    assert named.name == "engine" and named.score_floor == 0.0


@pytest.mark.parametrize("text, problem", [
    ("q1 Q0 d1 1 1.0\n", "expected 6 columns"),
    ("q1 Q0 d1 1 1.0 t\nq1 Q0 d1 2 0.5 t\n", "duplicate (qid, docid) (q1, d1)"),
    ("q1 Q0 d1 1 1.0 t\nq9 Q0 d1 1 1.0 t\n", "kw.trec:2: query 'q9' is not a query of tiny"),
    ("q1 Q0 d1 1 1.0 t\nq1 Q0 dx 2 0.5 t\n", "kw.trec:2: document 'dx' is not in tiny's corpus"),
])
def test_a_bad_run_file_is_one_line_naming_file_line_and_problem(tiny_beir, tmp_path, text,
                                                                  problem):
    ds = load_dataset(str(tiny_beir))
    (tmp_path / "kw.trec").write_text(text)
    with pytest.raises(InputError) as e:
        make_retriever(f"run:{tmp_path / 'kw.trec'}").retrieve(ds, ds.split_queries("test"), 10)
    assert problem in str(e.value) and "\n" not in str(e.value)


def test_an_unanswered_query_is_the_coverage_warning(tiny_beir, tmp_path):
    ds = load_dataset(str(tiny_beir))
    (tmp_path / "kw.trec").write_text("q1 Q0 d1 1 1.0 t\n")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        make_retriever(f"run:{tmp_path / 'kw.trec'}").retrieve(ds, ds.split_queries("test"), 10)
    assert any(issubclass(x.category, CoverageWarning) and "answers 1 of the split's 2" in
               str(x.message) for x in w)


def test_specs_without_a_file_are_refused():
    for spec in ("run:", "vectors:", "run"):
        with pytest.raises(InputError, match="needs a file"):
            parse_spec(spec)
    with pytest.raises(InputError, match="has no option"):
        parse_spec("run:x.trec;depth=3")


def test_vectors_score_by_exact_cosines(tiny_beir, tmp_path):
    ds = load_dataset(str(tiny_beir))
    r = make_retriever(f"vectors:{_vectors(tmp_path, GOOD)}")
    assert r.name == "vectors-emb"
    run = r.retrieve(ds, ds.split_queries("test"), 3)
    q1 = run.df[run.df.qid == "q1"]
    assert q1.docid.tolist() == ["d2", "d1", "d3"]  # cosines 0.96, 0.8, 0.6
    assert np.allclose(q1.score.to_numpy(), [0.96, 0.8, 0.6], atol=1e-6)
    q2 = run.df[run.df.qid == "q2"]  # its vector normalised: (0, 1)
    assert q2.docid.tolist()[0] == "d3" and abs(q2.score.iloc[0] - 1.0) < 1e-6


def test_vectors_as_npy_with_an_id_list(tiny_beir, tmp_path):
    ds = load_dataset(str(tiny_beir))
    np.save(tmp_path / "emb.npy", np.asarray([v for *_, v in GOOD], dtype=np.float32))
    (tmp_path / "emb.ids.txt").write_text("".join(
        (f"query:{i}" if role == "query" else i) + "\n" for i, role, _ in GOOD))
    run = make_retriever(f"vectors:{tmp_path / 'emb.npy'}").retrieve(
        ds, ds.split_queries("test"), 3)
    assert run.df[run.df.qid == "q1"].docid.tolist() == ["d2", "d1", "d3"]


@pytest.mark.parametrize("rows, problem", [
    (GOOD + [("d1", "document", [1.0, 0.0])], "document id 'd1' appears twice"),
    (GOOD[:3] + GOOD[4:], "1 of tiny's 4 documents have no vector (first: 'd4')"),
    (GOOD + [("dx", "document", [1.0, 0.0])], "document id 'dx' is not in tiny's corpus"),
    (GOOD + [("q9", "query", [1.0, 0.0])], "query id 'q9' is not a query of tiny"),
    ([("d1", "document", [0.0, 0.0])] + GOOD[1:], "document id 'd1': a zero or non-finite"),
    ([("d1", "document", [1.0, 0.0, 0.0])] + GOOD[1:], "id 'd1': dimension 3, expected 2 (as 5 of 6"),
    (GOOD[:5] + [("q2", "queries", [1.0, 0.0])], "role 'queries'"),
])
def test_bad_vectors_are_one_line_naming_file_id_and_problem(tiny_beir, tmp_path, rows, problem):
    ds = load_dataset(str(tiny_beir))
    with pytest.raises(InputError) as e:
        make_retriever(f"vectors:{_vectors(tmp_path, rows)}").retrieve(
            ds, ds.split_queries("test"), 3)
    assert problem in str(e.value) and "emb.parquet" in str(e.value)


def test_streams_through_the_console_script_from_a_team_folder(tiny_beir, tmp_path):
    """From a folder outside the checkout: a run file and an embeddings file fused, with the
    results kept in that folder; a wrong input of each kind is one line, exit 2, nothing
    written."""
    team = tmp_path / "team"
    team.mkdir()
    (team / "kw.trec").write_text(RUN)
    _vectors(team, GOOD)
    env = {"RRFBENCH_RESULTS": str(team / "results")}
    code, out, err = console("fuse", str(tiny_beir), "-r", f"run:{team / 'kw.trec'}", "-r",
                             f"vectors:{team / 'emb.parquet'}", env=env)
    assert code == 0, err
    assert "run-kw" in out + err and "vectors-emb" in out + err
    assert (team / "results" / "runs" / "tiny" / "test" / "run-kw.trec.gz").exists()
    (team / "bad.trec").write_text("q1 Q0 nope 1 1.0 t\n")
    before = sorted(p.name for p in (team / "results").rglob("*"))
    one_line_error(*console("fuse", str(tiny_beir), "-r", f"run:{team / 'bad.trec'}", "-r",
                            f"vectors:{team / 'emb.parquet'}", env=env)[::2],
                   "bad.trec:1: document 'nope' is not in tiny's corpus")
    _vectors(team, GOOD[1:], name="short.parquet")
    one_line_error(*console("fuse", str(tiny_beir), "-r", f"run:{team / 'kw.trec'}", "-r",
                            f"vectors:{team / 'short.parquet'}", env=env)[::2],
                   "short.parquet", "have no vector (first: 'd1')")
    one_line_error(*console("fuse", str(tiny_beir), "-r", "run:", env=env)[::2], "needs a file")
    assert sorted(p.name for p in (team / "results").rglob("*")) == before


def test_a_team_s_streams_in_a_system_s_roles_from_its_folder(tiny_beir, tmp_path):
    """``--stream role=spec`` puts a run file and an embeddings file in a studied system's or
    engine mode's roles for ``preset``, ``tune -p`` and ``judge -p``, from the team's folder;
    a wrong role or entry is one line, exit 2, nothing written."""
    team = tmp_path / "team"
    team.mkdir()
    (team / "kw.trec").write_text(RUN)
    _vectors(team, GOOD)
    env = {"RRFBENCH_RESULTS": str(team / "results")}
    streams = ["--stream", f"keyword=run:{team / 'kw.trec'}",
               "--stream", f"dense=vectors:{team / 'emb.parquet'}"]
    code, out, err = console("preset", str(tiny_beir), "-p", "qdrant-rrf", *streams, "--json",
                             env=env)
    assert code == 0, err
    got = json.loads(out)
    assert got["streams"] == {"vector": "vectors-emb", "keyword": "run-kw"}
    assert got["metrics"]["R@100"] == 1.0
    code, out, err = console("tune", str(tiny_beir), "-p", "titan", *streams, "--folds", "2",
                             env=env)
    assert code == 0, err
    best = json.loads((team / "results" / "tiny" / "presets" / "titan" / "best.json").read_text())
    assert "run-kw" in json.dumps(best) and "vectors-emb" in json.dumps(best)
    before = sorted(p.name for p in (team / "results").rglob("*"))
    one_line_error(*console("tune", str(tiny_beir), "-p", "titan", "--stream", "nosuch=bm25",
                            env=env)[::2], "titan has no role 'nosuch'", "fts, vector")
    one_line_error(*console("tune", str(tiny_beir), "-p", "titan", "--stream", "keyword",
                            env=env)[::2], "'keyword' is not role=spec")
    one_line_error(*console("tune", str(tiny_beir), "--stream", "keyword=bm25", env=env)[::2],
                   "give -p SYSTEM")
    one_line_error(*console("engines", str(tiny_beir), "--stream", "fts=bm25", env=env)[::2],
                   "keyword and dense")
    assert sorted(p.name for p in (team / "results").rglob("*")) == before


def test_one_run_file_per_split(tiny_beir, tmp_path):
    """``run:DIR/{split}.trec``: every file the pattern matches is one stream; a query answered
    in two files is one line naming the second file."""
    (tmp_path / "train.trec").write_text("q2 Q0 d3 1 9.0 team\n")
    (tmp_path / "test.trec").write_text("q1 Q0 d2 1 3.5 team\nq1 Q0 d1 2 2.0 team\n")
    r = make_retriever(f"run:{tmp_path}/{{split}}.trec")
    assert r.name == f"run-{tmp_path.name}" and r.params()["files"] == ["test.trec", "train.trec"]
    ds = load_dataset(str(tiny_beir))
    run = r.retrieve(ds, ds.queries, 10)
    assert sorted(run.df.qid.unique()) == ["q1", "q2"] and len(run.df) == 3
    (tmp_path / "dev.trec").write_text("q1 Q0 d4 1 1.0 team\n")
    with pytest.raises(InputError) as e:
        make_retriever(f"run:{tmp_path}/{{split}}.trec;name=team").retrieve(ds, ds.queries, 10)
    assert "query 'q1' is answered in dev.trec too" in str(e.value)
    with pytest.raises(InputError, match="no file matches"):
        make_retriever(f"run:{tmp_path}/{{split}}.run")
