"""The fusion of the search engines and vector databases teams use, as knob spaces.

Each module holds one engine's modes (:class:`~rrfbench.systems.engines.base.EngineSpace`, a
:class:`~rrfbench.systems.presets.base.Preset`): its formula as the engine runs it, its knobs and
defaults, its request or configuration shape, the version it was read from or run against, and a
fidelity list. The registry is declared here, in one tuple; an engine's export format is its
name (``rrfbench export BEST_JSON --format qdrant``).
"""

from __future__ import annotations

from ...core.errors import InputError
from . import (
    azure,
    elasticsearch,
    lancedb,
    milvus,
    mongodb,
    opensearch,
    pgvector,
    qdrant,
    sqlite,
    vertex,
    vespa,
    weaviate,
)
from .base import EngineSpace

MODULES = (elasticsearch, opensearch, qdrant, milvus, weaviate, lancedb, vespa, sqlite,
           pgvector, azure, mongodb, vertex)


def _registry() -> dict[str, EngineSpace]:
    found: dict[str, EngineSpace] = {}
    for m in MODULES:
        for space in m.SPACES:
            if space.name in found:
                raise RuntimeError(f"two engine spaces named {space.name!r}")
            found[space.name] = space
    return found


SPACES: dict[str, EngineSpace] = _registry()
ENGINES: tuple[str, ...] = tuple(dict.fromkeys(s.engine for s in SPACES.values()))


def get_space(name: str) -> EngineSpace:
    """The engine knob space called ``name`` (``qdrant-rrf``...); an unknown one lists them."""
    if name not in SPACES:
        raise InputError(f"unknown engine mode {name!r}; known: {', '.join(SPACES)}")
    return SPACES[name]


def spaces_of(engine: str) -> list[EngineSpace]:
    """Every mode of ``engine``; an unknown engine lists the engines."""
    out = [s for s in SPACES.values() if s.engine == engine]
    if not out:
        raise InputError(f"unknown engine {engine!r}; engines: {', '.join(ENGINES)}")
    return out


__all__ = ["SPACES", "ENGINES", "EngineSpace", "get_space", "spaces_of"]
