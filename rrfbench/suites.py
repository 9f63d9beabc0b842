"""Suites: named lists of collections, each with the split to tune on and the split to evaluate on.

Suites live in ``datasets/suites.toml`` of the project (``$RRFBENCH_SUITES`` names another
file). A suite either lists its collections or names a ``language``, meaning every collection
of that language (as declared under ``[collections.<name>]``) that resolves on the search path;
the default suite, ``en``, is every English collection found. A collection's ``tune`` and
``eval`` splits are optional: without them rrfbench's protocol rule picks them
(:func:`rrfbench.tuning.choose_protocol`).
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass
from pathlib import Path

from .datasets import available_datasets, search_path
from .errors import InputError
from .runs import read_text
from .store import project_root

DEFAULT_SUITE = "en"


@dataclass(frozen=True)
class Member:
    """One collection of a suite and the splits it declares (``None``: the protocol rule)."""

    name: str
    tune_split: str | None = None
    eval_split: str | None = None


@dataclass(frozen=True)
class Suite:
    name: str
    description: str
    members: tuple[Member, ...]

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
    """Every suite of the file, resolved against the datasets on the search path."""
    path = Path(path) if path else suites_file()
    data = _read(path)
    collections = data.get("collections", {})
    found = dict(available_datasets())
    out = {}
    for name, spec in data["suites"].items():
        if not isinstance(spec, dict):
            raise InputError(f"suite {name!r} must be a table", path)
        if "collections" in spec:
            names = list(spec["collections"])
        elif "language" in spec:
            names = [c for c, meta in collections.items()
                     if meta.get("language") == spec["language"] and c in found]
        else:
            raise InputError(f"suite {name!r} needs `collections` or `language`", path)
        members = tuple(Member(c, collections.get(c, {}).get("tune"),
                               collections.get(c, {}).get("eval")) for c in names)
        out[name] = Suite(name, str(spec.get("description", "")), members)
    return out


def get_suite(name: str, path: str | Path | None = None, min_members: int = 2) -> Suite:
    """The suite called ``name``; every collection must resolve, else one clear error
    (leave-one-collection-out needs ``min_members`` = 2 collections at least)."""
    suites = load_suites(path)
    if name not in suites:
        raise InputError(f"--suite: unknown suite {name!r}; known: {', '.join(suites)} "
                         f"(in {path or suites_file()})")
    suite = suites[name]
    if len(suite.members) < min_members:
        raise InputError(f"--suite {name}: needs at least {min_members} collections on the "
                         f"search path; found {suite.names or 'none'} (search "
                         f"path: {', '.join(map(str, search_path()))})")
    missing = [m.name for m in suite.members if m.name not in dict(available_datasets())]
    if missing:
        raise InputError(f"--suite {name}: not on the search path: {', '.join(missing)} "
                         f"(search path: {', '.join(map(str, search_path()))})")
    return suite
