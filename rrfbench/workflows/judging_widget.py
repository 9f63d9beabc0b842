"""Judging in JupyterLab: one pair at a time, grade buttons and keyboard shortcuts.

:class:`JudgingWidget` shows a :class:`~rrfbench.workflows.judging_session.Session`'s next pair:
the query, the document with the query's words marked, why the pair was chosen, a button per
grade, *skip* and *undo*, a progress bar, where the decision stands, and a banner when the
decision is settled (the session's stopping rule). Keyboard: focus the shortcut box and type a
grade (``0``, ``1``...), ``s`` (skip) or ``u`` (undo: the previous pair is asked again and the
answer recorded as a correction). Every grade is fsynced into the session's log before the
next pair is shown, so a kill or a closed browser loses nothing answered, and a new widget on
the same log starts from the first pair not judged. :meth:`JudgingWidget.press` is what a
button or a key does; it is what the tests and the benchmark drive, and it records its own
latency (``last_ms``).

Called from: notebook 09 and tests (``tests/browser/browser_check.py`` in a real browser).
"""

from __future__ import annotations

import time
from html import escape

from ..core.errors import MissingDependencyError
from .judging_session import Session, marked

GRADE_NAMES = {0: "not relevant", 1: "relevant", 2: "highly relevant", 3: "perfect"}


def _widgets():
    try:
        import ipywidgets
    except ImportError:
        raise MissingDependencyError(
            "the judging widget needs ipywidgets: pip install -e '.[notebooks]'") from None
    return ipywidgets


class JudgingWidget:
    """The judging widget of one session (see the module docstring); display ``.ui``."""

    def __init__(self, session: Session, grader: str | None = None):
        w = _widgets()
        self.session, self.grader = session, grader or session.grader
        self.skipped: set = set()
        self.history: list[tuple[str, str]] = []
        self.correcting: tuple[str, str] | None = None
        self.current: tuple[str, str, str] | None = None
        self.last_ms = 0.0
        scale = session.log.scale
        self.header = w.HTML()
        self.banner = w.HTML()
        self.pair = w.HTML()
        self.progress = w.IntProgress(min=0, max=max(session.budget, 1), description="judged")
        self.buttons = [w.Button(description=f"{g} · {GRADE_NAMES.get(g, 'grade')}",
                                 tooltip=f"key {g}") for g in scale]
        for g, b in zip(scale, self.buttons, strict=True):
            b.on_click(lambda _b, g=g: self.press(str(g)))
        self.skip = w.Button(description="skip (s)")
        self.undo = w.Button(description="undo (u)")
        self.skip.on_click(lambda _b: self.press("s"))
        self.undo.on_click(lambda _b: self.press("u"))
        self.keys = w.Text(placeholder=f"keys: {'/'.join(map(str, scale))}, s, u",
                           continuous_update=True, description="shortcuts")
        self.keys.observe(self._typed, names="value")
        self.ui = w.VBox([self.header, self.banner, self.progress, self.pair,
                          w.HBox([*self.buttons, self.skip, self.undo]), self.keys])
        self.ui.add_class("rrfbench-judging")
        self._show()

    # ------------------------------------------------------------------ actions
    def _typed(self, change) -> None:
        text = change["new"]
        if text:
            self.keys.value = ""
            for ch in text:
                self.press(ch)

    def press(self, key: str) -> None:
        """A grade, ``s`` or ``u`` (anything else is ignored), then the next pair."""
        t0 = time.perf_counter()
        key = key.strip().lower()
        scale = self.session.log.scale
        if key == "u" and self.history:
            self.correcting = self.history.pop()
        elif key == "s" and self.current and not self.correcting:
            self.skipped.add(self.current[:2])
        elif key.isdigit() and int(key) in scale and self.current:
            if self.correcting:
                q, d = self.correcting
                self.session.log.resolve(q, d, int(key), self.grader)
                self.correcting = None
            else:
                q, d, why = self.current
                self.session.log.add(q, d, int(key), self.grader, why=why)
                self.history.append((q, d))
        self._show()
        self.last_ms = (time.perf_counter() - t0) * 1000

    # ------------------------------------------------------------------ view
    def _show(self) -> None:
        s = self.session
        status = s.status()
        if self.correcting:
            q, d = self.correcting
            why = f"undo: was graded {s.log.grades().get((q, d))}; the new grade is a correction"
            self.current = (q, d, why)
        else:
            nxt = s.next_batch(self.skipped, n=1)
            self.current = None if nxt.empty else (nxt.qid.iloc[0], nxt.docid.iloc[0],
                                                  nxt.why.iloc[0])
        self.progress.value = min(status["judgments"], self.progress.max)
        self.header.value = (
            f"<b>rrfbench judging</b> · {escape(s.dataset.name)} · {status['judgments']} of "
            f"{s.budget} judged · <b>{'take' if status['take_change'] else 'keep'}</b>: "
            f"{escape(status['decision'])} (posterior gain {status['posterior_gain']:+.4f}, "
            f"sd {status['posterior_sd']:.4f}; {len(s.contest.labels)} candidates) · log "
            f"<code>{escape(str(s.log.path))}</code>")
        self.banner.value = (
            "<div style='background:#d4edda;padding:4px'><b>The decision is settled</b>: "
            "judging more cannot flip it within the margin.</div>" if status["settled"] else "")
        if self.current is None:
            self.pair.value = "<i>no pairs left to judge within the budget</i>"
            return
        q, d, why = self.current
        qt = s.query_text(q)
        self.pair.value = (
            f"<div><b>query {escape(q)}</b>: {escape(qt)}</div>"
            f"<div style='margin-top:6px'><b>document {escape(d)}</b></div>"
            f"<div class='rrfbench-doc' style='max-width:900px'>"
            f"{marked(s.document_text(d), qt, html=True)}</div>"
            f"<div style='color:#666;font-size:90%'>{escape(why)}</div>")


    def summary(self) -> str:
        """One line: the collection, how many judged, the decision, the next pair."""
        st = self.session.status()
        nxt = f"next: query {self.current[0]}, document {self.current[1]}" if self.current \
            else "no pairs left"
        return (f"rrfbench judging: {self.session.dataset.name}, {st['judgments']} of "
                f"{self.session.budget} judged; {'take' if st['take_change'] else 'keep'}: "
                f"{st['decision']}; {nxt}")

    def _repr_mimebundle_(self, include=None, exclude=None):
        bundle = dict(self.ui._repr_mimebundle_(include=include, exclude=exclude) or {})
        bundle["text/plain"] = self.summary()
        bundle["text/html"] = f"<p>{escape(self.summary())}</p>"
        return bundle


def judging_widget(session: Session, grader: str | None = None):
    """The widget's ``ui`` for ``session`` (``display`` it in a notebook)."""
    return JudgingWidget(session, grader).ui


__all__ = ["JudgingWidget", "judging_widget"]
