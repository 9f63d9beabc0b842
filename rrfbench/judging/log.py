"""Judgments are data: appended one line at a time, never lost, never silently wrong.

A :class:`JudgmentLog` is a JSON-lines file, one judgment a line (query, document, grade,
grader, time, why the pair was selected), each line written with one ``write`` of the whole
line, flushed and fsynced before :meth:`JudgmentLog.add` returns: a crash or Ctrl-C loses at
most the judgment being written, and a torn last line (the process died inside the write) is
set aside when the file is read again, with a warning naming the file and line, never taken
for a grade. An unknown query or document, or a grade outside the declared scale, is refused
with one line before anything is written. A second grade for a pair that already has a
different one is recorded too, and shown (:meth:`JudgmentLog.conflicts`), not overwritten: the
pair keeps its first grade until a person resolves it (:meth:`JudgmentLog.resolve` appends the
resolving grade, marked as such). The result is ordinary BEIR qrels (:meth:`JudgmentLog.to_qrels`,
:meth:`JudgmentLog.write_qrels`), usable by every other rrfbench command.

Several graders at once. Every read and append holds an advisory lock on ``<log>.lock``
(``fcntl.flock``: shared to read, exclusive to write), so two sessions on one log never tear or
interleave a line, and each re-reads the file before choosing what to ask. A session *claims*
the pairs it is about to show (:meth:`JudgmentLog.claim`: a ``claim`` line with the grader and
the time, appended under the same lock as the check that nobody else holds them); a claim lapses
after :data:`CLAIM_TTL` seconds or once the pair is graded. A pair is put to a second grader
only when an overlap for agreement was asked for (``--overlap``), and :meth:`JudgmentLog.agreement`
reports Cohen's kappa between every two graders on the pairs both graded (as trectools'
``check_kappa`` does for two qrels files).

Called from: the judging workflow (terminal, sheet, widget, simulation) and tests.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import pandas as pd

from ..core.errors import InputError, ValidationWarning
from ..core.runs import Qrels
from ..core.store import write_text

CLAIM_TTL = 3600.0     # seconds a claimed pair stays with its grader unless graded


@dataclass(frozen=True)
class Claim:
    """A pair shown to a grader (not yet graded): nobody else is asked it while it lasts."""

    query: str
    document: str
    grader: str
    time: float


@dataclass(frozen=True)
class Judgment:
    """One grade, with who gave it, when, and why the pair was put to them."""

    query: str
    document: str
    grade: int
    grader: str
    time: float
    why: str = ""
    resolves: bool = False   # a person's answer to a conflict: it replaces the pair's grade


class JudgmentLog:
    """An append-only log of judgments for one collection (see the module docstring).

    ``queries`` and ``documents``: the ids a judgment may name (``None``: any); ``scale``: the
    grades allowed, ``(0, 1)`` for binary relevance, ``(0, 1, 2)`` for a graded collection."""

    def __init__(self, path: str | Path, queries: Iterable[str] | None = None,
                 documents: Iterable[str] | None = None, scale: Iterable[int] = (0, 1)):
        self.path = Path(path)
        self.queries = None if queries is None else {str(q) for q in queries}
        self.documents = None if documents is None else {str(d) for d in documents}
        self.scale = tuple(sorted({int(g) for g in scale}))
        self.entries: list[Judgment] = []
        self.claims: list[Claim] = []
        self.torn: list[int] = []      # line numbers set aside (a write cut short)
        self.refresh()

    # ------------------------------------------------------------------ the lock
    @contextlib.contextmanager
    def locked(self, exclusive: bool = True):
        """Hold ``<log>.lock`` (exclusive to write, shared to read): see the module docstring."""
        lock = self.path.with_name(self.path.name + ".lock")
        lock.parent.mkdir(parents=True, exist_ok=True)
        with open(lock, "a+b") as f:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
            try:
                yield
            finally:
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)

    def refresh(self) -> None:
        """Read the file again (other graders may have appended since)."""
        if not self.path.exists():
            return
        with self.locked(exclusive=False):
            self._read()

    # ------------------------------------------------------------------ reading
    def _read(self) -> None:
        self.entries, self.claims, self.torn = [], [], []
        raw = self.path.read_bytes()
        lines = raw.split(b"\n")
        for no, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                d = json.loads(line)
                if d.get("claim"):
                    self.claims.append(Claim(str(d["query"]), str(d["document"]),
                                             str(d.get("grader", "")), float(d.get("time", 0.0))))
                    continue
                j = Judgment(str(d["query"]), str(d["document"]), int(d["grade"]),
                             str(d.get("grader", "")), float(d.get("time", 0.0)),
                             str(d.get("why", "")), bool(d.get("resolves", False)))
            except (ValueError, KeyError, TypeError) as exc:
                if no == len(lines) or (no == len(lines) - 1 and not lines[-1]):
                    self.torn.append(no)   # the last line, cut short by a crash: not a grade
                    warnings.warn(f"{self.path}:{no}: an incomplete last line (a write cut "
                                  "short) is set aside; the judgments before it are kept",
                                  ValidationWarning, stacklevel=3)
                    continue
                raise InputError(f"{self.path}:{no}: not a judgment ({exc})") from None
            self._check(j, where=f"{self.path}:{no}")
            self.entries.append(j)

    def _check(self, j: Judgment, where: str) -> None:
        if self.queries is not None and j.query not in self.queries:
            raise InputError(f"{where}: unknown query {j.query!r}")
        if self.documents is not None and j.document not in self.documents:
            raise InputError(f"{where}: unknown document {j.document!r}")
        if j.grade not in self.scale:
            raise InputError(f"{where}: grade {j.grade} is not on the scale "
                             f"{', '.join(map(str, self.scale))}")

    # ------------------------------------------------------------------ writing
    def add(self, query: str, document: str, grade: int, grader: str, why: str = "",
            resolves: bool = False) -> Judgment:
        """Check, then append one judgment durably (one write of the whole line, fsynced)."""
        j = Judgment(str(query), str(document), int(grade), grader, time.time(), why, resolves)
        self._check(j, where=str(self.path))
        self._append([(json.dumps(asdict(j), ensure_ascii=False) + "\n").encode()])
        self.entries.append(j)
        return j

    def _append(self, lines: Sequence[bytes]) -> None:
        """Append whole lines under the exclusive lock, fsynced (one ``write`` per line)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.locked():
            if self.path.exists() and self.path.stat().st_size:
                with open(self.path, "rb") as f:        # only the last byte: is it whole?
                    f.seek(-1, os.SEEK_END)
                    torn = f.read(1) != b"\n"
                if torn:                                 # a torn last line: set it aside first
                    self._read()
                    self._rewrite()
            with open(self.path, "ab") as f:
                for line in lines:
                    f.write(line)
                f.flush()
                os.fsync(f.fileno())

    def _rewrite(self) -> None:
        text = "".join(json.dumps(asdict(j), ensure_ascii=False) + "\n" for j in self.entries)
        text += "".join(json.dumps({"claim": True, **asdict(c)}, ensure_ascii=False) + "\n"
                        for c in self.claims)
        write_text(self.path, text)
        self.torn = []

    def claim(self, pairs: Iterable[tuple[str, str]], grader: str) -> list[Claim]:
        """Claim ``pairs`` for ``grader`` (see the module docstring); the caller holds
        :meth:`locked` around its check and this call when graders work at once."""
        now = time.time()
        cs = [Claim(str(q), str(d), grader, now) for q, d in pairs]
        if not cs:
            return cs
        lines = [(json.dumps({"claim": True, **asdict(c)}, ensure_ascii=False) + "\n").encode()
                 for c in cs]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.path, "ab") as f:   # under the caller's lock (flock is per open file)
            for line in lines:
                f.write(line)
            f.flush()
            os.fsync(f.fileno())
        self.claims += cs
        return cs

    def claimed_by_others(self, grader: str, now: float | None = None) -> set[tuple[str, str]]:
        """Pairs another grader claimed less than :data:`CLAIM_TTL` ago and has not graded."""
        now = time.time() if now is None else now
        graded = {(j.query, j.document, j.grader) for j in self.entries}
        return {(c.query, c.document) for c in self.claims
                if c.grader != grader and now - c.time < CLAIM_TTL
                and (c.query, c.document, c.grader) not in graded}

    def claimed_by(self, grader: str, now: float | None = None) -> set[tuple[str, str]]:
        """Pairs ``grader`` claimed less than :data:`CLAIM_TTL` ago."""
        now = time.time() if now is None else now
        return {(c.query, c.document) for c in self.claims
                if c.grader == grader and now - c.time < CLAIM_TTL}

    def graders(self) -> dict[tuple[str, str], set[str]]:
        """(query, document) -> the graders who graded it."""
        out: dict[tuple[str, str], set[str]] = {}
        for j in self.entries:
            out.setdefault((j.query, j.document), set()).add(j.grader)
        return out

    def agreement(self) -> pd.DataFrame:
        """Cohen's kappa between every two graders on the pairs both graded (each grader's
        first grade of a pair; scikit-learn's ``cohen_kappa_score``): graders, pairs, observed
        agreement, kappa (NaN where one grader gave a single grade to every shared pair)."""
        from sklearn.metrics import cohen_kappa_score

        first: dict[str, dict[tuple[str, str], int]] = {}
        for j in self.entries:
            if not j.resolves:
                first.setdefault(j.grader, {}).setdefault((j.query, j.document), j.grade)
        names, rows = sorted(first), []
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                shared = sorted(set(first[a]) & set(first[b]))
                if not shared:
                    continue
                x = [first[a][k] for k in shared]
                y = [first[b][k] for k in shared]
                agree = sum(p == q for p, q in zip(x, y, strict=True)) / len(shared)
                kappa = float("nan") if len(set(x) | set(y)) < 2 else \
                    float(cohen_kappa_score(x, y))
                rows.append({"grader_a": a, "grader_b": b, "pairs": len(shared),
                             "agreement": agree, "kappa": kappa})
        return pd.DataFrame(rows, columns=["grader_a", "grader_b", "pairs", "agreement", "kappa"])

    def resolve(self, query: str, document: str, grade: int, grader: str) -> Judgment:
        """A person's answer to a conflict: appended, marked, and from then on the pair's grade."""
        return self.add(query, document, grade, grader, why="resolves a conflict", resolves=True)

    # ------------------------------------------------------------------ what it says
    def grades(self) -> dict[tuple[str, str], int]:
        """(query, document) -> grade in force: the first grade, or the last resolving one."""
        out: dict[tuple[str, str], int] = {}
        for j in self.entries:
            key = (j.query, j.document)
            if j.resolves or key not in out:
                out[key] = j.grade
        return out

    def conflicts(self) -> pd.DataFrame:
        """Pairs graded differently by later judgments and not resolved since: query, document,
        the grade in force, every grade given (in order) and who gave them."""
        rows = []
        by_pair: dict[tuple[str, str], list[Judgment]] = {}
        for j in self.entries:
            if j.resolves:
                by_pair.pop((j.query, j.document), None)
                by_pair[(j.query, j.document)] = [j]
                continue
            by_pair.setdefault((j.query, j.document), []).append(j)
        for (q, d), js in by_pair.items():
            if len({j.grade for j in js}) > 1:
                rows.append({"query": q, "document": d, "grade": js[0].grade,
                             "grades": [j.grade for j in js], "graders": [j.grader for j in js]})
        return pd.DataFrame(rows, columns=["query", "document", "grade", "grades", "graders"])

    def __len__(self) -> int:
        return len(self.grades())

    def to_qrels(self) -> Qrels:
        """The grades in force as qrels (qid, docid, relevance)."""
        g = self.grades()
        df = pd.DataFrame([(q, d, r) for (q, d), r in g.items()],
                          columns=["qid", "docid", "relevance"])
        return Qrels(df)

    def write_qrels(self, path: str | Path) -> Path:
        """A BEIR ``qrels/<split>.tsv`` (header ``query-id corpus-id score``), written atomically."""
        g = self.grades()
        text = "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{r}\n"
                                                         for (q, d), r in sorted(g.items()))
        write_text(Path(path), text)
        return Path(path)
