"""Judgments are never lost and never silently wrong: kills, torn lines, conflicts, bad input."""

import os
import signal
import subprocess
import sys
import textwrap

import pandas as pd
import pytest

from rrfbench.core.errors import InputError, ValidationWarning
from rrfbench.core.runs import Qrels
from rrfbench.judging.judges import Judge, QrelsJudge
from rrfbench.judging.log import JudgmentLog

QUERIES, DOCS = ["q1", "q2"], ["d1", "d2", "d3"]


def _log(path, scale=(0, 1, 2)):
    return JudgmentLog(path, QUERIES, DOCS, scale)


def test_judgments_come_back_as_beir_qrels(tmp_path):
    log = _log(tmp_path / "j.jsonl")
    log.add("q1", "d1", 2, "ana", why="mtc: rank 1 vs 7")
    log.add("q1", "d2", 0, "ana")
    log.add("q2", "d3", 1, "ben")
    again = _log(tmp_path / "j.jsonl")
    assert again.grades() == {("q1", "d1"): 2, ("q1", "d2"): 0, ("q2", "d3"): 1}
    assert again.entries[0].why == "mtc: rank 1 vs 7" and again.entries[2].grader == "ben"
    out = again.write_qrels(tmp_path / "qrels" / "test.tsv")
    assert out.read_text().splitlines() == ["query-id\tcorpus-id\tscore", "q1\td1\t2",
                                            "q1\td2\t0", "q2\td3\t1"]
    assert isinstance(again.to_qrels(), Qrels) and len(again.to_qrels().df) == 3


@pytest.mark.parametrize("args, message", [
    (("q9", "d1", 1), "unknown query 'q9'"),
    (("q1", "d9", 1), "unknown document 'd9'"),
    (("q1", "d1", 3), "grade 3 is not on the scale 0, 1, 2"),
])
def test_bad_judgments_are_refused_before_anything_is_written(tmp_path, args, message):
    log = _log(tmp_path / "j.jsonl")
    with pytest.raises(InputError, match=message):
        log.add(*args, grader="ana")
    assert not (tmp_path / "j.jsonl").exists()


def test_a_conflicting_grade_is_shown_not_overwritten(tmp_path):
    log = _log(tmp_path / "j.jsonl")
    log.add("q1", "d1", 2, "ana")
    log.add("q1", "d1", 2, "ben")      # agreeing: no conflict
    log.add("q1", "d2", 1, "ana")
    log.add("q1", "d2", 0, "ben")      # disagreeing
    c = _log(tmp_path / "j.jsonl").conflicts()
    assert c.to_dict("records") == [{"query": "q1", "document": "d2", "grade": 1,
                                     "grades": [1, 0], "graders": ["ana", "ben"]}]
    assert log.grades()[("q1", "d2")] == 1          # the first grade stays in force
    log.resolve("q1", "d2", 0, "carla")
    again = _log(tmp_path / "j.jsonl")
    assert again.grades()[("q1", "d2")] == 0 and again.conflicts().empty
    assert len(again.entries) == 5                   # nothing was overwritten


def test_a_torn_last_line_is_set_aside_with_a_warning_and_the_rest_kept(tmp_path):
    path = tmp_path / "j.jsonl"
    log = _log(path)
    log.add("q1", "d1", 1, "ana")
    with open(path, "ab") as f:
        f.write(b'{"query": "q1", "document": "d2", "gra')   # the process died mid-write
    with pytest.warns(ValidationWarning, match=r"j.jsonl:2: an incomplete last line"):
        again = _log(path)
    assert again.grades() == {("q1", "d1"): 1}
    again.add("q2", "d1", 0, "ana")                   # appending repairs the file
    assert [line[:20] for line in path.read_text().splitlines()] == [
        '{"query": "q1", "doc', '{"query": "q2", "doc']


def test_a_broken_line_in_the_middle_is_an_error_naming_file_and_line(tmp_path):
    path = tmp_path / "j.jsonl"
    path.write_text('{"query": "q1", "document": "d1", "grade": 1}\nnot json\n'
                    '{"query": "q1", "document": "d2", "grade": 0}\n')
    with pytest.raises(InputError, match=r"j.jsonl:2: not a judgment"):
        _log(path)


def test_judgments_survive_a_kill_mid_session(tmp_path):
    """A judging process killed with SIGKILL after it said a judgment was recorded: every
    recorded judgment is there when the log is opened again."""
    path = tmp_path / "j.jsonl"
    code = textwrap.dedent(f"""
        import sys, itertools
        from rrfbench.judging.log import JudgmentLog
        log = JudgmentLog({str(path)!r}, scale=(0, 1))
        for i in itertools.count():
            log.add(f"q{{i}}", "d1", i % 2, "ana")
            print(i, flush=True)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    said = [int(p.stdout.readline()) for _ in range(200)]
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    log = JudgmentLog(path, scale=(0, 1))
    got = log.grades()
    assert all((f"q{i}", "d1") in got for i in said)
    assert all(got[(f"q{i}", "d1")] == i % 2 for i in said)


def test_the_simulated_judge_answers_from_qrels_and_counts(tmp_path):
    qrels = Qrels(pd.DataFrame({"qid": ["q1", "q1"], "docid": ["d1", "d2"], "relevance": [2, 0]}))
    judge = QrelsJudge(qrels)
    assert isinstance(judge, Judge)
    assert [judge.grade("q1", d) for d in ("d1", "d2", "d3")] == [2, 0, 0]
    assert judge.asked == 3
