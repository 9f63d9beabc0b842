"""SQLite FTS5 keyword retrieval, the way SQLite-backed hybrid systems produce it.

An on-disk index per dataset (``results/index/<dataset>/fts5.sqlite``; columns ``title`` and
``text``, tokenizer ``porter unicode61`` by default), ranked by FTS5's ``bm25()`` with column
weights; a run's score is ``-bm25`` (FTS5 returns smaller-is-better).

How a message becomes a MATCH expression decides recall, so the builder is a named setting:

* ``or_tokens`` (default; nexusAI's ``buildFtsQuery``): lowercase, split on anything that is not
  a letter or number (unicode-aware), drop :data:`FTS_STOPWORDS` and 1-character tokens, quote
  each token, join with ``OR``. Nothing left -> no MATCH, no results (counted as
  ``empty_queries``).
* ``phrase``: the whole message as one quoted phrase (nexusAI's earlier behaviour).
* ``and_tokens``: the same tokens as ``or_tokens`` joined with ``AND``.

Injection safety: only double-quoted tokens made of letters and digits reach MATCH, so FTS5
syntax in user text (``"``, ``*``, ``^``, ``NEAR``, ``OR``, parentheses, ``col:``) is searched
for as text, never parsed as an operator.
"""

from __future__ import annotations

import re
import sqlite3
import time
from pathlib import Path

import pandas as pd

from ..errors import MissingDependencyError, choice
from ..runs import Run
from ..store import results_dir, write_sqlite

# A small, conservative set of English function words (nexusAI keeps words like time/good/way).
FTS_STOPWORDS = frozenset("""
a about above after again all also am an and any are as at be been before being below between
both but by can could did do does doing down during each few for from further had has have
having he her here hers him his how i if in into is it its itself just me more most my no nor
not now of off on once one only or other our ours out over own same she should so some such
than that the their theirs them then there these they this those through to too under until
up very was we were what when where which while who whom why will with would you your yours
""".split())

_TOKEN = re.compile(r"[^\W_]+")  # runs of unicode letters/digits (\p{L}\p{N})
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def tokens(message: str, stopwords=FTS_STOPWORDS) -> list[str]:
    """Lowercased letter/digit runs minus stopwords and 1-character tokens, in order."""
    return [t for t in _TOKEN.findall(message.lower()) if len(t) > 1 and t not in stopwords]


def build_or_tokens(message: str) -> str | None:
    """``"configure" OR "qdrant" OR "collection"``; ``None`` when no token survives."""
    toks = tokens(message)
    return " OR ".join(f'"{t}"' for t in toks) if toks else None


def build_and_tokens(message: str) -> str | None:
    toks = tokens(message)
    return " AND ".join(f'"{t}"' for t in toks) if toks else None


def build_phrase(message: str) -> str | None:
    """The whole message as one FTS5 phrase (quotes doubled); ``None`` if it has no letters."""
    if not _TOKEN.search(message):
        return None
    clean = _CONTROL.sub(" ", message)  # a NUL would end the MATCH string early
    return '"' + clean.replace('"', '""') + '"'


QUERY_BUILDERS = {"or_tokens": build_or_tokens, "and_tokens": build_and_tokens,
                  "phrase": build_phrase}


def check_fts5() -> None:
    """Raise :class:`MissingDependencyError` if this Python's sqlite3 lacks FTS5."""
    con = sqlite3.connect(":memory:")
    try:
        con.execute("CREATE VIRTUAL TABLE t USING fts5(x)")
    except sqlite3.OperationalError:
        raise MissingDependencyError(
            f"this Python's SQLite ({sqlite3.sqlite_version}) was built without FTS5; install a "
            "Python whose sqlite3 has it (python.org, conda-forge, Debian all do)") from None
    finally:
        con.close()


class FTS5Retriever:
    """FTS5 ``bm25()`` retrieval over title and text; see the module docstring."""

    score_floor = 0.0  # -bm25(): FTS5's idf is floored at a small positive value

    def __init__(self, query_builder: str = "or_tokens", tokenizer: str = "porter unicode61",
                 title_weight: float = 1.0, text_weight: float = 1.0):
        if query_builder not in QUERY_BUILDERS:
            raise choice("fts5 query builder", query_builder, sorted(QUERY_BUILDERS))
        self.query_builder = query_builder
        self.tokenizer = tokenizer
        self.title_weight = float(title_weight)
        self.text_weight = float(text_weight)
        self.name = "fts5" if query_builder == "or_tokens" else f"fts5-{query_builder}"
        self.last_stats: dict = {}

    def params(self) -> dict:
        return {"query_builder": self.query_builder, "tokenizer": self.tokenizer,
                "title_weight": self.title_weight, "text_weight": self.text_weight}

    def versions(self) -> dict:
        return {"sqlite": sqlite3.sqlite_version}

    # -- index ------------------------------------------------------------------------------
    def index_path(self, dataset) -> Path:
        slug = re.sub(r"[^a-z0-9]+", "_", self.tokenizer.lower()).strip("_")
        name = "fts5.sqlite" if self.tokenizer == "porter unicode61" else f"fts5-{slug}.sqlite"
        return results_dir() / "index" / dataset.name / name

    def connect(self, dataset) -> sqlite3.Connection:
        """Open (building if needed) the dataset's index; rebuilt when the content changed."""
        check_fts5()
        path = self.index_path(dataset)
        key = f"{dataset.fingerprint}|{self.tokenizer}"
        if path.exists():
            con = sqlite3.connect(path)
            try:
                (have,) = con.execute("SELECT value FROM meta WHERE key='build'").fetchone()
                if have == key:
                    return con
            except sqlite3.DatabaseError:
                pass
            con.close()
        tok = self.tokenizer.replace("'", "''")
        c = dataset.corpus

        def build(con):
            con.execute(f"CREATE VIRTUAL TABLE docs USING fts5(docid UNINDEXED, title, text, "
                        f"tokenize='{tok}')")
            con.executemany("INSERT INTO docs(docid, title, text) VALUES (?, ?, ?)",
                            zip(c.docid, c.title, c.text, strict=True))
            con.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)")
            con.execute("INSERT INTO meta VALUES ('build', ?)", (key,))

        write_sqlite(path, build)
        return sqlite3.connect(path)

    SQL = ("SELECT docid, bm25(docs, 0.0, ?, ?) AS s FROM docs WHERE docs MATCH ? "
           "ORDER BY s, docid LIMIT ?")

    def search(self, con: sqlite3.Connection, match: str | None, depth: int):
        """(docid, score) pairs for one MATCH expression; ``[]`` for ``None``."""
        if match is None:
            return []
        rows = con.execute(self.SQL, (self.title_weight, self.text_weight, match, depth))
        return [(d, -s) for d, s in rows]

    def retrieve(self, dataset, queries: pd.DataFrame, depth: int) -> Run:
        build = QUERY_BUILDERS[self.query_builder]
        con = self.connect(dataset)
        t0 = time.perf_counter()
        qids, docids, scores = [], [], []
        empty = []
        try:
            for qid, text in zip(queries.qid, queries.text, strict=True):
                match = build(text)
                if match is None:
                    empty.append(qid)
                    continue
                for d, s in self.search(con, match, depth):
                    qids.append(qid)
                    docids.append(d)
                    scores.append(s)
        finally:
            con.close()
        self.last_stats = {"empty_queries": len(empty), "empty_query_ids": empty[:50],
                           "query_time_s": round(time.perf_counter() - t0, 3)}
        return Run(pd.DataFrame({"qid": qids, "docid": docids, "score": scores}), self.name)
