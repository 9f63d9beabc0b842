"""Every fusion rrfbench can tune within its own knobs, by name: the studied systems
(:mod:`rrfbench.systems.presets`) and the engines' fusion modes (:mod:`rrfbench.systems.engines`). Both are
:class:`~rrfbench.systems.presets.base.Preset` objects; this module is the one place that looks a name
up in either registry and knows every system-specific export format."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Sequence
from contextvars import ContextVar

from ..core.errors import InputError
from . import engines, presets
from .presets.base import Preset

# A team's own streams for the systems' roles (``--stream role=spec``), while a command runs.
_STREAMS: ContextVar[tuple[str, ...]] = ContextVar("rrfbench_team_streams", default=())


def get_system(name: str) -> Preset:
    """The studied system or engine mode called ``name`` (with the team's streams in its roles
    while :func:`using_streams` is active); an unknown name lists both."""
    if name in presets.PRESETS:
        return with_streams(presets.PRESETS[name], _STREAMS.get())
    if name in engines.SPACES:
        return with_streams(engines.SPACES[name], _STREAMS.get())
    raise InputError(f"--preset: unknown preset {name!r}; known: {', '.join(presets.PRESETS)}; "
                     f"engine modes: {', '.join(engines.SPACES)}")


def stream_roles(p: Preset) -> dict[str, str]:
    """``--stream`` names -> ``p``'s role: its own role names, and ``dense`` / ``keyword`` for
    the one role whose stream is (or is not) a dense retriever, where there is one of each."""
    roles = dict(p.streams)
    out = {r: r for r in roles}
    dense = [r for r, spec in roles.items() if spec.split(":")[0].split(";")[0] == "dense"]
    other = [r for r in roles if r not in dense]
    if len(dense) == 1:
        out.setdefault("dense", dense[0])
    if len(other) == 1:
        out.setdefault("keyword", other[0])
    return out


def with_streams(p: Preset, streams: Sequence[str]) -> Preset:
    """``p`` with the team's streams (``role=spec``, e.g. ``keyword=run:fts.trec``,
    ``dense=vectors:emb.parquet``) in its roles: a copy, the registry's own untouched. A role
    the system does not have, or an entry without ``=``: one line naming it."""
    if not streams:
        return p
    names = stream_roles(p)
    new = dict(p.streams)
    for entry in streams:
        role, eq, spec = entry.partition("=")
        if not eq or not spec.strip():
            raise InputError(f"--stream: {entry!r} is not role=spec (e.g. keyword=run:fts.trec)")
        if role.strip() not in names:
            raise InputError(f"--stream: {p.name} has no role {role.strip()!r}; its roles: "
                             f"{', '.join(names)}")
        new[names[role.strip()]] = spec.strip()
    out = copy.copy(p)
    out.streams = new
    return out


@contextlib.contextmanager
def using_streams(streams: Sequence[str] | None):
    """Every system :func:`get_system` returns takes the team's ``streams`` in its roles."""
    token = _STREAMS.set(tuple(streams or ()))
    try:
        yield
    finally:
        _STREAMS.reset(token)


def team_streams() -> tuple[str, ...]:
    """The ``--stream`` entries in force (empty: rrfbench's own streams)."""
    return _STREAMS.get()


def export_formats() -> dict[str, Preset]:
    """Every system-specific export format and a preset or engine mode that owns it (an
    engine's format accepts a result of any of its modes)."""
    out = {fmt: p for p in presets.PRESETS.values() for fmt in p.exports}
    for space in engines.SPACES.values():
        for fmt in space.exports:
            out.setdefault(fmt, space)
    return out


def owners(fmt: str) -> set[str]:
    """The presets and engine modes whose results export as ``fmt``."""
    return ({p.name for p in presets.PRESETS.values() if fmt in p.exports}
            | {s.name for s in engines.SPACES.values() if fmt in s.exports})
