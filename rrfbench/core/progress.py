"""Progress for long work, fitted to where it is shown.

* On a terminal: a tqdm bar.
* In a notebook with ipywidgets: tqdm's notebook bar.
* Anywhere else (CI logs, pipes, a notebook without ipywidgets): one line when a stage starts
  and one when it ends, never hundreds of carriage-return updates.

Libraries' own bars (sentence-transformers' "Batches") are switched off by the callers; this
module is the only progress rrfbench shows.
"""

from __future__ import annotations

import os
import sys
import time

from tqdm import tqdm


def on_terminal() -> bool:
    """True when stderr is an interactive terminal (and not a CI run)."""
    try:
        return sys.stderr.isatty() and not os.environ.get("CI")
    except (AttributeError, ValueError):
        return False


def in_notebook() -> bool:
    """True inside a running Jupyter kernel (not merely when ipykernel has been imported)."""
    if "IPython" not in sys.modules:
        return False
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def _widgets_available() -> bool:
    try:
        import ipywidgets  # noqa: F401
    except ImportError:
        return False
    return True


def _duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    s = int(round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


class _Lines:
    """A tqdm-like object that prints one line at the start, one at the end and, between them,
    at most one line every :data:`EVERY` seconds with the count, the rate and the ETA."""

    EVERY = 30.0

    def __init__(self, iterable=None, total=None, desc: str = "", unit: str = "it", initial=0):
        self.iterable = iterable
        self.total = total if total is not None else (len(iterable) if hasattr(iterable, "__len__") else None)
        self.desc, self.unit, self.n = desc, unit, initial
        self.t0 = self._said = time.perf_counter()
        self.initial = initial
        self._closed = False
        todo = "" if self.total is None else f" ({self.total - initial} {unit} to do"
        todo += f", {initial} already done)" if initial else (")" if todo else "")
        print(f"{desc}: started{todo}", file=sys.stderr, flush=True)

    def __iter__(self):
        for x in self.iterable:
            yield x
            self.n += 1
        self.close()

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.perf_counter()
        if now - self._said >= self.EVERY and self.total and self.n < self.total:
            self._said = now
            print(self.status(now), file=sys.stderr, flush=True)

    def status(self, now: float | None = None) -> str:
        """``desc: n/total unit (p%), r unit/s, ETA t`` from the rate so far."""
        elapsed = (now or time.perf_counter()) - self.t0
        done = self.n - self.initial
        rate = done / elapsed if elapsed > 0 else 0.0
        line = f"{self.desc}: {self.n}/{self.total} {self.unit} ({self.n / self.total:.0%})"
        if rate > 0:
            line += (f", {rate:.3g} {self.unit}/s, ETA "
                     f"{_duration((self.total - self.n) / rate)}")
        return line

    def set_postfix_str(self, *_a, **_k) -> None:
        pass

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        print(f"{self.desc}: done {self.n} {self.unit} in {time.perf_counter() - self.t0:.1f} s",
              file=sys.stderr, flush=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Off:
    def __init__(self, iterable=None, **_k):
        self.iterable = iterable

    def __iter__(self):
        return iter(self.iterable)

    def update(self, n: int = 1) -> None:
        pass

    def set_postfix_str(self, *_a, **_k) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def progress(iterable=None, *, total=None, desc: str = "", unit: str = "it", initial: int = 0,
             enabled: bool = True):
    """A progress object (tqdm-compatible: iterate it, or ``update`` and ``close`` it)."""
    if not enabled:
        return _Off(iterable)
    if on_terminal():
        return tqdm(iterable, total=total, desc=desc, unit=unit, initial=initial)
    if in_notebook() and _widgets_available():
        from tqdm.notebook import tqdm as nb_tqdm

        return nb_tqdm(iterable, total=total, desc=desc, unit=unit, initial=initial)
    return _Lines(iterable, total=total, desc=desc, unit=unit, initial=initial)
