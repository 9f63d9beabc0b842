import gzip

import numpy as np
import pandas as pd
import pytest

from rrfbench.core.errors import InputError
from rrfbench.core.runs import Qrels, Run, docid_keys, top_k
from tests.conftest import at_every_simd_level, python_without_jit

# rank column deliberately disagrees with the scores; d3/d2 tie on score
TREC = """q1 Q0 d1 3 1.5 sys
q1 Q0 d3 1 2.0 sys
q1 Q0 d2 2 2.0 sys
q2 Q0 d9 1 0.1 sys
"""


def test_ranks_recomputed_from_scores_ties_by_docid(tmp_path):
    p = tmp_path / "r.trec"
    p.write_text(TREC)
    run = Run.from_trec(p)
    q1 = run.df[run.df.qid == "q1"]
    assert q1.docid.tolist() == ["d2", "d3", "d1"]  # tie 2.0: d2 < d3
    assert q1["rank"].tolist() == [1, 2, 3]
    assert run.name == "r"


def test_trec_roundtrip_plain_and_gz(tmp_path):
    p = tmp_path / "r.trec"
    p.write_text(TREC)
    run = Run.from_trec(p)
    for out in (tmp_path / "o.trec", tmp_path / "o.trec.gz"):
        run.to_trec(out)
        back = Run.from_trec(out)
        assert back.equals(run)
    with gzip.open(tmp_path / "o.trec.gz", "rt") as fh:
        assert fh.readline().split()[:4] == ["q1", "Q0", "d2", "1"]


def test_conversions_roundtrip(tmp_path):
    p = tmp_path / "r.trec"
    p.write_text(TREC)
    run = Run.from_trec(p)
    assert Run.from_pandas(run.to_pandas()).equals(run)
    assert Run.from_polars(run.to_polars()).equals(run)
    assert Run.from_dict(run.to_dict()).equals(run)
    rd = run.to_rank_dict()["q1"]
    assert rd["d2"] > rd["d3"] > rd["d1"]


def test_dicts_equal_a_loop_over_the_rows():
    """``to_dict``/``to_rank_dict``/``Qrels.to_dict`` (built a block of equal qids at a time)
    give the dict a plain loop over the rows gives, key order included."""
    rng = np.random.default_rng(3)
    run = Run(pd.DataFrame({"qid": rng.choice(["q1", "q2", "q10", "q3"], 400),
                            "docid": [f"d{i}" for i in rng.integers(0, 150, 400)],
                            "score": rng.integers(0, 9, 400) / 4}).drop_duplicates(["qid", "docid"]))
    loop, ranks = {}, {}
    n = len(run.df) + 1
    for q, d, s, r in run.df[["qid", "docid", "score", "rank"]].itertuples(index=False):
        loop.setdefault(q, {})[d] = float(s)
        ranks.setdefault(q, {})[d] = float(n - r)
    for got, want in ((run.to_dict(), loop), (run.to_rank_dict(), ranks)):
        assert got == want and list(got) == list(want)
        assert all(list(got[q]) == list(want[q]) for q in want)
        assert all(type(v) is float for g in got.values() for v in g.values())
    assert Run(run.df.iloc[:0]).to_dict() == {}
    qrels = Qrels(pd.DataFrame({"qid": ["b", "a", "b", "a", "c"], "docid": ["x", "y", "z", "x", "x"],
                                "relevance": [1, 2, 0, 1, 3]}), "q")
    got = qrels.to_dict()
    assert got == {"a": {"x": 1, "y": 2}, "b": {"x": 1, "z": 0}, "c": {"x": 3}}
    assert list(got) == ["a", "b", "c"] and list(got["a"]) == ["x", "y"]
    assert all(type(v) is int for g in got.values() for v in g.values())


def test_ranx_roundtrip(tmp_path):
    """``to_ranx``/``from_ranx`` keep the run (ranx without numba's JIT, in a subprocess: see
    :func:`tests.conftest.python_without_jit`)."""
    p = tmp_path / "r.trec"
    p.write_text(TREC)
    out = python_without_jit(
        "from rrfbench.core.runs import Run\n"
        f"run = Run.from_trec({str(p)!r})\n"
        "rx = run.to_ranx()\n"
        "print(type(rx).__module__, Run.from_ranx(rx).equals(run))\n")
    assert out.split() == ["ranx.data_structures.run", "True"]


@pytest.mark.parametrize("text, problem, line", [
    ("q1 Q0 d1 1 1.0 sys\nq1 Q0 d2 2 1.0\n", "expected 6 columns", 2),
    ("q1 Q0 d1 1 abc sys\n", "'abc' is not a number", 1),
    ("q1 Q0 d1 1 1.0 s\nq2 Q0 d1 1 1.0 s\nq1 Q0 d1 2 0.5 s\n", "first seen on line 1", 3),
])
def test_bad_run_lines_name_file_line_problem(tmp_path, text, problem, line):
    p = tmp_path / "bad.trec"
    p.write_text(text)
    with pytest.raises(InputError) as ei:
        Run.from_trec(p)
    assert ei.value.line == line
    assert problem in str(ei.value)
    assert str(ei.value).startswith(f"{p}:{line}: ")


def test_cut_and_subset(tmp_path):
    p = tmp_path / "r.trec"
    p.write_text(TREC)
    run = Run.from_trec(p)
    assert len(run.cut(1)) == 2
    assert run.subset(["q2"]).qids == ["q2"]


def test_qrels_trec_and_beir(tmp_path):
    a = tmp_path / "a.txt"
    a.write_text("1 0 d1 2\n1 0 d2 0\n2 0 d3 1\n")
    b = tmp_path / "b.tsv"
    b.write_text("query-id\tcorpus-id\tscore\n1\td1\t2\n1\td2\t0\n2\td3\t1\n")
    qa, qb = Qrels.from_file(a), Qrels.from_file(b)
    assert qa.to_dict() == qb.to_dict() == {"1": {"d1": 2, "d2": 0}, "2": {"d3": 1}}
    bad = tmp_path / "bad.tsv"
    bad.write_text("1 0 d1 x\n")
    with pytest.raises(InputError, match=r"bad.tsv:1: relevance 'x'"):
        Qrels.from_file(bad)


def test_run_requires_columns():
    with pytest.raises(InputError):
        Run(pd.DataFrame({"qid": ["1"], "docid": ["d"]}))


def test_duplicate_in_dataframe_rejected():
    df = pd.DataFrame({"qid": ["1", "1", "2"], "docid": ["a", "a", "a"], "score": [1.0, 2.0, 3.0]})
    with pytest.raises(InputError, match=r"duplicate \(qid, docid\) \(1, a\)"):
        Run(df)


def test_from_indexed_equals_general_constructor():
    import numpy as np

    rng = np.random.default_rng(0)
    qids = np.array(["10", "2", "b"], dtype=object)
    docids = np.array([f"d{i}" for i in range(30)], dtype=object)
    q_index = np.repeat(np.arange(3), 10)
    doc_index = np.concatenate([rng.choice(30, 10, replace=False) for _ in range(3)])
    scores = rng.integers(0, 4, size=30).astype(float)  # many ties
    fast = Run.from_indexed(qids, q_index, docids, doc_index, scores)
    slow = Run(pd.DataFrame({"qid": qids[q_index], "docid": docids[doc_index], "score": scores}))
    assert fast.df.equals(slow.df)


def test_bom_and_crlf_accepted(tmp_path):
    p = tmp_path / "r.trec"
    p.write_bytes(b"\xef\xbb\xbf" + TREC.replace("\n", "\r\n").encode())
    assert Run.from_trec(p).equals(Run.from_trec(_write(tmp_path / "plain.trec", TREC)))
    q = tmp_path / "q.tsv"
    q.write_bytes(b"\xef\xbb\xbfquery-id\tcorpus-id\tscore\r\n1\td1\t1\r\n")
    assert Qrels.from_file(q).to_dict() == {"1": {"d1": 1}}


def _write(p, text):
    p.write_text(text)
    return p


@pytest.mark.parametrize("data, problem, line", [
    (b"q1 Q0 d1 1 1.0 s\nq1 Q0 d2 2 \xff 1.0 s\n", "not UTF-8 text (byte 0xff)", 2),
    (b"q1 Q0 d1 1 1.0 s\n\x00\x00", "binary data", 2),
])
def test_not_text_is_one_clear_error(tmp_path, data, problem, line):
    p = tmp_path / "bad.trec"
    p.write_bytes(data)
    with pytest.raises(InputError) as ei:
        Run.from_trec(p)
    assert problem in str(ei.value) and ei.value.line == line


def test_broken_gzip(tmp_path):
    p = tmp_path / "r.trec.gz"
    p.write_bytes(b"not gzip at all")
    with pytest.raises(InputError, match="not a readable gzip file"):
        Run.from_trec(p)


def test_empty_file_warns(tmp_path):
    from rrfbench.core.errors import CoverageWarning

    with pytest.warns(CoverageWarning, match="holds no result lines"):
        run = Run.from_trec(_write(tmp_path / "e.trec", "\n\n"))
    assert len(run) == 0


def test_fast_and_strict_readers_agree(tmp_path):
    """Odd but valid text (tabs, runs of spaces, blank lines, ids like NA / null / 001) parses
    the same through pandas' C reader and the strict line reader."""
    from rrfbench.core.runs import run_frame
    from rrfbench.core.trec import parse_trec_fast, parse_trec_lines

    text = "001 Q0 NA 1 2.5 t\n\n001\tQ0\tnull 2 2.5 t\n002  Q0   \"x 1 -1e-3 t\n"
    fast = parse_trec_fast(text)
    slow = parse_trec_lines(text, tmp_path / "x")
    assert fast is not None and run_frame(*fast).equals(run_frame(*slow))
    f = run_frame(*fast)
    assert f.qid.tolist() == ["001", "001", "002"] and f.docid.tolist() == ["NA", "null", '"x']
    for bad in ("a Q0 b 1 1.0\n", "a Q0 b 1 1.0 t extra\n", "a Q0 b 1 x t\n", "a Q0 b 1 1 t\na Q0 b 2 1 t\n"):
        assert parse_trec_fast(bad) is None


def test_manifest_beside_run_file_supplies_meta(tmp_path):
    p = _write(tmp_path / "dense.trec", TREC)
    assert Run.from_trec(p).score_floor is None
    (tmp_path / "dense.json").write_text('{"score_floor": -1.0, "retriever": "dense"}')
    run = Run.from_trec(p)
    assert run.score_floor == -1.0 and run.cut(1).score_floor == -1.0


# --------------------------------------------------------------------------- more exact checks
def test_non_finite_score_names_file_and_line(tmp_path):
    p = _write(tmp_path / "inf.trec", "q1 Q0 d1 1 1.0 s\nq1 Q0 d2 2 inf s\n")
    with pytest.raises(InputError) as ei:
        Run.from_trec(p)
    assert str(ei.value) == f"{p}:2: score 'inf' is not finite"
    assert ei.value.path == str(p) and ei.value.line == 2


def test_views_keep_name_and_meta():
    run = Run.from_dict({"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"x": 0.5}}, name="bm25")
    run = run.with_meta(score_floor=0.0)
    for view in (run.cut(2), run.subset(["q1"]), run.with_meta(retriever="x")):
        assert view.name == "bm25" and view.score_floor == 0.0
    assert run.rename("other").name == "other"
    cut = run.cut(2)
    assert cut.df.docid.tolist() == ["a", "b", "x"] and cut.df["rank"].tolist() == [1, 2, 1]
    assert Run.from_dict({"q": {"d": 1.0}}).name == "run"


def _parquet_run():
    return Run.from_dict({"2": {"b": 1.0, "a": 1.0, "c": 3.0}, "10": {"z": 0.5, "y": 0.7}},
                         name="dense")


def test_parquet_roundtrip_ranked_and_filtered(tmp_path):
    run = _parquet_run()
    p = run.to_parquet(tmp_path / "dense.run.parquet")
    back = Run.from_parquet(p)
    assert back.name == "dense" and back.meta == {}
    assert back.df.equals(run.df)
    assert back.df.qid.tolist() == ["10", "10", "2", "2", "2"]        # "10" < "2" as strings
    assert back.df.docid.tolist() == ["y", "z", "c", "a", "b"]
    assert back.df["rank"].tolist() == [1, 2, 1, 2, 3]
    assert Run.from_parquet(p, ranked=True).df.equals(run.df)
    assert Run.from_parquet(p, name="x").name == "x"
    only = Run.from_parquet(p, qids=[2])                               # ids matched as strings
    assert only.df.qid.tolist() == ["2", "2", "2"] and only.df["rank"].tolist() == [1, 2, 3]
    assert len(Run.from_parquet(p, qids=[])) == 0


def test_parquet_ranked_trusts_stored_ranks_and_casts_ids(tmp_path):
    # integer ids, and a rank column that disagrees with the scores
    df = pd.DataFrame({"qid": [7, 7], "docid": [1, 2], "score": [1.0, 2.0], "rank": [1, 2]})
    p = tmp_path / "t.parquet"
    df.to_parquet(p, index=False)
    (tmp_path / "t.json").write_text('{"score_floor": -1.0, "other": 1}')
    rec = Run.from_parquet(p)                      # ranks recomputed: docid 2 (score 2) first
    assert rec.df.qid.tolist() == ["7", "7"] and rec.df.docid.tolist() == ["2", "1"]
    assert rec.df["rank"].tolist() == [1, 2] and rec.meta == {"score_floor": -1.0}
    kept = Run.from_parquet(p, ranked=True)        # a table rrfbench wrote: order kept as is
    assert kept.df.qid.tolist() == ["7", "7"] and kept.df.docid.tolist() == ["1", "2"]
    assert kept.df["rank"].tolist() == [1, 2]
    assert kept.df.score.tolist() == [1.0, 2.0] and kept.meta == {"score_floor": -1.0}
    assert kept.name == "t"
    # without a stored rank column, ranked=True still ranks
    df.drop(columns="rank").to_parquet(tmp_path / "u.parquet", index=False)
    assert Run.from_parquet(tmp_path / "u.parquet", ranked=True).df.docid.tolist() == ["2", "1"]


def test_parquet_errors(tmp_path):
    missing = tmp_path / "nope.parquet"
    with pytest.raises(InputError) as ei:
        Run.from_parquet(missing)
    assert str(ei.value) == f"{missing}: file not found"
    bad = _write(tmp_path / "bad.parquet", "not parquet")
    with pytest.raises(InputError, match=r"bad.parquet: not a readable parquet run table \("):
        Run.from_parquet(bad)
    p = tmp_path / "cols.parquet"
    pd.DataFrame({"qid": ["1"], "docid": ["d"]}).to_parquet(p, index=False)
    with pytest.raises(InputError) as ei:
        Run.from_parquet(p)
    assert str(ei.value) == (f"{p}: a run table needs columns qid, docid, score; "
                             "missing ['score']")


def test_qrels_views_and_outputs(tmp_path):
    qrels = Qrels.from_dict({"2": {"b": 1, "a": 0}, "1": {"d": 2}})
    assert qrels.name == "qrels" and Qrels.from_dict({}, name="x").name == "x"
    assert qrels.df.qid.tolist() == ["1", "2", "2"] and qrels.df.docid.tolist() == ["d", "a", "b"]
    sub = Qrels.from_dict({"2": {"b": 1, "a": 0}, "1": {"d": 2}}, name="judged").subset([2])
    assert sub.name == "judged" and sub.to_dict() == {"2": {"a": 0, "b": 1}} and len(sub) == 2
    assert sub.qids == ["2"] and repr(sub) == "Qrels('judged', 1 queries, 2 judgments)"
    p = qrels.to_trec(tmp_path / "q.txt")
    assert p.read_text() == "1 0 d 2\n2 0 a 0\n2 0 b 1\n"
    assert Qrels.from_file(p).to_dict() == qrels.to_dict()
    pl = qrels.to_polars()
    assert pl.columns == ["qid", "docid", "relevance"] and pl["relevance"].to_list() == [2, 0, 1]


def test_content_digest_is_pinned():
    """The digest is stored in run manifests and saved results: its value never changes (it
    was computed with ``astype(str)`` before the faster join; same bytes)."""
    from rrfbench.core.runs import content_digest

    run = Run.from_dict({"q1": {"d2": 0.5, "d1": 0.5, "é": 0.25}, "10": {"d1": 1.0}}, "x")
    assert content_digest(run) == "966063e866619b67"


def test_content_digest_rounds_scores_to_1e9():
    """Scores equal to 9 decimals give the same digest (float noise below that is ignored); a
    difference at the 6th decimal does not."""
    from rrfbench.core.runs import content_digest

    def run(x):
        return Run.from_dict({"q": {"a": x, "b": 0.5}}, "r")

    assert content_digest(run(0.12345678904)) == content_digest(run(0.12345678906))
    assert content_digest(run(0.123456)) != content_digest(run(0.123457))


def test_from_indexed_names_ranks_and_casts():
    run = Run.from_indexed(["q2", "q1"], [0, 0, 1, 1], ["b", "a", "c"], [0, 1, 2, 0],
                           [0.5, 0.5, 2, 1])
    assert run.name == "run"
    assert run.df.values.tolist() == [["q1", "c", 2.0, 1], ["q1", "b", 1.0, 2],
                                      ["q2", "a", 0.5, 1], ["q2", "b", 0.5, 2]]
    assert Run.from_indexed(["q"], [0], ["d"], [0], [1.0], "bm25").name == "bm25"


def test_to_trec_tag_defaults_to_the_run_name(tmp_path):
    run = Run.from_dict({"q": {"a": 2.0, "b": 1.0}}, "bm25")
    run.to_trec(tmp_path / "a.trec")
    assert {ln.split()[5] for ln in (tmp_path / "a.trec").read_text().splitlines()} == {"bm25"}
    run.to_trec(tmp_path / "b.trec", tag="mine")
    assert {ln.split()[5] for ln in (tmp_path / "b.trec").read_text().splitlines()} == {"mine"}


def test_rename_keeps_meta():
    run = Run.from_dict({"q": {"a": 2.0, "b": 1.0}}, "x").with_meta(score_floor=0.0, retriever="bm25")
    renamed = run.rename("y")
    assert renamed.name == "y" and renamed.meta == run.meta and renamed.score_floor == 0.0


@pytest.mark.parametrize("content, name, message, line", [
    (None, "missing.trec", "file not found", None),
    ("folder", "a_folder", "is a folder, expected a file", None),
    (b"not gzip at all", "r.trec.gz", "not a readable gzip file (", None),
    (b"\x00q1 Q0 d1 1 1.0 s\n", "nul0.trec", "binary data (a NUL byte); expected UTF-8 text", 1),
    (b"q1 Q0 d1 1 1.0 s\nq1 Q0 d2 2 0.5 s\x00\n", "nul2.trec",
     "binary data (a NUL byte); expected UTF-8 text", 2),
    (b"q1 Q0 d1 1 1.0 s\n\n\xff\n", "latin.trec", "not UTF-8 text (byte 0xff)", 3),
    # a blank first line counts, and the first problem is the one named
    (b"\nq1\x00\nq2\x00\n", "nuls.trec", "binary data (a NUL byte); expected UTF-8 text", 2),
    (b"\nq1\xfe\nq2\xff\n", "bytes.trec", "not UTF-8 text (byte 0xfe)", 2),
])
def test_read_text_names_file_line_and_problem(tmp_path, content, name, message, line):
    from rrfbench.core.runs import read_text

    p = tmp_path / name
    if content == "folder":
        p.mkdir()
    elif content is not None:
        p.write_bytes(content)
    with pytest.raises(InputError) as ei:
        read_text(p)
    assert ei.value.line == line
    where = f"{p}:{line}: " if line else f"{p}: "
    assert str(ei.value).startswith(where + message), str(ei.value)


def test_read_text_drops_bom_and_reads_gzip(tmp_path):
    from rrfbench.core.runs import read_text

    (tmp_path / "a.txt").write_bytes("\ufeffq1 Q0 é\r\n".encode())
    assert read_text(tmp_path / "a.txt") == "q1 Q0 é\r\n"
    (tmp_path / "b.txt.gz").write_bytes(gzip.compress(b"x\ny\n"))
    assert read_text(tmp_path / "b.txt.gz") == "x\ny\n"


def test_sort_and_rank_large_keys_take_the_lexsort_path_with_the_same_rule():
    """Keys whose product would overflow one int64 sort key go through lexsort; the order and
    ranks follow the same rule (query, score desc, docid asc)."""
    import numpy as np

    from rrfbench.core.runs import _sort_and_rank

    qkey = np.array([2**40, 0, 0, 2**40, 0])
    dkey = np.array([2**40, 5, 3, 7, 9])
    score = np.array([1.0, 0.5, 0.5, 1.0, 0.75])
    order, rank = _sort_and_rank(qkey, dkey, score)
    want = sorted(range(5), key=lambda i: (qkey[i], -score[i], dkey[i]))
    assert order.tolist() == want == [4, 2, 1, 3, 0]
    assert rank.tolist() == [1, 2, 3, 1, 2] and rank.dtype == np.int64
    small = _sort_and_rank(np.array([1, 0, 0]), np.array([0, 2, 1]), np.array([1.0, 0.5, 0.5]))
    assert small[0].tolist() == [2, 1, 0] and small[1].tolist() == [1, 2, 1]
    empty = _sort_and_rank(np.array([], int), np.array([], int), np.array([]))
    assert len(empty[0]) == 0 and len(empty[1]) == 0


@pytest.mark.parametrize("header", ["query-id\tcorpus-id\tscore", "qid docid rel", "query_id d r"])
def test_qrels_headers_blank_lines_and_both_layouts(tmp_path, header):
    p = tmp_path / "test.tsv"
    p.write_text(f"{header}\nq1\td1\t2\n\n   \nq1 0 d2 1\nq2\td1\t0\n")
    qrels = Qrels.from_file(p)
    assert qrels.df.values.tolist() == [["q1", "d1", 2], ["q1", "d2", 1], ["q2", "d1", 0]]
    assert qrels.name == "test"


def test_manifest_beside_a_run_file_gives_its_meta(tmp_path):
    import json

    p = tmp_path / "bm25.trec.gz"
    Run.from_dict({"q": {"a": 2.0, "b": 1.0}}, "bm25").to_trec(p)
    (tmp_path / "bm25.json").write_text(json.dumps(
        {"score_floor": 0.0, "retriever": "bm25", "params": {"k1": 1.2}, "other": 1}))
    run = Run.from_trec(p)
    assert run.meta == {"score_floor": 0.0, "retriever": "bm25", "params": {"k1": 1.2}}
    (tmp_path / "bm25.json").write_text("[1, 2]")
    assert Run.from_trec(p).meta == {}


@pytest.mark.parametrize("rows, pair", [
    ([("q1", "a", 1.0), ("q1", "a", 0.5)], "(q1, a)"),  # the smallest table with a duplicate
    ([("q1", "a", 1.0), ("q1", "b", 0.5), ("q1", "a", 0.2)], "(q1, a)"),
    ([("q1", "a", 1.0), ("q2", "z", 0.5), ("q2", "b", 0.4), ("q2", "z", 0.1)], "(q2, z)"),
])
def test_run_table_with_a_duplicate_pair_is_refused(rows, pair):
    with pytest.raises(InputError) as ei:
        Run(pd.DataFrame(rows, columns=["qid", "docid", "score"]), "r")
    assert str(ei.value) == f"duplicate (qid, docid) {pair} in run"
    ok = Run(pd.DataFrame([("q1", "a", 1.0), ("q2", "a", 0.5)], columns=["qid", "docid", "score"]))
    assert len(ok) == 2
    # more queries than documents, every pair distinct: no pair key may collide
    grid = [(f"q{i}", d, 1.0) for i in range(5) for d in ("a", "b")]
    assert len(Run(pd.DataFrame(grid, columns=["qid", "docid", "score"]))) == 10


def _top_k_reference(scores, k, keys):
    """The rank rule, by a full stable sort of every row."""
    keys = np.broadcast_to(keys, scores.shape)
    return np.stack([np.lexsort((keys[r], -scores[r]))[:k] for r in range(len(scores))])


@pytest.mark.parametrize("k", [1, 7, 50, 199, 200, 500])
def test_top_k_follows_the_rank_rule_at_the_cut(k):
    """Scores drawn from 4 values, so most rows have ties straddling the cut: the kept entries
    are the best scores, then the lowest keys among those tied at the k-th score."""
    rng = np.random.default_rng(k)
    scores = rng.integers(0, 4, size=(30, 200)).astype(np.float32)
    keys = rng.permutation(200)
    got = top_k(scores, k, keys)
    assert got.shape == (30, min(k, 200)) and got.dtype == np.int64
    assert np.array_equal(got, _top_k_reference(scores, min(k, 200), keys))
    per_entry = rng.permutation(30 * 200).reshape(30, 200)  # keys given per entry
    assert np.array_equal(top_k(scores, k, per_entry), _top_k_reference(scores, min(k, 200), per_entry))


def test_top_k_edges():
    s = np.array([[0.5, 0.5, 0.5], [3.0, -1.0, 3.0]])
    assert top_k(s, 2, np.array([2, 0, 1])).tolist() == [[1, 2], [2, 0]]  # by key on ties
    assert top_k(s, 0, np.arange(3)).shape == (2, 0)
    assert top_k(np.zeros((0, 3)), 2, np.arange(3)).shape == (0, 2)
    assert top_k(np.array([1.0, 2.0]), 5, np.arange(2)).tolist() == [[1, 0]]  # 1-D: one row
    assert docid_keys(["d10", "d2", "d1"]).tolist() == [1, 2, 0]  # string order


def test_top_k_is_the_same_at_every_simd_level():
    """Run as NumPy would on CPUs with fewer vector units: the kept entries and their order do
    not change. (Plain ``np.argpartition`` keeps different tied entries at these levels on an
    AVX-512 machine: that is the bug this guards against; the script prints both.)"""
    code = """
import hashlib, numpy as np
from rrfbench.core.runs import top_k
rng = np.random.default_rng(0)
s = rng.integers(0, 5, size=(64, 3000)).astype(np.float32)
keys = rng.permutation(3000)
h = lambda a: hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()[:16]
print(h(top_k(s, 100, keys)), h(np.sort(np.argpartition(-s, 99, axis=1)[:, :100], axis=1)))
"""
    out = at_every_simd_level(code)
    ours = {level: line.split()[0] for level, line in out.items()}
    assert len(set(ours.values())) == 1, out
