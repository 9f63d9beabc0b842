"""Every fusion rrfbench can tune within its own knobs, by name: the studied systems
(:mod:`rrfbench.systems.presets`) and the engines' fusion modes (:mod:`rrfbench.systems.engines`). Both are
:class:`~rrfbench.systems.presets.base.Preset` objects; this module is the one place that looks a name
up in either registry and knows every system-specific export format."""

from __future__ import annotations

from ..core.errors import InputError
from . import engines, presets
from .presets.base import Preset


def get_system(name: str) -> Preset:
    """The studied system or engine mode called ``name``; an unknown name lists both."""
    if name in presets.PRESETS:
        return presets.PRESETS[name]
    if name in engines.SPACES:
        return engines.SPACES[name]
    raise InputError(f"--preset: unknown preset {name!r}; known: {', '.join(presets.PRESETS)}; "
                     f"engine modes: {', '.join(engines.SPACES)}")


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
