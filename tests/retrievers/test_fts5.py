import re
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rrfbench.core.errors import InputError
from rrfbench.retrievers.fts5 import (
    FTS5Retriever,
    build_and_tokens,
    build_or_tokens,
    build_phrase,
    build_titan,
    check_fts5,
)
from tests.conftest import needs_cranfield, needs_scifact

QUOTED_OR = re.compile(r'^"[^\W_]+"( OR "[^\W_]+")*$')


def test_nexusai_example():
    assert build_or_tokens("How do I configure the Qdrant collection?") == \
        '"configure" OR "qdrant" OR "collection"'
    assert build_and_tokens("Qdrant collection") == '"qdrant" AND "collection"'
    assert build_or_tokens("how do I do it?") is None  # all stopwords -> sits out
    assert build_or_tokens("a b c") is None  # 1-character tokens dropped
    assert build_or_tokens("time good way") == '"time" OR "good" OR "way"'  # kept on purpose
    assert build_phrase('say "hi"') == '"say ""hi"""'


@pytest.fixture(scope="module")
def fts_con():
    check_fts5()
    con = sqlite3.connect(":memory:")
    con.execute("CREATE VIRTUAL TABLE docs USING fts5(docid UNINDEXED, title, text, "
                "tokenize='porter unicode61')")
    con.executemany("INSERT INTO docs VALUES (?, ?, ?)", [
        ("1", "near or not", "title: body with OR and NEAR(a b) and stars*"),
        ("2", "ünïcödé", "日本語 テキスト ^caret \"quotes\""),
    ])
    return con


ADVERSARIAL = st.sampled_from(['"', "*", "^", "NEAR", "NEAR(", "OR", "AND", "NOT", "(", ")",
                               "title:", "text:", "{title text}:", "\x00", "\n", "-", "+",
                               "'", "\\", "日本語", "ünï", "\u200b", "\U0001d465", "ǅ"])
MESSAGES = st.one_of(st.text(max_size=80),
                     st.lists(st.one_of(ADVERSARIAL, st.text(max_size=6)), max_size=12).map(" ".join))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MESSAGES)
def test_or_tokens_injection_safe(fts_con, message):
    match = build_or_tokens(message)
    if match is None:
        return
    assert QUOTED_OR.match(match), match  # only quoted letter/digit tokens reach MATCH
    fts_con.execute("SELECT docid FROM docs WHERE docs MATCH ?", (match,)).fetchall()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(MESSAGES)
def test_phrase_and_and_tokens_never_raise(fts_con, message):
    for build in (build_phrase, build_and_tokens):
        match = build(message)
        if match is not None:
            fts_con.execute("SELECT docid FROM docs WHERE docs MATCH ?", (match,)).fetchall()


def test_operator_words_are_searched_as_text(fts_con):
    hits = fts_con.execute("SELECT docid FROM docs WHERE docs MATCH ?",
                           (build_or_tokens("NEAR stars"),)).fetchall()
    assert hits == [("1",)]  # "near" matched as a word (not an operator); "stars" stemmed


def test_tiny_index_and_empty_queries(tiny_beir):
    from rrfbench import load_dataset

    ds = load_dataset(str(tiny_beir))
    r = FTS5Retriever()
    import pandas as pd

    q = pd.DataFrame({"qid": ["a", "b", "c"], "text": ["green apples", "the of and", '"*^NEAR(']})
    run = r.retrieve(ds, q, 10)
    assert set(run.df[run.df.qid == "a"].docid) == {"d1", "d2"}
    assert r.last_stats["empty_queries"] == 1  # "the of and"; the symbols query keeps "near"
    assert (run.df.score > 0).all()


@needs_cranfield
def test_phrase_loses_recall(cranfield, run_of):
    from rrfbench import evaluate

    or_r = evaluate(run_of(cranfield, "fts5"), cranfield.qrels("test"), ["R@100"])["R@100"]
    ph_r = evaluate(run_of(cranfield, "fts5:phrase"), cranfield.qrels("test"), ["R@100"])["R@100"]
    assert or_r > 0.5 and ph_r < 0.2 * or_r


@needs_scifact
def test_scifact_reference_numbers_and_raw_sqlite_equivalence(scifact, run_of):
    from rrfbench import evaluate

    run = run_of(scifact, "fts5")
    m = evaluate(run, scifact.qrels("test"), ["nDCG@10", "R@100"])
    assert m["nDCG@10"] >= 0.66 and m["R@100"] >= 0.90
    # the same MATCH through raw sqlite3 gives the same top documents
    r = FTS5Retriever()
    con = r.connect(scifact)
    q = scifact.split_queries("test").iloc[0]
    raw = con.execute("SELECT docid FROM docs WHERE docs MATCH ? ORDER BY rank LIMIT 10",
                      (build_or_tokens(q.text),)).fetchall()
    ours = run.df[run.df.qid == q.qid].docid.tolist()[:10]
    assert [d for (d,) in raw] == ours


def test_unknown_builder():
    with pytest.raises(ValueError, match="fts5 query builder: .regex. is not one of"):
        FTS5Retriever("regex")


def test_titan_builder_expected_values():
    from rrfbench.retrievers.fts5 import build_titan, titan_tokens

    assert titan_tokens("how do I do it?") == ["how", "do", "I", "do", "it"]
    assert titan_tokens("C++ vs C#") == ["C", "vs", "C"]
    assert titan_tokens("foo_bar baz") == ["foo_bar", "baz"]
    assert build_titan("foo_bar baz") == '"foo_bar" OR "baz"'
    assert build_titan("  ...  ") is None
    # nexusAI's builder gives none, vs, and foo, bar, baz on the same messages
    assert build_or_tokens("how do I do it?") is None
    assert build_or_tokens("C++ vs C#") == '"vs"'
    assert build_or_tokens("foo_bar baz") == '"foo" OR "bar" OR "baz"'


def test_span_index_ranks_documents_by_best_span(tmp_path):
    from rrfbench import load_dataset
    from rrfbench.retrievers.fts5 import spans_of

    d = tmp_path / "spans"
    (d / "qrels").mkdir(parents=True)
    (d / "corpus.jsonl").write_text(
        '{"_id": "long", "title": "", "text": "Nothing here. Zebra zebra zebra stripes. Filler text."}\n'
        '{"_id": "short", "title": "", "text": "A zebra. Stripes elsewhere in a long sentence about other things and more."}\n')
    (d / "queries.jsonl").write_text('{"_id": "q", "text": "zebra stripes"}\n')
    (d / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq\tlong\t1\n")
    ds = load_dataset(str(d))
    r = FTS5Retriever(granularity="span")
    run = r.retrieve(ds, ds.split_queries("test"), 10)
    assert run.df.docid.tolist()[0] == "long"  # its best span holds both terms
    assert run.df.docid.nunique() == len(run)  # one row per document (best span)
    loc = r.last_locators.set_index("docid").loc["long"]
    text = ds.corpus.set_index("docid").loc["long", "text"]
    assert text[loc.start:loc.end] == "Zebra zebra zebra stripes." and loc.field == "text"
    assert spans_of("a b c d e f g", "words", 3, 1) == [(0, 5), (4, 9), (8, 13)]
    assert r.name == "fts5-span" and r.params()["granularity"] == "span"


def test_chinese_tokenizers(tiny_zh):
    from rrfbench.retrievers import make_retriever

    ds = tiny_zh
    for spec in ("fts5:jieba", "fts5:trigram", "bm25:jieba"):
        run = make_retriever(spec).retrieve(ds, ds.split_queries("test"), 10)
        assert run.df.docid.tolist()[0] == "a", spec
    plain = make_retriever("fts5").retrieve(ds, ds.split_queries("test"), 10)
    assert len(plain) == 0  # unicode61 sees the whole sentence as one token: no match


def test_long_or_queries_are_scored_phrase_by_phrase_to_the_bit(tiny_beir, tmp_path):
    """A long OR of phrases (titan keeps every token, repeats included) is scored phrase by
    phrase, linear instead of quadratic (benchmarks/bench_fts5_long.py): the same ranked lists
    and the same scores, to the bit, as FTS5's bm25() over the whole OR query."""
    from rrfbench import load_dataset
    from rrfbench.retrievers.fts5 import ADDITIVE_FROM, additive_bm25, or_phrases

    assert or_phrases('"a" OR "b" OR "a"') == ['"a"', '"b"', '"a"']
    assert or_phrases('"a b"') == ['"a b"'] and or_phrases('"a" AND "b"') is None
    assert or_phrases('"a" OR b') is None and or_phrases('"a"b" OR "c"') is None
    ds = load_dataset(str(tiny_beir))
    r = FTS5Retriever("titan")
    con = r.connect(ds)
    messages = ["green apples apples red", "red red red cars and green pears",
                "nothing", "apples " * 40 + "cars " * 3, "zzz qqq", "Apples APPLES apples"]
    for msg in messages:
        m = build_titan(msg)
        assert r.search(con, m, 3, additive=True) == r.search(con, m, 3, additive=False), msg
    assert r.search(con, build_titan("zzz"), 5, additive=True) == []
    # the default switches at ADDITIVE_FROM phrases
    long = build_titan("red apples " * ADDITIVE_FROM)
    assert r.search(con, long, 4) == r.search(con, long, 4, additive=False)
    with pytest.raises(InputError, match="not an OR of quoted phrases"):
        r.search(con, '"a" AND "b"', 3, additive=True)
    assert additive_bm25(con, r.ONE_SQL, (r.title_weight, r.text_weight), ['"zzz"'], 3) == []
    con.close()
    o = FTS5Retriever("or_tokens")
    con = o.connect(ds)
    m = build_or_tokens("green apples, red cars, green pears and more apples")
    assert o.search(con, m, 4, additive=True) == o.search(con, m, 4, additive=False)
    con.close()


@needs_cranfield
def test_phrase_by_phrase_equals_fts5_on_real_queries(cranfield):
    """Every cranfield query (and the same queries repeated into 300-token messages) gives the
    same 100 documents and scores both ways under titan's builder."""
    from rrfbench.retrievers.fts5 import FTS5Retriever

    r = FTS5Retriever("titan")
    con = r.connect(cranfield)
    texts = list(cranfield.queries.text)
    for text in texts[:120] + [" ".join(texts[i:i + 17]) for i in range(0, 85, 17)]:
        m = build_titan(text)
        if m is not None:
            assert r.search(con, m, 100, additive=True) == r.search(con, m, 100,
                                                                       additive=False), text
    con.close()
