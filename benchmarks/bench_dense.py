"""Dense encoding speed: the default encoder (torch, exact matrix products, ATen at AVX2: the
same bits on every CPU) against the fastest unconstrained encoders on this machine, the same
scifact documents, each in its own process so no cap leaks between them:

* ``torch uncapped``: sentence-transformers' own forward pass, torch's kernels at this CPU's
  best level, MKL free to pick its branch (the baseline the target names);
* ``onnx fp32``: ONNX Runtime (CPU-dependent kernels);
* ``torch default``: rrfbench's default, in this process.

    python benchmarks/bench_dense.py [--docs 120] [--repeats 3]

Last line: ``default_vs_fastest: <ratio>`` (issue 55's target: at least 0.45).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from _common import ROOT

WORKER = r"""
import json, sys, time
mode, n_docs, repeats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
if mode == "uncapped":
    import torch  # before rrfbench: its caps are not set in this process's environment
    from sentence_transformers import SentenceTransformer
from rrfbench import load_dataset
from rrfbench.retrievers.dense import DenseRetriever, _forward, batch_order, resolve_model_path
texts = load_dataset("scifact").doc_texts()[:n_docs]
if mode == "uncapped":
    model = SentenceTransformer(str(resolve_model_path("all-MiniLM-L6-v2")), device="cpu")
    def encode(batch):
        for rows in batch_order(batch, 32):
            _forward(model, [batch[i] for i in rows], None)
    label = "torch " + torch.backends.cpu.get_cpu_capability()
else:
    r = DenseRetriever(backend=mode, show_progress=False)
    encode = lambda batch: r.encode(batch, "document")
    label = r.params()["backend"]
encode(texts[:32])  # load and warm up
best = 0.0
for _ in range(repeats):
    t0 = time.perf_counter()
    encode(texts)
    best = max(best, n_docs / (time.perf_counter() - t0))
print(json.dumps({"label": label, "docs_per_s": best}))
"""


def best_capability() -> str:
    """torch's highest dispatch level on this CPU (what an uncapped torch runs)."""
    flags = open("/proc/cpuinfo").read() if os.path.exists("/proc/cpuinfo") else ""
    return "avx512" if " avx512f" in flags and " avx512bw" in flags else \
        "avx2" if " avx2" in flags else "default"


def run(mode: str, n_docs: int, repeats: int) -> dict:
    env = dict(os.environ)
    if mode == "uncapped":
        env.update(ATEN_CPU_CAPABILITY=best_capability(), ONEDNN_MAX_CPU_ISA="ALL")
    p = subprocess.run([sys.executable, "-c", WORKER, mode, str(n_docs), str(repeats)],
                       capture_output=True, text=True, cwd=ROOT, env=env)
    if p.returncode != 0:
        raise SystemExit(f"{mode}: {p.stderr[-2000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def main(n_docs: int, repeats: int) -> None:
    rates = {mode: run(mode, n_docs, repeats) for mode in ("torch", "uncapped", "onnx")}
    fastest = max(("uncapped", "onnx"), key=lambda m: rates[m]["docs_per_s"])
    for mode, r in rates.items():
        print(f"{mode:9s} {r['docs_per_s']:6.1f} documents/s  {r['label']}"
              + ("   <- default" if mode == "torch" else "")
              + ("   <- fastest unconstrained" if mode == fastest else ""), flush=True)
    print(f"default_vs_fastest: {rates['torch']['docs_per_s'] / rates[fastest]['docs_per_s']:.2f}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--docs", type=int, default=120)
    ap.add_argument("--repeats", type=int, default=3)
    a = ap.parse_args()
    main(a.docs, a.repeats)
