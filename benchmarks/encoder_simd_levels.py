"""Does a collection's dense encoding depend on the SIMD kernels NumPy (and OpenBLAS) pick?

Encodes each named collection's corpus and its per-split queries with the default encoder, in
this process's environment, into the scratch cache ``$RRFBENCH_CACHE``, then compares them row
by row with the same entries of a reference cache (default: this machine's own,
``~/.cache/rrfbench``, encoded with the CPU's own kernels). Run it with another CPU's kernels:

    NPY_DISABLE_CPU_FEATURES="X86_V4 AVX512_ICL AVX512_SPR" OPENBLAS_CORETYPE=Haswell \\
    RRFBENCH_CACHE=/tmp/avx2-cache python benchmarks/encoder_simd_levels.py scifact cranfield

Prints, per collection, how many document and query embeddings differ in any bit. Why they
could: sentence-transformers' ``encode`` orders one call's texts by ``np.argsort(-len(text))``,
whose order among equal lengths follows NumPy's sort kernels, and the batches (so the padding)
followed that order; at 8e0114c 6 of 9 collections differed so. rrfbench now forms the batches
itself by a stable sort (``rrfbench.retrievers.dense.batch_order``), and this script is the
check that they no longer differ (docs/portability.md). A split whose queries the reference
cache does not hold is counted as "without a reference". Exit 1 when anything differs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import _common  # noqa: F401  (data path, offline hub)
import numpy as np


def _rows_differing(a: np.ndarray, b: np.ndarray) -> int:
    return int((np.abs(a - b).max(axis=1) > 0).sum()) if len(a) else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("datasets", nargs="+")
    ap.add_argument("--reference", type=Path, default=Path.home() / ".cache" / "rrfbench",
                    help="the cache to compare with (default: this machine's)")
    args = ap.parse_args()
    scratch = Path(os.environ.get("RRFBENCH_CACHE", ""))
    if not os.environ.get("RRFBENCH_CACHE") or scratch.resolve() == args.reference.resolve():
        ap.error("set RRFBENCH_CACHE to a scratch folder other than --reference")

    from rrfbench import load_dataset
    from rrfbench.core.errors import InputError
    from rrfbench.retrievers.dense import DenseRetriever

    try:  # every name checked before anything is encoded
        collections = [load_dataset(name) for name in args.datasets]
    except InputError as e:
        ap.error(str(e))

    npy, blas = (os.environ.get(v, "") for v in ("NPY_DISABLE_CPU_FEATURES", "OPENBLAS_CORETYPE"))
    print(f"NPY_DISABLE_CPU_FEATURES={npy!r} OPENBLAS_CORETYPE={blas!r}")
    differs = False
    for ds in collections:
        t0 = time.perf_counter()
        r = DenseRetriever(show_progress=False)
        r.corpus_embeddings(ds)
        folder = r.shard_dir(ds)
        docs = sum(_rows_differing(np.load(p), np.load(args.reference / "embeddings" / folder.name / p.name))
                   for p in sorted(folder.glob("shard-*.npy")))
        queries, unreferenced, n_queries = 0, 0, 0
        qdir = scratch / "queries"
        for split in ds.splits:
            before = set(qdir.glob("*.npy")) if qdir.exists() else set()
            texts = list(ds.split_queries(split).text)
            r.query_embeddings(texts)
            n_queries += len(texts)
            for p in set(qdir.glob("*.npy")) - before:
                ref = args.reference / "queries" / p.name
                if ref.exists():
                    queries += _rows_differing(np.load(p), np.load(ref))
                else:
                    unreferenced += 1
        differs |= bool(docs or queries)
        print(f"{ds.name}: {docs} of {len(ds.corpus)} document embeddings differ; {queries} of "
              f"{n_queries} query embeddings differ ({unreferenced} splits without a reference); "
              f"{time.perf_counter() - t0:.0f} s", flush=True)
    return 1 if differs else 0


if __name__ == "__main__":
    sys.exit(main())
