"""Several graders on one collection: two sessions on one log at the same time lose no line and
never ask two people the same pair, unless an overlap for agreement is asked for; the log then
reports Cohen's kappa between them (and so does ``rrfbench judge --agreement``)."""

import json
import multiprocessing as mp
import time
from dataclasses import dataclass

import pandas as pd
import pytest

from rrfbench.core.runs import Run
from rrfbench.judging.contest import Contest
from rrfbench.judging.decide import Prior
from rrfbench.judging.log import JudgmentLog
from rrfbench.workflows.judge import Candidates
from rrfbench.workflows.judging_session import Session, judge_terminal
from tests.test_cli import console

N_Q = 12


@dataclass
class _Collection:     # the parts of a Dataset a session reads
    name: str
    queries: pd.DataFrame
    corpus: pd.DataFrame
    ignore_identical_ids: bool = False


def _session(path, grader, overlap=0.0, budget=200):
    docs = [f"d{i}" for i in range(6)]
    cur = {f"q{i}": docs for i in range(N_Q)}
    chg = {f"q{i}": docs[::-1] for i in range(N_Q)}

    def run(r, name):
        return Run.from_dict({q: {d: float(len(ds) - j) for j, d in enumerate(ds)}
                              for q, ds in r.items()}, name)

    contest = Contest({"current": run(cur, "current"), "change": run(chg, "change")},
                      {"change": Prior(0.0, 0.01, 8)}, False, list(cur))
    ds = _Collection("toy", pd.DataFrame({"qid": list(cur), "text": [f"query {q}" for q in cur]}),
                     pd.DataFrame({"docid": docs, "title": "", "text": [f"text {d}" for d in docs]}))
    cands = Candidates({}, {}, False, "test", Prior(0.0, 0.01, 8))
    log = JudgmentLog(path, list(cur), docs, (0, 1))
    return Session(ds, "all", cands, contest, log, "sample", 1, budget, grader, overlap)


def _grade(qid, docid, grader):
    """A grader's answer: the two agree except on every third document."""
    base = int(docid[1:]) % 2
    return base if grader == "alice" or int(docid[1:]) % 3 else 1 - base


def _work(path, grader, overlap, out):
    s = _session(path, grader, overlap)
    pending = {}

    def read(prompt):
        time.sleep(0.002)        # a person's pace, so the two sessions interleave
        if prompt.startswith("grade"):
            return str(_grade(*pending["pair"], grader))
        return "q"

    def write(text):
        if text.startswith("\n["):
            head = text.split("\n")
            q = head[1].split(":")[0].split()[-1]
            d = head[2].split()[1].rstrip(":")
            pending["pair"] = (q, d)

    while True:     # the terminal stops once the decision is settled: go on to the end here
        s.log.refresh()
        if s.pending().empty:
            break
        judge_terminal(s, read=read, write=write)
    out.put(grader)


def _two_graders(path, overlap):
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    ps = [ctx.Process(target=_work, args=(path, g, overlap, q)) for g in ("alice", "bob")]
    for p in ps:
        p.start()
    for p in ps:
        p.join(120)
        assert p.exitcode == 0
    return sorted([q.get(timeout=5), q.get(timeout=5)])


def test_two_graders_at_once_lose_no_line_and_never_share_a_pair(tmp_path):
    path = tmp_path / "judgments.jsonl"
    assert _two_graders(path, 0.0) == ["alice", "bob"]
    lines = [json.loads(x) for x in path.read_text().splitlines()]   # every line whole
    grades = [x for x in lines if not x.get("claim")]
    pairs = [(x["query"], x["document"]) for x in grades]
    assert len(pairs) == len(set(pairs)) == N_Q * 6     # every pair that matters, once
    assert {x["grader"] for x in grades} == {"alice", "bob"}
    log = JudgmentLog(path)
    assert len(log) == N_Q * 6 and log.agreement().empty and log.conflicts().empty


def test_an_overlap_puts_its_share_to_both_graders_and_kappa_is_reported(tmp_path):
    path = tmp_path / "judgments.jsonl"
    _two_graders(path, 0.3)
    log = JudgmentLog(path)
    by = log.graders()
    both = {k for k, g in by.items() if g == {"alice", "bob"}}
    assert len(by) == N_Q * 6
    assert 0.1 * len(by) < len(both) < 0.5 * len(by)          # about 30%, never more than two
    assert all(len(g) <= 2 for g in by.values())
    a = log.agreement()
    assert list(a.pairs) == [len(both)]
    x = [_grade(q, d, "alice") for q, d in sorted(both)]
    y = [_grade(q, d, "bob") for q, d in sorted(both)]
    from sklearn.metrics import cohen_kappa_score
    assert a.kappa.iloc[0] == pytest.approx(cohen_kappa_score(x, y))
    assert a.agreement.iloc[0] == pytest.approx(sum(p == r for p, r in zip(x, y, strict=False)) / len(x))
    # the console script reports the same, from the log alone
    got = console("judge", "--agreement", "--log", str(path), "--json")
    assert got[0] == 0, got[2]
    assert json.loads(got[1])[0]["pairs"] == len(both)
    bad = console("judge", "toy", "--overlap", "1.5")
    assert bad[0] == 2 and "--overlap: 1.5" in bad[2] and not bad[1]


def test_a_claim_keeps_a_pair_from_another_grader_until_it_lapses(tmp_path):
    path = tmp_path / "judgments.jsonl"
    a, b = _session(path, "alice", budget=6), _session(path, "bob", budget=6)
    first = a.next_batch()
    assert len(first) == 1
    key = (first.qid[0], first.docid[0])
    b.log.refresh()
    assert key not in set(zip(b.pending().qid, b.pending().docid, strict=False))
    from rrfbench.judging import log as log_module
    b.log.refresh()
    later = time.time() + log_module.CLAIM_TTL + 1
    assert key in b.log.claimed_by_others("bob")
    assert key not in b.log.claimed_by_others("bob", later)           # lapsed: asked again
