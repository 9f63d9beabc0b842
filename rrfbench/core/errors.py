"""Errors and warnings a user can act on.

One rule everywhere: a problem caused by the user's input or arguments (a file, a line, an
option value) is an :class:`InputError`. The CLI prints it as one line ``error: ...`` and exits
with code 2; library callers get the same exception. Its message names the file and line
(``<file>:<line>: <problem>``) or the option and the values it accepts.

Warnings (:class:`RrfbenchWarning`) flag results that are computed but probably not what the
user meant: a run that answers none or few of the judged queries, a configuration validated on
one collection only. The CLI prints each as one line ``warning: ...``.
"""

from __future__ import annotations

from pathlib import Path


class RrfbenchError(Exception):
    """Base class for errors caused by the user's input or environment (CLI exit code 2)."""


class InputError(RrfbenchError, ValueError):
    """Bad input: ``<file>:<line>: <problem>`` (line omitted when the problem is file-wide).

    Also a :class:`ValueError`, so code that guards library calls with ``except ValueError``
    keeps working.
    """

    def __init__(self, problem: str, path: str | Path | None = None, line: int | None = None):
        self.problem = problem
        self.path = None if path is None else str(path)
        self.line = line
        where = ""
        if self.path is not None:
            where = self.path + (f":{line}" if line is not None else "") + ": "
        super().__init__(where + problem)


class MissingDependencyError(RrfbenchError):
    """An optional library or model is not installed; the message says what to install."""


class RrfbenchWarning(UserWarning):
    """A result that is computed but probably not what the user meant."""


class CoverageWarning(RrfbenchWarning):
    """A run answers no or few of the judged queries (wrong dataset, split, or an empty file)."""


class ValidationWarning(RrfbenchWarning):
    """A configuration is exported or applied beyond what it was validated on."""


def choice(option: str, value, allowed) -> InputError:
    """The error for an option value outside ``allowed``: names the option and the choices."""
    allowed = list(allowed)
    return InputError(f"{option}: {value!r} is not one of {', '.join(map(str, allowed))}")
