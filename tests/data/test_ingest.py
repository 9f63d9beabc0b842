"""A collection of one's own, without judgments, becomes a BEIR folder: from JSONL, CSV, parquet
and a SQLite table, every malformed row refused in one line naming the file and the line."""

from __future__ import annotations

import json
import sqlite3

import pandas as pd
import pytest

from rrfbench import load_dataset
from rrfbench.core.errors import InputError
from rrfbench.data.ingest import Columns, ingest
from tests.test_cli import console, one_line_error

DOCS = [("d1", "Apples", "red apples and green apples"), ("d2", "", "pears are green"),
        ("d3", "Cars", "fast red cars")]
QUERIES = [("q1", "green apples"), ("q2", "red cars")]


def _check(folder):
    ds = load_dataset(str(folder))
    assert ds.corpus.docid.tolist() == ["d1", "d2", "d3"]
    assert ds.corpus.title.tolist() == ["Apples", "", "Cars"]
    assert ds.corpus.text.tolist()[2] == "fast red cars"
    assert ds.queries.qid.tolist() == ["q1", "q2"] and ds.splits == []
    m = json.loads((folder / "manifest.json").read_text())
    assert m["corpus"]["documents"] == 3 and m["queries"]["queries"] == 2 and m["judgments"] == 0
    return m


def test_jsonl_csv_and_parquet_with_mapped_columns(tmp_path):
    (tmp_path / "c.jsonl").write_text("".join(
        json.dumps({"doc": d, "head": t, "body": x}) + "\n" for d, t, x in DOCS))
    pd.DataFrame(QUERIES, columns=["id", "q"]).to_csv(tmp_path / "q.csv", index=False)
    out = ingest(tmp_path / "a", tmp_path / "c.jsonl", tmp_path / "q.csv",
                 corpus_columns=Columns("doc", "body", "head"), query_columns=Columns("id", "q", None))
    assert _check(out)["corpus"]["format"] == "jsonl"
    pd.DataFrame(DOCS, columns=["doc", "head", "body"]).to_parquet(tmp_path / "c.parquet")
    out = ingest(tmp_path / "b", tmp_path / "c.parquet", tmp_path / "q.csv",
                 corpus_columns=Columns("doc", "body", "head"), query_columns=Columns("id", "q", None))
    assert _check(out)["corpus"]["format"] == "parquet"


def test_a_sqlite_table_through_the_console_script(tmp_path):
    db = tmp_path / "notes.db"
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE notes (id TEXT, heading TEXT, body TEXT)")
    con.executemany("INSERT INTO notes VALUES (?, ?, ?)", DOCS)
    con.execute("CREATE TABLE asks (qid TEXT, question TEXT)")
    con.executemany("INSERT INTO asks VALUES (?, ?)", QUERIES)
    con.commit()
    con.close()
    out = tmp_path / "mine"
    code, stdout, err = console("ingest", str(out), "--corpus", str(db), "--table", "notes",
                                "--id-column", "id", "--text-column", "body", "--title-column",
                                "heading", "--queries", str(db), "--query-table", "asks",
                                "--query-id-column", "qid", "--query-text-column", "question")
    assert code == 0, err
    assert "3 documents, 2 queries, no judgments yet" in stdout
    assert _check(out)["corpus"]["table"] == "notes"
    # ingesting again into a folder it wrote replaces it
    code, _, err = console("ingest", str(out), "--corpus", str(db), "--table", "notes",
                           "--id-column", "id", "--text-column", "body")
    assert code == 0, err
    code, _, err = console("ingest", str(tmp_path / "x"), "--corpus", str(db), "--table", "nope")
    one_line_error(code, err, "no table or view 'nope'; there are: asks, notes")


@pytest.mark.parametrize("name, text, needle", [
    ("c.csv", "_id,text\na,x\nb,y\na,z\n", "c.csv: line 4: duplicate document id 'a'; first on line 2"),
    ("c.csv", "_id,text\na,x\n,y\n", "c.csv: line 3: document without an id"),
    ("c.csv", "_id,text\na,x\nb,\n", "line 3: document 'b' has neither text"),
    ("c.csv", "id,text\na,x\n", "no column '_id'; the documents have: id, text"),
    ("c.csv", "_id,text\na,x,extra\n", "c.csv:2: 1 more field(s) than the header has"),
    ("c.jsonl", '{"_id": "a", "text": "x"}\n{"_id": "b", "text": \n', "c.jsonl:2: not valid JSON"),
    ("c.jsonl", '{"_id": "a b", "text": "x"}\n', "document id 'a b' holds whitespace"),
    ("c.txt", "a\n", "cannot tell the format from the suffix '.txt'"),
])
def test_malformed_rows_one_line_naming_file_and_line(tmp_path, name, text, needle):
    (tmp_path / name).write_text(text)
    code, _, err = console("ingest", str(tmp_path / "out"), "--corpus", str(tmp_path / name))
    one_line_error(code, err, needle)
    assert not (tmp_path / "out").exists()       # nothing written


def test_a_foreign_folder_is_never_overwritten(tmp_path):
    (tmp_path / "c.jsonl").write_text('{"_id": "a", "text": "x"}\n')
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "notes.txt").write_text("keep me")
    with pytest.raises(InputError, match="not a collection rrfbench wrote"):
        ingest(tmp_path / "theirs", tmp_path / "c.jsonl")
    assert (tmp_path / "theirs" / "notes.txt").read_text() == "keep me"


def test_identical_ids_are_declared_and_counted(tmp_path):
    (tmp_path / "c.jsonl").write_text('{"_id": "a", "text": "x"}\n{"_id": "b", "text": "y"}\n')
    (tmp_path / "q.jsonl").write_text('{"_id": "a", "text": "x?"}\n{"_id": "z", "text": "y?"}\n')
    out = ingest(tmp_path / "o", tmp_path / "c.jsonl", tmp_path / "q.jsonl",
                 ignore_identical_ids=True)
    m = json.loads((out / "manifest.json").read_text())
    assert m["ignore_identical_ids"] is True and m["queries_that_are_documents"] == 1


def test_ignore_identical_ids_drops_a_querys_own_document_from_every_run(tmp_path):
    """BEIR's rule for ArguAna and Quora: declared at ingest, read by the dataset, applied
    where runs are made (so every command sees it), and recorded in the run's manifest."""
    from rrfbench import load_dataset
    from rrfbench.retrievers import cached_run, make_retriever

    rows = [{"_id": f"d{i}", "text": t} for i, t in enumerate(
        ["red apples and green apples", "green pears", "apples in pies", "stone fruit"])]
    (tmp_path / "c.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (tmp_path / "q.jsonl").write_text(json.dumps({"_id": "d0", "text": "red apples"}) + "\n")
    runs = {}
    for flag in (False, True):
        out = ingest(tmp_path / f"coll{int(flag)}", tmp_path / "c.jsonl", tmp_path / "q.jsonl",
                     ignore_identical_ids=flag)
        ds = load_dataset(str(out))
        assert ds.ignore_identical_ids is flag
        res = cached_run(make_retriever("bm25"), ds, "all", 10)
        runs[flag] = list(res.run.df.docid)
        assert res.manifest.get("ignore_identical_ids", False) is flag
    assert runs[False][0] == "d0" and "d0" not in runs[True]
    assert runs[True] == [d for d in runs[False] if d != "d0"]
