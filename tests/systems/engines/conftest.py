"""What the live engine round trips share: the 400-document cranfield cut with its embeddings."""

from __future__ import annotations

import numpy as np
import pytest

N_QUERIES = 25   # queries each live round trip checks


@pytest.fixture(scope="session")
def cut(mini_beir):
    """The 400-document cranfield cut: docids, texts, unit embeddings, and N_QUERIES queries
    with their texts and embeddings (the dense model's, from this machine's cache)."""
    from rrfbench import load_dataset
    from rrfbench.retrievers import make_retriever

    ds = load_dataset(str(mini_beir))
    r = make_retriever("dense", show_progress=False)
    emb = np.asarray(r.corpus_embeddings(ds), dtype=np.float32)
    q = ds.split_queries("test").head(N_QUERIES)
    qemb = np.asarray(r.query_embeddings(list(q.text)), dtype=np.float32)
    texts = [f"{t} {x}".strip() for t, x in zip(ds.corpus.title, ds.corpus.text, strict=True)]
    return {"docids": list(ds.corpus.docid), "texts": texts, "emb": emb,
            "qids": list(q.qid), "qtexts": list(q.text), "qemb": qemb}
