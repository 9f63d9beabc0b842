"""Entity match: ai-memory's entity stream over terms extracted at index time.

**Extraction** (index time; :func:`extract_entities`, configurable by ``min_len``):

* identifier-like tokens: runs of letters, digits, ``-`` and ``_`` that mix letters and digits
  (``CD33``, ``IL-10``, ``S100A9``) or hold two or more capitals (``DNA``, ``TNF-alpha`` holds
  ``TNF``: the whole run is taken), at least ``min_len`` characters;
* capitalised multi-word names: two or more consecutive words that start with a capital letter
  (``Alzheimer Disease``; a sentence-initial capitalised word joins the name it precedes).

Entities are stored lowercased; each knows the documents that carry it.

**Query** (ai-memory's ``entity_query_tokens``, re-implemented from
akitaonrails/ai-memory ``crates/ai-memory-store/src/reader.rs``): split on anything but letters,
digits, ``-`` and ``_``; trim ``-``/``_``; keep tokens of 3+ characters, lowercased,
de-duplicated, at most 12; a hyphenated or underscored token also yields its parts. A token
matches every entity it is a **prefix** of. A document scores the sum, over the distinct
matched entities it carries, of ``1 / (documents carrying the entity)``; ties by docid.
"""

from __future__ import annotations

import bisect
import re
from collections import defaultdict

import numpy as np
import pandas as pd

from ..core.runs import Run

_RUN = re.compile(r"[^\W_](?:[\w-]*[^\W_])?")
_NAME = re.compile(r"\b[A-Z][\w-]*(?:[ \t]+[A-Z][\w-]*)+")
MAX_TOKENS = 12
MIN_QUERY_CHARS = 3


def extract_entities(text: str, min_len: int = 2) -> set[str]:
    """Identifier-like tokens and capitalised multi-word names of ``text`` (lowercased)."""
    out = set()
    for m in _RUN.finditer(text):
        tok = m.group(0)
        has_digit = any(c.isdigit() for c in tok)
        has_alpha = any(c.isalpha() for c in tok)
        caps = sum(c.isupper() for c in tok)
        if len(tok) >= min_len and ((has_digit and has_alpha) or caps >= 2):
            out.add(tok.lower())
    # capitalised multi-word names: 2+ capitalised words in a row
    for m in _NAME.finditer(text):
        out.add(" ".join(m.group(0).split()).lower())
    return out


def query_tokens(query: str) -> list[str]:
    """ai-memory's entity query tokens (see the module docstring)."""
    seen, out = set(), []

    def push(raw: str) -> bool:
        if len(raw) >= MIN_QUERY_CHARS:
            tok = raw.lower()
            if tok not in seen:
                seen.add(tok)
                out.append(tok)
        return len(out) < MAX_TOKENS

    for raw in re.split(r"[^\w-]", query):
        tok = raw.strip("-_")
        if not tok:
            continue
        if not push(tok):
            break
        if "-" in tok or "_" in tok:
            for part in re.split(r"[-_]", tok):
                if part and not push(part):
                    return out
    return out


class EntityRetriever:
    """Documents ranked by inverse-frequency-weighted matched entities (module docstring)."""

    name = "entity"
    score_floor = 0.0

    def __init__(self, min_len: int = 2):
        self.min_len = int(min_len)
        self._index = None

    def params(self) -> dict:
        return {"min_len": self.min_len, "extraction": "identifier-like tokens (letters and "
                "digits mixed, or 2+ capitals) and capitalised multi-word names",
                "query": "ai-memory entity_query_tokens, prefix match",
                "score": "sum of 1/(documents carrying the entity)", "text": "title + ' ' + text"}

    def versions(self) -> dict:
        return {}

    def index(self, dataset):
        """(sorted entity names, entity -> docids) for the dataset, built once per content."""
        if self._index is None or self._index[0] != dataset.fingerprint:
            carriers: dict[str, set[str]] = defaultdict(set)
            for d, text in zip(dataset.corpus.docid, dataset.doc_texts(), strict=True):
                for e in extract_entities(text, self.min_len):
                    carriers[e].add(d)
            names = sorted(carriers)
            self._index = (dataset.fingerprint, names, {e: sorted(v) for e, v in carriers.items()})
        return self._index[1], self._index[2]

    def match(self, names: list[str], token: str) -> list[str]:
        """Entities that ``token`` is a prefix of (``entity LIKE token || '%'``)."""
        i = bisect.bisect_left(names, token)
        out = []
        while i < len(names) and names[i].startswith(token):
            out.append(names[i])
            i += 1
        return out

    def retrieve(self, dataset, queries: pd.DataFrame, depth: int) -> Run:
        names, carriers = self.index(dataset)
        rows = []
        for qid, text in zip(queries.qid, queries.text, strict=True):
            matched = {e for t in query_tokens(text) for e in self.match(names, t)}
            scores: dict[str, float] = defaultdict(float)
            for e in matched:
                w = 1.0 / len(carriers[e])
                for d in carriers[e]:
                    scores[d] += w
            top = sorted(scores.items(), key=lambda x: (-x[1], x[0]))[:depth]
            rows += [(qid, d, s) for d, s in top]
        df = pd.DataFrame(rows, columns=["qid", "docid", "score"])
        df["score"] = df.score.astype(np.float64)
        return Run(df, self.name)
