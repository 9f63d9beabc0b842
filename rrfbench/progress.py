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


class _Lines:
    """A tqdm-like object that prints one line at the start and one at the end."""

    def __init__(self, iterable=None, total=None, desc: str = "", unit: str = "it", initial=0):
        self.iterable = iterable
        self.total = total if total is not None else (len(iterable) if hasattr(iterable, "__len__") else None)
        self.desc, self.unit, self.n = desc, unit, initial
        self.t0 = time.perf_counter()
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
