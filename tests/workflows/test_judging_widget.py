"""The judging widget, driven from Python (its keys and buttons call ``press``); a kill of the
kernel mid-session loses no grade. The same widget in a real browser: make browser-test."""

import os
import signal
import subprocess
import sys
import textwrap

import pytest

from rrfbench.judging.log import JudgmentLog
from rrfbench.workflows.judging_session import open_session
from tests.workflows.test_judge import _with_suite_result

pytest.importorskip("ipywidgets")
from rrfbench.workflows.judging_widget import JudgingWidget  # noqa: E402


@pytest.fixture()
def session(mini_beir, results_root, tmp_path):
    _with_suite_result(results_root)
    return open_session(str(mini_beir), log_path=tmp_path / "w.jsonl", batch=4, budget=12)


def test_keys_and_buttons_grade_skip_and_undo(session):
    w = JudgingWidget(session)
    order = list(zip(session.order.qid, session.order.docid, strict=True))
    assert w.current[:2] == order[0] and "<b>query" in w.pair.value
    assert "0 of 12 judged" in w.header.value and w.banner.value == ""
    w.keys.value = "1"                          # a key typed in the shortcut box
    assert w.keys.value == "" and session.log.grades() == {order[0]: 1}
    assert w.current[:2] == order[1] and w.progress.value == 1
    w.buttons[0].click()                        # the "0" button
    w.press("s")                                # skip the third pair
    assert w.current[:2] == order[3]
    w.press("u")                                # undo: the second pair again, corrected to 1
    assert w.current[:2] == order[1] and w.current[2].startswith("undo: was graded 0")
    w.press("1")
    assert session.log.grades() == {order[0]: 1, order[1]: 1}
    assert [j.resolves for j in session.log.entries] == [False, False, True]
    assert w.current[:2] == order[3]
    w.press("7")                                # off the scale: nothing happens
    assert len(session.log.entries) == 3 and w.last_ms > 0


def test_query_words_are_marked_in_the_document(session):
    w = JudgingWidget(session)
    assert "<mark>" in w.pair.value


CHILD = textwrap.dedent("""
    import sys, time
    from rrfbench.workflows.judging_session import open_session
    from rrfbench.workflows.judging_widget import JudgingWidget
    w = JudgingWidget(open_session(sys.argv[1], log_path=sys.argv[2], budget=12))
    for key in "101":
        w.press(key)
    print("ready", flush=True)
    time.sleep(600)
""")


def test_grades_in_the_widget_survive_a_killed_kernel(mini_beir, results_root, tmp_path):
    _with_suite_result(results_root)
    log = tmp_path / "k.jsonl"
    env = {**os.environ, "RRFBENCH_RESULTS": str(results_root)}
    p = subprocess.Popen([sys.executable, "-c", CHILD, str(mini_beir), str(log)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "ready", p.stderr.read()
    finally:
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
    assert [j.grade for j in JudgmentLog(log).entries] == [1, 0, 1]
    again = JudgingWidget(open_session(str(mini_beir), log_path=log, budget=12))
    order = list(zip(again.session.order.qid, again.session.order.docid, strict=True))
    assert again.current[:2] == order[3] and "3 of 12 judged" in again.header.value
