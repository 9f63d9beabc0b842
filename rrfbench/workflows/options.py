"""Option values of the command line, parsed and checked in one place (shared by the CLI and the
workflows): comma lists of numbers and depths, per-run values, retriever specs with the
``--granularity``/``--seed``/``--hops`` shorthands, and the rules that tie options together.
Every error names the option and is an :class:`~rrfbench.core.errors.InputError` (one line, exit 2).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core.errors import InputError, choice
from ..retrievers import parse_spec
from ..tuning.selection import DEFAULT_RULE, OBJECTIVES, RULES


def parse_numbers(option: str, text: str) -> list[float]:
    """``"60,20"`` -> ``[60.0, 20.0]``; the error names ``option``."""
    try:
        vals = [float(x) for x in text.replace(" ", "").split(",") if x]
    except ValueError:
        raise InputError(f"{option}: expected comma-separated numbers, got {text!r}") from None
    if not vals:
        raise InputError(f"{option}: expected at least one number, got {text!r}")
    return vals


def parse_depths(option: str, text: str) -> list[int | None]:
    """``"20,all"`` -> ``[20, None]`` (``all``/``none``/``0``: the whole run)."""
    out = []
    for x in text.replace(" ", "").split(","):
        if x.lower() in ("", "all", "none", "0"):
            out.append(None)
            continue
        try:
            v = int(x)
        except ValueError:
            raise InputError(f"{option}: {x!r} is not a whole number or 'all' (in {text!r})") from None
        if v < 1:
            raise InputError(f"{option}: {v} must be >= 1 (or 'all')")
        out.append(v)
    return out


def per_run(option: str, values: list, n: int):
    """One value for every run, or one per run."""
    if len(values) == 1:
        return values[0]
    if len(values) != n:
        raise InputError(f"{option}: expected one value or {n} (one per run), got {len(values)}")
    return values


def check_specs(specs: Sequence[str]) -> list[str]:
    """Every retriever spec parsed before any work starts."""
    for s in specs:
        parse_spec(s)
    return list(specs)


def with_options(specs: Sequence[str], granularity: str | None = None, seed: str | None = None,
                 hops: int | None = None) -> list[str]:
    """Apply ``--granularity`` to fts5 specs and ``--seed``/``--hops`` to graph specs."""
    out, used = [], set()
    for spec in specs:
        kind = parse_spec(spec)[0]
        if kind == "fts5" and granularity:
            if granularity not in ("doc", "span"):
                raise choice("--granularity", granularity, ("doc", "span"))
            spec += f";granularity={granularity}"
            used.add("--granularity")
        if kind == "graph":
            if seed:
                parse_spec(seed)
                spec += f";seed={seed}"
                used.add("--seed")
            if hops is not None:
                if hops < 1:
                    raise InputError(f"--hops: {hops} must be >= 1")
                spec += f";hops={hops}"
                used.add("--hops")
        out.append(spec)
    for opt, val in (("--granularity", granularity), ("--seed", seed), ("--hops", hops)):
        if val is not None and opt not in used:
            raise InputError(f"{opt}: no retriever takes it (give -r fts5 or -r graph)")
    return check_specs(out)


def check_suite_options(suite, objective: str = "macro", rule: str = DEFAULT_RULE,
                        splits_given=False) -> None:
    """``objective``/``rule`` choose across a suite's collections; a suite's splits are its own."""
    if objective not in OBJECTIVES:
        raise choice("--objective", objective, OBJECTIVES)
    if rule not in RULES:
        raise choice("--rule", rule, RULES)
    if suite and splits_given:
        raise InputError("--tune-split/--eval-split/--folds: a suite's splits come from "
                         "datasets/suites.toml")
    if not suite and (objective != "macro" or rule != DEFAULT_RULE):
        raise InputError("--objective/--rule choose across collections: use them with --suite")


def one_of(dataset, suite) -> None:
    """A command takes a DATASET or ``--suite NAME``, not both, not neither."""
    if bool(dataset) == bool(suite):
        raise InputError("give a DATASET or --suite NAME (one of the two)")
