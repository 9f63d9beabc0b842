"""The reranking stage: a real bi-encoder, a locally built cross-encoder, and failing open."""

import pytest

from rrfbench.core.runs import Run
from rrfbench.retrievers.stages.rerank import BiEncoderReranker, CrossEncoderReranker, rerank


def test_bi_encoder_reorders_by_meaning(tiny_beir):
    from rrfbench import load_dataset

    ds = load_dataset(str(tiny_beir))
    fused = Run.from_dict({"q1": {"d3": 3.0, "d4": 2.0, "d1": 1.0}}, "fused")
    out = rerank(fused, ds, BiEncoderReranker(), top=3)
    assert out.degraded == [] and out.run.df.docid.tolist()[0] == "d1"  # "green apples"


def test_bi_encoder_scores_come_from_the_cached_corpus_embeddings(tiny_beir):
    import numpy as np

    from rrfbench import load_dataset
    from rrfbench.retrievers.dense import DenseRetriever

    ds = load_dataset(str(tiny_beir))
    r = BiEncoderReranker()
    docs = ["d4", "d1", "d3"]
    got = r.score_docs(ds, "green fruit", docs)
    enc = DenseRetriever(show_progress=False)
    emb = np.asarray(enc.corpus_embeddings(ds))
    rows = [ds.corpus.docid.tolist().index(d) for d in docs]
    want = emb[rows] @ enc.encode(["green fruit"], "query")[0]
    assert got == pytest.approx(want.tolist(), abs=1e-6)
    # a document scores the same whoever it is reranked with
    assert r.score_docs(ds, "green fruit", ["d1"])[0] == pytest.approx(got[1], abs=1e-7)


class Broken:
    model = "broken"

    def score(self, query, texts):
        raise MemoryError("out of memory")


def test_failing_reranker_keeps_the_fused_order(tiny_beir):
    from rrfbench import load_dataset

    ds = load_dataset(str(tiny_beir))
    fused = Run.from_dict({"q1": {"d3": 3.0, "d4": 2.0, "d1": 1.0}, "q2": {"d3": 1.0}}, "fused")
    out = rerank(fused, ds, Broken(), top=3)
    assert out.run.df[out.run.df.qid == "q1"].docid.tolist() == ["d3", "d4", "d1"]
    assert out.degraded == [{"qid": "q1", "retriever": "rerank", "reason": "error",
                             "message": "MemoryError: out of memory"}]  # q2: one candidate


def test_cross_encoder_wiring_with_a_locally_built_model(tmp_path, tiny_beir):
    """No cross-encoder weights can be installed here: build a tiny BERT classifier locally
    (random weights, the packaged MiniLM's tokenizer) to test the wiring, not the quality."""
    import shutil

    from transformers import BertConfig, BertForSequenceClassification

    from rrfbench import load_dataset
    from rrfbench.retrievers.dense import resolve_model_path

    src = resolve_model_path("all-MiniLM-L6-v2")
    path = tmp_path / "tiny-ce"
    path.mkdir()
    for f in ("vocab.txt", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        if (src / f).exists():
            shutil.copy(src / f, path / f)
    cfg = BertConfig(vocab_size=30522, hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                     intermediate_size=64, num_labels=1)
    BertForSequenceClassification(cfg).save_pretrained(path)
    ce = CrossEncoderReranker(str(path))
    scores = ce.score("green apples", ["red apples", "fast cars"])
    assert len(scores) == 2 and all(isinstance(s, float) for s in scores)
    ds = load_dataset(str(tiny_beir))
    out = rerank(Run.from_dict({"q1": {"d1": 2.0, "d2": 1.0}}, "f"), ds, ce, top=2)
    assert out.degraded == [] and set(out.run.df.docid) == {"d1", "d2"}
    with pytest.raises((OSError, ValueError)):
        CrossEncoderReranker(str(tmp_path / "missing"))
