"""Judging a collection without qrels: the terminal flow (killed mid-session and resumed) and
the sheet (written, filled, read back), on the 400-document cranfield cut."""

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from rrfbench.core.errors import InputError
from rrfbench.judging.log import JudgmentLog
from rrfbench.workflows.judging_session import (
    SHEET_COLUMNS,
    import_sheet,
    judge_terminal,
    marked,
    open_session,
    write_sheet,
)
from tests.test_cli import SCRIPT, console, one_line_error
from tests.workflows.test_judge import _with_suite_result


@pytest.fixture()
def session(mini_beir, results_root, tmp_path):
    _with_suite_result(results_root)
    return open_session(str(mini_beir), log_path=tmp_path / "j.jsonl", batch=4, budget=12)


def test_a_collection_without_qrels_is_judged_on_every_query(session, mini_beir):
    assert session.split == "all"
    assert len(session.dataset.split_queries("all")) == len(session.dataset.queries)
    first = session.next_batch()
    assert len(first) == 4 and first.why.str.startswith("sample, phase 1").all()
    # the sampled design: phase 1's pairs (current vs change) in decreasing priority
    p1 = session.contest.phase_order(1)
    assert list(zip(first.qid, first.docid, strict=True)) == \
        list(zip(p1.qid[:4], p1.docid[:4], strict=True))
    assert list(p1.priority[:4]) == sorted(p1.priority[:4], reverse=True)
    s = session.status()
    assert s["judgments"] == 0 and s["take_change"] is True and not s["settled"]


def test_the_terminal_skips_undoes_and_stops_on_end_of_input(session):
    answers = iter(["1", "x", "0", "s", "u", "1", "1"])

    def read(_prompt):
        try:
            return next(answers)
        except StopIteration:
            raise EOFError from None          # the end of input, as a closed stdin gives

    said = []
    status = judge_terminal(session, read=read, write=said.append)
    g = session.log.grades()
    first = session.order.iloc[0]
    second = session.order.iloc[1]
    assert g[(first.qid, first.docid)] == 1
    assert g[(second.qid, second.docid)] == 1          # 0, then undone and corrected to 1
    assert (session.order.iloc[2].qid, session.order.iloc[2].docid) not in g   # skipped
    assert any("not a grade: 'x'" in s for s in said)
    assert status["judgments"] == len(g) == 3
    assert [j.resolves for j in session.log.entries] == [False, False, True, False]


def test_the_sheet_goes_out_and_comes_back(session, tmp_path):
    out = write_sheet(session, tmp_path / "batch.tsv")
    lines = out.read_text().splitlines()
    assert lines[0].split("\t") == list(SHEET_COLUMNS) and len(lines) == 5
    rows = [ln.split("\t") for ln in lines[1:]]
    assert all(r[2] == "" for r in rows)
    # a wrong grade names the file and line, and nothing is recorded
    bad = [lines[0]] + ["\t".join([r[0], r[1], "1" if i else "7", *r[3:]]) for i, r in enumerate(rows)]
    (tmp_path / "bad.tsv").write_text("\n".join(bad) + "\n")
    with pytest.raises(InputError, match=r"bad\.tsv:2: grade '7' is not on the scale 0, 1"):
        import_sheet(session, tmp_path / "bad.tsv")
    assert len(session.log) == 0
    filled = [lines[0]] + ["\t".join([r[0], r[1], "" if i == 3 else str(i % 2), *r[3:]])
                           for i, r in enumerate(rows)]
    (tmp_path / "filled.tsv").write_text("\n".join(filled) + "\n")
    got = import_sheet(session, tmp_path / "filled.tsv")
    assert got["added"] == 3 and got["conflicts"] == 0
    again = import_sheet(session, tmp_path / "filled.tsv")
    assert again["added"] == 0 and again["already"] == 3
    # the next sheet starts after the judged pairs; the skipped one is asked again first
    nxt = write_sheet(session, tmp_path / "next.tsv").read_text().splitlines()[1].split("\t")
    assert (nxt[0], nxt[1]) == (rows[3][0], rows[3][1])
    qrels = session.log.to_qrels()
    assert len(qrels.df) == 3 and set(qrels.df.relevance) == {0, 1}


def test_query_terms_are_marked():
    assert marked("Pressure on a WING surface", "pressure wings") == "**Pressure** on a **WING** surface"
    assert marked("x" * 50, "q", limit=10) == "x" * 10 + " ..."


def _wait_for_lines(path, n, timeout=120):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if path.exists() and len([x for x in path.read_text().splitlines() if x]) >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"{path}: fewer than {n} judgments after {timeout} s")


def test_judgments_in_the_terminal_survive_a_kill(mini_beir, results_root, tmp_path):
    _with_suite_result(results_root)
    log = tmp_path / "killed.jsonl"
    args = [SCRIPT, "judge", str(mini_beir), "--log", str(log), "--budget", "20", "--batch", "5"]
    env = {**os.environ, "RRFBENCH_RESULTS": str(results_root)}
    p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, env=env, text=True)
    p.stdin.write("1\n0\n1\n")
    p.stdin.flush()
    _wait_for_lines(log, 3)
    p.send_signal(signal.SIGKILL)                       # no clean-up runs: a crash
    p.wait(timeout=30)
    p.stdin.close()
    kept = JudgmentLog(log).entries
    assert [j.grade for j in kept] == [1, 0, 1]
    # the next session starts from the first pair not judged, and adds to the same log
    r = subprocess.run([*args[:-4], "--budget", "20", "--batch", "5", "--json",
                        "--qrels-out", str(tmp_path / "q.tsv")], input="0\nq\n",
                       capture_output=True, text=True, env=env, timeout=300)
    assert r.returncode == 0, r.stderr
    status = json.loads(r.stdout)
    entries = JudgmentLog(log).entries
    assert [j.grade for j in entries] == [1, 0, 1, 0] and status["judgments"] == 4
    assert len({(j.query, j.document) for j in entries}) == 4      # nothing asked twice
    assert (tmp_path / "q.tsv").read_text().startswith("query-id\tcorpus-id\tscore\n")


def test_wrong_arguments_get_one_line(mini_beir, results_root, tmp_path):
    _with_suite_result(results_root)     # the sheet's own error, not the missing suite result
    one_line_error(*console("judge")[::2], "name a collection")
    one_line_error(*console("judge", str(mini_beir), "--scale", "x")[::2], "--scale")
    one_line_error(*console("judge", str(mini_beir), "--split", "nope")[::2], "--split", "nope")
    one_line_error(*console("judge", str(mini_beir), "--batch", "0")[::2], "--batch")
    one_line_error(*console("judge", str(mini_beir), "--import", str(tmp_path / "nosuch.tsv"))[::2],
                   "--import", "nosuch.tsv", "file not found")
    sheet = tmp_path / "s.tsv"
    sheet.write_text("a\tb\n")
    one_line_error(*console("judge", str(mini_beir), "--import", str(sheet))[::2],
                   "s.tsv:1", "not a judging sheet")


SHEET_CHILD = """
import sys, time
from rrfbench.judging.log import JudgmentLog
from rrfbench.workflows.judging_session import import_sheet, open_session
add = JudgmentLog.add
done = []
def slow_add(self, *a, **k):          # stalls after the second grade: killed mid-import
    out = add(self, *a, **k)
    done.append(1)
    print("added", flush=True)
    if len(done) == 2:
        time.sleep(60)
    return out
JudgmentLog.add = slow_add
import_sheet(open_session(sys.argv[1], log_path=sys.argv[2], budget=12), sys.argv[3])
"""


def test_a_sheet_import_killed_midway_loses_nothing_and_resumes(mini_beir, results_root, tmp_path,
                                                               session):
    lines = write_sheet(session, tmp_path / "s.tsv").read_text().splitlines()
    filled = [lines[0]] + ["\t".join([r.split("\t")[0], r.split("\t")[1], "1",
                                      *r.split("\t")[3:]]) for r in lines[1:]]
    (tmp_path / "s.tsv").write_text("\n".join(filled) + "\n")
    log = tmp_path / "sheet.jsonl"
    env = {**os.environ, "RRFBENCH_RESULTS": str(results_root)}
    p = subprocess.Popen([sys.executable, "-c", SHEET_CHILD, str(mini_beir), str(log),
                          str(tmp_path / "s.tsv")], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "added", p.stderr.read()
        assert p.stdout.readline().strip() == "added"
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
    assert len(JudgmentLog(log).entries) == 2          # what was appended before the kill
    again = open_session(str(mini_beir), log_path=log, budget=12)
    got = import_sheet(again, tmp_path / "s.tsv")       # the same sheet, imported again
    assert got == {"added": 2, "already": 2, "conflicts": 0, "log": str(log)}
    assert len(again.log.entries) == 4 and len(again.log.grades()) == 4
