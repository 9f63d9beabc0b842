"""Scale: Dask vs in-process sweeps, cost growth with corpus size, exact vs ANN dense search.

(a) Sweep configurations/s on a 2-worker ``LocalCluster`` vs in-process (scifact test, bm25 +
    fts5 + dense, same grid, same process). On a 2-core machine the in-process engine already
    uses both cores (numba ``prange``), so near 1x (not 2x) is the expected ceiling here.
(b) Cost growth: time and peak memory of index + retrieve + sweep (bm25 + fts5, RRF grid) on
    corpora of 10k, 100k and 1M documents. The documents are sampled **with replacement** from
    the real English corpora here (scifact, nfcorpus-preprocessed, lisa, cranfield, time, adi;
    16.5k documents), ids made unique; the queries are scifact's 300 test queries and its qrels
    point at the first copy of each judged document. Each size runs in its own process (peak
    RSS per size); the growth exponent is the slope of log(time) on log(size).
(c) Exact vs ANN dense search: recall@100 of FAISS HNSW (rrfbench's defaults: M 32,
    efConstruction 200, efSearch 256) against exact search, and its speed-up, on scifact's real
    embeddings and on **synthetic** vectors at 100k (HNSW) and 1M (IVF4096,Flat, nprobe 64: an
    HNSW build of 1M vectors takes too long on 2 cores): scifact's document embeddings
    resampled with Gaussian noise, searched with scifact's real test queries.

Usage: ``python benchmarks/bench_scale.py [a|b|c] [sizes...]`` (default: all, 10000 100000
1000000).
"""

import json
import os
import resource
import subprocess
import sys
import time
import tracemalloc

import numpy as np
from _common import ROOT

SIZES = [10_000, 100_000, 1_000_000]


# --------------------------------------------------------------------------- (a)
def part_a():
    from rrfbench.fusion.sweep import FusionEngine, make_grid
    from rrfbench.workflows.dataset import load_runs
    from rrfbench.workflows.distributed import client_for

    runs = load_runs("scifact", ["bm25", "fts5", "dense"], "test")
    from rrfbench import load_dataset

    eng = FusionEngine(runs, load_dataset("scifact").qrels("test"), ("nDCG@10", "R@100"))
    grid = make_grid(3, methods=("rrf", "convex", "combsum", "combmnz"),
                     k=(1, 2, 5, 10, 20, 40, 60, 100, 200), weight_step=0.05,
                     depth=(None, 100), norms=("minmax", "zscore", "tmm"),
                     missing=("zero", "min"))
    eng.evaluate(grid[:4])
    t0 = time.perf_counter()
    local = eng.table(grid)
    t_local = time.perf_counter() - t0
    from rrfbench.fusion.sweep import run_sweep
    from rrfbench.workflows.distributed import chunk_map

    with client_for(workers=2) as client:
        # warm: scatter the engine once and compile/load the kernels in both workers
        run_sweep(eng, grid[:2048], None, chunk_size=256, progress=False, map_chunks=chunk_map(client))
        t0 = time.perf_counter()
        remote = run_sweep(eng, grid, None, chunk_size=1024, progress=False, map_chunks=chunk_map(client))
        t_dask = time.perf_counter() - t0
    same = np.allclose(local["nDCG@10"].to_numpy(), remote["nDCG@10"].to_numpy(), atol=0)
    print(f"(a) sweep, scifact test, {len(grid)} configurations x {len(eng.qids)} queries")
    print(f"    in-process (numba, 2 threads): {len(grid) / t_local:,.0f} configurations/s")
    print(f"    LocalCluster, 2 workers:       {len(grid) / t_dask:,.0f} configurations/s "
          f"(same table: {same})")
    print(f"    dask_vs_in_process: {t_local / t_dask:.2f}")


# --------------------------------------------------------------------------- (b)
def sample_corpus(n: int, seed: int = 0):
    """A BEIR folder of ``n`` documents sampled with replacement from the real corpora."""
    import pandas as pd

    from rrfbench import load_dataset

    pools = [load_dataset(name).corpus for name in
             ("scifact", "nfcorpus-preprocessed", "lisa", "cranfield", "time", "adi")]
    pool = pd.concat(pools, ignore_index=True)
    rng = np.random.default_rng(seed)
    pick = rng.integers(0, len(pool), n)
    sci = load_dataset("scifact")
    judged = set(sci.qrels("test").df.docid)
    first = {d: i for i, d in enumerate(pool.docid) if d in judged}
    pick[: len(first)] = list(first.values())  # every judged document is in the sample once
    folder = ROOT / "results" / "cache" / "scale" / f"sample-{n}"
    if not (folder / "corpus.jsonl").exists():
        (folder / "qrels").mkdir(parents=True, exist_ok=True)
        with open(folder / "corpus.jsonl", "w") as fh:
            for j, i in enumerate(pick):
                fh.write(json.dumps({"_id": f"{pool.docid[i]}#{j}", "title": pool.title[i],
                                     "text": pool.text[i]}) + "\n")
        renamed = {pool.docid[i]: f"{pool.docid[i]}#{j}" for j, i in enumerate(pick[: len(first)])}
        q = sci.split_queries("test")
        with open(folder / "queries.jsonl", "w") as fh:
            for qid, text in zip(q.qid, q.text, strict=True):
                fh.write(json.dumps({"_id": qid, "text": text}) + "\n")
        qr = sci.qrels("test").df
        (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(
            f"{a}\t{renamed[b]}\t{c}\n" for a, b, c in zip(qr.qid, qr.docid, qr.relevance,
                                                           strict=True)))
    return folder


def one_size(n: int):
    """Index + retrieve + sweep at one size; prints a JSON line (run in its own process)."""
    os.environ["RRFBENCH_RESULTS"] = str(ROOT / "results" / "cache" / "scale" / f"results-{n}")
    from rrfbench import load_dataset
    from rrfbench.fusion.sweep import FusionEngine, make_grid
    from rrfbench.retrievers.bm25 import BM25Retriever
    from rrfbench.retrievers.fts5 import FTS5Retriever

    folder = sample_corpus(n)
    ds = load_dataset(str(folder))
    times = {}
    t0 = time.perf_counter()
    _ = ds.corpus
    times["load"] = time.perf_counter() - t0
    q = ds.split_queries("test")
    bm, ft = BM25Retriever(), FTS5Retriever()
    t0 = time.perf_counter()
    bm.index(ds)
    times["bm25_index"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    r1 = bm.retrieve(ds, q, 1000)
    times["bm25_retrieve"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    ft.connect(ds).close()
    times["fts5_index"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    r2 = ft.retrieve(ds, q, 1000)
    times["fts5_retrieve"] = time.perf_counter() - t0
    grid = make_grid(2, k=(1, 5, 10, 20, 60, 100, 200), weight_step=0.1)
    tracemalloc.start()
    t0 = time.perf_counter()
    eng = FusionEngine([r1.with_meta(score_floor=0.0), r2.with_meta(score_floor=0.0)],
                       ds.qrels("test"), ("nDCG@10",))
    eng.evaluate(grid)
    times["sweep"] = time.perf_counter() - t0
    sweep_peak = tracemalloc.get_traced_memory()[1] / 2**20
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"n": n, **{k: round(v, 2) for k, v in times.items()},
                      "sweep_traced_mib": round(sweep_peak, 1), "peak_rss_mib": round(rss),
                      "candidates": len(eng.cand)}))


def part_b(sizes):
    rows = []
    for n in sizes:
        out = subprocess.run([sys.executable, __file__, "one", str(n)], capture_output=True,
                             text=True)
        line = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
        if out.returncode != 0 or not line:
            print(f"(b) size {n}: failed\n{out.stderr[-2000:]}")
            continue
        rows.append(json.loads(line[-1]))
    if not rows:
        return
    keys = ["bm25_index", "bm25_retrieve", "fts5_index", "fts5_retrieve", "sweep"]
    print("(b) cost growth (documents sampled with replacement from the real corpora; "
          "scifact test queries)")
    print("    docs       " + " ".join(f"{k:>14s}" for k in keys) +
          "   sweep MiB   peak RSS MiB")
    for r in rows:
        print(f"    {r['n']:>9,d}  " + " ".join(f"{r[k]:>13.2f}s" for k in keys) +
              f"   {r['sweep_traced_mib']:>9.1f}   {r['peak_rss_mib']:>12,d}")
    if len(rows) >= 2:
        x = np.log([r["n"] for r in rows])
        fits = {k: np.polyfit(x, np.log([max(r[k], 1e-3) for r in rows]), 1)[0] for k in keys}
        fits["peak_rss"] = np.polyfit(x, np.log([r["peak_rss_mib"] for r in rows]), 1)[0]
        fits["sweep_memory"] = np.polyfit(x, np.log([max(r["sweep_traced_mib"], 1e-3)
                                                     for r in rows]), 1)[0]
        print("    growth exponents (time or memory ~ size^e): " +
              ", ".join(f"{k} {v:.2f}" for k, v in fits.items()))


# --------------------------------------------------------------------------- (c)
def _recall(exact_idx, ann_idx):
    return float(np.mean([len(set(a) & set(b)) / len(a) for a, b in zip(exact_idx, ann_idx,
                                                                         strict=True)]))


def part_c():
    import faiss

    from rrfbench import load_dataset
    from rrfbench.retrievers.dense import DenseRetriever
    from rrfbench.retrievers.vectors import topk_cosine

    faiss.omp_set_num_threads(2)
    ds = load_dataset("scifact")
    r = DenseRetriever(show_progress=False)
    docs = np.asarray(r.corpus_embeddings(ds), dtype=np.float32)
    q = r.encode(list(ds.split_queries("test").text), "query")
    print("(c) exact vs ANN dense search, recall@100 against exact")
    rows = [("scifact (real, 5,183)", docs, q, "hnsw")]
    rng = np.random.default_rng(0)
    for n, kind in ((100_000, "hnsw"), (1_000_000, "ivf")):
        # synthetic but shaped like real embeddings: scifact document vectors resampled with
        # Gaussian noise (cosine ~0.85 to their parent); queries: scifact's real test queries.
        # (Isotropic random vectors have no neighbourhood structure: every ANN index scores
        # badly on them, which says nothing about text embeddings.)
        x = docs[rng.integers(0, len(docs), n)] + 0.03 * rng.normal(size=(n, 384)).astype(
            np.float32)
        x /= np.linalg.norm(x, axis=1, keepdims=True)
        rows.append((f"synthetic {n:,}", x, q, kind))
    for name, x, qq, kind in rows:
        t0 = time.perf_counter()
        ei, _ = topk_cosine(qq, x, 100)
        t_exact = time.perf_counter() - t0
        t0 = time.perf_counter()
        if kind == "hnsw":
            index = faiss.IndexHNSWFlat(x.shape[1], 32, faiss.METRIC_INNER_PRODUCT)
            index.hnsw.efConstruction = 200
            index.add(x)
            index.hnsw.efSearch = 256
            label = "HNSW M32 efC200 efS256"
        else:
            quant = faiss.IndexFlatIP(x.shape[1])
            index = faiss.IndexIVFFlat(quant, x.shape[1], 4096, faiss.METRIC_INNER_PRODUCT)
            index.train(x[rng.integers(0, len(x), 200_000)])
            index.add(x)
            index.nprobe = 64
            label = "IVF4096,Flat nprobe64"
        t_build = time.perf_counter() - t0
        t0 = time.perf_counter()
        _, ai = index.search(np.ascontiguousarray(qq), 100)
        t_ann = time.perf_counter() - t0
        print(f"    {name:24s} {label:24s} recall@100 {_recall(ei, ai):.3f}  exact "
              f"{t_exact:.2f} s, ANN {t_ann:.3f} s (speed-up {t_exact / t_ann:.1f}x; build "
              f"{t_build:.0f} s)")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["one"]:
        one_size(int(args[1]))
        sys.exit(0)
    what = args[0] if args and args[0] in "abc" else "abc"
    sizes = [int(a) for a in args[1:] if a.isdigit()] or SIZES
    if "a" in what:
        part_a()
    if "b" in what:
        part_b(sizes)
    if "c" in what:
        part_c()
