"""Does the dense encoder give the same bits on other x86-64 CPUs? Run it here and under
``qemu-x86_64`` emulating CPUs without AVX-512 (an Intel Haswell, AMD EPYC Rome and Milan: each
library then takes its AVX2 code, as on such a machine), with rrfbench's caps
(:data:`rrfbench.core.portable_math.PORTABLE_MATH_ENV`, the ``torch`` backend's) and without them, and compare
digests.

Three checks per CPU: the dense scores (:func:`rrfbench.retrievers.vectors.exact_cosines` of
fixed random unit vectors, beside the float32 product BLAS computes in its own order), torch's primitives as the encoder uses them (linear layers, GELU, layer
norm, attention, softmax on fixed random inputs) and the ``torch`` encoder itself on a few fixed
texts (scifact's first documents, cut short: under emulation a document costs ~30 s). The
primitives are the encoder's since issue 55: exact products (any BLAS kernel, the same bits)
and torch's own elementwise kernels (capped at AVX2). The
emulated CPUs need Debian's ``qemu-user`` (``apt-get install qemu-user``); without it only this
CPU is run. NumPy's AVX2 sort crashes under qemu 7.2, so the emulated processes run NumPy at
its baseline (``NPY_DISABLE_CPU_FEATURES=X86_V3``: NumPy does no arithmetic of the encoder's,
but its sort orders a call's texts into batches, so a longer text list's bits can follow it:
``benchmarks/encoder_simd_levels.py``).

    python benchmarks/encoder_portability.py [--texts N] [--cpu Haswell ...]  # ~20 min for all

Prints a digest per CPU, setting and check; exit 1 if the capped digests differ across CPUs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

import _common  # noqa: F401  (data path, offline hub)

ROOT = Path(__file__).resolve().parents[1]
CPUS = ("Haswell", "EPYC-Rome", "EPYC-Milan")

WORKER = r"""
import hashlib, json, os, sys
import torch
g = torch.Generator().manual_seed(0)
x = torch.randn(6, 128, 384, generator=g); w = torch.randn(1536, 384, generator=g) / 20
from rrfbench.core.exact_products import exact_linear, exact_matmul, weight_grid
lin = exact_linear(x, weight_grid(w))  # the encoder's products: exact (issue 55)
q = x.view(6, 128, 12, 32).transpose(1, 2)
scores = torch.softmax(exact_matmul(q, q.transpose(-1, -2)) / 32 ** 0.5, -1)
ops = {"linear": lin, "gelu": torch.nn.functional.gelu(lin),
       "layer_norm": torch.nn.functional.layer_norm(x, (384,)),
       "attention": exact_matmul(scores, q),
       "softmax": torch.softmax(x, -1)}
h = hashlib.sha256()
for v in ops.values():
    h.update(v.contiguous().numpy().tobytes())
out = {"primitives": h.hexdigest()[:16], "capability": torch.backends.cpu.get_cpu_capability()}
import numpy as np
from rrfbench.retrievers.vectors import exact_cosines
rng = np.random.default_rng(0)
a, b = (rng.normal(size=(n_, 384)).astype(np.float32) for n_ in (64, 3000))
a, b = a / np.linalg.norm(a, axis=1, keepdims=True), b / np.linalg.norm(b, axis=1, keepdims=True)
out["cosines_float32"] = hashlib.sha256((a @ b.T).tobytes()).hexdigest()[:16]  # BLAS's order
out["cosines_exact"] = hashlib.sha256(exact_cosines(a, b).tobytes()).hexdigest()[:16]
n = int(sys.argv[1])
if n:
    from rrfbench.retrievers.dense import DenseRetriever
    texts = [json.loads(l)["text"][:300] for l, _ in zip(open(sys.argv[2]), range(n))]
    r = DenseRetriever(backend="torch", show_progress=False)
    try:
        e = r.encode(texts, "document")
        out["encoder"] = hashlib.sha256(e.tobytes()).hexdigest()[:16]
    except Exception as ex:  # uncapped: the default backend refuses, as it should
        out["encoder"] = "refused: " + type(ex).__name__
print(json.dumps(out))
"""


def run(cpu: str | None, capped: bool, n: int, corpus: Path) -> dict:
    import json

    from rrfbench.core.portable_math import PORTABLE_MATH_ENV

    env = {k: v for k, v in os.environ.items() if k not in PORTABLE_MATH_ENV}
    env |= {"OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    if capped:   # uncapped: the libraries pick their kernels by the CPU, as they do by default
        env |= PORTABLE_MATH_ENV
    cmd = [sys.executable, "-c", WORKER, str(n if capped else 0), str(corpus)]
    if cpu is not None:
        env["NPY_DISABLE_CPU_FEATURES"] = "X86_V3"
        cmd = ["qemu-x86_64", "-cpu", cpu, *cmd]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=3600)
    lines = [ln for ln in p.stdout.splitlines() if ln.startswith("{")]
    if p.returncode or not lines:
        return {"error": (p.stderr.strip().splitlines() or ["no output"])[-1][:200]}
    return json.loads(lines[-1])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--texts", type=int, default=2, help="texts the encoder encodes per CPU")
    ap.add_argument("--cpu", action="append", choices=CPUS,
                    help="emulated CPUs to run (repeatable; default all)")
    a = ap.parse_args()
    from rrfbench.data.datasets import load_dataset

    corpus = load_dataset("scifact").path / "corpus.jsonl"
    cpus: list[str | None] = [None]
    if shutil.which("qemu-x86_64"):
        cpus += list(a.cpu or CPUS)
    else:
        print("qemu-x86_64 not found (apt-get install qemu-user): this CPU only")
    capped = {}
    for cpu in cpus:
        name = cpu or "this CPU"
        for cap in (True, False):
            r = run(cpu, cap, a.texts, corpus)
            print(f"{name:12s} {'capped' if cap else 'uncapped':9s} {r}", flush=True)
            if cap:
                capped[name] = (r.get("primitives"), r.get("encoder"), r.get("cosines_exact"))
    same = len(set(capped.values())) == 1 and all(all(v) for v in capped.values())
    print("capped: the same on every CPU" if same else "capped: DIFFERENT across CPUs")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
