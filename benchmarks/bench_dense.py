"""Dense encoding speed: torch fp32 (the baseline and the default) vs ONNX Runtime fp32 vs ONNX int8,
the same 500 scifact documents, in this process.

With ``--ndcg`` it also prints each backend's scifact test nDCG@10 (full corpus; uses the
per-machine embedding cache, so only the first run on a machine pays for the full encodings).
Last line: ``default_speedup_vs_torch: <float>``.
"""

import argparse
import time

from _common import ROOT  # noqa: F401

from rrfbench import evaluate, load_dataset
from rrfbench.retrievers.dense import DEFAULT_BACKEND, DenseRetriever

BACKENDS = ("torch", "onnx", "onnx-int8")


def main(n_docs: int = 500, ndcg: bool = False, repeats: int = 3):
    ds = load_dataset("scifact")
    texts = ds.doc_texts()[:n_docs]
    rates = {}
    models = {b: DenseRetriever(backend=b, show_progress=False) for b in BACKENDS}
    for r in models.values():
        r.encode(texts[:32], "document")  # load + warm-up
    for _ in range(repeats):  # interleaved, best of `repeats`: fair under a changing load
        for backend, r in models.items():
            t0 = time.perf_counter()
            r.encode(texts, "document")
            rates[backend] = max(rates.get(backend, 0.0), n_docs / (time.perf_counter() - t0))
    for backend in BACKENDS:
        line = f"{backend:10s} {rates[backend]:7.1f} docs/s  ({rates[backend] / rates['torch']:.2f}x torch fp32)"
        if ndcg:
            run = models[backend].retrieve(ds, ds.split_queries("test"), 1000)
            line += f"   scifact test nDCG@10 {evaluate(run, ds.qrels('test'), ['nDCG@10'])['nDCG@10']:.4f}"
        print(line + ("   <- default" if backend == DEFAULT_BACKEND else ""), flush=True)
    print(f"int8_speedup_vs_torch: {rates['onnx-int8'] / rates['torch']:.2f}")
    print(f"default_speedup_vs_torch: {rates[DEFAULT_BACKEND] / rates['torch']:.2f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=500)
    ap.add_argument("--ndcg", action="store_true", help="also full-corpus scifact nDCG@10")
    a = ap.parse_args()
    main(a.docs, a.ndcg)
