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

Called from: ``retrievers``.
"""

from __future__ import annotations

import re
import sqlite3
import time
import unicodedata
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import InputError, MissingDependencyError, choice
from ..core.runs import Run
from ..core.store import results_dir, write_sqlite
from .base import lib_versions
from .bm25 import jieba_segment

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


def titan_tokens(message: str) -> list[str]:
    """titan's ``defaultMatchExpression`` tokens: every run of letters, digits and underscore
    (``[\\p{L}\\p{N}_]+``), case kept, no stopwords, no length filter."""
    out, cur = [], []
    for ch in message:
        if ch == "_" or unicodedata.category(ch)[0] in "LN":
            cur.append(ch)
        elif cur:
            out.append("".join(cur))
            cur = []
    if cur:
        out.append("".join(cur))
    return out


def build_titan(message: str) -> str | None:
    """``"how" OR "do" OR "I" OR "do" OR "it"``: titan's FTS query (quoted tokens OR-joined)."""
    toks = titan_tokens(message)
    return " OR ".join(f'"{t}"' for t in toks) if toks else None


def build_jieba(message: str) -> str | None:
    """jieba word segmentation of the message, each word with a letter or digit quoted, OR-joined
    (the index holds the same segmentation)."""
    toks = [t for t in jieba_segment([message])[0].split() if t.strip()]
    toks = [t for t in toks if _TOKEN.fullmatch(t)] or [m for t in toks for m in _TOKEN.findall(t)]
    return " OR ".join(f'"{t}"' for t in dict.fromkeys(toks)) if toks else None


def build_trigram(message: str) -> str | None:
    """Every 3-character window of every letter/digit run, quoted and OR-joined: what FTS5's
    ``trigram`` tokenizer can match (runs shorter than 3 characters cannot match)."""
    grams = []
    for run in _TOKEN.findall(message.lower()):
        grams += [run[i:i + 3] for i in range(len(run) - 2)]
    grams = list(dict.fromkeys(grams))
    return " OR ".join(f'"{g}"' for g in grams) if grams else None


ADDITIVE_FROM = 256  # OR-ed phrases from which FTS5 is asked phrase by phrase (see search)


def or_phrases(match: str) -> list[str] | None:
    """The phrases of a MATCH expression that is only quoted phrases joined by ``OR`` (what
    the OR builders write), in order, repeats kept; ``None`` for anything else."""
    parts = match.split(" OR ")
    if all(len(p) >= 2 and p[0] == p[-1] == '"' and '"' not in p[1:-1] for p in parts):
        return parts
    return None


def additive_bm25(con: sqlite3.Connection, sql: str, weights: tuple, phrases: list[str],
                  depth: int) -> list[tuple[str, float]]:
    """What ``bm25()`` gives the OR of ``phrases``, computed phrase by phrase, to the bit.

    FTS5's ``bm25()`` sums, over the query's phrases in order, ``idf(p) * f(p, row)`` (its
    idf from the phrase's own document count, f from the row's frequency of it and length),
    starting from 0.0, and returns the negated sum. Each phrase alone gives exactly its term,
    so the same additions in the same order (a phrase a row lacks adds 0.0) give the same
    double; a repeated phrase is asked once and added as often as it occurs. The matched rows
    are the union of the phrases' rows; ranked as the SQL ranks them (score, then docid), the
    ``depth`` best. Linear in the phrases' postings instead of quadratic in the phrases."""
    uniq = list(dict.fromkeys(phrases))
    ids, vals, cuts = [], [], [0]
    for p in uniq:
        rows = con.execute(sql, (*weights, p)).fetchall()
        ids += [d for d, _ in rows]
        vals += [v for _, v in rows]
        cuts.append(len(ids))
    if not ids:
        return []
    codes, docids = pd.factorize(np.array(ids, dtype=object))
    vals = np.asarray(vals, dtype=np.float64)
    where = {p: slice(cuts[k], cuts[k + 1]) for k, p in enumerate(uniq)}
    acc = np.zeros(len(docids))
    for p in phrases:                      # in query order, repeats included
        acc[codes[where[p]]] += vals[where[p]]
    by_id = np.argsort(np.asarray(docids, dtype=str), kind="stable")
    order = by_id[np.argsort(acc[by_id], kind="stable")][:depth]
    return [(docids[i], -float(acc[i])) for i in order]


QUERY_BUILDERS = {"or_tokens": build_or_tokens, "and_tokens": build_and_tokens,
                  "phrase": build_phrase, "titan": build_titan, "jieba": build_jieba,
                  "trigram": build_trigram}
# variant -> (query builder, FTS5 tokenizer, document preprocessing)
VARIANT_SETUP = {"or_tokens": ("or_tokens", "porter unicode61", None),
                 "and_tokens": ("and_tokens", "porter unicode61", None),
                 "phrase": ("phrase", "porter unicode61", None),
                 "titan": ("titan", "porter unicode61", None),
                 "jieba": ("jieba", "unicode61", "jieba"),
                 "trigram": ("trigram", "trigram", None)}
_SENTENCE = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])\s+|(?<=[\u3002\uff01\uff1f])")


def spans_of(text: str, span: str = "sentence", words: int = 50, overlap: int = 10
             ) -> list[tuple[int, int]]:
    """(start, end) character offsets of a text's spans: sentences, or windows of ``words``
    words that overlap by ``overlap`` words."""
    if not text.strip():
        return []
    if span == "sentence":
        out, start = [], 0
        for m in _SENTENCE.finditer(text):
            if text[start:m.start()].strip():
                out.append((start, m.start()))
            start = m.end()
        if text[start:].strip():
            out.append((start, len(text)))
        return out
    pos = [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]
    step = max(1, words - overlap)
    out = []
    for i in range(0, len(pos), step):
        chunk = pos[i:i + words]
        out.append((chunk[0][0], chunk[-1][1]))
        if i + words >= len(pos):
            break
    return out


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
    """FTS5 ``bm25()`` retrieval over title and text; see the module docstring.

    ``granularity="span"`` indexes spans instead of documents (sentences, or ``words``-word
    windows overlapping by ``overlap`` words; the title is a span of its own), asks for
    ``4 x depth`` spans, and ranks each document by its best span (titan's span FTS); the
    winning span's locator (field, character offsets) travels with the result in
    ``last_locators`` and in ``<run>.locators.parquet`` beside the cached run.
    """

    score_floor = 0.0  # -bm25(): FTS5's idf is floored at a small positive value

    def __init__(self, variant: str = "or_tokens", tokenizer: str | None = None,
                 title_weight: float = 1.0, text_weight: float = 1.0, granularity: str = "doc",
                 span: str = "sentence", words: int | str = 50, overlap: int | str = 10,
                 query_builder: str | None = None):
        variant = query_builder or variant
        if variant not in VARIANT_SETUP:
            raise choice("fts5 query builder", variant, sorted(VARIANT_SETUP))
        if granularity not in ("doc", "span"):
            raise choice("fts5 granularity", granularity, ("doc", "span"))
        if span not in ("sentence", "words"):
            raise choice("fts5 span", span, ("sentence", "words"))
        try:
            self.words, self.overlap = int(words), int(overlap)
        except (TypeError, ValueError):
            raise InputError(f"fts5: words={words!r} and overlap={overlap!r} must be whole "
                             "numbers") from None
        if self.words < 1 or not (0 <= self.overlap < self.words):
            raise InputError(f"fts5: need words >= 1 and 0 <= overlap < words, got "
                             f"{self.words}, {self.overlap}")
        builder, default_tok, prep = VARIANT_SETUP[variant]
        self.variant, self.query_builder = variant, builder
        self.tokenizer = tokenizer or default_tok
        self.preprocess = prep
        self.title_weight = float(title_weight)
        self.text_weight = float(text_weight)
        self.granularity, self.span = granularity, span
        base = "fts5" if variant == "or_tokens" else f"fts5-{variant}"
        self.name = base if granularity == "doc" else f"{base}-span"
        self.last_stats: dict = {}
        self.last_locators = None

    def params(self) -> dict:
        out = {"query_builder": self.query_builder, "tokenizer": self.tokenizer,
               "title_weight": self.title_weight, "text_weight": self.text_weight}
        if self.preprocess:
            out["preprocess"] = self.preprocess
        if self.granularity != "doc":
            out.update(granularity=self.granularity, span=self.span, words=self.words,
                       overlap=self.overlap, candidates="4 x depth spans, best span per doc")
        return out

    def versions(self) -> dict:
        out = {"sqlite": sqlite3.sqlite_version}
        if self.preprocess == "jieba":
            out.update(lib_versions("jieba"))
        return out

    # -- index ------------------------------------------------------------------------------
    def index_path(self, dataset) -> Path:
        slug = re.sub(r"[^a-z0-9]+", "_", self.tokenizer.lower()).strip("_")
        name = "fts5" if self.tokenizer == "porter unicode61" else f"fts5-{slug}"
        if self.preprocess:
            name += f"-{self.preprocess}"
        if self.granularity == "span":
            name += f"-span-{self.span}" + (f"{self.words}-{self.overlap}" if self.span == "words"
                                            else "")
        return results_dir() / "index" / dataset.name / f"{name}.sqlite"

    def _prep(self, texts: list[str]) -> list[str]:
        if self.preprocess == "jieba":
            return jieba_segment(texts)
        return list(texts)

    def connect(self, dataset) -> sqlite3.Connection:
        """Open (building if needed) the dataset's index; rebuilt when the content changed."""
        check_fts5()
        path = self.index_path(dataset)
        key = (f"{dataset.fingerprint}|{self.tokenizer}|{self.preprocess}|{self.granularity}|"
               f"{self.span}|{self.words}|{self.overlap}")
        if self.granularity == "doc" and not self.preprocess:
            key = f"{dataset.fingerprint}|{self.tokenizer}"  # the key caches already carry
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
            if self.granularity == "doc":
                con.execute(f"CREATE VIRTUAL TABLE docs USING fts5(docid UNINDEXED, title, text, "
                            f"tokenize='{tok}')")
                con.executemany("INSERT INTO docs(docid, title, text) VALUES (?, ?, ?)",
                                zip(c.docid, self._prep(list(c.title)), self._prep(list(c.text)),
                                    strict=True))
            else:
                con.execute(f"CREATE VIRTUAL TABLE spans USING fts5(docid UNINDEXED, "
                            f"span_id UNINDEXED, field UNINDEXED, start UNINDEXED, "
                            f"end UNINDEXED, text, tokenize='{tok}')")
                rows = []
                for d, title, text in zip(c.docid, c.title, c.text, strict=True):
                    n = 0
                    if title.strip():
                        rows.append((d, n, "title", 0, len(title), title))
                        n += 1
                    for a, b in spans_of(text, self.span, self.words, self.overlap):
                        rows.append((d, n, "text", a, b, text[a:b]))
                        n += 1
                prepped = self._prep([r[5] for r in rows])
                con.executemany("INSERT INTO spans VALUES (?, ?, ?, ?, ?, ?)",
                                [r[:5] + (t,) for r, t in zip(rows, prepped, strict=True)])
            con.execute("CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT)")
            con.execute("INSERT INTO meta VALUES ('build', ?)", (key,))

        write_sqlite(path, build)
        return sqlite3.connect(path)

    SQL = ("SELECT docid, bm25(docs, 0.0, ?, ?) AS s FROM docs WHERE docs MATCH ? "
           "ORDER BY s, docid LIMIT ?")
    SPAN_SQL = ("SELECT docid, span_id, field, start, end, bm25(spans) AS s FROM spans "
                "WHERE spans MATCH ? ORDER BY s, docid, span_id LIMIT ?")

    ONE_SQL = "SELECT docid, bm25(docs, 0.0, ?, ?) FROM docs WHERE docs MATCH ?"

    def search(self, con: sqlite3.Connection, match: str | None, depth: int,
               additive: bool | None = None):
        """(docid, score) pairs for one MATCH expression; ``[]`` for ``None``.

        A long OR of phrases (a long message under titan's builder, which keeps every token,
        repeats included) is scored phrase by phrase (:func:`additive_bm25`): FTS5's ``bm25()``
        over n OR-ed phrases costs about n^2 per query (a 500-token message: ~3 s on scifact's
        5,183 documents, 1,000 tokens ~11 s, ``benchmarks/bench_fts5_long.py``), while its
        score is a sum of one term per phrase that the same function computes for each phrase
        alone. The results are the same to the bit (tested); ``additive`` forces either path
        (default: from :data:`ADDITIVE_FROM` phrases on)."""
        if match is None:
            return []
        phrases = or_phrases(match)
        if additive is None:
            additive = phrases is not None and len(phrases) >= ADDITIVE_FROM
        if additive:
            if phrases is None:
                raise InputError(f"not an OR of quoted phrases: {match[:60]!r}")
            return additive_bm25(con, self.ONE_SQL, (self.title_weight, self.text_weight),
                                 phrases, depth)
        rows = con.execute(self.SQL, (self.title_weight, self.text_weight, match, depth))
        return [(d, -s) for d, s in rows]

    def search_spans(self, con: sqlite3.Connection, match: str | None, depth: int):
        """(docid, score, locator) of the ``depth`` best documents by their best span, from the
        ``4 x depth`` best spans."""
        if match is None:
            return []
        out, seen = [], set()
        for d, sid, field, a, b, s in con.execute(self.SPAN_SQL, (match, 4 * depth)):
            if d in seen:
                continue
            seen.add(d)
            out.append((d, -s, (sid, field, a, b)))
            if len(out) >= depth:
                break
        return out

    def retrieve(self, dataset, queries: pd.DataFrame, depth: int) -> Run:
        build = QUERY_BUILDERS[self.query_builder]
        con = self.connect(dataset)
        t0 = time.perf_counter()
        qids, docids, scores, locs = [], [], [], []
        empty = []
        try:
            for qid, text in zip(queries.qid, queries.text, strict=True):
                match = build(text)
                if match is None:
                    empty.append(qid)
                    continue
                if self.granularity == "doc":
                    for d, s in self.search(con, match, depth):
                        qids.append(qid)
                        docids.append(d)
                        scores.append(s)
                else:
                    for d, s, loc in self.search_spans(con, match, depth):
                        qids.append(qid)
                        docids.append(d)
                        scores.append(s)
                        locs.append((qid, d, *loc))
        finally:
            con.close()
        self.last_stats = {"empty_queries": len(empty), "empty_query_ids": empty[:50],
                           "query_time_s": round(time.perf_counter() - t0, 3)}
        self.last_locators = (pd.DataFrame(locs, columns=["qid", "docid", "span_id", "field",
                                                          "start", "end"])
                              if self.granularity == "span" else None)
        return Run(pd.DataFrame({"qid": qids, "docid": docids, "score": scores}), self.name)
