"""A team's own collection in, without qrels: a corpus and queries from JSONL, CSV/TSV, parquet
or a SQLite table, written as a BEIR folder that every other rrfbench command reads.

Why: the teams rrfbench serves keep their text in their own stores (three of the four studied
systems in SQLite), under their own column names, and have no judgments yet. ``ingest`` maps
their columns onto BEIR's (``_id``, ``title``, ``text``), checks every row, and writes
``corpus.jsonl``, ``queries.jsonl``, an empty ``qrels/`` (judgments come later) and
``manifest.json``: where each part came from (path, table, sha256 of the source), the column
map, the counts and whether query ids are also document ids (``ignore_identical_ids``, BEIR's
rule for ArguAna and Quora: a query's own document is not an answer to it).

Every malformed row stops the ingest with one line naming the file, the line (CSV and JSONL:
the text line; parquet and SQLite: the row) and the problem: a missing or empty id, a duplicate
id (with the line it first appeared on), a row with neither title nor text, text that is not
JSON. Nothing is written until every row has passed; the files are written atomically.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import pyarrow.parquet as pq

from .._version import __version__
from ..core.errors import InputError
from ..core.runs import read_text
from ..core.store import write_json, write_text
from .datasets import jsonl_objects

FORMATS = ("jsonl", "csv", "tsv", "parquet", "sqlite")
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class Columns:
    """Which source columns hold the id, the text and (optionally) the title."""

    id: str = "_id"
    text: str = "text"
    title: str | None = "title"


def source_format(path: Path, table: str | None = None) -> str:
    """The format of ``path`` by its suffix (a SQLite file when ``table`` is given)."""
    if table is not None:
        return "sqlite"
    suffix = path.suffix.lower().lstrip(".")
    known = {"jsonl": "jsonl", "json": "jsonl", "ndjson": "jsonl", "csv": "csv", "tsv": "tsv",
             "parquet": "parquet", "sqlite": "sqlite", "db": "sqlite", "sqlite3": "sqlite"}
    if suffix not in known:
        raise InputError(f"cannot tell the format from the suffix {path.suffix!r}; give one of "
                         ".jsonl, .csv, .tsv, .parquet, or a SQLite file with --table", path)
    return known[suffix]


def _records(path: Path, fmt: str, table: str | None) -> Iterator[tuple[int, dict]]:
    """(line or row number, record) of every row of the source."""
    if fmt == "jsonl":
        yield from jsonl_objects(path)
    elif fmt in ("csv", "tsv"):
        reader = csv.DictReader(io.StringIO(read_text(path)),
                                delimiter="\t" if fmt == "tsv" else ",")
        for row in reader:
            if None in row:
                raise InputError(f"{len(row[None])} more field(s) than the header has", path,
                                 reader.line_num)
            yield reader.line_num, row
    elif fmt == "parquet":
        try:
            rows = pq.read_table(path).to_pylist()
        except Exception as exc:  # pyarrow raises its own types for a file that is not parquet
            raise InputError(f"not a readable parquet file ({exc})", path) from None
        yield from enumerate(rows, 1)
    else:
        yield from _sqlite_rows(path, table)


def _sqlite_rows(path: Path, table: str | None) -> Iterator[tuple[int, dict]]:
    if table is None:
        raise InputError("a SQLite source needs --table (the table or view holding the rows)",
                         path)
    if not path.is_file():
        raise InputError("no such file", path)
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        con.row_factory = sqlite3.Row
        names = {r[0] for r in con.execute(
            "SELECT name FROM sqlite_master WHERE type IN ('table', 'view')")}
        if table not in names:
            raise InputError(f"no table or view {table!r}; there are: "
                             f"{', '.join(sorted(names)) or '(none)'}", path)
        for i, row in enumerate(con.execute(f'SELECT * FROM "{table}"'), 1):
            yield i, dict(row)
    except sqlite3.DatabaseError as exc:
        raise InputError(f"not a readable SQLite database ({exc})", path) from None
    finally:
        con.close()


def read_rows(path: str | Path, columns: Columns = Columns(), table: str | None = None,
              what: str = "document") -> list[dict]:
    """The source's rows as BEIR records (``_id``, ``title``, ``text``), every row checked.

    A column named in ``columns`` that the source lacks is reported once, with the columns it
    has; a row problem names the file and the line (or row)."""
    path = Path(path)
    fmt = source_format(path, table)
    where = f"{path}" + (f" (table {table})" if table else "")
    unit = "line" if fmt in ("jsonl", "csv", "tsv") else "row"
    out: list[dict] = []
    seen: dict[str, int] = {}
    checked = False
    for n, rec in _records(path, fmt, table):
        if not checked:
            wanted = [c for c in (columns.id, columns.text) if c not in rec]
            if columns.title is not None and columns.title not in rec and columns.title != "title":
                wanted.append(columns.title)
            if wanted and fmt != "jsonl":
                raise InputError(f"no column {', '.join(map(repr, wanted))}; the {what}s have: "
                                 f"{', '.join(map(str, rec))} (map yours with --id-column, "
                                 "--text-column, --title-column)", where)
            checked = True
        raw_id = rec.get(columns.id)
        if raw_id is None or str(raw_id).strip() == "":
            raise InputError(f"{unit} {n}: {what} without an id (column {columns.id!r})", where)
        _id = str(raw_id).strip()
        if any(ch.isspace() for ch in _id):
            raise InputError(f"{unit} {n}: {what} id {_id!r} holds whitespace (run files are "
                             "split on it)", where)
        if _id in seen:
            raise InputError(f"{unit} {n}: duplicate {what} id {_id!r}; first on {unit} "
                             f"{seen[_id]}", where)
        seen[_id] = n
        text = rec.get(columns.text)
        title = rec.get(columns.title) if columns.title is not None else None
        text = "" if text is None else str(text)
        title = "" if title is None else str(title)
        if not text.strip() and not title.strip():
            raise InputError(f"{unit} {n}: {what} {_id!r} has neither text (column "
                             f"{columns.text!r}) nor a title", where)
        out.append({"_id": _id, "title": title, "text": text} if what == "document"
                   else {"_id": _id, "text": text or title})
    if not out:
        raise InputError(f"no {what}s", where)
    return out


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:16]


def ingest(out: str | Path, corpus: str | Path, queries: str | Path | None = None, *,
           corpus_columns: Columns = Columns(), query_columns: Columns = Columns(title=None),
           table: str | None = None, query_table: str | None = None,
           ignore_identical_ids: bool = False) -> Path:
    """Write ``out`` as a BEIR folder from ``corpus`` (and ``queries``); returns ``out``.

    ``table``/``query_table``: the SQLite table or view to read (then ``corpus``/``queries``
    name the database file; the queries may live in the same one). ``out`` must be empty, new,
    or a collection rrfbench wrote before (it is then replaced).
    """
    out = Path(out)
    manifest = out / MANIFEST
    if out.exists() and any(out.iterdir()) and not manifest.exists():
        raise InputError("exists and is not a collection rrfbench wrote (no manifest.json); "
                         "give a new or empty folder", out)
    docs = read_rows(corpus, corpus_columns, table, "document")
    qs = read_rows(queries, query_columns, query_table, "query") if queries is not None else []
    if ignore_identical_ids and qs:
        ids = {d["_id"] for d in docs}
        shared = sum(q["_id"] in ids for q in qs)
    else:
        shared = None
    write_text(out / "corpus.jsonl",
               "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs))
    write_text(out / "queries.jsonl",
               "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in qs))
    (out / "qrels").mkdir(parents=True, exist_ok=True)

    def source(path, tab, cols):
        p = Path(path)
        return {"path": p.name, "format": source_format(p, tab), "table": tab,
                "sha256": _sha256(p), "columns": asdict(cols)}

    write_json(manifest, {
        "rrfbench_collection": out.name, "rrfbench": __version__,
        "corpus": {**source(corpus, table, corpus_columns), "documents": len(docs)},
        "queries": ({**source(queries, query_table, query_columns), "queries": len(qs)}
                    if queries is not None else None),
        "judgments": 0, "ignore_identical_ids": bool(ignore_identical_ids),
        "queries_that_are_documents": shared})
    return out
