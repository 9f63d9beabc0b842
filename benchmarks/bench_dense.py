"""Dense encoding speed: torch fp32 vs ONNX Runtime fp32 vs ONNX int8, same 500 scifact docs.

Also prints each backend's scifact test nDCG@10 (full corpus; uses the per-machine embedding
cache, so only the first run on a machine pays for three full encodings). Last line:
``int8_speedup_vs_torch: <float>``.
"""

import time

from _common import ROOT  # noqa: F401

from rrfbench import evaluate, load_dataset
from rrfbench.retrievers.dense import DenseRetriever


def main(n_docs: int = 500):
    ds = load_dataset("scifact")
    texts = ds.doc_texts()[:n_docs]
    rates, ndcg = {}, {}
    for backend in ("torch", "onnx", "onnx-int8"):
        r = DenseRetriever(backend=backend, show_progress=False)
        r.encode(texts[:32], "document")  # load + warm-up
        t0 = time.perf_counter()
        r.encode(texts, "document")
        rates[backend] = n_docs / (time.perf_counter() - t0)
        run = r.retrieve(ds, ds.split_queries("test"), 1000)
        ndcg[backend] = evaluate(run, ds.qrels("test"), ["nDCG@10"])["nDCG@10"]
        print(f"{backend:10s} {rates[backend]:7.1f} docs/s   scifact test nDCG@10 {ndcg[backend]:.4f} "
              f"(delta vs torch {ndcg[backend] - ndcg.get('torch', ndcg[backend]):+.4f})")
    print(f"int8_speedup_vs_torch: {rates['onnx-int8'] / rates['torch']:.2f}")


if __name__ == "__main__":
    main()
