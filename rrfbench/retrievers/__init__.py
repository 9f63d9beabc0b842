"""Retrievers behind one interface; :func:`make_retriever` builds one from a spec string.

A spec is ``kind[:variant][;key=value]...``. Every variant and option is checked: an unknown one
is refused with the list of those that exist, never silently replaced by the default.

=============  ===========================================  =======================================
kind           variants                                     options
=============  ===========================================  =======================================
``bm25``       ``en`` (default: English stopwords,          ``k1``, ``b``
               Snowball), ``jieba`` (Chinese segmentation)
``fts5``       ``or_tokens`` (default), ``phrase``,         ``granularity=doc|span``, ``span``
               ``and_tokens``, ``titan`` (titan's builder), (sentences or ``words`` N),
               ``jieba``, ``trigram`` (FTS5's trigram       ``overlap``
               tokenizer)
``dense``      ``torch`` (fp32, capped: default), ``onnx``,
               ``onnx-int8``, ``onnx-int8-vnni``, ``ann`` (FAISS HNSW
               over the default backend's embeddings)       ``model`` (a local folder, or
                                                            ``use-multilingual-v3``);
               (none, with ``endpoint=URL``: an OpenAI-     ``endpoint``, ``model``,
               compatible embeddings server, .endpoint)     ``query_model``, ``batch``,
                                                            ``inflight``, ``retries``,
                                                            ``key_env``, ``name``, ``timeout``
``rank_bm25``  ``regex`` (default), ``jieba``
``entity``     (none)                                       ``min_len``
``graph``      (none)                                       ``seed`` (a spec), ``hops``,
                                                            ``graph=dense|bm25``, ``neighbours``,
                                                            ``seed_limit``, ``direction=both|out``
``run``        ``PATH``: a TREC run file of the team's own      ``name``, ``floor`` (its lowest
               (:mod:`.external`)                           possible score)
``vectors``    ``PATH``: the team's embeddings (parquet     ``name``
               id/vector/role, or ``.npy`` + ``.ids.txt``)
=============  ===========================================  =======================================

``stages`` holds what runs after retrieval (a rerank, fail-open fallbacks).

May import: ``core``, ``data``, ``fusion``, ``results``.
"""

from __future__ import annotations

from ..core.errors import InputError
from .base import RunResult, cached_run, lib_versions, run_path
from .bm25 import BM25Retriever
from .dense import DEFAULT_BACKEND, DenseRetriever
from .endpoint import EndpointRetriever
from .entity import EntityRetriever
from .external import RunFileRetriever, VectorsRetriever
from .fts5 import FTS5Retriever
from .graph import GraphRetriever
from .rank_bm25 import RankBM25Retriever

# dense;endpoint=URL;model=NAME: an OpenAI-compatible embeddings endpoint (.endpoint)
ENDPOINT_OPTIONS = ("endpoint", "query_model", "batch", "inflight", "retries", "key_env", "name",
                    "timeout")
# kind -> (default variant or None, allowed variants, allowed options)
VARIANTS: dict[str, tuple[str | None, tuple[str, ...], tuple[str, ...]]] = {
    "bm25": ("en", ("en", "jieba"), ("k1", "b")),
    "fts5": ("or_tokens", ("or_tokens", "phrase", "and_tokens", "titan", "jieba", "trigram"),
             ("granularity", "span", "words", "overlap")),
    "dense": (DEFAULT_BACKEND, ("torch", "onnx", "onnx-int8", "onnx-int8-vnni", "ann"),
              ("model",) + ENDPOINT_OPTIONS),
    "rank_bm25": ("regex", ("regex", "jieba"), ()),
    "entity": (None, (), ("min_len",)),
    "graph": (None, (), ("seed", "hops", "graph", "neighbours", "seed_limit", "direction")),
    "run": (None, (), ("name", "floor")),
    "vectors": (None, (), ("name",)),
}
PATH_KINDS = ("run", "vectors")  # their variant is a file: run:PATH, vectors:PATH
KINDS = tuple(VARIANTS)
_ALIASES = {"rank-bm25": "rank_bm25"}


def parse_spec(spec: str) -> tuple[str, str | None, dict[str, str]]:
    """``"fts5:titan;granularity=span"`` -> ``("fts5", "titan", {"granularity": "span"})``;
    raises :class:`InputError` for anything that is not a known kind, variant or option."""
    if not isinstance(spec, str) or not spec.strip():
        raise InputError(f"retriever: {spec!r} is empty; known: {', '.join(KINDS)}")
    head, *opts = spec.strip().split(";")
    kind, sep, variant = head.partition(":")
    kind = _ALIASES.get(kind, kind)
    if kind not in VARIANTS:
        raise InputError(f"retriever: unknown kind {kind!r} in {spec!r}; known: "
                         f"{', '.join(KINDS)} (with variants, e.g. fts5:phrase, "
                         "dense:torch, rank_bm25:jieba)")
    default, allowed, options = VARIANTS[kind]
    if kind in PATH_KINDS and not variant.strip():
        raise InputError(f"retriever: {kind!r} needs a file: {kind}:PATH (in {spec!r})")
    if sep and variant not in allowed and kind not in PATH_KINDS:
        have = ", ".join(f"{kind}:{v}" for v in allowed) if allowed else "none"
        raise InputError(f"retriever: {kind!r} has no variant {variant!r} (in {spec!r}); "
                         f"variants: {have}")
    parsed = {}
    for opt in opts:
        key, eq, value = opt.partition("=")
        key = key.strip()
        if not eq or key not in options:
            raise InputError(f"retriever: {kind!r} has no option {opt!r} (in {spec!r}); "
                             f"options: {', '.join(options) or 'none'}")
        parsed[key] = value.strip()
    return kind, (variant if sep else default), parsed


def make_retriever(spec: str, **options):
    """A retriever from a spec (see the module docstring) plus keyword options."""
    kind, variant, opts = parse_spec(spec)
    if kind == "bm25":
        return BM25Retriever(tokenizer=variant, **_numbers(opts, spec), **options)
    if kind == "fts5":
        return FTS5Retriever(variant=variant, **opts, **options)
    if kind == "dense":
        if "endpoint" in opts:
            if spec.split(";")[0].strip() != "dense":
                raise InputError(f"retriever: endpoint= takes no backend variant (in {spec!r}): "
                                 "dense;endpoint=URL;model=NAME")
            return EndpointRetriever(**opts)
        extra = sorted(set(opts) & set(ENDPOINT_OPTIONS))
        if extra:
            raise InputError(f"retriever: {', '.join(extra)} go with endpoint=URL (in {spec!r})")
        return DenseRetriever(**{"backend": variant, **opts, **options})
    if kind == "rank_bm25":
        return RankBM25Retriever(tokenizer=variant, **options)
    if kind == "entity":
        return EntityRetriever(**_numbers(opts, spec), **options)
    if kind == "run":
        if "floor" in opts:
            _numbers({"floor": opts["floor"]}, spec)
        return RunFileRetriever(variant.strip(), **opts)
    if kind == "vectors":
        return VectorsRetriever(variant.strip(), **opts)
    for seed in opts.get("seed", "bm25").split("+"):
        parse_spec(seed)  # every seed spec checked before any work starts
    return GraphRetriever(**opts, **options, make_seed=make_retriever)


def _numbers(opts: dict, spec: str) -> dict:
    out = {}
    for k, v in opts.items():
        try:
            out[k] = float(v) if "." in v else int(v)
        except ValueError:
            raise InputError(f"retriever: option {k}={v!r} in {spec!r} is not a number") from None
    return out


def retriever_name(spec: str) -> str:
    """The run name (file stem) a spec produces, without building the retriever."""
    return make_retriever(spec).name


__all__ = ["make_retriever", "retriever_name", "parse_spec", "cached_run", "RunResult",
           "run_path", "lib_versions", "KINDS", "VARIANTS", "PATH_KINDS"]
