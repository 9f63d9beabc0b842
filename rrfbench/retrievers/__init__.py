"""Retrievers behind one interface; :func:`make_retriever` builds one from a spec string.

Specs: ``bm25``; ``fts5`` (= ``fts5:or_tokens``), ``fts5:phrase``, ``fts5:and_tokens``;
``dense`` (default backend), ``dense:torch``, ``dense:onnx``, ``dense:onnx-int8``;
``rank_bm25`` (= ``rank_bm25:regex``), ``rank_bm25:jieba``.
"""

from __future__ import annotations

from ..errors import InputError
from .base import RunResult, cached_run, lib_versions, results_dir, run_path

KINDS = ("bm25", "fts5", "dense", "rank_bm25")


def make_retriever(spec: str, **options):
    """A retriever from ``kind[:variant]`` plus keyword options for its constructor."""
    kind, _, variant = spec.partition(":")
    if kind == "bm25":
        from .bm25 import BM25Retriever

        return BM25Retriever(**options)
    if kind == "fts5":
        from .fts5 import FTS5Retriever

        return FTS5Retriever(query_builder=variant or "or_tokens", **options)
    if kind == "dense":
        from .dense import DenseRetriever

        if variant:
            options["backend"] = variant
        return DenseRetriever(**options)
    if kind in ("rank_bm25", "rank-bm25"):
        from .rank_bm25 import RankBM25Retriever

        return RankBM25Retriever(tokenizer=variant or "regex", **options)
    raise InputError(f"unknown retriever {spec!r}; known: {', '.join(KINDS)} "
                     "(with variants such as fts5:phrase, dense:onnx-int8, rank_bm25:jieba)")


def retriever_name(spec: str) -> str:
    """The run name (file stem) a spec produces, without building the retriever."""
    kind, _, variant = spec.partition(":")
    defaults = {"fts5": "or_tokens", "rank_bm25": "regex"}
    if not variant or variant == defaults.get(kind) or kind == "dense":
        return kind
    return f"{kind}-{variant}"


__all__ = ["make_retriever", "retriever_name", "cached_run", "RunResult", "run_path",
           "results_dir", "lib_versions", "KINDS"]
