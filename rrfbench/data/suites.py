"""Suites: named lists of collections, each with the split to tune on and the split to evaluate on.

Suites live in ``datasets/suites.toml`` of the project (``$RRFBENCH_SUITES`` names another
file). A suite either lists its collections or names a ``language``, meaning every collection
of that language (as declared under ``[collections.<name>]``) that resolves on the search path;
the default suite, ``en``, is every English collection the catalog declares. A collection's
``tune`` and ``eval`` splits are optional: without them rrfbench's protocol rule picks them
(:func:`rrfbench.tuning.holdout.choose_protocol`); its ``note`` says what is unusual about it (reports
show it beside the collection).

A collection a suite names that is not on the search path is an error naming it and the search
path, unless the caller allows missing collections (``--allow-missing``): then the suite runs on
the ones present, and says which it left out.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import InputError
from ..core.runs import read_text
from ..core.store import project_root
from .datasets import available_datasets, search_path

DEFAULT_SUITE = "en"


@dataclass(frozen=True)
class Member:
    """One collection of a suite and the splits it declares (``None``: the protocol rule)."""

    name: str
    tune_split: str | None = None
    eval_split: str | None = None
    note: str = ""


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    members: tuple[Member, ...]
    left_out: tuple[str, ...] = ()      # declared but not on the search path (allowed missing)

    @property
    def names(self) -> list[str]:
        return [m.name for m in self.members]


def suites_file() -> Path:
    env = os.environ.get("RRFBENCH_SUITES")
    if env:
        return Path(env)
    root = project_root()
    return (root / "datasets" if root is not None else Path("datasets")) / "suites.toml"


def _read(path: Path) -> dict:
    try:
        data = tomllib.loads(read_text(path))
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"not valid TOML ({exc})", path) from None
    if not isinstance(data.get("suites"), dict):
        raise InputError("expected a [suites.<name>] table", path)
    return data


def load_suites(path: str | Path | None = None) -> dict[str, Suite]:
    """Every suite of the file, as declared (a ``language`` suite: every collection of that
    language in the catalog; :func:`get_suite` checks they are on the search path)."""
    path = Path(path) if path else suites_file()
    data = _read(path)
    collections = data.get("collections", {})
    out = {}
    for name, spec in data["suites"].items():
        if not isinstance(spec, dict):
            raise InputError(f"suite {name!r} must be a table", path)
        if "collections" in spec:
            names = list(spec["collections"])
        elif "language" in spec:
            names = [c for c, meta in collections.items()
                     if meta.get("language") == spec["language"]]
        else:
            raise InputError(f"suite {name!r} needs `collections` or `language`", path)
        members = tuple(Member(c, collections.get(c, {}).get("tune"),
                               collections.get(c, {}).get("eval"),
                               str(collections.get(c, {}).get("note", ""))) for c in names)
        out[name] = Suite(name, str(spec.get("description", "")), members)
    return out


def get_suite(name: str, path: str | Path | None = None, min_members: int = 2,
              allow_missing: bool = False) -> Suite:
    """The suite called ``name``. A collection it names that is not on the search path is one
    clear error naming it and the search path, unless ``allow_missing``: then the suite keeps
    the collections present (``left_out`` lists the others). Leave-one-collection-out needs
    ``min_members`` collections at least."""
    suites = load_suites(path)
    if name not in suites:
        raise InputError(f"--suite: unknown suite {name!r}; known: {', '.join(suites)} "
                         f"(in {path or suites_file()})")
    suite = suites[name]
    found = dict(available_datasets())
    where = ", ".join(map(str, search_path())) or "empty"
    missing = [m.name for m in suite.members if m.name not in found]
    if missing and not allow_missing:
        raise InputError(f"--suite {name}: not on the search path: {', '.join(missing)} (search "
                         f"path: {where}); pass --allow-missing to run on the "
                         f"{len(suite.members) - len(missing)} present")
    if missing:
        suite = Suite(suite.name, suite.description,
                      tuple(m for m in suite.members if m.name in found), tuple(missing))
    if len(suite.members) < min_members:
        raise InputError(f"--suite {name}: needs at least {min_members} collections on the "
                         f"search path; found {suite.names or 'none'} (search path: {where})")
    return suite
