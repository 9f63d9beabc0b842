"""How the command line ends: an exit code and, on failure, one line ``error: ...``.

2 for the user's input (an :class:`~rrfbench.core.errors.RrfbenchError`, typer's usage errors, a file
that cannot be read or written), 1 for anything else; ``--debug`` before the command shows the
traceback instead. Warnings of rrfbench print one line ``warning: ...``; other libraries'
warnings are silenced unless ``--debug``.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable

import typer

from .errors import RrfbenchError, RrfbenchWarning


def run_app(app: typer.Typer, argv: list[str], warn: Callable[[str], None]) -> int:
    """Run ``app`` on ``argv``; its exit code (see the module docstring)."""
    debug = "--debug" in argv[: next((i for i, a in enumerate(argv) if not a.startswith("-")),
                                      len(argv))]
    with warnings.catch_warnings():
        if not debug:
            warnings.simplefilter("ignore")  # libraries' deprecation chatter
        warnings.simplefilter("always", RrfbenchWarning)
        warnings.showwarning = lambda msg, cat, *_a, **_k: (
            warn(str(msg)) if issubclass(cat, RrfbenchWarning) else None)
        return _run(app, argv, debug)


def _run(app: typer.Typer, argv: list[str], debug: bool) -> int:
    try:
        rv = app(args=argv, prog_name="rrfbench", standalone_mode=False)
        return rv if isinstance(rv, int) else 0
    except typer.Exit as exc:
        return int(exc.exit_code)
    except (typer.Abort, KeyboardInterrupt):
        code, msg = 1, "aborted"
    except Exception as exc:
        if debug:
            raise
        code, msg = failure(exc)
    print(f"error: {msg}", file=sys.stderr)
    return code


def failure(exc: Exception) -> tuple[int, str]:
    """(exit code, one-line message) for an exception that ended a command."""
    if isinstance(exc, RrfbenchError):
        return 2, " ".join(str(exc).split())
    if isinstance(exc, typer.TyperException):  # usage: unknown option, bad value, missing arg
        ctx = getattr(exc, "ctx", None)
        hint = f" (see '{ctx.command_path} --help')" if ctx is not None else ""
        return int(getattr(exc, "exit_code", 2) or 2), " ".join(exc.format_message().split()) + hint
    if isinstance(exc, OSError):  # e.g. an output path that cannot be written
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        return (2 if where else 1), f"{where}{exc.strerror or exc}"
    return 1, (f"internal error ({type(exc).__name__}: {' '.join(str(exc).split())[:300]}); "
               "rerun with --debug for the traceback")
