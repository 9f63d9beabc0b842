"""TREC run text: the rules for reading and writing its lines, in one place.

A TREC run line is ``qid Q0 docid rank score tag``: six fields split on whitespace, so no field
may hold any (:func:`trec_tag` makes a run's name into a tag; :func:`check_ids` refuses ids that
would break a line). Reading is strict: a wrong column count, a rank that is not a whole number,
a score that is not a finite number or a duplicate (qid, docid) raises :class:`InputError`
naming the file and line. :class:`rrfbench.core.runs.Run` reads and writes through these.
"""

from __future__ import annotations

import csv
import io
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import InputError


def parse_trec_fast(text: str) -> tuple | None:
    """(qids, docids, scores) of well-formed TREC text, by pandas' C reader; ``None`` if any
    line looks wrong (then :func:`parse_trec_lines` names it)."""
    if not text.strip():
        return [], [], []
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            raw = pd.read_csv(io.StringIO(text), sep=r"\s+", header=None, names=list(range(6)),
                              dtype={0: object, 1: object, 2: object, 3: object, 4: np.float64,
                                     5: object},
                              na_filter=False, quoting=csv.QUOTE_NONE, engine="c")
    except (pd.errors.ParserError, ValueError, TypeError, Warning):
        return None
    if not isinstance(raw.index, pd.RangeIndex) or (raw[5] == "").any():
        return None
    if not raw[3].str.isdigit().all():  # a rank that is not a whole number: name its line
        return None
    score = raw[4].to_numpy(dtype=np.float64)
    if not np.isfinite(score).all() or raw.duplicated([0, 2]).any():
        return None
    return raw[0].to_numpy(), raw[2].to_numpy(), score


def parse_trec_lines(text: str, path: Path) -> tuple:
    """(qids, docids, scores) read line by line, strictly: raises on the first bad line (see
    ``Run.from_trec``)."""
    qids: list[str] = []
    docids: list[str] = []
    scores: list[float] = []
    seen: dict[tuple[str, str], int] = {}
    for lineno, line in enumerate(text.split("\n"), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != 6:
            raise InputError(
                f"expected 6 columns (qid Q0 docid rank score tag), found {len(parts)}",
                path, lineno)
        qid, _, docid, rank_s, score_s, _ = parts
        if not rank_s.isdigit():
            raise InputError(f"rank {rank_s!r} is not a whole number", path, lineno)
        try:
            score = float(score_s)
        except ValueError:
            raise InputError(f"score {score_s!r} is not a number", path, lineno) from None
        if not np.isfinite(score):
            raise InputError(f"score {score_s!r} is not finite", path, lineno)
        key = (qid, docid)
        if key in seen:
            raise InputError(
                f"duplicate (qid, docid) ({qid}, {docid}); first seen on line {seen[key]}",
                path, lineno)
        seen[key] = lineno
        qids.append(qid)
        docids.append(docid)
        scores.append(score)
    return qids, docids, scores


_WHITESPACE = re.compile(r"\s+")
TREC_TAG_FALLBACK = "rrfbench"


def trec_tag(name: str) -> str:
    """The TREC run tag (the sixth field of every line) for a run named ``name``.

    The one place a name becomes a tag, used by every writer (:meth:`Run.to_trec`): TREC's
    lines are split on whitespace, so a tag may hold none. Each stretch of whitespace becomes
    ``_`` (``adaptive(select: bm25+fts5+dense)`` -> ``adaptive(select:_bm25+fts5+dense)``); an
    empty name gives ``rrfbench``. The full name, configuration and provenance stay in the
    run's manifest (:func:`manifest_path`), never in the tag.
    """
    return _WHITESPACE.sub("_", str(name).strip()) or TREC_TAG_FALLBACK


def check_ids(values, what: str) -> None:
    """A query or document id with whitespace (or none at all) cannot be written as TREC."""
    for v in dict.fromkeys(values):
        if not v or _WHITESPACE.search(v):
            raise InputError(f"cannot write a TREC run: {what} {v!r} is empty or holds "
                             "whitespace (TREC lines are split on whitespace)")
