"""The studied production systems as presets: a registry, one module per system.

Each system module defines ``PRESET``, an instance of a :class:`~rrfbench.systems.presets.base.Preset`
subclass: the system's fusion, its knobs and grid, its export shapes and its fidelity list. The
registry is declared here, in one tuple, and nowhere else (nothing is registered as a side
effect of an import): **adding a fifth system means one file plus its name in**
:data:`PRESETS`; nothing else in rrfbench names a system.
"""

from __future__ import annotations

from pathlib import Path

from ...core.errors import InputError
from ...core.runs import read_text
from . import aimemory, nexusai, titan, zeus
from .base import ASSUMED, EXACT, NOT_MODELLED, Fidelity, Knob, Preset


def registry(presets) -> dict[str, Preset]:
    """Name -> preset, refusing two presets of one name."""
    found: dict[str, Preset] = {}
    for preset in presets:
        if preset.name in found:
            raise RuntimeError(f"two presets named {preset.name!r}")
        found[preset.name] = preset
    return found


PRESETS: dict[str, Preset] = registry((aimemory.PRESET, nexusai.PRESET, titan.PRESET, zeus.PRESET))


def get_preset(name: str) -> Preset:
    """The preset called ``name``; an unknown name lists the known ones."""
    if name not in PRESETS:
        raise InputError(f"--preset: unknown preset {name!r}; known: {', '.join(PRESETS)}")
    return PRESETS[name]


def export_formats() -> dict[str, Preset]:
    """Every system-specific export format and the preset that owns it."""
    return {fmt: p for p in PRESETS.values() for fmt in p.exports}


def read_prior(path) -> dict[str, float]:
    """A PageAuthority-style prior: ``docid<whitespace>multiplier`` per line (``#`` comments)."""
    path = Path(path)
    out = {}
    for lineno, line in enumerate(read_text(path).split("\n"), 1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2:
            raise InputError("expected 'docid multiplier'", path, lineno)
        try:
            out[parts[0]] = float(parts[1])
        except ValueError:
            raise InputError(f"multiplier {parts[1]!r} is not a number", path, lineno) from None
    return out


__all__ = ["PRESETS", "Preset", "Knob", "Fidelity", "EXACT", "ASSUMED", "NOT_MODELLED",
           "get_preset", "export_formats", "read_prior"]
