"""Judging a team's own collection: the next batch to judge, in the terminal or in a sheet.

A :class:`Session` holds the decision (the current constants against the suite's advice, with
the suite's prior, then a few strong alternatives: :func:`rrfbench.workflows.judge.candidates`)
as a :class:`~rrfbench.judging.contest.Contest` of fused runs on the collection's queries (a
collection without qrels is judged on every query: the ``UNJUDGED`` split), the pairs in the
order of the selection method, and the :class:`JudgmentLog` the grades go to. Nothing here
reads qrels: a session asks, records and decides. After every batch :meth:`Session.status`
gives the estimate, the posterior, each alternative's challenge and the stopping rule
(:mod:`rrfbench.judging.contest`); the terminal prints "the decision is settled" when the rule
says so.

* :func:`judge_terminal`: one pair at a time (the query, the document with the query's terms
  marked, a grade; ``s`` skips, ``u`` re-asks the previous pair and records the new answer as a
  correction, ``q`` or end of input stops). Every grade is in the log before the next pair is
  shown, so a kill loses nothing answered; the next session starts from the first pair not
  yet judged.
* :func:`write_sheet` / :func:`import_sheet`: the next batch as a TSV to fill in a spreadsheet
  (a ``grade`` column left empty), and the filled sheet read back: every row checked first
  (file, line and problem in one line), then appended; an empty grade is a skip.

Called from: the CLI's ``judge`` command (without ``--simulate``), notebooks and tests.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path

import pandas as pd
import Stemmer

from ..core.errors import InputError
from ..core.runs import read_text
from ..core.store import results_dir, write_text
from ..data.datasets import UNJUDGED, Dataset, load_dataset
from ..judging.contest import Contest
from ..judging.decide import METHODS, Estimate
from ..judging.log import JudgmentLog
from ..judging.sampling import uniforms
from ..retrievers.fts5 import FTS_STOPWORDS
from .cache import _quiet
from .judge import Candidates, candidates, check_streams, fused_candidates

SHEET_COLUMNS = ("query_id", "doc_id", "grade", "query", "document", "why")
SNIPPET = 700          # characters of a document shown in the terminal and the sheet
_STEM = Stemmer.Stemmer("english")


def default_log(name: str) -> Path:
    """Where a collection's judgments go unless ``--log`` says otherwise (not committed)."""
    return results_dir() / "judging" / "collections" / name / "judgments.jsonl"


@dataclass
class Session:
    """One collection's judging (see the module docstring)."""

    dataset: Dataset
    split: str
    candidates: Candidates
    contest: Contest
    log: JudgmentLog
    method: str = "sample"
    batch: int = 10
    budget: int = 200
    grader: str = "person"
    overlap: float = 0.0     # share of pairs put to a second grader (agreement)

    def __post_init__(self):
        if not 0.0 <= self.overlap <= 1.0:
            raise InputError(f"--overlap: {self.overlap} is not a share between 0 and 1")
        self.order = self.contest.order(self.method, budget=self.budget)
        self._overlap = set()
        if self.overlap > 0:
            u = uniforms(self.order.qid.tolist(), self.order.docid.tolist(), "overlap")
            self._overlap = {k for k, x in zip(zip(self.order.qid, self.order.docid, strict=False), u, strict=False)
                             if x <= self.overlap}
        self._queries = dict(zip(self.dataset.queries.qid, self.dataset.queries.text, strict=True))
        c = self.dataset.corpus
        self._docs = {d: f"{t}\n{x}".strip() if t else x
                      for d, t, x in zip(c.docid, c.title, c.text, strict=True)}

    # ---------------------------------------------------------------- what to judge
    def pending(self, skip: set | None = None) -> pd.DataFrame:
        """The pairs still to put to this session's grader, in order: those nobody graded,
        within the budget, and (with ``overlap``) the overlap's pairs one other grader graded;
        none another grader holds a claim on, none skipped."""
        done = self.log.grades()
        by = self.log.graders()
        held = self.log.claimed_by_others(self.grader)
        room = max(self.budget - len(done), 0)
        keys = list(zip(self.order.qid, self.order.docid, strict=True))
        fresh, again = [], []
        for i, k in enumerate(keys):
            if k in held or k in (skip or set()):
                continue
            if k not in done:
                fresh.append(i)
            elif k in self._overlap and len(by.get(k, ())) == 1 and self.grader not in by[k]:
                again.append(i)
        rows = sorted(fresh[:room] + again)
        return self.order.iloc[rows].reset_index(drop=True)

    def next_batch(self, skip: set | None = None, n: int | None = None) -> pd.DataFrame:
        """The next ``n`` pairs (default: a batch), claimed for this session's grader under the
        log's lock (two sessions on one log are never given the same pair, see
        :mod:`rrfbench.judging.log`); a pair this grader already holds is not claimed again."""
        with self.log.locked():
            if self.log.path.exists():
                self.log._read()
            batch = self.pending(skip).head(self.batch if n is None else n)
            held = self.log.claimed_by(self.grader)
            self.log.claim([k for k in zip(batch.qid, batch.docid, strict=True) if k not in held],
                           self.grader)
        return batch

    def query_text(self, qid: str) -> str:
        return self._queries.get(qid, "")

    def document_text(self, docid: str) -> str:
        return self._docs.get(docid, "")

    # ---------------------------------------------------------------- where it stands
    def estimate(self) -> Estimate | None:
        """The judged difference between the current constants and the suite's change."""
        return self.contest.verdict(self.log.grades(), max(self.log.scale), self.method).estimate

    def status(self) -> dict:
        v = self.contest.verdict(self.log.grades(), max(self.log.scale), self.method)
        est, (m, sd), ht = v.estimate, v.posterior, v.sampled
        return {"collection": self.dataset.name, "split": self.split,
                "ignore_identical_ids": self.dataset.ignore_identical_ids,
                "decision": v.chosen, "current": self.contest.current,
                "change": self.contest.change, "alternatives": self.contest.alternatives,
                "take_change": v.take_change, "why": v.why,
                "judgments": len(self.log.grades()),
                "posterior_gain": round(m, 6), "posterior_sd": round(sd, 6),
                "estimate_ndcg10": None if est is None else round(est.ndcg, 6),
                "method": self.method,
                "unbiased_dcg10": None if ht is None or not ht.sampled else round(ht.mean, 6),
                "unbiased_se_dcg10": None if ht is None or not ht.sampled else round(ht.se, 6),
                "judged_at_10": None if est is None else {k: round(x, 4) for k, x in
                                                          est.judged_at_10.items()},
                "challenges": v.challenges,
                "settled": v.settled, "budget": self.budget,
                "pending": len(self.pending()), "conflicts": len(self.log.conflicts()),
                "prior": self.candidates.source}


def open_session(dataset: str | Dataset, suite: str = "en", split: str | None = None,
                 log_path: str | Path | None = None, scale: Sequence[int] = (0, 1),
                 method: str = "sample", batch: int = 10, budget: int = 200,
                 log: Callable[[str], None] = _quiet, system: str | None = None,
                 settings: dict | None = None, grader: str = "person",
                 overlap: float = 0.0, current: str | None = None,
                 streams: Sequence[str] | None = None) -> Session:
    """A judging session on ``dataset`` (a name or a BEIR folder): its runs are retrieved or
    read from the cache; ``split``: the queries to judge (default: every query); ``system``:
    a studied system or engine mode whose shipped knobs (``settings`` over them) are the
    current constants (default: free fusion's RRF k=60)."""
    if method not in METHODS:
        raise InputError(f"--method: {method!r} is not one of {', '.join(METHODS)}")
    if batch < 1 or budget < 0:
        raise InputError(f"--batch {batch} / --budget {budget}: a batch is 1 or more, a "
                         "budget 0 or more")
    ds = load_dataset(dataset) if isinstance(dataset, str) else dataset
    split = split or UNJUDGED
    if split != UNJUDGED and split not in ds.splits:
        raise InputError(f"--split: no split {split!r} in {ds.name}; available: "
                         f"{', '.join([UNJUDGED, *ds.splits])}")
    cands = candidates(suite, ds.name, system, settings, current)
    contest = fused_candidates(cands, ds, split, log, streams=check_streams(streams))
    jl = JudgmentLog(log_path or default_log(ds.name), ds.queries.qid, ds.corpus.docid, scale)
    return Session(ds, split, cands, contest, jl, method, batch, budget, grader, overlap)


# --------------------------------------------------------------------------- the terminal
def marked(text: str, query: str, limit: int = SNIPPET, html: bool = False) -> str:
    """``text`` (cut to ``limit`` characters) with the words that share a stem with one of
    the query's words (English Snowball stems; the FTS5 query builder's stop words left out)
    marked ``**like this**``, or with ``html`` escaped and marked ``<mark>like this</mark>``."""
    text = text if len(text) <= limit else text[:limit].rstrip() + " ..."
    stems = {_STEM.stemWord(w) for w in re.findall(r"\w+", query.lower())
             if w not in FTS_STOPWORDS}
    a, b = ("<mark>", "</mark>") if html else ("**", "**")
    out = []
    for word, other in re.findall(r"(\w+)|(\W+)", text):
        if other:
            out.append(escape(other) if html else other)
            continue
        low = word.lower()
        hit = stems and low not in FTS_STOPWORDS and _STEM.stemWord(low) in stems
        w = escape(word) if html else word
        out.append(f"{a}{w}{b}" if hit else w)
    return "".join(out)


def _status_line(s: dict) -> str:
    est = "" if s["estimate_ndcg10"] is None else f", judged nDCG@10 difference {s['estimate_ndcg10']:+.4f}"
    return (f"{s['judgments']} judged{est}; posterior gain {s['posterior_gain']:+.4f} "
            f"(sd {s['posterior_sd']:.4f}) -> {'take' if s['take_change'] else 'keep'}: "
            f"{s['decision']}")


def judge_terminal(session: Session, read: Callable[[str], str] = input,
                   write: Callable[[str], None] = print, grader: str | None = None) -> dict:
    """Ask pair after pair until the decision is settled, the budget is spent, or the person
    stops (``q``, end of input, Ctrl-C); returns the final :meth:`Session.status`."""
    grader = grader or session.grader
    scale = session.log.scale
    skipped: set = set()
    history: list[tuple[str, str]] = []
    c = session.contest
    alts = f" (then {len(c.alternatives)} alternatives: {'; '.join(c.alternatives)})" \
        if c.alternatives else ""
    write(f"deciding: {c.current} (current) vs {c.change}{alts}; "
          f"grades {', '.join(map(str, scale))}; s skip, u undo, q quit")
    try:
        while True:
            batch = session.next_batch(skipped)
            if batch.empty:
                write("no pairs left to judge within the budget")
                break
            for row in batch.itertuples():
                if not _ask(session, row.qid, row.docid, row.why, read, write, grader, skipped,
                            history):
                    return _finish(session, write)
            s = session.status()
            write(_status_line(s))
            if s["settled"]:
                write("the decision is settled: judging more cannot flip it within the margin")
                break
    except (EOFError, KeyboardInterrupt):
        pass
    return _finish(session, write)


def _ask(session, qid, docid, why, read, write, grader, skipped, history) -> bool:
    """One pair (and any undo before it); False when the person stops."""
    scale = session.log.scale
    while True:
        write(f"\n[{len(session.log.grades()) + 1}/{session.budget}] query {qid}: "
              f"{session.query_text(qid)}\ndocument {docid}:\n"
              f"{marked(session.document_text(docid), session.query_text(qid))}\n({why})")
        ans = read(f"grade ({'/'.join(map(str, scale))}, s, u, q)> ").strip().lower()
        if ans == "q":
            return False
        if ans == "s":
            skipped.add((qid, docid))
            return True
        if ans == "u":
            if not history:
                write("nothing to undo")
                continue
            pq, pd_ = history.pop()
            write(f"re-asking query {pq}, document {pd_} (was {session.log.grades().get((pq, pd_))})")
            again = read(f"grade ({'/'.join(map(str, scale))})> ").strip()
            if again.isdigit() and int(again) in scale:
                session.log.resolve(pq, pd_, int(again), grader)
            else:
                write(f"not a grade: {again!r}; the earlier grade stands")
            continue
        if ans.isdigit() and int(ans) in scale:
            session.log.add(qid, docid, int(ans), grader, why=why)
            history.append((qid, docid))
            return True
        write(f"not a grade: {ans!r} (one of {', '.join(map(str, scale))}, s, u, q)")


def _finish(session: Session, write) -> dict:
    s = session.status()
    write(_status_line(s))
    write(f"judgments: {session.log.path}")
    return s


# --------------------------------------------------------------------------- the sheet
def write_sheet(session: Session, out: str | Path) -> Path:
    """The next batch as a TSV to fill in (``grade`` empty), written atomically."""
    rows = session.next_batch()
    buf = io.StringIO()
    w = csv.writer(buf, delimiter="\t", lineterminator="\n")
    w.writerow(SHEET_COLUMNS)
    for r in rows.itertuples():
        doc = " ".join(session.document_text(r.docid)[:SNIPPET].split())
        w.writerow([r.qid, r.docid, "", " ".join(session.query_text(r.qid).split()), doc, r.why])
    write_text(Path(out), buf.getvalue())
    return Path(out)


def import_sheet(session: Session, path: str | Path, grader: str | None = None) -> dict:
    """Read a filled sheet back into the log: every row checked before any is appended (one
    line naming file, line and problem); an empty grade is a skip; a pair already graded the
    same is not recorded twice; a different grade is recorded as a conflict."""
    grader = grader or session.grader
    path = Path(path)
    lines = read_text(path).split("\n")
    reader = csv.reader(lines, delimiter="\t")
    header = next(reader, None)
    if not header or [h.strip() for h in header[:3]] != list(SHEET_COLUMNS[:3]):
        raise InputError(f"{path}:1: not a judging sheet (the header must start "
                         f"{', '.join(SHEET_COLUMNS[:3])})")
    todo = []
    for no, row in enumerate(reader, 2):
        if not row or not any(c.strip() for c in row):
            continue
        if len(row) < 3:
            raise InputError(f"{path}:{no}: {len(row)} columns; a row needs query_id, doc_id, grade")
        q, d, g = row[0].strip(), row[1].strip(), row[2].strip()
        if not g:
            continue
        if not g.lstrip("-").isdigit() or int(g) not in session.log.scale:
            raise InputError(f"{path}:{no}: grade {g!r} is not on the scale "
                             f"{', '.join(map(str, session.log.scale))}")
        if session.log.queries is not None and q not in session.log.queries:
            raise InputError(f"{path}:{no}: unknown query {q!r}")
        if session.log.documents is not None and d not in session.log.documents:
            raise InputError(f"{path}:{no}: unknown document {d!r}")
        todo.append((q, d, int(g), row[5] if len(row) > 5 else ""))
    before = session.log.grades()
    added = same = conflicts = 0
    for q, d, g, why in todo:
        if before.get((q, d)) == g:
            same += 1
            continue
        conflicts += (q, d) in before
        session.log.add(q, d, g, grader, why=why or "sheet")
        added += 1
    return {"added": added, "already": same, "conflicts": conflicts, "log": str(session.log.path)}


__all__ = ["Session", "open_session", "judge_terminal", "write_sheet", "import_sheet", "marked",
           "default_log", "SHEET_COLUMNS"]
