"""Retrievers behind one interface; :func:`make_retriever` builds one from a spec string.

A spec is ``kind[:variant]``. Every variant is checked: an unknown one is refused with the list
of those that exist, never silently replaced by the default.

=============  =========================================================================
kind           variants
=============  =========================================================================
``bm25``       (none)
``fts5``       ``or_tokens`` (default), ``phrase``, ``and_tokens``
``dense``      ``onnx-int8`` (default), ``onnx-int8-vnni``, ``onnx``, ``torch``
``rank_bm25``  ``regex`` (default), ``jieba``
=============  =========================================================================
"""

from __future__ import annotations

from ..errors import InputError
from .base import RunResult, cached_run, lib_versions, run_path

# kind -> (default variant or None, allowed variants)
VARIANTS: dict[str, tuple[str | None, tuple[str, ...]]] = {
    "bm25": (None, ()),
    "fts5": ("or_tokens", ("or_tokens", "phrase", "and_tokens")),
    "dense": ("onnx-int8", ("onnx-int8", "onnx-int8-vnni", "onnx", "torch")),
    "rank_bm25": ("regex", ("regex", "jieba")),
}
KINDS = tuple(VARIANTS)
_ALIASES = {"rank-bm25": "rank_bm25"}


def parse_spec(spec: str) -> tuple[str, str | None]:
    """``"fts5:phrase"`` -> ``("fts5", "phrase")``; raises :class:`InputError` for anything
    that is not a known kind with a known variant."""
    if not isinstance(spec, str) or not spec.strip():
        raise InputError(f"retriever: {spec!r} is empty; known: {', '.join(KINDS)}")
    kind, sep, variant = spec.strip().partition(":")
    kind = _ALIASES.get(kind, kind)
    if kind not in VARIANTS:
        raise InputError(f"retriever: unknown kind {kind!r} in {spec!r}; known: "
                         f"{', '.join(KINDS)} (with variants, e.g. fts5:phrase, "
                         "dense:torch, rank_bm25:jieba)")
    default, allowed = VARIANTS[kind]
    if not sep:
        return kind, default
    if variant not in allowed:
        have = ", ".join(f"{kind}:{v}" for v in allowed) if allowed else "none"
        raise InputError(f"retriever: {kind!r} has no variant {variant!r} (in {spec!r}); "
                         f"variants: {have}")
    return kind, variant


def make_retriever(spec: str, **options):
    """A retriever from ``kind[:variant]`` plus keyword options for its constructor."""
    kind, variant = parse_spec(spec)
    if kind == "bm25":
        from .bm25 import BM25Retriever

        return BM25Retriever(**options)
    if kind == "fts5":
        from .fts5 import FTS5Retriever

        return FTS5Retriever(query_builder=variant, **options)
    if kind == "dense":
        from .dense import DenseRetriever

        return DenseRetriever(**{"backend": variant, **options})
    from .rank_bm25 import RankBM25Retriever

    return RankBM25Retriever(tokenizer=variant, **options)


def retriever_name(spec: str) -> str:
    """The run name (file stem) a spec produces, without building the retriever."""
    kind, variant = parse_spec(spec)
    default = VARIANTS[kind][0]
    if variant is None or variant == default or kind == "dense":
        return kind
    return f"{kind}-{variant}"


__all__ = ["make_retriever", "retriever_name", "parse_spec", "cached_run", "RunResult",
           "run_path", "lib_versions", "KINDS", "VARIANTS"]
