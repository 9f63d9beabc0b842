"""Errors a user can act on.

Every error rrfbench raises for bad input is an :class:`InputError`: it names the file, the
line (when there is one) and the problem, so the CLI can print it on one line and exit 2.
"""

from __future__ import annotations

from pathlib import Path


class RrfbenchError(Exception):
    """Base class for errors caused by the user's input or environment (CLI exit code 2)."""


class InputError(RrfbenchError):
    """Bad input: ``<file>:<line>: <problem>`` (line omitted when the problem is file-wide)."""

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
